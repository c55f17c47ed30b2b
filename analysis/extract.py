"""Run directory -> tidy tables (flows.csv, run.csv, persistent.csv, packets.csv.gz).

    python -m analysis.extract --run RUNDIR --out TABLEDIR

Definitions (see README.md): a flow is one TCP connection, keyed by the 5-tuple oriented from the data
sender (the host that sent the SYN). flow_id is read from the first 16 payload bytes (u64 flow id, u64 size).
"""
import argparse
import bisect
import csv
import gzip
import io
import json
import os
import re
import struct
import sys
from array import array
from collections import Counter, defaultdict

from analysis.pcapread import read_pcap, SYN, ACK, FIN, RST

U32 = 1 << 32
MIN_RTO_S = 0.2          # Linux TCP_RTO_MIN: no RTO can fire after a shorter silence
FAVOR_COLS = ["t", "dev", "verdict", "src", "dst", "sport", "dport", "proto", "qlen"]  # qdisc/tools/favor_trace.py
VERDICTS = ["favored", "standard", "pushout_victim", "drop_favored", "drop_standard"]


def sdiff(a, b):
    """a - b in TCP sequence space (signed, wraps at 2**32)."""
    d = (a - b) % U32
    return d - U32 if d >= U32 // 2 else d


def load_json(path, default=None):
    if not os.path.exists(path):
        return default
    with open(path) as f:
        return json.load(f)


def in_run(rundir, name, what):
    """rundir/name for a file name a run's own JSON gives (run.json's schedule): a run
    directory may come from someone else's results bundle, so a name that leads out of it (absolute, '..',
    a symlink) is refused, never opened."""
    if not isinstance(name, str) or not name or os.path.isabs(name) or "\\" in name or \
            ".." in name.replace("\\", "/").split("/"):
        raise ValueError(f"{rundir}: {what} {name!r} is not a file name inside the run directory; "
                         f"fix: name a file of the run directory (e.g. schedule.csv)")
    path = os.path.join(rundir, name)
    real, root = os.path.realpath(path), os.path.realpath(rundir)
    if os.path.commonpath([real, root]) != root:
        raise ValueError(f"{rundir}: {what} {name!r} leads outside the run directory; fix: name a file of the "
                         f"run directory (e.g. schedule.csv)")
    return path


HOST_NAME = re.compile(r"[A-Za-z0-9_-]+")


def read_schedule(path):
    """flow_id -> row dict (comment lines starting with # are skipped)."""
    with open(path) as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        need = {"flow_id", "start_s", "size_bytes", "size_pkts", "src", "dst"}
        if not need <= set(rows.fieldnames or []):
            raise ValueError(f"{path}: schedule lacks columns {sorted(need - set(rows.fieldnames or []))}")
        return {int(r["flow_id"]): r for r in rows}


def group_connections(pkts):
    """Split packets into connections, key = (sender ip, sport, receiver ip, dport, isn), oriented by the SYN.

    The sender's ISN tells apart two connections that reuse the same 4-tuple (ports recycled after
    TIME_WAIT in long runs); it is the same in the sender's and the receiver's capture. isn is None when
    the capture missed the SYN.
    """
    conns = {}
    orient = {}   # (src, sport, dst, dport) of either direction -> the sender-oriented 4-tuple
    cur = {}      # sender-oriented 4-tuple -> (isn, its packet list): no key tuple built per packet
    for p in pkts:
        k = (p.src, p.sport, p.dst, p.dport)
        k4 = orient.get(k)
        if k4 is None:
            flags = p.flags
            if flags & SYN and flags & ACK:
                k4 = (p.dst, p.dport, p.src, p.sport)
            elif flags & SYN or p.plen > 0:
                k4 = k
            else:
                continue
            orient[k] = orient[(k[2], k[3], k[0], k[1])] = k4
        c = cur.get(k4)
        if p.flags & SYN and not p.flags & ACK and p.src == k4[0] and (c is None or c[0] != p.seq):
            c = None
            isn = p.seq
        elif c is None:
            isn = None
        if c is None:
            key = k4 + (isn,)
            lst = conns.get(key)
            if lst is None:
                lst = conns[key] = []
            c = cur[k4] = (isn, lst)
        c[1].append(p)
    return conns


