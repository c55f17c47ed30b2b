"""Runner: the steps of a run without a network (probes, captures, favor trace, traffic, fidelity checks),
with stand-ins for the processes they start."""
import copy
import csv
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contract import spec as specmod
from contract.tests.examples import SPEC, chain_spec
from testbed.runner import captures, cpu, favortrace, fidelity, longflows, network, probes, processes, traffic
from testbed.runner.context import RunContext
from topologies import dumbbell


REPO = Path(__file__).resolve().parents[2]


def test_rtt_probe_checks_every_path_against_its_own_rtt_and_probes_them_at_once(monkeypatch):
    import time as _t
    hostsj = {"hosts": {h: {"ip": f"10.0.0.{i}"} for i, h in enumerate(["a1", "a2", "b1", "b2"], 1)},
              "paths_rtt_ms": {"a1-b1": 4.0, "a1-b2": 74.0, "a2-b1": 28.0, "a2-b2": 98.0}}
    measured = {("a1", "10.0.0.3"): 4.8, ("a1", "10.0.0.4"): 75.1, ("a2", "10.0.0.3"): 35.0, ("a2", "10.0.0.4"): None}

    def fake_ping(net, src, ip, count=4):
        _t.sleep(0.2)
        return measured[(src, ip)]
    monkeypatch.setattr(probes, "ping_rtt", fake_ping)
    t = _t.monotonic()
    c = probes.probe_rtts(None, hostsj, tolerance_ms=3.0)
    assert _t.monotonic() - t < 0.8                    # 4 paths x 2 pings x 0.2 s one after another: 1.6 s
    assert {k: v["ok"] for k, v in c.items()} == {"rtt_a1-b1_ms": True, "rtt_a1-b2_ms": True,
                                                    "rtt_a2-b1_ms": False, "rtt_a2-b2_ms": False}
    assert c["rtt_a2-b1_ms"]["measured"] == 35.0 and c["rtt_a2-b1_ms"]["tolerance_ms"] == 3.56


def test_rate_probe_retries_a_low_probe_and_keeps_every_attempt(monkeypatch):
    """A stalled probe is tried again and the best kept; a link that stays slow fails after 3 probes."""
    def stub(*rates):
        it = iter(rates)
        monkeypatch.setattr(probes, "probe_rate_once", lambda *a: (next(it), 0.0))
    stub(8.1, 9.8, 5.0)
    c = probes.probe_rate(None, {}, 10.0, print)["bottleneck_rate_mbps"]
    assert c["ok"] and c["measured"] == 9.8 and [a["measured"] for a in c["attempts"]] == [8.1, 9.8]
    stub(9.5)
    c = probes.probe_rate(None, {}, 10.0, print)["bottleneck_rate_mbps"]
    assert c["ok"] and len(c["attempts"]) == 1
    stub(6.0, None, 7.0)
    c = probes.probe_rate(None, {}, 10.0, print)["bottleneck_rate_mbps"]
    assert not c["ok"] and c["measured"] == 7.0 and len(c["attempts"]) == 3
    stub(None, None, None)
    c = probes.probe_rate(None, {}, 10.0, print)["bottleneck_rate_mbps"]
    assert not c["ok"] and c["measured"] is None


def test_workload_impl_picks_the_flow_client_and_server(monkeypatch, tmp_path):
    assert traffic.workload_cmd("client", {}) == [sys.executable, "-m", "workloads.client"]
    fake = tmp_path / "favorflow"
    monkeypatch.setattr(traffic, "FAVORFLOW", fake)
    with pytest.raises(RuntimeError, match="workloads/go/build"):     # the error names the fix
        traffic.workload_cmd("server", {"workload_impl": "go"})
    fake.write_text("")
    assert traffic.workload_cmd("server", {"workload_impl": "go"}) == [str(fake), "server"]
    bad = copy.deepcopy(SPEC)
    bad["workload_impl"] = "rust"
    with pytest.raises(specmod.SpecError, match="workload_impl"):
        specmod.validate(bad)


