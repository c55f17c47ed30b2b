"""Execute ONE run on a testbed host (as root, inside the guest): run.json + schedule.csv in, the whole
run directory of docs/contracts.md out, DONE last. Everything is torn down even on error."""
from __future__ import annotations

import errno
import hashlib
import json
import os
import platform
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

from contract import spec as specmod
from testbed.runner import hostguard

REPO = Path(__file__).resolve().parents[2]
FAVOR_TRACE = Path("/opt/favorlab/qdisc/tools/favor_trace.py")
CPU_BUSY_LIMIT = 0.90     # a run whose guest CPU is busier than this ...
CPU_BUSY_SUSTAINED = 0.10  # ... for more than this share of its samples is invalid
# pfifo, bfifo and pfifo_head_drop live in sch_fifo.c and pfifo_fast in sch_generic.c, both always built
# in: there is no sch_pfifo module, and asking modprobe for one only puts a FATAL line in the run's log
BUILTIN_QDISCS = frozenset({"pfifo", "bfifo", "pfifo_head_drop", "pfifo_fast"})
PF_KTHREAD = 0x00200000    # /proc/<pid>/stat flags: a kernel thread (an exited process has no command line either)
KTHREAD = "[kernel thread]"
PROC_SNAPSHOT_EVERY = 5   # seconds between per-process CPU snapshots (one costs ~10 ms of Python per 100 processes)
PHANTOM_LOSS_MAX = 0.01     # share of favored packets whose phantom (favorqueue.p4) the traffic manager may drop


class Log:
    """Each line to the run's log file and to stdout, which is the SSH channel to the controller. When that
    channel is gone (the controller was killed: a broken pipe, or stdout closed), writing to it stops for
    good, the file goes on, and on_lost(why) is called once; a failure to write the file is not allowed to
    stop the caller either (a tear-down logs as it goes and must reach its end)."""

    def __init__(self, path: Path, stream=None, on_lost=None):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.f = path.open("a")
        self.stream = stream
        self.stdout_ok = True
        self.on_lost = on_lost

    def __call__(self, msg: str) -> None:
        line = f"{datetime.now(timezone.utc).isoformat(timespec='milliseconds')} {msg}"
        try:
            self.f.write(line + "\n")
            self.f.flush()
        except (OSError, ValueError):
            pass
        if self.stdout_ok:
            try:
                stream = self.stream or sys.stdout
                stream.write(line + "\n")
                stream.flush()
            except (OSError, ValueError) as e:       # BrokenPipeError, EIO, a closed file
                self.lost(f"stdout failed ({type(e).__name__}: {e})")

    def lost(self, why: str) -> None:
        """The controller's channel is gone: say so in the file, point stdout and stderr at /dev/null (so
        neither this process's later writes nor Python's flush at exit fail), and tell on_lost."""
        if not self.stdout_ok:
            return
        self.stdout_ok = False
        try:
            self.f.write(f"{datetime.now(timezone.utc).isoformat(timespec='milliseconds')} controller channel "
                         f"lost: {why}; logging to this file only\n")
            self.f.flush()
        except (OSError, ValueError):
            pass
        if self.stream is None:
            devnull = os.open(os.devnull, os.O_WRONLY)
            for fd in (1, 2):
                os.dup2(devnull, fd)
            os.close(devnull)
        if self.on_lost:
            self.on_lost(why)


def utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def sha256(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def out(argv, node=None, check=False, env=None) -> str:
    prefix = [] if node is None else ["mnexec", "-a", str(node.pid)]
    try:
        p = subprocess.run(prefix + list(argv), capture_output=True, text=True, env=env, timeout=120)
    except FileNotFoundError as e:
        if check:
            raise
        return f"(not available: {e})"
    if check and p.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed: {p.stderr.strip()}")
    return p.stdout if p.returncode == 0 else (p.stdout + p.stderr)


# The run's stop requests and its pidfile (hostguard): module-wide because popen, which every start of a
# process goes through, records each process there and must not be cut off between the two.
STOPPER = hostguard.Stopper()
PIDFILE: hostguard.PidFile | None = None


def popen(argv, node=None, cgroup: Path | None = None, **kw) -> subprocess.Popen:
    """Start argv in a host's namespace; with `cgroup`, inside that cgroup v2 directory from its first
    instruction (a shell moves itself in, then execs), so every socket it makes is the cgroup's. The
    process is in the pidfile before a stop request can unwind the caller."""
    prefix = [] if node is None else ["mnexec", "-a", str(node.pid)]
    if cgroup is not None:
        prefix = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(cgroup / "cgroup.procs")] + prefix
    with STOPPER.deferred():
        p = subprocess.Popen(prefix + list(argv), start_new_session=True, **kw)
        if PIDFILE is not None:
            PIDFILE.add(p.pid, " ".join(map(str, argv))[:60])
    return p


class StaleModule(RuntimeError):
    """The qdisc module in the kernel is not the one installed on disk."""


def loaded_module(mod, sys_root=Path("/sys")):
    """{"version", "srcversion"} of `mod` as the kernel has it loaded (sysfs), not of the file on disk that
    modinfo reads: the code that made a run's result. None when it is not loaded."""
    d = sys_root / "module" / mod
    if not d.is_dir():
        return None
    return {k: (d / k).read_text().strip() if (d / k).is_file() else None for k in ("version", "srcversion")}


def check_loaded_module(mod, sys_root=Path("/sys"), modinfo=None):
    """The srcversion of the loaded `mod` (sysfs) against the installed file's (modinfo). A mismatch means an
    older build is still loaded, e.g. the Ansible role's rmmod failed because a qdisc still used the module
    and modprobe then kept the old one: a run would measure code other than what its manifest names.
    Returns the srcversion; raises StaleModule naming both and the fix. A module not loaded, or one without a
    srcversion (built in), is not checked: None."""
    loaded = (loaded_module(mod, sys_root) or {}).get("srcversion")
    if not loaded:
        return None
    info = modinfo if modinfo is not None else out(["modinfo", "-F", "srcversion", mod])
    on_disk = info.strip()
    if on_disk != loaded:
        raise StaleModule(f"{mod}: the loaded module (srcversion {loaded}) is not the installed one "
                          f"({on_disk or 'modinfo found none'}): an older build is still in the kernel. Delete the "
                          f"qdiscs that use it, `rmmod {mod}` and provision again (or reboot the testbed)")
    return loaded


class RunCgroup:
    """A cgroup v2 directory of this run's own: the initial-RTO program is attached here, not to the root
    cgroup, so on a real host it changes the workload's sockets and no one else's. hostguard.remove_cgroup
    removes it (the tear-down, or the next run's clean-up after a dead run), killing what is still in it."""

    def __init__(self, name: str):
        from testbed.runner.bpf import cgroup2_root
        self.path = Path(cgroup2_root()) / name
        self.path.mkdir(exist_ok=True)


def stop(p: subprocess.Popen, sig=signal.SIGTERM, wait=10.0) -> int | None:
    """Stop one process we started, by its PID (its own session, so its children go too)."""
    if p.poll() is None:
        try:
            os.killpg(p.pid, sig)
            return p.wait(timeout=wait)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return p.wait()
    return p.returncode


# ---------------------------------------------------------------- TCP profile

def tcp_sysctls(tcp: dict) -> dict:
    """The per-netns sysctls of run.json "tcp" (linux profile: kernel defaults except no metrics cache and
    the congestion control, which is an axis of the matrix for both profiles)."""
    s = {"net.ipv4.tcp_no_metrics_save": 1,   # no cached ssthresh/RTT between flows of one host pair
         "net.ipv4.tcp_congestion_control": tcp["congestion_control"]}
    if tcp["profile"] == "linux":
        return s
    s.update({
        "net.ipv4.tcp_sack": int(bool(tcp.get("sack"))),
        "net.ipv4.tcp_timestamps": int(bool(tcp.get("timestamps"))),
        "net.ipv4.tcp_early_retrans": 3 if tcp.get("tlp") else 0,   # 0 = no TLP
        "net.ipv4.tcp_recovery": 1 if tcp.get("rack") else 0,       # 0 = no RACK
        "net.ipv4.tcp_ecn": 1 if tcp.get("ecn") else 0,
    })
    return s


def route_opts(tcp: dict) -> list[str]:
    opts = ["initcwnd", str(tcp["iw"]), "initrwnd", str(max(tcp["iw"], 10))]
    if tcp["profile"] != "linux" and not tcp.get("delayed_ack", True):
        opts += ["quickack", "1"]
    return opts


