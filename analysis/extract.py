"""Run directory -> tidy tables (flows.csv, run.csv, persistent.csv, packets.csv.gz).

    python -m analysis.extract --run RUNDIR --out TABLEDIR

Definitions (see README.md): a flow is one TCP connection, keyed by the 5-tuple oriented from the data
sender (the host that sent the SYN). flow_id is read from the first 16 payload bytes (u64 flow id, u64 size).
This module holds the order of an extraction; each table is made by its module in analysis/tables/.
"""
import argparse
import hashlib
import os
import sys

from analysis.runfiles import in_run, read_schedule
from contract.rundir import read_json, DONE, FAVOR_TRACE, FAVOR_TRACE_CSV, FIDELITY, HOSTS, PCAP_DIR, SCHEDULE, SPEC
from analysis.tables import write_csv
from analysis.tables.connections import connection_starts
from analysis.tables.favor import read_favor_trace, favored_data, add_favor_columns
from analysis.tables.flows import (FLOW_COLS, measurement_window, read_sender_captures, flow_rows,
                                   add_path_rtt)
from analysis.tables.packets import (bottleneck_pairs, count_per_flow, add_bottleneck_columns,
                                     write_packets_csv)
from analysis.tables.persistent import PERSISTENT_COLS, persistent_servers, persistent_rows
from analysis.tables.httpflows import http_flow_rows
from analysis.tables.run import nstat_deltas, run_row, run_t0


def schedule_sha256(path):
    """The SHA-256 of the schedule file the run replayed (hex): what makes two runs the same schedule."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def extract(rundir, outdir, write_packets=True):
    if not os.path.exists(os.path.join(rundir, DONE)):
        raise ValueError(f"{rundir}: no DONE file, not a finished run directory (contracts.md 'Run directory')")
    spec = read_json(rundir, SPEC, None)
    if spec is None:
        raise ValueError(f"{rundir}: run.json missing")
    sched_path = in_run(rundir, spec.get("schedule", SCHEDULE), "run.json's schedule")
    sched = read_schedule(sched_path)
    fid = read_json(rundir, FIDELITY, {"valid": False, "reasons": ["fidelity.json missing"]})
    profile = spec.get("tcp", {}).get("profile", "paper")
    mss = spec.get("topology", {}).get("mtu", 1500) - 40
    window = measurement_window(spec, rundir)
    pdir = os.path.join(rundir, PCAP_DIR)

    hosts = read_json(rundir, HOSTS, {}) or {}
    if "http" in (spec.get("workload") or {}):     # nginx + wrk: a flow per connection (tables/httpflows.py)
        flows, persistent_conns = http_flow_rows(read_sender_captures(pdir), hosts.get("hosts", {}),
                                                 hosts.get("port"), run_t0(rundir, []), profile, mss, window,
                                                 (spec.get("aqm") or {}).get("name", "")), 0
    else:
        flows, persistent_conns = flow_rows(read_sender_captures(pdir), sched, persistent_servers(rundir),
                                            profile, mss, window)
    add_path_rtt(flows, hosts)
    starts = connection_starts(flows)

    pairs, entered = bottleneck_pairs(pdir, flows, hosts), None
    if pairs is not None:
        per_flow, entered = count_per_flow(pairs, starts)
        add_bottleneck_columns(flows, per_flow)
    enqueues = {}
    trace = next((p for p in (os.path.join(rundir, n) for n in (FAVOR_TRACE, FAVOR_TRACE_CSV)) if os.path.exists(p)),
                 os.path.join(rundir, FAVOR_TRACE))
    fav = read_favor_trace(trace, enqueues)
    fav_data = favored_data(enqueues, starts, entered) if fav is not None and pairs is not None else None
    add_favor_columns(flows, fav, fav_data)

    os.makedirs(outdir, exist_ok=True)
    fav_unaligned = "" if fav_data is None else sum(1 for n in fav_data.values() if n is None)
    flows.sort(key=lambda r: (r["flow_id"] if r["flow_id"] != "" else 1 << 62, r["syn_t"] or 0))
    run = run_row(spec, fid, flows, nstat_deltas(rundir), rundir, window, fav_unaligned, bneck=pairs is not None)
    write_csv(os.path.join(outdir, "flows.csv"), flows, FLOW_COLS)
    if write_packets:
        write_packets_csv(os.path.join(outdir, "packets.csv.gz"), pairs or [])
    pers = persistent_rows(rundir, spec)
    run.update(persistent_conns=persistent_conns, persistent_streams=len(pers),
               persistent_share_pct_mean=round(sum(r["share_pct"] for r in pers) / len(pers), 4) if pers else "",
               # the schedule's identity: runs are paired flow by flow only when they replayed the same file
               schedule_sha256=schedule_sha256(sched_path))
    write_csv(os.path.join(outdir, "persistent.csv"), pers, PERSISTENT_COLS)
    write_csv(os.path.join(outdir, "run.csv"), [run], list(run))
    return flows, run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, help="run directory (contracts.md 'Run directory')")
    ap.add_argument("--out", required=True, help="table directory to write")
    ap.add_argument("--no-packets", action="store_true", help="skip packets.csv.gz")
    a = ap.parse_args(argv)
    try:
        flows, run = extract(a.run, a.out, not a.no_packets)
    except (ValueError, FileNotFoundError) as e:
        sys.exit(f"extract: {e}")
    print(f"{run['run_id']}: {len(flows)} flows, {run['flows_in_metrics']} in metrics -> {a.out}")


if __name__ == "__main__":
    main()
