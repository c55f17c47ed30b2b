"""The closed-loop reference user (workloads/reference.py) against the real Python flow server over loopback:
one flow at a time, each due at the previous end plus the seeded think time, sizes the seeded sequence."""
import csv
import json
import math
import socket
import subprocess
import time

import pytest

from workloads import reference
from workloads.client import LOG_COLUMNS
from contract.schedule import read_schedule
from workloads.launch import GUEST_PY, REPO, free_port, rows, start_server, stop_server

# Debian's python3 without the venv: the reference user runs on testbed hosts, standard library only
REF = [GUEST_PY, "-s", "-m", "workloads.reference"]
SLACK_S = 0.1      # scheduling slack on a shared 2-core machine; the exact closed-loop check is on scheduled_s


def run_served(tmp_path, seed, duration, extra=(), name="ref"):
    """run_ref against a fresh Python flow server (its own log: server-<name>.csv)."""
    port = free_port()
    srv = start_server(tmp_path / f"server-{name}.csv", "127.0.0.1", port)
    try:
        return run_ref(tmp_path, port, seed, duration, extra, name)
    finally:
        stop_server(srv)


def run_ref(tmp_path, port, seed, duration, extra=(), name="ref", lead=0.5, timeout=60):
    """Run the reference user us -> ur (both 127.0.0.1) for `duration` s; returns (t0, process, log rows, wall end)."""
    hp = tmp_path / f"{name}.hosts.json"
    hp.write_text(json.dumps({"hosts": {"us": {"ip": "127.0.0.1"}, "ur": {"ip": "127.0.0.1"}}, "port": port}))
    log = tmp_path / f"{name}.csv"
    t0 = time.time() + lead
    p = subprocess.run([*REF, "--host", "us", "--dst", "ur", "--hosts", str(hp), "--t0", f"{t0:.6f}",
                        "--stop-at", f"{t0 + duration:.6f}", "--seed", str(seed), "--log", str(log), *extra],
                       cwd=REPO, capture_output=True, text=True, timeout=timeout)
    end = time.time()
    assert p.returncode == 0, p.stdout + p.stderr
    return t0, p, rows(log), end


# ---------------------------------------------------------------- the seeded sequence (no network)

def test_same_seed_same_sequence_other_seed_other_sequence():
    a, b, c = reference.sequence(7, 300), reference.sequence(7, 300), reference.sequence(8, 300)
    assert a == b and [s for s, _ in a] != [s for s, _ in c]
    assert all(isinstance(s, int) and s >= 1 and 0 <= t <= 0.15 for s, t in a)
    # the size stream does not depend on the think-time bound (two streams)
    assert [s for s, _ in reference.sequence(7, 300, think_max=1.0)] == [s for s, _ in a]
    # fixed values: a change of the drawing code would silently change every replayed run (the default is
    # Table 1's Pareto II; Pareto I draws from the same uniforms)
    assert [s for s, _ in reference.sequence(11, 6)] == [7, 39, 15, 25, 13, 1]
    assert [s for s, _ in reference.sequence(11, 6, sizes="pareto:shape=1.3,mean_pkts=30")] == [12, 37, 18, 27, 17, 8]


def test_pareto_sizes_and_think_times_follow_their_distributions():
    q = reference.sequence(3, 20000, sizes="pareto:shape=1.3,mean_pkts=30")
    sizes = [s for s, _ in q]
    xm = 30 * 0.3 / 1.3                                   # classic Pareto minimum: 6.92, so L >= 7
    assert min(sizes) == math.ceil(xm)
    for k in (10, 30, 100):                               # P(L <= k) = P(X <= k) = 1 - (xm/k)^1.3
        emp = sum(s <= k for s in sizes) / len(sizes)
        assert emp == pytest.approx(1 - (xm / k) ** 1.3, abs=0.012), k
    thinks = [t for _, t in q]
    assert sum(thinks) / len(thinks) == pytest.approx(0.075, abs=0.002)
    assert 0 <= min(thinks) and max(thinks) <= 0.15
    lomax = [s for s, _ in reference.sequence(3, 20000, sizes="lomax:shape=1.3,mean_pkts=30")]
    p1 = 1 - (1 + 1 / (30 * 0.3)) ** -1.3                  # Lomax scale mean*(shape-1): P(L = 1) = 12.8 %
    assert min(lomax) == 1 and sum(s == 1 for s in lomax) / len(lomax) == pytest.approx(p1, abs=0.01)