def apply_tcp(net, tcp: dict, hosts: dict, log) -> dict:
    """Set the profile in every host's namespace and read it back (as Flent's metadata does): returns the
    tcp_applied check, which fails when a host's value is not what run.json asked (a congestion control
    the kernel could not load, say)."""
    applied, wrong = {}, []
    for h, info in hosts.items():
        node = net.get(h)
        for k, v in tcp_sysctls(tcp).items():
            out(["sysctl", "-qw", f"{k}={v}"], node, check=True)
        intf = info["intf"]
        subnet = info["ip"].rsplit(".", 1)[0] + ".0/24"
        out(["ip", "route", "change", subnet, "dev", intf, "proto", "kernel", "scope", "link",
             "src", info["ip"], *route_opts(tcp)], node, check=True)
        out(["ip", "route", "change", "default", "via", info["gw"], "dev", intf, *route_opts(tcp)],
            node, check=True)
        keys = list(tcp_sysctls(tcp)) + ["net.ipv4.tcp_available_congestion_control"]
        got = dict(zip(keys, out(["sysctl", "-n", *keys], node, check=True).splitlines()))
        applied[h] = got
        wrong += [f"{h} {k}={got.get(k)!r}" for k, v in tcp_sysctls(tcp).items() if str(got.get(k, "")).strip() != str(v)]
    log(f"tcp profile {tcp['profile']}: {tcp_sysctls(tcp)} routes {' '.join(route_opts(tcp))}")
    return {"tcp_applied": {"configured": tcp_sysctls(tcp), "measured": applied if not wrong else "; ".join(wrong),
                            "ok": not wrong}}


# ---------------------------------------------------------------- measurements

def qdisc_stats(net, routers=("rl", "rr")) -> dict:
    """`tc -s -j qdisc show` of each router (the dumbbell's rl and rr; the chain's r0 .. r<hops>)."""
    res = {}
    for r in routers:
        txt = out(["tc", "-s", "-j", "qdisc", "show"], net.get(r),
                  env=dict(os.environ, TC_LIB_DIR="/usr/local/lib/favorlab/tc"))
        try:
            res[r] = json.loads(txt)
        except json.JSONDecodeError:
            res[r] = {"raw": txt}
    return res


def nstat(net, hosts) -> dict:
    res = {}
    for h in hosts:
        txt = out(["nstat", "-a", "-z", "-j"], net.get(h), env=dict(os.environ, NSTAT_HISTORY="/dev/null"))
        try:
            res[h] = json.loads(txt)
        except json.JSONDecodeError:
            res[h] = {"raw": txt}
    return res


def ping_rtt(net, src, dst_ip, count=4) -> float | None:
    txt = out(["ping", "-n", "-q", "-c", str(count), "-i", "0.2", "-W", "2", dst_ip], net.get(src))
    m = re.search(r"= [\d.]+/([\d.]+)/", txt)
    if not m:
        return None
    mins = re.search(r"= ([\d.]+)/", txt)
    return float(mins.group(1))


def probe_rtts(net, hostsj, tolerance_ms: float = specmod.FIDELITY_DEFAULTS["rtt_tolerance_ms"], paths: dict | None = None) -> dict:
    """Idle RTT of each of the nine paths (min of a few pings) against the configured 2*(d_a+d_b)
    (`paths`: path -> configured RTT, default every path of hosts.json; the chain probes a sample).
    The paths are probed at once: one after another they took about 9 s of every run (a path of 200 ms
    RTT needs about 1.5 s), and nine pings every 0.2 s are 45 small packets a second, far too few to queue
    at the bottleneck and move a minimum."""
    def one(path):
        a, b = path.split("-")
        ping_rtt(net, a, hostsj["hosts"][b]["ip"], count=1)   # ARP warm-up
        return ping_rtt(net, a, hostsj["hosts"][b]["ip"])

    paths = hostsj["paths_rtt_ms"] if paths is None else paths
    with ThreadPoolExecutor(max_workers=len(paths) or 1) as pool:
        measured = dict(zip(paths, pool.map(one, paths)))
    checks = {}
    for path, conf in paths.items():
        meas = measured[path]
        tol = tolerance_ms + 0.02 * conf
        ok = meas is not None and abs(meas - conf) <= tol
        checks[f"rtt_{path}_ms"] = {"configured": conf, "measured": meas, "ok": ok, "tolerance_ms": round(tol, 3)}
    return checks


PROBE_OVERLOAD = 2.0   # the rate probe offers this many times the bottleneck rate
PROBE_ATTEMPTS = 3     # probes tried, at most, before the rate check fails


