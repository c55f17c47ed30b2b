#!/usr/bin/env python3
"""Guest side of qdisc/tests/test_guest.py's parent tests: one of favorlab's qdiscs as a leaf under other
qdiscs (tbf, hfsc, drr, qfq, ets, htb, mq, nested), flooded with many new flows beside one heavy flow, and
every qdisc of the tree read back once the queue has drained.

    unshare -n python3 parents.py --spec JSON      (root, in the guest; prints one JSON object)

In a fresh network namespace: a device (a dummy d0, or for "mq" a veth pair with 4 transmit queues whose
peer sits in the same namespace) with the spec's tc commands applied in order ("{dev}" stands for the
device). For `seconds` a UDP sender cycles through `flows` sockets (each a new 5-tuple, so favor favors
their packets and pushes out standard ones at a small limit) and one heavy socket; with "change_limit"
the leaf's limit is changed back and forth under the flood; with "gso_size" every socket sends with UDP_SEGMENT
at that size, so a datagram of `size` bytes reaches the qdiscs as one GSO super-packet of size/gso_size
segments. Then it waits until every qdisc is empty
(or 20 s) and prints {"sent": datagrams, "qdiscs": every qdisc's counters (qdiscs()), "drained": bool,
"during": the counters read once as the flood ended, before the drain}.
Standard library only.
"""
import argparse
import json
import os
import re
import socket
import threading
import time

from gutil import sh

SRC, DST = "10.8.0.1", "10.8.0.2"
UDP_SEGMENT = 103       # <linux/udp.h>; Python's socket module has no name for it


def device(kind):
    """The device, still down: the tc tree goes on before it comes up (bring_up), so that no packet (an IPv6
    router solicitation, an MLD report) passes a half-built tree and counts at the root but not at the leaf."""
    if kind == "mq":
        # veth with 4 tx queues: mq's children are one per queue; the peer receives in this namespace
        sh("ip", "link", "add", "v0", "numtxqueues", "4", "numrxqueues", "4", "type", "veth",
           "peer", "name", "v1", "numtxqueues", "4", "numrxqueues", "4")
        sh("ip", "addr", "add", f"{SRC}/24", "dev", "v0")
        return "v0"
    sh("ip", "link", "add", "d0", "type", "dummy")
    sh("ip", "addr", "add", f"{SRC}/24", "dev", "d0")
    return "d0"


def bring_up(dev):
    if dev == "v0":
        sh("ip", "link", "set", "v1", "up")
    sh("ip", "link", "set", dev, "up")
    if dev == "v0":
        sh("ip", "neigh", "add", DST, "lladdr", "02:00:00:00:00:02", "dev", "v0")


def qdiscs(dev):
    """tc -s qdisc show, parsed from its text: iproute2 6.1's JSON output of hfsc is not valid JSON. Per qdisc:
    kind, handle, root, parent, bytes, packets, drops, backlog (bytes), qlen, and every "name number" pair of
    the lines after backlog (a favorlab qdisc's xstats)."""
    out, cur = [], None
    for line in sh("tc", "-s", "qdisc", "show", "dev", dev).splitlines():
        m = re.match(r"qdisc (\S+) (\S+) (root|parent (\S+))", line)
        if m:
            cur = {"kind": m.group(1), "handle": m.group(2), "root": m.group(3) == "root", "parent": m.group(4)}
            out.append(cur)
            continue
        if cur is None:
            continue
        m = re.search(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)", line)
        if m:
            cur.update(bytes=int(m.group(1)), packets=int(m.group(2)), drops=int(m.group(3)), overlimits=int(m.group(4)))
            continue
        m = re.search(r"backlog (\d+)([KMG]?)b (\d+)p", line)
        if m:
            cur.update(backlog=int(m.group(1)) * {"": 1, "K": 1000, "M": 10**6, "G": 10**9}[m.group(2)],
                       qlen=int(m.group(3)), xstats=True)
            continue
        if cur.get("xstats"):
            cur.update({k: int(v) for k, v in re.findall(r"\b([a-z_]+) (\d+)\b", line)})
    return out


def flood(flows, seconds, size, gso_size=None):
    socks = []
    for _ in range(flows + 1):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setblocking(False)
        if gso_size:
            s.setsockopt(socket.IPPROTO_UDP, UDP_SEGMENT, gso_size)
        socks.append(s)
    heavy, new = socks[0], socks[1:]
    payload = b"x" * size
    sent, i = 0, 0
    end = time.time() + seconds
    while time.time() < end:
        for s, port in ((heavy, 7), (new[i % len(new)], 9)):
            try:
                s.sendto(payload, (DST, port))
                sent += 1
            except (BlockingIOError, OSError):
                pass          # the qdisc dropped it (ENOBUFS) or the socket buffer is full
        i += 1
    return sent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True)
    spec = json.loads(ap.parse_args().spec)
    sh("ip", "link", "set", "lo", "up")
    dev = device(spec.get("device", "dummy"))
    for cmd in spec["tc"]:
        sh("tc", *[a.replace("{dev}", dev) for a in cmd])
    bring_up(dev)
    stop = threading.Event()

    def changer():
        a, b = spec["change_limit"]
        n = 0
        while not stop.is_set():
            sh("tc", "qdisc", "change", "dev", dev, *[x.replace("{dev}", dev) for x in spec["leaf"]],
               "limit", str(a if n % 2 else b))
            n += 1
            time.sleep(0.05)

    t = None
    if spec.get("change_limit"):
        t = threading.Thread(target=changer, daemon=True)
        t.start()
    sent = flood(spec.get("flows", 200), spec.get("seconds", 3), spec.get("size", 200), spec.get("gso_size"))
    stop.set()
    if t:
        t.join()
    during = qdiscs(dev)      # as the flood left them, before the queue drains
    deadline = time.time() + 20
    while True:
        q = qdiscs(dev)
        drained = all(x.get("qlen", 0) == 0 and x.get("backlog", 0) == 0 for x in q)
        if drained or time.time() >= deadline:
            break
        time.sleep(0.2)
    print(json.dumps({"sent": sent, "qdiscs": q, "drained": drained, "during": during}))


if __name__ == "__main__":
    main()