def test_the_default_user_draws_table_1s_pareto_ii_with_its_2_packet_flows():
    """The chain's user (Section 8: "a Pareto law of shape 1.3 and mean 30 packets") draws Table 1's
    sizes by default: Pareto II, whose 1- and 2-packet flows the paper's user flows include."""
    stats = pytest.importorskip("scipy.stats")                  # the test side only: hosts have no scipy
    sizes = [s for s, _ in reference.sequence(5, 20000)]

    def surv(k):                                                # P(X > k), Lomax scale 30 * (1.3 - 1) = 9
        return (1 + k / 9.0) ** -1.3
    edges = [0, 1, 2, 3, 5, 7, 10, 20, 50, 100, math.inf]      # L in (edges[i], edges[i+1]]
    observed = [sum(lo < s <= hi for s in sizes) for lo, hi in zip(edges, edges[1:])]
    expected = [len(sizes) * (surv(lo) - (surv(hi) if hi < math.inf else 0)) for lo, hi in zip(edges, edges[1:])]
    assert stats.chisquare(observed, expected).pvalue > 0.01
    assert observed[1] / len(sizes) == pytest.approx(surv(1) - surv(2), abs=0.01)   # 2 packets: 10.2 %


def test_size_specs_mean_what_the_schedule_generator_means():
    schedule = pytest.importorskip("orchestrate.schedule")      # controller side (numpy)
    for text in ("pareto:shape=1.3,mean_pkts=30", "pareto:mean_pkts=10", "lomax:shape=1.5,mean_pkts=100",
                 "exponential:mean_pkts=6"):
        name, params = reference.parse_sizes(text)
        s = schedule.parse_sizes(text)
        assert (name, params) == (s.name, s.params), text
    for bad, why in (("bounded_pareto:shape=1.3,max_pkts=100", "not offered"), ("pareto:shape=1", "shape"),
                     ("pareto:mean=3", "bad parameter")):
        with pytest.raises(ValueError, match=why):
            reference.parse_sizes(bad)


# ---------------------------------------------------------------- against the real server

@pytest.mark.timing     # bounds each think gap and the stop: nothing may starve it (pytest.ini)
def test_closed_loop_over_loopback_sequential_seeded_and_stops_at_stop_at(tmp_path):
    t0, p, log, end = run_served(tmp_path, 11, 3.0, extra=("--schedule-out", str(tmp_path / "sched.csv")))
    _, _, again, _ = run_served(tmp_path, 11, 1.5, name="again")
    _, _, other, _ = run_served(tmp_path, 12, 1.5, name="other")
    # the log is a client log: the contract's columns, in order
    with (tmp_path / "ref.csv").open(newline="") as fh:
        assert next(csv.reader(fh)) == LOG_COLUMNS
    n = len(log)
    assert n >= 8, p.stdout                                  # about 3 s / (0.075 s + a few ms)
    assert all(r["outcome"] == "completed" and r["error"] == "" for r in log)
    assert [int(r["flow_id"]) for r in log] == list(range(n))
    assert {(r["src"], r["dst"]) for r in log} == {("us", "ur")}
    # sizes are the seed's sequence exactly, and the same seed replays it
    seq = reference.sequence(11, n)
    assert [int(r["size_bytes"]) for r in log] == [s * 1460 for s, _ in seq]
    assert [int(r["bytes"]) for r in log] == [s * 1460 for s, _ in seq]
    assert [r["size_bytes"] for r in again] == [r["size_bytes"] for r in log][:len(again)]
    assert [r["size_bytes"] for r in other] != [r["size_bytes"] for r in log][:len(other)]
    # one flow at a time: each starts after the previous one ended, within think_max (+ slack) of it,
    # and was due exactly the drawn think time after that end
    assert float(log[0]["scheduled_s"]) == 0.0
    for i, (prev, cur) in enumerate(zip(log, log[1:])):
        gap = float(cur["actual_start_s"]) - float(prev["end_s"])
        assert 0 <= gap <= reference.THINK_MAX_S + SLACK_S, (i, gap)
        assert float(cur["scheduled_s"]) - float(prev["end_s"]) == pytest.approx(seq[i][1], abs=2e-6)
    for r in log:
        t = [float(r[k]) for k in ("actual_start_s", "connect_s", "first_byte_s", "last_byte_s", "end_s")]
        assert t == sorted(t)
        assert float(r["lateness_s"]) == pytest.approx(float(r["actual_start_s"]) - float(r["scheduled_s"]), abs=2e-6)
    # stops at --stop-at: nothing started after it, the process ended right after it
    assert float(log[-1]["actual_start_s"]) < 3.0
    assert end - t0 < 3.0 + 2.0
    # the server saw the same flows, bytes exact
    srv_rows = {int(r["flow_id"]): r for r in rows(tmp_path / "server-ref.csv")}
    assert set(srv_rows) == set(range(n))
    for r in log:
        assert srv_rows[int(r["flow_id"])]["outcome"] == "completed"
        assert int(srv_rows[int(r["flow_id"])]["bytes"]) == int(r["size_bytes"])
    assert reference.check_log(tmp_path / "ref.csv")["reference_loop"]["ok"]
    # --schedule-out: the flows it ran, readable as a schedule (extraction can pair them like any other)
    meta, flows = read_schedule(tmp_path / "sched.csv")
    assert meta["generator"] == "workloads.reference" and meta["seed"] == "11"
    assert [(f.flow_id, f.size_bytes, f.kind) for f in flows] == [(int(r["flow_id"]), int(r["size_bytes"]), "reference")
                                                                   for r in log]
    assert [f"{f.start_s:.6f}" for f in flows] == [r["scheduled_s"] for r in log]


