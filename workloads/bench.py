"""Benchmark: the highest arrival rate the client sustains with p99 lateness under 1 ms over loopback.

    python -m workloads.bench [--rates 50,100,200,...] [--seconds 3] [--limit-ms 1.0] [--pkts 1]

For each rate, a Poisson schedule of small flows (--pkts packets of 1460 B) from one client process to one
server process on 127.0.0.1 is replayed; the table shows the scheduling lateness p50/p99/max (ms) and
how many flows completed. The ramp stops after the first rate whose p99 exceeds the limit. The paper's
100 Mb/s dumbbell at load 0.95 needs about 264 flows/s in total (spread over three sender hosts).
"""
from __future__ import annotations

import argparse
import random
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from workloads.checks import lateness
from workloads.schedfile import Flow, write_schedule
from workloads.tests.flowtools import GUEST_PY, REPO, free_port, rows, start_server, stop_server


def one_rate(tmp: Path, rate: float, seconds: float, pkts: int, port: int, seed: int = 1) -> dict:
    rnd, t, flows = random.Random(seed), 0.0, []
    while True:
        t += rnd.expovariate(rate)
        if t >= seconds:
            break
        flows.append(Flow(len(flows), round(t, 6), pkts * 1460, pkts, "a1", "b1", "forward", "web"))
    sched, log = tmp / f"s{rate:g}.csv", tmp / f"c{rate:g}.csv"
    write_schedule(sched, {"bench_rate": rate}, flows)
    (tmp / "hosts.json").write_text('{"a1": "127.0.0.1", "b1": "127.0.0.1"}')
    t0 = time.time() + 0.5
    subprocess.run([GUEST_PY, "-s", "-m", "workloads.client", "--schedule", str(sched), "--host", "a1", "--hosts",
                    str(tmp / "hosts.json"), "--t0", f"{t0:.6f}", "--log", str(log), "--port", str(port),
                    "--flow-timeout", "30"], cwd=REPO, check=True, capture_output=True, timeout=seconds + 60)
    logs = {int(r["flow_id"]): r for r in rows(log)}
    lat = lateness(logs, limit_ms=1.0)
    done = sum(r["outcome"] == "completed" for r in logs.values())
    return {"rate": rate, "flows": len(flows), "completed": done, "p50": lat["p50"], "p99": lat["measured"],
            "max": lat["max"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workloads.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="50,100,200,400,800,1600,3200", help="flows/s, comma separated")
    ap.add_argument("--seconds", type=float, default=3.0, help="schedule length per rate")
    ap.add_argument("--min-flows", type=int, default=600, help="at least this many flows per rate (longer runs)")
    ap.add_argument("--limit-ms", type=float, default=1.0, help="p99 lateness limit")
    ap.add_argument("--pkts", type=int, default=1, help="packets per flow")
    a = ap.parse_args(argv)
    rates = [float(r) for r in a.rates.split(",")]
    best = None
    print(f"{'rate/s':>8} {'flows':>6} {'completed':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    with tempfile.TemporaryDirectory(prefix="favorlab-bench-") as td:
        tmp, port = Path(td), free_port()
        srv = start_server(tmp / "server.csv", "127.0.0.1", port)
        try:
            for rate in rates:
                r = one_rate(tmp, rate, max(a.seconds, a.min_flows / rate), a.pkts, port)
                print(f"{r['rate']:8g} {r['flows']:6d} {r['completed']:9d} {r['p50']:8.3f} {r['p99']:8.3f} "
                      f"{r['max']:8.3f}", flush=True)
                if r["p99"] < a.limit_ms and r["completed"] == r["flows"]:
                    best = rate
                else:
                    break
        finally:
            stop_server(srv)
    print(f"highest rate with p99 lateness < {a.limit_ms:g} ms and every flow completed: "
          f"{best:g} flows/s" if best else f"no rate met p99 < {a.limit_ms:g} ms")
    print("(the paper's 100 Mb/s dumbbell at load 0.95 needs about 264 flows/s over three senders)")
    print("rerun: cd " + shlex.quote(str(REPO)) + " && .venv/bin/python -m workloads.bench " +
          " ".join(shlex.quote(x) for x in (argv if argv is not None else sys.argv[1:])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
