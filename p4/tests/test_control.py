"""The P4 control plane as pure functions: what the switch is told, and what a bad entry is told."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from p4 import control
from topologies import dumbbell

from orchestrate import config, matrix, runspec
from orchestrate.config import ConfigError, read_config, validate

REPO = Path(__file__).resolve().parents[2]


def test_rate_is_the_bottleneck_in_full_size_frames_per_second():
    assert control.queue_rate_pps(10) == 826          # 10e6 / (8 * 1514)
    assert control.queue_rate_pps(100) == 8256
    assert control.queue_rate_pps(0.001) == 1         # never 0: BMv2 reads 0 as "no limit"


def test_favorqueue_commands_from_config():
    p = control.parse_args(["program", "favorqueue", "limit", "8", "pushout", "1"])
    cmds = control.cli_commands(p, 10)
    assert "table_add FavorIngress.port_forward.forward set_egress 1 => 2" in cmds
    assert "table_add FavorIngress.port_forward.forward set_egress 2 => 1" in cmds
    # max_sojourn: 10 drains of a 65-packet queue at 826 pps (1.57 s, above the 1 s floor)
    assert "table_add FavorIngress.bottleneck favor_admit 2 => 8 1 1573849" in cmds
    assert "set_queue_depth 65 2" in cmds and "set_queue_rate 826 2" in cmds
    # phantoms (favorqueue.p4) are cloned to the bottleneck port, where they take standard pacer slots
    assert f"mirroring_add {control.PHANTOM_SESSION} 2" in cmds
    # only the forward port is rate-limited: the reverse path keeps its Linux qdisc
    assert not any(c.startswith("set_queue_rate") and not c.endswith(" 2") for c in cmds)


def test_favorqueue_traffic_manager_can_never_fill():
    """Admission holds at most limit + owed push-outs (<= limit) packets, so the traffic manager, whose
    drops would leak per-flow state, never drops; the standard queue also has room for phantoms while
    up to 3/4 of the port's packets are favored (3 phantoms per standard packet)."""
    for limit in (1, 8, 100):
        p = control.parse_args(["program", "favorqueue", "limit", str(limit)])
        assert control.queue_depth(p) > 2 * limit
        assert control.queue_depth(p) > 2 * limit + 3 * 2 * limit


def test_phantoms_lost_counts_favored_packets_without_a_pacer_slot():
    v = dict.fromkeys(control.VERDICTS, 0)
    v.update(favored=40, pushouts=2, phantoms=42)
    assert control.phantoms_lost(v) == 0
    v["phantoms"] = 39
    assert control.phantoms_lost(v) == 3


def test_droptail_is_the_traffic_managers_fifo():
    p = control.parse_args(["program", "droptail", "limit", "8"])
    cmds = control.cli_commands(p, 10)
    assert "set_queue_depth 8 2" in cmds
    assert not any("bottleneck" in c for c in cmds)


def test_max_sojourn_outlasts_a_full_buffer_and_can_be_set():
    p = control.parse_args(["program", "favorqueue", "limit", "1000"])
    pps = control.queue_rate_pps(1)   # slow: 2001 packets at 83 pps take 24 s
    assert control.max_sojourn_us(p, pps) >= 10 * 2001 * 1e6 / pps
    q = control.parse_args(["program", "favorqueue", "limit", "8", "max_sojourn_ms", "300"])
    assert control.max_sojourn_us(q, 826) == 300000


@pytest.mark.parametrize("args,needle", [
    (["program", "fq"], "program='fq'"),
    (["program", "favorqueue"], "limit is missing"),
    (["program", "favorqueue", "limit", "0"], "limit=0 is out of range"),
    (["program", "favorqueue", "limit", "x"], "limit='x' is not an integer"),
    (["program", "favorqueue", "limit", "8", "pushout", "2"], "pushout=2"),
    (["program", "droptail", "limit", "8", "pushout", "1"], "favorqueue only"),
    (["program", "favorqueue", "limit", "8", "colour", "red"], "unknown key"),
    (["program", "favorqueue", "limit"], "key/value pairs"),
])
def test_bad_p4_args_name_the_problem(args, needle):
    with pytest.raises(control.P4ConfigError, match=None) as e:
        control.parse_args(args)
    assert needle in str(e.value)


def test_queue_left_reads_the_counts_that_must_drain():
    regs = {"queued": 0, "standard_queued": 0, "pushout_debt": 1,
            "flow_queued": {"sum": 2, "max": 1, "nonzero": 2}}
    assert control.queue_left(regs) == {"queued": 0, "standard_queued": 0, "pushout_debt": 1,
                                        "flow_queued_sum": 2}


