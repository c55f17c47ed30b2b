"""Execute one run of the matrix on the config's testbed and bring its run directory back, redoing it
while its fidelity report says invalid, up to the config's `attempts`.

Called by the Snakemake rule `run`. The run directory appears at --run-dir only when complete. Each
attempt is made in results/<config>/attempts/<run_id>/<n> (orchestrate.remote works in <n>.partial and
renames it after DONE arrives). The attempt that ends the job (the first valid one, or the last allowed)
becomes the run directory; the earlier ones move inside it, to attempts/<n>/, and attempts.json lists
every attempt with its validity and reasons. An interrupted job resumes: finished attempts are kept and
counted, so the same command interrupted and resumed makes the same number of attempts.

The testbed is one member of the config's pool (orchestrate/pool.py), leased for the job: the first
free member not left out, waiting (said once) while all are leased. Under the lease the member is
brought up and provisioned with this checkout's code (orchestrate.testbeds.up: cheap when it already is), the
attempts run there, and each attempt's controller.json records the lease (member, host, port, acquired
and released). A job whose testbed died or stopped answering (orchestrate.remote exit 255, the VM's QEMU
gone, no answer to a fresh ssh) leaves that member out for the rest of the pipeline
(results/<config>/testbeds/excluded/<member-id>), says so in one line and exits 3; Snakemake's
`retries:` start it again and it leases another member, keeping the attempts that came back. A failed
attempt on a testbed that still answers fails the job without leaving the testbed out.

What every job on this run said goes to controller.log in the run directory, kept across Snakemake's
retries (which start the rule's own log afresh) and interruptions: the line that left a testbed out, in
particular, stays beside the run it concerns. A job interrupted (SIGINT, SIGTERM) still records when its
lease ended in the attempts it finished.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from contract import rundir
from orchestrate import atomic, pool, remote, testbeds
from orchestrate.provenance import favorlab_commit

REPO = testbeds.REPO
EXIT_TESTBED_LEFT_OUT = 3   # the job failed because its testbed died; the retry leases another
JOB_LOG = rundir.CONTROLLER_LOG  # in the staging directory while attempts are made, then in the run directory


def fidelity_of(run_dir: Path) -> dict:
    try:
        fid = rundir.read_fidelity(run_dir)
    except rundir.RunDirError:
        return {"valid": False, "reasons": [f"{rundir.FIDELITY} missing or unreadable"]}
    return {"valid": bool(fid.get("valid")), "reasons": fid.get("reasons", [])}


def finished_attempts(staging: Path) -> list[int]:
    """Attempts that came back whole (a directory named by its number; <n>.partial is not one)."""
    return sorted(int(p.name) for p in staging.iterdir() if p.is_dir() and p.name.isdigit()) \
        if staging.is_dir() else []


def pending(staging: Path, attempts: int) -> bool:
    """Another attempt is needed: none finished yet, or the last one invalid with attempts left."""
    done = finished_attempts(staging)
    return not done or (not fidelity_of(staging / str(done[-1]))["valid"] and done[-1] < attempts)


def make_attempts(run_once, spec: dict, staging: Path, attempts: int, log=print, extra=None,
                  made: list | None = None, before_s: float = 0.0) -> int:
    """Attempts until one is valid or `attempts` were made; 0 then, or the failing attempt's code.

    run_once(spec, dest) makes a complete run directory at dest and returns 0, or fails (non-zero: the
    job fails, and Snakemake's own retry or the user's rerun starts again from the attempts kept).
    extra(): more fields for each attempt's controller.json (the lease); made: the attempts made here;
    before_s: what the job spent before its first attempt (leasing the testbed, bringing it up), counted in
    that attempt's phases."""
    staging.mkdir(parents=True, exist_ok=True)
    done = finished_attempts(staging)
    made_here = 0
    while pending(staging, attempts):
        n = done[-1] + 1 if done else 1
        if done:
            log(f"run: attempt {done[-1]} invalid ({'; '.join(fidelity_of(staging / str(done[-1]))['reasons'])}): "
                f"attempt {n} of {attempts}")
        started, t0 = datetime.now(timezone.utc), time.monotonic()
        rc = run_once(spec, staging / str(n))
        if rc != 0:
            return rc
        # the controller's view of the attempt (connect, copy, run, copy back): what a plan's wall time is made of
        wall = time.monotonic() - t0
        ctl = staging / str(n) / rundir.CONTROLLER
        atomic.write_json(ctl, {"started_utc": started.isoformat(timespec="seconds"), "wall_s": round(wall, 1),
                                "favorlab_commit": favorlab_commit(), **(extra() if extra else {}),
                                **attempt_phases(staging / str(n), wall, before_s if not made_here else 0.0)})
        made_here += 1
        done.append(n)
        if made is not None:
            made.append(n)
    return 0


