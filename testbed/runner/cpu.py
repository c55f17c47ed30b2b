"""Where the host's CPU and memory go over a run's traffic window: /proc/stat's modes, each process group's
ticks, the busiest seconds (the cpu_busy check), the memory in use and the kernel's slab (slab_growth),
written to cpu.json (docs/contracts.md "Run directory")."""
from __future__ import annotations

import os
import re
import threading
from pathlib import Path

from contract import rundir


CPU_BUSY_LIMIT = 0.90     # a run whose guest CPU is busier than this ...
CPU_BUSY_SUSTAINED = 0.10  # ... for more than this share of its samples is invalid
PF_KTHREAD = 0x00200000    # /proc/<pid>/stat flags: a kernel thread (an exited process has no command line either)
KTHREAD = "[kernel thread]"
PROC_SNAPSHOT_EVERY = 5   # seconds between per-process CPU snapshots (one costs ~10 ms of Python per 100 processes)


# /proc/stat's cpu line, in its order (proc(5)); iowait and steal matter little here but are kept
CPU_MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def cpu_modes() -> list[int]:
    return [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:1 + len(CPU_MODES)]]


def work_counters() -> dict[str, float]:
    """The guest's CPU seconds spent so far (every mode but idle and iowait, all CPUs together) and its forks
    since boot (/proc/stat's "processes": every process and thread started): the runner's phases count what
    each one cost (rundir.Phases), which tells a phase that waits from one that works, and how many starts
    of a process or thread its work was."""
    lines = Path("/proc/stat").read_text().splitlines()
    modes = dict(zip(CPU_MODES, (int(x) for x in lines[0].split()[1:1 + len(CPU_MODES)])))
    busy = sum(v for k, v in modes.items() if k not in ("idle", "iowait"))
    forks = next((int(l.split()[1]) for l in lines if l.startswith("processes ")), 0)
    return {"cpu_s": busy / os.sysconf("SC_CLK_TCK"), "forks": forks}


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
    """The parts of a run a CPU budget is spent on, named as the report and docs/measurements.md ("Where a
    run's CPU goes") name them."""
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


def record(ctx, cpu: CpuSampler) -> None:
    """Stop the sampler, add its checks, and write cpu.json from its first and a last snapshot."""
    cpu.halt.set()
    cpu.join()
    ctx.checks.update(cpu.check())
    merge_ticks(cpu.procs1, proc_ticks())
    ctx.write_json(rundir.CPU, dict(cpu_breakdown(cpu.modes0, cpu_modes(), cpu.procs0, cpu.procs1),
                                    mem_total_mib=cpu.mem_total, mem_peak_used_mib=cpu.mem_peak))
