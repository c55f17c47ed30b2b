#!/usr/bin/env python3
"""Guest side of qdisc/tests/test_guest.py: crafted packets through one of favorlab's qdiscs (sch_favor,
sch_run2c, sch_las), departure order read back.

    unshare -n python3 crafted.py --spec JSON      (root, in the guest; prints one JSON object)

In a fresh network namespace: a dummy device d0 with htb as root, its default class (rate 1 kbit) holding
favor as its leaf, and a fast class for IPv6 multicast (the kernel's MLD reports for d0's addresses, which
would otherwise reach the qdisc under test at times of their own). A primer packet empties the slow class's
tokens, so the crafted packets that follow all queue up (about 1.5 s of slack); then the class's rate is
raised and the queue drains. An AF_PACKET socket
on d0 sees every packet as it leaves (after the qdisc), in departure order. Each crafted packet
carries its id. Packet kinds: udp4 / udp6 (datagram to port 20000+flow), tcp4 (raw TCP segment,
ports 30000+flow, id in the sequence number), tcp4s (raw TCP segment, ports 31000+flow, with the
sequence number and SYN flag of its 4th element {"seq": n, "syn": bool}, id in the payload),
frag4 (an IPv4 UDP datagram of 2000 bytes, port 21000+flow: 2 fragments, reported as id and -id),
arp (an ARP frame, ethertype 0x0806). A udp4 packet's 4th element {"len": n} sets its UDP payload
size (at least 4 bytes; default 64).
Spec: {"qdisc": "favor" (default) | "run2c" | "las", "qdisc_args": [...], "limit": N, "nopushout": bool,
"packets": [[id, kind, flow(, extra)], ...], "change_limit": M|null, "trace": path|null}.
Output: {"order": [ids...], "qdisc": {...}, "qdisc_backlogged": {...}, ...}.
Standard library only.
"""
import argparse
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time

from gutil import sh

DEV = "d0"
SRC4, DST4 = "10.9.0.1", "10.9.0.2"
SRC6, DST6 = "fd09::1", "fd09::2"
HERE = os.path.dirname(os.path.abspath(__file__))
TRACER = os.environ.get("FAVOR_TRACE", os.path.join(HERE, "..", "..", "tools", "favor_trace.py"))


def setup(spec):
    kind = spec.get("qdisc", "favor")
    args = ["limit", str(spec["limit"])] + [str(a) for a in spec.get("qdisc_args", [])]
    if kind == "favor":
        args += ["buckets", "1048576", *(["nopushout"] if spec.get("nopushout") else []),
                 *(["favored_burst", str(spec["favored_burst"])] if spec.get("favored_burst") else [])]
    # no IPv6 router solicitations in this namespace; MLD reports take a class of their own (below)
    for k in ("accept_ra", "router_solicitations"):
        with open(f"/proc/sys/net/ipv6/conf/default/{k}", "w") as f:
            f.write("0\n")
    sh("ip", "link", "add", DEV, "type", "dummy")
    sh("ip", "addr", "add", f"{SRC4}/24", "dev", DEV)
    sh("ip", "-6", "addr", "add", f"{SRC6}/64", "dev", DEV, "nodad")
    sh("tc", "qdisc", "add", "dev", DEV, "root", "handle", "1:", "htb", "default", "1")
    sh("tc", "class", "add", "dev", DEV, "parent", "1:", "classid", "1:1", "htb", "rate", "1kbit",
       "burst", "1", "cburst", "1")   # no slack: after the primer the class owes ~1.5 s
    sh("tc", "qdisc", "add", "dev", DEV, "parent", "1:1", "handle", "10:", kind, *args)
    # the unsolicited MLD reports (to ff02::16, or to the group in MLDv1) go out within about 2 s of the link
    # coming up: through a class of their own, so they need no wait and never count in the qdisc under test
    sh("tc", "class", "add", "dev", DEV, "parent", "1:", "classid", "1:2", "htb", "rate", "1gbit")
    sh("tc", "filter", "add", "dev", DEV, "parent", "1:", "protocol", "ipv6", "prio", "1", "u32",
       "match", "ip6", "dst", "ff00::/8", "flowid", "1:2")
    sh("ip", "link", "set", DEV, "up")


def sender():
    s4 = {}
    u6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    raw_tcp = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
    pkt = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    pkt.bind((DEV, 0))
    mac = pkt.getsockname()[4].hex()     # /sys shows the outer namespace

    def send(pid, kind, flow, extra=None):
        extra = extra or {}
        body = struct.pack("!I", pid) + b"F" * (extra.get("len", 64) - 4)
        if kind == "udp4":
            if flow not in s4:
                s4[flow] = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s4[flow].sendto(body, (DST4, 20000 + flow))
        elif kind == "udp6":
            u6.sendto(body, (DST6, 20000 + flow))
        elif kind == "tcp4":
            hdr = struct.pack("!HHIIBBHHH", 30000 + flow, 30000 + flow, pid, 0, 5 << 4, 0x10, 65535, 0, 0)
            raw_tcp.sendto(hdr + b"T" * 60, (DST4, 0))
        elif kind == "tcp4s":
            flags = 0x02 if extra.get("syn") else 0x10          # SYN, or ACK
            hdr = struct.pack("!HHIIBBHHH", 31000 + flow, 31000 + flow, extra["seq"] % 2**32, 0, 5 << 4, flags,
                              65535, 0, 0)
            raw_tcp.sendto(hdr + struct.pack("!I", pid) + b"T" * 60, (DST4, 0))
        elif kind == "frag4":
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.IPPROTO_IP, 10, 0)       # IP_MTU_DISCOVER = IP_PMTUDISC_DONT: fragment
            s.sendto(struct.pack("!I", pid) + b"G" * 1996, (DST4, 21000 + flow))
            s.close()
        elif kind == "arp":
            eth = bytes.fromhex("ffffffffffff") + bytes.fromhex(mac) + b"\x08\x06"
            arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + b"\0" * 20 + struct.pack("!I", pid)
            pkt.send(eth + arp)
        else:
            raise ValueError(kind)
    return send


