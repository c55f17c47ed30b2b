"""A topology kept up between runs (the testbed option `reuse_topology`, testbed/README.md "A kept topology").

Building the Mininet network, probing it and tearing it down cost about 17 s of every attempt. When a run
ends well and the next one asks for the same topology section, the network stays: each of its namespaces
is held by a process of its own (a `sleep` entered into it with mnexec), which outlives the runner, and a
record beside the host lock names those holders, the topology and the probes of the run that built it.

The next run adopts it only when everything in the record still holds (same topology section, every holder
the same process, every root-namespace interface there); otherwise it is taken down and built afresh. An
adopting run makes the network as a fresh one would meet the run:
- every qdisc of the topology's plan is deleted and made again (the AQM of this run at the bottleneck and
  the reverse path, the hosts' shapers and the bridge ports' delay lines), so every counter starts at zero;
- every host's TCP metrics are flushed (what a connection of the last run left for the next one's initial
  RTT and window), as every run's TCP profile does; the neighbour tables stay: their entries (STALE after the
  pause between runs) send the first packet at once, as the REACHABLE or STALE ones a fresh network's probes
  leave do, so neither network's first SYN waits for ARP;
- no socket may be left but TIME-WAIT ones (which a fresh namespace would not have: they are closed with
  `ss -K` where the kernel allows it, and counted in the manifest otherwise).
Its probes are those of the building run, recorded in fidelity.json as such (probed_by).

What a kept network must not carry over is kept out of it: a P4 switch (its process belongs to the run) and
a SYN flood's spoofed-source routes make a topology that is never kept.

A run that dies while it holds a kept network has its holders in its pidfile (as node shells): the next
run's clean-up stops them, and the namespaces go with them.

Standard library only, as everything that runs on a testbed host (docs/contracts.md, "Python layout")."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from contract import rundir
from testbed.runner import hostguard, network, probes, processes

RECORD_NAME = "favorlab-kept-topology.json"
HOLDER_WHAT = "kept topology holder "       # after processes.MININET_SHELL in a pidfile entry
PROBE_CHECKS = re.compile(r"rtt_.+_ms|bottleneck_rate_mbps")   # probes.probe_fidelity's checks


def record_path():
    return hostguard.lock_dir() / RECORD_NAME


def unkeepable(spec: dict) -> str | None:
    """Why this run's topology cannot be kept, or None."""
    from topologies import dumbbell
    if spec["topology"]["kind"] not in network.TOPOLOGIES:
        return f"topology kind {spec['topology']['kind']!r}"
    if spec["topology"]["kind"] == "dumbbell" and dumbbell.is_p4(spec["aqm"]):
        return "a P4 bottleneck (its switch process is the run's own)"
    if spec.get("flood"):
        return "a SYN flood (its spoofed-source routes stay in the routers)"
    return None


def topology_key(spec: dict) -> str:
    """What must be equal for a kept network to serve a run: the whole topology section."""
    return json.dumps(spec["topology"], sort_keys=True)


@dataclass
class KeptNode:
    """A node of a kept network: its name and the PID whose namespace commands enter (mnexec -a), which is
    all the runner asks of a Mininet node."""
    name: str
    pid: int


@dataclass
class KeptNet:
    """The Mininet-shaped view of a kept network the run's steps use (get(name), hosts, switches), made from
    its record, which its stop hands to discard: the holders' recorded start times, not today's, tell them
    from a later process that took a dead holder's PID."""
    rec: dict
    switches: list = field(default_factory=list)

    def __post_init__(self):
        self.nodes = {n: KeptNode(n, h["pid"]) for n, h in self.rec["holders"].items()}

    def get(self, name: str) -> KeptNode:
        return self.nodes[name]

    @property
    def hosts(self) -> list[KeptNode]:
        return list(self.nodes.values())

    def stop(self) -> None:
        """Down for good (discard), as the run's tear-down stops a Mininet network."""
        discard(self.rec, "the run that adopted it ends without keeping it", lambda msg: None)


# ---------------------------------------------------------------- holding a network beyond its run

