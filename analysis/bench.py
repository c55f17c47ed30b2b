"""Extraction speed against tshark on the same file.

    python -m analysis.bench [--packets 200000] [--pcap FILE]

Generates a pcap of --packets TCP packets (unless --pcap is given), reads it with the fast reader
(analysis.pcapread) and with tshark (fields dump), and prints packets per second for both.
"""
import argparse
import os
import shutil
import subprocess
import tempfile
import time

import dpkt

from analysis.tcp import group_connections, sender_side
from analysis.pcapread import read_pcap


def make_pcap(path, n):
    """n packets: 1000-packet flows a->b, data and ACK alternating, 128-byte snaplen."""
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, snaplen=128)
        for i in range(n):
            flow, k = divmod(i, 1000)
            data = k % 2 == 0
            tcp = dpkt.tcp.TCP(sport=10000 + flow % 50000 if data else 5001, dport=5001 if data else 10000 + flow % 50000,
                               seq=1 + k * 1460, ack=1, flags=dpkt.tcp.TH_ACK, data=b"\0" * (1460 if data else 0))
            ip = dpkt.ip.IP(src=b"\x0a\x00\x01\x01" if data else b"\x0a\x00\x02\x01",
                            dst=b"\x0a\x00\x02\x01" if data else b"\x0a\x00\x01\x01", p=6, id=i & 0xFFFF, data=tcp)
            ip.len = len(ip)
            fr = bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, data=ip))
            w.writepkt(fr[:128], ts=i * 1e-4)


def main(argv=None):
    ap = argparse.ArgumentParser(description="extraction speed vs tshark")
    ap.add_argument("--packets", type=int, default=200000)
    ap.add_argument("--pcap")
    a = ap.parse_args(argv)
    tmp = None
    path = a.pcap
    if not path:
        tmp = tempfile.mkdtemp()
        path = os.path.join(tmp, "bench.pcap")
        make_pcap(path, a.packets)
    t = time.perf_counter()
    n = sum(1 for _ in read_pcap(path))
    fast = time.perf_counter() - t
    print(f"fast reader: {n} packets in {fast:.2f} s = {n / fast:,.0f} packets/s")
    t = time.perf_counter()
    conns = group_connections(read_pcap(path))
    for key, pk in conns.items():
        sender_side(pk, key, "paper")
    full = time.perf_counter() - t
    print(f"flow facts : {n} packets in {full:.2f} s = {n / full:,.0f} packets/s (read + group + sender state machine)")
    if shutil.which("tshark"):
        t = time.perf_counter()
        out = subprocess.run(["tshark", "-n", "-r", path, "-T", "fields", "-e", "frame.time_epoch", "-e", "ip.src", "-e",
                              "ip.dst", "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.seq_raw", "-e", "tcp.ack_raw",
                              "-e", "ip.id", "-e", "tcp.len", "-e", "tcp.flags"], capture_output=True, check=True).stdout
        ts = time.perf_counter() - t
        m = out.count(b"\n")
        print(f"tshark     : {m} packets in {ts:.2f} s = {m / ts:,.0f} packets/s  (fast reader {ts / fast:.1f}x, "
              f"full extraction {ts / full:.1f}x)")
    else:
        print("tshark not installed: no comparison (apt-get install tshark)")
    print(f"rerun: python -m analysis.bench --packets {a.packets}" + (f" --pcap {a.pcap}" if a.pcap else ""))
    if tmp:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
