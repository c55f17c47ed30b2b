"""The synflood scenario's attacker (FavorQueue paper, Section 9.1): its rate, its command line, its summary.

The flood is favorflow's `synflood` subcommand (workloads/go/synflood.go): bare spoofed SYNs, each from a
random address of the spoof prefix and a random port, so every packet is a new flow to FavorQueue, paced
per millisecond. Its rate is given as a multiple of the bottleneck: `rate_x` 1 is as many SYNs per second
as fill the bottleneck's bit rate, each counted as the qdisc counts it (qdisc_pkt_len: the Ethernet frame
without FCS, 14 + 40 bytes). At 10 Mb/s that is 23 148 SYNs/s; the paper's 1500-byte packets fill the same
link at 833/s, so 1x in SYNs is 28 times as many packets as 1x in data.

    python -m workloads.synflood pps --rate-x 1 --bottleneck-mbps 10       # 23148.148...
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SYN_IP_BYTES = 40          # IPv4 + TCP headers, no options (synflood.go synLen)
ETHERNET_HEADER = 14       # what the qdisc's packet length adds on an Ethernet (veth) device
SPOOF_PREFIX = "10.66.0.0/16"   # outside every address the topologies give their hosts


class FloodError(ValueError):
    """A flood's summary is missing or does not say what the runner needs."""


def flood_pps(rate_x: float, bottleneck_mbps: float) -> float:
    """SYNs per second that make rate_x times the bottleneck's bit rate, in frames as the qdisc counts them."""
    if not rate_x > 0 or not bottleneck_mbps > 0:
        raise ValueError(f"rate_x ({rate_x}) and bottleneck_mbps ({bottleneck_mbps}) must be > 0")
    return rate_x * bottleneck_mbps * 1e6 / 8 / (SYN_IP_BYTES + ETHERNET_HEADER)


def synflood_cmd(favorflow: str, dst: str, dport: int, pps: float, duration_s: float, out: str, seed: int,
                 start_at: float | None = None, spoof: str = SPOOF_PREFIX) -> list[str]:
    """The attacker's command line (run as root in the attacking host's network namespace)."""
    cmd = [favorflow, "synflood", "--dst", dst, "--dport", str(dport), "--spoof", spoof, "--pps", f"{pps:.3f}",
           "--duration", f"{duration_s:g}", "--out", out, "--seed", str(seed)]
    if start_at is not None:
        cmd += ["--start-at", f"{start_at:.6f}"]
    return cmd


def read_summary(path: Path) -> dict:
    """favorflow synflood's summary, checked: the counts and the rate it reached."""
    try:
        s = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise FloodError(f"{path}: no flood summary ({e}): the attacker did not finish") from None
    for k in ("sent", "send_errors", "missed", "pps_wanted", "pps_reached", "duration_s"):
        if not isinstance(s.get(k), (int, float)):
            raise FloodError(f"{path}: the flood summary has no {k!r}")
    return s


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workloads.synflood", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pps", help="SYNs per second for a multiple of the bottleneck")
    p.add_argument("--rate-x", type=float, required=True)
    p.add_argument("--bottleneck-mbps", type=float, required=True)
    a = ap.parse_args(argv)
    print(flood_pps(a.rate_x, a.bottleneck_mbps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