def hold(net) -> dict:
    """One holder per namespace node of a freshly built Mininet network: {name: {"pid", "start"}}. Each
    leads a session of its own, so neither the runner's exit nor its SSH session's hang-up reaches it, and
    is in the pidfile as a node shell, so a run that dies takes it down."""
    holders = {}
    for node in net.hosts:
        p = subprocess.Popen(["mnexec", "-a", str(node.pid), "sleep", "infinity"], start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        holders[node.name] = {"pid": p.pid, "start": hostguard.proc_start(p.pid)}
        in_pidfile(node.name, p.pid)
    return holders


def in_pidfile(name: str, pid: int) -> None:
    """A holder in the run's pidfile, as a node shell: stopped by the clean-up after a run that dies, spared
    by a tear-down that keeps the network."""
    if processes.PIDFILE is not None:
        processes.PIDFILE.add(pid, f"{processes.MININET_SHELL}{HOLDER_WHAT}{name}")


def stop_holders(holders: dict) -> list[str]:
    procs = [{"pid": h["pid"], "start": h["start"], "what": f"{HOLDER_WHAT}{n}"} for n, h in holders.items()]
    return hostguard.stop_recorded(procs, lambda msg: None, grace_s=2.0)


def read_record() -> dict | None:
    try:
        rec = json.loads(record_path().read_text())
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) and isinstance(rec.get("holders"), dict) else None


def why_not_adopt(rec: dict, spec: dict, reuse: bool, links_now: set[str]) -> str | None:
    """Why a kept network cannot serve this run, or None when it can."""
    if not reuse:
        return "this run does not reuse topologies"
    why = unkeepable(spec)
    if why:
        return why
    if rec.get("key") != topology_key(spec):
        return "another topology section"
    return why_gone(rec, links_now)


def why_gone(rec: dict, links_now: set[str]) -> str | None:
    """What of a kept network is no longer there (a holder, a root-namespace interface), or None."""
    dead = [n for n, h in rec["holders"].items() if hostguard.proc_start(h.get("pid", 0)) != h.get("start")]
    if dead:
        return f"holders gone: {', '.join(sorted(dead))}"
    missing = [l for l in rec.get("links", []) if l not in links_now]
    if missing:
        return f"interfaces gone: {', '.join(missing)}"
    return None


def claim(spec: dict, reuse: bool, log) -> dict | None:
    """Under the host lock, before the clean-up of a dead run: the kept network's record when this run adopts
    it (the record is removed: from now on the network is this run's, its holders in this run's pidfile),
    else None after taking down whatever network was kept."""
    rec = read_record()
    record_path().unlink(missing_ok=True)
    if rec is None:
        return None
    why = why_not_adopt(rec, spec, reuse, {l.get("ifname") for l in hostguard.ip_links()})
    if why is None:
        log(f"kept topology of run {rec.get('built_by')} adopted ({rec.get('runs', 1)} run(s) on it so far)")
        return rec
    discard(rec, why, log)
    return None


def discard(rec: dict, why: str, log) -> None:
    """A kept network down: its holders stopped (each namespace goes with its veth ends), then its
    root-namespace interfaces still there (the bridges)."""
    gone = stop_holders(rec["holders"])
    now = {l.get("ifname") for l in hostguard.ip_links()}
    links = hostguard.remove_links([l for l in rec.get("links", []) if l in now], log)
    log(f"kept topology of run {rec.get('built_by')} taken down ({why}); holders stopped: {len(gone)}, "
        f"interfaces removed: {len(links)}")


def take_down(log=print) -> bool:
    """`python3 -m testbed.runner.kept --take-down` (ansible/clean.yml, before the qdisc modules go): the kept
    network down, under the host lock so that no run is using it. True when there was one."""
    lock = hostguard.HostLock()
    lock.acquire("take-down of the kept topology", 60, log)
    try:
        rec = read_record()
        record_path().unlink(missing_ok=True)
        if rec is None:
            log("no kept topology on this host")
            return False
        discard(rec, "asked to", log)
        return True
    finally:
        lock.release()


def spared(rec: dict | None) -> dict:
    """What the clean-up of a dead run must leave to the run adopting `rec` (hostguard.clean_stale's
    spare): its holders, in case the run that parked it died before its pidfile was cleared, and its
    interfaces, which look like any dead run's."""
    if not rec:
        return {"pids": [], "links": []}
    return {"pids": [h["pid"] for h in rec["holders"].values()], "links": list(rec.get("links", []))}


