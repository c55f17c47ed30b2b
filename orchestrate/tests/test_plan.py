"""The projected wall time ./favorlab prints before a pipeline: measured overheads, attempts, testbeds."""
import json
import subprocess
import sys

import pytest

from orchestrate import plan
from orchestrate.inventory import REPO


def run_dir(root, config, run, duration, drain, walls, kind="local-vm", clock=None, kept=False):
    d = root / config / "runs" / run
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"duration_s": duration, "drain_s": drain}))
    lease = {"kind": kind, **({"clock": clock} if clock else {})}
    phases = {plan.KEPT_PHASE if kept else "topology up": 5.0}
    (d / "attempts.json").write_text(json.dumps(
        [{"attempt": i + 1, "wall_s": w, "lease": lease, "phases_s": phases} for i, w in enumerate(walls)]))


def test_overhead_is_the_median_beyond_traffic_and_attempts_count(tmp_path):
    run_dir(tmp_path, "quick", "a", 70, 20, [130])          # overhead 40
    run_dir(tmp_path, "quick", "b", 70, 20, [140, 150])     # 50, 60: two attempts
    run_dir(tmp_path, "smoke", "c", 20, 10, [75])           # 45
    run_dir(tmp_path, "cl", "d", 70, 20, [100], kind="ssh")  # another kind: not counted
    (tmp_path / "quick" / "runs" / "broken").mkdir()
    (tmp_path / "quick" / "runs" / "broken" / "attempts.json").write_text("{not json")
    m = plan.measured(tmp_path, "local-vm")
    assert sorted(m["overheads"]) == [40, 45, 50, 60] and sorted(m["attempts"]) == [1, 1, 2]
    nums, lines = plan.project([90] * 20, "local-vm", [1, 10, 50], tmp_path)
    per_run = (90 + 47.5) * (4 / 3)
    assert nums["per_run_s"] == pytest.approx(per_run)
    assert nums["wall_s"] == {1: pytest.approx(20 * per_run), 10: pytest.approx(2 * per_run),
                              50: pytest.approx(per_run)}
    assert "median of 4 attempts in 3 runs on local-vm testbeds, real clock, fresh networks" in lines[0]
    assert "set-up and analysis not included" in lines[1]


def test_no_run_yet_says_so(tmp_path):
    nums, lines = plan.project([30, 30], "local-vm", [1], tmp_path)
    assert nums["overhead_s"] == plan.DEFAULT_OVERHEAD_S["local-vm"] and "no run on a local-vm testbed here yet" in lines[0]
    nums, lines = plan.project([30], "local-vm", [1], tmp_path, clock="virtual")
    assert nums["overhead_s"] is None and "no attempt on local-vm testbeds, virtual clock, fresh networks" in lines[0]
    nums, lines = plan.project([560] * 600, "ssh", [1, 50], tmp_path)
    assert nums["overhead_s"] is None and "overhead unknown, traffic time only" in lines[0]
    assert nums["wall_s"][50] == 12 * 560 and "50 testbeds 1.9 h" in lines[1]


def test_runs_of_different_lengths_are_dealt_longest_first(tmp_path):
    """A config with sections mixes run lengths: the wall time is the busiest testbed's, not runs x mean."""
    nums, lines = plan.project([1000, 100, 100, 100, 100], "ssh", [1, 2, 5], tmp_path)
    assert nums["wall_s"] == {1: 1400, 2: 1000, 5: 1000}
    assert "5 runs of 100 to 1000 s traffic and drain" in lines[0] and "on average" in lines[0]


def test_experiment_plan_prints_the_config_and_its_pool():
    p = subprocess.run([sys.executable, "-m", "orchestrate.config", "plan",
                        str(REPO / "config" / "quick.yaml")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("plan: 24 runs of 90 s traffic and drain")
    assert "1 testbed " in p.stdout and "50 testbeds" in p.stdout and "this config's pool: 1" in p.stdout
    bad = subprocess.run([sys.executable, "-m", "orchestrate.config", "plan",
                          str(REPO / "config" / "nope.yaml")], capture_output=True, text=True)
    assert bad.returncode == 2 and "nope.yaml" in bad.stderr


def test_an_attempt_that_timed_its_phases_counts_its_overhead_with_the_lease(tmp_path):
    """overhead_s (attempts.json, with the job's lease and bring-up) is the attempt's overhead where it is
    recorded; older attempts fall back to wall time minus traffic."""
    run_dir(tmp_path, "quick", "a", 70, 20, [130])                       # 40
    d = tmp_path / "quick" / "runs" / "b"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"duration_s": 70, "drain_s": 20}))
    (d / "attempts.json").write_text(json.dumps([{"attempt": 1, "wall_s": 100, "overhead_s": 14.5,
                                                  "lease": {"kind": "local-vm"}}]))
    assert sorted(plan.measured(tmp_path, "local-vm")["overheads"]) == [14.5, 40]


def test_a_config_is_projected_from_attempts_with_its_clock_and_its_network(tmp_path):
    """Attempts on kept networks skip the topology's set-up and probes, and a virtual clock stretches wall time:
    neither may set the projection of a config that does otherwise."""
    run_dir(tmp_path, "quick", "a", 70, 20, [130, 140])                      # fresh, real clock: 40, 50
    run_dir(tmp_path, "quick", "b", 70, 20, [110], kept=True)                # kept, real: 20
    run_dir(tmp_path, "v", "c", 70, 20, [300], clock="virtual")              # fresh, virtual: 210
    run_dir(tmp_path, "v", "d", 70, 20, [250], clock="virtual", kept=True)   # kept, virtual: 160
    assert sorted(plan.measured(tmp_path, "local-vm")["overheads"]) == [40, 50]
    assert plan.measured(tmp_path, "local-vm", network="kept")["overheads"] == [20]
    assert plan.measured(tmp_path, "local-vm", "virtual")["overheads"] == [210]
    nums, lines = plan.project([90], "local-vm", [1], tmp_path, "virtual", reuse_topology=True)
    assert nums["overhead_s"] == 160 and "virtual clock, kept networks" in lines[0]
    assert plan.project([90], "local-vm", [1], tmp_path, reuse_topology=True)[0]["overhead_s"] == 20