def flow_header(pkts, key):
    """(flow_id, size) from the first data segment's 16-byte header, or (None, None)."""
    isn = next((p.seq for p in pkts if p.src == key[0] and p.flags & SYN), None)
    for p in pkts:
        if p.src == key[0] and p.plen >= 16 and p.hdr16 is not None:
            if isn is None or sdiff(p.seq, isn) == 1:
                return struct.unpack("!QQ", p.hdr16)
    return None, None


def sender_side(pkts, key, profile):
    """Per-flow sender state machine on the sender-side capture.

    Returns syn time, SYN retransmissions, data segments sent, retransmissions and recovery episodes by class.
    A retransmission is a data segment starting below snd_max. It opens a recovery episode when none is open:
      fr  : >= 3 duplicate ACKs (or a SACK block above snd_una) since the last new ACK;
      tlp : linux profile, no dupacks, no probe outstanding, the highest segment re-sent (end == snd_max).
            Linux 6.1 tcp_schedule_loss_probe (net/ipv4/tcp_output.c): with SACK, tcp_early_retrans 3|4,
            packets out and ca_state Open|CWR it arms the probe timer INSTEAD of the RTO, timeout
            2*srtt (+ TCP_RTO_MIN when 1 packet is out, + TCP_TIMEOUT_MIN otherwise), capped at the RTO
            deadline (tcp_rto_delta_us); so in that state the first timeout is always a probe, whatever
            the silence, and tcp_send_loss_probe re-sends the tail skb (or new data, if any is allowed);
            it sends no second probe while tlp_high_seq is set, it re-arms the RTO instead;
      rto : otherwise, the head (snd_una) re-sent >= MIN_RTO_S (TCP_RTO_MIN) after the RTO timer was
            last armed: on sending when nothing was outstanding (tcp_event_new_data_sent), on an ACK of
            new data (tcp_ack -> tcp_set_xmit_timer -> tcp_rearm_rto), on re-sending the head
            (tcp_xmit_retransmit_queue, tcp_retransmit_timer) and after a probe (tcp_send_loss_probe);
      other: anything else (e.g. RACK's reordering-window retransmission).
    A TLP opens no episode (recovery, if any, follows as FR or RTO). An episode closes when snd_una
    reaches the snd_max recorded when it opened; inside it, a retransmission of snd_una >= MIN_RTO_S after
    the timer was armed is a further RTO (backoff). A TLP that sends new data is not a retransmission and
    is not counted (a capture cannot tell it from an application write).
    """
    snd, rcv = key[0], key[2]
    syns = [p for p in pkts if p.src == snd and p.flags & SYN and not p.flags & ACK]
    out = dict(syn_t=syns[0].t if syns else None, syn_retrans=max(len(syns) - 1, 0),
               data_pkts=0, retrans=0, rto=0, fr=0, tlp=0, other_rec=0, first_t=pkts[0].t)
    isn = syns[0].seq if syns else None
    linux = profile == "linux"
    snd_max = snd_una = last_win = None
    dupacks, sack_loss = 0, False
    armed = None         # when Linux last (re)armed the RTO timer: see _rearm
    tlp_high = None      # snd_max when the outstanding loss probe was sent (Linux tp->tlp_high_seq)
    episode_end = None   # snd_max when the open recovery episode started
    for t, src, _, _, _, flags, seq, ack, _, plen, win, sack, _ in pkts:
        if src == snd:
            if plen <= 0:
                continue
            if isn is None:
                isn = (seq - 1) % U32
            end = (seq + plen) % U32
            out["data_pkts"] += 1
            if snd_max is None:
                snd_max, snd_una, armed = end, (isn + 1) % U32, t
                continue
            if sdiff(seq, snd_max) >= 0:            # new data
                if snd_una == snd_max:
                    armed = t                       # nothing was outstanding: tcp_event_new_data_sent arms it
                snd_max = end
                continue
            out["retrans"] += 1
            head = seq == snd_una
            timed_out = head and t - armed >= MIN_RTO_S
            if episode_end is None:
                if dupacks >= 3 or sack_loss:
                    cls = "fr"
                elif linux and dupacks == 0 and tlp_high is None and end == snd_max:
                    cls = "tlp"
                elif timed_out:
                    cls = "rto"
                else:
                    cls = "other_rec"
            else:
                cls = "rto" if timed_out else None   # backoff inside the episode, else a follow-up
            if cls:
                out[cls] += 1
            if cls == "tlp":
                tlp_high = snd_max   # tcp_send_loss_probe ends with tcp_rearm_rto: armed below
            elif cls:
                episode_end = snd_max
            if cls == "rto":
                tlp_high = None      # an RTO ends any probe (tcp_retransmit_timer clears tlp_high_seq)
            if head or cls == "tlp":
                armed = t   # re-sending the head re-arms the RTO (tcp_xmit_retransmit_queue, tcp_retransmit_timer)
            if sdiff(end, snd_max) > 0:
                snd_max = end
        elif src == rcv and flags & ACK and snd_una is not None:
            if sdiff(ack, snd_una) > 0:
                snd_una, dupacks, sack_loss = ack, 0, False
                if episode_end is not None and sdiff(snd_una, episode_end) >= 0:
                    episode_end = None
                if tlp_high is not None and sdiff(snd_una, tlp_high) >= 0:
                    tlp_high = None
                armed = t       # new data ACKed: tcp_ack -> tcp_set_xmit_timer re-arms (if data outstanding)
            elif (ack == snd_una and plen == 0 and win == last_win and not flags & (SYN | FIN)
                  and sdiff(snd_max, snd_una) > 0):
                # RFC 5681 duplicate ACK; Linux likewise: a changed window sets FLAG_WIN_UPDATE, which is in
                # FLAG_NOT_DUP, so tcp_ack does not count the ACK as a dupack
                dupacks += 1
            if sack and not sack_loss:
                # a SACK block above snd_una marks a hole whatever the window (tcp_sacktag_write_queue runs
                # on every ACK; Linux receivers grow the window on the very ACKs that carry the SACKs)
                sack_loss = any(sdiff(l, snd_una) > 0 for l, r in sack)
            if not flags & SYN:
                last_win = win  # a SYN-ACK's window is not scaled: not comparable
    out["isn"] = isn
    return out


