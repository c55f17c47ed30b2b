"""Benchmark: the highest arrival rate the client sustains with p99 lateness under 1 ms over loopback.

    python -m workloads.bench [--rates 50,100,200,...] [--seconds 3] [--limit-ms 1.0] [--pkts 1] \
        [--impl python|go|both]

For each rate, a Poisson schedule of small flows (--pkts packets of 1460 B) from one client process to one
server process on 127.0.0.1 is replayed; the table shows the scheduling lateness p50/p99/max (ms) and
how many flows completed, and the CPU time (user + system) of the client and server processes per 1000
flows. The ramp stops after the first rate whose p99 exceeds the limit. --impl both runs the Python and
the Go implementation (workloads/go, built first) at each rate in turn, so a noisy machine affects both alike,
and prints the ratios. The paper's
100 Mb/s dumbbell at load 0.95 needs about 264 flows/s in total (spread over three sender hosts).
"""
from __future__ import annotations

import argparse
import os
import random
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from workloads.checks import lateness
from contract.schedule import Flow, write_schedule
from workloads.launch import GO, PY, REPO, build_go, free_port, rows, start_server, stop_server

TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> tuple[float, float]:
    """(user, system) seconds of a running process (/proc/PID/stat utime, stime)."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(f[11]) / TICK, int(f[12]) / TICK


def children_cpu() -> tuple[float, float]:
    """(user, system) seconds of the waited-for children (the client runs)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime, ru.ru_stime


