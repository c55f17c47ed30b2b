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
import socket
import subprocess
import sys
from pathlib import Path

from favorlab_testing import unavailable
from orchestrate import remote, run_step
# the pipeline's flags as a user's call gets them (./favorlab, analyse and a plain Snakemake call pick this
# profile); the tests add only the command-line settings that lower the profile's for a shared CI machine
from orchestrate.bundle import SNAKEMAKE_PROFILE as PROFILE
from tests import first_attempt

REPO = Path(__file__).resolve().parents[1]
FORCED_INVALID = {"rtt_tolerance_ms": 0}    # fidelity no path meets: the idle RTT must be exact


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
    no path can meet, so the pipeline must redo it (tests/first_attempt.py, installed beside `cfg`)."""
    cmd = [sys.executable, "-m", "snakemake", "--profile", str(PROFILE), "--configfile", str(cfg), "--cores", "2",
           "--resources", "testbed=1"]
    env = first_attempt.install(cfg.parent / "first-attempt", forced_invalid, FORCED_INVALID)
    # unbuffered: the test watches the log for Snakemake's "Finished jobid" lines as they happen; a
    # buffered log shows them only when the pipeline ends
    env["PYTHONUNBUFFERED"] = "1"
    # SIGINT back to its default in the child: a test run started in the background (nohup ... &) inherits
    # it ignored, and Snakemake would then never see the interruption this test makes
    return subprocess.Popen(cmd, cwd=REPO, start_new_session=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kw)


def test_forced_invalid_reaches_only_that_runs_first_attempt(tmp_path):
    """What snakemake() installs acts where the pipeline's attempts are made: orchestrate.remote, started by
    run_step's own command line for an attempt, prepares the forced run's first attempt (<n>.partial/run.json,
    the spec it ships to the host) with the fidelity override, and that run's second attempt and another
    run's first as given. The testbed is a closed port on loopback, so each attempt ends there, unreachable."""
    env = first_attempt.install(tmp_path / "first-attempt", "r1", FORCED_INVALID)
    env["FAVORLAB_CACHE"] = str(tmp_path / "cache")     # the known_hosts file orchestrate.remote keeps
    schedule = tmp_path / "schedule.csv"
    schedule.write_text("")
    with socket.socket() as s:      # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    testbed = {"host": "127.0.0.1", "port": port, "user": "root"}
    given = {"rtt_tolerance_ms": 1.5, "rate_min_share": 0.9}
    shipped = {}
    for run_id, n in (("r1", 1), ("r1", 2), ("r2", 1)):
        staging = tmp_path / "attempts" / run_id
        staging.mkdir(parents=True, exist_ok=True)
        spec_file = staging / f"{n}.run.json"
        spec_file.write_text(json.dumps({"run_id": run_id, "fidelity": given}))
        p = subprocess.run(run_step.remote_command(testbed, spec_file, schedule, staging / str(n)), cwd=REPO,
                           env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == remote.EXIT_UNREACHABLE, p.stdout + p.stderr
        shipped[run_id, n] = json.loads((staging / f"{n}.partial" / "run.json").read_text())["fidelity"]
    assert shipped == {("r1", 1): {**given, **FORCED_INVALID}, ("r1", 2): given, ("r2", 1): given}
