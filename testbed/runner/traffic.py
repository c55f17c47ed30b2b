"""The run's traffic: the flow servers, the flow clients that replay the schedule (or the chain's reference
user, or the HTTP workload's nginx and wrk: httpload), and the SYN flood, each started in its host's
namespace and waited for or stopped."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from contract import rundir
from contract.sizes import format_sizes
from contract.spec import DEFAULTS
from testbed.runner import httpload, processes
from testbed.runner.fidelity import flood_check

REPO = Path(__file__).resolve().parents[2]


FAVORFLOW = REPO / "workloads" / "go" / "bin" / "favorflow"


# The flow clients run at a higher priority than everything else of the run (servers, captures, the
# runner): the schedule's start times are the experiment's input, and on a small guest a client that wakes
# for a start behind a busy server waits a scheduler slice (several ms under TCG), which is what
# lateness_p99_ms catches. Their own CPU is small (one connect and a few writes per flow), so the servers
# lose little.
CLIENT_NICE = -10


def workload_cmd(role: str, spec: dict) -> list[str]:
    """The flow client or server the spec names: the Python module, or favorflow (workloads/go, built on the
    controller and shipped with the code). Both take the same flags and write the same per-flow logs."""
    if spec.get("workload_impl", DEFAULTS["workload_impl"]) == "go":
        if not FAVORFLOW.is_file():
            raise RuntimeError(f"workload_impl go, but {FAVORFLOW} is missing on this host. Fix: build it on the "
                               f"controller (workloads/go/build) and provision again (the favorlab_code role ships it)")
        return [str(FAVORFLOW), role]
    return [sys.executable, "-m", f"workloads.{role}"]


def client_hosts(ctx) -> list[str]:
    """Hosts that run a flow client: every dumbbell host (each replays its schedule rows); the chain's
    reference user's sender only."""
    return [ctx.hostsj["reference"]["src"]] if ctx.is_chain() else list(ctx.hostsj["hosts"])


def server_hosts(ctx) -> list[str]:
    return [ctx.hostsj["reference"]["dst"]] if ctx.is_chain() else list(ctx.hostsj["hosts"])


def client_cmd(ctx) -> list[str]:
    """The chain's reference user is Python only (workloads.reference); the dumbbell's client is the
    spec's workload_impl."""
    if httpload.is_http(ctx.spec):
        return [sys.executable, "-m", "workloads.http"]
    return [sys.executable, "-m", "workloads.reference"] if ctx.is_chain() else workload_cmd("client", ctx.spec)


def start_servers(ctx) -> None:
    """The flow servers, or the HTTP workload's nginx (httpload)."""
    if httpload.is_http(ctx.spec):
        return httpload.start_servers(ctx)
    for h in server_hosts(ctx):
        ctx.procs[f"server-{h}"] = processes.popen(
            workload_cmd("server", ctx.spec) + ["--host", h, "--hosts", str(ctx.dir / rundir.HOSTS),
             "--port", str(ctx.hostsj["port"]), "--log", str(ctx.dir / "flows" / f"server-{h}.csv")], ctx.net.get(h),
            cwd=REPO, cgroup=ctx.cgroup_path(),
            stdout=(ctx.dir / "log" / f"server-{h}.out").open("w"), stderr=subprocess.STDOUT)
    ctx.log("servers started")


def stop_servers(ctx) -> None:
    if httpload.is_http(ctx.spec):
        return httpload.stop_servers(ctx)
    processes.stop_many([ctx.procs.pop(k) for k in [k for k in ctx.procs if k.startswith("server-")]])


