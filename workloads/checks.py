"""Fidelity checks of a run's workload (standard library only: the runner calls it on the testbed host).

    check_run(run_dir) -> {name: {"configured": .., "measured": .., "ok": bool, ...}}

merged by the runner into fidelity.json's `checks`. Checks:

- `offered_load` (and `reverse_offered_load` when the schedule has reverse flows): the sizes of the
  flows the clients actually opened inside the run's window (actual start < duration), in wire bytes
  (ceil(bytes / mss) packets of packet_bytes), over duration * C. Open loop: a flow offers its whole
  size when its connection is opened, whatever TCP then manages to send; what the kernel accepted is
  kept beside it as `sent` (a throughput, which congestion and a flow larger than the run can carry
  keep below the offered load: not a fault of the workload). `configured` is the run's load;
  `scheduled` is what the schedule itself offers (its sizes summed the same way). ok when measured is
  within `tolerance` (5 %) of scheduled: the
  Pareto sizes (shape 1.3, infinite variance) make a schedule's own load differ from the configured rho
  by far more than 5 % in a 60 s or even a 500 s run (0.36-0.60 over 20 seeds at rho 0.55, 60 s), and
  that is the workload's nature (the same schedule is replayed under every AQM), not a fault of the run.
- `lateness_p99_ms`: scheduling lateness (actual start - scheduled start) of the started flows, p99 in
  ms, with p50 and max; ok when p99 <= 10 ms (a tenth of the dumbbell's mean RTT). Its severity is
  `warning`: the runner lists a failed warning in fidelity.json's `warnings`, not in `reasons`, and the
  run stays valid. Per-flow latency is measured from the flow's own SYN and flows are paired across
  AQMs by id, so lateness biases no metric; what it could change, the offered load, is checked above
  on the actual start times (a flow pushed past the window does not count).
- `flows_accounted`: every scheduled flow appears once in its sender's client log.
- `flows_started`: every flow scheduled before the end of the run was started (none `not_started`).
"""
from __future__ import annotations

import csv
import json
import math
import statistics
from pathlib import Path

from contract import rundir
from contract.schedule import read_schedule

LOAD_TOLERANCE = 0.05
LATENESS_P99_LIMIT_MS = 10.0


def read_client_logs(flows_dir: str | Path) -> dict[int, dict]:
    """flow_id -> log row, from every flows/client-*.csv (a flow id seen twice raises ValueError)."""
    out = {}
    for p in sorted(Path(flows_dir).glob("client-*.csv")):
        with p.open(newline="") as fh:
            for r in csv.DictReader(fh):
                fid = int(r["flow_id"])
                if fid in out:
                    raise ValueError(f"{p}: flow {fid} is logged twice (also by another client log)")
                out[fid] = r
    return out


def _wire_bytes(nbytes: int, mss: int, packet_bytes: int) -> int:
    return math.ceil(nbytes / mss) * packet_bytes


def offered_load(flows, logs: dict[int, dict], capacity_mbps: float, duration_s: float, configured: float,
                 mss: int = 1460, packet_bytes: int = 1500, direction: str = "forward",
                 tolerance: float = LOAD_TOLERANCE) -> dict:
    """The achieved offered load of one direction against the schedule's and the configured one."""
    scale = 8 / (duration_s * capacity_mbps * 1e6)
    mine = [f for f in flows if f.direction == direction and f.start_s < duration_s]
    scheduled = sum(_wire_bytes(f.size_bytes, mss, packet_bytes) for f in mine) * scale
    offered = sent = 0
    for f in mine:
        r = logs.get(f.flow_id)
        if not r or r["outcome"] == "not_started" or r["actual_start_s"] in ("", None):
            continue
        if float(r["actual_start_s"]) < duration_s:
            offered += _wire_bytes(f.size_bytes, mss, packet_bytes)
        if r["bytes"]:
            sent += _wire_bytes(int(r["bytes"]), mss, packet_bytes)
    measured = offered * scale
    ok = scheduled > 0 and abs(measured - scheduled) <= tolerance * scheduled
    return {"configured": configured, "scheduled": round(scheduled, 6), "measured": round(measured, 6),
            "sent": round(sent * scale, 6), "ok": bool(ok), "tolerance": tolerance, "basis": "scheduled"}


def lateness(logs: dict[int, dict], limit_ms: float = LATENESS_P99_LIMIT_MS) -> dict:
    """p50/p99/max scheduling lateness (ms) of the flows that started."""
    lat = sorted(float(r["lateness_s"]) * 1e3 for r in logs.values()
                 if r["outcome"] != "not_started" and r["lateness_s"] not in ("", None))
    if not lat:
        return {"configured": limit_ms, "measured": None, "ok": False, "reason": "no flow started"}
    p99 = lat[0] if len(lat) == 1 else statistics.quantiles(lat, n=100, method="inclusive")[98]
    return {"configured": limit_ms, "measured": round(p99, 3), "p50": round(statistics.median(lat), 3),
            "max": round(lat[-1], 3), "n": len(lat), "ok": p99 <= limit_ms, "severity": "warning"}


def accounted(flows, logs: dict[int, dict], duration_s: float) -> dict:
    missing = [f.flow_id for f in flows if f.flow_id not in logs]
    extra = sorted(set(logs) - {f.flow_id for f in flows})
    not_started = [f.flow_id for f in flows if f.start_s < duration_s and f.flow_id in logs
                   and logs[f.flow_id]["outcome"] == "not_started"]
    acc = {"configured": len(flows), "measured": len(flows) - len(missing), "ok": not missing and not extra}
    if missing or extra:
        acc["missing"], acc["extra"] = missing[:20], extra[:20]
    due = sum(1 for f in flows if f.start_s < duration_s)
    started = {"configured": due, "measured": due - len(missing) - len(not_started),
               "ok": not not_started and not missing}
    return {"flows_accounted": acc, "flows_started": started}


def check_run(run_dir: str | Path) -> dict:
    """Every workload check of a run directory (run.json, the schedule, flows/client-*.csv)."""
    run_dir = Path(run_dir)
    spec = rundir.read_spec(run_dir)
    meta, flows = read_schedule(run_dir / spec.get("schedule", rundir.SCHEDULE))
    logs = read_client_logs(run_dir / "flows")
    cap = float(spec.get("topology", {}).get("bottleneck_mbps") or meta["capacity_mbps"])
    dur = float(spec.get("duration_s") or meta["duration_s"])
    mss, pkt = int(meta.get("mss", 1460)), int(meta.get("packet_bytes", 1500))
    out = {"offered_load": offered_load(flows, logs, cap, dur, float(spec.get("load", meta.get("load", 0))),
                                        mss, pkt)}
    if any(f.direction == "reverse" for f in flows):
        out["reverse_offered_load"] = offered_load(
            flows, logs, cap, dur, float(spec.get("reverse_load", meta.get("reverse_load", 0))), mss, pkt,
            "reverse")
    out["lateness_p99_ms"] = lateness(logs)
    out.update(accounted(flows, logs, dur))
    return out


if __name__ == "__main__":
    import sys
    print(json.dumps(check_run(sys.argv[1]), indent=1))