def test_runner_dispatches_on_the_topology_kind():
    from topologies import chain
    assert network.topology_module("chain") is chain
    assert network.topology_module("dumbbell") is dumbbell
    with pytest.raises(specmod.SpecError, match="topology.kind='ring'"):
        network.topology_module("ring")


def test_capture_points_come_from_the_topology():
    """The chain's tcpdumps are chain.capture_points (not rl/rr); the dumbbell's stay exactly as they were."""
    from topologies import chain
    t = chain_spec()["topology"]
    got = captures.capture_points(chain.hosts_json(t))
    assert got == {n: (p["node"], p["intf"]) for n, p in chain.capture_points(t).items()}
    assert got["bneck-in"] == ("r0", "r0-lan") and got["bneck-out"] == ("r1", "r1-prev") and len(got) == 4
    dumb = captures.capture_points(dumbbell.hosts_json(dict(SPEC["topology"])))
    assert dumb == {**{f"sender-{h}": (h, f"{h}-eth0") for h in dumbbell.HOSTS},
                    "bneck-in": ("rl", "rl-eth0"), "bneck-out": ("rr", "rr-eth0")}


def test_chain_probes_the_reference_path_a_sample_of_cross_paths_and_one_hop():
    from topologies import chain
    hj = chain.hosts_json(chain_spec()["topology"])
    paths = probes.rtt_probe_paths(hj)
    assert paths["us-ur"] == 110
    # each hop's first and last cross flow: 22 and 202 ms
    assert {k: v for k, v in paths.items() if k != "us-ur"} == {
        **{f"x{k}s1-x{k}r": 22 for k in range(1, 6)}, **{f"x{k}s10-x{k}r": 202 for k in range(1, 6)}}
    assert probes.rate_probe_pair(hj) == ("x1s1", "x1r")
    alone = chain.hosts_json(chain_spec(cross_flows_per_hop=0, cross_delays_ms=[])["topology"])
    assert probes.rate_probe_pair(alone) == ("us", "ur") and probes.rtt_probe_paths(alone) == {"us-ur": 110}
    dj = dumbbell.hosts_json(dict(SPEC["topology"]))
    assert probes.rtt_probe_paths(dj) is dj["paths_rtt_ms"] and probes.rate_probe_pair(dj) == ("a1", "b1")


def test_foreign_packets_in_a_capture_are_counted_and_shown(tmp_path):
    """Issue 15: every run checks that its captures hold only the experiment's traffic; a DHCP request from
    0.0.0.0 (what networkd sent on Mininet's veth ports) is counted and shown, the hosts' own packets are not."""
    if not shutil.which("tcpdump"):
        pytest.skip("tcpdump not installed (apt-get install tcpdump); the runner's check needs it on the testbed")
    from scapy.all import BOOTP, IP, TCP, UDP, Ether, wrpcap
    hostsj = {"hosts": {"a1": {"ip": "10.1.0.1", "gw": "10.1.0.254"}, "b1": {"ip": "10.2.0.1", "gw": "10.2.0.254"}}}
    own = captures.own_addresses(hostsj)
    assert own == ["10.1.0.1", "10.1.0.254", "10.2.0.1", "10.2.0.254"]
    pkts = [Ether() / IP(src="10.1.0.1", dst="10.2.0.1") / TCP(sport=40000, dport=5001, flags="S"),
            Ether() / IP(src="10.2.0.1", dst="10.1.0.1") / TCP(sport=5001, dport=40000, flags="SA"),
            Ether() / IP(src="0.0.0.0", dst="255.255.255.255") / UDP(sport=68, dport=67) / BOOTP(),
            Ether() / IP(src="10.1.0.1", dst="10.9.9.9") / TCP(sport=40001, dport=80)]
    f = tmp_path / "bneck-in.pcap"
    wrpcap(str(f), pkts)
    n, first = captures.foreign_packets(f, own)
    assert n == 2
    assert "0.0.0.0.68 > 255.255.255.255.67" in first[0] and "10.9.9.9" in first[1]
    wrpcap(str(f), pkts[:2])
    assert captures.foreign_packets(f, own) == (0, [])


