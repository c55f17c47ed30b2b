"""./favorlab as a user meets it: --version, status, a command's own --help, and no root for what needs none
(the analysis, bundles, status) once scripts/bootstrap has installed everything."""
import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

from orchestrate import matrix, status
from orchestrate.config import validate
from orchestrate.provenance import favorlab_version

REPO = Path(__file__).resolve().parents[1]


def favorlab(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "favorlab"), *args], capture_output=True, text=True, timeout=120, **kw)


def ready_here():
    if subprocess.run([str(REPO / "scripts" / "bootstrap"), "--check"], capture_output=True).returncode:
        pytest.skip("scripts/bootstrap has not installed everything here; runs after it (CI bootstraps first)")


def test_version_names_the_commit():
    p = favorlab("--version")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == favorlab_version()
    assert re.match(r"favorlab [0-9a-f]{12}\b", p.stdout), p.stdout


def test_a_commands_help_is_favorlabs_and_snakemakes_comes_after_the_dashes():
    p = favorlab("quick", "--help")
    assert p.returncode == 0, p.stderr
    assert "./favorlab quick " in p.stdout and "usage: snakemake" not in p.stdout
    assert "after `--`" in p.stdout                     # the note that says how to reach Snakemake's
    run = favorlab("run", "--help")
    assert "run CONFIG.yaml" in run.stdout and "the quick reproduction" not in run.stdout
    # the Python commands answer with their own argparse help, favorlab's too
    assert favorlab("status", "-h").stdout.startswith("usage: ./favorlab status")
    assert favorlab("analyse", "--help").stdout.startswith("usage: favorlab analyse")
    bad = favorlab("nosuch", "--help")
    assert bad.returncode == 2 and "unknown command 'nosuch'" in bad.stderr
    ready_here()
    snakemakes = favorlab("run", "config/smoke.yaml", "--", "--help")
    assert snakemakes.returncode == 0 and "usage: snakemake" in snakemakes.stdout


def finished_run(results: Path, rid: str, valid: bool) -> None:
    d = results / "runs" / rid
    d.mkdir(parents=True)
    (d / "fidelity.json").write_text(json.dumps({"valid": valid, "reasons": []}))
    (d / "DONE").write_text("")


def test_status_counts_a_configs_runs_from_its_results_folder(tmp_path):
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg.update(name="status-test", loads=[0.5, 0.75])          # 2 AQMs x 2 loads: 4 runs planned
    path = tmp_path / "status-test.yaml"
    path.write_text(yaml.safe_dump(cfg))
    ids = [r.run_id for r in matrix.runs(validate(json.loads(json.dumps(cfg))))]
    results = tmp_path / "results" / "status-test"
    finished_run(results, ids[0], True)
    finished_run(results, ids[1], False)
    (results / "attempts" / ids[2]).mkdir(parents=True)       # started, cut off
    (results / "runs" / (ids[3] + ".partial")).mkdir()          # not finished
    row = status.status_of(results, path)
    assert {k: row[k] for k in ("planned", "valid", "invalid", "started", "remaining")} == \
        {"planned": 4, "valid": 1, "invalid": 1, "started": 1, "remaining": 2}
    ready_here()
    p = favorlab("status", str(path), "--results-root", str(tmp_path / "results"))
    assert p.returncode == 0, p.stderr
    header, line = p.stdout.splitlines()
    assert header.split()[:6] == ["results", "planned", "valid", "invalid", "started", "remaining"]
    assert line.split()[1:6] == ["4", "1", "1", "1", "2"], p.stdout
    # a folder no config names: planned from the specs the pipeline wrote
    (tmp_path / "results" / "other" / "specs" / "x").mkdir(parents=True)
    every = favorlab("status", "--results-root", str(tmp_path / "results"))
    assert every.returncode == 0 and len(every.stdout.splitlines()) == 3, every.stdout + every.stderr
    missing = favorlab("status", str(tmp_path / "no.yaml"))
    assert missing.returncode == 2 and "no such config file" in missing.stderr


