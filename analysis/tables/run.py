"""run.csv: one row per run, its scenario (the facts analysis/R/load.R makes the scenario key from), its
validity, what the schedule offered in the measurement window and what of it never finished, the
recovery counts summed over its flows, whether the number of flows in the system held steady, and the
kernel's own TCP counters (nstat).
"""
import bisect
import os
from collections import Counter

from contract.rundir import read_json, MANIFEST

NSTAT_KEYS = ["TcpExtTCPTimeouts", "TcpExtTCPSynRetrans", "TcpRetransSegs", "TcpExtTCPFastRetrans",
              "TcpExtTCPLossProbes", "TcpExtTCPSpuriousRTOs"]


def _nstat_flat(d):
    """nstat -j output is {"kernel": {name: value}} or {name: value}."""
    if isinstance(d, dict) and "kernel" in d and isinstance(d["kernel"], dict):
        d = d["kernel"]
    return d or {}


def nstat_deltas(rundir):
    tot = Counter()
    ndir = os.path.join(rundir, "nstat")
    if not os.path.isdir(ndir):
        return None
    for fn in sorted(os.listdir(ndir)):
        d = read_json(ndir, fn, {})
        b, a = _nstat_flat(d.get("before")), _nstat_flat(d.get("after"))
        for k in NSTAT_KEYS:
            tot[k] += int(a.get(k, 0)) - int(b.get(k, 0))
    return tot


def scenario(spec):
    """run.json's scenario facts besides AQM, load and replication (columns of run.csv; analysis/R/load.R
    makes the scenario key from them, so that it is defined in one place)."""
    aqm, tcp, topo = spec.get("aqm", {}), spec.get("tcp", {}), spec.get("topology", {})
    forward = aqm.get("forward", {}) if isinstance(aqm, dict) else {}
    sizes = spec.get("sizes", {})
    chain = topo.get("kind") == "chain"
    if chain:       # the builder's defaults where run.json leaves them out (a config that did not set them)
        from topologies.chain import DEFAULTS as CHAIN
    return dict(topology=topo.get("kind") or spec.get("scenario", ""), bottleneck_mbps=topo.get("bottleneck_mbps", ""),
                buffer_pkts=topo.get("buffer_pkts", ""), iw=tcp.get("iw", ""), profile=tcp.get("profile", ""),
                cc=tcp.get("congestion_control", ""), size_dist=sizes.get("distribution", ""),
                size_mean_pkts=sizes.get("mean_pkts", ""), dataplane="p4" if forward.get("kind") == "p4" else "kernel",
                # the chain's length and where its AQM sits: two chain sections differing only there must not pool
                hops=topo.get("hops", CHAIN["hops"]) if chain else "",
                aqm_hops="+".join(str(k) for k in topo.get("aqm_hops", CHAIN["aqm_hops"])) if chain else "",
                # the synflood axis: runs under a flood are another scenario than the same runs without
                flood_x=(spec.get("flood") or {}).get("rate_x", ""),
                # the HTTP workload (nginx + wrk, closed loop): another scenario than the replay of the schedule
                http_connections=((spec.get("workload") or {}).get("http") or {}).get("connections", ""))


