import re
import sys
from pathlib import Path

from orchestrate import matrix, runspec
from orchestrate.config import ConfigError, validate as validate_config
from contract import rundir
from contract.rundir import RUN_ID_PATTERN, run_id_fields

# `./favorlab analyse` (orchestrate/bundle.py) runs the analysis rules alone on a results directory made
# elsewhere (an unpacked bundle): `--config analyse_results=DIR` and no config file. Its finished run
# directories are the inputs; the Snakefile then leaves out the schedule and testbed rules, so nothing
# can start an experiment.
ANALYSE_RESULTS = config.get("analyse_results")
if ANALYSE_RESULTS:
    RESULTS = str(ANALYSE_RESULTS)
    # orchestrate/bundle.py has refused any other name before; a directory that is not a run id is no run
    RUNS = {d.name: None for d in sorted(Path(RESULTS, "runs").iterdir())
            if re.fullmatch(RUN_ID_PATTERN, d.name) and not d.is_symlink() and (d / "DONE").is_file()}
else:
    _sources = [str(p) for p in getattr(workflow, "overwrite_configfiles", [])] or ["config"]
    try:
        # warnings (a pool above the machine's cores) once, from the main process, not from every job's
        CFG = validate_config(dict(config), ", ".join(_sources), origin=_sources[0] if len(_sources) == 1 else None,
                              warn=None if workflow.is_main_process else (lambda _msg: None))
    except ConfigError as _e:
        # Stop before any experiment starts; the message names the key and the fix.
        sys.stderr.write(f"favorlab: invalid configuration\n{_e}\n")
        sys.exit(2)

    NAME = CFG["name"]
    RESULTS = f"results/{NAME}"
    RUNS = {r.run_id: r for r in matrix.runs(CFG)}
PY = sys.executable
REPORT = f"{RESULTS}/report.html"

# The run list (rule analysis_runs makes it). One the config's runs no longer match is rewritten here, as
# the DAG is planned: Snakemake takes a missing input of an existing output for a deleted intermediate, so
# results copied without its metadata would keep their report when the config gains runs; a run list newer
# than the figures, verdict and report marks them stale by mtime alone, and their inputs then bring in the
# new runs. Only an existing list is touched: planning a fresh config (a dry run) writes nothing.
RUN_LIST = f"{RESULTS}/{rundir.RUN_LIST}"
if workflow.is_main_process and Path(RUN_LIST).is_file():
    rundir.write_run_list(RUN_LIST, sorted(RUNS))
# An A/A replay: a twin (config/aqms.yaml twin_of) ran beside its original; rule aa_replay judges it. The AQM
# is read from the run id, as a bundle has no config.
_RUN_AQMS = {run_id_fields(rid)["aqm"] for rid in RUNS}
AA_REPLAY = any(runspec.read_aqms().get(a, {}).get("twin_of") in _RUN_AQMS for a in _RUN_AQMS)

# Every name the rules put on a command line goes through Snakemake's quoting ({input:q}, {output:q}, ...):
# RESULTS is wherever `./favorlab analyse` unpacked a bundle, which may hold spaces or shell metacharacters.
wildcard_constraints:
    run_id=RUN_ID_PATTERN,
    sched="[A-Za-z0-9.-]+_load[0-9.]+_rep[0-9]+",


def schedule_of(run_id):
    return f"{RESULTS}/schedules/{RUNS[run_id].schedule_id}.csv"
