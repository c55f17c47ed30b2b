"""A pipeline's projected wall time, printed before it starts (./favorlab), from what runs cost here.

Each finished run directory keeps the controller's wall time of every attempt (attempts.json: connect,
copy, run, copy back) beside the run's spec (run.json: duration_s, drain_s). A run's cost beyond its
traffic (client start-up lead, probes, topology set-up, copy-back) is that wall time minus duration and
drain; the median of those overheads over the attempts already made on the same kind of testbed with the same
clock and the same network (kept or fresh: an attempt on a kept network skips the topology's set-up and probes),
and the mean number of attempts per run, give the projection:

    per run  = (duration_s + drain_s + overhead) * attempts per run
    wall     = the runs dealt to the testbeds, longest first, each to the least busy one
               (ceil(runs / testbeds) * per run when every run is as long)

It counts the runs only: the testbeds' set-up (a fresh machine builds the guest image and provisions
it, about 8 min here; a real host's Ansible play) and the analysis come on top. Local guests share this
machine's cores: more guests than cores / 2 slow each other down, so their projection holds for real
hosts (one per testbed), not for many guests on one small machine.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

from contract import rundir

# Until a run has been made on this kind of testbed: the median overhead of quick's runs on the TCG guest of a
# 2-core machine (docs/measurements.md, "The plan's default overhead").
DEFAULT_OVERHEAD_S = {"local-vm": 42.0}


# the runner's phase of an attempt that adopted the network a run before it kept (testbed/runner/run.py)
KEPT_PHASE = "kept topology reset"


def _network(t: dict) -> str:
    return "kept" if KEPT_PHASE in (t.get("phases_s") or {}) else "fresh"


def measured(results_root: Path, kind: str, clock: str = "real", network: str = "fresh") -> dict:
    """Overheads (s) of every attempt made on a testbed of this kind, with this clock ('real', 'virtual') and on
    this network ('kept': adopted from the run before; 'fresh': built for the run) under results_root, and
    attempts per run. Run directories without attempts.json or run.json (older layouts, half-copied) are
    skipped; an attempt that names no clock had the real one."""
    overheads, attempts = [], []
    for rec in sorted(results_root.glob(f"*/runs/*/{rundir.ATTEMPTS}")):
        try:
            tries = json.loads(rec.read_text())
            spec = rundir.read_spec(rec.parent)
            traffic = float(spec["duration_s"]) + float(spec.get("drain_s", 0))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        mine = [t for t in tries if isinstance(t, dict) and (t.get("lease") or {}).get("kind") == kind
                and (t.get("lease") or {}).get("clock", "real") == clock and _network(t) == network
                and isinstance(t.get("wall_s"), (int, float))]
        if not mine:
            continue
        # overhead_s where the attempt timed its phases (it counts the job's lease and bring-up too)
        overheads += [t["overhead_s"] if isinstance(t.get("overhead_s"), (int, float)) else t["wall_s"] - traffic
                      for t in mine]
        attempts.append(len(tries))
    return {"overheads": overheads, "attempts": attempts}


def project(traffic_s: list[float], kind: str, testbeds: list[int], results_root: Path, clock: str = "real",
            reuse_topology: bool = False) -> tuple[dict, list[str]]:
    """(numbers, lines to print): per-run cost and the wall time with each number of testbeds.
    traffic_s: duration_s + drain_s of each run of the pipeline; a config that keeps its network
    (reuse_topology) is projected from attempts on kept networks, one that does not from fresh ones."""
    network = "kept" if reuse_topology else "fresh"
    m = measured(results_root, kind, clock, network)
    what = f"{kind} testbeds, {clock} clock, {network} networks"
    if m["overheads"]:
        overhead = statistics.median(m["overheads"])
        tries = statistics.fmean(m["attempts"])
        basis = f"median of {len(m['overheads'])} attempts in {len(m['attempts'])} runs on {what} under {results_root}"
    elif kind in DEFAULT_OVERHEAD_S and clock == "real" and network == "fresh":
        overhead, tries = DEFAULT_OVERHEAD_S[kind], 1.0
        basis = f"no run on a {kind} testbed here yet: the quick run's overhead on a 2-core TCG guest"
    else:
        overhead, tries = None, 1.0
        basis = f"no attempt on {what} here yet: overhead unknown, traffic time only"
    costs = [(t + (overhead or 0.0)) * tries for t in traffic_s]
    walls = {n: _deal(costs, n) for n in testbeds}
    lo, hi = (min(traffic_s), max(traffic_s)) if traffic_s else (0.0, 0.0)
    span = f"{lo:g} s" if lo == hi else f"{lo:g} to {hi:g} s"
    per_run = statistics.fmean(costs) if costs else 0.0
    lines = [f"plan: {len(traffic_s)} runs of {span} traffic and drain; overhead per attempt "
             + (f"{overhead:.0f} s" if overhead is not None else "unknown") + f" ({basis}); "
             f"{tries:.2f} attempts per run: {per_run / 60:.1f} min per run" + ("" if lo == hi else " on average"),
             "plan: projected wall time of the runs (set-up and analysis not included): "
             + ", ".join(f"{n} testbed{'s' if n > 1 else ''} {fmt(w)}" for n, w in walls.items())]
    return {"per_run_s": per_run, "overhead_s": overhead, "attempts_per_run": tries, "wall_s": walls}, lines


def _deal(costs: list[float], n: int) -> float:
    """Wall time of runs dealt longest first, each to the testbed that frees up first (how a pool of n
    leases them, give or take the order Snakemake picks)."""
    busy = [0.0] * max(1, n)
    for c in sorted(costs, reverse=True):
        i = busy.index(min(busy))
        busy[i] += c
    return max(busy)


def fmt(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{seconds / 60:.0f} min"