def test_synflood_routes_capture_filter_and_rate_check(tmp_path):
    """The synflood axis: the spoofed prefix routed so the backscatter crosses the reverse bottleneck and
    ends at the attacker; every capture leaves the flood out; a flood short of its rate makes the run invalid."""
    assert dumbbell.spoof_route_cmds("10.66.0.0/16", "a2") == {
        "rr": [["ip", "route", "replace", "10.66.0.0/16", "via", "10.0.0.1"]],
        "rl": [["ip", "route", "replace", "10.66.0.0/16", "via", "10.1.0.2"]]}
    assert captures.capture_filter({"flood": None}) == "ip"
    assert captures.capture_filter({"flood": {"spoof": "10.66.0.0/16"}}) == "ip and not net 10.66.0.0/16"
    summary = tmp_path / "flood.json"
    assert fidelity.flood_check(summary, 1000)["synflood_rate"]["ok"] is False       # no summary: invalid
    summary.write_text(json.dumps({"sent": 28000, "send_errors": 0, "missed": 2000, "pps_wanted": 1000,
                                   "pps_reached": 933.0, "duration_s": 30}))
    c = fidelity.flood_check(summary, 1000)["synflood_rate"]
    assert c["ok"] is False and c["measured"]["missed"] == 2000                       # 933/s < 950/s
    summary.write_text(json.dumps({"sent": 29400, "send_errors": 0, "missed": 0, "pps_wanted": 1000,
                                   "pps_reached": 980.0, "duration_s": 30}))
    assert fidelity.flood_check(summary, 1000)["synflood_rate"]["ok"] is True
    assert cpu.process_group("favorflow", "/opt/favorlab/workloads/go/bin/favorflow synflood --dst x") == "SYN flood"


def test_trace_counts_check_holds_the_trace_to_the_queues_counters(tmp_path):
    """Every decision the favor trace recorded against the traced queue's counters: at least those up to the
    trace's stop, at most those up to after.json; a named difference otherwise; not compared when the trace
    lost events."""
    def stats(**c):
        base = {"favored": 0, "standard": 0, "pushouts": 0, "drop_favored": 0, "drop_standard": 0}
        return {"rl": [{"kind": "htb", "dev": "rl-eth1"}, {"kind": "favor", "dev": "rl-eth1", **base, **c}],
                "rr": [{"kind": "favor", "dev": "rr-eth0", **base, "favored": 99}]}
    before, after = stats(favored=5, standard=2), stats(favored=8, standard=3, pushouts=1, drop_standard=1)
    f = tmp_path / "favor-trace.txt"      # as the recorder writes it (favor_trace.py --raw)
    rows = ["favored"] * 3 + ["standard", "pushout_victim", "drop_standard"]
    f.write_text("# favor_trace raw offset=0.0\n" + "".join(
        f"  <idle>-0  [001] ..s1. 1.{i}: favor_enqueue: dev=rl-eth1 verdict={v} src=10.1.0.1 dst=10.2.0.1 sport=1 "
        f"dport=2 proto=6 qlen=3\n" for i, v in enumerate(rows)) + "# lost_events=0\n")
    c = favortrace.trace_counts_check(f, before, after, "rl", "rl-eth1", after)["favor_trace_counts"]
    assert c["ok"] and c["measured"]["favored"] == 3 and c["measured"]["pushout_victim"] == 1
    assert "after_the_trace" not in c["measured"]
    # two favored packets (a lingering FIN) after the trace stopped: within the bounds, and said
    later = stats(favored=10, standard=3, pushouts=1, drop_standard=1)
    c = favortrace.trace_counts_check(f, before, later, "rl", "rl-eth1", after)["favor_trace_counts"]
    assert c["ok"] and c["measured"]["after_the_trace"] == {"favored": 2}
    # one favored decision of the traffic missing from the trace: named, with the counts around it
    c = favortrace.trace_counts_check(f, before, stats(favored=9, standard=3, pushouts=1, drop_standard=1), "rl",
                                  "rl-eth1", stats(favored=9, standard=3, pushouts=1, drop_standard=1))["favor_trace_counts"]
    assert not c["ok"] and c["measured"] == {"favored": {"trace": 3, "counters_at_stop": 4, "counters_after": 4}}
    # a trace that lost events undercounts by design: not compared, and says so
    f.write_text(f.read_text().replace("lost_events=0", "lost_events=7"))
    c = favortrace.trace_counts_check(f, before, after, "rl", "rl-eth1", after)["favor_trace_counts"]
    assert c["ok"] and "not compared" in c["measured"]
    # no trace, or no favor queue where the trace was taken: no check
    assert favortrace.trace_counts_check(tmp_path / "none.csv", before, after, "rl", "rl-eth1") == {}
    assert favortrace.trace_counts_check(f, before, after, "rl", "rl-eth9") == {}


