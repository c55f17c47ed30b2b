"""One run's first attempt made invalid on purpose, from the test side: the pipeline tests must see an
invalid attempt redone, and no real testbed comes back invalid on demand.

`install(directory, run_id, fidelity)` copies this file to <directory>/sitecustomize.py with its parameters
beside it and returns the environment that puts <directory> first on PYTHONPATH. Every Python the pipeline
starts under that environment imports it at start-up (the `site` module does), and it acts in one of them
only: `python -m orchestrate.remote` making attempt 1 of `run_id` (orchestrate.run_step starts one per
attempt, with --spec and --run-dir <staging>/<n>). There it merges `fidelity` into the spec file before
orchestrate.remote reads it, so that attempt ships a spec with thresholds no run can meet (an idle-RTT
tolerance of 0) and its fidelity report says invalid; the attempts after it run the spec as given.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

PARAMS = "first_attempt.json"


def install(directory: Path, run_id: str, fidelity: dict) -> dict:
    """Writes the start-up patch into `directory`; the environment (os.environ plus PYTHONPATH) under which
    run `run_id`'s first attempt gets `fidelity`."""
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(__file__, directory / "sitecustomize.py")
    (directory / PARAMS).write_text(json.dumps({"run_id": run_id, "fidelity": fidelity}))
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": f"{directory}{os.pathsep}{path}" if path else str(directory)}


def _option(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _patch(argv: list[str], params: dict) -> None:
    """In `python -m orchestrate.remote ... --spec F --run-dir .../1` for the forced run: F gets the
    fidelity override."""
    if "-m" not in argv or argv[argv.index("-m") + 1:][:1] != ["orchestrate.remote"]:
        return
    spec_file, run_dir = _option(argv, "--spec"), _option(argv, "--run-dir")
    if not spec_file or not run_dir or Path(run_dir).name != "1":
        return
    spec = json.loads(Path(spec_file).read_text())
    if spec.get("run_id") != params["run_id"]:
        return
    spec["fidelity"] = {**spec.get("fidelity", {}), **params["fidelity"]}
    Path(spec_file).write_text(json.dumps(spec, indent=2))


def _chain() -> None:
    """The sitecustomize this one shadows (Debian's python3 has one), run as it would have been."""
    here = Path(__file__).resolve().parent
    path = [p for p in sys.path if p and Path(p).resolve() != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


if __name__ == "sitecustomize":
    _patch(list(getattr(sys, "orig_argv", sys.argv)), json.loads(Path(__file__).with_name(PARAMS).read_text()))
    _chain()
