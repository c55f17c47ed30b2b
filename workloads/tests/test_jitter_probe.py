"""The machine's stall probe that the Go client's lateness bound is judged beside (jitter_probe.py): it sees a
stall, it excuses only the flows that overlap one, and a client that is late by itself is still counted."""
import os
import signal
import time

import pytest

from workloads.launch import PY, free_port, rows, run_client, start_server, stop_server
from workloads.tests.jitter_probe import JitterProbe, Stall, judge
from workloads.tests.test_flows import small_schedule


def _rows(lateness_ms, every_s=0.01):
    return [{"scheduled_s": f"{i * every_s:.6f}", "lateness_s": f"{late / 1e3:.6f}"}
            for i, late in enumerate(lateness_ms)]


def test_judge_counts_late_flows_without_a_stall():
    r = _rows([0.1] * 97 + [5.0] * 3)
    j = judge(r, 1000.0, [])
    assert (j.flows, j.beside_stall, j.p99_ms, j.raw_p99_ms) == (100, 0, pytest.approx(5.0), pytest.approx(5.0))


def test_judge_takes_only_the_stall_time_within_a_flow():
    r = _rows([0.1] * 97 + [5.0] * 3)             # the late ones are due at 0.97, 0.98 and 0.99 s after t0
    # one stall over all three (CPU 1) and an overlapping one on CPU 0 that must not count twice
    stalls = [Stall(cpu=1, due_unix=1000.969, late_s=0.030), Stall(cpu=0, due_unix=1000.975, late_s=0.010)]
    j = judge(r, 1000.0, stalls)
    assert j.beside_stall == 3
    assert j.p99_ms == pytest.approx(0.1) and j.raw_p99_ms == pytest.approx(5.0)
    assert j.worst_stall_ms == pytest.approx(30.0)
    # a stall 1 ms long inside a flow 5 ms late leaves it 5 - (1 + BEFORE_S + AFTER_S) = 2.5 ms late by itself
    short = judge(_rows([5.0]), 1000.0, [Stall(cpu=0, due_unix=1000.002, late_s=0.001)])
    assert short.beside_stall == 1 and short.p99_ms == pytest.approx(2.5)
    far = judge(r, 1000.0, [Stall(cpu=0, due_unix=1000.503, late_s=0.005)])   # between flows, 0.46 s before
    assert far.beside_stall == 0 and far.p99_ms == pytest.approx(5.0)


def test_a_long_late_start_is_not_explained_by_a_short_stall():
    r = _rows([0.1] * 99 + [300.0])
    j = judge(r, 1000.0, [Stall(cpu=0, due_unix=1000.995, late_s=0.004)])
    assert j.beside_stall == 1 and j.p99_ms == pytest.approx(300.0 - 5.5)


def test_probe_sees_a_stopped_cpu_sleeper(tmp_path):
    with JitterProbe(tmp_path) as probe:
        time.sleep(0.05)
        _, p, _ = probe.procs[0]
        t = time.time()
        os.kill(p.pid, signal.SIGSTOP)
        time.sleep(0.03)
        os.kill(p.pid, signal.SIGCONT)
        time.sleep(0.05)
    cpu0 = sorted(os.sched_getaffinity(0))[0]
    hits = [s for s in probe.stalls if s.cpu == cpu0 and s.late_s >= 0.025 and t - 0.005 <= s.due_unix <= t + 0.03]
    assert hits, probe.stalls
    assert probe.wakes > 50 * len(os.sched_getaffinity(0))


def test_a_client_late_by_itself_is_not_excused(tmp_path):
    """t0 half a second in the past: the first flows start late through no stall of the machine, and the judged
    p99 says so."""
    small_schedule(tmp_path / "s.csv", n=200, rate=150, seed=3)
    port = free_port()
    srv = start_server(tmp_path / "server.csv", "127.0.0.2", port, impl=PY)
    try:
        with JitterProbe(tmp_path / "probe") as probe:
            t0, _ = run_client(tmp_path / "s.csv", "a1", {"a1": "127.0.0.1", "b1": "127.0.0.2"},
                               tmp_path / "c.csv", port, t0_in=-0.5, impl=PY)
    finally:
        stop_server(srv)
    j = judge(rows(tmp_path / "c.csv"), t0, probe.stalls)
    assert j.p99_ms > 100, j
