"""Persistent flows (paper Section 5.3) and background traffic with iperf3: command lines and results.

Section 5.3: 20 % load of short flows (exponential sizes, mean 6 packets) and, 40 s later, 50 persistent
TCP flows. Here the persistent flows are iperf3 TCP streams spread round-robin over the nine (a_i, b_j)
RTT classes: one iperf3 server per (sender, receiver) pair on the receiver (iperf3 serves one test at a
time) and one client per pair with `-P k` parallel streams, started at `start_s`.

    python -m workloads.persistent plan --hosts hosts.json --duration 2000 [--n 50] [--start 40]
    python -m workloads.persistent parse iperf3-a1-b1.json          # per-stream throughput, JSON

Background (reverse) load: `background_cmds()` gives an iperf3 stream at a fixed bit rate (UDP by
default, so it does not react to the AQM; TCP with udp=False).
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

DUMBBELL_PAIRS = [(a, b) for a in ("a1", "a2", "a3") for b in ("b1", "b2", "b3")]
IPERF3_PORT_BASE = 5201


class Iperf3Error(ValueError):
    """iperf3 reported an error or its --json output could not be read."""


def iperf3_server_cmd(bind: str, port: int, one_off: bool = True) -> list[str]:
    """A JSON-reporting iperf3 server; one_off (-1) makes it exit after one test."""
    return ["iperf3", "-s", "-B", bind, "-p", str(port), "-J", *(["-1"] if one_off else [])]


def iperf3_client_cmd(dst_ip: str, port: int, duration_s: float, parallel: int = 1,
                      congestion: str | None = None, bitrate_bps: float | None = None, udp: bool = False,
                      reverse: bool = False, bind: str | None = None, interval_s: float = 1.0,
                      udp_len: int = 1472) -> list[str]:
    """iperf3 client command; --json output goes to stdout. TCP streams are unlimited (-b 0) unless a
    bitrate is given; UDP datagrams are sized to fill a 1500-byte packet."""
    if parallel < 1 or parallel > 128:
        raise ValueError(f"parallel={parallel}: iperf3 accepts 1..128 streams per client")
    if duration_s <= 0:
        raise ValueError("duration_s must be > 0")
    cmd = ["iperf3", "-c", dst_ip, "-p", str(port), "-t", f"{duration_s:g}", "-i", f"{interval_s:g}", "-J",
           "-P", str(parallel)]
    if bind:
        cmd += ["-B", bind]
    if udp:
        cmd += ["-u", "-l", str(udp_len)]
    if udp or bitrate_bps is not None:
        cmd += ["-b", f"{int(bitrate_bps or 0)}"]
    if congestion and not udp:
        cmd += ["-C", congestion]
    if reverse:
        cmd += ["-R"]
    return cmd


@dataclass
class PersistentGroup:
    src: str
    dst: str
    streams: int
    port: int
    start_s: float
    duration_s: float
    server: list[str] = field(default_factory=list)
    client: list[str] = field(default_factory=list)


def persistent_plan(hosts: dict[str, str], duration_s: float, n: int = 50, start_s: float = 40.0,
                    pairs=DUMBBELL_PAIRS, congestion: str | None = None,
                    port_base: int = IPERF3_PORT_BASE) -> list[PersistentGroup]:
    """n persistent flows spread round-robin over the pairs; they run from start_s to duration_s."""
    if n < 1:
        raise ValueError("n must be >= 1")
    if not duration_s > start_s:
        raise ValueError(f"duration_s ({duration_s}) must exceed start_s ({start_s})")
    missing = sorted({h for p in pairs for h in p} - set(hosts))
    if missing:
        raise ValueError(f"hosts {missing} are not in the hosts table")
    counts = [n // len(pairs) + (1 if i < n % len(pairs) else 0) for i in range(len(pairs))]
    groups, next_port = [], {}
    for (src, dst), k in zip(pairs, counts):
        if k == 0:
            continue
        port = next_port.get(dst, port_base)
        next_port[dst] = port + 1
        g = PersistentGroup(src, dst, k, port, start_s, duration_s - start_s)
        g.server = iperf3_server_cmd(hosts[dst], port)
        g.client = iperf3_client_cmd(hosts[dst], port, g.duration_s, k, congestion, bind=hosts[src])
        groups.append(g)
    return groups


def background_cmds(src_ip: str, dst_ip: str, rate_bps: float, duration_s: float, port: int = 5301,
                    udp: bool = True) -> dict:
    """Fixed-rate background traffic src -> dst (e.g. the reverse load b* -> a*): server and client."""
    if rate_bps <= 0:
        raise ValueError("rate_bps must be > 0")
    return {"server": iperf3_server_cmd(dst_ip, port),
            "client": iperf3_client_cmd(dst_ip, port, duration_s, 1, bitrate_bps=rate_bps, udp=udp, bind=src_ip)}


def parse_iperf3_json(text: str) -> dict:
    """Summary of an iperf3 -J result (client or server side): per stream bytes, seconds, Mb/s,
    retransmits; totals sent/received. Raises Iperf3Error on iperf3's own error or bad JSON."""
    try:
        d = json.loads(text)
    except ValueError as e:
        raise Iperf3Error(f"iperf3 output is not JSON ({e}); was it run with -J?") from None
    if "error" in d:
        raise Iperf3Error(f"iperf3 reported: {d['error']}")
    end = d.get("end") or {}
    streams = []
    for s in end.get("streams", []):
        side = s.get("sender") or s.get("udp") or {}
        recv = s.get("receiver") or {}
        streams.append({"socket": side.get("socket"), "bytes": side.get("bytes", 0),
                        "seconds": side.get("seconds", 0.0), "mbps": side.get("bits_per_second", 0) / 1e6,
                        "received_mbps": recv.get("bits_per_second", 0) / 1e6,
                        "retransmits": side.get("retransmits")})
    sent = end.get("sum_sent") or end.get("sum") or {}
    rcvd = end.get("sum_received") or end.get("sum") or {}
    start = d.get("start", {})
    return {"streams": streams, "sent_mbps": sent.get("bits_per_second", 0) / 1e6,
            "received_mbps": rcvd.get("bits_per_second", 0) / 1e6, "retransmits": sent.get("retransmits"),
            "protocol": start.get("test_start", {}).get("protocol"),
            "congestion": end.get("sender_tcp_congestion"),
            "intervals": [iv.get("sum", {}).get("bits_per_second", 0) / 1e6 for iv in d.get("intervals", [])]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workloads.persistent", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan", help="iperf3 servers and clients for n persistent flows (JSON)")
    p.add_argument("--hosts", required=True)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--n", type=int, default=50)
    p.add_argument("--start", type=float, default=40.0)
    p.add_argument("--congestion", default=None)
    q = sub.add_parser("parse", help="summarise an iperf3 -J output file")
    q.add_argument("file")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "plan":
            from workloads.common import load_hosts
            groups = persistent_plan(load_hosts(a.hosts), a.duration, a.n, a.start, congestion=a.congestion)
            print(json.dumps([asdict(g) for g in groups], indent=1))
        else:
            print(json.dumps(parse_iperf3_json(Path(a.file).read_text()), indent=1))
    except (ValueError, OSError) as e:
        print(f"workloads.persistent: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
