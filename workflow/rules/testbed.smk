# Runs execute on the config's pool of testbeds (testbed: count / hosts / group; orchestrate/pool.py):
# up to one run per testbed at once (resource `testbed`: ./favorlab gives the pool's size), each job
# leasing a free member for as long as it runs. Each brings back a complete run directory or nothing:
# the runner works in <run_id>.partial and renames it only when DONE is written, so an interrupted
# pipeline resumes without redoing finished runs or counting half-finished ones. A run whose fidelity
# report says invalid is made again, up to the config's `attempts`, every attempt kept
# (orchestrate/run_step.py). A job whose testbed died fails, that testbed is left out for the rest
# of the pipeline, and `retries:` start the job again on another member.
import json
import shutil
import sys


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
    return experiment.run_spec(CFG, RUNS[wc.run_id])


rule run:
    input:
        schedule=lambda wc: schedule_of(wc.run_id),
    output:
        directory(f"{RESULTS}/runs/{{run_id}}"),
    params:
        spec=_spec,
        # as before pools (orchestrate.experiment.testbed_param): the pool's size or hosts are not part of an
        # experiment, and a changed parameter would make Snakemake redo every finished run
        testbed=experiment.testbed_param(CFG),
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
            "{PY} -m orchestrate.run_step --testbed {pool} --spec {spec} --schedule {input.schedule}"
            " --run-dir {output} --attempts {CFG[attempts]} --excluded-dir {EXCLUDED}"
            " 2>&1 | tee -a {log}; exit ${{PIPESTATUS[0]}}",
            pool=experiment.shell_json(POOL["members"]), spec=spec_dir / "run.json",
        )


# Before the first job, once per pipeline (onstart runs only when there is something to do, and never
# in a dry run): every member gets a new chance (the members left out by the last pipeline are listed
# again), and as many members as there are runs to make, up to the runs at once, are booted and
# provisioned at once by `orchestrate.testbeds up-all` (one thread per member, each under its lease), instead of
# each run job finding its member down or unprovisioned. A hook and not a rule: a rule's output would
# have to be an input of every run, and a new input makes Snakemake redo the finished runs; a hook also
# sees the plan, so a pipeline whose runs are all done boots no guest.
onstart:
    shutil.rmtree(EXCLUDED, ignore_errors=True)
    _todo = sum(1 for j in workflow.dag.needrun_jobs() if j.rule.name == "run")
    if _todo:
        shell("{PY} -m orchestrate.testbeds up-all --pool {pool} --limit {n} --excluded-dir {EXCLUDED}"
              " --log-dir {RESULTS}/logs/testbeds || true",
              pool=experiment.shell_json(POOL["members"]), n=min(_todo, AT_ONCE))


onsuccess:
    shell("{PY} -m orchestrate.testbeds down-all --pool {pool} || true", pool=experiment.shell_json(POOL["members"]))


onerror:
    shell("{PY} -m orchestrate.testbeds down-all --pool {pool} || true", pool=experiment.shell_json(POOL["members"]))
