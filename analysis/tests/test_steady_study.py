"""analysis.steady_study: the steady test over windows of a results directory, as used to choose quick's
warm-up and window."""
import csv
import json

import pytest

from analysis import steady_study


def _results(tmp_path, flows, duration=70, warmup=10):
    run_id = "dumbbell-10M_droptail_load0.5_iw2_rep0"
    rd = tmp_path / "runs" / run_id
    rd.mkdir(parents=True)
    (rd / "run.json").write_text(json.dumps({"aqm": {"name": "droptail"}, "load": 0.5, "duration_s": duration,
                                             "warmup_s": warmup, "topology": {"bottleneck_mbps": 10}}))
    (rd / "manifest.json").write_text(json.dumps({"t0_unix": 1000.0}))
    td = tmp_path / "tables" / run_id
    td.mkdir(parents=True)
    cols = ["flow_id", "direction", "seen", "start_s", "syn_t", "done_t", "size_bytes"]
    with (td / "flows.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        for i, (start, end) in enumerate(flows):
            w.writerow({"flow_id": i, "direction": "forward", "seen": 1, "start_s": start,
                        "syn_t": 1000.0 + start, "done_t": "" if end is None else 1000.0 + end,
                        "size_bytes": 12500})
    return tmp_path


def test_a_backlog_that_builds_then_levels_off_is_steady_only_in_later_windows(tmp_path):
    # one flow a second; for the first 30 s each lasts longer than the one before (N climbs), then 10 s each
    flows = [(s, s + (s / 3 if s < 30 else 10)) for s in range(0, 70)]
    rows = steady_study.study(str(_results(tmp_path, flows)), [20, 30, 50], starts=[0, 30])
    verdict = {(r["start_s"], r["window_s"]): r["steady"] for r in rows}
    assert verdict[(0, 20)] == 0 and verdict[(0, 30)] == 0          # still building
    assert verdict[(30, 20)] == 1 and verdict[(30, 30)] == 1        # levelled off
    assert verdict[(0, 50)] == 0 and (30, 50) not in verdict         # 30 + 50 > duration_s 70: not made up
    # the schedule's own load in a window: 1 flow/s of 12500 B on 10 Mb/s = 0.01
    assert rows[0]["offered"] == pytest.approx(0.01)


def test_default_start_is_each_runs_warm_up(tmp_path):
    rows = steady_study.study(str(_results(tmp_path, [(s, s + 5) for s in range(70)], warmup=25)), [40])
    assert [(r["start_s"], r["window_s"], r["steady"]) for r in rows] == [(25.0, 40, 1)]


def test_a_directory_without_tables_names_the_fix(tmp_path):
    with pytest.raises(SystemExit, match="Fix: point --results"):
        steady_study.study(str(tmp_path), [40])
