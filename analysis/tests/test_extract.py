import csv
import os
import shutil
import subprocess

import pytest

from analysis import extract as ex
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
    run.favor = [(1, "eth1", "favored", s, d, 40000, 5001, 6, 1500, 0)] * 2 + \
                [(2, "eth1", "standard", s, d, 40000, 5001, 6, 1500, 3), (3, "eth1", "pushout_victim", s, d, 40003, 5001, 6, 1500, 8)]
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
    pairs = ex.bottleneck([mk(1.0), mk(4.0)], [mk(4.003)])
    assert [t for _, t in pairs] == [None, 4.003]


def test_schedule_without_required_columns_is_refused(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("flow_id,start_s\n0,1.0\n")
    with pytest.raises(ValueError, match="size_bytes"):
        ex.read_schedule(str(p))


def test_run_row_reports_nstat_deltas_beside_our_totals(tables):
    run = tables[3]
    assert run["nstat_TcpExtTCPTimeouts"] == "4" and run["nstat_TcpExtTCPSynRetrans"] == "2"
    assert run["ours_RTO"] == "3" and run["ours_syn_retrans"] == "1" and run["valid"] == "1"


def test_reused_four_tuple_gives_two_flows(tmp_path):
    run = synth.Run(str(tmp_path / "r"))
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