def test_stop_at_aborts_the_open_flow(tmp_path):
    # a listener that never accepts: the handshake completes in the kernel, the server's EOF never comes
    with socket.socket() as ls:
        ls.bind(("127.0.0.1", 0))
        ls.listen(16)
        t0, _, log, end = run_ref(tmp_path, ls.getsockname()[1], 11, 1.0)
    assert len(log) == 1
    assert log[0]["outcome"] == "timed_out" and log[0]["error"] == reference.STOP_ERROR
    assert float(log[0]["end_s"]) == pytest.approx(1.0, abs=0.2)
    assert end - t0 < 1.0 + 2.0
    assert not reference.check_log(tmp_path / "ref.csv")["reference_loop"]["ok"]    # nothing completed


def test_failed_flows_keep_the_loop_going_and_max_flows(tmp_path):
    port = free_port()                                        # nothing listens: every flow is refused
    _, p, log, _ = run_ref(tmp_path, port, 5, 10.0, extra=("--max-flows", "6", "--first-id", "1000"))
    assert [r["outcome"] for r in log] == ["refused"] * 6
    assert [int(r["flow_id"]) for r in log] == list(range(1000, 1006))
    seq = reference.sequence(5, 6)
    for i, (prev, cur) in enumerate(zip(log, log[1:])):
        assert float(cur["scheduled_s"]) - float(prev["end_s"]) == pytest.approx(seq[i][1], abs=2e-6)
    assert "6 flows" in p.stdout


def test_bad_inputs_get_clear_errors(tmp_path):
    hp = tmp_path / "h.json"
    hp.write_text('{"us": "127.0.0.1"}')
    base = [*REF, "--host", "us", "--hosts", str(hp), "--t0", "0", "--seed", "1", "--log", str(tmp_path / "l.csv")]
    p = subprocess.run([*base, "--dst", "ur"], cwd=REPO, capture_output=True, text=True)
    assert p.returncode == 2 and "--dst 'ur' is not in" in p.stderr
    p = subprocess.run([*base, "--dst", "us", "--sizes", "bounded_pareto:max_pkts=9"], cwd=REPO,
                       capture_output=True, text=True)
    assert p.returncode == 2 and "not offered" in p.stderr


def test_check_log_flags_a_loop_that_was_not_closed(tmp_path):
    cols = LOG_COLUMNS
    good = dict.fromkeys(cols, "")
    rows_ = [dict(good, flow_id=0, scheduled_s="0.000000", actual_start_s="0.000100", end_s="0.500000",
                  outcome="completed"),
             dict(good, flow_id=1, scheduled_s="0.400000", actual_start_s="0.400100", end_s="0.900000",
                  outcome="completed")]              # due before the previous flow ended: two at once
    with (tmp_path / "l.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, cols)
        w.writeheader()
        w.writerows(rows_)
    res = reference.check_log(tmp_path / "l.csv")["reference_loop"]
    assert not res["ok"] and "flow 1" in res["problems"][0]
