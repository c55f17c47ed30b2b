"""A normal user analyses a bundle from a clone after the root bootstrap: `sudo scripts/bootstrap` leaves .venv
to that user, and `./favorlab analyse` and `./favorlab compare` then need no root and ask no sudo.

A throwaway user (removed at the end) and a fresh clone of the committed tree. The clone's .venv is a venv of
its own whose packages are this checkout's .venv's (a .pth file): a full `pip install` would take minutes
and the registry, and what is checked here is whose .venv it is and that nothing asks for root."""
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def sh(*cmd, **kw) -> subprocess.CompletedProcess:
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=kw.pop("timeout", 120), **kw)
    assert p.returncode == 0, f"{cmd}: {p.stdout}{p.stderr}"
    return p


@pytest.fixture
def user():
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("making a throwaway user needs root and useradd; runs where the tests run as root (CI)")
    name = f"favorlab-t{uuid.uuid4().hex[:6]}"
    home = Path(tempfile.mkdtemp(prefix="favorlab-nonroot-"))
    sh("useradd", "--no-create-home", "--home-dir", home, "--shell", "/bin/bash", name)
    try:
        shutil.chown(home, name, name)
        yield name, home
    finally:
        subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


MAKE_BUNDLE = """
import sys, yaml
from pathlib import Path
from analysis import extract
from analysis.tests import synth
from orchestrate import bundle
root, out = Path(sys.argv[1]), Path(sys.argv[2])
cfg = yaml.safe_load(Path("config/smoke.yaml").read_text())
cfg.update(name="nonroot-test", loads=[0.5])
(root / "c.yaml").write_text(yaml.safe_dump(cfg))
res = root / "results" / "nonroot-test"
for aqm in ("droptail", "favor"):
    rid = f"dumbbell-10M-buf8-lomax30-paper-reno_{aqm}_load0.50_iw2_rep0"
    run = synth.standard_run(str(res / "runs" / rid))
    extract.extract(run.write(aqm=aqm, rep=0, valid=True), str(res / "tables" / rid))
bundle.bundle(root / "c.yaml", out, results=res, log=lambda _m: None)
"""


@pytest.mark.slow
def test_a_normal_user_analyses_a_bundle_after_the_root_bootstrap(user, tmp_path_factory, rscript):
    name, home = user
    clone = home / "favorlab"
    sh("git", "clone", "--quiet", "--no-hardlinks", REPO, clone)
    # a bundle of analysis/tests/synth.py's crafted runs (DropTail and FavorQueue, smoke.yaml at load 0.5),
    # extracted the way orchestrate/tests/test_bundle.py extracts them, by the clone's code
    bundle = home / "b.tar.gz"
    sh(sys.executable, "-c", MAKE_BUNDLE, tmp_path_factory.mktemp("made"), bundle, cwd=clone,
       env=dict(os.environ, PYTHONPATH=str(clone)))
    # the root bootstrap's venv: root's, with the packages requirements.txt names
    sh("/usr/bin/python3", "-m", "venv", "--without-pip", clone / ".venv")
    site = Path(sysconfig.get_paths()["purelib"])
    pth = clone / ".venv" / site.relative_to(Path(sys.prefix)) / "favorlab-packages.pth"
    pth.write_text(f"{site}\n")
    want = sh("sha256sum", clone / "requirements.txt").stdout.split()[0]
    (clone / ".venv" / ".requirements.sha256").write_text(want + "\n")
    sh("chown", "-R", f"{name}:{name}", home)
    sh("chown", "-R", "root:root", clone / ".venv")
    sh(clone / "scripts" / "bootstrap", env=dict(os.environ, SUDO_USER=name))
    # lstat: the venv's links (bin/python3 -> /usr/bin/python3) are the user's, what they point to is not touched
    assert {pwd.getpwuid(p.lstat().st_uid).pw_name for p in [clone / ".venv", *(clone / ".venv").rglob("*")]} == {name}
    assert Path("/usr/bin/python3").resolve().stat().st_uid == 0
    # the user: no sudo to fall back on (a stub that records a call), the clone's own .venv
    (home / "bin").mkdir()
    (home / "bin" / "sudo").write_text(f"#!/bin/sh\necho \"$@\" >> {home}/sudo-called\nexit 1\n")
    (home / "bin" / "sudo").chmod(0o755)
    shutil.chown(home / "bin", name, name)
    env = ["env", "-i", f"HOME={home}", f"PATH={home}/bin:{os.environ['PATH']}", "LANG=C.UTF-8"]
    out = home / "analysed"
    p = subprocess.run([shutil.which("runuser"), "-u", name, "--", *env, str(clone / "favorlab"), "analyse", str(bundle),
                        "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=home)
    assert p.returncode == 0, p.stdout + p.stderr
    assert not (home / "sudo-called").exists(), (home / "sudo-called").read_text()
    assert (out / "verdict.csv").is_file() and (out / "report.html").is_file()
    assert out.owner() == name
    # compare, the other analysis a user runs on bundles: the bundle against itself
    cmp = home / "compared"
    p = subprocess.run([shutil.which("runuser"), "-u", name, "--", *env, str(clone / "favorlab"), "compare", str(bundle),
                        str(bundle), "--out", str(cmp), "--resamples", "100"], capture_output=True, text=True,
                       timeout=600, cwd=home)
    assert p.returncode == 0, p.stdout + p.stderr
    assert not (home / "sudo-called").exists(), (home / "sudo-called").read_text()
    assert cmp.is_dir() and any(cmp.iterdir()) and cmp.owner() == name
    # and the user installs into .venv itself (pip's own check: its site-packages are writable by the user)
    w = subprocess.run([shutil.which("runuser"), "-u", name, "--", "test", "-w", str(pth.parent)], capture_output=True)
    assert w.returncode == 0