def probe_rate_once(net, hostsj, offered: float, log, src: str = "a1",
                    dst: str = "b1") -> tuple[float | None, float | None]:
    """One 3 s UDP probe src->dst (a1->b1 in the dumbbell) at `offered` Mb/s: (rate on the wire in Mb/s,
    loss %), read at the receiver."""
    srv = popen(["iperf3", "-s", "-1", "-p", "5201"], net.get(dst),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    txt = ""
    try:
        txt = out(["iperf3", "-c", hostsj["hosts"][dst]["ip"], "-p", "5201", "-u", "-b",
                   f"{offered:g}M", "-t", "3", "-l", "1400", "-J"], net.get(src))
        end = json.loads(txt)["end"]
        lost = end["sum"].get("lost_percent", 0.0)
        if "sum_received" in end:          # iperf3 >= 3.13 reports the receiver's side itself
            meas = end["sum_received"]["bits_per_second"] / 1e6
        else:                              # 3.12: the sender's rate minus what the receiver lost
            meas = end["sum"]["bits_per_second"] / 1e6 * (1 - lost / 100)
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        log(f"rate probe failed: {e}: {txt[:300]}")
        return None, None
    finally:
        stop(srv)
    # the receiver's rate counts UDP payload; htb counts frames (payload + UDP 8 + IP 20 + Ethernet 14)
    return meas * (1400 + 8 + 20 + 14) / 1400, lost


def probe_rate(net, hostsj, mbps: float, log, min_share: float = specmod.FIDELITY_DEFAULTS["rate_min_share"], src: str = "a1",
               dst: str = "b1") -> dict:
    """Bottleneck rate a1->b1 (the chain: one hop, rate_probe_pair): UDP (iperf3, 3 s) offered at twice the
    bottleneck rate, read at the receiver.

    Twice, not just above it: the bottleneck buffer is only 8 packets, so with an offer of 1.1x a sender
    whose pacing comes in bursts (iperf3 in a TCG guest: 14-35% loss at 1.1x) leaves the link idle
    between bursts and the probe measured the sender's smoothness (7.3-9.7 Mb/s of 10) instead of what
    the bottleneck can deliver. At 2x the queue refills within any burst gap shorter than its own drain
    time (8 frames, ~10 ms at 10 Mb/s).

    The probe asks what the link can carry, and a stall of the probe's sender (the host is shared: one
    CI probe read 8.1 Mb/s with the guest 18 % busy) can only lower it, so a probe below the threshold
    is tried again, up to PROBE_ATTEMPTS times, and the best is kept. Every attempt is recorded; a link
    that is really slow fails all of them. Whether the host kept up during the run itself is the
    cpu_busy check's business.
    """
    offered = mbps * PROBE_OVERLOAD
    attempts, best = [], None
    for _ in range(PROBE_ATTEMPTS):
        wire, lost = probe_rate_once(net, hostsj, offered, log, src, dst)
        attempts.append({"measured": wire, "lost_percent": lost})
        if wire is not None and (best is None or wire > best):
            best = wire
        ok = best is not None and best >= min_share * mbps
        if ok:
            break
    return {"bottleneck_rate_mbps": {"configured": mbps, "measured": best, "ok": ok, "min_share": min_share,
                                     "offered_mbps": offered, "attempts": attempts}}


# ---------------------------------------------------------------- what differs by topology kind

# run.json's topology.kind -> the module that describes and builds it (hosts_json, build); the chain's
# hosts.json also names its routers, capture points and bottleneck, which the runner reads from there
TOPOLOGIES = {"dumbbell": "topologies.dumbbell", "chain": "topologies.chain"}
# the dumbbell's capture points (contracts.md "Run directory"): every host's own interface, and rl's
# interface towards the senders and rr's towards rl around the bottleneck
DUMBBELL_BNECK_POINTS = {"bneck-in": ("rl", "rl-eth0"), "bneck-out": ("rr", "rr-eth0")}


def topology_module(kind: str):
    import importlib
    if kind not in TOPOLOGIES:
        raise specmod.SpecError(f"run.json: field topology.kind={kind!r}: one of {', '.join(TOPOLOGIES)}")
    return importlib.import_module(TOPOLOGIES[kind])


def own_addresses(hostsj: dict) -> list[str]:
    """The experiment's IPv4 addresses: every host's and its gateway's (the routers' ports toward the hosts)."""
    return sorted({a for h in hostsj["hosts"].values() for a in (h.get("ip"), h.get("gw")) if a})


def foreign_packets(pcap: Path, own: list[str], keep: int = 5) -> tuple[int, list[str]]:
    """(count, the first `keep` as tcpdump prints them) of the IP packets in `pcap` whose source or destination
    is not one of `own`: traffic that is not the experiment's (a DHCP client on a veth port, a stray daemon).
    tcpdump, already on every testbed, reads the file with a filter built from the addresses."""
    srcs = " or ".join(f"src host {a}" for a in own)
    dsts = " or ".join(f"dst host {a}" for a in own)
    flt = f"ip and not (({srcs}) and ({dsts}))" if own else "ip"
    p = subprocess.run(["tcpdump", "-r", str(pcap), "-n", flt], capture_output=True, text=True, timeout=600)
    if p.returncode:
        raise RuntimeError(f"tcpdump -r {pcap} failed: {p.stderr.strip()[-300:]}")
    lines = p.stdout.splitlines()
    return len(lines), lines[:keep]


def capture_filter(spec: dict) -> str:
    """tcpdump's filter for every capture: IPv4, less a flood's spoofed prefix (its SYNs and their backscatter:
    tens of thousands of packets a second that the analysis does not read; flood.json and the qdiscs'
    statistics count them)."""
    flood = spec.get("flood")
    return f"ip and not net {flood['spoof']}" if flood else "ip"


def flood_check(summary: Path, pps_wanted: float, min_share: float = 0.95) -> dict:
    """The flood's rate as a fidelity check: the SYNs it sent over its duration against the rate asked."""
    from workloads import synflood
    try:
        s = synflood.read_summary(summary)
    except synflood.FloodError as e:
        return {"synflood_rate": {"configured": round(pps_wanted, 1), "measured": str(e), "ok": False}}
    rate = s["sent"] / s["duration_s"]
    return {"synflood_rate": {"configured": f">= {min_share:g} x {pps_wanted:.0f} SYNs/s",
                              "measured": {"pps": round(rate, 1), "missed": s["missed"],
                                           "send_errors": s["send_errors"]},
                              "ok": rate >= min_share * pps_wanted}}


def capture_points(hostsj: dict) -> dict:
    """name -> (node, intf) of every tcpdump: the topology's own capture_points when hosts.json has them
    (the chain: topologies.chain.capture_points), else the dumbbell's (a sender-<h> per host, bneck-in/out)."""
    if "capture_points" in hostsj:
        return {name: (p["node"], p["intf"]) for name, p in hostsj["capture_points"].items()}
    points = {f"sender-{h}": (h, f"{h}-eth0") for h in hostsj["hosts"]}
    points.update(DUMBBELL_BNECK_POINTS)
    return points


def rtt_probe_paths(hostsj: dict) -> dict:
    """path -> configured RTT to ping: every path of the dumbbell; the chain's reference path and the first
    and last cross flow of every hop (51 paths at once would be 51 ping threads for one check)."""
    ref = hostsj.get("reference")
    if ref is None:
        return hostsj["paths_rtt_ms"]
    paths = {f"{ref['src']}-{ref['dst']}": ref["rtt_ms"]}
    by_hop: dict = {}
    for c in hostsj.get("cross_flows", []):
        by_hop.setdefault(c["hop"], []).append(c)
    for flows in by_hop.values():
        for c in (flows[0], flows[-1]):
            paths[f"{c['src']}-{c['dst']}"] = c["rtt_ms"]
    return paths


def rate_probe_pair(hostsj: dict) -> tuple[str, str]:
    """(src, dst) of the rate probe: a1->b1 across the dumbbell's bottleneck; one hop of the chain (hop 1's
    first cross path), or the whole chain when it has no cross hosts (every hop runs at the same rate)."""
    if "reference" not in hostsj:
        return "a1", "b1"
    cross = hostsj.get("cross_flows") or []
    if cross:
        return cross[0]["src"], cross[0]["dst"]
    return hostsj["reference"]["src"], hostsj["reference"]["dst"]


def sizes_arg(sizes: dict) -> str:
    """run.json's sizes as a --sizes argument (orchestrate.experiment.sizes_arg: the controller's side)."""
    params = ",".join(f"{k}={v}" for k, v in sizes.items() if k != "distribution")
    return f"{sizes['distribution']}:{params}" if params else sizes["distribution"]


def p4_state(sw) -> dict:
    """The P4 bottleneck's verdict counters and queue state (favorqueue.p4; empty for droptail)."""
    return {"t_unix": time.time(), "verdicts": sw.verdicts(), "registers": sw.registers()}


def p4_drained_check(state: dict) -> dict:
    """After the run the queue is empty, so favorqueue.p4's buffer and per-flow counts must be zero:
    anything else is state leaked by packets that never reached egress."""
    from p4 import control
    regs = state.get("registers") or {}
    if not regs:
        return {}
    left = control.queue_left(regs)
    checks = {"p4_state_drained": {"configured": "all 0 after the run", "measured": left,
                                   "ok": not any(left.values())}}
    v = state["verdicts"]
    favored = v["favored"] + v["pushouts"]
    lost = control.phantoms_lost(v)
    # a lost phantom is one packet sent above the port's rate (favorqueue.p4, top comment)
    checks["p4_phantoms_paced"] = {"configured": f"<= {PHANTOM_LOSS_MAX:.0%} of {favored} favored packets unpaid",
                                   "measured": lost, "ok": lost <= PHANTOM_LOSS_MAX * favored}
    return checks


def p4_manifest(sw, mbps: float) -> dict:
    from p4 import control, switch as p4switch
    m = control.describe(sw.params, mbps)
    for t, arg in (("simple_switch", "--version"), ("p4c-bm2-ss", "--version")):
        try:
            m[t] = _first_line(out([p4switch.tool(t), arg], env=p4switch.tool_env()))
        except p4switch.ToolchainMissing as e:
            m[t] = f"(not available: {e})"
    m["program_json_sha256"] = sha256(Path(sw.json)) if sw.json else None
    return m


# /proc/stat's cpu line, in its order (proc(5)); iowait and steal matter little here but are kept
CPU_MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def cpu_modes() -> list[int]:
    return [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:1 + len(CPU_MODES)]]


def proc_ticks() -> dict:
    """utime + stime (clock ticks, all threads) of every live process, keyed by (pid, start time) so that a
    PID reused between two snapshots is not taken for the same process."""
    procs = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:     # ended between listing and reading
            continue
        comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        # rest[0] is field 3 (state): flags, utime, stime, starttime are fields 9, 14, 15 and 22
        if int(rest[6]) & PF_KTHREAD:
            cmd = KTHREAD
        procs[(int(d.name), rest[19])] = (comm, cmd, int(rest[11]), int(rest[12]))
    return procs


def merge_ticks(procs: dict, newer: dict) -> None:
    """Update a snapshot with a newer one. A process that exited and was not reaped yet (a zombie) has an
    empty command line: it keeps the one seen before, so its time stays with its group."""
    for k, v in newer.items():
        if not v[1] and k in procs:
            v = (v[0], procs[k][1], v[2], v[3])
        procs[k] = v


def process_group(comm: str, cmd: str) -> str:
    """The parts of a run a CPU budget is spent on, named as testbed/README.md's breakdown names them."""
    for needle, group in (("workloads.client", "workload client"), ("workloads.server", "workload server"),
                          ("workloads.reference", "workload client"),
                          ("favorflow client", "workload client"), ("favorflow server", "workload server"),
                          ("favorflow synflood", "SYN flood"),
                          ("workloads.persistent", "workload persistent"), ("favor_trace", "favor trace"),
                          ("testbed.runner", "runner")):
        if needle in cmd:
            return group
    if comm == "tcpdump":
        return "tcpdump"
    if cmd == KTHREAD:      # ksoftirqd, kworker, rcu ...
        return "kernel threads (" + re.sub(r"[/:].*|[\d.]+$", "", comm) + ")"
    return comm


def cpu_breakdown(modes0, modes1, procs0, procs1) -> dict:
    """Where the guest's CPU went between two snapshots: each /proc/stat mode's share of all CPU time, and
    each process group's share (user + system time charged to its processes; softirq work done on behalf
    of the network is charged to whichever process it interrupted, so read the two together)."""
    dm = [b - a for a, b in zip(modes0, modes1)]
    total = sum(dm) or 1
    groups: dict[str, list[int]] = {}
    for key, (comm, cmd, u1, s1) in procs1.items():
        u0, s0 = procs0.get(key, (None, None, 0, 0))[2:]
        g = groups.setdefault(process_group(comm, cmd), [0, 0, 0])
        g[0] += u1 - u0
        g[1] += s1 - s0
        g[2] += 1
    return {"window_ticks": total, "cpus": os.cpu_count(),
            "modes": {m: round(d / total, 4) for m, d in zip(CPU_MODES, dm)},
            "processes": sorted(({"group": k, "user": round(u / total, 4), "system": round(s_ / total, 4),
                                  "share": round((u + s_) / total, 4), "processes": n}
                                 for k, (u, s_, n) in groups.items() if u + s_ > 0),
                                key=lambda r: -r["share"]),
            "note": "shares of all CPU time of all vCPUs over the traffic window; a process that ended "
                    f"inside it is counted up to its last snapshot (every {PROC_SNAPSHOT_EVERY} s)"}


