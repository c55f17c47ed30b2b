"""Closed-loop reference user (paper Section 8, Fig. 26): one flow at a time, the next after a think time.

    python3 -m workloads.reference --host us --dst ur --hosts hosts.json --t0 <unix time> \
        --stop-at <unix time> --seed 7 --log client-us.csv [--sizes lomax:shape=1.3,mean_pkts=30] \
        [--think-max 0.15] [--mss 1460] [--port 5001] [--flow-timeout 120] [--first-id 0] \
        [--max-flows N] [--schedule-out reference-schedule.csv]

The paper's user flow "has a finite size that follows a Pareto law of shape 1.3 and mean 30 packets ...
As soon as the flow ends, a new one is triggered after a random waiting time ranging from 0 to 0.15 sec".
Flow 0 is due at t0; flow i+1 is due at flow i's end_s plus think time i, drawn Uniform(0, think_max).
Each flow is the schedule client's own (workloads.client.FlowRun, push mode: the 16-byte header, the
server's EOF is the end), so its log row means exactly what a client log row means (docs/contracts.md).

Replay across AQMs: sizes and think times come from two random.Random streams seeded from --seed
("favorlab-reference:<seed>:sizes" and ":think"; string seeds are hashed with SHA-512, so the streams are
the same in every process and Python 3 version). Flow i always gets the i-th size and the i-th think
time, whatever the network did to flows 0..i-1, so a DropTail and a FaQ run with the same seed offer the
same sequence; they differ only in how far into it they get before --stop-at. numpy is not used: this
runs on testbed hosts (standard library only, Python 3.10 or newer).

Sizes (packets, L = max(1, ceil(X)), size_bytes = L * mss as in orchestrate.schedule): `lomax` (the
default, Table 1's) Pareto II, X = s * (paretovariate(a) - 1), s = mean (a-1), ns-2's RandomVariable/ParetoII;
`pareto` classic Pareto I, minimum xm = mean (a-1)/a (X = xm * random.paretovariate(a)), no flow under 7
packets at mean 30; `exponential` (random.expovariate). Same distributions and parameter names as
orchestrate.schedule (contract.sizes; bounded_pareto is not offered here; docs/sizes.md).

Ends at --stop-at or on SIGTERM/SIGINT: a flow still open is aborted and logged `timed_out`; a flow not
yet due is not logged (the client log's rows are the flows started). Exit status 0 unless inputs are wrong.
"""
from __future__ import annotations

import argparse
import asyncio
import math
import random
import signal
import sys
import time
from pathlib import Path

from contract import sizes as sizes_grammar
from workloads.client import EARLY_S, LOG_COLUMNS, FlowRun
from workloads.common import Clock, hosts_port, load_hosts, write_csv
from contract.schedule import HEADER_BYTES, Flow, write_schedule

DEFAULT_SIZES = sizes_grammar.DEFAULT
THINK_MAX_S = 0.15
KIND = "reference"
STOP_ERROR = "still running at --stop-at (or a stop signal)"
# the distributions drawn here without numpy, each with the parameters it takes
OFFERED = {"pareto": ("shape", "mean_pkts"), "lomax": ("shape", "mean_pkts"), "exponential": ("mean_pkts",)}


def parse_sizes(text: str) -> tuple[str, dict]:
    """A --sizes word (contract.sizes) for the distributions drawn here: bounded_pareto's minimum is found
    numerically, which the controller's generator does with scipy and a testbed host cannot."""
    return sizes_grammar.parse_sizes(text, OFFERED, "the reference user")


def _draw_pkts(name: str, p: dict, rng: random.Random) -> int:
    if name == "pareto":
        x = sizes_grammar.pareto_minimum(p) * rng.paretovariate(p["shape"])
    elif name == "lomax":
        x = p["mean_pkts"] * (p["shape"] - 1) * (rng.paretovariate(p["shape"]) - 1.0)
    else:
        x = rng.expovariate(1.0 / p["mean_pkts"])
    return max(1, math.ceil(x))


