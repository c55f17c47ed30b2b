"""Which favorlab code made a result: recorded by the controller in each run's attempts.json and shown in
the report, so a reader can tell runs made from different commits apart."""
from __future__ import annotations

import os
import subprocess
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
