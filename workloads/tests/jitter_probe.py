"""How late this machine wakes a sleeper, stamped, measured beside a loopback replay: the replay's own baseline.

A flow client's lateness (actual start minus scheduled start) is its own delay plus the machine's: on a shared
2-core VM the hypervisor or a neighbour sometimes takes a CPU for several milliseconds, and every process on it
starts late at once. A bound on the client's lateness p99 that ignores this fails on a noisy machine with a good
client. The probe runs one sleeper per CPU, pinned, waking every millisecond; a wake-up later than STALL_S is a
stall of that CPU, written with its unix time. `judge` then takes from each flow's lateness the stall time within it
and bounds the p99 of what is left, the client's own lateness: a client that is late while every CPU wakes its
sleepers on time is late by its own fault, and is counted.

Hand-written rather than rt-tests' cyclictest: the judgement needs each stall's wall-clock time, to set it
beside each flow's, and cyclictest reports histograms and a maximum, not stamped events.

    python -m workloads.tests.jitter_probe --cpu 0 --out stalls.csv    (until SIGTERM; used by JitterProbe)
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PERIOD_S = 0.001      # a sleeper's period: a stall of 2 ms (the client bound) spans at least one wake-up
STALL_S = 0.001       # a wake-up later than this is a stall (a quiet CPU wakes Python within about 0.1 ms)
BEFORE_S = PERIOD_S   # a stall began up to a period before the wake-up it made late was due
AFTER_S = 0.0005      # and a process it held gets a CPU back within this of the sleeper (two runnable at once)
REPO = Path(__file__).resolve().parents[2]


def _probe(cpu: int, out: Path, period: float = PERIOD_S, stall: float = STALL_S) -> None:
    """Wake every `period` on `cpu` until SIGTERM; append 'start_unix,late_s' for each wake-up later than `stall`
    (start_unix: when the wake-up was due). The first line, written at once, says the probe is running."""
    os.sched_setaffinity(0, {cpu})
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    offset = time.time() - time.monotonic()
    wakes = 0
    with out.open("w", buffering=1) as fh:
        fh.write("due_unix,late_s\n")
        due = time.monotonic() + period
        while not stop:
            time.sleep(max(0.0, due - time.monotonic()))
            now = time.monotonic()
            wakes += 1
            if now - due > stall:
                fh.write(f"{due + offset:.6f},{now - due:.6f}\n")
            due += period
            if due < now:       # wake-ups missed during a stall are one stall, not many
                due = now + period
        fh.write(f"# wakes={wakes}\n")


@dataclass
class Stall:
    cpu: int
    due_unix: float
    late_s: float


class JitterProbe:
    """`with JitterProbe() as probe:` runs one probe process per CPU this process may use; afterwards
    `probe.stalls` holds every stall, and `probe.wakes` how many wake-ups the probes made."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.procs: list[tuple[int, subprocess.Popen, Path]] = []
        self.stalls: list[Stall] = []
        self.wakes = 0

    def __enter__(self):
        self.workdir.mkdir(parents=True, exist_ok=True)
        for cpu in sorted(os.sched_getaffinity(0)):
            out = self.workdir / f"stalls-cpu{cpu}.csv"
            p = subprocess.Popen([sys.executable, "-m", "workloads.tests.jitter_probe", "--cpu", str(cpu),
                                  "--out", str(out)], cwd=REPO)
            self.procs.append((cpu, p, out))
        deadline = time.monotonic() + 10
        while not all(out.exists() and out.stat().st_size for _, _, out in self.procs):
            if time.monotonic() > deadline or any(p.poll() is not None for _, p, _ in self.procs):
                self.__exit__(None, None, None)
                raise RuntimeError(f"jitter probe did not start (see {self.workdir})")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc):
        for _, p, _ in self.procs:
            if p.poll() is None:
                p.terminate()
        for cpu, p, out in self.procs:
            p.wait(timeout=10)
            for line in out.read_text().splitlines()[1:]:
                if line.startswith("# wakes="):
                    self.wakes += int(line.split("=")[1])
                elif line:
                    due, late = line.split(",")
                    self.stalls.append(Stall(cpu, float(due), float(late)))
        self.procs = []
        return False


@dataclass
class Judgement:
    flows: int
    beside_stall: int         # flows whose lateness overlaps a stall of the machine
    p99_ms: float             # p99 of the flows' own lateness: each flow's minus the stall time within it
    raw_p99_ms: float         # p99 of the lateness as logged
    worst_stall_ms: float

    def __str__(self):
        return (f"{self.flows} flows, {self.beside_stall} late beside a machine stall; lateness p99 "
                f"{self.raw_p99_ms:.3f} ms as logged, {self.p99_ms:.3f} ms the client's own; worst stall "
                f"{self.worst_stall_ms:.1f} ms")


def p99_ms(lateness_s: list[float]) -> float:
    """The p99 as the Go test has always taken it: the value at index int(0.99 n) of the sorted list (the runner's
    check, workloads/checks.py `lateness`, interpolates with statistics.quantiles instead)."""
    if not lateness_s:
        return float("nan")
    lat = sorted(x * 1e3 for x in lateness_s)
    return lat[min(len(lat) - 1, int(0.99 * len(lat)))]


def _union(spans):
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def judge(rows: list[dict], t0: float, stalls: list[Stall]) -> Judgement:
    """rows: a client log's rows (scheduled_s and lateness_s, seconds after t0). A flow's own lateness is its
    lateness less the time within it (from its scheduled start to its actual start) during which some CPU was
    stalled, each stall widened by BEFORE_S and AFTER_S. The stalls of all CPUs are
    merged first, so no stall time counts twice."""
    spans = _union((s.due_unix - BEFORE_S, s.due_unix + s.late_s + AFTER_S) for s in stalls)
    own, logged, beside = [], [], 0
    for r in rows:
        start = t0 + float(r["scheduled_s"])
        late = float(r["lateness_s"])
        stalled = sum(max(0.0, min(b, start + late) - max(a, start)) for a, b in spans)
        beside += stalled > 0
        own.append(max(0.0, late - stalled))
        logged.append(late)
    worst = max((s.late_s for s in stalls), default=0.0) * 1e3
    return Judgement(len(rows), beside, p99_ms(own), p99_ms(logged), worst)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="jitter_probe", description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpu", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    _probe(a.cpu, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
