"""persistent.csv: one row per persistent flow (scenario persistent: iperf3 streams beside the web traffic),
from iperf3's own sender report (persistent/iperf3-<src>-<dst>.json) and the plan the runner wrote
(persistent/plan.json).
"""

from analysis.runfiles import HOST_NAME
from contract.rundir import read_json, HOSTS, PERSISTENT_PLAN as PLAN


PERSISTENT_COLS = ["run_id", "src", "dst", "path_rtt_ms", "stream", "start_s", "seconds", "bytes", "mbps",
                   "share_pct", "retransmits"]


def persistent_servers(rundir):
    """(ip, port) of every iperf3 server of the run's persistent flows (persistent/plan.json), or none."""
    plan = read_json(rundir, PLAN, {}) or {}
    hosts = (read_json(rundir, HOSTS, {}) or {}).get("hosts", {})
    return {(hosts[g["dst"]]["ip"], int(g["port"])) for g in plan.get("groups", []) if g["dst"] in hosts}


def persistent_rows(rundir, spec):
    """One row per persistent flow (an iperf3 stream): what it carried from its start to the end of the
    traffic, as iperf3's sender reports it, and its share of the bottleneck in percent (the paper's F16
    unit: 50 flows on 10 Mb/s have about 1.8 % each). A group whose report is missing or broken gives no
    rows; the run's persistent_flows check has already made such a run invalid."""
    plan = read_json(rundir, PLAN, {}) or {}
    paths = (read_json(rundir, HOSTS, {}) or {}).get("paths_rtt_ms", {})
    mbps = float(spec.get("topology", {}).get("bottleneck_mbps") or 0)
    rows = []
    for g in plan.get("groups", []):
        # the iperf3 report's file name is made from plan.json's host names: plain names only
        if not all(isinstance(g.get(k), str) and HOST_NAME.fullmatch(g[k]) for k in ("src", "dst")):
            raise ValueError(f"{rundir}: persistent/plan.json names hosts {g.get('src')!r}, {g.get('dst')!r}; "
                             f"fix: host names of the topology (a1, b2, ...)")
        try:
            raw = read_json(rundir, f"persistent/iperf3-{g['src']}-{g['dst']}.json", None)
        except ValueError:       # an iperf3 cut off mid-report
            raw = None
        if not isinstance(raw, dict) or "end" not in raw:
            continue
        t = (raw.get("start", {}).get("timestamp", {}) or {}).get("timesecs")
        for i, st in enumerate(raw["end"].get("streams", [])):
            snd = st.get("sender") or {}
            rate = snd.get("bits_per_second", 0) / 1e6
            rows.append(dict(run_id=spec.get("run_id", ""), src=g["src"], dst=g["dst"],
                             path_rtt_ms=paths.get(f"{g['src']}-{g['dst']}", ""), stream=i,
                             start_s=round(t - plan["t0_unix"], 3) if t is not None and "t0_unix" in plan else "",
                             seconds=snd.get("seconds", ""), bytes=snd.get("bytes", ""), mbps=round(rate, 6),
                             share_pct=round(100 * rate / mbps, 4) if mbps else "",
                             retransmits=snd.get("retransmits", "")))
    return rows
