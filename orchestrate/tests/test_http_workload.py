"""The config's workload option: `workload: {kind: http, connections: N}` makes runs whose run.json asks the
runner for nginx + wrk and whose run ids say so; the replay (the default) leaves run.json as it was; an HTTP
workload where it cannot run is refused, naming the fix."""
from pathlib import Path

import pytest
import yaml

from contract import spec as specmod
from orchestrate import matrix, runspec
from orchestrate.config import ConfigError, validate

REPO = Path(__file__).resolve().parents[2]


def smoke(**changes):
    return dict(yaml.safe_load((REPO / "config" / "smoke.yaml").read_text()), **changes)


def test_http_runs_say_so_in_run_id_and_spec():
    cfg = validate(smoke(workload={"kind": "http", "connections": 2}))
    runs = matrix.runs(cfg)
    assert [r.run_id for r in runs] == [f"dumbbell-10M-buf8-lomax30-paper-reno-http2c_{a}_load0.75_iw2_rep0"
                                        for a in ("droptail", "favor")]
    spec = runspec.run_spec(cfg, runs[0])
    assert spec["workload"] == {"kind": "web", "http": {"connections": 2}}
    assert specmod.validate(spec) is spec
    # the same schedule as the replay's: its sizes are the objects'
    replay = validate(smoke())
    assert runs[0].schedule_id == matrix.runs(replay)[0].schedule_id
    assert runspec.schedule_args(cfg, runs[0]) == runspec.schedule_args(replay, matrix.runs(replay)[0])


def test_the_replay_is_the_default_and_adds_nothing_to_the_spec():
    cfg = validate(smoke())
    assert cfg["workload"] == {"kind": "replay", "connections": 1}
    r = matrix.runs(cfg)[0]
    assert "http" not in r.run_id and runspec.run_spec(cfg, r)["workload"] == {"kind": "web"}
    assert matrix.runs(validate(smoke(workload={"kind": "replay"})))[0].run_id == r.run_id


@pytest.mark.parametrize("changes, needle", [
    ({"workload": {"kind": "http", "connections": 0}}, "connections"),
    ({"workload": {"kind": "wrk2"}}, "kind"),
    ({"workload": {"kind": "http"}, "scenario": "persistent"}, "workload.kind http is for scenario 'dumbbell'"),
    ({"workload": {"kind": "http"}, "synflood": {"rates_x": [0, 1]}}, "synflood.rates_x: [0]"),
])
def test_an_http_workload_that_cannot_run_is_refused(changes, needle):
    with pytest.raises(ConfigError, match="workload") as e:
        validate(smoke(**changes))
    assert needle in str(e.value)


@pytest.mark.parametrize("http", [{"connections": 0}, {}, 3, {"connections": "2"}])
def test_run_json_refuses_a_bad_http_workload(http):
    cfg = validate(smoke(workload={"kind": "http", "connections": 1}))
    spec = runspec.run_spec(cfg, matrix.runs(cfg)[0])
    spec["workload"]["http"] = http
    with pytest.raises(specmod.SpecError, match="workload.http"):
        specmod.validate(spec)
