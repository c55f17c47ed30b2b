"""The favor trace columns of flows.csv: sch_favor's verdicts per flow (qdisc/favor-trace.txt, recorded unparsed
by qdisc/tools/favor_trace.py --raw and parsed here; qdisc/favor-trace.csv in runs made before), and the favored
data packets, Eq. 5's numerator, found by pairing each flow's arrival verdicts with its packets at bneck-in.
"""
import csv
import os
from array import array
from collections import Counter, defaultdict
from typing import NamedTuple

from analysis.tables.connections import connection_at
from qdisc.tools import favor_trace

FAVOR_COLS = favor_trace.COLUMNS
VERDICTS = favor_trace.VERDICTS


class Arrivals(NamedTuple):
    """A flow's arrival verdicts in trace order: their times and whether each was favored (1) or not (0)."""
    times: array
    favored: bytearray


def read_favor_trace(path, enqueues=None):
    """Counts of verdicts per (src, dst, sport, dport); tolerant of extra/missing columns.

    A dict passed as `enqueues` also gets, per (src, dst, sport, dport), the Arrivals in trace order: every
    verdict but pushout_victim, which is about a packet already queued, so there is one per packet that
    entered the qdisc. The recorder writes trace_pipe's output, which tracefs merges across CPUs in
    timestamp order, so file order is time order.
    """
    counts = defaultdict(Counter)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        raw = f.readline().startswith(favor_trace.RAW_HEADER)
        f.seek(0)
        if raw:
            rd = (dict(zip(FAVOR_COLS, row)) for row in favor_trace.read_raw(path))
        else:
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
                times, favored = enqueues.setdefault(key, Arrivals(array("d"), bytearray()))
                times.append(t)
                favored.append(v == "favored")
    return counts


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
        if len(inst.rows) == 1:  # no reused 4-tuple: the trace clock plays no part
            verdicts[inst.rows[0]] = favored
            continue
        for t, fav in zip(times, favored):
            verdicts.setdefault(connection_at(starts, key, t), bytearray()).append(fav)
    out = {}
    for i in set(verdicts) | set(entered):
        fav, data = verdicts.get(i, b""), entered.get(i, b"")
        out[i] = sum(1 for d, f in zip(data, fav) if d and f) if len(fav) == len(data) else None
    return out


def add_favor_columns(flows, counts, fav_data):
    """fav_<verdict> of every seen row from the trace's counts (empty without a trace), and
    fav_favored_data where the bottleneck captures allowed the pairing (favored_data)."""
    for i, r in enumerate(flows):
        if not r["seen"]:
            continue
        c = counts.get((r["src_ip"], r["dst_ip"], r["sport"], r["dport"]), Counter()) if counts is not None else None
        for v in VERDICTS:
            r["fav_" + v] = c[v] if c is not None else ""
        if fav_data is not None:
            n = fav_data.get(i, 0)
            r["fav_favored_data"] = "" if n is None else n
