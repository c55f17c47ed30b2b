# One schedule per (scenario, bottleneck rate, sizes, load, replication), made once on the controller and
# replayed unchanged under every AQM, buffer, initial window and congestion control of the comparison, so
# flows pair up across them (Delta_i, paper F10; the buffer sweep, F9).
import shlex

SCHEDULES = {r.schedule_id: r for r in RUNS.values()}


def _schedule_args(wc):
    return shlex.join(runspec.schedule_args(CFG, SCHEDULES[wc.sched]))


rule schedule:
    output:
        f"{RESULTS}/schedules/{{sched}}.csv",
    params:
        args=_schedule_args,     # already shell-quoted (shlex.join)
        tmp=lambda wc, output: f"{output[0]}.tmp",
    log:
        f"{RESULTS}/logs/schedule-{{sched}}.log",
    shell:
        "{PY:q} -m orchestrate.schedule {params.args} --out {params.tmp:q} > {log:q} 2>&1 && mv {params.tmp:q} {output:q}"
