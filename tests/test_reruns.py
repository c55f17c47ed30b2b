"""Finished runs are redone only when the experiment changed, and a redone run is kept, not deleted.

Snakemake redoes a run whose params changed (the profile workflow/profiles/default, which `./favorlab` picks,
gives `--rerun-triggers mtime params input software-env`), and deletes its directory (attempts and pcaps included) before it runs the job again. These
tests run the project's Snakefile with real Snakemake executions of the run rule, without a testbed: a
Snakefile of the test's own includes the project's and points its Python (`PY`) at a stand-in that runs
the real orchestrate.run_step with the testbed side faked (nothing booted or provisioned; the attempt is a
complete run directory with a pcap and the spec it was given). Nothing of this is in the product code.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from favorlab_testing import CI, unavailable
from orchestrate.bundle import SNAKEMAKE_PROFILE as PROFILE

REPO = Path(__file__).resolve().parents[1]
NAME = "reruns"
# the rerun triggers as the profile gives them, for the positive controls below
TRIGGERS = yaml.safe_load((PROFILE / "config.yaml").read_text())["rerun-triggers"]

FAKE_PYTHON = r'''#!{python}
"""The pipeline's Python with the testbed side faked (tests/test_reruns.py)."""
import json, os, runpy, sys
from pathlib import Path

args = sys.argv[1:]
if args[:2] == ["-m", "orchestrate.testbeds"]:       # up-all / down-all: no testbed to boot or stop
    sys.exit(0)
if args[:2] == ["-m", "orchestrate.remote"]:         # one attempt: a complete run directory
    a = dict(zip(args[2::2], args[3::2]))
    dest = Path(a["--run-dir"])
    (dest / "pcap").mkdir(parents=True)
    (dest / "run.json").write_text(Path(a["--spec"]).read_text())
    (dest / "schedule.csv").write_text(Path(a["--schedule"]).read_text())
    (dest / "pcap" / "bneck-in.pcap").write_bytes(b"pcap of " + dest.name.encode())
    (dest / "fidelity.json").write_text(json.dumps({{"valid": True, "reasons": []}}))
    (dest / "DONE").write_text("")
    sys.exit(0)
if args[:2] == ["-m", "orchestrate.run_step"]:       # the real run_step, its testbed faked
    from orchestrate import testbeds
    testbeds.up = lambda member, out=None: {{"host": "127.0.0.1", "port": 1, "user": "root"}}
    testbeds.dead_reason = lambda member: None
    sys.executable = __file__                          # its orchestrate.remote is the one above
    sys.argv = ["orchestrate.run_step", *args[2:]]
    runpy.run_module("orchestrate.run_step", run_name="__main__")
