"""What the tests that drive the whole pipeline on the local QEMU guest share: whether the guest can run
here, and Snakemake started as `./favorlab` starts it, with one run's first attempt made invalid on purpose.

The pipeline itself, interrupted and resumed, with a forced-invalid attempt redone, is tested on CI's cut
of config/figures.yaml (tests/test_figures_cut.py): one pipeline run covers both, as each costs the
guest several minutes.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from favorlab_testing import unavailable

REPO = Path(__file__).resolve().parents[1]


def guest_possible() -> str | None:
    """Why the guest cannot run here, or None."""
    for tool in ("qemu-system-x86_64", "debootstrap", "Rscript"):
        if not shutil.which(tool):
            return f"{tool} is not installed (./favorlab test installs it)"
    if os.geteuid() != 0:
        return "building the guest image needs root (debootstrap)"
    return None


def require_guest():
    why = guest_possible()
    if why:
        unavailable(f"the QEMU guest cannot run on this machine: {why}; runs wherever qemu and root are")


def snakemake(cfg: Path, forced_invalid: str, **kw) -> subprocess.Popen:
    """Snakemake on `cfg`; the run `forced_invalid`'s first attempt gets an idle-RTT tolerance of 0, which
    no path can meet, so the pipeline must redo it."""
    cmd = [sys.executable, "-m", "snakemake", "--configfile", str(cfg), "--cores", "2",
           "--resources", "testbed=1", "--rerun-incomplete", "--show-failed-logs"]
    # unbuffered: the test watches the log for Snakemake's "Finished jobid" lines as they happen (with
    # the log a file, Python buffered them, the test missed the first run and saw the whole pipeline end)
    env = {**os.environ, "PYTHONUNBUFFERED": "1",
           "FAVORLAB_TEST_FIRST_ATTEMPT": json.dumps({"run_id": forced_invalid, "fidelity": {"rtt_tolerance_ms": 0}})}
    # SIGINT back to its default in the child: a test run started in the background (nohup ... &) inherits
    # it ignored, and Snakemake would then never see the interruption this test makes
    return subprocess.Popen(cmd, cwd=REPO, start_new_session=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kw)