def run_row(spec, fid, flows, nst, rundir, window, fav_unaligned, bneck):
    """One run.csv row. window: (start, end) of the measurement window; fav_unaligned: flows whose trace
    could not be paired with bneck-in (empty without trace or bneck captures); bneck: bottleneck captured."""
    m = [f for f in flows if f["in_metrics"]]
    aqm = spec.get("aqm", {})
    sc = scenario(spec)
    row = dict(run_id=spec.get("run_id", os.path.basename(rundir.rstrip("/"))),
               config_name=spec.get("config_name", ""), scenario=spec.get("scenario", ""),
               aqm=aqm.get("name", "") if isinstance(aqm, dict) else aqm, load=spec.get("load", ""),
               iw=sc["iw"], profile=sc["profile"], replication=spec.get("replication", ""),
               seed=spec.get("seed", ""), bottleneck_mbps=sc["bottleneck_mbps"], buffer_pkts=sc["buffer_pkts"],
               dataplane=sc["dataplane"], cc=sc["cc"], size_dist=sc["size_dist"], size_mean_pkts=sc["size_mean_pkts"],
               topology=sc["topology"], hops=sc["hops"], aqm_hops=sc["aqm_hops"], flood_x=sc["flood_x"],
               http_connections=sc["http_connections"],
               valid=int(bool(fid.get("valid"))), invalid_reasons="; ".join(fid.get("reasons", [])),
               flows_total=len(flows), flows_complete=sum(f["complete"] for f in flows),
               flows_in_metrics=len(m), flows_unmatched=sum(1 for f in flows if f["flow_id"] == ""))
    # what the schedule offered in the window and what of it never finished, forward direction (the AQM's)
    w = [f for f in flows if f["in_window"] and f["direction"] == "forward"]
    unfinished = [f for f in w if not f["complete"]]
    nbytes = sum(f["size_bytes"] for f in w)
    span = window[1] - window[0]
    mbps = sc["bottleneck_mbps"]
    row.update(window_start_s=window[0], window_end_s=window[1], flows_window=len(w),
               flows_unfinished=len(unfinished), unfinished_share=len(unfinished) / len(w) if w else "",
               bytes_window=nbytes,
               unfinished_bytes_share=sum(f["size_bytes"] for f in unfinished) / nbytes if nbytes else "",
               realized_load=8 * nbytes / (float(mbps) * 1e6 * span) if mbps and span > 0 else "")
    for k in ["syn_retrans", "R", "RTO", "rto_data", "FR", "TLP", "other_rec", "spurious", "syn_drops_bneck",
              "synack_retrans"]:
        row["ours_" + k] = sum(int(f[k]) for f in flows if f[k] != "")
    if not bneck:
        row["ours_syn_drops_bneck"] = ""
    row["fav_unaligned_flows"] = fav_unaligned
    t0 = run_t0(rundir, flows)
    row["t0_unix"] = t0
    row.update(steady_state(flows, t0, window))
    for k in NSTAT_KEYS:
        row["nstat_" + k] = nst[k] if nst is not None else ""
    for f in flows:
        f["run_id"] = row["run_id"]
    return row


STEADY_NOISE = 2.0   # a window is steady when N(t) rises by at most this many sd of its own noise


def steady_state(flows, t0, window):
    """Flows in the system over the measurement window, and whether that number held steady.

    N(t) counts forward flows whose first SYN was sent at or before t and whose last byte had not arrived
    (a flow that never finished stays in), sampled once a second across the window (times relative to
    the run's t0). A least-squares line through the samples gives the drift, its rise across the window;
    the run is steady when the drift is at most STEADY_NOISE standard deviations of the samples around
    the line: a queue of flows that keeps building (load above what the testbed carries, or a window too
    short for the load) rises well above the noise of a stable one."""
    fw = [f for f in flows if f["seen"] and f["direction"] == "forward" and f["syn_t"] not in (None, "")]
    ts = [window[0] + k for k in range(int(window[1] - window[0]) + 1)]
    if not fw or len(ts) < 3:
        return dict(in_system_mean="", in_system_drift="", in_system_noise_sd="", steady="")
    starts = sorted(f["syn_t"] - t0 for f in fw)
    ends = sorted(f["done_t"] - t0 for f in fw if f["done_t"] not in (None, ""))
    n = [bisect.bisect_right(starts, t) - bisect.bisect_right(ends, t) for t in ts]
    tm, nm = sum(ts) / len(ts), sum(n) / len(n)
    slope = sum((t - tm) * (x - nm) for t, x in zip(ts, n)) / sum((t - tm) ** 2 for t in ts)
    resid = [x - (nm + slope * (t - tm)) for t, x in zip(ts, n)]
    sd = (sum(r * r for r in resid) / (len(resid) - 2)) ** 0.5
    drift = slope * (ts[-1] - ts[0])
    return dict(in_system_mean=round(nm, 2), in_system_drift=round(drift, 2), in_system_noise_sd=round(sd, 2),
                steady=int(drift <= STEADY_NOISE * max(sd, 1.0)))


def run_t0(rundir, flows):
    """The run's t0 on the testbed clock: manifest.json's t0_unix, else the earliest SYN minus its
    scheduled start (a flow starts at t0 + start_s, late if anything)."""
    t0 = (read_json(rundir, MANIFEST, {}) or {}).get("t0_unix")
    if t0 is not None:
        return float(t0)
    lead = [f["syn_t"] - f["start_s"] for f in flows if f["seen"] and f["syn_t"] not in (None, "") and f["start_s"] != ""]
    return min(lead) if lead else 0.0