def receiver_side(pkts, key, isn, data_bytes):
    """Arrival facts at the receiver capture: time the last missing data byte arrived, duplicates, FIN."""
    snd = key[0]
    if isn is None:
        syn = next((p for p in pkts if p.src == snd and p.flags & SYN), None)
        isn = syn.seq if syn else None
    fin_seq = next((p.seq + p.plen for p in pkts if p.src == snd and p.flags & FIN), None)
    if isn is None:
        return dict(done_t=None, rcv_bytes=0, dup_arrivals=0, last_arrival_t=None)
    end = data_bytes if data_bytes is not None else (sdiff(fin_seq, isn) - 1 if fin_seq is not None else None)
    have = []  # received byte intervals (relative), merged
    rcv_nxt, done_t, dups, last_t = 0, None, 0, None
    for p in pkts:
        if p.src != snd or p.plen <= 0:
            continue
        lo = sdiff(p.seq, isn) - 1
        hi = lo + p.plen
        last_t = p.t
        if hi <= rcv_nxt or any(a <= lo and hi <= b for a, b in have):
            dups += 1
            continue
        have.append((lo, hi))
        have.sort()
        merged = []
        for a, b in have:
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        have = merged
        if have[0][0] <= 0:
            rcv_nxt = max(rcv_nxt, have[0][1])
        if done_t is None and end is not None and rcv_nxt >= end:
            done_t = p.t
    return dict(done_t=done_t, rcv_bytes=rcv_nxt, dup_arrivals=dups, last_arrival_t=last_t)


