"""The testbed host's state for a run: the qdisc modules loaded (and the loaded build the installed one),
the TCP profile in every host's namespace, the initial-RTO program in a cgroup of the run's own, the
queues' and TCP stacks' counters, and the kernel's log over the run."""
from __future__ import annotations

import errno
import json
import os
import re
import shlex
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from testbed.runner import hostguard
from testbed.runner.processes import out, proc_net


# pfifo, bfifo and pfifo_head_drop live in sch_fifo.c and pfifo_fast in sch_generic.c, both always built
# in: there is no sch_pfifo module, and asking modprobe for one only puts a FATAL line in the run's log
BUILTIN_QDISCS = frozenset({"pfifo", "bfifo", "pfifo_head_drop", "pfifo_fast"})


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


def load_qdisc_modules(ctx) -> None:
    """modprobe the modules of the spec's qdiscs; the project's own must be the build installed on disk."""
    from topologies import tc
    s = ctx.spec
    for qdisc in {s["aqm"]["forward"]["kind"], s["aqm"]["reverse"]["kind"]} - {"p4"} - BUILTIN_QDISCS:
        mod = f"sch_{qdisc}"
        p = out(["modprobe", mod])   # built-in or already loaded is fine; tc says if it is missing
        if p.strip():
            ctx.log(f"modprobe {mod}: {p.strip()}")
        if qdisc in tc.FAVORLAB_QDISCS:
            check_loaded_module(mod)


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


def readback_keys(tcp: dict) -> list[str]:
    """The sysctls read back after the profile is set, in the order tcp_host_script prints them."""
    return [*tcp_sysctls(tcp), "net.ipv4.tcp_available_congestion_control"]


def proc_sys(key: str) -> str:
    """The /proc/sys file of a sysctl key (net.ipv4.tcp_sack -> /proc/sys/net/ipv4/tcp_sack)."""
    return "/proc/sys/" + key.replace(".", "/")


def tcp_host_script(tcp: dict, info: dict, first: str = "") -> str:
    """One host's TCP profile as one shell script: the sysctls written, the TCP metrics the host cached
    flushed (a kept network's last run leaves them, a fresh network has none), the routes with the initial
    window changed, and the values read back by one cat, in the order readback_keys lists them: the shell's
    echo writes /proc/sys as sysctl(8) would and one `ip -batch` flushes and changes both routes, since each
    process started in a host costs about 0.1 s of a TCG guest's CPU. The first step that fails ends the
    script (set -e). `first` runs before it, its output to stderr (stdout is the values)."""
    intf, subnet = info["intf"], info["ip"].rsplit(".", 1)[0] + ".0/24"
    lines = [["tcp_metrics", "flush", "all"],
             ["route", "change", subnet, "dev", intf, "proto", "kernel", "scope", "link", "src", info["ip"],
              *route_opts(tcp)],
             ["route", "change", "default", "via", info["gw"], "dev", intf, *route_opts(tcp)]]
    return "\n".join([
        *([f"{{\n{first}\n}} >&2"] if first else []),
        "set -e",
        *(f"echo {shlex.quote(str(v))} > {proc_sys(k)}" for k, v in tcp_sysctls(tcp).items()),
        "ip -batch - <<'EOF'", *(shlex.join(r) for r in lines), "EOF",
        # cat, not the shell's read: read takes a byte at a time, and a sysctl read from an offset past 0 is empty
        "cat " + " ".join(proc_sys(k) for k in readback_keys(tcp))])


def apply_tcp(net, tcp: dict, hosts: dict, log, first: dict | None = None) -> dict:
    """Set the profile in every host's namespace and read it back (as Flent's metadata does): returns the
    tcp_applied check, which fails when a host's value is not what run.json asked (a congestion control
    the kernel could not load, say). The hosts are set at once: they are independent namespaces. `first`:
    a shell script per host run before the profile in the same process (a kept network's reset, kept.adopt)."""
    keys = readback_keys(tcp)

    def one(h):
        script = tcp_host_script(tcp, hosts[h], (first or {}).get(h, ""))
        return h, dict(zip(keys, out(["sh", "-c", script], net.get(h), check=True).splitlines()))
    with ThreadPoolExecutor(max_workers=min(8, len(hosts)) or 1) as pool:
        applied = dict(pool.map(one, hosts))
    wrong = [f"{h} {k}={got.get(k)!r}" for h, got in applied.items() for k, v in tcp_sysctls(tcp).items()
             if str(got.get(k, "")).strip() != str(v)]
    log(f"tcp profile {tcp['profile']}: {tcp_sysctls(tcp)} routes {' '.join(route_opts(tcp))}")
    return {"tcp_applied": {"configured": tcp_sysctls(tcp), "measured": applied if not wrong else "; ".join(wrong),
                            "ok": not wrong}}


class RunCgroup:
    """A cgroup v2 directory of this run's own: the initial-RTO program is attached here, not to the root
    cgroup, so on a real host it changes the workload's sockets and no one else's. hostguard.remove_cgroup
    removes it (the tear-down, or the next run's clean-up after a dead run), killing what is still in it."""

    def __init__(self, name: str):
        from testbed.runner.bpf import cgroup2_root
        self.path = Path(cgroup2_root()) / name
        self.path.mkdir(exist_ok=True)