def mem_used_mib() -> tuple[int, int]:
    """(total, in use) in MiB: MemTotal - MemAvailable, what the kernel could not give back without swapping."""
    kv = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines() if ":" in line)
    total, avail = (int(kv[k].split()[0]) // 1024 for k in ("MemTotal", "MemAvailable"))
    return total, total - avail


def slab_mib(field: str = "SUnreclaim", meminfo: str | None = None) -> float:
    """Kernel slab memory now, MiB (/proc/meminfo). SUnreclaim, the unreclaimable part, is where a qdisc that
    leaks per-packet or per-flow memory (kmalloc, skbs) shows; SReclaimable is the kernel's caches (dentries,
    inodes, the page cache's tree nodes), which grow while the captures are written and shrink on demand."""
    for line in (meminfo if meminfo is not None else Path("/proc/meminfo").read_text()).splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


# Growth of unreclaimable slab memory over a run beyond which it is reported (a warning: socket buffers
# move it too); the one-hour soak (config/soak.yaml) is where a leak would show. The reclaimable part is
# recorded beside it: in the one-hour soak (qdisc/README.md) an hour of captures written to the guest's disk grew
# the reclaimable part by 37 MiB, the unreclaimable one by 6.
SLAB_GROWTH_MIB = 32


class KernelLog:
    """The kernel's messages from now on (/dev/kmsg, read from the end: each open file has its own position,
    so nothing printed before the run counts and a wrapped ring buffer does not hide what came during it)."""
    BAD = re.compile(r"WARNING|BUG|Oops|Call Trace|general protection|soft lockup|hung_task|UBSAN|KASAN")

    def __init__(self, path: str = "/dev/kmsg"):
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            self.fd = None
            return
        try:
            os.lseek(self.fd, 0, os.SEEK_END)
        except OSError:                 # a pipe standing in for it (tests) has no position
            pass

    def new_lines(self) -> list[str]:
        """"<level> message" of each record since the start ("PRI,SEQ,TS,FLAGS;MESSAGE"; continuation lines,
        which begin with a space, are the record's key=value dictionary and are skipped)."""
        out = []
        while self.fd is not None:
            try:
                chunk = os.read(self.fd, 8192).decode(errors="replace")
            except BlockingIOError:
                break
            except OSError as e:        # EPIPE: records were overwritten before we read them; go on
                if e.errno == errno.EPIPE:
                    continue
                break
            if not chunk:
                break
            for line in chunk.splitlines():
                head, sep, msg = line.partition(";")
                if sep and not line.startswith(" ") and head.split(",")[0].isdigit():
                    out.append(f"<{int(head.split(',')[0]) & 7}> {msg}")
        return out

    def check(self) -> dict:
        bad = [l for l in self.new_lines() if self.BAD.search(l)]
        if self.fd is not None:
            os.close(self.fd)
        return {"kernel_warnings": {"configured": "no WARNING, BUG, Oops or lockup in the kernel log during the run",
                                    "measured": len(bad) if not bad else {"lines": len(bad), "first": bad[:3]},
                                    "ok": not bad}}


def favor_counts_check(after: dict) -> dict:
    """Every packet favor queued (favored + standard) left (sent), was pushed out, trimmed by a limit change,
    or is still queued: its counters agree with one another at the end of the run."""
    rows = []
    for router, qs in after.items():
        for q in qs if isinstance(qs, list) else []:
            if q.get("kind") == "favor" and "favored" in q:
                queued = q["favored"] + q["standard"]
                left = q.get("packets", 0) + q["pushouts"] + q.get("drop_limit", 0) + q.get("qlen", 0)
                rows.append({"router": router, "enqueued": queued, "sent_pushed_trimmed_queued": left})
    if not rows:
        return {}
    bad = [r for r in rows if r["enqueued"] != r["sent_pushed_trimmed_queued"]]
    return {"favor_counts": {"configured": "favored + standard = sent + pushouts + drop_limit + qlen",
                             "measured": rows, "ok": not bad}}


class CpuSampler(threading.Thread):
    """Guest CPU busy share from /proc/stat, once a second, and the most memory in use (the guest's size
    is chosen from both: testbed/README.md)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples: list[float] = []
        self.halt = threading.Event()
        self.mem_total, self.mem_peak = mem_used_mib()
        self.slab = [slab_mib()]
        self.reclaimable = [slab_mib("SReclaimable")]

    @staticmethod
    def _read():
        f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = f[3] + (f[4] if len(f) > 4 else 0)
        return sum(f), idle

    def run(self):
        self.modes0, self.procs0 = cpu_modes(), proc_ticks()
        self.procs1 = dict(self.procs0)
        t0, i0 = self._read()
        n = 0
        while not self.halt.wait(1.0):
            n += 1
            if n % PROC_SNAPSHOT_EVERY == 0:    # a process that ends between two snapshots keeps its last one
                merge_ticks(self.procs1, proc_ticks())
            self.mem_peak = max(self.mem_peak, mem_used_mib()[1])
            if n % 10 == 0:
                self.slab.append(slab_mib())
            t1, i1 = self._read()
            if t1 > t0:
                self.samples.append(1 - (i1 - i0) / (t1 - t0))
            t0, i0 = t1, i1

    def check(self) -> dict:
        s = self.samples
        over = sum(1 for x in s if x > CPU_BUSY_LIMIT) / len(s) if s else 0.0
        slab = self.slab + [slab_mib()]
        rec = self.reclaimable + [slab_mib("SReclaimable")]
        return {"cpu_busy": {"configured": f"<= {CPU_BUSY_LIMIT} for >= {1 - CPU_BUSY_SUSTAINED:.0%} of samples",
                             "measured": {"mean": sum(s) / len(s) if s else None,
                                          "max": max(s) if s else None, "share_over_limit": over},
                             "ok": over <= CPU_BUSY_SUSTAINED},
                "slab_growth": {"configured": f"unreclaimable slab <= {SLAB_GROWTH_MIB} MiB more at the run's end than at its start",
                                "measured": {"start_mib": round(slab[0], 1), "end_mib": round(slab[-1], 1),
                                             "max_mib": round(max(slab), 1), "reclaimable_start_mib": round(rec[0], 1),
                                             "reclaimable_end_mib": round(rec[-1], 1)},
                                "ok": slab[-1] - slab[0] <= SLAB_GROWTH_MIB, "severity": "warning"}}


FAVORFLOW = REPO / "workloads" / "go" / "bin" / "favorflow"
# The flow clients run at a higher priority than everything else of the run (servers, captures, the
# runner): the schedule's start times are the experiment's input, and on a small guest a client that wakes
# for a start behind a busy server waits a scheduler slice (several ms under TCG), which is what
# lateness_p99_ms catches. Their own CPU is small (one connect and a few writes per flow), so the servers
# lose little. The check itself is unchanged.
CLIENT_NICE = -10
TRACE_PARSE_WAIT_S = 300


# favor_trace.py's verdicts and the counters of sch_favor's xstats they mirror (one event per decision)
TRACE_COUNTERS = {"favored": "favored", "standard": "standard", "pushout_victim": "pushouts",
                  "drop_favored": "drop_favored", "drop_standard": "drop_standard"}


def trace_counts_check(path: Path, before: dict, after: dict, node: str, dev: str, at_stop: dict | None = None) -> dict:
    """Each kind of decision the favor trace recorded, counted, against the traced queue's counters. The
    recorder starts after before.json and stops before after.json is read (it parses its trace in between),
    so a complete trace (lost_events=0) must hold at least every decision from before.json to the counters
    read as it was stopped (qdisc/trace-stop.json) and at most every decision up to after.json: equal when
    nothing passed the queue after the traffic. A trace with lost events is not compared (favor_trace says
    so). What the favored share of Eq. 5 and F21/F22 is computed from rests on it."""
    def favor_q(stats):
        return next((q for q in (stats or {}).get(node, []) if q.get("kind") == "favor" and q.get("dev") == dev
                     and "favored" in q), None)
    qa, qb, qs = favor_q(after), favor_q(before), favor_q(at_stop)
    if qa is None or not path.is_file():
        return {}
    counted = dict.fromkeys(TRACE_COUNTERS, 0)
    complete = False
    with path.open() as f:
        next(f, None)                      # header
        for line in f:
            if line.startswith("#"):
                complete = line.strip() == "# lost_events=0"
                continue
            verdict = line.split(",", 3)[2]
            if verdict in counted:
                counted[verdict] += 1
    configured = "counters at the trace's stop - before <= trace events <= counters after - before, per decision"
    if not complete:
        return {"favor_trace_counts": {"configured": configured,
                                       "measured": "not compared: the trace is incomplete (favor_trace)",
                                       "ok": True, "severity": "warning"}}
    upto = {v: qa[c] - (qb or {}).get(c, 0) for v, c in TRACE_COUNTERS.items()}
    least = {v: (qs or qa)[c] - (qb or {}).get(c, 0) for v, c in TRACE_COUNTERS.items()}
    differ = {v: {"trace": counted[v], "counters_at_stop": least[v], "counters_after": upto[v]}
              for v in counted if not least[v] <= counted[v] <= upto[v]}
    later = {v: upto[v] - counted[v] for v in counted if upto[v] != counted[v]}
    return {"favor_trace_counts": {"configured": configured,
                                   "measured": differ or dict(counted, **({"after_the_trace": later} if later else {})),
                                   "ok": not differ, "severity": "warning"}}


def trace_check(path: Path) -> dict:
    """The favor trace is complete when its recorder wrote its last line, "# lost_events=0". A trace with
    lost events undercounts favored packets (Eq. 5, F21, F22): a warning, the latency metrics stand."""
    last = ""
    if path.is_file():
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - 200))
            last = f.read().decode(errors="replace").strip().splitlines()[-1:] or [""]
            last = last[0]
    m = re.fullmatch(r"# lost_events=(\d+)", last)
    measured = int(m.group(1)) if m else "no final lost_events line (recorder killed or failed: log/favor-trace.out)"
    return {"configured": "lost_events=0", "measured": measured, "ok": measured == 0, "severity": "warning"}


def workload_cmd(role: str, spec: dict) -> list[str]:
    """The flow client or server the spec names: the Python module, or favorflow (workloads/go, built on the
    controller and shipped with the code). Both take the same flags and write the same per-flow logs."""
    if spec.get("workload_impl", "python") == "go":
        if not FAVORFLOW.is_file():
            raise RuntimeError(f"workload_impl go, but {FAVORFLOW} is missing on this host. Fix: build it on the "
                               f"controller (workloads/go/build) and provision again (the favorlab_code role ships it)")
        return [str(FAVORFLOW), role]
    return [sys.executable, "-m", f"workloads.{role}"]


# ---------------------------------------------------------------- the run

class Run:
    def __init__(self, run_dir: Path, lock_wait_s: float | None = None):
        self.dir = Path(run_dir).resolve()
        self.log = Log(self.dir / "log" / "runner.log",
                       on_lost=lambda why: STOPPER.request(f"the controller is gone ({why})"))
        self.lock_wait_s = lock_wait_s
        self.lock: hostguard.HostLock | None = None
        self.procs: dict[str, subprocess.Popen] = {}
        self.checks: dict = {}
        self.reasons: list[str] = []
        self.manifest: dict = {"start_utc": utc()}
        self.net = None
        self.rto = None
        self.cgroup = None
        self.p4 = None
        self.persistent = None
        self.cross = None
        # favor's counters when the run starts and as its trace stops (trace_counts_check)
        self.qdisc_before: dict = {}
        self.qdisc_at_trace_stop: dict | None = None

    def run(self) -> int:
        """The whole run under the host lock. A stop request (SIGHUP, SIGTERM, SIGINT, or the controller's
        SSH channel gone) before the measurement is complete ends the run without DONE after the whole
        tear-down; one that comes later lets it finish (the tear-down ran already; only files are left)."""
        global PIDFILE
        (self.dir / "DONE").unlink(missing_ok=True)
        STOPPER.reason, STOPPER.tearing_down = None, False
        halt = threading.Event()
        if threading.current_thread() is threading.main_thread():
            STOPPER.install()
            hostguard.watch_hangup(1, lambda: self.log.lost("stdout hung up (its reader closed)"), halt)
        ok, failure = False, None
        try:
            self.spec = specmod.load(self.dir)
            self.log(f"run {self.spec['run_id']}: {self.spec['aqm']['forward']} load {self.spec.get('load')} "
                     f"(runner pid {os.getpid()})")
            self.lock = hostguard.HostLock()
            self.lock.acquire(self.spec["run_id"], expected_run_s(self.spec), self.log, self.lock_wait_s)
            pidfile = hostguard.PidFile()
            hostguard.clean_stale(self.log, pidfile)
            pidfile.start(self.spec["run_id"], root_links(self.spec))
            PIDFILE = pidfile
            self.setup()
            self.measure()
            ok = True
        except hostguard.Stopped as e:
            failure = f"STOPPED ({e}): tearing down; no DONE"
        except Exception as e:  # noqa: BLE001 - every failure is logged, then torn down
            failure = f"ERROR {type(e).__name__}: {e}"
        finally:
            # from here on a stop request is only recorded (a log line that finds stdout gone makes one),
            # so nothing can cut the tear-down short
            STOPPER.tearing_down = True
            if failure:
                self.log(failure)
            self.teardown()
            halt.set()
        try:
            if ok:
                self.finish()
        finally:
            if PIDFILE is not None:
                PIDFILE.clear()
                PIDFILE = None
            if self.lock:
                self.lock.release()
        if STOPPER.reason and not ok:
            self.drop_bulk()
        return 0 if ok else 1

    def drop_bulk(self):
        """A run stopped because its controller is gone is never copied back: its captures and favor trace
        (nearly all its disk) go now, its logs stay for whoever looks on the host."""
        import shutil
        shutil.rmtree(self.dir / "pcap", ignore_errors=True)
        (self.dir / "qdisc" / "favor-trace.csv").unlink(missing_ok=True)

    # -- set-up
    def setup(self):
        from topologies import dumbbell
        s = self.spec
        kind = s["topology"]["kind"]
        topomod = topology_module(kind)
        workload_cmd("client", s)     # a missing workload binary fails the run before anything is set up
        for qdisc in {s["aqm"]["forward"]["kind"], s["aqm"]["reverse"]["kind"]} - {"p4"} - BUILTIN_QDISCS:
            mod = f"sch_{qdisc}"
            p = out(["modprobe", mod])   # built-in or already loaded is fine; tc says if it is missing
            if p.strip():
                self.log(f"modprobe {mod}: {p.strip()}")
            if qdisc in dumbbell.FAVORLAB_QDISCS:
                check_loaded_module(mod)
        if kind == "dumbbell":
            topo = dict(s["topology"], kind="dumbbell")
            self.hostsj = dumbbell.hosts_json(topo)
            (self.dir / "hosts.json").write_text(json.dumps(self.hostsj, indent=2) + "\n")
            with STOPPER.deferred():   # a topology half built is one no net.stop() would find
                self.net = dumbbell.build(topo, s["aqm"], log=self.log, p4_log=self.dir / "log" / "simple_switch.log")
                self.record_shells()
            if s.get("flood"):
                for node, cmds in dumbbell.spoof_route_cmds(s["flood"]["spoof"], s["flood"]["attacker"]).items():
                    for c in cmds:
                        dumbbell.run_in(self.net.get(node), c)
        else:
            self.hostsj = topomod.hosts_json(s["topology"])
            (self.dir / "hosts.json").write_text(json.dumps(self.hostsj, indent=2) + "\n")
            with STOPPER.deferred():
                self.net = topomod.build(s["topology"], s["aqm"], log=self.log)
                self.record_shells()
        if kind == "dumbbell" and dumbbell.is_p4(s["aqm"]):
            self.p4 = self.net.get(dumbbell.P4_SWITCH).p4
            self.manifest["p4"] = p4_manifest(self.p4, s["topology"]["bottleneck_mbps"])
            self.log(f"P4 bottleneck: {self.manifest['p4']}")
        self.checks.update(apply_tcp(self.net, s["tcp"], self.hostsj["hosts"], self.log))
        if s["tcp"].get("initial_rto_ms"):
            from testbed.runner.bpf import InitialRto
            self.cgroup = RunCgroup(f"{hostguard.CGROUP_PREFIX}{os.getpid()}")
            self.rto = InitialRto(s["tcp"]["initial_rto_ms"], cgroup=str(self.cgroup.path)).attach()
            self.log(f"initial RTO {self.rto.ms} ms = {self.rto.jiffies} jiffies (HZ {self.rto.hz}) attached "
                     f"to {self.cgroup.path}, where the flow clients and servers run")

    def record_shells(self):
        """Mininet's node shells (each holds its node's network namespace) into the pidfile, so a run that
        dies without its tear-down leaves the next one their PIDs."""
        if PIDFILE is not None:
            for node in [*self.net.hosts, *self.net.switches]:
                if getattr(node, "pid", None):
                    PIDFILE.add(node.pid, f"{MININET_SHELL}{node.name}")

    # -- the measured part
    def measure(self):
        s, net = self.spec, self.net
        fid = s.get("fidelity", {})
        chain = self.is_chain()
        self.checks.update(probe_rtts(net, self.hostsj, fid.get("rtt_tolerance_ms", specmod.FIDELITY_DEFAULTS["rtt_tolerance_ms"]),
                                      rtt_probe_paths(self.hostsj)))
        self.checks.update(probe_rate(net, self.hostsj, s["topology"]["bottleneck_mbps"], self.log,
                                      fid.get("rate_min_share", specmod.FIDELITY_DEFAULTS["rate_min_share"]), *rate_probe_pair(self.hostsj)))
        self.log("probes: " + json.dumps({k: v["measured"] for k, v in self.checks.items()}))
        for d in ("qdisc", "nstat", "pcap", "flows"):
            (self.dir / d).mkdir(exist_ok=True)
        self.kernel_log = KernelLog()
        self.qdisc_before = qdisc_stats(net, self.routers())
        self.write_json("qdisc/before.json", self.qdisc_before)
        if self.p4:
            self.write_json("qdisc/p4-before.json", p4_state(self.p4))
        self.nstat_before = nstat(net, self.hostsj["hosts"])
        self.start_captures()
        self.start_trace()
        self.start_servers()
        time.sleep(1.0)
        cpu = CpuSampler()
        # Every client is a fresh Python process per host; in a TCG guest their start-up took longer than
        # a fixed 3 s lead, so the first flows of the schedule started ~4.5 s late (lateness check failed).
        # Time one start-up now and give all clients that long per host and vCPU, 1.5 times over.
        t_imp = time.time()
        client_hosts = self.client_hosts()
        popen(self.client_cmd() + ["--help"], net.get(client_hosts[0]), cwd=REPO,
              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).wait(timeout=120)
        startup = time.time() - t_imp
        lead = max(3.0, 2.0 + 1.5 * startup * len(client_hosts) / (os.cpu_count() or 1))
        if chain:   # the cross traffic starts warmup_cross_s before t0, its iperf3 servers before that
            # (0.1 s per cross flow: one server and one client to start in a host's namespace)
            n_cross = len(self.hostsj.get("cross_flows", []))
            lead = max(lead, float(s["workload"]["warmup_cross_s"]) + 3.0 + 0.1 * n_cross)
        self.manifest["client_start_lead_s"] = round(lead, 2)
        self.log(f"client start-up {startup:.2f} s: t0 in {lead:.1f} s")
        t0 = time.time() + lead
        stop_at = t0 + s["duration_s"] + s["drain_s"]
        self.manifest["t0_unix"] = t0
        clients = {}
        if chain:
            self.start_cross(t0)
            clients[self.hostsj["reference"]["src"]] = self.start_reference(t0, stop_at)
        for h in ([] if chain else self.hostsj["hosts"]):
            clients[h] = popen(["nice", "-n", str(CLIENT_NICE)] + workload_cmd("client", s) + ["--schedule",
                                str(self.dir / s.get("schedule", "schedule.csv")), "--host", h,
                                "--hosts", str(self.dir / "hosts.json"), "--t0", f"{t0:.6f}",
                                "--log", str(self.dir / "flows" / f"client-{h}.csv"),
                                "--stop-at", f"{stop_at:.6f}"], net.get(h), cwd=REPO, cgroup=self.cgroup_path(),
                               stdout=(self.dir / "log" / f"client-{h}.out").open("w"), stderr=subprocess.STDOUT)
            self.procs[f"client-{h}"] = clients[h]
        self.log(f"clients started, t0 {t0:.3f}, stop at {stop_at:.3f}")
        if s.get("workload", {}).get("kind") == "persistent":
            self.start_persistent(t0)
        if s.get("flood"):
            self.start_flood(t0)
        # CPU samples from 3 s before t0 as with the former fixed lead: a longer idle lead must not dilute them
        time.sleep(max(0.0, t0 - 3.0 - time.time()))
        cpu.start()
        for h, p in clients.items():
            try:
                rc = p.wait(timeout=max(5.0, stop_at - time.time() + 30))
            except subprocess.TimeoutExpired:
                rc = stop(p)
                self.reasons.append(f"client on {h} did not end by stop-at + 30 s")
            if rc:
                self.reasons.append(f"client on {h} exited with {rc} (see log/client-{h}.out)")
        if chain:
            self.install_reference_schedule()
        if self.persistent is not None:
            self.stop_persistent(stop_at)
        if "flood" in self.procs:
            self.stop_flood(t0)
        if self.cross is not None:
            self.stop_cross(stop_at)
        cpu.halt.set()
        cpu.join()
        self.checks.update(cpu.check())
        merge_ticks(cpu.procs1, proc_ticks())
        self.write_json("cpu.json", dict(cpu_breakdown(cpu.modes0, cpu_modes(), cpu.procs0, cpu.procs1),
                                         mem_total_mib=cpu.mem_total, mem_peak_used_mib=cpu.mem_peak))
        time.sleep(1.0)
        self.stop_servers()
        self.stop_trace()
        self.stop_captures()
        qdisc_after = qdisc_stats(net, self.routers())
        self.write_json("qdisc/after.json", qdisc_after)
        self.checks.update(favor_counts_check(qdisc_after))
        bneck = self.hostsj["bottleneck"]      # what start_trace traced (no trace file: no check)
        self.checks.update(trace_counts_check(self.dir / "qdisc" / "favor-trace.csv", self.qdisc_before, qdisc_after,
                                              bneck["node"], bneck["intf"], self.qdisc_at_trace_stop))
        self.checks.update(self.kernel_log.check())
        if self.p4:
            after_p4 = p4_state(self.p4)
            self.write_json("qdisc/p4-after.json", after_p4)
            self.checks.update(p4_drained_check(after_p4))
        after = nstat(net, self.hostsj["hosts"])
        for h in self.hostsj["hosts"]:
            self.write_json(f"nstat/{h}.json", {"before": self.nstat_before[h], "after": after[h]})
        self.workload_checks()

    def is_chain(self) -> bool:
        return self.spec["topology"]["kind"] == "chain"

    def routers(self):
        return self.hostsj.get("routers", ("rl", "rr"))

    def client_hosts(self) -> list[str]:
        """Hosts that run a flow client: every dumbbell host (each replays its schedule rows); the chain's
        reference user's sender only."""
        return [self.hostsj["reference"]["src"]] if self.is_chain() else list(self.hostsj["hosts"])

    def server_hosts(self) -> list[str]:
        return [self.hostsj["reference"]["dst"]] if self.is_chain() else list(self.hostsj["hosts"])

    def client_cmd(self) -> list[str]:
        """The chain's reference user is Python only (workloads.reference); the dumbbell's client is the
        spec's workload_impl."""
        return [sys.executable, "-m", "workloads.reference"] if self.is_chain() else workload_cmd("client", self.spec)

    def start_captures(self):
        snap = str(self.spec["capture"]["snaplen"])
        points = capture_points(self.hostsj)
        flt = capture_filter(self.spec)
        for name, (node, intf) in points.items():
            self.procs[f"pcap-{name}"] = popen(
                ["tcpdump", "-i", intf, "-s", snap, "-B", "16384", "-n", "-w",
                 str(self.dir / "pcap" / f"{name}.pcap"), flt], self.net.get(node),
                stdout=subprocess.DEVNULL, stderr=(self.dir / "log" / f"tcpdump-{name}.err").open("w"))
        time.sleep(1.0)
        self.log(f"captures started: {', '.join(points)}")

    def stop_captures(self):
        drops = {}
        for k in [k for k in self.procs if k.startswith("pcap-")]:
            stop(self.procs.pop(k), signal.SIGINT)
            err = (self.dir / "log" / f"tcpdump-{k[5:]}.err").read_text()
            m = re.search(r"(\d+) packets? dropped by kernel", err)
            drops[k[5:]] = int(m.group(1)) if m else None
        bad = {k: v for k, v in drops.items() if v}
        self.checks["capture_drops"] = {"configured": 0, "measured": drops, "ok": not bad}
        # Foreign packets where the bottleneck queue is captured shared it with the experiment: the run is
        # invalid. Elsewhere (a sender's link) they are listed as a warning: they did not reach the queue.
        own = own_addresses(self.hostsj)
        foreign = {name: foreign_packets(self.dir / "pcap" / f"{name}.pcap", own)
                   for name in capture_points(self.hostsj) if (self.dir / "pcap" / f"{name}.pcap").exists()}
        for where, names in (("bottleneck", [k for k in foreign if k.startswith("bneck")]),
                             ("elsewhere", [k for k in foreign if not k.startswith("bneck")])):
            self.checks[f"foreign_traffic_{where}"] = {
                "configured": f"only packets between the experiment's addresses ({', '.join(own)})",
                "measured": {k: {"packets": foreign[k][0], "first": foreign[k][1]} for k in names if foreign[k][0]} or 0,
                "ok": not any(foreign[k][0] for k in names),
                **({} if where == "bottleneck" else {"severity": "warning"})}

    def start_trace(self):
        fwd = self.spec["aqm"]["forward"]["kind"]
        if fwd != "favor" or not self.spec.get("trace_favor"):
            return
        if not FAVOR_TRACE.is_file():
            self.checks["favor_trace"] = {"configured": True, "measured": f"not traced: {FAVOR_TRACE} missing",
                                          "ok": True}
            self.log(f"favor trace: {FAVOR_TRACE} missing, not traced")
            return
        if not any(h["aqm"] for h in self.hostsj.get("hops", [{"aqm": True}])):
            return     # a chain with aqm_hops [] has no favor queue to trace
        bneck = self.hostsj["bottleneck"]    # the dumbbell's rl-eth1; the chain's first AQM hop (r0-next)
        self.procs["trace"] = popen([sys.executable, str(FAVOR_TRACE), "--out",
                                     str(self.dir / "qdisc" / "favor-trace.csv"), "--dev", bneck["intf"]],
                                    self.net.get(bneck["node"]), stdout=(self.dir / "log" / "favor-trace.out").open("w"),
                                    stderr=subprocess.STDOUT)
        self.checks["favor_trace"] = {"configured": True, "measured": "traced", "ok": True}

    def cgroup_path(self) -> Path | None:
        return self.cgroup.path if self.cgroup else None

    def stop_trace(self):
        if "trace" not in self.procs:
            return
        # the queue's counters as the recorder stops: its trace must hold every decision up to here
        # (trace_counts_check); what passes later (a lingering FIN while the trace is parsed) only after.json has
        self.qdisc_at_trace_stop = qdisc_stats(self.net, self.routers())
        self.write_json("qdisc/trace-stop.json", self.qdisc_at_trace_stop)
        # the recorder parses the whole trace after the signal (outside the measured window): give it time
        stop(self.procs.pop("trace"), signal.SIGINT, wait=TRACE_PARSE_WAIT_S)
        self.checks["favor_trace"] = trace_check(self.dir / "qdisc" / "favor-trace.csv")

    def start_servers(self):
        for h in self.server_hosts():
            self.procs[f"server-{h}"] = popen(
                workload_cmd("server", self.spec) + ["--host", h, "--hosts", str(self.dir / "hosts.json"),
                 "--port", str(self.hostsj["port"]), "--log", str(self.dir / "flows" / f"server-{h}.csv")], self.net.get(h),
                cwd=REPO, cgroup=self.cgroup_path(),
                stdout=(self.dir / "log" / f"server-{h}.out").open("w"), stderr=subprocess.STDOUT)
        self.log("servers started")

    def start_flood(self, t0: float):
        """The synflood axis' attacker (workloads.synflood: favorflow synflood) in its host's namespace, from t0
        for duration_s, at the rate run.json gives, toward the target's flow server port (hosts.json's port). Outside the run's
        cgroup: its raw socket makes no TCP connection for the initial-RTO program to touch."""
        from workloads import synflood
        f, s = self.spec["flood"], self.spec
        target, port = self.hostsj["hosts"][f["target"]]["ip"], self.hostsj["port"]
        cmd = synflood.synflood_cmd(str(FAVORFLOW), target, port, f["pps"], s["duration_s"],
                                    str(self.dir / "flood.json"), seed=int(s.get("seed") or 1), start_at=t0,
                                    spoof=f["spoof"])
        self.procs["flood"] = popen(cmd, self.net.get(f["attacker"]), cwd=REPO,
                                    stdout=(self.dir / "log" / "flood.out").open("w"), stderr=subprocess.STDOUT)
        self.log(f"SYN flood: {f['rate_x']:g}x the bottleneck, {f['pps']:.0f} SYNs/s from {f['attacker']} "
                 f"(sources {f['spoof']}) to {f['target']}:{port}, from t0 for {s['duration_s']:g} s")

    def stop_flood(self, t0: float):
        """Wait for the attacker (it ends with the traffic); its rate is a fidelity check: a run whose flood
        fell short of its rate (a guest short of CPU) is not the run its config asked for."""
        p = self.procs.pop("flood")
        try:
            p.wait(timeout=max(5.0, t0 + self.spec["duration_s"] + 30 - time.time()))
        except subprocess.TimeoutExpired:
            stop(p)
        self.checks.update(flood_check(self.dir / "flood.json", self.spec["flood"]["pps"]))

    def start_persistent(self, t0: float):
        """Section 5.3's long-lived flows (workloads.persistent: iperf3 groups over the nine paths), from
        t0 + start_s to the end of the traffic. Each client waits in a shell of its sender's namespace, so
        it starts on time without a thread of the runner having to wake then; the flows are the run's
        cgroup's, so they have the same TCP (initial RTO) as the short flows."""
        from workloads import persistent
        w = self.spec["workload"]
        ips = {h: v["ip"] for h, v in self.hostsj["hosts"].items()}
        groups = persistent.persistent_plan(ips, self.spec["duration_s"], int(w["flows"]), float(w["start_s"]))
        d = self.dir / "persistent"
        d.mkdir(exist_ok=True)
        self.write_json("persistent/plan.json", {"flows": w["flows"], "start_s": w["start_s"], "t0_unix": t0,
                                                 "groups": [vars(g) for g in groups]})
        self.persistent = groups
        self.start_iperf3_groups(groups, t0, d, "iperf3")
        self.log(f"persistent flows: {w['flows']} in {len(groups)} iperf3 groups, from t0 + {w['start_s']:g} s")

    def stop_persistent(self, stop_at: float):
        """Wait for the iperf3 clients (they end with the traffic), then check every stream reported."""
        self.checks["persistent_flows"] = self.stop_iperf3_groups(
            self.persistent, stop_at, self.dir / "persistent", "iperf3", int(self.spec["workload"]["flows"]))

    def start_iperf3_groups(self, groups: list, origin: float, out: Path, tag: str) -> None:
        """iperf3 groups (workloads.persistent.persistent_plan) in the run's cgroup: every server on its
        receiver now, then every client at origin + its start_s, waiting in a shell of its sender's
        namespace (so no thread of the runner has to wake on time); each client's -J report goes to
        out/iperf3-<src>-<dst>.json. tag names their entries in self.procs."""
        for g in groups:
            self.procs[f"{tag}s-{g.dst}-{g.port}"] = popen(
                g.server, self.net.get(g.dst), cgroup=self.cgroup_path(),
                stdout=(self.dir / "log" / f"iperf3-server-{g.dst}-{g.port}.json").open("w"), stderr=subprocess.STDOUT)
        time.sleep(0.5)
        for g in groups:
            wait = max(0.0, origin + g.start_s - time.time())
            self.procs[f"{tag}c-{g.src}-{g.dst}"] = popen(
                ["sh", "-c", f'sleep {wait:.3f} && exec "$@"', "sh", *g.client], self.net.get(g.src),
                cgroup=self.cgroup_path(), stdout=(out / f"iperf3-{g.src}-{g.dst}.json").open("w"),
                stderr=(self.dir / "log" / f"iperf3-{g.src}-{g.dst}.err").open("w"))

    def stop_iperf3_groups(self, groups: list, stop_at: float, out: Path, tag: str, n: int) -> dict:
        """Wait for the groups' clients (they end with the traffic), stop their servers, and return the
        check: every one of the n streams reported some bytes."""
        from workloads import persistent
        streams, problems = 0, []
        for g in groups:
            p = self.procs.pop(f"{tag}c-{g.src}-{g.dst}")
            try:
                rc = p.wait(timeout=max(5.0, stop_at - time.time() + 30))
            except subprocess.TimeoutExpired:
                rc = stop(p)
                problems.append(f"{g.src}-{g.dst} did not end")
            try:
                got = persistent.parse_iperf3_json((out / f"iperf3-{g.src}-{g.dst}.json").read_text())
                streams += sum(1 for st in got["streams"] if st["bytes"] > 0)
            except (OSError, persistent.Iperf3Error) as e:
                problems.append(f"{g.src}-{g.dst}: {e} (exit {rc})")
        for k in [k for k in self.procs if k.startswith(f"{tag}s-")]:
            stop(self.procs.pop(k))
        return {"configured": n, "measured": streams if not problems else f"{streams} streams; " + "; ".join(problems),
                "ok": streams == n}

    def start_cross(self, t0: float):
        """The chain's cross traffic: one iperf3 TCP stream per cross flow (hosts.json cross_flows: x<k>s<i>
        -> x<k>r, one hop each), from warmup_cross_s before t0 to the end of the traffic, so the hops'
        queues are loaded when the reference user begins. As start_persistent: one iperf3 server per flow on
        its receiver (ports 5201..), each client waits in a shell of its sender's namespace, all in the
        run's cgroup."""
        from workloads import persistent
        s = self.spec
        w = float(s["workload"]["warmup_cross_s"])
        cross = self.hostsj.get("cross_flows", [])
        d = self.dir / "cross"
        d.mkdir(exist_ok=True)
        start = t0 - w
        total = w + s["duration_s"] + s["drain_s"]
        ips = {h: v["ip"] for h, v in self.hostsj["hosts"].items()}
        groups = persistent.persistent_plan(ips, total, len(cross), 0.0,
                                            pairs=[(c["src"], c["dst"]) for c in cross]) if cross else []
        self.write_json("cross/plan.json", {"flows": len(cross), "warmup_cross_s": w, "t0_unix": t0,
                                            "start_unix": start, "groups": [vars(g) for g in groups]})
        self.cross = groups
        self.start_iperf3_groups(groups, start, d, "cross")
        self.log(f"cross traffic: {len(groups)} iperf3 flows from t0 - {w:g} s to the end of the traffic")

    def stop_cross(self, stop_at: float):
        """Wait for the cross flows' iperf3 clients (they end with the traffic); check every one reported
        (cross_flows, as persistent_flows)."""
        self.checks["cross_flows"] = self.stop_iperf3_groups(
            self.cross, stop_at, self.dir / "cross", "cross", len(self.hostsj.get("cross_flows", [])))

    def start_reference(self, t0: float, stop_at: float) -> subprocess.Popen:
        """The chain's closed-loop reference user on its sender (workloads.reference: the run's seed, the
        same for every AQM; the spec's sizes), from t0 to stop_at, logging flows/client-<src>.csv as a
        client does; the flows it started go to flows/reference-schedule.csv (install_reference_schedule)."""
        s, ref = self.spec, self.hostsj["reference"]
        mss = int(s["topology"].get("mtu", 1500)) - 40
        h = ref["src"]
        p = popen(["nice", "-n", str(CLIENT_NICE), *self.client_cmd(), "--host", h, "--dst", ref["dst"],
                   "--hosts", str(self.dir / "hosts.json"), "--t0", f"{t0:.6f}", "--stop-at", f"{stop_at:.6f}",
                   "--seed", str(s["seed"]), "--sizes", sizes_arg(s["sizes"]), "--mss", str(mss),
                   "--log", str(self.dir / "flows" / f"client-{h}.csv"),
                   "--schedule-out", str(self.dir / "flows" / "reference-schedule.csv")],
                  self.net.get(h), cwd=REPO, cgroup=self.cgroup_path(),
                  stdout=(self.dir / "log" / f"client-{h}.out").open("w"), stderr=subprocess.STDOUT)
        self.procs[f"client-{h}"] = p
        return p

    def install_reference_schedule(self):
        """The chain has no open-loop schedule: the controller's schedule.csv is a header (workloads.schedule
        --topology chain). The flows the reference user started become the run's schedule.csv, so extraction
        joins them by flow id like any schedule's (docs/contracts.md, "Run directory")."""
        src = self.dir / "flows" / "reference-schedule.csv"
        if src.is_file():
            os.replace(src, self.dir / self.spec.get("schedule", "schedule.csv"))
            self.log("schedule.csv: the reference user's flows")
        else:
            self.reasons.append("the reference user wrote no schedule (flows/reference-schedule.csv): see "
                                f"log/client-{self.hostsj['reference']['src']}.out")

    def stop_servers(self):
        for k in [k for k in self.procs if k.startswith("server-")]:
            stop(self.procs.pop(k))

    def workload_checks(self):
        if self.is_chain():
            # no open-loop schedule: the reference user's own fidelity check replaces workloads.checks
            from workloads import reference
            log = self.dir / "flows" / f"client-{self.hostsj['reference']['src']}.csv"
            try:
                self.checks.update(reference.check_log(log))
            except Exception as e:  # noqa: BLE001 - a missing or broken log makes the run invalid
                self.checks["reference_loop"] = {"configured": "closed loop", "measured": f"check failed: {e}",
                                                 "ok": False}
            return
        try:
            from workloads import checks
        except ImportError as e:
            self.checks["offered_load"] = {"configured": self.spec.get("load"),
                                           "measured": f"not checked: {e}", "ok": True}
            return
        if not hasattr(checks, "check_run"):
            self.checks["offered_load"] = {"configured": self.spec.get("load"),
                                           "measured": "not checked: workloads.checks has no check_run(run_dir)",
                                           "ok": True}
            return
        try:
            res = checks.check_run(self.dir)
            self.checks.update(res)
        except Exception as e:  # noqa: BLE001 - a failed check makes the run invalid, not the runner crash
            self.checks["offered_load"] = {"configured": self.spec.get("load"),
                                           "measured": f"check failed: {e}", "ok": False}

    # -- tear-down and the last files
    def teardown(self):
        """Every step runs whatever the ones before it did: each failure is logged and the next step goes
        on, so the network is always stopped. Stop requests arriving now are only recorded (STOPPER)."""
        STOPPER.tearing_down = True
        for what, step in (("stop processes", self.stop_procs), ("stop leftover processes", self.stop_leftovers),
                           ("detach the initial RTO program", self.detach_rto),
                           ("remove the run cgroup", self.remove_cgroup), ("stop the topology", self.stop_net),
                           ("stop leftover node shells", lambda: self.stop_leftovers(shells=True)),
                           ("remove leftover interfaces", self.remove_leftover_links)):
            try:
                step()
            except BaseException as e:  # noqa: BLE001 - the next step must run (a signal included)
                self.log(f"teardown: {what} failed: {type(e).__name__}: {e}")

    def stop_procs(self):
        for name in list(self.procs):
            try:
                stop(self.procs.pop(name), signal.SIGINT if name.startswith(("pcap", "trace")) else signal.SIGTERM)
            except Exception as e:  # noqa: BLE001 - one process that will not stop must not keep the others
                self.log(f"teardown: stopping {name} failed: {type(e).__name__}: {e}")

    def detach_rto(self):
        if self.rto:
            rto, self.rto = self.rto, None
            rto.detach()
            self.log("initial RTO program detached")

    def remove_cgroup(self):
        """Whatever is still in the run's cgroup is the run's own: killed (cgroup.kill), then the cgroup goes."""
        if self.cgroup:
            cg, self.cgroup = self.cgroup, None
            hostguard.remove_cgroup(cg.path, self.log)

    def stop_net(self):
        if self.net:
            net, self.net = self.net, None
            net.stop()
            self.log("topology down")

    def stop_leftovers(self, shells: bool = False):
        """Whatever this run started and is still running (a process started but not yet in self.procs when
        the run stopped, a child that left its group): by the pidfile. Mininet's node shells only with
        `shells`, after the topology's own stop (which needs them)."""
        if PIDFILE is not None:
            procs = [p for p in PIDFILE.read()[1] if shells or not str(p.get("what", "")).startswith(MININET_SHELL)]
            left = hostguard.stop_recorded(procs, self.log)
            if left:
                self.log(f"teardown: stopped leftover processes {', '.join(left)}")

    def remove_leftover_links(self):
        """Our interfaces still there after the topology's stop (a stop cut short): removed by name."""
        if PIDFILE is not None:
            gone = hostguard.remove_links(hostguard.select_stale_links(hostguard.ip_links(), root_links(self.spec)),
                                          self.log)
            if gone:
                self.log(f"teardown: removed leftover interfaces {', '.join(gone)}")

    def finish(self):
        warnings = []
        for k, v in self.checks.items():
            if not v.get("ok"):
                # a failed check of severity "warning" is reported but leaves the run valid
                (warnings if v.get("severity") == "warning" else self.reasons).append(
                    f"{k}: configured {v.get('configured')}, measured {v.get('measured')}")
        self.write_json("fidelity.json", {"valid": not self.reasons, "reasons": self.reasons,
                                          "warnings": warnings, "checks": self.checks})
        self.manifest.update(manifest(self.spec, self.dir))
        self.manifest["end_utc"] = utc()
        self.write_json("manifest.json", self.manifest)
        self.log(f"run done, valid={not self.reasons}")
        (self.dir / "DONE").write_text(utc() + "\n")

    def write_json(self, rel: str, obj) -> None:
        p = self.dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(obj, indent=2) + "\n")