def bottleneck(in_pkts, out_pkts):
    """Match bneck-in to bneck-out packets by (5-tuple, seq, ip id, flags).

    Each out packet takes the latest unmatched in packet with the same key that arrived before it, so a
    retransmitted SYN (same seq, often IP id 0) pairs with its own copy, not the dropped one.
    Returns [(in packet, t_out or None)] in bneck-in order; None means dropped at the bottleneck.
    """
    ins = list(in_pkts)
    by_key = defaultdict(list)
    for i, p in enumerate(ins):
        by_key[(p.src, p.sport, p.dst, p.dport, p.seq, p.ipid, p.flags)].append(i)
    t_out = [None] * len(ins)
    for q in sorted(out_pkts, key=lambda q: q.t):
        cand = by_key.get((q.src, q.sport, q.dst, q.dport, q.seq, q.ipid, q.flags))
        if not cand:
            continue
        best = None
        for j in cand:
            if ins[j].t <= q.t and t_out[j] is None:
                best = j
            elif ins[j].t > q.t:
                break
        if best is not None:
            t_out[best] = q.t
    return list(zip(ins, t_out))


def read_favor_trace(path, enqueues=None):
    """Counts of verdicts per (src, dst, sport, dport); tolerant of extra/missing columns.

    A dict passed as `enqueues` also gets, per (src, dst, sport, dport), the arrival verdicts in trace
    order as (times, favored flags): every verdict but pushout_victim, which is about a packet already
    queued, so there is one per packet that entered the qdisc. The recorder writes trace_pipe's output,
    which tracefs merges across CPUs in timestamp order, so file order is time order.
    """
    counts = defaultdict(Counter)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        rd = csv.DictReader(line for line in f if not line.startswith("#"))
        need = {"t", "verdict", "src", "dst", "sport", "dport"}
        if not need <= set(rd.fieldnames or []):
            raise ValueError(f"{path}: favor trace lacks columns {sorted(need - set(rd.fieldnames or []))}")
        for r in rd:
            if r.get("proto", "6") not in ("6", "tcp", "TCP"):
                continue
            try:
                key, t = (r["src"], r["dst"], int(r["sport"]), int(r["dport"])), float(r["t"])
            except ValueError:
                continue
            v = r["verdict"].strip()
            counts[key][v] += 1
            if enqueues is not None and v != "pushout_victim":
                times, favored = enqueues.setdefault(key, (array("d"), bytearray()))
                times.append(t)
                favored.append(v == "favored")
    return counts


def connection_at(starts, key, t):
    """Row of the connection of 4-tuple `key` whose SYN came last at or before t (the first one before
    any SYN); None when no flow has that 4-tuple. starts: 4-tuple -> (sorted SYN times, rows)."""
    inst = starts.get(key)
    if not inst:
        return None
    return inst[1][max(bisect.bisect_right(inst[0], t) - 1, 0)]


def favored_data(enqueues, starts, entered):
    """Per flow row: favored data packets (Eq. 5's numerator), or None when the alignment is unsafe.

    The trace has no payload length, so the k-th arrival verdict of a flow is paired with its k-th packet
    at bneck-in (captured just before the qdisc, same order). A flow whose two counts differ (a packet
    missing from the capture or the trace) cannot be paired and gets None. entered: row -> data flags
    (payload > 0) of its bneck-in packets, in order.
    """
    verdicts = {}  # row -> favored flags of its arrivals, in order
    for (src, dst, sport, dport), (times, favored) in enqueues.items():
        key = (src, sport, dst, dport)
        inst = starts.get(key)
        if not inst:
            continue
        if len(inst[1]) == 1:  # no reused 4-tuple: the trace clock plays no part
            verdicts[inst[1][0]] = favored
            continue
        for t, fav in zip(times, favored):
            verdicts.setdefault(connection_at(starts, key, t), bytearray()).append(fav)
    out = {}
    for i in set(verdicts) | set(entered):
        fav, data = verdicts.get(i, b""), entered.get(i, b"")
        out[i] = sum(1 for d, f in zip(data, fav) if d and f) if len(fav) == len(data) else None
    return out


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
        d = load_json(os.path.join(ndir, fn), {})
        b, a = _nstat_flat(d.get("before")), _nstat_flat(d.get("after"))
        for k in NSTAT_KEYS:
            tot[k] += int(a.get(k, 0)) - int(b.get(k, 0))
    return tot


