"""The run directory's readers: a finished run is told from an unfinished one, and a file that is missing
or broken is named."""
import json

import pytest

from contract import rundir


def test_a_run_is_finished_by_its_done_file_only_outside_partial(tmp_path):
    run = tmp_path / "runs" / "r"
    run.mkdir(parents=True)
    assert not rundir.is_finished(run)
    (run / rundir.DONE).write_text("")
    assert rundir.is_finished(run)
    part = rundir.partial_of(run)
    assert part.name == "r.partial"
    part.mkdir()
    (part / rundir.DONE).write_text("")
    assert not rundir.is_finished(part)
    link = tmp_path / "runs" / "link"
    link.symlink_to(run)
    assert not rundir.is_finished(link)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / rundir.DONE).symlink_to(run / rundir.DONE)
    assert not rundir.is_finished(tmp_path / "other")


def test_readers_return_the_json_or_name_the_file(tmp_path):
    (tmp_path / rundir.SPEC).write_text(json.dumps({"run_id": "x"}))
    assert rundir.read_spec(tmp_path) == {"run_id": "x"}
    assert rundir.read_manifest(tmp_path, {}) == {}
    with pytest.raises(rundir.RunDirError, match=r"fidelity\.json: missing"):
        rundir.read_fidelity(tmp_path)
    (tmp_path / rundir.MANIFEST).write_text("{")
    with pytest.raises(rundir.RunDirError, match=r"manifest\.json: not valid JSON"):
        rundir.read_manifest(tmp_path, {})
    with pytest.raises(ValueError):          # a RunDirError is a ValueError for callers that catch those
        rundir.read_json(tmp_path, rundir.MANIFEST)


@pytest.mark.parametrize("rid, ok", [
    ("dumbbell-10M-buf8-pareto30-paper-reno_favor_load0.55_iw2_rep0", True),
    ("chain-10M-buf8-pareto30-paper-reno_fq_codel_load0.00_iw2_rep0", True),
    ("x_favor_load0.5_iw2_rep0/..", False), ("a b_favor_load0.5_iw2_rep0", False), ("..", False)])
def test_run_ids_are_the_pipelines(rid, ok):
    assert bool(rundir.RUN_ID.fullmatch(rid)) is ok


def test_a_run_ids_fields_are_read_back_the_aqm_with_its_underscores():
    rid = "dumbbell-10M-buf8-lomax30-paper-reno_droptail_twin_load0.25_iw2_rep3"
    assert rundir.run_id_fields(rid) == {"scenario": "dumbbell-10M-buf8-lomax30-paper-reno", "aqm": "droptail_twin",
                                         "load": "0.25", "iw": "2", "rep": "3"}
    with pytest.raises(ValueError, match="'x_y' is not a run id"):
        rundir.run_id_fields("x_y")


def test_the_run_list_is_rewritten_only_when_it_changes(tmp_path):
    path = tmp_path / "results" / rundir.RUN_LIST
    assert rundir.write_run_list(path, ["a_x_load0.5_iw2_rep0", "b_x_load0.5_iw2_rep0"]) is True
    stamp = path.stat().st_mtime_ns
    assert rundir.write_run_list(path, ["a_x_load0.5_iw2_rep0", "b_x_load0.5_iw2_rep0"]) is False
    assert path.stat().st_mtime_ns == stamp
    assert rundir.read_run_list(path) == ["a_x_load0.5_iw2_rep0", "b_x_load0.5_iw2_rep0"]
    assert rundir.write_run_list(path, ["a_x_load0.5_iw2_rep0"]) is True
    assert path.read_text() == "a_x_load0.5_iw2_rep0\n"


def test_phases_count_what_their_counters_grew_by_in_each_and_add_up_a_phase_entered_twice():
    """The runner's phases_work: per phase, how much CPU time and how many process starts it took, from
    counters that only grow; a phase entered twice sums both stretches, and a phase ended by None counts."""
    reads = iter([{"cpu_s": 10.0, "forks": 100}, {"cpu_s": 10.5, "forks": 104},
                  {"cpu_s": 12.0, "forks": 110}, {"cpu_s": 12.25, "forks": 111},
                  {"cpu_s": 12.25, "forks": 120}])
    ph = rundir.Phases(counters=lambda: next(reads))
    for name in ("reset", "traffic", "reset", "teardown", None):
        ph.mark(name)
    assert ph.work == {"reset": {"cpu_s": 0.75, "forks": 5}, "traffic": {"cpu_s": 1.5, "forks": 6},
                       "teardown": {"cpu_s": 0.0, "forks": 9}}
    assert list(ph.s) == ["reset", "traffic", "teardown"]
    assert rundir.Phases().work == {} and (lambda p: (p.mark("a"), p.mark(None), p.work)[2])(rundir.Phases()) == {}

