import csv
import json
import os
import shutil
import subprocess

import pytest

from analysis import extract as ex
from analysis.runfiles import read_schedule
from analysis.tables import run as run_table
from analysis.tables.packets import bottleneck
from analysis.tables.persistent import PERSISTENT_COLS
from analysis.tests import synth


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    rundir = synth.standard_run(str(d / "dumbbell_droptail_load0.5_rep0")).write()
    out = str(d / "tables")
    ex.extract(rundir, out)
    with open(os.path.join(out, "flows.csv")) as f:
        flows = {int(r["flow_id"]): r for r in csv.DictReader(f)}
    with open(os.path.join(out, "run.csv")) as f:
        run = next(csv.DictReader(f))
    return rundir, out, flows, run


def test_every_flow_found_and_joined_by_header(tables):
    _, _, flows, run = tables
    assert sorted(flows) == list(range(7))
    assert run["flows_unmatched"] == "0"


def test_clean_flow_latency_is_syn_to_last_data_arrival(tables):
    f = tables[2][0]
    # SYN at 2.0, data sent at 2.1 .. 2.102, last arrives D later
    assert float(f["latency_s"]) == pytest.approx(0.102 + synth.D, abs=1e-6)
    assert (f["R"], f["RTO"], f["FR"], f["syn_retrans"], f["L"]) == ("0", "0", "0", "0", "3")


def test_syn_lost_once(tables):
    f = tables[2][1]
    assert f["syn_retrans"] == "1" and f["RTO"] == "1" and f["rto_data"] == "0"
    assert float(f["latency_s"]) == pytest.approx(3.0 + 2 * synth.D + 0.001 + synth.D, abs=1e-6)


def test_tail_loss_recovered_by_rto(tables):
    f = tables[2][2]
    assert (f["R"], f["rto_data"], f["FR"]) == ("1", "1", "0")
    assert f["drops"] == "1" and f["data_drops"] == "1"


def test_three_dupacks_give_fast_retransmit(tables):
    f = tables[2][3]
    assert (f["R"], f["rto_data"], f["FR"]) == ("1", "0", "1")


def test_spurious_retransmission_detected(tables):
    f = tables[2][4]
    assert (f["R"], f["rto_data"], f["spurious"]) == ("1", "1", "1")
    assert f["drops"] == "0"


def test_warmup_flow_flagged_and_excluded(tables):
    f = tables[2][5]
    assert f["warmup"] == "1" and f["complete"] == "1" and f["in_metrics"] == "0"


def test_flow_cut_by_capture_end_is_incomplete(tables):
    f = tables[2][6]
    assert f["complete"] == "0" and f["latency_s"] == "" and f["in_metrics"] == "0"


def test_queueing_delay_and_packets_table(tables):
    _, out, flows, _ = tables
    assert float(flows[0]["qdelay_mean_s"]) == pytest.approx(synth.Q, abs=1e-6)
    import gzip
    with gzip.open(os.path.join(out, "packets.csv.gz"), "rt") as f:
        rows = list(csv.DictReader(f))
    assert sum(r["dropped"] == "1" for r in rows) == 3  # lost SYN + 2 lost data segments


def test_cli_refuses_directory_without_done(tmp_path):
    r = subprocess.run([os.path.join(os.getcwd(), ".venv/bin/python"), "-m", "analysis.extract",
                        "--run", str(tmp_path), "--out", str(tmp_path / "t")], capture_output=True, text=True)
    assert r.returncode != 0 and "DONE" in r.stderr


def test_favor_trace_joined_by_five_tuple(tmp_path):
    run = synth.standard_run(str(tmp_path / "r"))
    s, d = synth.HOSTS["a1"], synth.HOSTS["b1"]
    run.favor = [(1.0, "rl-eth1", "favored", s, d, 40000, 5001, 6, 0)] * 2 + \
                [(2.0, "rl-eth1", "standard", s, d, 40000, 5001, 6, 3), (3.0, "rl-eth1", "pushout_victim", s, d, 40003, 5001, 6, 8)]
    flows, _ = ex.extract(run.write(aqm="favor"), str(tmp_path / "t"), False)
    by = {f["flow_id"]: f for f in flows}
    assert (by[0]["fav_favored"], by[0]["fav_standard"], by[3]["fav_pushout_victim"]) == (2, 1, 1)


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed (apt-get install tshark)")
def test_tshark_cross_check_identical_counts(tables):
    from analysis import crosscheck
    rundir = tables[0]
    for point in ["sender-a1", "bneck-in"]:
        res = crosscheck.compare(os.path.join(rundir, "pcap", point + ".pcap"))
        assert res["fast_packets"] == res["tshark_packets"] > 0
        assert res["fast_flows"] == res["tshark_flows"] > 0


