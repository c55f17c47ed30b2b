"""A BMv2 switch on a slow port between network namespaces made for it, with crafted traffic through it:
the bench the BMv2 tests (p4/tests/test_bmv2.py) and the port-rate benchmark (p4.bench_port_rate) use.

Three namespaces: sender (a0) -- [s1 switch s2] -- receiver (b0), the switch's port paced at RATE_PPS so
that bursts queue up; UDP flows whose source ports fall in distinct favorqueue.p4 buckets (A..F, and
other_flows for more), sent and captured by p4.netns_traffic. Needs p4lang's toolchain and root.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path

from p4 import control
from p4 import switch as p4switch

REPO = Path(__file__).resolve().parents[1]

RATE_PPS = 20                       # a slow queue: 50 ms per packet, so bursts queue up
MBPS = RATE_PPS * 8 * control.FRAME_BYTES / 1e6
LIMIT = 8


def bucket(sport: int) -> int:
    """favorqueue.p4's flow bucket (crc32 of src, dst, proto, sport, dport; 1024 buckets)."""
    key = bytes([10, 1, 0, 1, 10, 2, 0, 1, 17]) + sport.to_bytes(2, "big") + (5001).to_bytes(2, "big")
    return zlib.crc32(key) % 1024


# flows with distinct buckets, so that no two of them share a count
FLOWS = []
for _s in range(40000, 41000):
    if bucket(_s) not in {bucket(f) for f in FLOWS}:
        FLOWS.append(_s)
    if len(FLOWS) == 6:
        break
A, B, C, D, E, F = FLOWS


def sh(*argv, check=True):
    p = subprocess.run(list(argv), capture_output=True, text=True, cwd=REPO)
    if check and p.returncode:
        raise RuntimeError(f"{' '.join(argv)}: {p.stderr.strip()}")
    return p


class Bench:
    """Three namespaces: sender (a0) -- [s1 switch s2] -- receiver (b0). Everything removed at close."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        tag = f"p4t{os.getpid() % 100000}"
        self.ns = {k: f"{tag}{k}" for k in ("a", "s", "b")}
        for n in self.ns.values():
            sh("ip", "netns", "add", n)
        for n in self.ns.values():
            # loopback starts down in a new namespace: simple_switch_CLI reaches the switch's thrift
            # server on 127.0.0.1 inside the switch's namespace
            sh("ip", "-n", n, "link", "set", "lo", "up")
        for n in self.ns.values():   # no IPv6 chatter (router solicitations) through the queue
            sh("ip", "netns", "exec", n, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            sh("ip", "netns", "exec", n, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
        pairs = (("a0", self.ns["a"], "s1", self.ns["s"]), ("s2", self.ns["s"], "b0", self.ns["b"]))
        for i1, n1, i2, n2 in pairs:
            sh("ip", "link", "add", f"{tag}x", "type", "veth", "peer", "name", f"{tag}y")
            sh("ip", "link", "set", f"{tag}x", "netns", n1)
            sh("ip", "link", "set", f"{tag}y", "netns", n2)
            sh("ip", "-n", n1, "link", "set", f"{tag}x", "name", i1)
            sh("ip", "-n", n2, "link", "set", f"{tag}y", "name", i2)
            for n, i in ((n1, i1), (n2, i2)):
                sh("ip", "netns", "exec", n, "ethtool", "-K", i, "tx", "off", "rx", "off", "tso", "off",
                   "gso", "off", "gro", "off", check=False)
                sh("ip", "-n", n, "link", "set", i, "up")
        self.sw = None

    def start_switch(self, params: dict):
        self.sw = p4switch.Switch(params, MBPS, "s1", "s2", netns=self.ns["s"],
                                  log_path=self.tmp / "simple_switch.log")
        self.sw.start()
        return self.sw

    def exchange(self, batches: list[tuple[str, float]], seconds: float) -> list[dict]:
        """Send each batch of flows (after its pause in s); capture at the receiver until `seconds` after
        the last batch went out."""
        out = self.tmp / f"rx{time.monotonic_ns()}.jsonl"
        py = [sys.executable, "-m", "p4.netns_traffic"]
        sniff = subprocess.Popen(["ip", "netns", "exec", self.ns["b"], *py, "sniff", "--iface", "b0",
                                  "--out", str(out)], cwd=REPO, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        assert sniff.stdout.readline().strip() == "ready"
        plan = ";".join(f"{pause}:{flows}" for flows, pause in batches)
        sent = sh("ip", "netns", "exec", self.ns["a"], *py, "send", "--iface", "a0", "--plan", plan)
        self.late_max_s = json.loads(sent.stdout.strip().splitlines()[-1])["late_max_s"]
        time.sleep(seconds)
        sniff.stdin.close()
        sniff.wait(timeout=60)
        return [json.loads(line) for line in out.read_text().splitlines()]

    def close(self):
        if self.sw:
            self.sw.stop()
        for n in self.ns.values():
            sh("ip", "netns", "del", n, check=False)


def favor(**kw):
    return control.parse_args(["program", "favorqueue", "limit", str(LIMIT),
                               *[str(x) for kv in kw.items() for x in kv]])


def other_flows(n: int, base: int = 42000) -> list[int]:
    """n source ports whose buckets differ from each other and from A..F's."""
    taken = {bucket(f) for f in FLOWS}
    out = []
    for sport in range(base, base + 5000):
        if bucket(sport) not in taken:
            taken.add(bucket(sport))
            out.append(sport)
            if len(out) == n:
                return out
    raise AssertionError("not enough distinct buckets")
