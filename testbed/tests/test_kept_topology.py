"""A topology kept between runs (testbed/runner/kept.py): what an adopting run resets, when a kept network is
adopted or taken down, that the clean-up of a dead run spares it, that a run keeps it only when it ended
well, and that the option reaches the runner without redoing runs. Without a network (test_kept_topology_netns.py
runs the whole runner three times in a private namespace)."""
import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contract.tests.examples import SPEC
from orchestrate import pool, run_step, runspec
from testbed.runner import hostguard, kept, network
from testbed.runner.run import Runner
from topologies import dumbbell


@pytest.fixture
def lockdir(tmp_path, monkeypatch):
    monkeypatch.setenv("FAVORLAB_LOCK_DIR", str(tmp_path / "lock"))
    (tmp_path / "lock").mkdir()
    return tmp_path / "lock"


def spec(**aqm):
    s = copy.deepcopy(SPEC)
    if aqm:
        s["aqm"]["forward"] = aqm
    return s


def sleeper():
    p = subprocess.Popen(["sleep", "60"], start_new_session=True)
    return p, {"pid": p.pid, "start": hostguard.proc_start(p.pid)}


def test_an_adopting_run_makes_every_qdisc_again_from_zero_with_its_own_aqm():
    s = spec(kind="favor", args=["limit", "8"])
    jobs = kept.reset_jobs(dumbbell.qdisc_plan(s["topology"], s["aqm"]))
    rl = [" ".join(argv) for argv, _, _ in jobs["rl"]]
    # the bottleneck's root goes first (a replace of htb by htb would keep its counters and its class)
    assert rl.index("tc qdisc del dev rl-eth1 root") < rl.index(next(c for c in rl if "htb default" in c))
    assert any(c.endswith("favor limit 8") for c in rl)
    assert "tc qdisc del dev rr-eth0 root" in [" ".join(a) for a, _, _ in jobs["rr"]]
    for h in dumbbell.HOSTS:
        cmds = [" ".join(a) for a, _, _ in jobs[h]]
        assert f"tc qdisc del dev {h}-eth0 root" in cmds and all(c.startswith("tc ") for c in cmds)
    root = [" ".join(a) for a, _, _ in jobs[None]]
    for port in ("sL-a1", "sR-b3"):
        assert root.index(f"tc qdisc del dev {port} root") < next(i for i, c in enumerate(root) if port in c and "netem" in c)
    # every qdisc the plan makes is deleted and made, checked (the kept network has every root of the plan)
    made = [a for n in jobs for a, _, _ in jobs[n] if a[:3] != ["tc", "qdisc", "del"]]
    planned = [c for items in dumbbell.qdisc_plan(s["topology"], s["aqm"]).values() for cmds, _ in items for c in cmds]
    assert sorted(map(tuple, made)) == sorted(map(tuple, planned))
    assert all(check for n in jobs for _, check, _ in jobs[n])


def test_a_kept_network_serves_only_the_same_topology_with_its_holders_and_interfaces_alive():
    p, h = sleeper()
    try:
        s = spec()
        rec = {"key": kept.topology_key(s), "holders": {"rl": h}, "links": ["sL", "sR"]}
        assert kept.why_not_adopt(rec, s, True, {"sL", "sR"}) is None
        assert "does not reuse" in kept.why_not_adopt(rec, s, False, {"sL", "sR"})
        other = copy.deepcopy(s)
        other["topology"]["bottleneck_mbps"] = 100
        assert kept.why_not_adopt(rec, other, True, {"sL", "sR"}) == "another topology section"
        assert "interfaces gone: sR" in kept.why_not_adopt(rec, s, True, {"sL"})
        reused = dict(h, start="0")            # the same PID with another start time is another process
        assert "holders gone: rl" in kept.why_not_adopt(dict(rec, holders={"rl": reused}), s, True, {"sL", "sR"})
        assert "P4" in kept.unkeepable(spec(kind="p4", args=[]))
        assert "flood" in kept.unkeepable(dict(s, flood={"spoof": "10.9.0.0/16"}))
    finally:
        p.kill()
        p.wait()


def test_claim_adopts_a_matching_record_and_takes_down_any_other(lockdir, monkeypatch):
    monkeypatch.setattr(hostguard, "ip_links", lambda: [{"ifname": "sL"}, {"ifname": "sR"}])
    s, log = spec(), []
    p, h = sleeper()
    rec = {"key": kept.topology_key(s), "built_by": "run-1", "holders": {"a1": h}, "links": ["sL", "sR"]}
    kept.record_path().write_text(json.dumps(rec))
    got = kept.claim(s, True, log.append)
    assert got["built_by"] == "run-1" and not kept.record_path().exists()   # the network is now this run's
    assert hostguard.proc_start(p.pid) == h["start"]
    kept.record_path().write_text(json.dumps(rec))
    assert kept.claim(s, False, log.append) is None                         # a run without the option
    assert p.wait(timeout=10) is not None and not kept.record_path().exists()
    assert "taken down (this run does not reuse topologies)" in log[-1]