os.execv({python!r}, [{python!r}, *args])
'''


@pytest.fixture
def pipeline(tmp_path, monkeypatch):
    """run(config, *snakemake args, env=...) -> CompletedProcess, in a work directory of the test's own."""
    work = tmp_path / "work"
    work.mkdir()
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON.format(python=sys.executable))
    fake.chmod(0o755)
    # the pipeline's code: a copy, which a test may edit (a code change)
    shutil.copytree(REPO / "workflow" / "rules", tmp_path / "code" / "workflow" / "rules")
    shutil.copy(REPO / "Snakefile", tmp_path / "code" / "Snakefile")
    (work / "Snakefile").write_text(f'include: "{tmp_path / "code" / "Snakefile"}"\nPY = "{fake}"\n')
    tarball = tmp_path / "p4lang.tar.gz"       # the P4 toolchain prefix only has to exist for planning
    tarball.write_bytes(b"")
    monkeypatch.setenv("FAVORLAB_CACHE", str(tmp_path / "cache"))   # the pool's leases
    monkeypatch.setenv("FAVORLAB_P4_TARBALL", str(tarball))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.delenv("FAVORLAB_FORCE", raising=False)
    configs = iter(range(1000))

    def run(cfg: dict, *args, env=None, targets=None) -> subprocess.CompletedProcess:
        path = tmp_path / f"config-{next(configs)}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        from orchestrate import matrix
        from orchestrate.config import validate
        ids = [r.run_id for r in matrix.runs(validate(json.loads(json.dumps(cfg))))]
        cmd = [sys.executable, "-m", "snakemake", *(targets or [f"results/{NAME}/runs/{i}" for i in ids]),
               "--profile", str(PROFILE), "--snakefile", str(work / "Snakefile"), "--configfile", str(path),
               "--cores", "1", *args]
        return subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, **(env or {})))
    run.results = work / "results" / NAME
    run.code = tmp_path / "code"
    return run


def base(**testbed) -> dict:
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg.update(name=NAME, loads=[0.5], duration_s=5, warmup_s=1, drain_s=0,
               testbed=testbed or {"kind": "local-vm", "vm_name": "reruns-test"})
    return cfg


def planned_runs(p: subprocess.CompletedProcess) -> set[str]:
    """The run directories a dry run (-n) would make: the outputs of its `rule run` jobs."""
    assert p.returncode == 0, p.stderr
    out, runs, rule = (p.stdout + p.stderr).splitlines(), set(), None
    for line in out:
        s = line.strip()
        if s.startswith("rule ") and s.endswith(":"):
            rule = s[5:-1]
        elif rule == "run" and s.startswith("output:"):
            runs.add(Path(s.split(":", 1)[1].strip()).name)
    return runs


def finished(results: Path) -> dict[str, bytes]:
    """Each finished run directory's pcap, which a redone run would replace."""
    return {d.name: (d / "pcap" / "bneck-in.pcap").read_bytes() for d in sorted((results / "runs").iterdir())
            if (d / "DONE").is_file()}


def made(pipeline, cfg) -> dict[str, bytes]:
    p = pipeline(cfg)
    assert p.returncode == 0, p.stdout + p.stderr
    runs = finished(pipeline.results)
    assert len(runs) == 2, runs
    return runs


def test_testbed_changes_that_are_not_experiment_changes_redo_no_run(pipeline):
    cfg = base()
    before = made(pipeline, cfg)
    ids = set(before)
    # the positive control: a change of the experiment redoes both (so the dry runs below can see a rerun)
    assert planned_runs(pipeline(dict(cfg, duration_s=6), "-n")) == ids
    assert planned_runs(pipeline(cfg, "-n")) == set()
    for testbed in ({"kind": "local-vm", "vm_name": "reruns-test", "keep_running": True},
                    {"kind": "local-vm", "vm_name": "another-guest"},
                    {"kind": "local-vm", "vm_name": "reruns-test", "count": 3, "retries": 0}):
        assert planned_runs(pipeline(dict(cfg, testbed=testbed), "-n")) == set(), testbed
    # a P4 AQM joins the config: only its own run is new, the finished ones stay
    p4 = dict(cfg, aqms=["droptail", "favor", "p4-favorqueue"])
    from orchestrate import matrix
    from orchestrate.config import validate
    p4_ids = {r.run_id for r in matrix.runs(validate(json.loads(json.dumps(p4))))}
    assert planned_runs(pipeline(p4, "-n")) == p4_ids - ids and len(p4_ids - ids) == 1
    assert finished(pipeline.results) == before


def test_host_hosts_and_group_are_one_experiment(pipeline, tmp_path):
    if not (Path(sys.executable).parent / "ansible-inventory").exists() and not shutil.which("ansible-inventory"):
        unavailable("ansible-inventory is not installed (scripts/bootstrap installs it)", CI)
    inv = tmp_path / "hosts.yml"
    inv.write_text(yaml.safe_dump({"all": {"children": {"ssh_hosts": {"hosts": {
        "node0": {"ansible_host": "127.0.0.1"}, "node1": {"ansible_host": "127.0.0.2"}}}}}}))
    cfg = base(kind="ssh", inventory=str(inv), host="node0")
    before = made(pipeline, cfg)
    for testbed in ({"kind": "ssh", "inventory": str(inv), "hosts": ["node0", "node1"]},
                    {"kind": "ssh", "inventory": str(inv), "group": "ssh_hosts"},
                    {"kind": "ssh", "inventory": str(inv), "host": "node1"}):
        assert planned_runs(pipeline(dict(cfg, testbed=testbed), "-n")) == set(), testbed
    # the kind of testbed is part of the measurement (a TCG guest is not a real host)
    assert planned_runs(pipeline(base(), "-n")) == set(before)
    assert finished(pipeline.results) == before


def test_a_redone_run_is_kept_in_superseded_unless_forced(pipeline):
    cfg = base()
    before = made(pipeline, cfg)
    # a spec change redoes both runs: the onstart hook moves each finished run before Snakemake deletes it
    p = pipeline(dict(cfg, drain_s=1))
    assert p.returncode == 0, p.stdout + p.stderr
    superseded = sorted((pipeline.results / "superseded").iterdir())
    assert len(superseded) == 2
    for d in superseded:
        run_id, stamp = d.name.rsplit("-", 1)
        assert run_id in before and len(stamp) == len("20261126T070000Z") and stamp.endswith("Z")
        assert (d / "pcap" / "bneck-in.pcap").read_bytes() == before[run_id]       # the old run, whole
        assert json.loads((d / "run.json").read_text())["drain_s"] == 0
        assert (d / "DONE").is_file() and (d / "attempts.json").is_file()
        assert f"redoing the finished run {run_id}: its spec changed (drain_s)" in p.stderr
        assert f"kept in results/{NAME}/superseded/{d.name}/" in p.stderr
    for run_id in before:      # and the new runs are made in their place
        assert json.loads((pipeline.results / "runs" / run_id / "run.json").read_text())["drain_s"] == 1
    # --force (FAVORLAB_FORCE=1 from ./favorlab): redone runs are deleted, as Snakemake does by itself
    p = pipeline(dict(cfg, drain_s=2), env={"FAVORLAB_FORCE": "1"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert sorted((pipeline.results / "superseded").iterdir()) == superseded
    assert "--force: its directory is deleted" in p.stderr
    for run_id in before:
        assert json.loads((pipeline.results / "runs" / run_id / "run.json").read_text())["drain_s"] == 2
    # a new schedule (another seed) redoes both again, said as such, and keeps them
    p = pipeline(dict(cfg, drain_s=2, seed=8))
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(list((pipeline.results / "superseded").iterdir())) == 4
    assert p.stderr.count("its spec changed (seed); its schedule changed") == 2, p.stderr


def test_an_edit_of_the_run_rules_code_redoes_no_finished_run(pipeline):
    """The profile's rerun triggers leave out `code`: editing the orchestration's Python in the run rule
    keeps the finished runs, where Snakemake's default triggers would redo them all."""
    before = made(pipeline, base())
    rules = pipeline.code / "workflow" / "rules" / "testbed.smk"
    text = rules.read_text()
    line = "        spec_dir.mkdir(parents=True, exist_ok=True)\n"
    assert line in text
    rules.write_text(text.replace(line, line + "        assert spec_dir.is_dir()\n"))
    # the positive control: with `code` among the triggers the edit is seen, and both runs would be redone
    assert planned_runs(pipeline(base(), "-n", "--rerun-triggers", *TRIGGERS, "code")) == set(before)
    assert planned_runs(pipeline(base(), "-n")) == set()
    assert finished(pipeline.results) == before


def analysed_as_copied(results: Path, ids) -> None:
    """The analysis outputs of the given runs, as a results folder copied from another machine holds them:
    every file in place and in order of making, and no Snakemake metadata."""
    shutil.rmtree(results.parents[1] / ".snakemake")
    for rid in sorted(ids):
        (results / "tables" / rid).mkdir(parents=True)
        for f in ("flows.csv", "run.csv", "persistent.csv", "packets.csv.gz"):
            (results / "tables" / rid / f).write_text("")
    (results / "analysis-runs.txt").write_text("".join(f"{r}\n" for r in sorted(ids)))
    (results / "figures").mkdir()
    (results / "verdict.csv").write_text("")
    (results / "report.html").write_text("")


def test_copied_results_make_the_runs_a_raised_replication_count_adds(pipeline):
    """Results copied without Snakemake's metadata (another machine's, cp -a): a config that gains runs
    plans exactly those, though the report is there. Snakemake takes a missing input of an existing output
    for a deleted intermediate, so only the run list, rewritten when it changes, tells the report it is stale."""
    cfg = base()
    before = made(pipeline, cfg)
    analysed_as_copied(pipeline.results, before)
    report = [f"results/{NAME}/report.html"]
    assert planned_runs(pipeline(cfg, "-n", targets=report)) == set()
    more = dict(cfg, replications=2)
    from orchestrate import matrix
    from orchestrate.config import validate
    ids = {r.run_id for r in matrix.runs(validate(json.loads(json.dumps(more))))}
    assert planned_runs(pipeline(more, "-n", targets=report)) == ids - set(before) and len(ids) == 4
    assert finished(pipeline.results) == before


def test_the_wrapper_picks_the_profile_and_turns_force_into_favorlab_force(tmp_path):
    """./favorlab's own code, with its tools stubbed: --force is taken out of Snakemake's arguments and
    exported as FAVORLAB_FORCE=1; the flags are the profile's, which the tests above use; after `--`
    every argument is Snakemake's."""
    box = tmp_path / "box"
    (box / "scripts").mkdir(parents=True)
    (box / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(REPO / "favorlab", box / "favorlab")
    stubs = {"scripts/bootstrap": "exit 0",
             ".venv/bin/python": "exit 0",
             ".venv/bin/snakemake": 'printf "%s\\n" "FORCE=${FAVORLAB_FORCE:-}" "$@" > "$(dirname "$0")/../../argv"'}
    for path, body in stubs.items():
        (box / path).write_text(f"#!/bin/bash\n{body}\n")
        (box / path).chmod(0o755)
    (box / "c.yaml").write_text("name: c\n")
    env = {k: v for k, v in os.environ.items() if k != "FAVORLAB_FORCE"}
    for extra, force, given in ((["--force", "-n"], "1", ["-n"]), (["-n"], "", ["-n"]),
                                (["-n", "--", "--force", "-h"], "", ["-n", "--force", "-h"])):
        r = subprocess.run(["bash", str(box / "favorlab"), "run", "c.yaml", *extra], capture_output=True, text=True,
                           env=env, timeout=60)
        assert r.returncode == 0, r.stderr
        argv = (box / "argv").read_text().splitlines()
        assert argv == [f"FORCE={force}", "--profile", "workflow/profiles/default", "--configfile", "c.yaml", *given]
    help_text = subprocess.run(["bash", str(REPO / "favorlab"), "help"], capture_output=True, text=True).stdout
    assert "--force" in help_text and "superseded" in help_text


def test_every_shell_placeholder_of_the_run_rules_is_quoted():
    """testbed.smk's commands get paths and config values: each placeholder is Snakemake-quoted ({x:q}) or
    the one word runspec.shell_json makes ({pool})."""
    import re
    text = (REPO / "workflow" / "rules" / "testbed.smk").read_text()
    commands = re.findall(r'shell\(\s*((?:"[^"]*"\s*)+)', text)
    assert len(commands) == 4       # the run, up-all, down-all twice
    placeholders = [p for c in commands for p in re.findall(r"(?<!\{)\{([^{}]+)\}(?!\})", c)]
    assert placeholders and all(p.endswith(":q") or p == "pool" for p in placeholders), placeholders