def attach_initial_rto(ctx) -> None:
    """The spec's initial RTO (tcp.initial_rto_ms), when it names one: bpf.InitialRto on the run's cgroup."""
    if ctx.spec["tcp"].get("initial_rto_ms"):
        from testbed.runner.bpf import InitialRto
        ctx.cgroup = RunCgroup(f"{hostguard.CGROUP_PREFIX}{os.getpid()}")
        ctx.rto = InitialRto(ctx.spec["tcp"]["initial_rto_ms"], cgroup=str(ctx.cgroup.path)).attach()
        ctx.log(f"initial RTO {ctx.rto.ms} ms = {ctx.rto.jiffies} jiffies (HZ {ctx.rto.hz}) attached "
                f"to {ctx.cgroup.path}, where the flow clients and servers run")


def detach_initial_rto(ctx) -> None:
    if ctx.rto:
        rto, ctx.rto = ctx.rto, None
        rto.detach()
        ctx.log("initial RTO program detached")


def remove_cgroup(ctx) -> None:
    """Whatever is still in the run's cgroup is the run's own: killed (cgroup.kill), then the cgroup goes."""
    if ctx.cgroup:
        cg, ctx.cgroup = ctx.cgroup, None
        hostguard.remove_cgroup(cg.path, ctx.log)


QDISC_STATS = (["tc", "-s", "-j", "qdisc", "show"], {"TC_LIB_DIR": "/usr/local/lib/favorlab/tc"})
# The counters nstat(8) leaves out as constants, not counts (iproute2's nstat.c, useless_numbers)
NSTAT_CONSTANTS = {"IpForwarding", "IpDefaultTTL", "TcpRtoAlgorithm", "TcpRtoMin", "TcpRtoMax", "TcpMaxConn",
                   "TcpCurrEstab"}


def snmp_counters(net_dir: Path) -> dict:
    """What `nstat -a -z -j` prints ({"kernel": {counter: value}}) for the network namespace whose
    /proc/<pid>/net is net_dir: snmp's and netstat's pairs of lines ("Tcp: ActiveOpens ..." over
    "Tcp: 3 ..." gives TcpActiveOpens) and snmp6's "name value" lines, as nstat reads them, without its
    constants. Read here rather than by nstat itself because nstat is one more process per host before and
    after every run, about 0.2 s of a TCG guest's CPU each, and it only reads these files (a test holds the two
    equal). A namespace that is gone gives {"raw": why}."""
    counters: dict[str, int] = {}
    try:
        for name in ("snmp", "netstat"):
            lines = (net_dir / name).read_text().splitlines()
            for head, values in zip(lines[::2], lines[1::2]):
                prefix, *keys = head.split()
                counters.update(zip((prefix.rstrip(":") + k for k in keys), map(int, values.split()[1:])))
        six = net_dir / "snmp6"
        if six.exists():
            counters.update((k, int(v)) for k, v in (l.split() for l in six.read_text().splitlines() if l.strip()))
    except (OSError, ValueError) as e:
        return {"raw": f"{net_dir}: {e}"}
    return {"kernel": {k: v for k, v in counters.items() if k not in NSTAT_CONSTANTS}}


def json_per_node(net, jobs: list[tuple[str, tuple[list[str], dict]]]) -> list[tuple[str, dict]]:
    """[(node, its command's JSON output)] ({"raw": text} when it is not JSON) for [(node, (argv, env))],
    all at once: one start of a process in a node costs about 0.2 s in a TCG guest, and these reads come
    before and after every run's traffic."""
    def one(job):
        n, (argv, env) = job
        txt = out(argv, net.get(n), env=dict(os.environ, **env))
        try:
            return n, json.loads(txt)
        except json.JSONDecodeError:
            return n, {"raw": txt}
    with ThreadPoolExecutor(max_workers=min(8, len(jobs)) or 1) as pool:
        return list(pool.map(one, jobs))


def qdisc_stats(net, routers=("rl", "rr")) -> dict:
    """`tc -s -j qdisc show` of each router (the dumbbell's rl and rr; the chain's r0 .. r<hops>)."""
    return dict(json_per_node(net, [(r, QDISC_STATS) for r in routers]))


def qdisc_stats_and_nstat(net, routers, hosts) -> tuple[dict, dict]:
    """qdisc_stats of the routers (at once) and the nstat counters of the hosts (snmp_counters: file reads of
    milliseconds)."""
    return qdisc_stats(net, routers), {h: snmp_counters(proc_net(net.get(h))) for h in hosts}


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


def write_nstat(ctx, after: dict) -> None:
    """nstat/<host>.json: each host's TCP/IP counters before the traffic (ctx.nstat_before) and after it."""
    for h in ctx.hostsj["hosts"]:
        ctx.write_json(f"nstat/{h}.json", {"before": ctx.nstat_before[h], "after": after[h]})
