"""Capacity benchmark: the highest flow arrival rate at which a run on the testbed stays valid.

    .venv/bin/python -m orchestrate.capacity --base config/quick.yaml --mean-pkts 30 \
        --rates 10,15,20,26,35,50 [--aqm droptail] [--duration 40] [--out results/capacity]

Each rate (flows per second, forward direction) becomes one run of the base config's scenario with the
sizes' mean replaced by --mean-pkts and the load that gives that rate on the base bottleneck
(load = rate * mean_pkts * 1500 B * 8 / bottleneck), one attempt, made exactly as the pipeline makes it
(orchestrate.runspec.run_spec, orchestrate.schedule, orchestrate.run_step on the same testbed, which stays up between rates).
The ramp goes up until the first run the testbed cannot carry: invalid on `cpu_busy` or on the
workload's scheduling lateness (the checks of testbed/runner, unchanged). A run invalid for another
reason (the bottleneck's rate, an RTT) is reported and the ramp goes on, since it says nothing of CPU.

Prints one row per rate (flows offered, CPU busy share and time over the limit, lateness p99, where the
CPU went) and the capacity: the highest rate carried with every lower rate carried too. A rate at load 1
or more is refused before anything starts (a schedule's load is below 1); raise the base config's
bottleneck to ramp further.
"""
from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
from pathlib import Path

from contract import rundir
from orchestrate import matrix, runspec, testbeds
from orchestrate.config import ConfigError, read_config, validate

REPO = Path(__file__).resolve().parents[1]
# the checks that say the testbed, not the network, ran out: CPU, flows started late or not at all
CAPACITY_CHECKS = ("cpu_busy", "lateness_p99_ms", "flows_started")
PKT_BITS = 1500 * 8


def load_for(rate: float, mean_pkts: float, mbps: float) -> float:
    return round(rate * mean_pkts * PKT_BITS / (mbps * 1e6), 4)


def config_for(base: dict, mean_pkts: float, rate: float, aqm: str, duration: float | None,
               impl: str | None = None) -> dict:
    cfg = copy.deepcopy(base)
    if impl:
        cfg["workload_impl"] = impl
    cfg["sizes"] = dict(cfg["sizes"], mean_pkts=mean_pkts)
    cfg["loads"] = [load_for(rate, mean_pkts, cfg["topology"]["bottleneck_mbps"])]
    cfg["aqms"], cfg["iw"], cfg["replications"], cfg["attempts"] = [aqm], cfg["iw"][:1], 1, 1
    if duration:
        cfg["duration_s"] = duration
    cfg["name"] = f"capacity-m{mean_pkts:g}-{cfg['workload_impl']}"
    return validate(cfg, f"capacity ramp at {rate:g} flows/s")


def capacity_failures(fid: dict) -> list[str]:
    """The capacity checks that failed, warnings included: scheduling lateness is only a warning for a
    run's validity (flows pair across AQMs by id), but a testbed that starts flows late is past capacity."""
    return [k for k in CAPACITY_CHECKS if not fid.get("checks", {}).get(k, {}).get("ok", False)]


