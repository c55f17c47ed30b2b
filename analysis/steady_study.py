"""How long a run must be to be steady: the steady-state test of analysis.extract over growing windows.

    .venv/bin/python -m analysis.steady_study --results results/quick-duration [--windows 40,80,120]

For each run of a results directory (its tables/<run_id>/flows.csv and runs/<run_id>/run.json), the test
that extract applies to the run's own window (flows in the system, sampled once a second, drift of a
least-squares line against the noise around it: analysis.tables.run.steady_state) is applied to windows
that start at each of --starts (default: the run's warm-up) and last each of --windows seconds, up to the run's
duration_s. A config's warm-up and duration are chosen as the shortest that are steady at the loads that
must be; the table says where none was.
"""
from __future__ import annotations

import argparse
import csv
import os
import sys

from analysis.tables.run import run_t0, steady_state
from contract import rundir as rundir_names

NUMERIC = ("start_s", "syn_t", "done_t", "size_bytes")


def read_flows(path: str) -> list[dict]:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["seen"] = r.get("seen") in ("1", "True", "true")
        for k in NUMERIC:
            r[k] = float(r[k]) if r.get(k) not in (None, "") else ""
    return rows


def offered_in_window(flows: list[dict], window: tuple[float, float], mbps: float) -> float:
    """The load the schedule offered in the window (forward bytes scheduled there over the bottleneck's
    capacity): Pareto sizes with shape 1.3 make this swing around the configured load on short windows."""
    b = sum(f["size_bytes"] for f in flows if f["direction"] == "forward" and f["start_s"] != ""
            and window[0] <= f["start_s"] < window[1])
    return b * 8 / (mbps * 1e6 * (window[1] - window[0]))


def study(results: str, windows: list[float], starts: list[float] | None = None) -> list[dict]:
    out = []
    tables = os.path.join(results, "tables")
    if not os.path.isdir(tables):
        sys.exit(f"steady_study: {tables} does not exist. Fix: point --results at a pipeline's results "
                 f"directory (results/<config name>) after its analysis ran")
    for run_id in sorted(os.listdir(tables)):
        rundir = os.path.join(results, "runs", run_id)
        spec = rundir_names.read_spec(rundir)
        flows = read_flows(os.path.join(tables, run_id, "flows.csv"))
        t0 = run_t0(rundir, flows)
        dur, mbps = float(spec["duration_s"]), float(spec["topology"]["bottleneck_mbps"])
        for w0 in starts or [float(spec.get("warmup_s", 0))]:
            for w in windows:
                if w0 + w > dur:
                    continue
                win = (w0, w0 + w)
                s = steady_state(flows, t0, win)
                out.append(dict(run_id=run_id, aqm=spec["aqm"]["name"], load=spec["load"], start_s=w0,
                                window_s=w, offered=round(offered_in_window(flows, win, mbps), 3), **s))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True, help="a pipeline's results directory (results/<name>)")
    ap.add_argument("--windows", default="40,60,80,120,160", help="window lengths, seconds")
    ap.add_argument("--starts", help="window starts, seconds after t0 (default: each run's warmup_s)")
    a = ap.parse_args(argv)
    starts = [float(x) for x in a.starts.split(",")] if a.starts else None
    rows = study(a.results, [float(x) for x in a.windows.split(",")], starts)
    print(f"{'run':44} {'start':>5} {'window':>6} {'offered':>7} {'N mean':>7} {'drift':>6} {'sd':>5} steady")
    for r in rows:
        print(f"{r['run_id']:44} {r['start_s']:5.0f} {r['window_s']:6.0f} {r['offered']:7.3f} "
              f"{r['in_system_mean']!s:>7} {r['in_system_drift']!s:>6} {r['in_system_noise_sd']!s:>5} "
              f"{'yes' if r['steady'] == 1 else 'NO'}")
    print(f"rerun: .venv/bin/python -m analysis.steady_study --results {a.results} --windows {a.windows}"
          + (f" --starts {a.starts}" if a.starts else ""))


if __name__ == "__main__":
    main()
