# Runs execute on the config's pool of testbeds (testbed: count / hosts / group; orchestrate/pool.py):
# up to one run per testbed at once (resource `testbed`: the Snakefile gives the pool's size), each job
# leasing a free member for as long as it runs. Each brings back a complete run directory or nothing:
# the runner works in <run_id>.partial and renames it only when DONE is written, so an interrupted
# pipeline resumes without redoing finished runs or counting half-finished ones. A run whose fidelity
# report says invalid is made again, up to the config's `attempts`, every attempt kept
# (orchestrate/run_step.py). A job whose testbed died fails, that testbed is left out for the rest
# of the pipeline, and `retries:` start the job again on another member.
import json
import os
import shutil
import sys
from datetime import datetime, timezone


POOL = CFG["pool"]
EXCLUDED = f"{RESULTS}/testbeds/excluded"
# runs at once: the pool's size, unless Snakemake was given fewer testbeds (--resources testbed=N)
AT_ONCE = max(1, min(POOL["size"], workflow.global_resources.get("testbed") or POOL["size"]))

# Local guests' vCPUs are this machine's cores: the pool's runs together hold all of them (cores / pool
# size each), so no extraction or figure job runs beside them and takes CPU from a guest (what the
# runner's CPU and lateness checks would then catch as the testbed's fault). A real host's run leaves
# the controller's cores free: it only waits on ssh, so it counts no core and an ssh pool's runs are
# bounded by the testbed resource alone.
RUN_THREADS = max(1, workflow.cores // AT_ONCE) if CFG["testbed"]["kind"] == "local-vm" else 0

if workflow.is_main_process:
    print(f"favorlab: testbed pool of {POOL['size']} ({', '.join(m['id'] for m in POOL['members'])}): up to "
          f"{AT_ONCE} runs at once, each run job retried {POOL['retries']} time(s) after a failure",
          file=sys.stderr, flush=True)


def _spec(wc):
    return runspec.run_spec(CFG, RUNS[wc.run_id])


rule run:
    input:
        schedule=lambda wc: schedule_of(wc.run_id),
    output:
        directory(f"{RESULTS}/runs/{{run_id}}"),
    params:
        # What selects a rerun (--rerun-triggers params): the run spec, which is what the run does, and the
        # kind of testbed (orchestrate.runspec.testbed_param); which guest or host, whether it stays up,
        # the pool and the P4 toolchain flag are not experiment parameters and are left out
        spec=_spec,
        testbed=runspec.testbed_param(CFG),
    threads: RUN_THREADS
    resources:
        testbed=1,
    retries: POOL["retries"]
    log:
        f"{RESULTS}/logs/run-{{run_id}}.log",
    run:
        spec_dir = Path(f"{RESULTS}/specs/{wildcards.run_id}")
        spec_dir.mkdir(parents=True, exist_ok=True)
        (spec_dir / "run.json").write_text(json.dumps(params.spec, indent=2) + "\n")
        shell(
            "{PY:q} -m orchestrate.run_step --testbed {pool} --spec {spec:q} --schedule {input.schedule:q}"
            " --run-dir {output:q} --attempts {attempts:q} --excluded-dir {EXCLUDED:q}"
            " 2>&1 | tee -a {log:q}; exit ${{PIPESTATUS[0]}}",
            pool=runspec.shell_json(POOL["members"]), spec=str(spec_dir / "run.json"), attempts=CFG["attempts"],
        )


# A finished run that Snakemake is about to redo (its spec or its schedule changed) is not deleted: it
# moves to results/<config>/superseded/<run_id>-<UTC stamp>/ with its attempts and pcaps, and the
# pipeline says which run and why. Snakemake removes a job's existing output just before the job runs,
# after the onstart hook (tests/test_reruns.py checks this with a real execution), so the move happens
# here. `./favorlab ... --force` (FAVORLAB_FORCE=1) lets Snakemake delete them as it would by itself.
FORCE = os.environ.get("FAVORLAB_FORCE") == "1"


def _spec_change(old_dir, run_id):
    """The top-level run.json fields whose value differs between the finished run and the new spec."""
    try:
        old = json.loads((Path(old_dir) / "run.json").read_text())
    except (OSError, ValueError):
        return []
    new = runspec.run_spec(CFG, RUNS[run_id])
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))


def _supersede(jobs):
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for job in jobs:
        out = Path(job.output[0])
        if not out.is_dir():
            continue
        run_id = out.name
        fields = _spec_change(out, run_id)
        reason = workflow.dag.reason(job)
        whys = []
        if fields:
            whys.append(f"its spec changed ({', '.join(fields)})")
        elif reason.params_changed:
            whys.append("its spec is unchanged, the rule's other parameters (the testbed's kind) differ from "
                        "what Snakemake recorded")
        if reason.updated_input or reason.updated_input_run:     # the schedule changed, or is made again
            whys.append("its schedule changed")
        what = "; ".join(whys or reason.get_names()) or "Snakemake redoes it"
        if FORCE:
            print(f"favorlab: redoing the finished run {run_id}: {what}; --force: its directory is deleted",
                  file=sys.stderr, flush=True)
            continue
        dest = Path(RESULTS, "superseded", f"{run_id}-{stamp}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(out, dest)
        print(f"favorlab: redoing the finished run {run_id}: {what}; the old run is kept in {dest}/ "
              f"(--force deletes it instead)", file=sys.stderr, flush=True)


# Before the first job, once per pipeline (onstart runs only when there is something to do, and never
# in a dry run): every member gets a new chance (the members left out by the last pipeline are listed
# again), and as many members as there are runs to make, up to the runs at once, are booted and
# provisioned at once by `orchestrate.testbeds up-all` (one thread per member, each under its lease), instead of
# each run job finding its member down or unprovisioned. A hook and not a rule: a rule's output would
# have to be an input of every run, and a new input makes Snakemake redo the finished runs; a hook also
# sees the plan, so a pipeline whose runs are all done boots no guest.
onstart:
    _supersede([j for j in workflow.dag.needrun_jobs() if j.rule.name == "run"])
    shutil.rmtree(EXCLUDED, ignore_errors=True)
    _todo = sum(1 for j in workflow.dag.needrun_jobs() if j.rule.name == "run")
    if _todo:
        shell("{PY:q} -m orchestrate.testbeds up-all --pool {pool} --limit {n:q} --excluded-dir {EXCLUDED:q}"
              " --log-dir {logs:q} || true",
              pool=runspec.shell_json(POOL["members"]), n=min(_todo, AT_ONCE), logs=f"{RESULTS}/logs/testbeds")


onsuccess:
    shell("{PY:q} -m orchestrate.testbeds down-all --pool {pool} || true", pool=runspec.shell_json(POOL["members"]))


onerror:
    shell("{PY:q} -m orchestrate.testbeds down-all --pool {pool} || true", pool=runspec.shell_json(POOL["members"]))
