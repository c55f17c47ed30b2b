"""Every shipped config makes the runs recorded in data/run-specs-before.json: the same run ids, and for each
the same run spec, schedule arguments and testbed parameter. Snakemake redoes a run whose spec or schedule
changed, so a change here would redo (and supersede) finished runs: a reorganisation of the config code or
of the configs themselves (defaults, `extends`) must keep every one of them.

The file holds, per config, each run id with the first 16 hex digits of the sha256 of
json.dumps({"spec", "schedule_args", "testbed"}, sort_keys=True). It is data, not output of this test: it
is never regenerated to make the test pass. It changes only where what a run is changes on purpose, in a
commit of its own that says why and shows the diff touches only what was meant (Table 1's sizes becoming
Pareto II changed the sizes in every spec and schedule and the size tag in the run ids, nothing else).
"""
import hashlib
import json
from pathlib import Path

import pytest

from orchestrate import matrix, runspec
from orchestrate.config import read_config

REPO = Path(__file__).resolve().parents[2]
BEFORE = json.loads((Path(__file__).parent / "data" / "run-specs-before.json").read_text())
SHIPPED = sorted(p.name for p in (REPO / "config").glob("*.yaml") if p.name != "aqms.yaml")


def run_hashes(path: Path) -> dict:
    cfg = read_config(path, warn=lambda _m: None)
    out = {}
    for point in matrix.runs(cfg):
        blob = {"spec": runspec.run_spec(cfg, point), "schedule_args": runspec.schedule_args(cfg, point),
                "testbed": runspec.testbed_param(cfg)}
        out[point.run_id] = hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:16]
    return out


def test_every_shipped_config_is_in_the_list():
    assert SHIPPED == sorted(BEFORE), "a config was added or removed: the list covers exactly the shipped ones"


@pytest.mark.parametrize("name", SHIPPED)
def test_run_ids_and_specs_unchanged(name, tmp_path, monkeypatch):
    # p4-quick validates only where a prebuilt P4 toolchain exists for the local guest; its presence is all
    # validation checks
    tarball = tmp_path / "p4lang.tar.gz"
    tarball.write_bytes(b"")
    monkeypatch.setenv("FAVORLAB_P4_TARBALL", str(tarball))
    now, before = run_hashes(REPO / "config" / name), BEFORE[name]
    missing = sorted(set(before) - set(now))
    new = sorted(set(now) - set(before))
    changed = sorted(r for r in set(now) & set(before) if now[r] != before[r])
    problems = [f"{what} ({len(ids)}): {', '.join(ids[:10])}{' ...' if len(ids) > 10 else ''}"
                for what, ids in (("missing runs", missing), ("new runs", new),
                                  ("runs whose spec, schedule arguments or testbed changed", changed)) if ids]
    assert not problems, f"config/{name}: " + "; ".join(problems)
