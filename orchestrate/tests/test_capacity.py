"""The capacity benchmark's arithmetic and its verdict per rate (orchestrate/capacity.py); the ramp
itself runs on the guest (the command is in testbed/README.md)."""
import json

import pytest

from orchestrate import capacity
from orchestrate.config import REPO, read_config


def test_rate_becomes_the_load_that_offers_it():
    # 26.4 flows/s of 30 packets of 1500 B on 10 Mb/s is load 0.95
    assert capacity.load_for(26.4, 30, 10) == 0.9504
    base = read_config("config/quick.yaml")
    cfg = capacity.config_for(base, 10, 75, "droptail", None, "go")
    assert cfg["loads"] == [0.9] and cfg["sizes"]["mean_pkts"] == 10 and cfg["aqms"] == ["droptail"]
    assert cfg["attempts"] == 1 and cfg["replications"] == 1 and cfg["topology"] == base["topology"]
    assert cfg["workload_impl"] == "go" and cfg["name"] == "capacity-m10-go"
    assert base["sizes"]["mean_pkts"] == 30            # the base config is not changed


def _run(tmp_path, checks):
    d = tmp_path / "run"
    (d / "flows").mkdir(parents=True)
    (d / "flows" / "client-a1.csv").write_text("flow_id,x\n1,a\n2,b\n")
    (d / "fidelity.json").write_text(json.dumps({"valid": True, "reasons": [], "checks": checks}))
    return d


def test_late_flows_or_a_busy_cpu_mean_the_testbed_did_not_carry_the_rate(tmp_path):
    ok = {"cpu_busy": {"ok": True, "measured": {"mean": 0.5, "share_over_limit": 0.0}},
          "lateness_p99_ms": {"ok": True, "measured": 3.0}, "flows_started": {"ok": True},
          "bottleneck_rate_mbps": {"ok": False}}       # a network check says nothing of capacity
    r = capacity.summarize(20, 0.72, _run(tmp_path, ok))
    assert r["carried"] and r["flows_logged"] == 2 and r["lateness"] == 3.0
    late = dict(ok, lateness_p99_ms={"ok": False, "measured": 250.0, "severity": "warning"})
    r = capacity.summarize(20, 0.72, _run(tmp_path / "late", late))
    assert not r["carried"] and r["failed"] == ["lateness_p99_ms"]


def test_a_rate_at_load_one_or_more_is_refused_before_anything_starts(tmp_path, capsys):
    out = tmp_path / "cap"
    with pytest.raises(SystemExit) as e:
        capacity.main(["--mean-pkts", "10", "--rates", "60,90", "--out", str(out)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--rates 90: load 1 or more" in err and "below 83.3 flows/s" in err and "Fix:" in err
    assert not out.exists()                            # nothing was started


def test_a_bad_base_config_is_named_not_a_traceback(tmp_path, capsys):
    bad = tmp_path / "base.yaml"
    bad.write_text((REPO / "config" / "quick.yaml").read_text().replace("name: quick", "name: Quick-20M"))
    assert capacity.main(["--base", str(bad), "--mean-pkts", "10", "--rates", "60", "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("capacity: ") and "Quick-20M" in err and "Fix:" in err
    assert not (tmp_path / "c").exists()