def box_of_a_ready_checkout(apt_packages: str) -> Path:
    """A copy of the wrapper and the real bootstrap, with .venv in place for requirements.txt (its Python a
    stub that records its arguments), the report's charting library installed and the given
    apt-packages.txt, readable by any user."""
    box = Path(tempfile.mkdtemp(prefix="favorlab-wrapper-"))
    for f in ("favorlab", "scripts/bootstrap", "requirements.txt"):
        (box / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / f, box / f)
    (box / "apt-packages.txt").write_text(apt_packages)
    # the report's charting library, as scripts/bootstrap's npm ci leaves it (a ready checkout needs no registry)
    charts = box / "analysis" / "view" / "node_modules" / "echarts" / "dist" / "echarts.min.js"
    charts.parent.mkdir(parents=True)
    charts.write_text("/* echarts */\n")
    (box / ".venv" / "bin").mkdir(parents=True)
    py = box / ".venv" / "bin" / "python"
    py.write_text('#!/bin/sh\necho "$@" > "$(dirname "$0")/../called"\n')
    py.chmod(0o755)
    want = subprocess.run(["sha256sum", str(box / "requirements.txt")], capture_output=True, text=True).stdout.split()[0]
    (box / ".venv" / ".requirements.sha256").write_text(want + "\n")
    (box / "bin").mkdir()
    (box / "bin" / "sudo").write_text(f'#!/bin/sh\necho "$@" >> {box}/sudo-called\nexit 1\n')
    (box / "bin" / "sudo").chmod(0o755)
    box.chmod(0o777)
    for root, dirs, files in os.walk(box):
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o777)
    return box


def as_normal_user(box: Path, *args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{box}/bin:/usr/bin:/bin", HOME=str(box))
    cmd = [str(box / "favorlab"), *args]
    if os.geteuid() == 0:
        cmd = [shutil.which("runuser") or "/usr/sbin/runuser", "-u", "nobody", "--", "env", f"PATH={env['PATH']}", f"HOME={box}", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)


# each command and what the stub python is called with: the module and its arguments
@pytest.mark.parametrize("command, called", [
    (["analyse", "some.tar.gz"], "-m orchestrate.bundle analyse some.tar.gz"),
    (["bundle", "config/smoke.yaml"], "-m orchestrate.bundle bundle config/smoke.yaml"),
    (["compare", "a.tar.gz", "b.tar.gz"], "-m orchestrate.compare a.tar.gz b.tar.gz"),
    (["status"], "-m orchestrate.status")])
def test_a_ready_checkout_runs_analysis_compare_bundle_and_status_without_sudo(command, called):
    box = box_of_a_ready_checkout("bash\n")
    try:
        p = as_normal_user(box, *command)
        assert p.returncode == 0, p.stdout + p.stderr
        assert not (box / "sudo-called").exists(), (box / "sudo-called").read_text()
        assert (box / ".venv" / "called").read_text().split() == called.split()
        # the control: a Debian package missing, and the same command asks sudo for apt, saying why
        (box / "apt-packages.txt").write_text("bash favorlab-no-such-package\n")
        p = as_normal_user(box, *command)
        assert (box / "sudo-called").read_text().startswith("apt-get"), p.stdout + p.stderr
        assert "root needed: asking sudo" in p.stdout
    finally:
        shutil.rmtree(box)


def test_a_root_bootstrap_leaves_venv_to_the_invoking_user():
    if os.geteuid() != 0:
        pytest.skip("chown needs root; runs where the tests run as root (CI)")
    box = box_of_a_ready_checkout("bash\n")
    try:
        for p in [box, *box.rglob("*")]:
            os.chown(p, 0, 0)
        # the user sudo was called by owns .venv afterwards, so pip install into it needs no root
        p = subprocess.run([str(box / "scripts" / "bootstrap")], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, SUDO_USER="nobody"))
        assert p.returncode == 0, p.stderr
        nobody = pwd.getpwnam("nobody").pw_uid
        assert {q.lstat().st_uid for q in [box / ".venv", *(box / ".venv").rglob("*")]} == {nobody}
        assert box.stat().st_uid == 0           # only .venv changes hands
        # without sudo (root's own shell): the repository's owner
        user = pwd.getpwnam("daemon")
        os.chown(box, user.pw_uid, user.pw_gid)
        env = {k: v for k, v in os.environ.items() if k != "SUDO_USER"}
        assert subprocess.run([str(box / "scripts" / "bootstrap")], capture_output=True, env=env).returncode == 0
        assert (box / ".venv" / "bin" / "python").stat().st_uid == user.pw_uid
    finally:
        shutil.rmtree(box)


def test_status_lists_every_folder_when_one_config_does_not_validate(tmp_path, monkeypatch, capsys):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "bad.yaml").write_text("name: bad\nno_such_key: 1\n")
    (tmp_path / "results" / "bad" / "specs" / "r1").mkdir(parents=True)
    (tmp_path / "results" / "other" / "specs" / "r2").mkdir(parents=True)
    monkeypatch.setattr(status, "REPO", tmp_path)
    assert status.main(["--results-root", str(tmp_path / "results")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and "bad.yaml does not validate here" in out[1] and "no config file" in out[2], out
