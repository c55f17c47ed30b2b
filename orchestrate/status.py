"""./favorlab status [CONFIG]: how far each config's runs are, read from its results folder alone.

Per results/<name>/: the runs planned (the config's matrix when its config file is known, otherwise the specs
the pipeline wrote), those finished valid and invalid (the run directory's fidelity.json), those started but
not finished (an attempt under attempts/ and no run directory), and those remaining. Nothing is started.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

from contract.rundir import RunDirError, is_finished, read_fidelity
from orchestrate import matrix
from orchestrate.config import ConfigError, read_config

REPO = Path(__file__).resolve().parents[1]
COLUMNS = ("results", "planned", "valid", "invalid", "started", "remaining", "planned from")


def config_files(config_dir: Path) -> dict[str, Path]:
    """The config files of config_dir by the name they give their results folder."""
    names = {}
    for path in sorted(config_dir.glob("*.yaml")):
        try:
            name = (yaml.safe_load(path.read_text()) or {}).get("name")
        except (yaml.YAMLError, AttributeError):
            continue   # config/aqms.yaml and the like are no run configs
        if isinstance(name, str):
            names.setdefault(name, path)
    return names


def count(results: Path, planned: list[str], source: str) -> dict:
    """One results folder's runs: planned, valid, invalid, started (not finished), remaining."""
    valid = invalid = started = 0
    for rid in planned:
        run = results / "runs" / rid
        if is_finished(run):
            try:
                ok = read_fidelity(run).get("valid") is True
            except RunDirError:
                ok = False    # a fidelity record that cannot be read cannot show the run valid
            valid, invalid = valid + ok, invalid + (not ok)
        elif (results / "attempts" / rid).exists():
            started += 1
    shown = os.path.relpath(results) if Path(results).resolve().is_relative_to(Path.cwd()) else str(results)
    return {"results": shown, "planned": len(planned), "valid": valid, "invalid": invalid,
            "started": started, "remaining": len(planned) - valid - invalid, "planned from": source}


def status_of(results: Path, config: Path | None,
              without_config: str = "its specs/ (no config file in config/ has this name)") -> dict:
    """One results folder's row: planned from the config's matrix, or from the specs the pipeline wrote."""
    if config is not None:
        planned = [r.run_id for r in matrix.runs(read_config(config, warn=lambda m: None))]
        return count(results, planned, os.path.relpath(config))
    specs = results / "specs"
    planned = sorted(p.name for p in specs.iterdir()) if specs.is_dir() else []
    return count(results, planned, without_config)


def table(rows: list[dict]) -> str:
    cells = [list(COLUMNS)] + [[str(r[c]) for c in COLUMNS] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="./favorlab status", description="Each config's runs: planned, finished "
                                 "valid and invalid, started but not finished, and remaining; read from results/, "
                                 "nothing is started.")
    ap.add_argument("config", nargs="?", help="one config file (default: every folder in results/)")
    ap.add_argument("--results-root", default=str(REPO / "results"), help="where the results folders are")
    a = ap.parse_args(argv)
    root = Path(a.results_root)
    try:
        if a.config:
            cfg = read_config(a.config, warn=lambda m: None)
            rows = [status_of(root / cfg["name"], Path(a.config))]
        else:
            known = config_files(REPO / "config")
            folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
            if not folders:
                print(f"favorlab status: no results folder in {root}; ./favorlab quick (or run CONFIG.yaml) makes one")
                return 0
            rows = []
            for f in folders:
                try:
                    rows.append(status_of(f, known.get(f.name)))
                except ConfigError as e:
                    # one config that does not validate here (e.g. a P4 one without its toolchain) hides no other
                    rows.append(status_of(f, None, f"its specs/ ({os.path.relpath(known[f.name])} does not validate "
                                                   f"here: ./favorlab status {os.path.relpath(known[f.name])} says why)"))
    except ConfigError as e:
        print(f"favorlab status: {e}", file=sys.stderr)
        return 2
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