def test_the_recorder_expects_the_bottlenecks_packet_rate_over_its_window():
    """favor_trace.py's buffer is sized from this: 1.5 events per full-sized packet time of the bottleneck
    (the AQM's rate, a chain's hop rate), over the traffic, the drain, the cross-traffic warm-up and 10 s."""
    s = copy.deepcopy(SPEC)
    s.update(duration_s=70, drain_s=20)
    s["topology"].update(bottleneck_mbps=100, mtu=1500)
    s.setdefault("workload", {}).pop("warmup_cross_s", None)
    assert favortrace.expect_events(s) == 1_250_000
    s["workload"]["warmup_cross_s"] = 10
    assert favortrace.expect_events(s) == 1_375_000
    c = chain_spec()
    c.update(duration_s=70, drain_s=20)
    c["topology"].pop("bottleneck_mbps", None)
    c["topology"].update(hop_mbps=10, mtu=1500)
    c.setdefault("workload", {}).pop("warmup_cross_s", None)
    assert favortrace.expect_events(c) == 125_000


def test_trace_check_reads_the_recorders_last_line(tmp_path):
    f = tmp_path / "favor-trace.txt"
    event = "# favor_trace raw offset=0.0\n  x-1 [000] ..... 1.0: favor_enqueue: dev=rl-eth1 verdict=favored src=\n"
    f.write_text(event + "# lost_events=0\n")
    assert favortrace.trace_check(f)["ok"]
    f.write_text(event + "# lost_events=12\n")
    c = favortrace.trace_check(f)
    assert not c["ok"] and c["measured"] == 12 and c["severity"] == "warning"
    f.write_text(event)      # killed before it could finish
    assert not favortrace.trace_check(f)["ok"]
    assert not favortrace.trace_check(tmp_path / "missing.csv")["ok"]


def test_favor_counts_agree_or_the_run_says_so():
    good = {"rl": [{"kind": "htb"}, {"kind": "favor", "favored": 10, "standard": 30, "packets": 33, "pushouts": 4,
                                     "drop_limit": 1, "qlen": 2}]}
    assert fidelity.favor_counts_check(good)["favor_counts"]["ok"] is True
    bad = {"rl": [{"kind": "favor", "favored": 10, "standard": 30, "packets": 33, "pushouts": 4, "drop_limit": 0,
                   "qlen": 0}]}
    assert fidelity.favor_counts_check(bad)["favor_counts"]["ok"] is False
    assert fidelity.favor_counts_check({"rl": [{"kind": "pfifo"}]}) == {}


class _FakeNet:
    def get(self, name):
        return name