def packet_id(frame):
    """id carried by a departed frame, or None (primer, IPv6 ND...)."""
    et = struct.unpack("!H", frame[12:14])[0]
    p = frame[14:]
    if et == 0x0806:
        return ("arp", struct.unpack("!I", p[28:32])[0]) if len(p) >= 32 else None
    if et == 0x0800:
        ihl = (p[0] & 15) * 4
        proto, frag = p[9], struct.unpack("!H", p[6:8])[0]
        off = (frag & 0x1fff) * 8
        if frag & 0x3fff:           # a fragment: id in the first fragment's payload, after UDP header
            ipid = struct.unpack("!H", p[4:6])[0]
            return ("frag", struct.unpack("!I", p[ihl + 8: ihl + 12])[0], ipid) if off == 0 else ("frag-tail", ipid)
        l4 = p[ihl:]
        if proto == 17 and struct.unpack("!H", l4[2:4])[0] >= 20000:
            return ("udp", struct.unpack("!I", l4[8:12])[0])
        if proto == 6 and struct.unpack("!H", l4[0:2])[0] >= 31000:      # tcp4s: id in the payload
            return ("tcp", struct.unpack("!I", l4[20:24])[0])
        if proto == 6:
            return ("tcp", struct.unpack("!I", l4[4:8])[0])
    if et == 0x86dd and p[6] == 17:
        l4 = p[40:]
        if struct.unpack("!H", l4[2:4])[0] >= 20000:
            return ("udp", struct.unpack("!I", l4[8:12])[0])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True)
    a = ap.parse_args()
    spec = json.loads(a.spec)
    tracer = None
    if spec.get("trace"):
        # started first: its own start (a Python, the trace instance) takes as long as the set-up beside it;
        # it records d0's events only, and none come before the crafted packets (the primer's aside)
        tracer = subprocess.Popen([sys.executable, TRACER, "--out", spec["trace"], "--dev", DEV],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        print(json.dumps(crafted(spec, tracer)))
    finally:
        if tracer and tracer.poll() is None:
            tracer.send_signal(signal.SIGINT)
            tracer.wait(timeout=30)


def crafted(spec, tracer):
    kind = spec.get("qdisc", "favor")
    setup(spec)
    sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))   # ETH_P_ALL
    sniff.bind((DEV, 0))
    sniff.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    trace_options = None
    if tracer:
        tracer.stdout.readline()                     # "recording ..." once enabled
        # its instance's options while it records: task names must not be recorded (favor_trace.record_cmd_off)
        with open(f"/sys/kernel/tracing/instances/favorlab-{tracer.pid}/trace_options") as f:
            trace_options = f.read().split()
    send = sender()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"P" * 150, (DST4, 9999))             # leaves at once; the class then owes ~1.5 s (192 B at 1 kbit)
    time.sleep(0.05)
    t0 = time.monotonic()
    for pid, pkind, flow, *extra in spec["packets"]:
        try:
            send(pid, pkind, flow, *extra)
        except OSError as e:                         # ENOBUFS: the qdisc dropped it (raw/packet sockets say so)
            if e.errno != 105:
                raise
    elapsed = time.monotonic() - t0
    if spec.get("change_limit"):
        sh("tc", "qdisc", "change", "dev", DEV, "parent", "1:1", "handle", "10:", kind,
           "limit", str(spec["change_limit"]))
    xs_full = json.loads(sh("tc", "-s", "-j", "qdisc", "show", "dev", DEV))
    htb_full = json.loads(sh("tc", "-s", "-j", "qdisc", "show", "dev", DEV, "root"))
    sh("tc", "class", "change", "dev", DEV, "parent", "1:", "classid", "1:1", "htb", "rate", "1gbit",
       "burst", "100k", "cburst", "100k")
    # htb's watchdog fires when the primer's debt is paid (~1.5 s), then the queue drains
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        time.sleep(0.2)
        if [q for q in json.loads(sh("tc", "-s", "-j", "qdisc", "show", "dev", DEV)) if q.get("kind") == kind][0]["qlen"] == 0:
            break
    order, frag_ids = [], {}
    sniff.setblocking(False)
    while True:
        try:
            frame, addr = sniff.recvfrom(65535)
        except BlockingIOError:
            break
        if addr[2] != socket.PACKET_OUTGOING:
            continue
        got = packet_id(frame)
        if got and got[0] == "frag":
            frag_ids[got[2]] = got[1]
        if got and got[0] == "frag-tail":      # the second fragment of a frag4 packet: id -pid
            order.append(-frag_ids[got[1]] if got[1] in frag_ids else f"tail-of-ipid-{got[1]}")
        elif got:
            order.append(got[1])
    if tracer:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=30)
    qd = json.loads(sh("tc", "-s", "-j", "qdisc", "show", "dev", DEV))
    fav = [q for q in qd if q.get("kind") == kind][0]
    fav_before = [q for q in xs_full if q.get("kind") == kind][0]
    return {"order": order, "qdisc": fav, "qdisc_backlogged": fav_before,
            "htb_backlogged": [q for q in htb_full if q.get("kind") == "htb"][0],
            "send_s": elapsed, "trace_options": trace_options}


if __name__ == "__main__":
    main()
