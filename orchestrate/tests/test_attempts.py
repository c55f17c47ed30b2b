"""Invalid runs are redone (orchestrate/run_step.py): up to `attempts`, every attempt kept, the valid
one used, and an interrupted job resumes from the attempts it already has. The testbed is a stand-in here
(a function that writes a run directory with a chosen fidelity verdict); tests/test_figures_cut.py does the
same through the real guest."""
import json

from orchestrate import run_step


def fake_testbed(verdicts, calls):
    """run_once that makes attempt n valid or not as verdicts[n - 1] says, recording what it was given."""
    def run_once(spec, dest):
        calls.append((dest.name, spec.get("fidelity")))
        ok = verdicts[len(calls) - 1]
        dest.mkdir(parents=True)
        (dest / "DONE").write_text("")
        (dest / "fidelity.json").write_text(json.dumps({"valid": ok, "reasons": [] if ok else [f"cpu_busy #{dest.name}"]}))
        return 0
    return run_once


SPEC = {"run_id": "dumbbell-10M_favor_load0.95_iw2_rep0", "fidelity": {"rate_min_share": 0.9}}


def test_invalid_first_attempt_is_redone_and_kept(tmp_path):
    calls = []
    run_dir, staging = tmp_path / "runs" / SPEC["run_id"], tmp_path / "attempts" / SPEC["run_id"]
    assert run_step.run_attempts(fake_testbed([False, True], calls), SPEC, staging, run_dir, 3) == 0
    assert [c[0] for c in calls] == ["1", "2"]
    assert json.loads((run_dir / "fidelity.json").read_text())["valid"] is True          # the valid one is used
    assert json.loads((run_dir / "attempts" / "1" / "fidelity.json").read_text())["valid"] is False   # kept
    record = json.loads((run_dir / "attempts.json").read_text())
    for r in record:     # the controller's wall time and commit of each attempt, which the report shows
        assert r.pop("wall_s") >= 0 and r.pop("started_utc").startswith("20")
        assert len(r.pop("favorlab_commit").split()[0]) == 12
    assert record == [{"attempt": 1, "valid": False, "reasons": ["cpu_busy #1"]}, {"attempt": 2, "valid": True, "reasons": []}]
    assert not staging.exists()


def test_still_invalid_after_all_attempts_stays_invalid(tmp_path):
    calls = []
    run_dir = tmp_path / "runs" / "r"
    assert run_step.run_attempts(fake_testbed([False] * 5, calls), dict(SPEC, run_id="r"), tmp_path / "st", run_dir, 3) == 0
    assert len(calls) == 3
    assert sorted(p.name for p in (run_dir / "attempts").iterdir()) == ["1", "2"]
    assert [a["valid"] for a in json.loads((run_dir / "attempts.json").read_text())] == [False] * 3


def test_interrupted_job_resumes_from_its_attempts(tmp_path):
    """Attempt 1 came back invalid before the interruption; attempt 2 was cut off (only .partial): the
    resumed job counts attempt 1, redoes attempt 2 and does not start over."""
    staging, run_dir = tmp_path / "st", tmp_path / "runs" / "r"
    fake_testbed([False], [])({}, staging / "1")
    (staging / "2.partial").mkdir()
    calls = []
    assert run_step.run_attempts(fake_testbed([True], calls), dict(SPEC, run_id="r"), staging, run_dir, 3) == 0
    assert [c[0] for c in calls] == ["2"]
    assert [a["attempt"] for a in json.loads((run_dir / "attempts.json").read_text())] == [1, 2]
    # interrupted after the last attempt came back valid but before the rename: nothing is run again
    staging2, run_dir2 = tmp_path / "st2", tmp_path / "runs" / "r2"
    fake_testbed([True], [])({}, staging2 / "1")
    calls = []
    assert run_step.run_attempts(fake_testbed([], calls), dict(SPEC, run_id="r2"), staging2, run_dir2, 3) == 0
    assert calls == [] and (run_dir2 / "DONE").exists()