def record(spec: dict, adopted: dict | None, holders: dict, probed: dict) -> dict:
    """The record a parking run writes: the network's topology, holders and interfaces, the run that built
    it with its probes, and how many runs it served."""
    first = adopted or {"built_by": spec["run_id"], "built_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "probes": probed, "runs": 0}
    return {"key": topology_key(spec), "built_by": first["built_by"], "built_utc": first["built_utc"],
            "probes": first["probes"], "runs": first.get("runs", 1) + 1, "holders": holders,
            "links": network.root_links(spec)}


def manifest_entry(adopted: dict | None, reuse: bool, spec: dict) -> dict:
    """The manifest's kept_topology: whether this run asked to reuse, and the network it ran on."""
    if adopted:
        return {"reuse": True, "built_by": adopted.get("built_by"), "runs_before": adopted.get("runs", 1)}
    why = unkeepable(spec) if reuse else None
    return {"reuse": reuse, "built_by": spec["run_id"], "runs_before": 0, **({"not_kept": why} if why else {})}


def adopt(ctx, rec: dict) -> KeptNet:
    """The kept network as this run's ctx.net, its holders in the pidfile, hosts.json written, then made as a
    fresh network would be (module docstring)."""
    from topologies import tc
    net = KeptNet(rec)
    for n, h in rec["holders"].items():
        in_pidfile(n, h["pid"])
    topomod = network.topology_module(ctx.spec["topology"]["kind"])
    ctx.hostsj = topomod.hosts_json(ctx.spec["topology"])
    (ctx.dir / rundir.HOSTS).write_text(json.dumps(ctx.hostsj, indent=2) + "\n")
    ctx.net = net
    jobs = reset_jobs(topomod.qdisc_plan(ctx.spec["topology"], ctx.spec["aqm"]))
    # each host's reset goes first in its TCP profile's script (hoststate.apply_tcp): one shell per host, not two
    ctx.host_reset = {h: tc.node_script(jobs.pop(h)) for h in ctx.hostsj["hosts"] if h in jobs}
    tc.run_node_scripts(net, jobs)
    return net


def root_devs(cmds: list[list[str]]) -> list[str]:
    """The devices whose root qdisc these tc commands make."""
    return [c[c.index("dev") + 1] for c in cmds
            if c[:3] in (["tc", "qdisc", "replace"], ["tc", "qdisc", "add"]) and "root" in c]


def reset_jobs(plan: dict) -> dict:
    """run_node_scripts' jobs that make a kept network's qdiscs a fresh one's: every root qdisc of the plan
    deleted and made again (a replace of a qdisc of the same kind would only change it, keeping its counters
    and, for htb, its classes). The hosts' TCP metrics are flushed by their TCP profile
    (hoststate.tcp_host_script); the neighbour tables stay (module docstring). The deletions are checked: the
    run that kept the network made every root of the same plan, so one that fails finds the network changed,
    and the run fails before it measures anything (and the next builds afresh)."""
    jobs: dict = {}
    for node_name, items in plan.items():
        key = None if node_name == "root" else node_name
        # every root qdisc of the node deleted before any is made again (each on its own device): so the
        # deletions and the makings of one kind are consecutive and run as one tc -batch (node_script)
        jobs.setdefault(key, []).extend((["tc", "qdisc", "del", "dev", d, "root"], True, None)
                                        for cmds, _ in items for d in root_devs(cmds))
        jobs[key].extend((c, True, kind) for cmds, kind in items for c in cmds)
    return jobs


def reused_probes(rec: dict, fidelity: dict) -> dict:
    """The building run's probe measurements, judged with this run's own thresholds (`fidelity`), each naming
    the run that probed and when."""
    return {k: dict(v, probed_by=rec.get("built_by"), probed_utc=rec.get("built_utc"))
            for k, v in probes.judged(rec.get("probes") or {}, fidelity).items()}


def probe_checks(checks: dict) -> dict:
    return {k: v for k, v in checks.items() if PROBE_CHECKS.fullmatch(k)}


# ---------------------------------------------------------------- parking it for the next run

# /proc/net/tcp's state numbers (include/net/tcp_states.h) as ss(8) names them
TCP_STATES = {1: "ESTAB", 2: "SYN-SENT", 3: "SYN-RECV", 4: "FIN-WAIT-1", 5: "FIN-WAIT-2", 6: "TIME-WAIT",
              7: "UNCONN", 8: "CLOSE-WAIT", 9: "LAST-ACK", 10: "LISTEN", 11: "CLOSING", 12: "SYN-RECV"}


def _address(hexed: str) -> str:
    """/proc/net/tcp's "0100000A:1389" (the address in host byte order, 32 bits at a time) as ss writes it,
    10.0.0.1:5001 ([::1]:5002 for IPv6, port 0 as *)."""
    addr, port = hexed.split(":")
    raw = b"".join(bytes.fromhex(addr[i:i + 8])[::-1] for i in range(0, len(addr), 8))
    ip = socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)
    return f"{ip if len(raw) == 4 else '[' + ip + ']'}:{int(port, 16) or '*'}"