def extract(rundir, outdir, write_packets=True):
    if not os.path.exists(os.path.join(rundir, "DONE")):
        raise ValueError(f"{rundir}: no DONE file, not a finished run directory (contracts.md 'Run directory')")
    spec = load_json(os.path.join(rundir, "run.json"))
    if spec is None:
        raise ValueError(f"{rundir}: run.json missing")
    sched = read_schedule(in_run(rundir, spec.get("schedule", "schedule.csv"), "run.json's schedule"))
    fid = load_json(os.path.join(rundir, "fidelity.json"), {"valid": False, "reasons": ["fidelity.json missing"]})
    profile = spec.get("tcp", {}).get("profile", "paper")
    mss = spec.get("topology", {}).get("mtu", 1500) - 40
    window = measurement_window(spec, rundir)
    pdir = os.path.join(rundir, "pcap")
    caps = {}  # host name -> {connection key: packets}
    for fn in sorted(os.listdir(pdir)):
        if fn.startswith("sender-") and fn.endswith(".pcap"):
            caps[fn[7:-5]] = group_connections(read_pcap(os.path.join(pdir, fn)))
    keys = {k for conns in caps.values() for k in conns}
    # the persistent flows' iperf3 connections (scenario persistent) are not the schedule's flows: their
    # throughput comes from iperf3's own report (persistent.csv), and they stay out of flows.csv
    servers = persistent_servers(rundir)
    n_keys = len(keys)
    keys = {k for k in keys if (k[2], k[3]) not in servers and (k[0], k[1]) not in servers}
    persistent_conns = n_keys - len(keys)
    flows = [flow_row(k, caps, sched, profile, mss, window) for k in sorted(keys, key=str)]
    joined = {f["flow_id"] for f in flows}
    flows += [unseen_row(s, window) for flow_id, s in sched.items() if flow_id not in joined]
    # the path's configured RTT (hosts.json, as the runner built the topology): F5's RTT classes
    hostsj = load_json(os.path.join(rundir, "hosts.json"), {}) or {}
    paths = hostsj.get("paths_rtt_ms", {})
    for f in flows:
        f["path_rtt_ms"] = paths.get(f"{f['src']}-{f['dst']}", paths.get(f"{f['dst']}-{f['src']}", ""))
    # 4-tuple -> (sorted SYN times, rows): splits a reused 4-tuple's bottleneck packets and trace events
    starts = defaultdict(list)
    for i, f in enumerate(flows):
        if f["seen"]:
            starts[(f["src_ip"], f["sport"], f["dst_ip"], f["dport"])].append((f["syn_t"] or 0.0, i))
    starts = {k: tuple(map(list, zip(*sorted(v)))) for k, v in starts.items()}
    bpairs, per_flow_b = [], None
    bin_, bout = os.path.join(pdir, "bneck-in.pcap"), os.path.join(pdir, "bneck-out.pcap")
    if os.path.exists(bin_) and os.path.exists(bout):
        # Only the forward direction crosses the bottleneck: keep packets sent by left hosts (a*); an
        # interface capture also sees reverse traffic leaving rl, which never passes the AQM.
        left = {f["src_ip"] for f in flows if f["seen"] and str(f["src"]).startswith("a")} | \
               {f["dst_ip"] for f in flows if f["seen"] and str(f["dst"]).startswith("a")}
        if hostsj.get("kind") == "chain":
            # the chain's hop 1 takes what the hosts of r0's LAN send (the reference user and hop 1's cross
            # senders); the ACKs towards them pass both capture points the other way
            left = {h["ip"] for h in hostsj.get("hosts", {}).values() if h.get("lan") == 0}
        fwd = (lambda p: p.src in left) if left else (lambda p: True)
        bpairs = bottleneck(filter(fwd, read_pcap(bin_)), [p for p in read_pcap(bout) if fwd(p)])
        per_flow_b = defaultdict(lambda: [0, 0, 0, 0.0, 0])  # in, out, data drops, qdelay sum, SYN drops
        entered = defaultdict(bytearray)  # row -> data flags of its bneck-in packets, for the trace pairing
        for p, t_out in bpairs:
            i = connection_at(starts, (p.src, p.sport, p.dst, p.dport), p.t)
            if i is None:
                continue
            s = per_flow_b[i]
            s[0] += 1
            entered[i].append(p.plen > 0)
            if t_out is not None:
                s[1] += 1
                s[3] += t_out - p.t
            elif p.plen > 0:
                s[2] += 1
            elif p.flags & SYN and not p.flags & ACK:
                s[4] += 1
    enqueues = {}
    fav = read_favor_trace(os.path.join(rundir, "qdisc", "favor-trace.csv"), enqueues)
    fav_data = favored_data(enqueues, starts, entered) if fav is not None and per_flow_b is not None else None
    for i, r in enumerate(flows):
        if not r["seen"]:
            continue
        if per_flow_b is not None and i in per_flow_b:
            n_in, n_out, ddrop, qs, syndrop = per_flow_b[i]
            r.update(bneck_in=n_in, bneck_out=n_out, drops=n_in - n_out, data_drops=ddrop,
                     qdelay_mean_s=qs / n_out if n_out else "", syn_drops_bneck=syndrop)
        c = fav.get((r["src_ip"], r["dst_ip"], r["sport"], r["dport"]), Counter()) if fav is not None else None
        for v in VERDICTS:
            r["fav_" + v] = c[v] if c is not None else ""
        if fav_data is not None:
            n = fav_data.get(i, 0)
            r["fav_favored_data"] = "" if n is None else n
    os.makedirs(outdir, exist_ok=True)
    fav_unaligned = "" if fav_data is None else sum(1 for n in fav_data.values() if n is None)
    flows.sort(key=lambda r: (r["flow_id"] if r["flow_id"] != "" else 1 << 62, r["syn_t"] or 0))
    run = run_row(spec, fid, flows, nstat_deltas(rundir), rundir, window, fav_unaligned,
                  bneck=per_flow_b is not None)
    write_csv(os.path.join(outdir, "flows.csv"), flows, FLOW_COLS)
    if write_packets:
        # no time in the gzip header: a run extracted again gives the same bytes (a bundle's checksums)
        with io.TextIOWrapper(gzip.GzipFile(os.path.join(outdir, "packets.csv.gz"), "wb", mtime=0),
                              newline="") as f:
            w = csv.writer(f)
            w.writerow(["t_in", "t_out", "qdelay_s", "src", "sport", "dst", "dport", "seq", "ipid", "len", "dropped"])
            for p, t_out in bpairs:
                w.writerow([f"{p.t:.6f}", "" if t_out is None else f"{t_out:.6f}",
                            "" if t_out is None else f"{t_out - p.t:.6f}", p.src, p.sport, p.dst, p.dport,
                            p.seq, p.ipid, p.plen, int(t_out is None)])
    pers = persistent_rows(rundir, spec)
    run.update(persistent_conns=persistent_conns, persistent_streams=len(pers),
               persistent_share_pct_mean=round(sum(r["share_pct"] for r in pers) / len(pers), 4) if pers else "")
    write_csv(os.path.join(outdir, "persistent.csv"), pers, PERSISTENT_COLS)
    write_csv(os.path.join(outdir, "run.csv"), [run], list(run))
    return flows, run


