"""Which flows.csv row a bottleneck packet or a favor trace event belongs to. A 4-tuple can carry several
connections in a long run (ports recycled after TIME_WAIT); the one whose SYN came last at or before the
packet is its connection.
"""
import bisect
from collections import defaultdict
from typing import NamedTuple


class ConnectionStarts(NamedTuple):
    """The connections of one 4-tuple: their first SYN times, sorted, and their rows' indices."""
    syn_times: list
    rows: list


def connection_starts(flows):
    """4-tuple -> ConnectionStarts of the seen rows: splits a reused 4-tuple's bottleneck packets and
    trace events between its connections."""
    starts = defaultdict(list)
    for i, f in enumerate(flows):
        if f["seen"]:
            starts[(f["src_ip"], f["sport"], f["dst_ip"], f["dport"])].append((f["syn_t"] or 0.0, i))
    return {k: ConnectionStarts(*map(list, zip(*sorted(v)))) for k, v in starts.items()}


def connection_at(starts, key, t):
    """Row of the connection of 4-tuple `key` whose SYN came last at or before t (the first one before
    any SYN); None when no flow has that 4-tuple."""
    inst = starts.get(key)
    if not inst:
        return None
    return inst.rows[max(bisect.bisect_right(inst.syn_times, t) - 1, 0)]
