"""iperf3 persistent/background traffic and the wrk + nginx HTTP mode, on loopback when the tools exist."""
import shutil
import subprocess
import time

import pytest

from orchestrate import schedule
from workloads import http, persistent
from contract.schedule import write_schedule
from workloads.launch import free_port

HOSTS = {h: f"10.0.0.{i}" for i, h in enumerate(("a1", "a2", "a3", "b1", "b2", "b3"), 1)}


def test_persistent_plan_spreads_50_flows_over_the_nine_classes():
    groups = persistent.persistent_plan(HOSTS, duration_s=2000, n=50, start_s=40, congestion="reno")
    assert sum(g.streams for g in groups) == 50 and len(groups) == 9
    assert sorted(g.streams for g in groups) == [5] * 4 + [6] * 5
    assert all(g.start_s == 40 and g.duration_s == 1960 for g in groups)
    ports = [(g.dst, g.port) for g in groups]
    assert len(set(ports)) == len(ports)                      # one iperf3 server per pair
    g = groups[0]
    assert g.client[:3] == ["iperf3", "-c", HOSTS[g.dst]] and "-C" in g.client and "reno" in g.client
    assert g.client[g.client.index("-P") + 1] == str(g.streams)
    assert g.client[g.client.index("-B") + 1] == HOSTS[g.src]
    with pytest.raises(ValueError, match="not in the hosts"):
        persistent.persistent_plan({"a1": "x"}, 100)
    with pytest.raises(ValueError, match="must exceed"):
        persistent.persistent_plan(HOSTS, 30, start_s=40)


def test_background_is_fixed_rate_udp():
    c = persistent.background_cmds("10.0.0.4", "10.0.0.1", 1e6, 60)["client"]
    assert "-u" in c and c[c.index("-b") + 1] == "1000000" and c[c.index("-t") + 1] == "60"


def test_iperf3_errors_and_non_json_are_named():
    with pytest.raises(persistent.Iperf3Error, match="unable to connect"):
        persistent.parse_iperf3_json('{"start": {}, "intervals": [], "end": {}, "error": "unable to connect"}')
    with pytest.raises(persistent.Iperf3Error, match="-J"):
        persistent.parse_iperf3_json("Connecting to host ...")


@pytest.mark.skipif(not shutil.which("iperf3"), reason="iperf3 is not installed (apt-get install iperf3)")
@pytest.mark.parametrize("udp", [False, True])
def test_iperf3_on_loopback_parses(udp):
    port = free_port()
    srv = subprocess.Popen(persistent.iperf3_server_cmd("127.0.0.1", port), stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)
        cmd = (persistent.background_cmds("127.0.0.1", "127.0.0.1", 20e6, 1, port)["client"] if udp else
               persistent.iperf3_client_cmd("127.0.0.1", port, 1, parallel=3, congestion="reno"))
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
        server_out, _ = srv.communicate(timeout=10)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    res = persistent.parse_iperf3_json(out)
    if udp:
        assert res["protocol"] == "UDP" and res["sent_mbps"] == pytest.approx(20, rel=0.1)
    else:
        assert res["protocol"] == "TCP" and len(res["streams"]) == 3 and res["congestion"] == "reno"
        assert all(s["bytes"] > 0 for s in res["streams"]) and res["received_mbps"] > 1
    assert persistent.parse_iperf3_json(server_out)["received_mbps"] > 0


def test_wrk_script_and_objects(tmp_path):
    paths = http.make_objects(tmp_path, [3, 1, 3, 200])
    assert paths == ["/obj/3.bin", "/obj/1.bin", "/obj/3.bin", "/obj/200.bin"]
    assert (tmp_path / "obj" / "200.bin").stat().st_size == 200 * 1460
    lua = http.wrk_lua(paths)
    assert lua.count('"/obj/') == 4 and '["Connection"] = "close"' in lua and "WRKJSON" in lua
    with pytest.raises(ValueError, match="WRKJSON"):
        http.parse_wrk("Running 1s test")


@pytest.mark.skipif(not (shutil.which("nginx") and shutil.which("wrk")),
                    reason="nginx and wrk are not installed (apt-get install nginx-light wrk)")
def test_wrk_fetches_pareto_objects_from_nginx_one_connection_each(tmp_path):
    meta, flows = schedule.generate(0.5, 10, 10, 5, "lomax:shape=1.3,mean_pkts=30", reverse_load=0)
    write_schedule(tmp_path / "s.csv", meta, flows)
    port = free_port()
    www = tmp_path / "www"
    paths = http.prepare(tmp_path / "s.csv", www, host="a1", port=port)
    ngx = subprocess.Popen(http.nginx_cmd(www), stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.7)
        assert ngx.poll() is None, ngx.stderr.read()
        out = subprocess.run(http.wrk_cmd(f"http://127.0.0.1:{port}/", www / "wrk.lua", 1, connections=2),
                             capture_output=True, text=True, timeout=30).stdout
    finally:
        ngx.terminate()
        ngx.wait(timeout=10)
    res = http.parse_wrk(out)
    assert res["requests"] > len(paths) and res["connect_errors"] == res["status_errors"] == 0
    log = [line.split() for line in (www / "access.log").read_text().splitlines()]
    assert len(log) >= res["requests"]
    assert {line[2] for line in log} == {"1"}                          # one request per connection
    assert len({line[1] for line in log}) == len(log)                  # every request on its own connection
    sizes = {f"/obj/{f.size_pkts}.bin": f.size_pkts * 1460 for f in flows if f.src == "a1"}
    full = [line for line in log if line[3] == "200" and int(line[4]) == sizes[line[6]]]
    # wrk stops after its duration with up to one request in flight per connection: nginx logs those
    # (200 or 499) with the bytes it had sent when wrk closed; every request wrk counted came whole
    cut = [line for line in log if line not in full]
    assert len(full) >= res["requests"] and len(cut) <= 2, cut
    assert all(line[3] in ("200", "499") and int(line[4]) < sizes[line[6]] for line in cut), cut
    assert {line[6] for line in log} == set(paths)                     # it cycled through the host's flows