def test_an_empty_controller_record_does_not_fail_the_resumed_job(tmp_path, capsys):
    """A crash while controller.json was written left it empty: the resumed job still assembles the run
    (that attempt's timing left out, with a warning naming the file) instead of failing on every retry."""
    staging, run_dir = tmp_path / "st", tmp_path / "runs" / "r"
    fake_testbed([False], [])({}, staging / "1")
    (staging / "1" / "controller.json").write_text("")
    calls = []
    assert run_step.run_attempts(fake_testbed([True], calls), dict(SPEC, run_id="r"), staging, run_dir, 3) == 0
    record = json.loads((run_dir / "attempts.json").read_text())
    assert record[0] == {"attempt": 1, "valid": False, "reasons": ["cpu_busy #1"]}
    assert record[1]["valid"] is True and record[1]["wall_s"] >= 0
    assert "controller.json is empty" in capsys.readouterr().err


def test_a_failing_attempt_fails_the_job_and_keeps_what_came_back(tmp_path):
    staging = tmp_path / "st"
    ok = fake_testbed([False], [])
    calls = []

    def flaky(spec, dest):
        calls.append(dest.name)
        return ok(spec, dest) if dest.name == "1" else 255      # the testbed died during attempt 2
    assert run_step.run_attempts(flaky, dict(SPEC, run_id="r"), staging, tmp_path / "runs" / "r", 3) == 255
    assert not (tmp_path / "runs" / "r").exists() and run_step.finished_attempts(staging) == [1]



def test_each_attempt_records_where_its_wall_time_went(tmp_path):
    """attempts.json carries per attempt the controller's phases with the runner's own in the place of its
    ssh session, the job's lease and bring-up in its first attempt only, and the overhead: what the report's
    per-phase medians and the plan's projection read."""
    def run_once(spec, dest):
        dest.mkdir(parents=True)
        (dest / "DONE").write_text("")
        (dest / "fidelity.json").write_text(json.dumps({"valid": dest.name == "2", "reasons": []}))
        (dest / "manifest.json").write_text(json.dumps({"phases_s": {"topology up": 4.0, "traffic and drain": 30.0,
                                                                      "teardown": 1.0},
                                                        "phases_work": {"topology up": {"cpu_s": 3.1, "forks": 40}}}))
        (dest / "controller.json").write_text(json.dumps({"phases_s": {"connect, copy in and space check": 0.5, "runner": 36.0,
                                                                        "copy back": 1.5}}))
        return 0
    run_dir, staging = tmp_path / "runs" / "r", tmp_path / "st"
    assert run_step.make_attempts(run_once, dict(SPEC, run_id="r"), staging, 3, before_s=2.5) == 0
    run_step.assemble(staging, run_dir)
    first, second = json.loads((run_dir / "attempts.json").read_text())
    phases = first["phases_s"]
    assert list(phases)[:5] == ["lease and bring-up", "connect, copy in and space check", "topology up", "traffic and drain",
                                "teardown"]
    assert phases["lease and bring-up"] == 2.5 and phases["runner start and exit"] == 1.0   # 36 - (4 + 30 + 1)
    # the stand-in takes a fraction of a second while its controller claims 38 s: never a negative remainder
    assert phases["controller start and exit"] == 0.0
    assert first["overhead_s"] == round(sum(phases.values()) - 30.0, 1)
    assert "lease and bring-up" not in second["phases_s"]
    # the guest's CPU seconds and process starts per runner phase, as the runner counted them
    assert first["runner_work"] == {"topology up": {"cpu_s": 3.1, "forks": 40}}


def test_an_attempt_without_phase_records_keeps_its_wall_time(tmp_path):
    """A run directory from a runner that did not time its phases: the attempt keeps wall_s, and no invented
    phases or overhead."""
    run_dir, staging = tmp_path / "runs" / "r", tmp_path / "st"
    assert run_step.run_attempts(fake_testbed([True], []), dict(SPEC, run_id="r"), staging, run_dir, 3) == 0
    (record,) = json.loads((run_dir / "attempts.json").read_text())
    assert "wall_s" in record and "phases_s" not in record and "overhead_s" not in record
