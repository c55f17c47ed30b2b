"""The report's opening summary: the numbers a reader takes away before reading anything else."""
import json
from datetime import datetime, timezone

from analysis import report


def _run(tmp_path, rid, tries, valid=True):
    d = tmp_path / rid
    d.mkdir()
    (d / "DONE").write_text("")
    (d / "run.json").write_text(json.dumps({"aqm": {"name": "favor"}, "load": 0.5}))
    (d / "fidelity.json").write_text(json.dumps({"valid": valid, "reasons": [] if valid else ["cpu_busy"]}))
    (d / "attempts.json").write_text(json.dumps(tries))


def test_summary_counts_attempts_and_sums_every_attempts_wall_time(tmp_path):
    _run(tmp_path, "a", [{"attempt": 1, "valid": True, "wall_s": 120.0, "started_utc": "2026-11-23T10:00:00+00:00",
                          "favorlab_commit": "0123456789ab"}])
    _run(tmp_path, "b", [{"attempt": 1, "valid": False, "wall_s": 100.0, "started_utc": "2026-11-23T10:02:00+00:00"},
                         {"attempt": 2, "valid": True, "wall_s": 140.0, "started_utc": "2026-11-23T10:04:00+00:00"}])
    runs = report.runs_section(str(tmp_path))
    s = report.summary([{"status": "holds"}, {"status": "insufficient data"}], runs)
    assert "valid at the first attempt 1, after retries 1, never 0" in s
    assert "<b>1</b> holds" in s and "<b>1</b> insufficient data" in s
    w = report.wall_time(runs, now=datetime(2026, 11, 23, 10, 30, tzinfo=timezone.utc))
    assert "<b>6.0 min</b> of runs" in w and "<b>30.0 min</b> from the first run's start" in w
    # provenance names the commit the runs were made from, not only the report's own
    assert "<td>0123456789ab</td>" in report.provenance(runs, [])


def test_wall_time_says_so_when_runs_did_not_record_it(tmp_path):
    _run(tmp_path, "a", [{"attempt": 1, "valid": True}])
    assert "not recorded" in report.wall_time(report.runs_section(str(tmp_path)))


def test_cpu_section_names_the_groups_that_used_the_cpu(tmp_path):
    _run(tmp_path, "a", [{"attempt": 1, "valid": True}])
    (tmp_path / "a" / "cpu.json").write_text(json.dumps({
        "modes": {"user": 0.5, "system": 0.2, "softirq": 0.15, "idle": 0.15, "iowait": 0.0},
        "processes": [{"group": "workload client", "share": 0.4}, {"group": "tcpdump", "share": 0.1}]}))
    s = report.cpu_section(report.runs_section(str(tmp_path)))
    assert "<td>85%</td>" in s and "workload client 40%; tcpdump 10%" in s
    assert "<td>not recorded</td>" in s                # made before the runner sampled memory
    c = json.loads((tmp_path / "a" / "cpu.json").read_text())
    (tmp_path / "a" / "cpu.json").write_text(json.dumps(dict(c, mem_total_mib=1987, mem_peak_used_mib=412)))
    assert "<td>412 of 1987 MiB</td>" in report.cpu_section(report.runs_section(str(tmp_path)))


def test_tables_name_the_aqms_as_the_paper_and_the_figures_do():
    assert report.aqm_name("favor") == "FaQ" and report.aqm_name("droptail") == "DropTail"
    assert report.aqm_name("not-in-aqms-yaml") == "not-in-aqms-yaml"
    html = report.unfinished_section([{"aqm": "favor", "load": "0.5", "flows_window": "10", "steady": "0"}])
    assert "Not steady: 1 run(s)</b>: FaQ at load 0.5" in html and "<td>FaQ</td>" in html
