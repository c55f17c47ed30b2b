"""Lint every shell script with shellcheck and the Ansible roles with ansible-lint. Shell scripts are
found by name (*.sh) or by their #! line among git's tracked files, so a new script is linted without being listed."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from favorlab_testing import CI, unavailable

ROOT = Path(__file__).resolve().parents[1]


def shell_scripts():
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    out = []
    for f in filter(None, files):
        p = ROOT / f
        if not p.is_file():
            continue
        if f.endswith(".sh"):
            out.append(f)
            continue
        with p.open("rb") as fh:
            first = fh.readline(200)
        if first.startswith(b"#!") and (first.rstrip().endswith((b"/sh", b"/bash", b" sh", b" bash"))):
            out.append(f)
    return sorted(out)


def test_the_shell_scripts_are_found():
    """The finder sees the scripts the project runs: a finder that found none would make the lint pass on nothing."""
    found = shell_scripts()
    assert {".ci/run", "favorlab", "scripts/bootstrap"} <= set(found), found


def test_shellcheck_finds_nothing():
    if not shutil.which("shellcheck"):
        unavailable("shellcheck is not installed (scripts/bootstrap installs it: apt-packages.txt); the lint did not run",
                    CI)
    r = subprocess.run(["shellcheck", "--format=gcc", *shell_scripts()], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_ansible_lint_finds_nothing_in_the_roles():
    """ansible-lint (profile production, .ansible-lint) on ansible/: the roles every testbed is provisioned with."""
    lint = Path(sys.executable).parent / "ansible-lint"
    if not lint.exists():
        unavailable(f"ansible-lint is not installed in {lint.parent} (requirements.txt has it: scripts/bootstrap); "
                    f"the lint did not run", CI)
    r = subprocess.run([str(lint), "--nocolor", "-p", "ansible/"], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, PATH=f"{lint.parent}:{os.environ.get('PATH', '')}"), timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "0 failure(s)" in r.stderr + r.stdout
