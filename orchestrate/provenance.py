"""Which favorlab code made a result: recorded by the controller in each run's attempts.json and shown in
the report, so a reader can tell runs made from different commits apart; and which software made the
analysis (R, the R packages it loads, Snakemake), shown in the report beside it."""
from __future__ import annotations

import os
import re
import subprocess
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def container_image() -> str:
    """The image this analysis ran in (containers/run passes "<tag> <digest>"), or "none: on the host"."""
    return os.environ.get("FAVORLAB_IMAGE") or "none: on the host"


def favorlab_commit(repo: str | Path = REPO) -> str:
    """The checkout's commit (12 hex digits), with " with uncommitted changes" when its tracked files
    differ from it; "unknown (not a git checkout)" for a copy without .git."""
    def git(*a):
        r = subprocess.run(["git", "-C", str(repo), *a], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else ""
    head = git("rev-parse", "--short=12", "HEAD")
    if not head:
        # an image's copy of the repository has no .git: containers/build records the commit it copied
        built = os.environ.get("FAVORLAB_COMMIT")
        return f"{built} (copied into the image)" if built else "unknown (not a git checkout)"
    return head + (" with uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def favorlab_version(repo: str | Path = REPO) -> str:
    """./favorlab --version: the commit (with " with uncommitted changes" when the tree differs from it),
    and git describe's name for it when the repository has tags."""
    r = subprocess.run(["git", "-C", str(repo), "describe", "--tags"], capture_output=True, text=True)
    described = f" ({r.stdout.strip()})" if r.returncode == 0 and r.stdout.strip() else ""
    return f"favorlab {favorlab_commit(repo)}{described}"


def r_packages(r_dir: str | Path = REPO / "analysis" / "R") -> list[str]:
    """The R packages the analysis's scripts load (library(x), requireNamespace("x"), x::), read from the
    scripts themselves so that a package added there is reported without a list to keep; tests/ left out."""
    found = set()
    for script in sorted(Path(r_dir).glob("*.R")):
        text = script.read_text()
        found.update(re.findall(r"""\b(?:library|require|requireNamespace)\(["']?([A-Za-z][A-Za-z0-9.]*)""", text))
        found.update(re.findall(r"\b([A-Za-z][A-Za-z0-9.]*)::", text))
    return sorted(found, key=str.lower)


def r_versions(packages: list[str] | None = None) -> dict[str, str]:
    """{"R": version, package: version or "not installed"} from the Rscript on PATH, the one the analysis
    runs; {"R": "not found (...)"} without it."""
    packages = r_packages() if packages is None else packages
    code = ('cat("R", as.character(getRversion()), "\\n"); for (p in commandArgs(TRUE)) cat(p, '
            'tryCatch(as.character(packageVersion(p)), error = function(e) "not installed"), "\\n")')
    try:
        r = subprocess.run(["Rscript", "-e", code, *packages], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"R": f"not found ({e})"}
    if r.returncode != 0:
        return {"R": f"not usable (Rscript: {r.stderr.strip()[:200]})"}
    return {k: v.strip() for k, v in (line.split(None, 1) for line in r.stdout.splitlines() if line.strip())}


def snakemake_version() -> str:
    """The Snakemake of this Python (the pipeline's .venv)."""
    try:
        return metadata.version("snakemake")
    except metadata.PackageNotFoundError:
        return "not installed"