def draws(seed: int, sizes: str = DEFAULT_SIZES, think_max: float = THINK_MAX_S):
    """Endless (size_pkts, think_s) pairs: flow i's size and the pause after it. Two streams, so the
    sizes do not move when only think_max changes (and the reverse)."""
    name, params = parse_sizes(sizes)
    rs = random.Random(f"favorlab-reference:{seed}:sizes")
    rt = random.Random(f"favorlab-reference:{seed}:think")
    while True:
        yield _draw_pkts(name, params, rs), rt.uniform(0.0, think_max)


def sequence(seed: int, n: int, sizes: str = DEFAULT_SIZES, think_max: float = THINK_MAX_S) -> list[tuple[int, float]]:
    """The first n (size_pkts, think_s) of a seed: what any run with that seed offers, in order."""
    it = draws(seed, sizes, think_max)
    return [next(it) for _ in range(n)]


class Reference:
    """The closed loop. Provides what FlowRun expects of its client (clock, mode, flow_timeout, ended_one)."""
    mode = "push"

    def __init__(self, src: str, dst: str, addr: tuple[str, int], seed: int, sizes: str, think_max: float,
                 mss: int, flow_timeout: float, t0: float, first_id: int = 0, max_flows: int | None = None):
        self.src, self.dst, self.addr = src, dst, addr
        self.seed, self.sizes, self.think_max, self.mss = seed, sizes, think_max, mss
        self.flow_timeout, self.t0, self.first_id, self.max_flows = flow_timeout, t0, first_id, max_flows
        self.flows: list[Flow] = []

    def ended_one(self):
        pass                      # the loop awaits each FlowRun's `ended` itself

    async def _until(self, rel_s: float, stopped: asyncio.Future) -> bool:
        """Sleep until t0 + rel_s as the client's dispatcher does (coarse asyncio wait, then a precise
        time.sleep for the last EARLY_S); False when stopped first."""
        loop = asyncio.get_running_loop()
        target = self.clock.loop_at(rel_s)
        delay = target - loop.time()
        if delay > EARLY_S:
            await asyncio.wait([stopped], timeout=delay - EARLY_S)
        if stopped.done():
            return False
        rest = target - loop.time()
        if rest > 0:
            time.sleep(rest)
        return True

    async def run(self, stop_at: float | None) -> list[dict]:
        loop = asyncio.get_running_loop()
        self.clock = Clock(loop.time, self.t0)
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if stop_at is not None:
            loop.call_at(self.clock.loop_at(stop_at - self.t0), stop.set)
        stopped = asyncio.ensure_future(stop.wait())
        rows, due, current = [], 0.0, None
        seq = draws(self.seed, self.sizes, self.think_max)
        try:
            for i in range(self.max_flows if self.max_flows is not None else 1 << 62):
                pkts, think = next(seq)
                if stop_at is not None and self.t0 + due >= stop_at:
                    break
                if not await self._until(due, stopped):
                    break
                flow = Flow(self.first_id + i, due, pkts * self.mss, pkts, self.src, self.dst, "forward", KIND)
                self.flows.append(flow)
                current = FlowRun(self, flow)
                current.start(self.addr)
                rows.append(current.rec)
                await asyncio.wait([current.ended, stopped], return_when=asyncio.FIRST_COMPLETED)
                if not current.ended.done():
                    current.finish("timed_out", STOP_ERROR)
                    break
                due = current.rec["end_s"] + think
        finally:
            stopped.cancel()
            if current is not None and not current.ended.done():
                current.finish("timed_out", STOP_ERROR)
            if current is not None and current.task:
                current.task.cancel()
                await asyncio.gather(current.task, return_exceptions=True)
        return rows

    def schedule_meta(self) -> dict:
        return {"generator": "workloads.reference", "format": 1, "seed": self.seed, "sizes": self.sizes,
                "think_max_s": f"{self.think_max:g}", "mss": self.mss, "closed_loop": 1,
                "note": "start_s = when each flow was due (previous end + think time); not an open-loop plan"}


