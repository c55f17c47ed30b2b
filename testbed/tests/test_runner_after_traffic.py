"""The steps of a run after its traffic: how long the captures outlast the clients, the favor trace's
read-out beside the state after, the foreign-packet checks of the copied captures, and the manifest's
versions."""
import copy
import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from contract import rundir
from contract.tests.examples import SPEC, chain_spec
from testbed.runner import captures, favortrace, processes, traffic
from testbed.runner.context import RunContext

REPO = Path(__file__).resolve().parents[2]


def _ctx(run_dir: Path) -> RunContext:
    return RunContext(dir=run_dir, log=processes.Log(run_dir / "log" / "runner.log"))


def test_the_foreign_packet_checks_read_only_captures_inside_the_runs_pcap_folder(tmp_path):
    """hosts.json comes from a testbed the controller need not trust: a capture point named as a path is not
    read (here a file beside pcap/ full of foreign packets), the plain names are."""
    if not shutil.which("tcpdump"):
        pytest.skip("tcpdump not installed (apt-get install tcpdump); the controller's check needs it")
    from scapy.all import IP, TCP, Ether, wrpcap
    hostsj = {"hosts": {"a1": {"ip": "10.1.0.1", "gw": "10.1.0.254"}, "b1": {"ip": "10.2.0.1", "gw": "10.2.0.254"}},
              "capture_points": {"bneck-in": {"node": "rl", "intf": "rl-eth0"},
                                 "../outside": {"node": "rl", "intf": "rl-eth1"}}}
    (tmp_path / "pcap").mkdir()
    wrpcap(str(tmp_path / "pcap" / "bneck-in.pcap"), [Ether() / IP(src="10.1.0.1", dst="10.2.0.1") / TCP()])
    wrpcap(str(tmp_path / "outside.pcap"), [Ether() / IP(src="10.9.9.9", dst="10.2.0.1") / TCP()] * 3)
    checks = captures.foreign_checks(tmp_path, hostsj)
    assert checks["foreign_traffic_bottleneck"] == {
        "configured": "only packets between the experiment's addresses (10.1.0.1, 10.1.0.254, 10.2.0.1, 10.2.0.254)",
        "measured": 0, "ok": True}
    assert checks["foreign_traffic_elsewhere"]["measured"] == 0


def test_the_captures_outlast_the_clients_by_two_round_trips_and_full_queues_at_most_a_second():
    """The last packets' wait: twice the longest probed RTT plus both bottleneck queues' drain (Table 1:
    2 x (200 ms + 16 packets of 1500 B at 10 Mb/s) = 0.4384 s); 1 s for the chain, or without probed RTTs."""
    def ctx(spec, rtts):
        checks = {f"rtt_{p}_ms": {"configured": r, "measured": r, "ok": True} for p, r in rtts.items()}
        checks["cpu_busy"] = {"measured": 0.5, "ok": True}
        return RunContext(dir=Path("."), log=None, spec=spec, checks=checks)
    spec = copy.deepcopy(SPEC)
    spec["topology"].update(bottleneck_mbps=10, buffer_pkts=8, reverse_buffer_pkts=8, mtu=1500)
    assert traffic.last_packets_s(ctx(spec, {"a1-b1": 4.9, "a3-b3": 200.0})) == pytest.approx(0.4384)
    spec["topology"].update(bottleneck_mbps=1, buffer_pkts=83)
    assert traffic.last_packets_s(ctx(spec, {"a3-b3": 200.0})) == traffic.LAST_PACKETS_MAX_S == 1.0
    assert traffic.last_packets_s(ctx(spec, {})) == 1.0
    assert traffic.last_packets_s(ctx(chain_spec(), {"a-b": 20.0})) == 1.0


def test_the_manifest_names_mininets_version_as_mininet_net_sets_it():
    """Read from mininet/net.py's text, not by importing it: the same string."""
    probe = ("import json, mininet.net; from testbed.runner import manifest; "
             "print(json.dumps([manifest.mininet_version(), mininet.net.VERSION]))")
    p = subprocess.run(["/usr/bin/python3", "-c", probe], cwd=REPO,
                       capture_output=True, text=True)
    if "No module named 'mininet'" in p.stderr:
        pytest.skip("Debian's python3 cannot import mininet (apt-get install mininet)")
    read, imported = json.loads(p.stdout)
    assert read == imported and read


def test_the_trace_recorder_reads_its_buffer_out_while_the_run_reads_its_state_after(tmp_path, monkeypatch):
    """favortrace.stop signals the recorder and returns at once, the queue's counters at that moment written;
    wait_stopped waits for the trace to be written and checks it against the counters after."""
    trace = tmp_path / rundir.FAVOR_TRACE
    rec = textwrap.dedent(f"""\
        import signal, time
        def stop(*_):
            time.sleep(1.0)                    # the kernel's buffer read out
            open({str(trace)!r}, "w").write("# favor_trace raw offset=0.0\\n"
                "  x-0 [001] 1.0: favor_enqueue: dev=rl-eth1 verdict=favored qlen=1\\n# lost_events=0\\n")
            raise SystemExit(0)
        signal.signal(signal.SIGINT, stop)
        print("ready", flush=True)
        time.sleep(60)
        """)
    p = subprocess.Popen([sys.executable, "-c", rec], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert p.stdout.readline() == "ready\n"

    def stats(favored):
        return {"rl": [{"kind": "favor", "dev": "rl-eth1", "favored": favored, "standard": 0, "pushouts": 0,
                        "drop_favored": 0, "drop_standard": 0}]}
    monkeypatch.setattr(favortrace, "qdisc_stats", lambda net, routers: stats(1))
    ctx = _ctx(tmp_path)
    ctx.hostsj, ctx.qdisc_before, ctx.procs["trace"] = {"bottleneck": {"node": "rl", "intf": "rl-eth1"}}, stats(0), p
    try:
        t = time.monotonic()
        favortrace.stop(ctx)
        assert time.monotonic() - t < 0.5 and p.poll() is None and not trace.exists()
        assert json.loads((tmp_path / "qdisc/trace-stop.json").read_text()) == stats(1)
        checks = favortrace.wait_stopped(ctx, stats(1))
    finally:
        p.kill()
        p.wait()
    assert p.returncode == 0 and "trace" not in ctx.procs
    assert checks["favor_trace"]["ok"] and checks["favor_trace_counts"]["ok"], checks
    assert checks["favor_trace_counts"]["measured"]["favored"] == 1
    assert favortrace.wait_stopped(ctx, stats(1)) == {}       # not traced: nothing to wait for
