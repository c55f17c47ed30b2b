#!/usr/bin/env python3
"""Make the recovery test captures with the guest's real Linux TCP (run as root INSIDE the guest).

    python3 make_captures.py OUTDIR [NAME ...]

For each case: two fresh network namespaces (rc-snd, rc-rcv) joined by a veth; the profile's per-netns
sysctls (testbed/runner/hoststate.py tcp_sysctls; the guest's init netns is not touched); netem delay 80 ms
on the receiver's egress only, so the sender-side capture stamps data when it is sent and the RTT is
80 ms; chosen packets dropped by tc filters on the receiver's veth (clsact: data and SYNs on ingress,
SYN-ACKs on egress), i.e. after the sender's capture point, as a bottleneck drop would be.

A data segment is chosen by its payload: the client sends 32-bit words whose value is 0x5ec00000 plus
the word's index, segments are one MSS each (TSO/GSO off on the sender's veth), so segment k starts
with word k*MSS/4 and every retransmission of it carries the same first word; a u32 filter matches it.
"Drop the first n copies" is a police action with a tiny rate and a burst of n+1/2 packets: conforming
packets are dropped, the rest pass (the refill, 1 kbit/s for data, 8 bit/s for SYNs, adds < 1/2 packet
over a case's few seconds).
The sender captures with tcpdump -s 128 on its veth.
"""
import os
import socket
import struct
import subprocess
import sys
import time

SND, RCV, SIF, RIF = "rc-snd", "rc-rcv", "rcs0", "rcr0"
SIP, RIP, PORT = "10.77.0.1", "10.77.0.2", 5001
DELAY_MS = 80

PROFILES = {   # testbed/runner/hoststate.py tcp_sysctls (paper: reno, no SACK/timestamps/TLP/RACK/ECN; iw 2, quickack)
    "paper": dict(sysctls={"net.ipv4.tcp_no_metrics_save": 1, "net.ipv4.tcp_congestion_control": "reno",
                           "net.ipv4.tcp_sack": 0, "net.ipv4.tcp_timestamps": 0, "net.ipv4.tcp_early_retrans": 0,
                           "net.ipv4.tcp_recovery": 0, "net.ipv4.tcp_ecn": 0},
                  route=["initcwnd", "2", "initrwnd", "10", "quickack", "1"], mss=1460, syn=48, synack=48),
    "linux": dict(sysctls={"net.ipv4.tcp_no_metrics_save": 1},
                  route=["initcwnd", "10", "initrwnd", "10"], mss=1448, syn=60, synack=60),
}

# name: profile, segments sent, {segment: copies dropped}, SYN copies dropped, SYN-ACK copies dropped,
#       (segments written by a second write, seconds after the first) or None,
#       seconds the client holds the connection open after its last write (0: FIN at once; with SACK the
#       receiver SACKs a FIN that arrives past a hole and RACK recovers the hole before any probe timer)
CASES = {
    "paper_tail1":         ("paper", 1, {0: 1}, 0, 0, None, 0),
    "paper_tail2of6":      ("paper", 6, {4: 1, 5: 1}, 0, 0, None, 0),
    "paper_tail_last":     ("paper", 6, {5: 1}, 0, 0, None, 0),
    "paper_backoff":       ("paper", 1, {0: 2}, 0, 0, None, 0),
    "paper_fr_rto":        ("paper", 12, {2: 2}, 0, 0, None, 0),
    "paper_rto_write":     ("paper", 1, {0: 1}, 0, 0, (1, 0.38), 0),
    "paper_syn":           ("paper", 2, {}, 1, 0, None, 0),
    "paper_synack":        ("paper", 2, {}, 0, 1, None, 0),
    "linux_tail1_fin":     ("linux", 1, {0: 1}, 0, 0, None, 0),
    "linux_tail_last_fin": ("linux", 6, {5: 1}, 0, 0, None, 0),
    "linux_tail1":         ("linux", 1, {0: 1}, 0, 0, None, 3),
    "linux_tail_last":     ("linux", 6, {5: 1}, 0, 0, None, 3),
    "linux_tail2of6":      ("linux", 6, {4: 1, 5: 1}, 0, 0, None, 3),
    "linux_tlp_fails":     ("linux", 1, {0: 2}, 0, 0, None, 3),
    "linux_backoff":       ("linux", 1, {0: 3}, 0, 0, None, 4),
    "linux_fr":            ("linux", 20, {3: 1}, 0, 0, None, 0),
    "linux_syn":           ("linux", 2, {}, 1, 0, None, 0),
    "linux_synack":        ("linux", 2, {}, 0, 1, None, 0),
}


def sh(*cmd, ns=None, check=True):
    argv = (["ip", "netns", "exec", ns] if ns else []) + [str(c) for c in cmd]
    return subprocess.run(argv, check=check, capture_output=True, text=True).stdout