def test_the_clean_up_of_a_dead_run_spares_the_network_being_adopted(lockdir, monkeypatch):
    removed = []
    monkeypatch.setattr(hostguard, "ip_links", lambda: [{"ifname": n, "linkinfo": {"info_kind": "veth"}}
                                                        for n in ("sL-a1", "sR-b1")])
    monkeypatch.setattr(hostguard, "remove_links", lambda names, log: removed.extend(names) or names)
    kept_p, kept_h = sleeper()
    dead_p, dead_h = sleeper()
    pf = hostguard.PidFile()
    pf.start("dead-run", ["sL-a1", "sR-b1"])
    pf.add(kept_p.pid, "mininet:kept topology holder a1")
    pf.add(dead_p.pid, "tcpdump")
    rec = {"holders": {"a1": kept_h}, "links": ["sL-a1"]}
    hostguard.clean_stale(lambda m: None, pf, cgroup_root=lockdir / "none", spare=kept.spared(rec))
    assert dead_p.wait(timeout=10) is not None
    assert kept_p.poll() is None and removed == ["sR-b1"]
    kept_p.kill()
    kept_p.wait()


@pytest.mark.parametrize("reuse,failure,rate_ok,kept_it", [
    (True, None, True, True), (False, None, True, False), (True, "ERROR x", True, False), (True, None, False, False)])
def test_a_run_keeps_its_network_only_when_asked_ended_well_and_probed_well(tmp_path, lockdir, monkeypatch,
                                                                             reuse, failure, rate_ok, kept_it):
    monkeypatch.setattr(kept, "park", lambda ctx, rec: {"time_wait_left": {}})
    r = Runner(tmp_path, reuse_topology=reuse)
    r.ctx.spec, r.ctx.net, r.failure = spec(), object(), failure
    r.holders = {"a1": {"pid": 1, "start": "1"}}
    r.ctx.manifest["kept_topology"] = {}
    r.ctx.checks = {"bottleneck_rate_mbps": {"ok": rate_ok}, "rtt_a1-b1_ms": {"ok": True}, "cpu_busy": {"ok": False}}
    assert r.park() is kept_it
    assert (r.ctx.net is None) is kept_it


def test_an_adopted_network_reports_the_probes_of_the_run_that_built_it_judged_by_its_own_thresholds():
    rtt = {"configured": 4.0, "measured": 5.5, "ok": True, "tolerance_ms": 3.08}
    rate = {"configured": 10, "measured": 9.3, "ok": True, "min_share": 0.9, "attempts": []}
    rec = {"built_by": "run-1", "built_utc": "T", "probes": {"rtt_a1-b1_ms": rtt, "bottleneck_rate_mbps": rate}}
    assert kept.reused_probes(rec, {}) == {
        "rtt_a1-b1_ms": dict(rtt, probed_by="run-1", probed_utc="T"),
        "bottleneck_rate_mbps": dict(rate, probed_by="run-1", probed_utc="T")}
    # a run asking for a tighter RTT or rate than the builder is not passed on the builder's word
    strict = kept.reused_probes(rec, {"rtt_tolerance_ms": 0, "rate_min_share": 0.95})
    assert strict["rtt_a1-b1_ms"]["ok"] is False and strict["rtt_a1-b1_ms"]["tolerance_ms"] == 0.08
    assert strict["bottleneck_rate_mbps"]["ok"] is False and strict["bottleneck_rate_mbps"]["min_share"] == 0.95
    nxt = kept.record(spec(), dict(rec, runs=2, holders={}), {"a1": {}}, {"rtt_a1-b1_ms": {"ok": True, "measured": 9}})
    assert nxt["probes"] == rec["probes"] and nxt["runs"] == 3 and nxt["built_by"] == "run-1"
    assert nxt["links"] == network.root_links(spec())


def test_the_option_reaches_the_runner_and_redoes_no_run():
    member = pool.expand_pool({"kind": "local-vm", "vm_name": "favorlab", "keep_running": False, "retries": 2,
                               "reuse_topology": True, "count": 1})["members"][0]
    assert member["reuse_topology"] is True
    t = {"host": "127.0.0.1", "port": 2222, "user": "root"}
    cmd = run_step.remote_command(dict(t, reuse_topology=member["reuse_topology"]), "s", "c", "d")
    assert cmd[-1] == "--reuse-topology"
    assert "--reuse-topology" not in run_step.remote_command(t, "s", "c", "d")
    cfg = {"testbed": {"kind": "local-vm", "clock": "real", "keep_running": False}}
    with_it = {"testbed": dict(cfg["testbed"], reuse_topology=True)}
    assert runspec.testbed_param(cfg) == runspec.testbed_param(with_it)