def start_lead(ctx) -> float:
    """Seconds from now to t0, long enough for every client to be up by then.

    Every client is a fresh process per host; in a TCG guest their start-up takes longer than a fixed 3 s
    lead, and the first flows of the schedule would start late (the lateness check fails). So one start-up
    is timed now and all clients get that long per host and vCPU, 1.5 times over. The chain's cross traffic
    starts warmup_cross_s before t0 and its iperf3 servers before that (0.1 s per cross flow: one server
    and one client to start in a host's namespace)."""
    s = ctx.spec
    t_imp = time.time()
    hosts = client_hosts(ctx)
    processes.popen(client_cmd(ctx) + ["--help"], ctx.net.get(hosts[0]), cwd=REPO,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).wait(timeout=120)
    startup = time.time() - t_imp
    lead = max(3.0, 2.0 + 1.5 * startup * len(hosts) / (os.cpu_count() or 1))
    if ctx.is_chain():
        n_cross = len(ctx.hostsj.get("cross_flows", []))
        lead = max(lead, float(s["workload"]["warmup_cross_s"]) + 3.0 + 0.1 * n_cross)
    ctx.manifest["client_start_lead_s"] = round(lead, 2)
    ctx.log(f"client start-up {startup:.2f} s: t0 in {lead:.1f} s")
    return lead


def start_clients(ctx, t0: float, stop_at: float) -> dict:
    """host -> the flow client started there: the chain's reference user, or every dumbbell host's client
    replaying its rows of the schedule from t0 to stop_at; or, for HTTP, path -> its wrk (httpload)."""
    if httpload.is_http(ctx.spec):
        return httpload.start_clients(ctx, t0)
    clients = {}
    if ctx.is_chain():
        clients[ctx.hostsj["reference"]["src"]] = start_reference(ctx, t0, stop_at)
    for h in ([] if ctx.is_chain() else ctx.hostsj["hosts"]):
        clients[h] = _flow_client(ctx, h, ["--t0", f"{t0:.6f}", "--stop-at", f"{stop_at:.6f}"])
    ctx.log(f"clients started, t0 {t0:.3f}, stop at {stop_at:.3f}")
    return clients


def _flow_client(ctx, h: str, when: list[str], **kw) -> subprocess.Popen:
    """The flow client of dumbbell host h, replaying its rows of the schedule; `when` is --t0 and --stop-at,
    or --ready."""
    p = processes.popen(
        ["nice", "-n", str(CLIENT_NICE)] + workload_cmd("client", ctx.spec) + [
         "--schedule", str(ctx.dir / ctx.spec.get("schedule", DEFAULTS["schedule"])), "--host", h,
         "--hosts", str(ctx.dir / rundir.HOSTS), *when, "--log", str(ctx.dir / "flows" / f"client-{h}.csv")],
        ctx.net.get(h), cwd=REPO, cgroup=ctx.cgroup_path(),
        stdout=(ctx.dir / "log" / f"client-{h}.out").open("w"), stderr=subprocess.STDOUT, **kw)
    ctx.procs[f"client-{h}"] = p
    return p


# From the go line to t0: the clients are up and blocked on their stdin, so this only covers writing six
# lines and the clients' wake-up (milliseconds in a TCG guest) before the schedule's first flows; half a
# second leaves room for a stall of the guest (docs/measurements.md, "Where a kept attempt's CPU goes").
GO_LEAD_S = 0.5
READY_TIMEOUT_S = 120.0
LAST_PACKETS_MAX_S = 1.0     # last_packets_s's bound, and its wait where it cannot tell


def awaits_go(ctx) -> bool:
    """Whether the run's flow clients start with the ready handshake (launch_clients): a dumbbell run whose
    only traffic is the schedule's replay. The chain's reference user, HTTP's wrk, persistent flows and a
    SYN flood are other processes started toward t0, so those runs keep the timed lead (start_lead)."""
    s = ctx.spec
    return not (ctx.is_chain() or httpload.is_http(s) or s.get("flood")
                or s.get("workload", {}).get("kind") == "persistent")


def launch_clients(ctx) -> dict:
    """host -> its flow client, started with --ready before the rest of the set-up (captures, servers, the
    state before), so that their start-ups overlap it: each creates log/client-<host>.ready once loaded and
    then waits for its go line (go)."""
    return {h: _flow_client(ctx, h, ["--ready", str(_ready_file(ctx, h))], stdin=subprocess.PIPE)
            for h in ctx.hostsj["hosts"]}