MININET_SHELL = "mininet:"    # a node shell's entry in the pidfile (Mininet names its shells so too)


def root_links(spec: dict) -> list[str]:
    """The root-namespace interfaces the spec's topology makes (its bridges and their ports towards the
    hosts and routers, the P4 switch's two ports), recorded in the pidfile for the next run's clean-up."""
    topo = spec.get("topology", {})
    if topo.get("kind") == "chain":
        from topologies import chain
        t = chain.validate(topo)
        return [*chain.names(t)["bridges"], *(n for n in chain.interfaces(t) if re.fullmatch(r"s\d+-.+", n))]
    from topologies import dumbbell
    links = ["sL", "sR", *(f"sL-{h}" for h in (*dumbbell.LEFT, "rl")), *(f"sR-{h}" for h in (*dumbbell.RIGHT, "rr"))]
    if dumbbell.is_p4(spec.get("aqm", {})):
        links += [f"{dumbbell.P4_SWITCH}-eth1", f"{dumbbell.P4_SWITCH}-eth2"]
    return links


def expected_run_s(spec: dict) -> float:
    """How long the run should hold the host: its traffic, drain and cross-traffic warm-up, plus 10 minutes
    for the topology, the probes and the checks (a waiting run reads it from the lock)."""
    return (float(spec.get("duration_s") or 0) + float(spec.get("drain_s") or 0)
            + float((spec.get("workload") or {}).get("warmup_cross_s") or 0) + 600)