def _ctx(run_dir: Path) -> RunContext:
    return RunContext(dir=run_dir, log=processes.Log(run_dir / "log" / "runner.log"))


def _chain_run(tmp_path, spec) -> RunContext:
    from topologies import chain
    r = _ctx(tmp_path)
    r.spec, r.net = spec, _FakeNet()
    r.hostsj = chain.hosts_json(spec["topology"])
    (tmp_path / "hosts.json").write_text(json.dumps(r.hostsj))
    for d in ("flows", "log"):
        (tmp_path / d).mkdir(exist_ok=True)
    return r


def test_chain_run_has_its_routers_one_server_one_client_and_traces_hop_1(tmp_path, monkeypatch):
    spec = dict(chain_spec(), trace_favor=True)
    r = _chain_run(tmp_path, spec)
    assert r.routers() == ["r0", "r1", "r2", "r3", "r4", "r5"]
    assert traffic.client_hosts(r) == ["us"] and traffic.server_hosts(r) == ["ur"]
    assert traffic.client_cmd(r) == [sys.executable, "-m", "workloads.reference"]
    started = []
    monkeypatch.setattr(processes, "popen", lambda argv, node=None, **kw: started.append((argv, node)) or object())
    trace = tmp_path / "favor_trace.py"
    trace.write_text("")
    monkeypatch.setattr(favortrace, "TRACER", trace)
    favortrace.start(r)
    (argv, node), = started
    assert node == "r0" and argv[argv.index("--dev") + 1] == "r0-next"     # hop 1's forward queue
    # the dumbbell's trace stays on rl-eth1, its routers rl and rr, every host a client and a server
    d = _ctx(tmp_path / "d")
    d.spec, d.net, d.hostsj = dict(copy.deepcopy(SPEC), trace_favor=True), _FakeNet(), dumbbell.hosts_json(SPEC["topology"])
    d.spec["aqm"]["forward"] = {"kind": "favor", "args": ["limit", "8"]}
    (tmp_path / "d" / "qdisc").mkdir(parents=True)
    started.clear()
    favortrace.start(d)
    argv, node = started[0]
    assert node == "rl" and argv[argv.index("--dev") + 1] == "rl-eth1"
    assert d.routers() == ("rl", "rr") and traffic.client_hosts(d) == list(dumbbell.HOSTS) == traffic.server_hosts(d)


