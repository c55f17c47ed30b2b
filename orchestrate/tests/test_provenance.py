"""The commit recorded with each attempt and shown in the report."""
import re
import shutil
import subprocess

import pytest

from orchestrate.provenance import favorlab_commit, favorlab_version, r_packages, r_versions, snakemake_version


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


def test_version_names_the_commit_and_a_tag(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "f").write_text("1\n")
    git(tmp_path, "add", "f")
    git(tmp_path, "commit", "-qm", "one")
    head = favorlab_commit(tmp_path)
    assert favorlab_version(tmp_path) == f"favorlab {head}"
    git(tmp_path, "tag", "v1.0")
    assert favorlab_version(tmp_path) == f"favorlab {head} (v1.0)"
    (tmp_path / "f").write_text("2\n")
    assert favorlab_version(tmp_path) == f"favorlab {head} with uncommitted changes (v1.0)"


def test_the_r_packages_are_read_from_the_scripts(tmp_path):
    (tmp_path / "a.R").write_text('library(data.table)\nsuppressPackageStartupMessages(library("ggplot2"))\n'
                                  'x <- yaml::read_yaml(f)\nrequireNamespace(\'jsonlite\', quietly = TRUE)\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.R").write_text("library(testthat)\n")
    assert r_packages(tmp_path) == ["data.table", "ggplot2", "jsonlite", "yaml"]
    # the project's own scripts: the packages its apt-packages.txt installs are among them
    assert {"data.table", "ggplot2", "yaml"} <= set(r_packages())


def test_r_versions_come_from_the_rscript_on_path(monkeypatch, tmp_path):
    if not shutil.which("Rscript"):
        pytest.skip("Rscript is not installed; runs where analysis/apt-packages.txt is installed (scripts/bootstrap)")
    v = r_versions(["data.table", "no.such.package"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", v["R"]), v
    assert re.fullmatch(r"\d+(\.\d+)+", v["data.table"]), v
    assert v["no.such.package"] == "not installed"
    monkeypatch.setenv("PATH", str(tmp_path))     # no Rscript: said, not raised
    assert r_versions(["yaml"])["R"].startswith("not found")


def test_snakemake_version_is_the_installed_one():
    from importlib import metadata
    assert snakemake_version() == metadata.version("snakemake")


def test_the_report_shows_snakemake_and_r():
    from analysis import report
    page = report.provenance([], [])
    assert f"<th>Snakemake</th><td>{snakemake_version()}</td>" in page
    assert "<th>R and the R packages the analysis loads</th><td>R " in page
