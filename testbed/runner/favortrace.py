"""The favor trace (qdisc/tools/favor_trace.py): one recorder on the queue that runs favor, started before
the traffic and stopped after it, and the checks that it is complete and agrees with the queue's counters."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from contract import rundir
from testbed.runner import processes
from testbed.runner.hoststate import qdisc_stats


TRACER = Path("/opt/favorlab/qdisc/tools/favor_trace.py")


TRACE_PARSE_WAIT_S = 300

# Decisions per packet time of the bottleneck, at most: a departure's favored or standard row, and the drops and
# push-outs of an overloaded queue on top (the figures config's FaQ run at 100 Mb/s and load 0.85 recorded 0.75
# per packet time over its 90 s; docs/measurements.md)
EVENTS_PER_PACKET_TIME = 1.5
WINDOW_SLACK_S = 10       # the recorder starts before t0 and stops after the drain


def expect_events(spec: dict) -> int:
    """The most favor_enqueue events a run records: the bottleneck's packet rate (full-sized packets) times
    EVENTS_PER_PACKET_TIME over the recorder's window. favor_trace.py sizes its ring buffer from it."""
    topo = spec["topology"]
    mbps = topo.get("bottleneck_mbps") or topo["hop_mbps"]      # a chain's AQM hops all run at hop_mbps
    pps = float(mbps) * 1e6 / 8 / float(topo.get("mtu") or 1500)
    window = (float(spec.get("duration_s") or 0) + float(spec.get("drain_s") or 0)
              + float((spec.get("workload") or {}).get("warmup_cross_s") or 0) + WINDOW_SLACK_S)
    return int(pps * EVENTS_PER_PACKET_TIME * window)


# favor_trace.py's verdicts and the counters of sch_favor's xstats they mirror (one event per decision)
TRACE_COUNTERS = {"favored": "favored", "standard": "standard", "pushout_victim": "pushouts",
                  "drop_favored": "drop_favored", "drop_standard": "drop_standard"}


def trace_counts_check(path: Path, before: dict, after: dict, node: str, dev: str, at_stop: dict | None = None) -> dict:
    """Each kind of decision the favor trace recorded, counted, against the traced queue's counters. The
    recorder starts after before.json and stops before after.json is read (it reads its trace out in between),
    so a complete trace (lost_events=0) must hold at least every decision from before.json to the counters
    read as it was stopped (qdisc/trace-stop.json) and at most every decision up to after.json: equal when
    nothing passed the queue after the traffic. A trace with lost events is not compared (favor_trace says
    so). What the favored share of Eq. 5 and F21/F22 is computed from rests on it."""
    def favor_q(stats):
        return next((q for q in (stats or {}).get(node, []) if q.get("kind") == "favor" and q.get("dev") == dev
                     and "favored" in q), None)
    qa, qb, qs = favor_q(after), favor_q(before), favor_q(at_stop)
    if qa is None or not path.is_file():
        return {}
    # The trace is raw (favor_trace.py --raw): each event's "verdict=X " counted by bytes.count, one pass in C
    # per verdict, as a Python loop over its tens of thousands of lines takes seconds of the emulated guest.
    data = path.read_bytes()
    counted = {v: data.count(f" verdict={v} ".encode()) for v in TRACE_COUNTERS}
    complete = trace_check(path)["ok"]
    configured = "counters at the trace's stop - before <= trace events <= counters after - before, per decision"
    if not complete:
        return {"favor_trace_counts": {"configured": configured,
                                       "measured": "not compared: the trace is incomplete (favor_trace)",
                                       "ok": True, "severity": "warning"}}
    upto = {v: qa[c] - (qb or {}).get(c, 0) for v, c in TRACE_COUNTERS.items()}
    least = {v: (qs or qa)[c] - (qb or {}).get(c, 0) for v, c in TRACE_COUNTERS.items()}
    differ = {v: {"trace": counted[v], "counters_at_stop": least[v], "counters_after": upto[v]}
              for v in counted if not least[v] <= counted[v] <= upto[v]}
    later = {v: upto[v] - counted[v] for v in counted if upto[v] != counted[v]}
    return {"favor_trace_counts": {"configured": configured,
                                   "measured": differ or dict(counted, **({"after_the_trace": later} if later else {})),
                                   "ok": not differ, "severity": "warning"}}


