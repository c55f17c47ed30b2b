# Runs execute one at a time per testbed (resource `testbed`); each brings back a complete run
# directory or nothing: the runner works in <run_id>.partial and renames it only when DONE is written,
# so an interrupted pipeline resumes without redoing finished runs or counting half-finished ones. A run
# whose fidelity report says invalid is made again, up to the config's `attempts`, every attempt kept
# (workflow/scripts/run_one.py).
import json


# A local guest's vCPUs are this machine's cores: a run there holds them all, so no extraction or figure
# job runs beside it and takes CPU from the guest (what the runner's CPU and lateness checks would then
# catch as the testbed's fault). A real host's run leaves the controller's cores free.
RUN_THREADS = workflow.cores if CFG["testbed"]["kind"] == "local-vm" else 1


def _spec(wc):
    return favorconf.run_spec(CFG, RUNS[wc.run_id])


rule run:
    input:
        schedule=lambda wc: schedule_of(wc.run_id),
    output:
        directory(f"{RESULTS}/runs/{{run_id}}"),
    params:
        spec=_spec,
        testbed=CFG["testbed"],
    threads: RUN_THREADS
    resources:
        testbed=1,
    log:
        f"{RESULTS}/logs/run-{{run_id}}.log",
    run:
        spec_dir = Path(f"{RESULTS}/specs/{wildcards.run_id}")
        spec_dir.mkdir(parents=True, exist_ok=True)
        (spec_dir / "run.json").write_text(json.dumps(params.spec, indent=2) + "\n")
        shell(
            "{PY} workflow/scripts/run_one.py --testbed {tb} --spec {spec} --schedule {input.schedule}"
            " --run-dir {output} --attempts {CFG[attempts]} 2>&1 | tee -a {log}; exit ${{PIPESTATUS[0]}}",
            tb=favorconf.shell_json(params.testbed), spec=spec_dir / "run.json",
        )


onsuccess:
    shell("{PY} workflow/scripts/testbed_ctl.py down --testbed {tb} || true", tb=favorconf.shell_json(CFG["testbed"]))


onerror:
    shell("{PY} workflow/scripts/testbed_ctl.py down --testbed {tb} || true", tb=favorconf.shell_json(CFG["testbed"]))