PERSISTENT_COLS = ["run_id", "src", "dst", "path_rtt_ms", "stream", "start_s", "seconds", "bytes", "mbps",
                   "share_pct", "retransmits"]


def persistent_servers(rundir):
    """(ip, port) of every iperf3 server of the run's persistent flows (persistent/plan.json), or none."""
    plan = load_json(os.path.join(rundir, "persistent", "plan.json"), {}) or {}
    hosts = (load_json(os.path.join(rundir, "hosts.json"), {}) or {}).get("hosts", {})
    return {(hosts[g["dst"]]["ip"], int(g["port"])) for g in plan.get("groups", []) if g["dst"] in hosts}


def persistent_rows(rundir, spec):
    """One row per persistent flow (an iperf3 stream): what it carried from its start to the end of the
    traffic, as iperf3's sender reports it, and its share of the bottleneck in percent (the paper's F16
    unit: 50 flows on 10 Mb/s have about 1.8 % each). A group whose report is missing or broken gives no
    rows; the run's persistent_flows check has already made such a run invalid."""
    plan = load_json(os.path.join(rundir, "persistent", "plan.json"), {}) or {}
    paths = (load_json(os.path.join(rundir, "hosts.json"), {}) or {}).get("paths_rtt_ms", {})
    mbps = float(spec.get("topology", {}).get("bottleneck_mbps") or 0)
    rows = []
    for g in plan.get("groups", []):
        # the iperf3 report's file name is made from plan.json's host names: plain names only
        if not all(isinstance(g.get(k), str) and HOST_NAME.fullmatch(g[k]) for k in ("src", "dst")):
            raise ValueError(f"{rundir}: persistent/plan.json names hosts {g.get('src')!r}, {g.get('dst')!r}; "
                             f"fix: host names of the topology (a1, b2, ...)")
        try:
            raw = load_json(os.path.join(rundir, "persistent", f"iperf3-{g['src']}-{g['dst']}.json"))
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