def attempt_phases(dest: Path, wall_s: float, before_s: float) -> dict:
    """controller.json's phases_s for one attempt: the job's lease and bring-up (first attempt only), the
    controller's phases (orchestrate.remote's, in dest's controller.json) with its runner phase replaced by
    the runner's own (the manifest's phases_s) and what is left of it, and the start and exit of
    orchestrate.remote; overhead_s is all of it but the traffic and its drain; runner_work, the guest's CPU
    seconds and forks (processes and threads started) in each of the runner's phases (the manifest's
    phases_work). An attempt whose files lack them (a runner of older code) records its wall time only."""
    remote_phases = (atomic.read_json(dest / rundir.CONTROLLER, default={}, what="the controller's phases left out")
                     or {}).get("phases_s")
    try:
        manifest = rundir.read_manifest(dest)
    except rundir.RunDirError:
        manifest = {}
    runner_phases, work = manifest.get("phases_s"), manifest.get("phases_work")
    if not isinstance(remote_phases, dict) or not isinstance(runner_phases, dict):
        return {}
    phases = {"lease and bring-up": round(before_s, 2)} if before_s else {}
    for name, s in remote_phases.items():
        if name != remote.RUNNER_PHASE:
            phases[name] = s
            continue
        phases.update(runner_phases)
        phases["runner start and exit"] = round(max(0.0, s - sum(runner_phases.values())), 2)
    phases["controller start and exit"] = round(max(0.0, wall_s - sum(remote_phases.values())), 2)
    traffic = phases.get(rundir.TRAFFIC_PHASE, 0.0)
    return {"phases_s": phases, "overhead_s": round(sum(phases.values()) - traffic, 1),
            **({"runner_work": work} if isinstance(work, dict) else {})}


def assemble(staging: Path, run_dir: Path, log=print) -> int:
    """The last attempt becomes the run directory, the earlier ones go inside it, attempts.json lists all."""
    done = finished_attempts(staging)
    last = staging / str(done[-1])
    record = []
    for k in done:
        ctl = staging / str(k) / rundir.CONTROLLER
        # a controller.json a crash left empty costs the attempt's timing, not the run
        record.append({"attempt": k, **fidelity_of(staging / str(k)),
                       **atomic.read_json(ctl, default={}, what="the attempt's controller timing left out")})
        if k != done[-1]:
            (last / rundir.ATTEMPTS_DIR).mkdir(exist_ok=True)
            os.replace(staging / str(k), last / rundir.ATTEMPTS_DIR / str(k))
    atomic.write_json(last / rundir.ATTEMPTS, record, indent=1)
    v = record[-1]
    log(f"run: {run_dir.name} {'valid' if v['valid'] else 'still INVALID'} after {len(record)} attempt(s)")
    if (staging / JOB_LOG).is_file():
        os.replace(staging / JOB_LOG, last / JOB_LOG)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    os.replace(last, run_dir)
    shutil.rmtree(staging)
    return 0


def run_attempts(run_once, spec: dict, staging: Path, run_dir: Path, attempts: int, log=print) -> int:
    """make_attempts, then assemble: 0 when the run directory is in place."""
    rc = make_attempts(run_once, spec, staging, attempts, log)
    return rc if rc != 0 else assemble(staging, run_dir, log)


def remote_command(t: dict, spec_file: Path, schedule: Path, dest: Path) -> list[str]:
    """orchestrate.remote for one attempt, connecting as Ansible does (the inventory's user, key and ssh
    args) and checking the host key against the member's known_hosts file."""
    cmd = [sys.executable, "-m", "orchestrate.remote",
           "--ssh-host", t["host"], "--ssh-port", str(t["port"]), "--ssh-user", t["user"],
           "--spec", str(spec_file), "--schedule", str(schedule), "--run-dir", str(dest)]
    if t.get("key"):
        cmd += ["--ssh-key", t["key"]]
    if t.get("known_hosts"):
        cmd += ["--known-hosts", t["known_hosts"], "--host-key-checking", t.get("host_key_checking") or "yes"]
    if t.get("ssh_args"):   # FABRIC's bastion; "=": the value starts with "-o"
        cmd += [f"--ssh-args={t['ssh_args']}"]
    if t.get("reuse_topology"):
        cmd.append("--reuse-topology")
    return cmd


class JobLog:
    """print(), and the same line with its UTC time appended to <staging>/controller.log. Snakemake
    removes a rule's log before each try of the job, so what a failed try said (which testbed died, and
    why) would be gone by the time the run is done; this file lives in the staging directory, which
    every try of the job reuses, and moves into the run directory with the last attempt."""

    def __init__(self, staging: Path):
        staging.mkdir(parents=True, exist_ok=True)
        self.path = staging / JOB_LOG

    def __call__(self, msg: str) -> None:
        print(msg, flush=True)
        with open(self.path, "a") as f:
            f.write(f"{datetime.now(timezone.utc).isoformat(timespec='seconds')} {msg}\n")