def one_rate(cfg: dict, rate: float, out: Path) -> dict:
    run = matrix.runs(cfg)[0]
    spec = runspec.run_spec(cfg, run)
    d = out / f"rate{rate:g}"
    run_dir = d / "runs" / spec["run_id"]
    if not rundir.is_finished(run_dir):
        d.mkdir(parents=True, exist_ok=True)
        (d / "run.json").write_text(json.dumps(spec, indent=2) + "\n")
        sched = d / "schedule.csv"
        subprocess.run([sys.executable, "-m", "orchestrate.schedule", *runspec.schedule_args(cfg, run),
                        "--out", str(sched)], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        rc = subprocess.run([sys.executable, "-m", "orchestrate.run_step",
                             "--testbed", json.dumps(cfg["testbed"]), "--spec", str(d / "run.json"),
                             "--schedule", str(sched), "--run-dir", str(run_dir), "--attempts", "1"], cwd=REPO).returncode
        if rc:
            return {"rate": rate, "load": run.load, "valid": False, "reasons": [f"run failed (exit {rc})"],
                    "carried": False, "failed": [f"run failed (exit {rc})"]}
    return summarize(rate, run.load, run_dir)


def summarize(rate: float, load: float, run_dir: Path) -> dict:
    fid = rundir.read_fidelity(run_dir)
    cpu = rundir.read_json(run_dir, rundir.CPU, {})
    c = fid["checks"]
    busy = c.get("cpu_busy", {}).get("measured", {})
    lat = c.get("lateness_p99_ms", {}).get("measured")
    flows = 0
    for log in (run_dir / "flows").glob("client-*.csv"):
        with log.open() as f:
            flows += sum(1 for _ in f) - 1     # rows under the header
    return {"rate": rate, "load": load, "valid": fid["valid"], "reasons": fid["reasons"],
            "carried": not capacity_failures(fid), "failed": capacity_failures(fid), "flows_logged": flows,
            "cpu_mean": busy.get("mean"), "cpu_over_limit": busy.get("share_over_limit"), "lateness": lat,
            "modes": cpu.get("modes", {}), "top": cpu.get("processes", [])[:4]}


def fmt_row(r: dict) -> str:
    lat = r.get("lateness")
    p99 = lat
    m = r.get("modes") or {}
    top = "; ".join(f"{g['group']} {g['share']:.0%}" for g in r.get("top", []))
    return (f"{r['rate']:>7g} {r['load']:>6.3f} {r.get('flows_logged', 0):>6} "
            f"{(r.get('cpu_mean') or 0):>6.0%} {(r.get('cpu_over_limit') or 0):>6.0%} "
            f"{p99 if p99 is not None else '-':>9} {m.get('softirq', 0):>6.0%} "
            f"{'yes' if r['carried'] else 'NO':>7}  {top}{'' if r['carried'] else '  [' + ', '.join(r.get('failed', [])) + ']'}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m orchestrate.capacity", description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="config/quick.yaml", help="config whose scenario and testbed are used")
    ap.add_argument("--mean-pkts", type=float, required=True, help="Pareto mean flow size (packets)")
    ap.add_argument("--rates", required=True, help="comma-separated arrival rates, flows/s, ascending")
    ap.add_argument("--aqm", default="droptail")
    ap.add_argument("--impl", choices=("python", "go"), help="flow client/server (default: the base config's)")
    ap.add_argument("--duration", type=float, help="traffic duration (s); default the base config's")
    ap.add_argument("--out", type=Path, default=REPO / "results" / "capacity")
    ap.add_argument("--keep-up", action="store_true", help="leave the testbed running afterwards")
    a = ap.parse_args(argv)
    try:
        base = read_config(a.base)
    except ConfigError as e:
        print(f"capacity: {e}", file=sys.stderr)
        return 2
    if base.get("sections") or base.get("bottlenecks") or isinstance(base["sizes"], list) or len(base.get("cc", [0])) > 1:
        print(f"capacity: {a.base} has several sections, bottlenecks, size distributions or congestion controls; "
              f"the ramp varies the arrival rate of one scenario. Fix: give a --base config with one of each "
              f"(config/quick.yaml).", file=sys.stderr)
        return 2
    rates = [float(x) for x in a.rates.split(",")]
    mbps = base["topology"]["bottleneck_mbps"]
    over = [r for r in rates if load_for(r, a.mean_pkts, mbps) >= 1]
    if over:
        top = mbps * 1e6 / (a.mean_pkts * PKT_BITS)
        ap.error(f"--rates {','.join(f'{r:g}' for r in over)}: load 1 or more on the {mbps:g} Mb/s bottleneck "
                 f"(a schedule's load must be below 1; with mean {a.mean_pkts:g} packets that is below "
                 f"{top:.1f} flows/s). Fix: lower the rates, or ramp further with a --base config whose "
                 f"bottleneck_mbps is higher")
    out = a.out / f"m{a.mean_pkts:g}-{a.impl or base['workload_impl']}-{a.aqm}"
    print(f"capacity ramp: {a.base}, Pareto mean {a.mean_pkts:g} pkts, {a.aqm}, {a.impl or base['workload_impl']} "
          f"workload, rates {rates} flows/s -> {out}")
    rows = []
    try:
        for rate in rates:
            r = one_rate(config_for(base, a.mean_pkts, rate, a.aqm, a.duration, a.impl), rate, out)
            rows.append(r)
            print(fmt_row(r), flush=True)
            if not r["carried"]:
                break
    finally:
        if not a.keep_up:
            testbeds.down(base["testbed"])
    print(f"\n{'flows/s':>7} {'load':>6} {'flows':>6} {'cpu':>6} {'>90%':>6} {'late p99':>9} {'sirq':>6} {'carried':>7}  where the CPU went")
    for r in rows:
        print(fmt_row(r))
    carried = 0.0
    for r in rows:
        if not r["carried"]:
            break
        carried = r["rate"]
    print(f"\ncapacity: {carried:g} flows/s carried (Pareto mean {a.mean_pkts:g})"
          + ("" if any(not r["carried"] for r in rows) else " or more: no rate of the ramp was too much"))
    print(f"rerun: .venv/bin/python -m orchestrate.capacity --base {a.base} --mean-pkts {a.mean_pkts:g} "
          f"--rates {a.rates} --aqm {a.aqm}" + (f" --impl {a.impl}" if a.impl else "")
          + (f" --duration {a.duration:g}" if a.duration else ""))
    (out / "capacity.json").write_text(json.dumps({"rows": rows, "capacity_flows_per_s": carried}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
