"""flows.csv of an HTTP run (run.json's workload.http): one row per TCP connection wrk opened, i.e. per
object, since every request is sent with `Connection: close` and nginx keeps no connection alive.

So an object is a flow as in the paper: the data sender is nginx (the left host), the connection's SYN is
wrk's (the right host). The connection is turned around from how analysis.tcp keys it (by the SYN's
sender) so that the sender-side columns (retransmissions, recovery, bottleneck and favor columns) are the
server's. A flow starts at its SYN (start_s from the run's t0: a closed loop has no scheduled start), ends
when its last response byte (before nginx's FIN) reaches wrk's host, and its size L is the object's, read
from the request line (`GET /obj/<L>.bin`). Objects a wrk never asked for have no row: there are no unseen
scheduled flows in a closed loop (a connection that never carried a request has no object: wrk's idle ones
are left out, any other is kept, unfinished, outside the window's offered load), and no flow of one run
is the same flow in another (flow_id_base).
"""
import re
import zlib

from analysis.pcapread import ACK, FIN, SYN
from analysis.tables.flows import FLOW_COLS
from analysis.tcp import sender_side, receiver_side

REQUEST = re.compile(rb"^GET /obj/(\d+)")


def object_pkts(pkts, client_ip):
    """L of the object the connection's request names (the first 16 payload bytes wrk sent), or None."""
    for p in pkts:
        if p.src == client_ip and p.hdr16 is not None:
            m = REQUEST.match(p.hdr16)
            if m:
                return int(m.group(1))
    return None


def idle(pkts, client_ip):
    """A connection wrk opened and closed without a request (one per path as it starts, and the last as it
    stops): the handshake done, the client's FIN, no payload either way. No object, so no flow."""
    est = any(p.src != client_ip and p.flags & SYN and p.flags & ACK for p in pkts)
    fin = any(p.src == client_ip and p.flags & FIN for p in pkts)
    return est and fin and not any(p.plen > 0 for p in pkts)


def flow_id_base(aqm: str) -> int:
    """The first flow id of a run of this AQM: its connections are numbered from it. The figures and claims
    pair two AQMs' flows by flow id (pair_flows, verdict_pairing.R), which a replay's schedule makes the same
    flow; a closed loop's n-th connection under DropTail and under FaQ are unrelated, and the runs a pairing
    meets differ only by AQM, so each AQM gets ids of its own: 2**20 of them, from a hash of its name (a run
    carries no other index of its AQM; analysis/tests/test_httpflows.py holds config/aqms.yaml's names
    apart), below 2**31 so that R reads them as integers."""
    return (zlib.crc32(aqm.encode()) % 2047 + 1) << 20


def http_flow_rows(caps, hosts, port, t0, profile, mss, window, aqm):
    """A row per connection to a left host's server port seen in the captures (host -> {key: packets})."""
    by_ip = {h["ip"]: name for name, h in hosts.items()}
    keys = sorted({k for conns in caps.values() for k in conns if k[3] == port and k[2] in by_ip},
                  key=lambda k: min(c[k][0].t for c in caps.values() if k in c))
    rows, base = [], flow_id_base(aqm)
    if len(keys) >= 1 << 20:
        # more would run into another AQM's ids
        raise ValueError(f"{len(keys)} HTTP connections in one run: more than the {1 << 20} ids an AQM has")
    for i, key in enumerate(keys):
        cli, srv = by_ip.get(key[0], ""), by_ip[key[2]]
        cli_pkts, srv_pkts = caps.get(cli, {}).get(key, []), caps.get(srv, {}).get(key, [])
        turned = (key[2], key[3], key[0], key[1])
        snd = sender_side(srv_pkts, turned, profile) if srv_pkts else None
        syns = [p for p in (cli_pkts or srv_pkts) if p.src == key[0] and p.flags & SYN and not p.flags & ACK]
        synacks = [p for p in cli_pkts if p.src == key[2] and p.flags & SYN and p.flags & ACK]
        syn_t = syns[0].t if syns else None
        rcv = receiver_side(cli_pkts, turned, None, None)
        complete = syn_t is not None and rcv["done_t"] is not None
        L = object_pkts(cli_pkts or srv_pkts, key[0])
        if L is None and idle(cli_pkts or srv_pkts, key[0]):
            continue
        start = syn_t - t0 if syn_t is not None else None
        # a connection whose request was never seen has no known object: not part of the offered load
        in_window = int(start is not None and window[0] <= start < window[1] and L is not None)
        lat = rcv["done_t"] - syn_t if complete else ""
        size = L * mss if L else 0
        r = dict.fromkeys(FLOW_COLS, "")
        r.update(flow_id=base + i, src=srv, dst=cli, direction="forward", src_ip=key[2], sport=key[3], dst_ip=key[0],
                 dport=key[1], start_s=round(start, 6) if start is not None else "", size_bytes=size,
                 L=L or "", syn_t=syn_t, done_t=rcv["done_t"] if complete else "", latency_s=lat,
                 complete=int(complete), seen=1, warmup=int(start is not None and start < window[0]),
                 in_window=in_window, in_metrics=int(complete and in_window and L is not None),
                 syn_retrans=max(len(syns) - 1, 0), synack_retrans=max(len(synacks) - 1, 0) if cli_pkts else "",
                 spurious=rcv["dup_arrivals"], goodput_bps=8 * size / lat if complete and lat > 0 and size else "")
        if snd:
            r.update(data_pkts=snd["data_pkts"], R=snd["retrans"], RTO=snd["rto"] + r["syn_retrans"],
                     rto_data=snd["rto"], FR=snd["fr"], TLP=snd["tlp"], other_rec=snd["other_rec"])
        rows.append(r)
    return rows
