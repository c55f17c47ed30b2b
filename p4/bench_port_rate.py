"""Benchmark: the P4 bottleneck's output rate with favored traffic, with and without phantoms.

BMv2 paces each priority queue on its own clock; favorqueue.p4 sends a phantom into the standard queue
for every favored packet so that the port keeps its configured rate (favorqueue.p4, top comment). This
measures both in the same run, on the same slow port: a backlogged flow plus a new (favored) flow every
100 ms, 30 packets a second offered to a 20 pps port, for --seconds. Prints packets a second from the
first departure to the last, per second, and the ratio to the configured rate.

    sudo .venv/bin/python -m p4.bench_port_rate [--seconds 6]

Needs the P4 toolchain and root, like p4/tests/test_bmv2.py (the same bench, p4.netns_bench).
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from p4 import control
from p4 import netns_bench


def measure(phantoms: bool, seconds: float) -> dict:
    bench = netns_bench.Bench(Path(tempfile.mkdtemp(prefix="favorlab-p4bench-")))
    try:
        sw = bench.start_switch(netns_bench.favor())
        if not phantoms:   # a clone to an unconfigured session is not sent: favorqueue.p4 without phantoms
            sw.cli([f"mirroring_delete {control.PHANTOM_SESSION}"])
        news = netns_bench.other_flows(int(seconds / 0.1))
        rx = bench.exchange([(f"{n}:1,{netns_bench.A}:2", 0.0 if i == 0 else 0.1) for i, n in enumerate(news)],
                            seconds=2.0)
        ts = [p["t"] - rx[0]["t"] for p in rx]
        return {"rate": (len(ts) - 1) / ts[-1], "packets": len(ts),
                "per_second": [sum(1 for t in ts if s <= t < s + 1) for s in range(int(ts[-1]) + 1)],
                "verdicts": sw.verdicts()}
    finally:
        bench.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=6.0, help="how long the traffic is offered")
    a = ap.parse_args()
    print(f"port configured at {netns_bench.RATE_PPS} pps, buffer {netns_bench.LIMIT} packets, "
          f"30 pps offered for {a.seconds:g} s")
    for phantoms in (False, True):
        m = measure(phantoms, a.seconds)
        v = m["verdicts"]
        print(f"phantoms {'on ' if phantoms else 'off'}: {m['rate']:.2f} pps first to last packet "
              f"({m['rate'] / netns_bench.RATE_PPS:.2f} x configured), {m['packets']} packets, per second "
              f"{m['per_second']}; favored {v['favored']}, standard {v['standard']}, "
              f"dropped {v['drop_standard'] + v['drop_favored']}, phantoms paced {v['phantoms']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