def one_rate(tmp: Path, rate: float, seconds: float, pkts: int, port: int, seed: int = 1, impl=PY,
             server_pid: int | None = None) -> dict:
    rnd, t, flows = random.Random(seed), 0.0, []
    while True:
        t += rnd.expovariate(rate)
        if t >= seconds:
            break
        flows.append(Flow(len(flows), round(t, 6), pkts * 1460, pkts, "a1", "b1", "forward", "web"))
    sched, log = tmp / f"s{rate:g}.csv", tmp / f"c{rate:g}-{impl.name}.csv"
    write_schedule(sched, {"bench_rate": rate}, flows)
    (tmp / "hosts.json").write_text('{"a1": "127.0.0.1", "b1": "127.0.0.1"}')
    t0 = time.time() + 0.5
    c0, s0 = children_cpu(), proc_cpu(server_pid) if server_pid else (0.0, 0.0)
    subprocess.run([*impl.client, "--schedule", str(sched), "--host", "a1", "--hosts",
                    str(tmp / "hosts.json"), "--t0", f"{t0:.6f}", "--log", str(log), "--port", str(port),
                    "--flow-timeout", "30"], cwd=REPO, check=True, capture_output=True, timeout=seconds + 60)
    time.sleep(0.2)      # the server closes the last flows
    c1, s1 = children_cpu(), proc_cpu(server_pid) if server_pid else (float("nan"),) * 2
    k = 1000 / max(1, len(flows))       # CPU seconds per 1000 flows
    logs = {int(r["flow_id"]): r for r in rows(log)}
    lat = lateness(logs, limit_ms=1.0)
    done = sum(r["outcome"] == "completed" for r in logs.values())
    return {"rate": rate, "flows": len(flows), "completed": done, "p50": lat["p50"], "p99": lat["measured"],
            "max": lat["max"], "impl": impl.name, "cli_usr": k * (c1[0] - c0[0]), "cli_sys": k * (c1[1] - c0[1]),
            "srv_usr": k * (s1[0] - s0[0]), "srv_sys": k * (s1[1] - s0[1])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workloads.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="50,100,200,400,800,1600,3200,6400", help="flows/s, comma separated")
    ap.add_argument("--seconds", type=float, default=3.0, help="schedule length per rate")
    ap.add_argument("--min-flows", type=int, default=600, help="at least this many flows per rate (longer runs)")
    ap.add_argument("--limit-ms", type=float, default=1.0, help="p99 lateness limit")
    ap.add_argument("--pkts", type=int, default=1, help="packets per flow")
    ap.add_argument("--impl", choices=("python", "go", "both"), default="python",
                    help="which client/server: Python (workloads.client/server), Go (workloads/go), or both")
    a = ap.parse_args(argv)
    rates = [float(r) for r in a.rates.split(",")]
    impls = {"python": [PY], "go": [GO], "both": [PY, GO]}[a.impl]
    if GO in impls:
        why = build_go()
        if why:
            raise SystemExit(f"workloads.bench: {why}")
    best = {i.name: None for i in impls}
    cpu = {i.name: [] for i in impls}
    print(f"{'':>6} {'':>8} {'':>6} {'':>9} {'lateness':^26} {'CPU s per 1000 flows':^31}")
    print(f"{'impl':>6} {'rate/s':>8} {'flows':>6} {'completed':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
          f"{'cli usr':>7} {'cli sys':>7} {'srv usr':>7} {'srv sys':>7}")
    with tempfile.TemporaryDirectory(prefix="favorlab-bench-") as td:
        tmp = Path(td)
        servers = {}
        try:
            for impl in impls:
                port = free_port()
                servers[impl.name] = (start_server(tmp / f"server-{impl.name}.csv", "127.0.0.1", port, impl=impl),
                                      port)
            alive = list(impls)
            for rate in rates:
                for impl in list(alive):
                    srv, port = servers[impl.name]
                    r = one_rate(tmp, rate, max(a.seconds, a.min_flows / rate), a.pkts, port, impl=impl,
                                 server_pid=srv.pid)
                    print(f"{impl.name:>6} {r['rate']:8g} {r['flows']:6d} {r['completed']:9d} {r['p50']:8.3f} "
                          f"{r['p99']:8.3f} {r['max']:8.3f} {r['cli_usr']:7.3f} {r['cli_sys']:7.3f} "
                          f"{r['srv_usr']:7.3f} {r['srv_sys']:7.3f}", flush=True)
                    cpu[impl.name].append((rate, r["cli_usr"] + r["cli_sys"] + r["srv_usr"] + r["srv_sys"],
                                           r["cli_usr"] + r["srv_usr"]))
                    if r["p99"] < a.limit_ms and r["completed"] == r["flows"]:
                        best[impl.name] = rate
                    else:
                        alive.remove(impl)
                if not alive:
                    break
        finally:
            for srv, _ in servers.values():
                stop_server(srv)
    for name, b in best.items():
        print(f"{name}: highest rate with p99 lateness < {a.limit_ms:g} ms and every flow completed: "
              f"{b:g} flows/s" if b else f"{name}: no rate met p99 < {a.limit_ms:g} ms")
    if len(impls) == 2:
        common = sorted(set(x[0] for x in cpu["python"]) & set(x[0] for x in cpu["go"]))
        py = {r: (c, u) for r, c, u in cpu["python"]}
        go = {r: (c, u) for r, c, u in cpu["go"]}
        print("client+server CPU seconds per 1000 flows (user+system; user only), python vs go:")
        for r in common:
            (pc, pu), (gc, gu) = py[r], go[r]
            print(f"  at {r:g} flows/s: python {pc:.3f} s, go {gc:.3f} s, python/go = {pc / max(gc, 1e-9):.2f}; "
                  f"user: python {pu:.3f} s, go {gu:.3f} s, python/go = {pu / max(gu, 1e-9):.2f}")
        if best["python"] and best["go"]:
            print(f"highest sustained rate go/python = {best['go'] / best['python']:.2f}")
    print("(the paper's 100 Mb/s dumbbell at load 0.95 needs about 264 flows/s over three senders)")
    print("rerun: cd " + shlex.quote(str(REPO)) + " && .venv/bin/python -m workloads.bench " +
          " ".join(shlex.quote(x) for x in (argv if argv is not None else sys.argv[1:])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