def test_reference_user_command_and_its_schedule(tmp_path, monkeypatch):
    """The reference user gets the run's seed, sizes, t0 and stop-at, logs as a client does; the flows it
    started replace the controller's header-only schedule.csv, and check_log is the run's check."""
    from contract.schedule import Flow, write_schedule
    spec = chain_spec()
    r = _chain_run(tmp_path, spec)
    started = []
    monkeypatch.setattr(processes, "popen", lambda argv, node=None, **kw: started.append((argv, node)) or object())
    traffic.start_reference(r, 1000.0, 1340.0)
    (argv, node), = started
    assert node == "us" and argv[:3] == ["nice", "-n", str(traffic.CLIENT_NICE)]
    opt = {a: argv[i + 1] for i, a in enumerate(argv) if a.startswith("--") and i + 1 < len(argv)}
    assert opt["--host"] == "us" and opt["--dst"] == "ur" and opt["--seed"] == str(spec["seed"])
    assert float(opt["--t0"]) == 1000.0 and float(opt["--stop-at"]) == 1340.0 and opt["--mss"] == "1460"
    assert opt["--sizes"] == "pareto:shape=1.3,mean_pkts=30"
    assert opt["--log"] == str(tmp_path / "flows" / "client-us.csv")
    # every flag the runner passes is one workloads.reference takes
    helptext = subprocess.run([sys.executable, "-m", "workloads.reference", "--help"], cwd=REPO,
                              capture_output=True, text=True).stdout
    for flag in opt:
        assert flag in helptext, flag
    (tmp_path / "schedule.csv").write_text("# generator=workloads.schedule\n# topology=chain\n"
                                           "flow_id,start_s,size_bytes,size_pkts,src,dst,direction,kind\n")
    flows = [Flow(0, 0.0, 14600, 10, "us", "ur", "forward", "reference"),
             Flow(1, 0.31, 2920, 2, "us", "ur", "forward", "reference")]
    write_schedule(Path(opt["--schedule-out"]), {"generator": "workloads.reference", "seed": spec["seed"]}, flows)
    traffic.install_reference_schedule(r)
    assert "generator=workloads.reference" in (tmp_path / "schedule.csv").read_text()
    assert not Path(opt["--schedule-out"]).exists() and not r.reasons
    from workloads.client import LOG_COLUMNS
    rows = [dict.fromkeys(LOG_COLUMNS, "") | {"flow_id": 0, "scheduled_s": 0.0, "actual_start_s": 0.001,
                                              "end_s": 0.3, "outcome": "completed"},
            dict.fromkeys(LOG_COLUMNS, "") | {"flow_id": 1, "scheduled_s": 0.31, "actual_start_s": 0.311,
                                              "end_s": 0.5, "outcome": "completed"}]
    import csv
    with open(opt["--log"], "w", newline="") as f:
        w = csv.DictWriter(f, LOG_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    fidelity.workload_checks(r)
    assert r.checks["reference_loop"]["ok"] and r.checks["reference_loop"]["completed"] == 2
    # without the reference user's output the run is invalid, not the runner crashed
    r2 = _chain_run(tmp_path / "r2", spec)
    traffic.install_reference_schedule(r2)
    fidelity.workload_checks(r2)
    assert r2.reasons and not r2.checks["reference_loop"]["ok"]


def test_cross_traffic_is_one_iperf3_flow_per_cross_flow_from_before_t0(tmp_path, monkeypatch):
    from workloads import persistent
    spec = chain_spec(hops=2, cross_flows_per_hop=3, cross_delays_ms=[10, 20, 30])
    r = _chain_run(tmp_path, spec)
    started = []

    class P:
        def __init__(self, argv):
            self.argv = argv

        def wait(self, timeout=None):
            return 0
    monkeypatch.setattr(processes, "popen", lambda argv, node=None, **kw: started.append((argv, node)) or P(argv))
    monkeypatch.setattr(processes, "stop", lambda p, *a, **k: 0)
    monkeypatch.setattr(time, "sleep", lambda s: None)
    t0 = time.time() + 20
    longflows.start_cross(r, t0)
    plan = json.loads((tmp_path / "cross" / "plan.json").read_text())
    pairs = [(g["src"], g["dst"]) for g in plan["groups"]]
    assert pairs == [(c["src"], c["dst"]) for c in r.hostsj["cross_flows"]] and len(pairs) == 6
    assert all(g["streams"] == 1 and g["start_s"] == 0 for g in plan["groups"])
    # from warmup_cross_s before t0 to the end of the traffic; ten servers per receiver at most, own ports
    total = 10 + spec["duration_s"] + spec["drain_s"]
    assert all(g["duration_s"] == total for g in plan["groups"])
    assert sorted(g["port"] for g in plan["groups"] if g["dst"] == "x1r") == [5201, 5202, 5203]
    servers = [(a, n) for a, n in started if a[:2] == ["iperf3", "-s"]]
    clients = [(a, n) for a, n in started if a[0] == "bash"]
    assert {n for _, n in servers} == {"x1r", "x2r"} and {n for _, n in clients} == {c[0] for c in pairs}
    # each shell starts its client at t0 - 10 s by its own clock (a sleep the runner computed beforehand would add
    # the shell's start-up to it), and writes when its sleep ended, in the run's cross/ folder
    scripts = sorted(longflows.launch_at(t0 - 10, tmp_path / "cross" / f"cross-{src}-{dst}.launched") for src, dst in pairs)
    assert sorted(a[2] for a, _ in clients) == scripts
    argvs = sorted(["bash", *g["client"]] for g in plan["groups"])
    assert sorted(a[3:] for a, _ in clients) == argvs
    for g in plan["groups"]:
        (tmp_path / "cross" / f"iperf3-{g['src']}-{g['dst']}.json").write_text(json.dumps(
            {"end": {"streams": [{"sender": {"bytes": 1000, "seconds": total, "bits_per_second": 1e6}}]}}))
    longflows.stop_cross(r, t0 + 1)
    assert r.checks["cross_flows"] == {"configured": 6, "measured": 6, "ok": True}
    assert persistent.IPERF3_PORT_BASE == 5201


def test_a_launch_waits_in_the_shell_for_its_clock_time_and_stamps_the_wake(tmp_path):
    """launch_at's script: run by bash, its command starts at the given clock time (not before, and not later by
    the shell's own start-up), writes that time, and passes the arguments on; a time already past starts at once."""
    woke = tmp_path / "woke"
    out = tmp_path / "out"
    when = time.time() + 0.6
    subprocess.run(["bash", "-c", longflows.launch_at(when, woke), "bash", "sh", "-c", f"date +%s.%N > {out}"],
                   check=True, timeout=10)
    assert when <= float(woke.read_text()) <= when + 0.2 and float(woke.read_text()) <= float(out.read_text())
    past = time.time() - 5
    t = time.time()
    subprocess.run(["bash", "-c", longflows.launch_at(past, woke), "bash", "true"], check=True, timeout=10)
    assert time.time() - t < 0.5 and float(woke.read_text()) >= t


def test_the_run_times_its_phases_one_after_another(tmp_path):
    """Each mark ends the phase under way (a phase entered twice adds up) and None ends the last: the
    manifest's phases_s, which attempts.json and the report's overhead medians are made of."""
    ctx = RunContext(dir=tmp_path, log=processes.Log(tmp_path / "runner.log"))
    ctx.phase("topology up")
    time.sleep(0.05)
    ctx.phase("probes")
    time.sleep(0.02)
    ctx.phase("topology up")
    ctx.phase(None)
    ctx.phase(None)                       # nothing under way: nothing added
    assert list(ctx.phases.s) == ["topology up", "probes"]
    assert 0.04 <= ctx.phases.s["topology up"] < 1 and 0.01 <= ctx.phases.s["probes"] < 1


def test_captures_are_waited_for_until_each_tcpdump_listens(tmp_path):
    """The runner goes on as soon as every tcpdump said its capture is open, and no later than the timeout
    when one never does (its checks after the run tell)."""
    errs = [tmp_path / "a.err", tmp_path / "b.err"]
    errs[0].write_text("tcpdump: listening on a1-eth0, link-type EN10MB (Ethernet), snapshot length 128 bytes\n")
    errs[1].write_text("")
    assert 0.2 <= captures.wait_listening(errs, timeout_s=0.2) < 1.0
    errs[1].write_text("tcpdump: listening on rl-eth1, link-type EN10MB (Ethernet), snapshot length 128 bytes\n")
    assert captures.wait_listening(errs, timeout_s=5.0) < 0.5


def test_the_rate_probe_waits_for_its_server_to_listen_and_no_longer():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        assert 0.3 <= probes.wait_tcp_listening(None, port, timeout_s=0.3) < 2.0     # bound, not listening
        s.listen()
        assert probes.wait_tcp_listening(None, port, timeout_s=5.0) < 1.0


def test_the_clients_wait_for_their_go_line_only_in_runs_of_the_schedule_alone():
    """The ready handshake (traffic.awaits_go) where the flow clients are the run's only traffic; runs with
    other processes started toward t0 (the chain's, persistent flows, a SYN flood, HTTP) keep the timed lead."""
    def awaits(spec):
        return traffic.awaits_go(RunContext(dir=Path("."), log=None, spec=spec))
    assert awaits(copy.deepcopy(SPEC))
    assert not awaits(chain_spec())
    for extra in ({"flood": {"pps": 100}}, {"workload": {"kind": "persistent"}}, {"workload": {"http": {}}}):
        assert not awaits(dict(copy.deepcopy(SPEC), **extra)), extra


def _loopback_run(tmp_path, impl="python"):
    """A run context over loopback (no namespaces): a1 on 127.0.0.1 sends to b1 on 127.0.0.2."""
    from workloads.launch import free_port
    from workloads.tests.test_flows import small_schedule
    (tmp_path / "log").mkdir()
    (tmp_path / "flows").mkdir()
    flows = small_schedule(tmp_path / "schedule.csv", n=30, rate=30, seed=4)
    hostsj = {"hosts": {"a1": {"ip": "127.0.0.1"}, "b1": {"ip": "127.0.0.2"}}, "port": free_port()}
    (tmp_path / "hosts.json").write_text(json.dumps(hostsj))
    ctx = RunContext(dir=tmp_path, log=processes.Log(tmp_path / "runner.log"), hostsj=hostsj,
                     spec={"topology": {"kind": "dumbbell"}, "workload_impl": impl, "schedule": "schedule.csv"})
    ctx.net = type("NoNamespaces", (), {"get": staticmethod(lambda name: None)})()
    return ctx, flows


def test_the_run_starts_its_clients_first_and_sets_t0_once_they_and_the_servers_are_up(tmp_path):
    """launch_clients, the servers, await_ready, go: the clients are up (their ready files) and replay
    nothing before the go line; once it comes every flow starts on time from its t0."""
    ctx, flows = _loopback_run(tmp_path)
    clients = traffic.launch_clients(ctx)
    try:
        traffic.start_servers(ctx)
        traffic.await_ready(ctx, clients, timeout_s=60)
        assert all((tmp_path / "log" / f"client-{h}.ready").exists() for h in clients)
        assert all(p.poll() is None for p in clients.values())
        assert not list((tmp_path / "flows").glob("client-*.csv"))          # waiting, nothing replayed
        t0 = time.time() + traffic.GO_LEAD_S
        traffic.go(ctx, clients, t0, t0 + flows[-1].start_s + 5)
        traffic.wait_clients(ctx, clients, t0 + flows[-1].start_s + 5)
    finally:
        traffic.stop_servers(ctx)
        processes.stop_many(list(ctx.procs.values()))
    assert ctx.reasons == []
    assert not list((tmp_path / "log").glob("*.ready"))
    got = list(csv.DictReader((tmp_path / "flows" / "client-a1.csv").open()))
    assert len(got) == len(flows) and {r["outcome"] for r in got} == {"completed"}
    assert all(0 <= float(r["lateness_s"]) < 0.5 for r in got)
    assert "clients started, t0" in (tmp_path / "runner.log").read_text()


def test_a_client_or_server_that_never_comes_up_fails_the_run_naming_it(tmp_path):
    """A client that exits before it is up fails the run at once, naming its log; a server that never says
    it listens fails it at the timeout."""
    ctx, _ = _loopback_run(tmp_path)
    (tmp_path / "schedule.csv").write_text("not a schedule\n")
    clients = traffic.launch_clients(ctx)
    ctx.procs.update({f"server-{h}": processes.popen(["sleep", "30"]) for h in ctx.hostsj["hosts"]})
    try:
        with pytest.raises(RuntimeError, match=r"flow client on (a1|b1) exited \(1\) before it was up: see log/client-\1.out"):
            traffic.await_ready(ctx, clients, timeout_s=60)
        clients = {}
        t = time.time()
        with pytest.raises(RuntimeError, match=r"\['server-a1', 'server-b1'\] not up 1 s after their start"):
            traffic.await_ready(ctx, clients, timeout_s=1.0)
        assert time.time() - t < 5
    finally:
        processes.stop_many(list(ctx.procs.values()))