def test_cli_answers_parse():
    txt = ("Obtaining JSON from switch...\nDone\nControl utility for runtime P4 table manipulation\n"
           "RuntimeCmd: verdicts[0]= (12000 bytes, 12 packets)\n"
           "RuntimeCmd: verdicts[1]= (3000 bytes, 3 packets)\nRuntimeCmd: \n")
    assert control.parse_counter_lines(txt) == [12, 3]
    assert control.parse_register_read("RuntimeCmd: flow_queued= 0, 2, 0, 1\nRuntimeCmd: ") == [0, 2, 0, 1]
    assert control.parse_register_read("RuntimeCmd: queued[0]= 5\n") == [5]
    both = "RuntimeCmd: flow_queued= 0, 2\nRuntimeCmd: queued= 5\nRuntimeCmd: "
    assert control.parse_register_reads(both, 2) == [[0, 2], [5]]
    with pytest.raises(ValueError, match="expected 3"):
        control.parse_register_reads(both, 3)
    with pytest.raises(ValueError):
        control.parse_counter_lines("RuntimeCmd: Error: Invalid counter name\n")


@pytest.fixture
def tarball(tmp_path, monkeypatch):
    t = tmp_path / "p4lang.tar.gz"
    t.write_bytes(b"")
    monkeypatch.setenv("FAVORLAB_P4_TARBALL", str(t))
    return t


def test_p4_aqms_are_ordinary_config_names(tarball):
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg["aqms"] = ["p4-droptail", "p4-favorqueue"]
    c = validate(cfg, "test")
    specs = [runspec.run_spec(c, r) for r in matrix.runs(c)]
    fwd = {s["aqm"]["name"]: s["aqm"]["forward"] for s in specs}
    assert fwd["p4-favorqueue"]["kind"] == "p4"
    assert control.parse_args(fwd["p4-favorqueue"]["args"])["limit"] == c["topology"]["buffer_pkts"]
    plan = dumbbell.qdisc_plan(dict(c["topology"], kind="dumbbell"), specs[0]["aqm"])
    assert plan["rl"] == [], "with a P4 bottleneck rl-eth1 gets no qdisc (the switch queues)"
    assert plan["rr"][0][1] == "pfifo", "the reverse path keeps its Linux qdisc"
    assert c["testbed"]["p4"] is True, "orchestrate.testbeds must be told to provision the P4 toolchain"


def test_p4_quick_runs_the_same_schedules_as_quick(tarball):
    quick = read_config(REPO / "config" / "quick.yaml")
    p4q = read_config(REPO / "config" / "p4-quick.yaml")
    assert p4q["aqms"] == ["p4-droptail", "p4-favorqueue"]
    for a, b in zip(matrix.runs(quick)[::2], matrix.runs(p4q)[::2]):
        assert runspec.schedule_seed(quick, a) == runspec.schedule_seed(p4q, b)
    # everything but the AQMs and the fidelity thresholds (p4-quick allows for BMv2's switch crossings
    # and packet-slot pacing, and says so) is quick's
    skip = ("name", "description", "aqms", "testbed", "fidelity", "pool", "matrix")   # pool, matrix: derived
    assert {k: v for k, v in quick.items() if k not in skip} == {k: v for k, v in p4q.items() if k not in skip}
    assert p4q["matrix"][0]["fidelity"]["rtt_tolerance_ms"] > quick["matrix"][0]["fidelity"]["rtt_tolerance_ms"]


def test_p4_on_the_local_vm_without_a_toolchain_is_refused_before_any_run(tmp_path, monkeypatch):
    monkeypatch.setenv("FAVORLAB_P4_TARBALL", str(tmp_path / "missing.tar.gz"))
    monkeypatch.setattr(config, "P4_TARBALL_DEFAULT", tmp_path / "none.tar.gz")
    with pytest.raises(ConfigError) as e:
        read_config(REPO / "config" / "p4-quick.yaml")
    assert "FAVORLAB_P4_TARBALL" in str(e.value) and "p4/README.md" in str(e.value)


def test_bad_p4_entry_rejected_before_any_run(tmp_path, monkeypatch, tarball):
    aqms = yaml.safe_load((REPO / "config" / "aqms.yaml").read_text())
    aqms["p4-broken"] = {"forward": {"kind": "p4", "args": ["program", "favorqueue", "limit", "0"]},
                         "reverse": {"kind": "pfifo", "args": ["limit", "8"]}}
    path = tmp_path / "aqms.yaml"
    path.write_text(yaml.safe_dump(aqms))
    monkeypatch.setattr(runspec, "AQMS_PATH", path)
    monkeypatch.setattr(runspec, "read_aqms", lambda p=path: yaml.safe_load(p.read_text()))
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg["aqms"] = ["p4-broken"]
    with pytest.raises(ConfigError) as e:
        validate(cfg, "test.yaml")
    assert "p4-broken" in str(e.value) and "limit=0 is out of range" in str(e.value)
