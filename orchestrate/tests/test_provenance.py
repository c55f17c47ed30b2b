"""The commit recorded with each attempt and shown in the report."""
import subprocess

from orchestrate.provenance import favorlab_commit


def git(repo, *a):
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *a], check=True,
                   capture_output=True)


def test_commit_and_local_changes(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "f").write_text("1\n")
    git(tmp_path, "add", "f")
    git(tmp_path, "commit", "-qm", "one")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    assert favorlab_commit(tmp_path) == head[:12]
    (tmp_path / "f").write_text("2\n")
    assert favorlab_commit(tmp_path) == head[:12] + " with uncommitted changes"
    (tmp_path / "f").write_text("1\n")
    (tmp_path / "untracked").write_text("results are not code\n")
    assert favorlab_commit(tmp_path) == head[:12]


def test_not_a_checkout(tmp_path):
    assert favorlab_commit(tmp_path) == "unknown (not a git checkout)"