def test_linux_profile_sack_fast_retransmit_and_tail_loss_probe(tmp_path):
    flows, _ = ex.extract(synth.linux_run(str(tmp_path / "r")).write(), str(tmp_path / "t"), False)
    by = {f["flow_id"]: f for f in flows}
    assert (by[0]["R"], by[0]["FR"], by[0]["RTO"]) == (1, 1, 0)
    assert (by[1]["R"], by[1]["TLP"], by[1]["RTO"], by[1]["FR"]) == (1, 1, 0, 0)
    assert by[0]["complete"] == by[1]["complete"] == 1


def test_bottleneck_pairs_retransmitted_syn_with_its_own_copy():
    from analysis.pcapread import Pkt
    mk = lambda t: Pkt(t, "10.0.0.1", "10.0.0.2", 1, 2, 2, 100, 0, 0, 0, 0, [], None)
    pairs = bottleneck([mk(1.0), mk(4.0)], [mk(4.003)])
    assert [t for _, t in pairs] == [None, 4.003]


def test_schedule_without_required_columns_is_refused(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("flow_id,start_s\n0,1.0\n")
    with pytest.raises(ValueError, match="size_bytes"):
        read_schedule(str(p))


def test_run_row_reports_nstat_deltas_beside_our_totals(tables):
    run = tables[3]
    assert run["nstat_TcpExtTCPTimeouts"] == "4" and run["nstat_TcpExtTCPSynRetrans"] == "2"
    assert run["ours_RTO"] == "3" and run["ours_syn_retrans"] == "1" and run["valid"] == "1"


def test_reused_four_tuple_gives_two_flows(tmp_path):
    run = synth.SyntheticRun(str(tmp_path / "r"))
    synth.clean(run.flow(0, 42000, 2, 2.0), 2.0)
    f = run.flow(1, 42000, 3, 9.0)
    f.isn = 900000
    f.syn(9.0, lost=True)
    synth.clean(f, 12.0)
    flows, _ = ex.extract(run.write(), str(tmp_path / "t"), False)
    by = {x["flow_id"]: x for x in flows}
    assert sorted(by) == [0, 1]
    assert (by[0]["syn_retrans"], by[1]["syn_retrans"], by[1]["L"]) == (0, 1, 3)
    assert (by[0]["bneck_in"], by[1]["bneck_in"], by[1]["drops"]) == (4, 6, 1)
    assert by[1]["latency_s"] == pytest.approx(3.0 + 2 * synth.D + 0.002 + synth.D, abs=1e-6)


# A run with a measurement window [1, 20): flows before, inside, at and after its end, one never started.
@pytest.fixture(scope="module")
def window_run(tmp_path_factory):
    run = synth.SyntheticRun(str(tmp_path_factory.mktemp("w") / "r"), warmup_s=1.0, duration_s=20.0)
    synth.clean(run.flow(0, 43000, 2, 0.5), 0.5)       # warm-up
    synth.clean(run.flow(1, 43001, 2, 2.0), 2.0)
    synth.clean(run.flow(2, 43002, 3, 19.5), 19.5)
    synth.clean(run.flow(3, 43003, 2, 20.0), 20.0)     # arrives at the window's end: drain only
    run.scheduled(4, 7, 10.0)                          # the client never started it: no capture has it
    run.scheduled(5, 9, 5.0, src="b1", dst="a1", direction="reverse")
    f = run.flow(6, 43006, 4, 15.0)                    # cut by the end of the capture
    f.syn(15.0); f.synack(15.0 + synth.D); f.data(15.1, 0)
    flows, row = ex.extract(run.write(), str(tmp_path_factory.mktemp("wt")), False)
    return {x["flow_id"]: x for x in flows}, row


def test_scheduled_flow_no_capture_saw_has_a_row(window_run):
    by, row = window_run
    assert sorted(by) == list(range(7)) and row["flows_total"] == 7
    f = by[4]
    assert (f["seen"], f["complete"], f["in_metrics"], f["in_window"]) == (0, 0, 0, 1)
    assert (f["src"], f["dst"], f["direction"], f["start_s"], f["size_bytes"], f["L"]) == \
        ("a1", "b1", "forward", 10.0, 7 * synth.MSS, 7)
    assert f["latency_s"] == f["done_t"] == f["syn_retrans"] == f["src_ip"] == f["bneck_in"] == ""
    assert by[5]["seen"] == 0 and by[5]["direction"] == "reverse"
    assert all(by[i]["seen"] == 1 for i in (0, 1, 2, 3, 6))


def test_window_is_warmup_to_duration(window_run):
    by, _ = window_run
    assert [by[i]["in_window"] for i in range(7)] == [0, 1, 1, 0, 1, 1, 1]
    # flow 3 completed in the drain time but was scheduled at duration_s: outside the window, not in metrics
    assert by[3]["complete"] == 1 and by[3]["in_metrics"] == 0
    assert [by[i]["in_metrics"] for i in range(7)] == [0, 1, 1, 0, 0, 0, 0]


def test_flows_carry_their_paths_configured_rtt(window_run, tmp_path):
    """F5's RTT class: every row, seen or not, forward or reverse (b1 -> a1 is the path a1-b1), has the RTT
    hosts.json gives its path; a run without hosts.json leaves it empty rather than guessing."""
    by, _ = window_run
    assert [by[i]["path_rtt_ms"] for i in range(7)] == [synth.PATH_RTT_MS] * 7
    run = synth.SyntheticRun(str(tmp_path / "r"))
    synth.clean(run.flow(0, 44000, 2, 2.0), 2.0)
    d = run.write()
    os.remove(os.path.join(d, "hosts.json"))
    flows, _ = ex.extract(d, str(tmp_path / "t"), False)
    assert [f["path_rtt_ms"] for f in flows] == [""]


def test_run_reports_window_offer_and_unfinished_share(window_run):
    _, row = window_run
    # forward flows scheduled in [1, 20): 1 (2 segments), 2 (3), 4 (7, never started), 6 (4, cut)
    assert (row["window_start_s"], row["window_end_s"]) == (1.0, 20.0)
    assert (row["flows_window"], row["flows_unfinished"], row["unfinished_share"]) == (4, 2, 0.5)
    assert row["bytes_window"] == 16 * synth.MSS
    assert row["unfinished_bytes_share"] == pytest.approx(11 / 16)
    assert row["realized_load"] == pytest.approx(8 * 16 * synth.MSS / (10e6 * 19.0))
    assert row["load"] == 0.5


def test_run_csv_carries_the_scenario_columns(tables, tmp_path):
    out, run = tables[1], tables[3]
    old = ["run_id", "config_name", "scenario", "aqm", "load", "iw", "profile", "replication", "seed",
           "bottleneck_mbps", "buffer_pkts", "valid", "invalid_reasons", "flows_total", "flows_complete",
           "flows_in_metrics", "flows_unmatched", "ours_syn_retrans", "ours_R", "ours_RTO", "ours_rto_data", "ours_FR",
           "ours_TLP", "ours_other_rec", "ours_spurious"] + ["nstat_" + k for k in run_table.NSTAT_KEYS]
    with open(os.path.join(out, "run.csv")) as f:
        assert set(old) <= set(next(csv.reader(f)))
    assert (run["dataplane"], run["cc"], run["size_dist"], run["size_mean_pkts"], run["topology"]) == \
        ("kernel", "reno", "lomax", "30", "dumbbell")
    spec = {"scenario": "parking-lot", "topology": {"bottleneck_mbps": 2.5, "buffer_pkts": 60},
            "aqm": {"name": "p4-favorqueue", "forward": {"kind": "p4"}}, "load": 0.9, "replication": 3,
            "tcp": {"profile": "linux", "iw": 10, "congestion_control": "cubic"},
            "sizes": {"distribution": "pareto", "mean_pkts": 12.5}}
    assert run_table.scenario(spec) == dict(topology="parking-lot", bottleneck_mbps=2.5, buffer_pkts=60, iw=10, profile="linux",
                                     cc="cubic", size_dist="pareto", size_mean_pkts=12.5, dataplane="p4", hops="",
                                     aqm_hops="", flood_x="", http_connections="")
    # AQM, load and replication are not part of it
    other = dict(spec, aqm={"name": "p4-droptail", "forward": {"kind": "p4"}}, load=0.1, replication=0)
    assert run_table.scenario(other) == run_table.scenario(spec)
    # the chain: its length and the AQM's hops are (two sections differing only there must not pool), with the
    # builder's defaults where run.json leaves them out
    chain = dict(spec, scenario="chain", topology={"kind": "chain", "bottleneck_mbps": 10, "buffer_pkts": 8},
                 aqm={"name": "favor", "forward": {"kind": "favor"}})
    assert (run_table.scenario(chain)["hops"], run_table.scenario(chain)["aqm_hops"]) == (5, "1")
    both = dict(chain, topology=dict(chain["topology"], hops=3, aqm_hops=[1, 3]))
    assert (run_table.scenario(both)["hops"], run_table.scenario(both)["aqm_hops"]) == (3, "1+3")
    # a SYN flood's rate is part of it: the legitimate flows under a flood do not pool with those without
    flooded = dict(spec, flood={"kind": "synflood", "rate_x": 1.0})
    assert run_table.scenario(flooded)["flood_x"] == 1.0 and run_table.scenario(flooded) != run_table.scenario(spec)
    # so is the HTTP workload (nginx + wrk, closed loop): not the replay's scenario
    http = dict(spec, workload={"kind": "web", "http": {"connections": 2}})
    assert run_table.scenario(http)["http_connections"] == 2 and run_table.scenario(http) != run_table.scenario(spec)


def test_run_csv_names_the_schedule_by_its_file_hash(tables, tmp_path):
    """schedule_sha256: the SHA-256 of the schedule file the run replayed, so the analysis pairs flows of two
    runs only when they replayed the same file; one changed byte is another schedule."""
    import hashlib
    rundir, run = tables[0], tables[3]
    with open(os.path.join(rundir, "schedule.csv"), "rb") as f:
        text = f.read()
    assert run["schedule_sha256"] == hashlib.sha256(text).hexdigest()
    other = shutil.copytree(rundir, str(tmp_path / "other"))
    with open(os.path.join(other, "schedule.csv"), "wb") as f:
        f.write(text.replace(b"\n", b"\n# another generator\n", 1))
    _, changed = ex.extract(other, str(tmp_path / "t"), False)
    assert changed["schedule_sha256"] != run["schedule_sha256"]


def test_favored_data_packets_counted_by_pairing_trace_with_bneck_in(tmp_path):
    run = synth.SyntheticRun(str(tmp_path / "r"), trace=True)
    F, S = "favored", "standard"
    # 0: favored SYN, data favored / standard / favored, favored FIN: 4 favored events, 2 of them data
    synth.clean(run.flow(0, 44000, 3, 2.0), 2.0, verdicts=[F, F, S, F, F])
    # 1: its queued segment 1 is pushed out by flow 2's arrival (a pushout_victim event, not an arrival of
    # flow 1), then retransmitted and favored: arrivals SYN F, 0 F, 1 S, 2 S, 1 F, FIN S -> 2 favored data
    v, w = run.flow(1, 44001, 3, 5.0), run.flow(2, 44002, 1, 5.0)
    v.syn(5.0, verdict=F); w.syn(5.002, verdict=F)
    v.synack(5.0 + synth.D); w.synack(5.002 + synth.D)
    v.data(5.1, 0, verdict=F); v.data(5.101, 1, lost=True, verdict=S); v.data(5.102, 2, verdict=S)
    w.data(5.103, 0, verdict=F, pushes_out=v)
    v.ack(5.1 + synth.D, 1); w.ack(5.103 + synth.D, 1)
    v.data(6.2, 1, verdict=F); v.ack(6.2 + synth.D, 3)
    v.fin(6.3, verdict=S); w.fin(5.3, verdict=S)
    # 3: one of its trace events is missing: counts differ, the pairing is unsafe
    synth.clean(run.flow(3, 44003, 2, 8.0), 8.0)
    run.favor.remove(next(e for e in run.favor if e[5] == 44003 and e[2] == S))
    # 4 and 5 reuse one 4-tuple: the trace events are split at the second connection's SYN
    synth.clean(run.flow(4, 44004, 2, 20.0), 20.0, verdicts=[F, F, F, S])
    f = run.flow(5, 44004, 2, 30.0)
    f.isn = 900000
    synth.clean(f, 30.0, verdicts=[S, F, S, F])
    flows, row = ex.extract(run.write(aqm="favor"), str(tmp_path / "t"), False)
    by = {x["flow_id"]: x for x in flows}
    assert (by[0]["fav_favored"], by[0]["fav_standard"], by[0]["fav_favored_data"]) == (4, 1, 2)
    assert (by[1]["fav_pushout_victim"], by[1]["fav_favored_data"], by[2]["fav_favored_data"]) == (1, 2, 1)
    assert by[3]["fav_favored_data"] == "" and by[3]["fav_standard"] == 3
    assert (by[4]["fav_favored_data"], by[5]["fav_favored_data"]) == (2, 1)
    assert row["fav_unaligned_flows"] == 1


def test_syn_loss_located_at_bottleneck_or_reverse_path(tables, tmp_path):
    f = tables[2][1]  # standard run: its first SYN dropped at the bottleneck
    assert (f["syn_retrans"], f["syn_drops_bneck"], f["synack_retrans"]) == ("1", "1", "0")
    assert tables[2][0]["syn_drops_bneck"] == tables[2][0]["synack_retrans"] == "0"
    run = synth.SyntheticRun(str(tmp_path / "r"))
    # 0: the SYN-ACK is lost on the way back; the retransmitted SYN gets a second one
    f = run.flow(0, 45000, 2, 2.0)
    f.syn(2.0); f.synack(2.0 + synth.D, lost=True)
    synth.clean(f, 5.0)
    # 1: every SYN dropped at the bottleneck; no data ever sent, so no header joins it to the schedule
    f = run.flow(1, 45001, 2, 10.0)
    for t in (10.0, 13.0, 19.0):
        f.syn(t, lost=True)
    flows, row = ex.extract(run.write(), str(tmp_path / "t"), False)
    by = {x["flow_id"]: x for x in flows}
    syn_only = next(x for x in flows if x["sport"] == 45001)
    assert (by[0]["syn_retrans"], by[0]["syn_drops_bneck"], by[0]["synack_retrans"]) == (1, 0, 1)
    assert (syn_only["syn_retrans"], syn_only["syn_drops_bneck"], syn_only["synack_retrans"]) == (2, 3, "")
    assert (row["ours_syn_drops_bneck"], row["ours_synack_retrans"], row["ours_syn_retrans"]) == (3, 1, 3)


def _flow(start, end):
    return {"seen": 1, "direction": "forward", "syn_t": 1000.0 + start, "done_t": "" if end is None else 1000.0 + end}


def test_steady_state_tells_a_stable_system_from_a_building_backlog():
    # one flow a second, each lasting 5 s: about 5 in the system throughout the window [10, 40)
    stable = [_flow(s, s + 5) for s in range(0, 40)]
    r = run_table.steady_state(stable, 1000.0, (10.0, 40.0))
    assert r["steady"] == 1 and r["in_system_mean"] == pytest.approx(5, abs=1) and abs(r["in_system_drift"]) < 1
    # two a second, each lasting longer the later it starts (the testbed falls behind): N climbs
    building = [_flow(s / 2, s / 2 + 1 + s / 4) for s in range(0, 80)]
    r = run_table.steady_state(building, 1000.0, (10.0, 40.0))
    assert r["steady"] == 0 and r["in_system_drift"] > 15
    # flows that never finish stay in the system: a run that stalls is not steady
    stalled = stable[:20] + [_flow(s, None) for s in range(20, 40)]
    assert run_table.steady_state(stalled, 1000.0, (10.0, 40.0))["steady"] == 0
    assert run_table.steady_state([], 1000.0, (10.0, 40.0))["steady"] == ""


def test_report_recovery_table_shows_other_rec(tables):
    from analysis import report
    run = tables[3]
    assert run["ours_other_rec"] == "0"
    assert "<th>ours_other_rec</th>" in report.nstat_section([run])


def test_persistent_flows_come_from_iperf3_and_stay_out_of_flows(tmp_path):
    """Scenario persistent: the iperf3 connections are not schedule flows (no flow id, no latency); each
    stream's throughput comes from iperf3's report, as a share of the bottleneck (F16's percent)."""
    run = synth.SyntheticRun(str(tmp_path / "r"))
    synth.clean(run.flow(0, 42000, 2, 2.0), 2.0)
    bulk = synth.Flow(run, 99, 42001, 20)
    bulk.dport = 5201
    synth.clean(bulk, 3.0)
    d = run.write()
    os.makedirs(os.path.join(d, "persistent"))
    json.dump({"hosts": {"a1": {"ip": synth.HOSTS["a1"]}, "b1": {"ip": synth.HOSTS["b1"]}},
               "paths_rtt_ms": {"a1-b1": 4}}, open(os.path.join(d, "hosts.json"), "w"))
    json.dump({"flows": 2, "start_s": 3, "t0_unix": 1000.0,
               "groups": [{"src": "a1", "dst": "b1", "streams": 2, "port": 5201, "start_s": 3}]},
              open(os.path.join(d, "persistent", "plan.json"), "w"))
    streams = [{"sender": {"bytes": 2_000_000, "seconds": 10.0, "bits_per_second": 1.6e6, "retransmits": 3}},
               {"sender": {"bytes": 2_500_000, "seconds": 10.0, "bits_per_second": 2.0e6, "retransmits": 1}}]
    json.dump({"start": {"timestamp": {"timesecs": 1003}}, "end": {"streams": streams}},
              open(os.path.join(d, "persistent", "iperf3-a1-b1.json"), "w"))
    flows, row = ex.extract(d, str(tmp_path / "t"), False)
    assert [f["flow_id"] for f in flows] == [0]
    assert row["persistent_conns"] == 1 and row["persistent_streams"] == 2
    assert row["persistent_share_pct_mean"] == pytest.approx(18.0)
    with open(tmp_path / "t" / "persistent.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(r["stream"], r["share_pct"], r["start_s"], r["path_rtt_ms"]) for r in rows] == \
        [("0", "16.0", "3.0", "4"), ("1", "20.0", "3.0", "4")]
    # a web run has the table too, with its header only
    web = synth.SyntheticRun(str(tmp_path / "w"))
    synth.clean(web.flow(0, 42000, 2, 2.0), 2.0)
    _, row = ex.extract(web.write(), str(tmp_path / "t2"), False)
    assert (tmp_path / "t2" / "persistent.csv").read_text().strip() == ",".join(PERSISTENT_COLS)
    assert row["persistent_conns"] == 0 and row["persistent_share_pct_mean"] == ""


def test_chain_reference_flows_join_by_the_schedule_and_hop_1_keeps_its_direction(tmp_path):
    """Scenario chain: the runner's schedule.csv is the reference user's flows (us -> ur), joined by flow id
    as any schedule's; hop 1's captures (bneck-in r0-lan, bneck-out r1-prev) also see the ACKs towards the
    user pass the other way, which are not hop 1's arrivals (the hosts of r0's LAN are the senders)."""
    import dpkt
    import gzip
    run = synth.SyntheticRun(str(tmp_path / "c"))
    synth.clean(run.flow(0, 42000, 3, 2.0), 2.0)
    ack = synth._frame(synth.HOSTS["b1"], synth.HOSTS["a1"], 5001, 42000, dpkt.tcp.TH_ACK, 5001, 1, b"", 9)
    run.add("bneck-out", 2.5, ack)           # r1-prev first, then r0-lan: the reverse direction
    run.add("bneck-in", 2.52, ack)
    d = run.write()
    for old, new in (("a1", "us"), ("b1", "ur")):
        os.rename(os.path.join(d, "pcap", f"sender-{old}.pcap"), os.path.join(d, "pcap", f"sender-{new}.pcap"))
    sched = open(os.path.join(d, "schedule.csv")).read().replace(",a1,b1,forward,web", ",us,ur,forward,reference")
    open(os.path.join(d, "schedule.csv"), "w").write("# generator=workloads.reference\n" + sched)
    json.dump({"kind": "chain", "hosts": {"us": {"ip": synth.HOSTS["a1"], "lan": 0},
                                          "ur": {"ip": synth.HOSTS["b1"], "lan": 5}},
               "paths_rtt_ms": {"us-ur": 110}}, open(os.path.join(d, "hosts.json"), "w"))
    flows, row = ex.extract(d, str(tmp_path / "t"))
    assert [(f["flow_id"], f["src"], f["dst"], f["complete"], f["path_rtt_ms"]) for f in flows] == \
        [(0, "us", "ur", 1, 110)]
    assert flows[0]["drops"] == 0 and flows[0]["bneck_in"] == flows[0]["bneck_out"] > 0
    with gzip.open(tmp_path / "t" / "packets.csv.gz", "rt") as f:
        pk = list(csv.DictReader(f))
    assert pk and {p["src"] for p in pk} == {synth.HOSTS["a1"]} and not any(p["dropped"] == "1" for p in pk)
