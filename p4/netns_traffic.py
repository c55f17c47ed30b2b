"""Crafted packets for the BMv2 bench (p4.netns_bench), run inside one of its network namespaces (scapy).

    send  --iface IF --plan "PAUSE:SPORT:COUNT[,SPORT:COUNT...][;PAUSE:...]"
          batches of UDP 10.1.0.1 -> 10.2.0.1:5001 with 1000-byte payloads whose first 4 bytes are a
          sequence number per flow (continued across batches); each batch is sent back to back, in the
          order given, PAUSE seconds after the previous one was due (one process: scapy's start-up is no
          pause; a fixed timetable: a slow send does not stretch the plan, the next pause shrinks).
          Prints how late the latest batch went out: {"late_max_s": ...}
    sniff --iface IF --out FILE
          every UDP packet seen on IF as JSON lines {"sport", "seq", "t"}, in arrival order; prints
          "ready" once capturing and stops at end of input (the bench closes its stdin).
"""
from __future__ import annotations

import argparse
import json
import struct
import sys
import time


def parse_plan(plan: str) -> list[tuple[float, list[tuple[int, int]]]]:
    batches = []
    for b in plan.split(";"):
        pause, flows = b.split(":", 1)
        batches.append((float(pause), [tuple(map(int, f.split(":"))) for f in flows.split(",")]))
    return batches


def frames(flows: list[tuple[int, int]], seq: dict[int, int]):
    from scapy.all import IP, UDP, Ether, Raw
    out = []
    for sport, count in flows:
        for _ in range(count):
            n = seq.get(sport, 0)
            seq[sport] = n + 1
            out.append(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                       / IP(src="10.1.0.1", dst="10.2.0.1") / UDP(sport=sport, dport=5001)
                       / Raw(struct.pack("!I", n) + bytes(996)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["send", "sniff"])
    ap.add_argument("--iface", required=True)
    ap.add_argument("--plan", default="")
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.mode == "send":
        from scapy.all import conf, sendp
        batches = parse_plan(a.plan)
        seq: dict[int, int] = {}
        built = [(pause, frames(flows, seq)) for pause, flows in batches]
        sock = conf.L2socket(iface=a.iface)
        late_max = 0.0
        try:
            due = time.monotonic()
            for pause, pkts in built:
                due += pause
                time.sleep(max(0.0, due - time.monotonic()))
                late_max = max(late_max, time.monotonic() - due)
                sendp(pkts, socket=sock, verbose=False)
        finally:
            sock.close()
        print(json.dumps({"late_max_s": round(late_max, 4)}), flush=True)
        return 0
    from scapy.all import UDP, AsyncSniffer
    got = []

    def keep(p):
        if UDP in p and p[UDP].dport == 5001:
            payload = bytes(p[UDP].payload)
            got.append({"sport": p[UDP].sport, "seq": struct.unpack("!I", payload[:4])[0], "t": float(p.time)})

    sn = AsyncSniffer(iface=a.iface, prn=keep, store=False, filter="udp")
    sn.start()
    time.sleep(0.5)
    print("ready", flush=True)        # the test waits for this line before sending
    sys.stdin.read()
    sn.stop()
    with open(a.out, "w") as f:
        for g in got:
            f.write(json.dumps(g) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
