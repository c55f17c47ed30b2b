"""flows.csv: one row per flow, the facts the captures at the senders give (tcp.py) joined to the schedule
row the flow's header names; a scheduled flow no capture saw gets a row too, so a censored flow counts as
unfinished instead of vanishing. The bottleneck and favor trace columns are filled by packets.py and
favor.py.
"""
import os
from typing import NamedTuple

from analysis.pcapread import read_pcap, SYN, ACK
from analysis.tables.favor import VERDICTS
from analysis.tcp import group_connections, flow_header, sender_side, receiver_side

FLOW_COLS = ["run_id", "flow_id", "src", "dst", "direction", "src_ip", "sport", "dst_ip", "dport", "start_s",
             "size_bytes", "L", "syn_t", "done_t", "latency_s", "complete", "seen", "warmup", "in_window",
             "in_metrics", "syn_retrans", "syn_drops_bneck", "synack_retrans", "data_pkts", "R", "RTO", "rto_data",
             "FR", "TLP", "other_rec", "spurious", "goodput_bps", "bneck_in", "bneck_out", "drops", "data_drops",
             "qdelay_mean_s"] + ["fav_" + v for v in VERDICTS] + ["fav_favored_data", "path_rtt_ms"]


def measurement_window(spec, rundir):
    """[warmup_s, duration_s) of run.json: arrivals are scheduled up to duration_s, drain_s after it only
    lets them finish, so a flow starting later is not part of the offered load."""
    if "duration_s" not in spec:
        raise ValueError(f"{rundir}: run.json has no duration_s; the measurement window [warmup_s, duration_s) "
                         "cannot be stated")
    return float(spec.get("warmup_s", 0)), float(spec["duration_s"])


def read_sender_captures(pdir):
    """host name -> {connection key: packets} of every sender-<host>.pcap of the run's pcap directory."""
    caps = {}
    for fn in sorted(os.listdir(pdir)):
        if fn.startswith("sender-") and fn.endswith(".pcap"):
            caps[fn[7:-5]] = group_connections(read_pcap(os.path.join(pdir, fn)))
    return caps


def scheduled_facts(s, window):
    """The columns a schedule row gives, whether or not any capture saw the flow."""
    start = float(s["start_s"])
    return dict(flow_id=int(s["flow_id"]), src=s["src"], dst=s["dst"], direction=s.get("direction", ""),
                start_s=start, size_bytes=int(s["size_bytes"]), L=int(s["size_pkts"]), warmup=int(start < window[0]),
                in_window=int(window[0] <= start < window[1]))


def unseen_row(s, window):
    """A scheduled flow no capture has (never started, or every packet lost before a capture point): kept,
    so a censored flow counts as unfinished instead of vanishing."""
    r = dict.fromkeys(FLOW_COLS, "")
    r.update(scheduled_facts(s, window), syn_t=None, complete=0, seen=0, in_metrics=0)
    return r


class Captures(NamedTuple):
    """The two ends of one connection: the host names and their captures' packets of it."""
    sender: str
    sender_packets: list
    receiver: str
    receiver_packets: list


def pick_captures(key, caps, s):
    """Sender and receiver capture of a connection: from the schedule's src/dst when the flow id is known,
    else the capture that saw the connection first is the sender's."""
    seen = {h: c[key] for h, c in caps.items() if key in c}
    if s and s["src"] in seen:
        return Captures(s["src"], seen[s["src"]], s["dst"], seen.get(s["dst"], []))
    order = sorted(seen, key=lambda h: seen[h][0].t)
    rh = order[1] if len(order) > 1 else ""
    return Captures(order[0], seen[order[0]], rh, seen.get(rh, []))


def flow_row(key, caps, sched, profile, mss, window):
    """The row of the connection `key`, joined to its schedule row through the flow header it carries."""
    fid = size = None
    for c in caps.values():
        if key in c:
            fid, size = flow_header(c[key], key)
            if fid is not None:
                break
    s = sched.get(fid) if fid is not None else None
    ends = pick_captures(key, caps, s)
    snd = sender_side(ends.sender_packets, key, profile)
    size_bytes = int(s["size_bytes"]) if s else size
    rcv = receiver_side(ends.receiver_packets, key, snd["isn"], size_bytes)
    complete = rcv["done_t"] is not None and snd["syn_t"] is not None
    lat = rcv["done_t"] - snd["syn_t"] if complete else ""
    synacks = sum(1 for p in ends.receiver_packets if p.src == key[2] and p.flags & SYN and p.flags & ACK)
    r = dict.fromkeys(FLOW_COLS, "")
    r.update(flow_id=fid if fid is not None else "", src=ends.sender, dst=ends.receiver, warmup=0, in_window=0,
             size_bytes=size_bytes if size_bytes is not None else "",
             L=-(-size_bytes // mss) if size_bytes else "")
    if s:
        r.update(scheduled_facts(s, window))
    r.update(src_ip=key[0], sport=key[1], dst_ip=key[2], dport=key[3], syn_t=snd["syn_t"],
             done_t=rcv["done_t"] if complete else "", latency_s=lat, complete=int(complete), seen=1,
             in_metrics=int(complete and r["in_window"] == 1 and s is not None),
             syn_retrans=snd["syn_retrans"],
             synack_retrans=max(synacks - 1, 0) if ends.receiver in caps else "",
             data_pkts=snd["data_pkts"], R=snd["retrans"], RTO=snd["rto"] + snd["syn_retrans"], rto_data=snd["rto"],
             FR=snd["fr"], TLP=snd["tlp"], other_rec=snd["other_rec"], spurious=rcv["dup_arrivals"],
             goodput_bps=8 * size_bytes / lat if complete and lat > 0 and size_bytes else "")
    return r


def flow_rows(caps, sched, servers, profile, mss, window):
    """(rows, persistent_conns): a row per connection the captures saw, then one per scheduled flow none
    of them has. The persistent flows' iperf3 connections (to or from `servers`) are not the schedule's
    flows: their throughput comes from iperf3's own report (persistent.csv), so they stay out and are
    only counted."""
    keys = {k for conns in caps.values() for k in conns}
    n_keys = len(keys)
    keys = {k for k in keys if (k[2], k[3]) not in servers and (k[0], k[1]) not in servers}
    flows = [flow_row(k, caps, sched, profile, mss, window) for k in sorted(keys, key=str)]
    joined = {f["flow_id"] for f in flows}
    flows += [unseen_row(s, window) for flow_id, s in sched.items() if flow_id not in joined]
    return flows, n_keys - len(keys)


def add_path_rtt(flows, hosts):
    """The path's configured RTT (hosts.json, as the runner built the topology): F5's RTT classes."""
    paths = hosts.get("paths_rtt_ms", {})
    for f in flows:
        f["path_rtt_ms"] = paths.get(f"{f['src']}-{f['dst']}", paths.get(f"{f['dst']}-{f['src']}", ""))