def _terminate(signum, frame):
    # SIGTERM (Snakemake stopping its jobs, a scheduler) unwinds like Ctrl-C, so the lease's end is written
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m orchestrate.run_step", description=__doc__.splitlines()[0])
    ap.add_argument("--testbed", required=True,
                    help="the pool's members (orchestrate.pool.expand_pool's), or one testbed, as JSON")
    ap.add_argument("--spec", required=True, type=Path, help="run.json of this run")
    ap.add_argument("--schedule", required=True, type=Path, help="schedule.csv of this run")
    ap.add_argument("--run-dir", required=True, type=Path, help="final run directory")
    ap.add_argument("--attempts", type=int, default=3, help="runs made at most while the run comes back invalid")
    ap.add_argument("--excluded-dir", type=Path,
                    help="members this pipeline left out (default: results/<config>/testbeds/excluded)")
    a = ap.parse_args(argv)

    job_t0 = time.monotonic()
    members = testbeds.members_of(json.loads(a.testbed))
    run_dir = a.run_dir.resolve()
    staging = run_dir.parent.parent / "attempts" / run_dir.name
    excluded_dir = a.excluded_dir or run_dir.parent.parent / "testbeds" / "excluded"
    spec = json.loads(a.spec.read_text())
    log = JobLog(staging)
    log(f"run: {spec['run_id']}: job started (pid {os.getpid()}), {len(finished_attempts(staging))} "
        f"attempt(s) already back, at most {a.attempts}")
    if not pending(staging, a.attempts):     # resumed after its last attempt came back: no testbed needed
        return assemble(staging, run_dir, log)

    try:
        lease = pool.lease(members, excluded_dir, what=f"{spec['run_id']} in {REPO}", log=log)
    except pool.NoTestbedLeft as e:
        log(f"run: {spec['run_id']}: {e}")
        return 1
    made: list[int] = []
    try:
        rc = attempts_under(lease, a, spec, staging, excluded_dir, made, log, job_t0)
    except KeyboardInterrupt:
        log(f"run: {spec['run_id']} interrupted on {lease.id}; {len(made)} attempt(s) made under this lease kept")
        raise
    finally:
        lease.release()
        for n in made:      # the lease's end, in the controller.json of each attempt made under it
            ctl = staging / str(n) / rundir.CONTROLLER
            c = atomic.read_json(ctl, what="the lease's end not recorded in it")
            if c is not None and isinstance(c.get("lease"), dict):
                c["lease"]["released_utc"] = lease.released_utc
                atomic.write_json(ctl, c)
    if rc != 0:
        return rc
    return assemble(staging, run_dir, log)


def attempts_under(lease: pool.Lease, a, spec: dict, staging: Path, excluded_dir: Path, made: list[int],
                   log, job_t0: float) -> int:
    """Bring the leased member up, make the attempts there; 0, or why the job fails (the member left out
    when it is dead)."""
    member = lease.member
    log(f"run: {spec['run_id']} leased testbed {lease.id}")
    try:
        # under the lease: this member runs this checkout's code (provisioned again if another
        # pipeline with other code used it last); cheap when its marker matches
        t = testbeds.up(member)
    except (SystemExit, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        rc, t, failure = 1, None, f"could not be brought up ({e})"
    if t is not None:
        def run_once(spec: dict, dest: Path) -> int:
            spec_file = staging / f"{dest.name}.run.json"
            atomic.write_json(spec_file, spec, indent=2)
            log(f"run: {spec['run_id']} attempt {dest.name} on {lease.id} ({t['host']}:{t['port']})")
            # the attempt ends with this job however the job ends (killed included): orchestrate.remote and
            # the ssh under it go, and the runner on the host sees its controller gone and stops
            rc = subprocess.run(remote_command(dict(t, reuse_topology=member.get("reuse_topology")), spec_file,
                                               a.schedule.resolve(), dest), cwd=REPO,
                                preexec_fn=remote.die_with_parent()).returncode
            spec_file.unlink(missing_ok=True)
            return rc
        rc = make_attempts(run_once, spec, staging, a.attempts, log=log,
                           extra=lambda: {"lease": lease.record(t)}, made=made,
                           before_s=time.monotonic() - job_t0)
        failure = f"orchestrate.remote exited with {rc}"
    if rc != 0:
        # the testbed's fault (dead, hung, unreachable) or the run's own? An attempt that came back
        # complete, valid or not, never gets here.
        why = testbeds.dead_reason(member)
        if not why and rc == remote.EXIT_UNREACHABLE:
            why = "stopped answering SSH during the attempt (orchestrate.remote exit 255)"
        if why:
            pool.exclude(excluded_dir, lease.id, f"{why}; while running {spec['run_id']}")
            log(f"testbed {lease.id} left out for the rest of this pipeline: {why}")
            rc = EXIT_TESTBED_LEFT_OUT
        else:
            log(f"run: {spec['run_id']} failed on {lease.id}, which still answers: {failure}")
    return rc


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminate)
    sys.exit(main())