def tcp_sockets(net_dir: Path) -> list[str]:
    """The TCP sockets of the network namespace whose /proc/<pid>/net is net_dir, one "STATE local peer" line
    each (state as ss names it), TIME-WAIT ones included: what `ss -Htan` lists, read by the runner itself,
    as a process in each node costs a TCG guest about 0.1 s of CPU and parking reads every node twice."""
    lines = []
    for name in ("tcp", "tcp6"):
        f = net_dir / name
        if not f.exists():
            continue
        for row in f.read_text().splitlines()[1:]:
            cols = row.split()
            state = int(cols[3], 16)
            lines.append(f"{TCP_STATES.get(state, state)} {_address(cols[1])} {_address(cols[2])}")
    return lines


def sockets_then_time_wait_closed(net, names) -> dict[str, tuple[list[str], list[str]]]:
    """Per node: its TCP sockets (tcp_sockets), and those left after its TIME-WAIT ones were closed (ss -K:
    needs the kernel's INET_DIAG_DESTROY), a process started only in the nodes that have any."""
    def one(n):
        node = net.get(n)
        before = tcp_sockets(processes.proc_net(node))
        if not any(l.startswith("TIME-WAIT") for l in before):
            return n, (before, before)
        processes.out(["ss", "-K", "-Htan", "state", "time-wait"], node)
        return n, (before, tcp_sockets(processes.proc_net(node)))
    with ThreadPoolExecutor(max_workers=8) as pool:
        return dict(pool.map(one, names))


def park(ctx, rec: dict) -> dict:
    """After the run's processes are stopped: check that no socket but TIME-WAIT ones is left in any node,
    then write the record for the next run. Returns what the manifest says of it. Raises RuntimeError
    (the caller then takes the network down) when a socket is left."""
    names = [n.name for n in ctx.net.hosts]
    found = sockets_then_time_wait_closed(ctx.net, names)
    left = {n: [l for l in before if not l.startswith("TIME-WAIT")] for n, (before, _) in found.items()}
    left = {n: ls for n, ls in left.items() if ls}
    if left:
        raise RuntimeError(f"sockets left after the run: {json.dumps(left)[:300]}")
    time_wait = {n: len(after) for n, (_, after) in found.items() if after}
    rec = dict(rec, parked_unix=round(time.time(), 3))
    tmp = record_path().with_suffix(".tmp")
    tmp.write_text(json.dumps(rec, indent=1) + "\n")
    os.replace(tmp, record_path())
    return {"time_wait_left": time_wait}


def probe_again(log=print) -> dict:
    """`python3 -m testbed.runner.kept --probe`: the probes of a fresh network run again on the kept one, under the
    host lock, beside what the building run measured: {check: {"then", "now", "ok_now"}}. After runs have
    swapped their qdiscs on it, the same numbers say that the swaps left the paths and the bottleneck as they
    were (the next run's adoption resets what the probes leave)."""
    from contract.spec import FIDELITY_DEFAULTS
    lock = hostguard.HostLock()
    lock.acquire("probes of the kept topology", 60, log)
    try:
        rec = read_record()
        why = "none recorded" if rec is None else why_gone(rec, {l.get("ifname") for l in hostguard.ip_links()})
        if why:
            log(f"no kept topology on this host to probe ({why})")
            return {}
        topo = json.loads(rec["key"])
        net = KeptNet(rec)
        hostsj = network.topology_module(topo["kind"]).hosts_json(topo)
        tol = next((v["tolerance_ms"] - 0.02 * v["configured"] for k, v in rec["probes"].items() if k.startswith("rtt_")),
                   FIDELITY_DEFAULTS["rtt_tolerance_ms"])
        now = probes.probe_rtts(net, hostsj, tol, probes.rtt_probe_paths(hostsj))
        now.update(probes.probe_rate(net, hostsj, topo["bottleneck_mbps"], log,
                                     rec["probes"]["bottleneck_rate_mbps"].get("min_share", FIDELITY_DEFAULTS["rate_min_share"]),
                                     *probes.rate_probe_pair(hostsj)))
        out = {k: {"then": rec["probes"].get(k, {}).get("measured"), "now": v["measured"], "ok_now": v["ok"]}
               for k, v in now.items()}
        log(json.dumps({"built_by": rec.get("built_by"), "runs": rec.get("runs"), "probes": out}, indent=1))
        return out
    finally:
        lock.release()


if __name__ == "__main__":
    import argparse
    import sys
    ap = argparse.ArgumentParser(prog="python3 -m testbed.runner.kept",
                                 description="a network the host's last run kept up: take it down, or probe it again")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--take-down", action="store_true", help=take_down.__doc__.split(":")[0])
    what.add_argument("--probe", action="store_true", help="run a fresh network's probes on it again, beside the first")
    a = ap.parse_args()
    if a.take_down:
        take_down()
    else:
        probe_again()
    sys.exit(0)
