"""The R loader (analysis/R/load.R) on a bundle's tables: a table directory named `x; touch CANARY; echo /run`
holding a run.csv and no flows.csv is what data.table's fread(path) runs as a shell command. The real
scripts of the pipeline (verdict.R) are run on such a tables directory, with and without the pipeline's run
list: the canary never appears, and the directory is ignored or refused in one clean error."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from analysis import extract as ex
from analysis.tests import synth
from orchestrate.bundle import REPO

# Rscript: skipped where it is missing, failed under CI (the root conftest's fixture)
need_r = pytest.mark.usefixtures("rscript")
IDS = [f"dumbbell-10M-buf8-pareto30-paper-reno_{aqm}_load0.50_iw2_rep0" for aqm in ["droptail", "favor"]]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """Two real runs' tables, beside a directory shaped as the injection: <payload>/run/run.csv, no flows.csv."""
    root = tmp_path_factory.mktemp("rload")
    for rid in IDS:
        run = synth.standard_run(str(root / "runs" / rid))
        ex.extract(run.write(aqm=rid.split("_")[1]), str(root / "tables" / rid))
    canary = root / "CANARY"
    evil = root / "tables" / f"x; touch {canary}; echo " / "run"
    evil.mkdir(parents=True)
    shutil.copy(root / "tables" / IDS[0] / "run.csv", evil / "run.csv")
    spaced = root / "tables" / "a b"
    spaced.mkdir()
    shutil.copy(root / "tables" / IDS[0] / "run.csv", spaced / "run.csv")
    return root, canary, evil


def _verdict(root: Path, *args):
    return subprocess.run(["Rscript", "analysis/R/verdict.R", "--tables", str(root / "tables"), *args],
                          cwd=REPO, capture_output=True, text=True, timeout=600)


@need_r
def test_the_injection_shape_does_run_a_command_through_fread_of_a_path(tables):
    """The threat is real: the same string given to fread as its first argument runs the command (so the
    tests below can fail)."""
    root, _, evil = tables
    probe = root / "PROBE"
    path = str(evil / "flows.csv").replace(str(root / "CANARY"), str(probe))
    r = subprocess.run(["Rscript", "-e",
                        "suppressMessages(library(data.table)); try(fread(commandArgs(TRUE)[1]), silent = TRUE)",
                        path], capture_output=True, text=True, timeout=120)
    assert probe.exists(), r.stderr
    probe.unlink()


@need_r
def test_the_loader_ignores_a_table_directory_that_is_not_a_plain_name(tables, tmp_path):
    root, canary, _ = tables
    r = _verdict(root, "--out", str(tmp_path / "verdict.csv"))
    assert r.returncode == 0, r.stderr
    assert "2 table directories not among the runs analysed, ignored" in r.stderr
    assert not canary.exists()
    # the verdict is the two runs' alone: the same with the pipeline's run list naming them
    runs = tmp_path / "runs.txt"
    runs.write_text("".join(f"{r}\n" for r in IDS))
    r2 = _verdict(root, "--runs", str(runs), "--out", str(tmp_path / "listed.csv"))
    assert r2.returncode == 0, r2.stderr
    assert (tmp_path / "verdict.csv").read_bytes() == (tmp_path / "listed.csv").read_bytes()
    assert not canary.exists()


@need_r
def test_a_run_list_naming_the_injection_is_refused_cleanly(tables, tmp_path):
    root, canary, _ = tables
    runs = tmp_path / "runs.txt"
    runs.write_text(f"{IDS[0]}\nx; touch {canary}; echo /run\n")
    r = _verdict(root, "--runs", str(runs), "--out", str(tmp_path / "verdict.csv"))
    assert r.returncode != 0
    assert "is not a run id of the pipeline" in r.stderr
    assert not canary.exists() and not (tmp_path / "verdict.csv").exists()


def test_every_fread_of_the_r_code_names_its_file_by_file():
    """fread's first argument runs a shell command when it is no file and holds a space: the R code (and its
    tests) give every file as `file = `, so no string read from a bundle can become a command."""
    positional = []
    for p in sorted((REPO / "analysis" / "R").rglob("*.R")):
        for i, line in enumerate(p.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            # fread( not followed by `file =`, or fread handed on as a function (lapply(paths, fread))
            if re.search(r"\bfread\((?!\s*file\s*=)|\bfread\b(?!\s*\()", code):
                positional.append(f"{p.relative_to(REPO)}:{i}: {line.strip()}")
    assert not positional, positional
    # and the loader's reader is where every table goes through
    load_r = (REPO / "analysis" / "R" / "load.R").read_text()
    assert "read_csv_file <- function(path, ...) fread(file = path, ...)" in load_r