def check_log(path: str | Path, think_max: float = THINK_MAX_S, slack_s: float = 0.05) -> dict:
    """A fidelity check of a reference log: the loop ran (at least one flow completed) and was closed
    (each flow due at the previous end plus a think time in [0, think_max], started within slack_s of it)."""
    import csv
    with Path(path).open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    problems = []
    for prev, cur in zip(rows, rows[1:]):
        gap = float(cur["scheduled_s"]) - float(prev["end_s"])
        late = float(cur["actual_start_s"]) - float(cur["scheduled_s"])
        if not -2e-6 <= gap <= think_max + 2e-6 or not -2e-6 <= late <= slack_s:
            problems.append(f"flow {cur['flow_id']}: due {gap:+.6f} s after the previous end, started "
                            f"{late:+.6f} s after due")
    done = sum(r["outcome"] == "completed" for r in rows)
    out = {"configured": f"closed loop, think time in [0, {think_max:g}] s", "measured": f"{done} of {len(rows)} "
           "flows completed", "flows": len(rows), "completed": done, "ok": done > 0 and not problems}
    if problems:
        out["problems"] = problems[:10]
    return {"reference_loop": out}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m workloads.reference", description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", required=True, help="this host's name in --hosts (the flows' src)")
    ap.add_argument("--dst", required=True, help="the receiver's name in --hosts (a workloads.server runs there)")
    ap.add_argument("--hosts", required=True, help="hosts.json: host name -> IP")
    ap.add_argument("--t0", type=float, required=True, help="unix time flow 0 is due (the log's time 0)")
    ap.add_argument("--stop-at", type=float, default=None, help="unix time to stop at, whatever is open")
    ap.add_argument("--seed", type=int, required=True, help="seed of the size and think-time streams")
    ap.add_argument("--log", required=True, help="per-flow CSV (the client log's columns), written at exit")
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help=f"size distribution (default {DEFAULT_SIZES})")
    ap.add_argument("--think-max", type=float, default=THINK_MAX_S,
                    help=f"think time Uniform(0, this) seconds (default {THINK_MAX_S:g})")
    ap.add_argument("--mss", type=int, default=1460, help="payload bytes per packet (default 1460)")
    ap.add_argument("--port", type=int, default=None, help="server port (default: hosts.json's port, else 5001)")
    ap.add_argument("--flow-timeout", type=float, default=120.0, help="seconds from a flow's start (default 120)")
    ap.add_argument("--first-id", type=int, default=0, help="flow id of flow 0 (default 0)")
    ap.add_argument("--max-flows", type=int, default=None, help="stop after this many flows")
    ap.add_argument("--schedule-out", default=None,
                    help="also write the flows started as a schedule file (docs/contracts.md format)")
    a = ap.parse_args(argv)
    if a.seed < 0 or a.first_id < 0:
        ap.error("--seed and --first-id must be >= 0")
    if not a.think_max >= 0:
        ap.error("--think-max must be >= 0")
    if a.flow_timeout <= 0:
        ap.error("--flow-timeout must be > 0")
    if a.mss < HEADER_BYTES:
        ap.error(f"--mss must be >= {HEADER_BYTES} (the flow header fits in one packet)")
    if a.max_flows is not None and a.max_flows < 1:
        ap.error("--max-flows must be >= 1")
    try:
        parse_sizes(a.sizes)
    except ValueError as e:
        ap.error(str(e))
    hosts = load_hosts(a.hosts)
    for flag, h in (("--host", a.host), ("--dst", a.dst)):
        if h not in hosts:
            ap.error(f"{flag} {h!r} is not in {a.hosts} (hosts: {', '.join(sorted(hosts))})")
    ref = Reference(a.host, a.dst, (hosts[a.dst], a.port or hosts_port(a.hosts) or 5001), a.seed, a.sizes,
                    a.think_max, a.mss, a.flow_timeout, a.t0, a.first_id, a.max_flows)
    rows = asyncio.run(ref.run(a.stop_at))
    write_csv(a.log, LOG_COLUMNS, rows)
    if a.schedule_out:
        write_schedule(a.schedule_out, ref.schedule_meta(), ref.flows)
    counts = {}
    for r in rows:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    print(f"workloads.reference {a.host}->{a.dst} seed {a.seed}: {len(rows)} flows: {counts}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