def _ready_file(ctx, h: str) -> Path:
    return ctx.dir / "log" / f"client-{h}.ready"


def await_ready(ctx, clients: dict, timeout_s: float = READY_TIMEOUT_S) -> None:
    """Wait until every client launched by launch_clients and every flow server is up: a client's ready file
    exists, a server's log has its "workloads.server: ... on ADDR" line (written once it listens). One that
    exits first, or is not up after timeout_s, fails the run (its log says why)."""
    deadline = time.time() + timeout_s
    waiting = {f"client-{h}": (p, lambda h=h: _ready_file(ctx, h).exists()) for h, p in clients.items()}
    waiting.update({f"server-{h}": (ctx.procs[f"server-{h}"], lambda h=h: _listening(ctx, h))
                    for h in server_hosts(ctx)})
    while waiting:
        waiting = {k: v for k, v in waiting.items() if not v[1]()}
        for k, (p, _) in waiting.items():
            if p.poll() is not None:
                raise RuntimeError(f"the flow {k.replace('-', ' on ', 1)} exited ({p.returncode}) before it was "
                                   f"up: see log/{k}.out")
        if waiting and time.time() > deadline:
            raise RuntimeError(f"{sorted(waiting)} not up {timeout_s:.0f} s after their start (see their logs)")
        if waiting:
            time.sleep(0.02)


def _listening(ctx, h: str) -> bool:
    try:
        return (ctx.dir / "log" / f"server-{h}.out").read_text().startswith("workloads.server:")
    except FileNotFoundError:
        return False


def go(ctx, clients: dict, t0: float, stop_at: float) -> None:
    """Every waiting client's go line: the schedule's t0 and the stop (a client that died meanwhile is
    found by wait_clients, from its exit status)."""
    line = f"{t0:.6f} {stop_at:.6f}\n".encode()
    for h, p in clients.items():
        try:
            p.stdin.write(line)
            p.stdin.close()
        except BrokenPipeError:
            pass
        _ready_file(ctx, h).unlink(missing_ok=True)
    ctx.log(f"clients started, t0 {t0:.3f}, stop at {stop_at:.3f}")


def wait_clients(ctx, clients: dict, stop_at: float) -> None:
    """Wait for every client (they end at stop_at); one that does not end or fails is a reason the run is
    invalid."""
    for h, p in clients.items():
        try:
            rc = p.wait(timeout=max(5.0, stop_at - time.time() + 30))
        except subprocess.TimeoutExpired:
            rc = processes.stop(p)
            ctx.reasons.append(f"client on {h} did not end by stop-at + 30 s")
        if rc:
            log = f"wrk-{h}" if httpload.is_http(ctx.spec) else f"client-{h}"
            ctx.reasons.append(f"client on {h} exited with {rc} (see log/{log}.out)")


def last_packets_s(ctx) -> float:
    """How long the captures stay up after the clients end: the packets then in flight (the last segments, the
    FINs and their ACKs) reach them within the longest probed round trip plus the drain of full queues both
    ways at the bottleneck; twice that, and at most LAST_PACKETS_MAX_S (also where the topology has no single
    bottleneck, the chain, or no RTT was probed)."""
    rtts = [v.get("measured") for k, v in ctx.checks.items() if k.startswith("rtt_") and k.endswith("_ms")]
    rtts = [r for r in rtts if isinstance(r, (int, float))]
    topo = ctx.spec["topology"]
    if not rtts or ctx.is_chain() or not topo.get("bottleneck_mbps"):
        return LAST_PACKETS_MAX_S
    queued = topo.get("buffer_pkts", 0) + topo.get("reverse_buffer_pkts", 0)
    queue_ms = queued * topo.get("mtu", 1500) * 8 / (topo["bottleneck_mbps"] * 1e3)
    return min(LAST_PACKETS_MAX_S, 2 * (max(rtts) + queue_ms) / 1e3)


