"""Cross-check the fast extractor against tshark (the reference dissector): packet and flow counts.

    python -m analysis.crosscheck FILE.pcap
"""
import subprocess
import sys

from analysis.pcapread import read_pcap


def tshark_counts(path):
    out = subprocess.run(["tshark", "-n", "-r", path, "-Y", "ip && tcp", "-T", "fields", "-e", "tcp.stream"],
                         capture_output=True, text=True, check=True).stdout.split()
    return len(out), len(set(out))


def fast_counts(path):
    n, conns = 0, set()
    for p in read_pcap(path):
        n += 1
        conns.add(frozenset(((p.src, p.sport), (p.dst, p.dport))))
    return n, len(conns)


def compare(path):
    fp, ff = fast_counts(path)
    tp, tf = tshark_counts(path)
    return dict(fast_packets=fp, tshark_packets=tp, fast_flows=ff, tshark_flows=tf)


if __name__ == "__main__":
    r = compare(sys.argv[1])
    print(r)
    sys.exit(0 if r["fast_packets"] == r["tshark_packets"] and r["fast_flows"] == r["tshark_flows"] else 1)
