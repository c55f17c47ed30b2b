"""packets.csv.gz and the bottleneck columns of flows.csv: every forward packet captured on the way into the
bottleneck (bneck-in.pcap) matched to its copy on the way out (bneck-out.pcap), so each one was either
dropped at the bottleneck or left it after a known queueing delay.
"""
import csv
import gzip
import io
import os
from collections import defaultdict
from dataclasses import dataclass

from analysis.pcapread import read_pcap, SYN, ACK
from analysis.tables.connections import connection_at

PACKET_COLS = ["t_in", "t_out", "qdelay_s", "src", "sport", "dst", "dport", "seq", "ipid", "len", "dropped"]


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


def forward_senders(flows, hosts):
    """IP addresses whose packets cross the bottleneck in the forward direction (the AQM's).

    Only the forward direction crosses the bottleneck: the dumbbell's left hosts (a*) send it; an
    interface capture also sees reverse traffic leaving rl, which never passes the AQM. The chain's hop 1
    takes what the hosts of r0's LAN send (the reference user and hop 1's cross senders); the ACKs towards
    them pass both capture points the other way. Empty: every packet counts.
    """
    if hosts.get("kind") == "chain":
        return {h["ip"] for h in hosts.get("hosts", {}).values() if h.get("lan") == 0}
    return {f["src_ip"] for f in flows if f["seen"] and str(f["src"]).startswith("a")} | \
           {f["dst_ip"] for f in flows if f["seen"] and str(f["dst"]).startswith("a")}


def bottleneck_pairs(pdir, flows, hosts):
    """bottleneck()'s pairs of the run's forward packets, or None when the run has no bneck-in and
    bneck-out captures."""
    bin_, bout = os.path.join(pdir, "bneck-in.pcap"), os.path.join(pdir, "bneck-out.pcap")
    if not (os.path.exists(bin_) and os.path.exists(bout)):
        return None
    left = forward_senders(flows, hosts)
    fwd = (lambda p: p.src in left) if left else (lambda p: True)
    return bottleneck(filter(fwd, read_pcap(bin_)), [p for p in read_pcap(bout) if fwd(p)])


@dataclass
class BottleneckCounts:
    """One flow's packets at the bottleneck."""
    entered: int = 0          # captured at bneck-in
    left: int = 0             # matched at bneck-out
    data_drops: int = 0       # data packets (payload > 0) dropped
    qdelay_sum_s: float = 0.0  # queueing delay summed over the packets that left
    syn_drops: int = 0        # SYNs (not SYN-ACKs) dropped


def count_per_flow(pairs, starts):
    """(row -> BottleneckCounts, row -> data flags of its bneck-in packets in order, for favored_data)."""
    counts = defaultdict(BottleneckCounts)
    entered = defaultdict(bytearray)
    for p, t_out in pairs:
        i = connection_at(starts, (p.src, p.sport, p.dst, p.dport), p.t)
        if i is None:
            continue
        c = counts[i]
        c.entered += 1
        entered[i].append(p.plen > 0)
        if t_out is not None:
            c.left += 1
            c.qdelay_sum_s += t_out - p.t
        elif p.plen > 0:
            c.data_drops += 1
        elif p.flags & SYN and not p.flags & ACK:
            c.syn_drops += 1
    return counts, entered


def add_bottleneck_columns(flows, counts):
    for i, r in enumerate(flows):
        c = counts.get(i) if r["seen"] else None
        if c is None:
            continue
        r.update(bneck_in=c.entered, bneck_out=c.left, drops=c.entered - c.left, data_drops=c.data_drops,
                 qdelay_mean_s=c.qdelay_sum_s / c.left if c.left else "", syn_drops_bneck=c.syn_drops)


def write_packets_csv(path, pairs):
    """packets.csv.gz, one row per bneck-in packet. No time in the gzip header: a run extracted again gives
    the same bytes (a bundle's checksums)."""
    with io.TextIOWrapper(gzip.GzipFile(path, "wb", mtime=0), newline="") as f:
        w = csv.writer(f)
        w.writerow(PACKET_COLS)
        for p, t_out in pairs:
            w.writerow([f"{p.t:.6f}", "" if t_out is None else f"{t_out:.6f}",
                        "" if t_out is None else f"{t_out - p.t:.6f}", p.src, p.sport, p.dst, p.dport,
                        p.seq, p.ipid, p.plen, int(t_out is None)])