def start_reference(ctx, t0: float, stop_at: float) -> subprocess.Popen:
    """The chain's closed-loop reference user on its sender (workloads.reference: the run's seed, the
    same for every AQM; the spec's sizes), from t0 to stop_at, logging flows/client-<src>.csv as a
    client does; the flows it started go to flows/reference-schedule.csv (install_reference_schedule)."""
    s, ref = ctx.spec, ctx.hostsj["reference"]
    mss = int(s["topology"].get("mtu", 1500)) - 40
    h = ref["src"]
    p = processes.popen(["nice", "-n", str(CLIENT_NICE), *client_cmd(ctx), "--host", h, "--dst", ref["dst"],
                         "--hosts", str(ctx.dir / rundir.HOSTS), "--t0", f"{t0:.6f}", "--stop-at", f"{stop_at:.6f}",
                         "--seed", str(s["seed"]), "--sizes", format_sizes(s["sizes"]), "--mss", str(mss),
                         "--log", str(ctx.dir / "flows" / f"client-{h}.csv"),
                         "--schedule-out", str(ctx.dir / "flows" / "reference-schedule.csv")],
                        ctx.net.get(h), cwd=REPO, cgroup=ctx.cgroup_path(),
                        stdout=(ctx.dir / "log" / f"client-{h}.out").open("w"), stderr=subprocess.STDOUT)
    ctx.procs[f"client-{h}"] = p
    return p


def install_reference_schedule(ctx) -> None:
    """The chain has no open-loop schedule: the controller's schedule.csv is a header (workloads.schedule
    --topology chain). The flows the reference user started become the run's schedule.csv, so extraction
    joins them by flow id like any schedule's (docs/contracts.md, "Run directory")."""
    src = ctx.dir / "flows" / "reference-schedule.csv"
    if src.is_file():
        os.replace(src, ctx.dir / ctx.spec.get("schedule", DEFAULTS["schedule"]))
        ctx.log("schedule.csv: the reference user's flows")
    else:
        ctx.reasons.append("the reference user wrote no schedule (flows/reference-schedule.csv): see "
                           f"log/client-{ctx.hostsj['reference']['src']}.out")


def start_flood(ctx, t0: float) -> None:
    """The synflood axis' attacker (workloads.synflood: favorflow synflood) in its host's namespace, from t0
    for duration_s, at the rate run.json gives, toward the target's flow server port (hosts.json's port).
    Outside the run's cgroup: its raw socket makes no TCP connection for the initial-RTO program to touch."""
    from workloads import synflood
    f, s = ctx.spec["flood"], ctx.spec
    target, port = ctx.hostsj["hosts"][f["target"]]["ip"], ctx.hostsj["port"]
    cmd = synflood.synflood_cmd(str(FAVORFLOW), target, port, f["pps"], s["duration_s"],
                                str(ctx.dir / "flood.json"), seed=int(s.get("seed") or 1), start_at=t0,
                                spoof=f["spoof"])
    ctx.procs["flood"] = processes.popen(cmd, ctx.net.get(f["attacker"]), cwd=REPO,
                                         stdout=(ctx.dir / "log" / "flood.out").open("w"), stderr=subprocess.STDOUT)
    ctx.log(f"SYN flood: {f['rate_x']:g}x the bottleneck, {f['pps']:.0f} SYNs/s from {f['attacker']} "
            f"(sources {f['spoof']}) to {f['target']}:{port}, from t0 for {s['duration_s']:g} s")


def stop_flood(ctx, t0: float) -> None:
    """Wait for the attacker (it ends with the traffic); its rate is a fidelity check: a run whose flood
    fell short of its rate (a guest short of CPU) is not the run its config asked for."""
    p = ctx.procs.pop("flood")
    try:
        p.wait(timeout=max(5.0, t0 + ctx.spec["duration_s"] + 30 - time.time()))
    except subprocess.TimeoutExpired:
        processes.stop(p)
    ctx.checks.update(flood_check(ctx.dir / "flood.json", ctx.spec["flood"]["pps"]))