def _first_line(txt: str) -> str:
    return txt.strip().splitlines()[0] if txt.strip() else ""


def accel(virt: str) -> str:
    """What the testbed host runs on, from systemd-detect-virt: under QEMU without KVM (TCG) a run is
    several times slower than under KVM or on bare metal, which the report must show."""
    return {"kvm": "KVM", "qemu": "TCG (QEMU emulation, no KVM)", "none": "bare metal"}.get(virt, virt or "unknown")


def manifest(spec: dict, run_dir: Path) -> dict:
    m = {"kernel": os.uname().release, "hostname": platform.node(), "python": sys.version.split()[0],
         "tc": _first_line(out(["tc", "-V"])), "tcpdump": _first_line(out(["tcpdump", "--version"])),
         "iperf3": _first_line(out(["iperf3", "--version"])),
         "accel": accel(_first_line(out(["systemd-detect-virt"]))),
         "seeds": {"seed": spec.get("seed"), "replication": spec.get("replication")},
         "sha256": {"run.json": sha256(run_dir / "run.json"),
                    "schedule.csv": sha256(run_dir / spec.get("schedule", "schedule.csv"))}}
    try:
        import mininet.net
        m["mininet"] = getattr(mininet.net, "VERSION", "unknown")
    except ImportError:
        m["mininet"] = None
    from topologies.dumbbell import FAVORLAB_QDISCS
    # favorlab's own qdisc modules (one DKMS package, qdisc/), each as loaded: which code made the result
    for mod in (f"sch_{q}" for q in FAVORLAB_QDISCS):
        m[mod] = loaded_module(mod)
    # one string for tables (analysis/report.py reads module_version), sch_favor first
    m["module_version"] = "; ".join(f"sch_{q} {m[f'sch_{q}']['version']} ({m[f'sch_{q}']['srcversion']})"
                                    for q in FAVORLAB_QDISCS if m[f"sch_{q}"])
    return m