def test_the_clean_up_of_a_host_takes_the_kept_network_down(lockdir, monkeypatch):
    removed, said = [], []
    monkeypatch.setattr(hostguard, "ip_links", lambda: [{"ifname": "sL"}])
    monkeypatch.setattr(hostguard, "remove_links", lambda names, log: removed.extend(names) or names)
    p, h = sleeper()
    kept.record_path().write_text(json.dumps({"built_by": "run-1", "holders": {"a1": h}, "links": ["sL", "sR"]}))
    assert kept.take_down(said.append) is True
    assert p.wait(timeout=10) is not None and removed == ["sL"] and not kept.record_path().exists()
    assert kept.take_down(said.append) is False and said[-1] == "no kept topology on this host"


def test_an_adopted_network_going_down_stops_its_holders_by_their_recorded_start_only(monkeypatch):
    """A holder that died and whose PID another process took is not that process: the record's start time
    says so, and the tear-down leaves the newcomer alone."""
    monkeypatch.setattr(hostguard, "ip_links", lambda: [])
    p, h = sleeper()
    other, h2 = sleeper()
    try:
        kept.KeptNet({"holders": {"a1": h, "a2": dict(h2, start="0")}, "links": []}).stop()
        assert p.wait(timeout=10) is not None
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_parking_reads_each_nodes_sockets_and_refuses_a_network_with_a_socket_left(tmp_path, lockdir, monkeypatch):
    """Each node's sockets are read from its /proc/<pid>/net (folders standing in here); ss -K closes the
    TIME-WAIT ones only in a node that has any; the record is written with the TIME-WAIT sockets still left
    per node; any other socket keeps the network from being parked (the caller takes it down)."""
    head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    tw = "   0: 0100000A:1389 0400000A:0FA0 06 00000000:00000000 03:00000F8C 00000000     0        0 0 3\n"
    est = "   1: 0100000A:1389 0400000A:0FA1 01 00000000:00000000 00:00000000 00000000     0        0 77 1\n"
    nodes = {"a1": 11, "b1": 12, "rl": 13}
    for n, pid in nodes.items():
        (tmp_path / str(pid) / "net").mkdir(parents=True)
        (tmp_path / str(pid) / "net" / "tcp").write_text(head + (tw if n != "rl" else ""))
    monkeypatch.setattr(kept.processes, "proc_net", lambda node: tmp_path / str(node.pid) / "net")
    calls = []

    def fake_out(argv, node=None, **kw):
        calls.append((node.name, argv))
        if node.name == "a1":      # the kernel closed a1's; b1's stays (no INET_DIAG_DESTROY, say)
            (tmp_path / "11" / "net" / "tcp").write_text(head)
        return ""
    monkeypatch.setattr(kept.processes, "out", fake_out)
    monkeypatch.setattr(kept, "record_path", lambda: lockdir / "kept.json")
    objs = {n: kept.KeptNode(n, pid) for n, pid in nodes.items()}
    net = type("Net", (), {"hosts": list(objs.values()), "get": staticmethod(objs.get)})()
    ctx = type("Ctx", (), {"net": net})()
    assert kept.park(ctx, {"runs": 1}) == {"time_wait_left": {"b1": 1}}
    assert sorted(calls) == [(n, ["ss", "-K", "-Htan", "state", "time-wait"]) for n in ("a1", "b1")]
    assert json.loads((lockdir / "kept.json").read_text())["runs"] == 1
    (tmp_path / "13" / "net" / "tcp").write_text(head + est)
    with pytest.raises(RuntimeError, match=r"sockets left after the run: .*rl.*ESTAB 10\.0\.0\.1:5001 10\.0\.0\.4:4001"):
        kept.park(ctx, {"runs": 2})


HOLD_SOCKETS = """
import socket, time
ls = socket.create_server(("127.0.0.1", 5001))
l6 = socket.create_server(("::1", 5002), family=socket.AF_INET6)
c = socket.create_connection(("127.0.0.1", 5001)); s, _ = ls.accept()
c6 = socket.create_connection(("::1", 5002)); s6, _ = l6.accept()
t = socket.create_connection(("127.0.0.1", 5001)); u, _ = ls.accept(); t.close(); u.close()
print("up", flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ss"),
                    reason="needs root, unshare(1) and ss(8) for a network namespace of the test's own")
def test_a_nodes_sockets_read_from_proc_are_what_ss_lists():
    """tcp_sockets against `ss -Htan` in a namespace of the test's own holding listeners, established pairs over
    IPv4 and IPv6 loopback, and a TIME-WAIT socket: the same states and addresses."""
    holder = subprocess.Popen(["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$0" -c "$1"', sys.executable,
                               HOLD_SOCKETS], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "up"
        ours = sorted(kept.tcp_sockets(Path(f"/proc/{holder.pid}/net")))
        p = subprocess.run(["nsenter", "-t", str(holder.pid), "-n", "ss", "-Htan"], capture_output=True, text=True,
                           timeout=30)
        theirs = sorted(f"{c[0]} {c[3]} {c[4]}" for c in (l.split() for l in p.stdout.splitlines()))
    finally:
        holder.kill()
        holder.wait()
    assert ours == theirs and {l.split()[0] for l in ours} >= {"LISTEN", "ESTAB", "TIME-WAIT"}, (ours, theirs)
    assert any("[::1]:5002" in l for l in ours)
