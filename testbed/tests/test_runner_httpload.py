"""Runner: the HTTP workload's traffic step (testbed/runner/httpload.py) through traffic.py's entry points:
nginx per left host and wrk per path from t0, on loopback addresses of this machine (no namespaces), then
the access logs kept, the objects removed and wrk's reports checked."""
import io
import json
import shutil
import socket
import sys
import time
from io import StringIO

import pytest

from contract.schedule import Flow, write_schedule
from testbed.runner import fidelity, httpload, processes, traffic
from testbed.runner.context import RunContext

IPS = {"a1": "127.0.0.11", "a2": "127.0.0.12", "b1": "127.0.0.21", "b2": "127.0.0.22"}


class NoNet:
    """Mininet's net.get: None runs a process in this namespace (processes.popen without mnexec)."""
    def get(self, _host):
        return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_ctx(tmp_path, connections=2, flows=None) -> RunContext:
    flows = flows if flows is not None else [
        Flow(0, 0.1, 3 * 1460, 3, "a1", "b1", "forward", "web"), Flow(1, 0.2, 1460, 1, "a1", "b2", "forward", "web"),
        Flow(2, 0.3, 40 * 1460, 40, "a1", "b1", "forward", "web"), Flow(3, 0.4, 1460, 1, "b1", "a2", "reverse", "web"),
        Flow(4, 0.5, 7 * 1460, 7, "a2", "b2", "forward", "web")]
    write_schedule(tmp_path / "schedule.csv", {"seed": 1}, flows)
    for d in ("log", "flows"):
        (tmp_path / d).mkdir(exist_ok=True)
    spec = {"run_id": f"http-test-{tmp_path.name}", "schedule": "schedule.csv", "duration_s": 1.0, "drain_s": 1.0,
            "topology": {"kind": "dumbbell", "mtu": 1500},
            "workload": {"kind": "web", "http": {"connections": connections}}}
    return RunContext(dir=tmp_path, log=processes.Log(tmp_path / "log" / "runner.log", stream=StringIO()), spec=spec,
                      hostsj={"hosts": {h: {"ip": ip} for h, ip in IPS.items()}, "port": free_port()}, net=NoNet())


def test_commands_per_path_from_the_schedule(tmp_path, monkeypatch):
    """nginx on each left host a forward row leaves from, one wrk per (left, right) path with -c connections
    and duration_s + drain_s, its script requesting that path's objects in schedule order; reverse rows
    left out."""
    started = []
    monkeypatch.setattr(processes, "popen", lambda argv, node=None, **kw: started.append(argv) or argv)
    ctx = http_ctx(tmp_path, connections=3)
    traffic.start_servers(ctx)
    clients = traffic.start_clients(ctx, t0=1234.5, stop_at=1236.0)
    nginx = [a for a in started if a[0] == "nginx"]
    assert [a[2] for a in nginx] == [str(httpload.server_root(ctx, h).resolve()) for h in ("a1", "a2")]
    conf = (httpload.server_root(ctx, "a1") / "nginx.conf").read_text()
    assert f"listen {IPS['a1']}:{ctx.hostsj['port']}" in conf and "keepalive_timeout 0;" in conf
    assert sorted(p.name for p in (httpload.server_root(ctx, "a1") / "obj").iterdir()) == ["1.bin", "3.bin", "40.bin"]
    assert (httpload.server_root(ctx, "a1") / "obj" / "40.bin").stat().st_size == 40 * 1460
    assert sorted(clients) == ["a1-b1", "a1-b2", "a2-b2"]
    wrk = clients["a1-b1"]
    assert wrk[:3] == [sys.executable, "-m", "workloads.http"] and wrk[3] == "wrk"
    args = dict(zip(wrk[4::2], wrk[5::2]))
    assert args == {"--t0": "1234.500000", "--duration": "2", "--connections": "3",
                    "--script": str(tmp_path / "log" / "wrk-a1-b1.lua"),
                    "--url": f"http://{IPS['a1']}:{ctx.hostsj['port']}/"}
    lua = (tmp_path / "log" / "wrk-a1-b1.lua").read_text()
    assert lua.index('"/obj/3.bin"') < lua.index('"/obj/40.bin"') and '"/obj/1.bin"' not in lua
    shutil.rmtree(httpload.server_root(ctx, "a1").parent)


def test_a_schedule_without_forward_flows_is_refused(tmp_path):
    ctx = http_ctx(tmp_path, flows=[Flow(0, 0.1, 1460, 1, "b1", "a1", "reverse", "web")])
    with pytest.raises(RuntimeError, match="no forward flows"):
        httpload.start_servers(ctx)


def test_nginx_and_wrk_run_from_t0_and_are_checked(tmp_path):
    """The real nginx and wrk (Debian's nginx-light and wrk) for 2 s on loopback: every path's wrk made
    requests, nginx logged each on a connection of its own, the objects are gone after the stop."""
    if not shutil.which("nginx") or not shutil.which("wrk"):
        pytest.skip("nginx or wrk missing (apt-get install nginx-light wrk: workloads/apt-packages.txt); runs where "
                    "scripts/bootstrap installed them")
    ctx = http_ctx(tmp_path, connections=1)
    traffic.start_servers(ctx)
    try:
        t0 = time.time() + 1.0
        clients = traffic.start_clients(ctx, t0, t0 + 2.0)
        traffic.wait_clients(ctx, clients, t0 + 2.0)
        started_late = [l for l in (tmp_path / "log").glob("wrk-*.out") if "WRKJSON" not in l.read_text()]
    finally:
        traffic.stop_servers(ctx)
    assert not ctx.reasons and not started_late, (ctx.reasons, [l.read_text() for l in started_late])
    assert time.time() >= t0 + 2.0
    fidelity.workload_checks(ctx)
    assert ctx.checks["http_requests"]["ok"], ctx.checks
    reports = json.loads((tmp_path / "flows" / "wrk.json").read_text())
    assert sorted(reports) == ["a1-b1", "a1-b2", "a2-b2"] and all(r["requests"] > 0 for r in reports.values())
    log = (tmp_path / "flows" / "nginx-a1.log").read_text().splitlines()
    # one request per connection: $connection_requests is 1 on every line
    assert log and all(line.split()[2] == "1" and line.split()[3] == "200" for line in log)
    assert not httpload.server_root(ctx, "a1").parent.exists()


def test_a_wrk_without_its_report_fails_the_check(tmp_path):
    (tmp_path / "log").mkdir()
    (tmp_path / "flows").mkdir()
    (tmp_path / "log" / "wrk-a1-b1.out").write_text("unable to connect to 10.0.0.1:5001 Connection refused\n")
    c = httpload.checks(tmp_path)["http_requests"]
    assert not c["ok"] and "a1-b1: no WRKJSON line" in c["measured"]


def test_the_wrk_launcher_waits_for_t0(monkeypatch):
    from workloads import http
    got = {}
    monkeypatch.setattr(http.os, "execvp", lambda f, argv: got.update(t=time.time(), argv=argv))
    t0 = time.time() + 0.3
    http.main(["wrk", "--t0", f"{t0:.6f}", "--duration", "2.5", "--connections", "4", "--script", "s.lua",
               "--url", "http://10.0.1.1:5001/"])
    assert got["t"] >= t0
    assert got["argv"][:4] == ["wrk", "-t1", "-c4", "-d3s"] and got["argv"][-1] == "http://10.0.1.1:5001/"