def pick_captures(key, caps, s):
    """Sender and receiver capture of a connection: from the schedule's src/dst when the flow id is known,
    else the capture that saw the connection first is the sender's."""
    seen = {h: c[key] for h, c in caps.items() if key in c}
    if s and s["src"] in seen:
        return s["src"], seen[s["src"]], s["dst"], seen.get(s["dst"], [])
    order = sorted(seen, key=lambda h: seen[h][0].t)
    rh = order[1] if len(order) > 1 else ""
    return order[0], seen[order[0]], rh, seen.get(rh, [])


def flow_row(key, caps, sched, profile, mss, window):
    fid = size = None
    for c in caps.values():
        if key in c:
            fid, size = flow_header(c[key], key)
            if fid is not None:
                break
    s = sched.get(fid) if fid is not None else None
    shost, pk, rhost, rpk = pick_captures(key, caps, s)
    snd = sender_side(pk, key, profile)
    size_bytes = int(s["size_bytes"]) if s else size
    rcv = receiver_side(rpk, key, snd["isn"], size_bytes)
    complete = rcv["done_t"] is not None and snd["syn_t"] is not None
    lat = rcv["done_t"] - snd["syn_t"] if complete else ""
    synacks = sum(1 for p in rpk if p.src == key[2] and p.flags & SYN and p.flags & ACK)
    r = dict.fromkeys(FLOW_COLS, "")
    r.update(flow_id=fid if fid is not None else "", src=shost, dst=rhost, warmup=0, in_window=0,
             size_bytes=size_bytes if size_bytes is not None else "",
             L=-(-size_bytes // mss) if size_bytes else "")
    if s:
        r.update(scheduled_facts(s, window))
    r.update(src_ip=key[0], sport=key[1], dst_ip=key[2], dport=key[3], syn_t=snd["syn_t"],
             done_t=rcv["done_t"] if complete else "", latency_s=lat, complete=int(complete), seen=1,
             in_metrics=int(complete and r["in_window"] == 1 and s is not None),
             syn_retrans=snd["syn_retrans"], synack_retrans=max(synacks - 1, 0) if rhost in caps else "",
             data_pkts=snd["data_pkts"], R=snd["retrans"], RTO=snd["rto"] + snd["syn_retrans"], rto_data=snd["rto"],
             FR=snd["fr"], TLP=snd["tlp"], other_rec=snd["other_rec"], spurious=rcv["dup_arrivals"],
             goodput_bps=8 * size_bytes / lat if complete and lat > 0 and size_bytes else "")
    return r


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
                flood_x=(spec.get("flood") or {}).get("rate_x", ""))


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
    t0 = (load_json(os.path.join(rundir, "manifest.json"), {}) or {}).get("t0_unix")
    if t0 is not None:
        return float(t0)
    lead = [f["syn_t"] - f["start_s"] for f in flows if f["seen"] and f["syn_t"] not in (None, "") and f["start_s"] != ""]
    return min(lead) if lead else 0.0


def write_csv(path, rows, cols):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


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
