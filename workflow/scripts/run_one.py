"""Execute one run of the matrix on the config's testbed and bring its run directory back, redoing it
while its fidelity report says invalid, up to the config's `attempts`.

Called by the Snakemake rule `run`. The run directory appears at --run-dir only when complete. Each
attempt is made in results/<config>/attempts/<run_id>/<n> (testbed.remote works in <n>.partial and
renames it after DONE arrives). The attempt that ends the job (the first valid one, or the last allowed)
becomes the run directory; the earlier ones move inside it, to attempts/<n>/, and attempts.json lists
every attempt with its validity and reasons. An interrupted job resumes: finished attempts are kept and
counted, so the same command interrupted and resumed makes the same number of attempts.

FAVORLAB_TEST_FIRST_ATTEMPT (tests only): JSON {"run_id": ..., "fidelity": {...}}; that run's first
attempt uses those fidelity thresholds (one it cannot meet makes it invalid on purpose).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import testbed_ctl  # noqa: E402

REPO = testbed_ctl.REPO
TEST_HOOK = "FAVORLAB_TEST_FIRST_ATTEMPT"


def fidelity_of(run_dir: Path) -> dict:
    try:
        fid = json.loads((run_dir / "fidelity.json").read_text())
    except (OSError, ValueError):
        return {"valid": False, "reasons": ["fidelity.json missing or unreadable"]}
    return {"valid": bool(fid.get("valid")), "reasons": fid.get("reasons", [])}


def finished_attempts(staging: Path) -> list[int]:
    """Attempts that came back whole (a directory named by its number; <n>.partial is not one)."""
    return sorted(int(p.name) for p in staging.iterdir() if p.is_dir() and p.name.isdigit()) \
        if staging.is_dir() else []


def run_attempts(run_once, spec: dict, staging: Path, run_dir: Path, attempts: int, log=print) -> int:
    """Run until an attempt is valid or `attempts` were made; 0 when the run directory is in place.

    run_once(spec, dest) makes a complete run directory at dest and returns 0, or fails (non-zero: the
    job fails, and Snakemake's own retry or the user's rerun starts again from the attempts kept)."""
    staging.mkdir(parents=True, exist_ok=True)
    done = finished_attempts(staging)
    while not done or (not fidelity_of(staging / str(done[-1]))["valid"] and done[-1] < attempts):
        n = done[-1] + 1 if done else 1
        if done:
            log(f"run: attempt {done[-1]} invalid ({'; '.join(fidelity_of(staging / str(done[-1]))['reasons'])}): "
                f"attempt {n} of {attempts}")
        started, t0 = datetime.now(timezone.utc), time.monotonic()
        rc = run_once(attempt_spec(spec, n), staging / str(n))
        if rc != 0:
            return rc
        # the controller's view of the attempt (connect, copy, run, copy back): what a plan's wall time is made of
        (staging / str(n) / "controller.json").write_text(json.dumps(
            {"started_utc": started.isoformat(timespec="seconds"), "wall_s": round(time.monotonic() - t0, 1),
             "favorlab_commit": favorlab_commit()}) + "\n")
        done.append(n)
    last = staging / str(done[-1])
    record = []
    for k in done:
        ctl = staging / str(k) / "controller.json"
        record.append({"attempt": k, **fidelity_of(staging / str(k)), **(json.loads(ctl.read_text()) if ctl.is_file() else {})})
        if k != done[-1]:
            (last / "attempts").mkdir(exist_ok=True)
            os.replace(staging / str(k), last / "attempts" / str(k))
    (last / "attempts.json").write_text(json.dumps(record, indent=1) + "\n")
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    os.replace(last, run_dir)
    shutil.rmtree(staging)
    v = record[-1]
    log(f"run: {run_dir.name} {'valid' if v['valid'] else 'still INVALID'} after {len(record)} attempt(s)")
    return 0


def favorlab_commit() -> str:
    """The commit the controller ran this attempt from, and whether its tracked files differed from it."""
    def git(*a):
        r = subprocess.run(["git", "-C", str(REPO), *a], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else ""
    head = git("rev-parse", "--short=12", "HEAD")
    if not head:
        return "unknown (not a git checkout)"
    return head + (" with uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def attempt_spec(spec: dict, n: int) -> dict:
    hook = os.environ.get(TEST_HOOK)
    if n == 1 and hook:
        h = json.loads(hook)
        if h.get("run_id") == spec["run_id"]:
            return dict(spec, fidelity=dict(spec.get("fidelity", {}), **h["fidelity"]))
    return spec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--testbed", required=True, help="the config's testbed section, as JSON")
    ap.add_argument("--spec", required=True, type=Path, help="run.json of this run")
    ap.add_argument("--schedule", required=True, type=Path, help="schedule.csv of this run")
    ap.add_argument("--run-dir", required=True, type=Path, help="final run directory")
    ap.add_argument("--attempts", type=int, default=3, help="runs made at most while the run comes back invalid")
    a = ap.parse_args()

    tb = json.loads(a.testbed)
    testbed_ctl.up(tb)
    t = testbed_ctl.target(tb)
    run_dir = a.run_dir.resolve()
    staging = run_dir.parent.parent / "attempts" / run_dir.name

    def run_once(spec: dict, dest: Path) -> int:
        spec_file = staging / f"{dest.name}.run.json"
        spec_file.write_text(json.dumps(spec, indent=2) + "\n")
        cmd = [sys.executable, "-m", "testbed.remote",
               "--ssh-host", t["host"], "--ssh-port", str(t["port"]), "--ssh-user", t["user"],
               "--spec", str(spec_file), "--schedule", str(a.schedule.resolve()), "--run-dir", str(dest)]
        if t.get("key"):
            cmd += ["--ssh-key", t["key"]]
        if tb["kind"] == "ssh" and t.get("ssh_args"):   # FABRIC's bastion; "=": the value starts with "-o"
            cmd += [f"--ssh-args={t['ssh_args']}"]
        print(f"run: {spec['run_id']} attempt {dest.name} on {t['host']}:{t['port']}", flush=True)
        rc = subprocess.run(cmd, cwd=REPO).returncode
        spec_file.unlink(missing_ok=True)
        return rc

    spec = json.loads(a.spec.read_text())
    sys.exit(run_attempts(run_once, spec, staging, run_dir, a.attempts, log=lambda m: print(m, flush=True)))


if __name__ == "__main__":
    main()
