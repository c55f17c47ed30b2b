# One schedule per (load, replication), made once on the controller and replayed unchanged under every
# AQM and initial window of the comparison, so flows pair up across AQMs (Delta_i, paper F10).

def _schedule_params(wc):
    run = next(r for r in RUNS.values() if r.schedule_id == wc.sched)
    return {"load": run.load, "seed": experiment.schedule_seed(CFG, run)}


rule schedule:
    output:
        f"{RESULTS}/schedules/{{sched}}.csv",
    params:
        p=_schedule_params,
        sizes=experiment.sizes_arg(CFG["sizes"]),
    log:
        f"{RESULTS}/logs/schedule-{{sched}}.log",
    shell:
        "{PY} -m workloads.schedule --load {params.p[load]} --capacity-mbps {BNECK}"
        " --duration {CFG[duration_s]} --seed {params.p[seed]} --sizes {params.sizes}"
        " --reverse-load {CFG[reverse_load]} --topology {CFG[scenario]} --out {output}.tmp > {log} 2>&1"
        " && mv {output}.tmp {output}"
