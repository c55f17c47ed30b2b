"""TCP connections read out of one capture: packets grouped into connections, each flow's header, and what
the sender and the receiver saw of it (the facts of a flows.csv row; analysis/tables/flows.py assembles it).

A flow is one TCP connection, keyed by the 5-tuple oriented from the data sender (the host that sent the
SYN). flow_id is read from the first 16 payload bytes (u64 flow id, u64 size).
"""
import struct

from analysis.pcapread import SYN, ACK, FIN

U32 = 1 << 32
MIN_RTO_S = 0.2          # Linux TCP_RTO_MIN: no RTO can fire after a shorter silence


def sdiff(a, b):
    """a - b in TCP sequence space (signed, wraps at 2**32)."""
    d = (a - b) % U32
    return d - U32 if d >= U32 // 2 else d


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