def payload(nseg, mss, first=0):
    base = first * mss // 4
    return b"".join(struct.pack("!I", 0x5EC00000 + base + i) for i in range(nseg * mss // 4))


def police(npkts, length, rate="1kbit"):
    """Drop the first npkts copies of `length` bytes, pass the rest."""
    return ["action", "police", "rate", rate, "burst", str(int((npkts + 0.5) * length)), "mtu", "64kb",
            "conform-exceed", "pass/drop"]


def setup(prof):
    teardown()
    sh("ip", "netns", "add", SND)
    sh("ip", "netns", "add", RCV)
    sh("ip", "link", "add", SIF, "netns", SND, "type", "veth", "peer", "name", RIF, "netns", RCV)
    for ns, dev, ip in ((SND, SIF, SIP), (RCV, RIF, RIP)):
        sh("ip", "link", "set", "lo", "up", ns=ns)
        sh("ip", "addr", "add", ip + "/24", "dev", dev, ns=ns)
        sh("ip", "link", "set", dev, "up", ns=ns)
        sh("ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", ns=ns)
        for k, v in prof["sysctls"].items():
            sh("sysctl", "-qw", f"{k}={v}", ns=ns)
        sh("ip", "route", "change", "10.77.0.0/24", "dev", dev, "proto", "kernel", "scope", "link", "src", ip,
           *prof["route"], ns=ns)
    sh("tc", "qdisc", "add", "dev", RIF, "root", "netem", "delay", f"{DELAY_MS}ms", "limit", "1000", ns=RCV)
    sh("tc", "qdisc", "add", "dev", RIF, "clsact", ns=RCV)


def drop_rules(prof, drops, syn, synack):
    thl = 20 if prof["mss"] == 1460 else 32   # data segments: no options (paper) / timestamps (linux)
    prio = 1
    for seg, n in drops.items():
        word = 0x5EC00000 + seg * prof["mss"] // 4
        sh("tc", "filter", "add", "dev", RIF, "ingress", "prio", prio, "protocol", "ip", "u32",
           "match", "ip", "protocol", "6", "0xff", "match", "u32", f"{word:#x}", "0xffffffff", "at", 20 + thl,
           *police(n, 20 + thl + prof["mss"]), ns=RCV)
        prio += 1
    if syn:   # SYN without ACK (ingress: skb->len is the IP length)
        sh("tc", "filter", "add", "dev", RIF, "ingress", "prio", prio, "protocol", "ip", "u32",
           "match", "ip", "protocol", "6", "0xff", "match", "u8", "0x02", "0x12", "at", 33,
           *police(syn, prof["syn"], "8bit"), ns=RCV)
        prio += 1
    if synack:   # SYN-ACK (clsact egress: skb->len includes the 14-byte Ethernet header)
        sh("tc", "filter", "add", "dev", RIF, "egress", "prio", prio, "protocol", "ip", "u32",
           "match", "ip", "protocol", "6", "0xff", "match", "u8", "0x12", "0x12", "at", 33,
           *police(synack, prof["synack"] + 14, "8bit"), ns=RCV)


def teardown():
    for ns in (SND, RCV):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def run_case(name, outdir):
    pname, nseg, drops, syn, synack, later, hold = CASES[name]
    prof = PROFILES[pname]
    setup(prof)
    drop_rules(prof, drops, syn, synack)
    pcap = os.path.join(outdir, name + ".pcap")
    dump = subprocess.Popen(["ip", "netns", "exec", SND, "tcpdump", "-n", "--immediate-mode", "-U", "-s", "128",
                             "-i", SIF, "-w", pcap, "tcp port %d" % PORT], stderr=subprocess.PIPE)
    server = subprocess.Popen(["ip", "netns", "exec", RCV, sys.executable, __file__, "--serve"],
                              stdout=subprocess.PIPE, text=True)
    server.stdout.readline()   # "listening"
    time.sleep(1.0)            # tcpdump ready (TCG guest: slow)
    more, after = later or (0, 0)
    args = [str(x) for x in (nseg, prof["mss"], hold, more, after)]
    try:
        subprocess.run(["ip", "netns", "exec", SND, sys.executable, __file__, "--client", *args], check=True,
                       timeout=60)
        server.wait(timeout=30)
        time.sleep(1.0)
    finally:   # immediate mode + -U: nothing is left in tcpdump's buffers when it is stopped
        server.kill()
        dump.terminate()
        dump.wait()
    stats = sh("tc", "-s", "filter", "show", "dev", RIF, "ingress", ns=RCV) + \
        sh("tc", "-s", "filter", "show", "dev", RIF, "egress", ns=RCV)
    teardown()
    print(f"{name}: {os.path.getsize(pcap)} bytes", flush=True)
    return stats


def serve():
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((RIP, PORT))
    ls.listen(1)
    print("listening", flush=True)
    c, _ = ls.accept()
    while c.recv(65536):
        pass
    c.close()


def client(nseg, mss, hold, more, after):
    s = socket.create_connection((RIP, PORT), timeout=30)
    s.sendall(payload(nseg, mss))
    if more:
        time.sleep(after)
        s.sendall(payload(more, mss, first=nseg))
    time.sleep(hold)
    s.shutdown(socket.SHUT_WR)
    while s.recv(65536):
        pass
    s.close()


def main(argv):
    if argv[:1] == ["--serve"]:
        return serve()
    if argv[:1] == ["--client"]:
        nseg, mss, hold, more, after = (float(x) for x in argv[1:])
        return client(int(nseg), int(mss), hold, int(more), after)
    outdir = argv[0]
    os.makedirs(outdir, exist_ok=True)
    for name in argv[1:] or CASES:
        stats = run_case(name, outdir)
        with open(os.path.join(outdir, name + ".tc.txt"), "w") as f:
            f.write(stats)


if __name__ == "__main__":
    main(sys.argv[1:])
