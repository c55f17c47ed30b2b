"""Client and server against each other: every scheduled flow accounted for, bytes exact, outcomes right.

Each test runs against both implementations (the `impl` fixture, conftest.py): Python and Go (workloads/go)."""
import contextlib
import os
import random
import socket
import subprocess
import uuid

import pytest

from contract.schedule import Flow, write_schedule
from workloads.launch import REPO, free_port, rows, run_client, start_server, stop_server


def small_schedule(path, n=300, rate=150.0, seed=3, big=(), src="a1", dst="b1"):
    """n Poisson flows of 1..40 packets from src to dst, plus flows of the sizes in `big` (bytes)."""
    r = random.Random(seed)
    t, flows = 0.0, []
    for i in range(n):
        t += r.expovariate(rate)
        pk = r.randint(1, 40)
        flows.append(Flow(i, round(t, 6), pk * 1460, pk, src, dst, "forward", "web"))
    for j, b in enumerate(big):
        flows.append(Flow(n + j, round(t / 2 + j * 0.01, 6), b, -(-b // 1460), src, dst, "forward", "web"))
    flows.sort(key=lambda f: (f.start_s, f.flow_id))
    write_schedule(path, {"seed": seed, "mss": 1460}, flows)
    return flows


@pytest.mark.timing
@pytest.mark.parametrize("mode", ["push", "pull"])
def test_300_flows_over_loopback_all_completed_bytes_exact(tmp_path, mode, impl):
    flows = small_schedule(tmp_path / "s.csv", big=(3_000_000,))
    port = free_port()
    srv = start_server(tmp_path / "server.csv", "127.0.0.2", port, mode, impl=impl)
    try:
        t0, p = run_client(tmp_path / "s.csv", "a1", {"a1": "127.0.0.1", "b1": "127.0.0.2"},
                           tmp_path / "client.csv", port, extra=("--mode", mode), impl=impl)
    finally:
        stop_server(srv)
    c = {int(r["flow_id"]): r for r in rows(tmp_path / "client.csv")}
    s = {int(r["flow_id"]): r for r in rows(tmp_path / "server.csv")}
    assert set(c) == set(s) == {f.flow_id for f in flows}
    for f in flows:
        r = c[f.flow_id]
        assert r["outcome"] == "completed", r
        assert int(r["bytes"]) == f.size_bytes == int(s[f.flow_id]["bytes"])
        assert s[f.flow_id]["outcome"] == "completed"
        assert float(r["scheduled_s"]) == pytest.approx(f.start_s, abs=1e-6)
        assert float(r["lateness_s"]) == pytest.approx(float(r["actual_start_s"]) - f.start_s, abs=2e-6)
        assert 0 <= float(r["lateness_s"]) < 0.05
        t = [float(r[k]) for k in ("actual_start_s", "connect_s", "first_byte_s", "last_byte_s", "end_s")]
        assert t == sorted(t)
        # the server's times are unix times: its first byte comes after the client's connect
        assert float(s[f.flow_id]["first_byte_s"]) - t0 >= t[1] - 0.001
    assert "300" not in p.stderr


def test_open_loop_late_starts_are_logged_not_absorbed(tmp_path, impl):
    # t0 two seconds in the past: every flow is late by about 2 s minus its start, and none is skipped
    small_schedule(tmp_path / "s.csv", n=50, rate=100)
    port = free_port()
    srv = start_server(tmp_path / "server.csv", "127.0.0.1", port, impl=impl)
    try:
        run_client(tmp_path / "s.csv", "a1", {"a1": "127.0.0.1", "b1": "127.0.0.1"}, tmp_path / "c.csv", port,
                   t0_in=-2.0, impl=impl)
    finally:
        stop_server(srv)
    c = rows(tmp_path / "c.csv")
    assert len(c) == 50 and all(r["outcome"] == "completed" for r in c)
    for r in c:
        assert float(r["lateness_s"]) == pytest.approx(2.0 - float(r["scheduled_s"]), abs=0.3)


def test_refused_connections_are_logged_as_refused(tmp_path, impl):
    small_schedule(tmp_path / "s.csv", n=20, rate=200)
    port = free_port()     # nothing listens there
    run_client(tmp_path / "s.csv", "a1", {"a1": "127.0.0.1", "b1": "127.0.0.1"}, tmp_path / "c.csv", port, impl=impl)
    c = rows(tmp_path / "c.csv")
    assert len(c) == 20
    assert {r["outcome"] for r in c} == {"refused"}
    assert all("refused" in r["error"].lower() and r["connect_s"] == "" for r in c)


@contextlib.contextmanager
def silent_listener():
    """A port whose listener never accepts: the handshake completes in the kernel, the EOF never comes."""
    with socket.socket() as ls:
        ls.bind(("127.0.0.1", 0))
        ls.listen(16)
        yield ls.getsockname()[1]


def test_a_flow_the_server_never_finishes_times_out(tmp_path, impl):
    small_schedule(tmp_path / "s.csv", n=3, rate=50)
    with silent_listener() as port:
        _, p = run_client(tmp_path / "s.csv", "a1", {"a1": "127.0.0.1", "b1": "127.0.0.1"}, tmp_path / "c.csv",
                          port, extra=("--flow-timeout", "1"), impl=impl)
    c = rows(tmp_path / "c.csv")
    assert [r["outcome"] for r in c] == ["timed_out"] * 3
    for r in c:
        assert r["connect_s"] != ""
        assert float(r["end_s"]) - float(r["actual_start_s"]) == pytest.approx(1.0, abs=0.2)


def test_stop_at_aborts_open_flows_and_marks_the_rest_not_started(tmp_path, impl):
    flows = [Flow(0, 0.0, 1460, 1, "a1", "b1", "forward", "web"), Flow(2, 0.1, 1460, 1, "a2", "b1", "forward", "web"),
             Flow(1, 30.0, 1460, 1, "a1", "b1", "forward", "web")]
    write_schedule(tmp_path / "s.csv", {}, flows)
    import time
    with socket.socket() as ls:
        ls.bind(("127.0.0.1", 0))
        ls.listen(16)
        port = ls.getsockname()[1]
        t0 = time.time() + 0.3
        hp = tmp_path / "h.json"
        hp.write_text('{"hosts": {"a1": {"ip": "127.0.0.1"}, "b1": {"ip": "127.0.0.1"}}, "port": %d}' % port)
        p = subprocess.run([*impl.client, "--schedule", str(tmp_path / "s.csv"),
                            "--host", "a1", "--hosts", str(hp), "--t0", str(t0), "--log", str(tmp_path / "c.csv"),
                            "--stop-at", str(t0 + 1.0)], cwd=REPO, capture_output=True, text=True, timeout=20)
        assert p.returncode == 0, p.stderr
        assert time.time() - t0 < 5
    c = {r["flow_id"]: r for r in rows(tmp_path / "c.csv")}
    assert set(c) == {"0", "1"}                         # only this host's rows
    assert c["0"]["outcome"] == "timed_out" and "stop-at" in c["0"]["error"]
    assert c["1"]["outcome"] == "not_started" and c["1"]["actual_start_s"] == ""


def test_bad_inputs_get_clear_errors(tmp_path, impl):
    small_schedule(tmp_path / "s.csv", n=3, dst="b9")
    hp = tmp_path / "h.json"
    hp.write_text('{"a1": "127.0.0.1"}')
    p = subprocess.run([*impl.client, "--schedule", str(tmp_path / "s.csv"), "--host",
                        "a1", "--hosts", str(hp), "--t0", "0", "--log", str(tmp_path / "c.csv")],
                       cwd=REPO, capture_output=True, text=True)
    assert p.returncode != 0 and "b9" in p.stderr and "not in --hosts" in p.stderr
    p = subprocess.run([*impl.client, "--schedule", str(tmp_path / "nope.csv"),
                        "--host", "a1", "--hosts", str(hp), "--t0", "0", "--log", str(tmp_path / "c.csv")],
                       cwd=REPO, capture_output=True, text=True)
    assert p.returncode != 0 and "no such schedule" in p.stderr


def _ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_flows_across_network_namespaces(tmp_path, impl):
    tag = uuid.uuid4().hex[:6]
    cns, sns = f"fl-wl-c-{tag}", f"fl-wl-s-{tag}"
    made = []
    try:
        for ns in (cns, sns):
            _ip("netns", "add", ns)
            made.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        _ip("link", "add", f"wlc{tag}", "netns", cns, "type", "veth", "peer", "name", f"wls{tag}", "netns", sns)
        _ip("-n", cns, "addr", "add", "10.213.7.1/30", "dev", f"wlc{tag}")
        _ip("-n", sns, "addr", "add", "10.213.7.2/30", "dev", f"wls{tag}")
        _ip("-n", cns, "link", "set", f"wlc{tag}", "up")
        _ip("-n", sns, "link", "set", f"wls{tag}", "up")
        flows = small_schedule(tmp_path / "s.csv", n=200, rate=200, big=(1_000_000,))
        srv = start_server(tmp_path / "server.csv", "10.213.7.2", 5001, prefix=("ip", "netns", "exec", sns), impl=impl)
        try:
            run_client(tmp_path / "s.csv", "a1", {"a1": "10.213.7.1", "b1": "10.213.7.2"}, tmp_path / "c.csv", 5001,
                       prefix=("ip", "netns", "exec", cns), impl=impl)
        finally:
            stop_server(srv)
        c = {int(r["flow_id"]): r for r in rows(tmp_path / "c.csv")}
        s = {int(r["flow_id"]): r for r in rows(tmp_path / "server.csv")}
        assert set(c) == set(s) == {f.flow_id for f in flows}
        assert all(r["outcome"] == "completed" for r in c.values())
        assert all(int(c[f.flow_id]["bytes"]) == int(s[f.flow_id]["bytes"]) == f.size_bytes for f in flows)
        assert {r["peer"].split(":")[0] for r in s.values()} == {"10.213.7.1"}   # really crossed the veth
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_server_logs_open_flows_as_unfinished_at_sigterm(tmp_path, impl):
    port = free_port()
    srv = start_server(tmp_path / "server.csv", "127.0.0.1", port, impl=impl)
    import struct
    import time
    with socket.create_connection(("127.0.0.1", port)) as a, socket.create_connection(("127.0.0.1", port)) as b:
        a.sendall(struct.pack("!QQ", 7, 100_000) + bytes(1000))     # header and part of the flow
        b.sendall(b"\0" * 5)                                          # not even the header
        time.sleep(0.3)
        out = stop_server(srv)
    assert "2 flows logged" in out
    s = {r["flow_id"]: r for r in rows(tmp_path / "server.csv")}
    assert set(s) == {"7", ""}
    assert s["7"]["outcome"] == s[""]["outcome"] == "unfinished"
    assert s["7"]["bytes"] == "1016" and s[""]["bytes"] == "5"
    assert s["7"]["error"] == "server stopped while the flow was open"


def test_client_sigterm_writes_its_log(tmp_path, impl):
    import json
    import signal
    import time
    small_schedule(tmp_path / "s.csv", n=3, rate=50)
    with silent_listener() as port:
        (tmp_path / "h.json").write_text(json.dumps({"a1": "127.0.0.1", "b1": "127.0.0.1"}))
        p = subprocess.Popen([*impl.client, "--schedule", str(tmp_path / "s.csv"), "--host", "a1", "--hosts",
                              str(tmp_path / "h.json"), "--t0", str(time.time()), "--log", str(tmp_path / "c.csv"),
                              "--port", str(port)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err
    c = rows(tmp_path / "c.csv")
    assert [r["outcome"] for r in c] == ["timed_out"] * 3
    assert all(r["error"] == "still running at --stop-at (or a stop signal)" for r in c)