def trace_check(path: Path) -> dict:
    """The favor trace is complete when its recorder wrote its last line, "# lost_events=0". A trace with
    lost events undercounts favored packets (Eq. 5, F21, F22): a warning, the latency metrics stand."""
    last = ""
    if path.is_file():
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - 200))
            last = f.read().decode(errors="replace").strip().splitlines()[-1:] or [""]
            last = last[0]
    m = re.fullmatch(r"# lost_events=(\d+)", last)
    measured = int(m.group(1)) if m else "no final lost_events line (recorder killed or failed: log/favor-trace.out)"
    return {"configured": "lost_events=0", "measured": measured, "ok": measured == 0, "severity": "warning"}


def start(ctx) -> None:
    """The recorder on the bottleneck when the forward AQM is favor and the spec asks for its trace."""
    fwd = ctx.spec["aqm"]["forward"]["kind"]
    if fwd != "favor" or not ctx.spec.get("trace_favor"):
        return
    if not TRACER.is_file():
        ctx.checks["favor_trace"] = {"configured": True, "measured": f"not traced: {TRACER} missing",
                                     "ok": True}
        ctx.log(f"favor trace: {TRACER} missing, not traced")
        return
    if not any(h["aqm"] for h in ctx.hostsj.get("hops", [{"aqm": True}])):
        return     # a chain with aqm_hops [] has no favor queue to trace
    bneck = ctx.hostsj["bottleneck"]    # the dumbbell's rl-eth1; the chain's first AQM hop (r0-next)
    ctx.procs["trace"] = processes.popen([sys.executable, str(TRACER), "--raw", "--out",
                                          str(ctx.dir / rundir.FAVOR_TRACE), "--dev", bneck["intf"],
                                          "--expect-events", str(expect_events(ctx.spec))],
                                         ctx.net.get(bneck["node"]),
                                         stdout=(ctx.dir / "log" / "favor-trace.out").open("w"),
                                         stderr=subprocess.STDOUT)
    ctx.checks["favor_trace"] = {"configured": True, "measured": "traced", "ok": True}


def stop(ctx) -> None:
    """Signal the recorder to stop, not waiting: it reads the kernel's buffer out (seconds in a TCG guest)
    while the run reads its state after the traffic and its checks; wait_stopped waits for it then."""
    if "trace" not in ctx.procs:
        return
    # the queue's counters as the recorder stops: its trace must hold every decision up to here
    # (trace_counts_check); what passes later (a lingering FIN while the trace is parsed) only after.json has
    ctx.qdisc_at_trace_stop = qdisc_stats(ctx.net, ctx.routers())
    ctx.write_json("qdisc/trace-stop.json", ctx.qdisc_at_trace_stop)
    try:
        os.killpg(ctx.procs["trace"].pid, signal.SIGINT)
    except ProcessLookupError:
        pass


def wait_stopped(ctx, qdisc_after: dict) -> dict:
    """Wait for the recorder stop() signalled to have written its trace (outside the measured window: give it
    time); its favor_trace check and counts_check (nothing when the run was not traced)."""
    if "trace" not in ctx.procs:
        return {}
    processes.stop(ctx.procs.pop("trace"), signal.SIGINT, wait=TRACE_PARSE_WAIT_S)
    return {"favor_trace": trace_check(ctx.dir / rundir.FAVOR_TRACE), **counts_check(ctx, qdisc_after)}


def counts_check(ctx, qdisc_after: dict) -> dict:
    """trace_counts_check of the queue the recorder traced (no trace file: no check)."""
    bneck = ctx.hostsj["bottleneck"]
    return trace_counts_check(ctx.dir / rundir.FAVOR_TRACE, ctx.qdisc_before, qdisc_after,
                              bneck["node"], bneck["intf"], ctx.qdisc_at_trace_stop)
