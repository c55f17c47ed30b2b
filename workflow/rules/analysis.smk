# Analysis reads only run directories (docs/contracts.md): extraction per run, then the R metrics and
# figures over the runs of the config (RUN_LIST, rule analysis_runs, names them), then the verdict table
# and the report. Every name on a command line is quoted ({...:q}): RESULTS may be a directory anywhere.

rule extract:
    input:
        f"{RESULTS}/runs/{{run_id}}",
    output:
        flows=f"{RESULTS}/tables/{{run_id}}/flows.csv",
        run=f"{RESULTS}/tables/{{run_id}}/run.csv",
        persistent=f"{RESULTS}/tables/{{run_id}}/persistent.csv",
        packets=f"{RESULTS}/tables/{{run_id}}/packets.csv.gz",
    params:
        out=f"{RESULTS}/tables/{{run_id}}",
    log:
        f"{RESULTS}/logs/extract-{{run_id}}.log",
    shell:
        "{PY:q} -m analysis.extract --run {input:q} --out {params.out:q} > {log:q} 2>&1"


# The runs the R scripts and the report read, one id a line: exactly the config's (or the analysed
# bundle's) runs, so tables left in RESULTS/tables by runs the config no longer has are not pooled in.
rule analysis_runs:
    input:
        expand(f"{RESULTS}/tables/{{run_id}}/flows.csv", run_id=sorted(RUNS)),
    output:
        RUN_LIST,
    params:
        ids=sorted(RUNS),
    run:
        rundir.write_run_list(output[0], params.ids)


# The figures, and beside them the AQM ranking (figures/ranking.csv, R/ranking_lib.R): inside the rule's
# declared directory, so the report rule that reads it depends on it.
rule figures:
    input:
        tables=expand(f"{RESULTS}/tables/{{run_id}}/flows.csv", run_id=sorted(RUNS)),
        runs=RUN_LIST,
    output:
        directory(f"{RESULTS}/figures"),
    params:
        tables=f"{RESULTS}/tables",
        ranking=f"{RESULTS}/figures/ranking.csv",
    log:
        f"{RESULTS}/logs/figures.log",
    shell:
        "Rscript analysis/R/figures.R --tables {params.tables:q} --runs {input.runs:q} --out {output:q} > {log:q} 2>&1"
        " && Rscript analysis/R/ranking.R --tables {params.tables:q} --runs {input.runs:q}"
        " --out {params.ranking:q} >> {log:q} 2>&1"


rule verdict:
    input:
        tables=expand(f"{RESULTS}/tables/{{run_id}}/flows.csv", run_id=sorted(RUNS)),
        runs=RUN_LIST,
    output:
        f"{RESULTS}/verdict.csv",
    params:
        tables=f"{RESULTS}/tables",
    log:
        f"{RESULTS}/logs/verdict.log",
    shell:
        "Rscript analysis/R/verdict.R --tables {params.tables:q} --runs {input.runs:q} --out {output:q} > {log:q} 2>&1"


# The A/A replay's false-decision rates (analysis/aa.py): the verdict once per twin, in its role.
rule aa_replay:
    input:
        tables=expand(f"{RESULTS}/tables/{{run_id}}/flows.csv", run_id=sorted(RUNS)),
        runs=RUN_LIST,
    output:
        directory(f"{RESULTS}/aa"),
    params:
        results=RESULTS,
    log:
        f"{RESULTS}/logs/aa.log",
    shell:
        "{PY:q} -m analysis.aa --results {params.results:q} --runs {input.runs:q} --out {output:q} > {log:q} 2>&1"


rule report:
    input:
        figures=f"{RESULTS}/figures",
        verdict=f"{RESULTS}/verdict.csv",
        aa=[f"{RESULTS}/aa"] if AA_REPLAY else [],
        runs=expand(f"{RESULTS}/runs/{{run_id}}", run_id=sorted(RUNS)),
        run_list=RUN_LIST,
    output:
        report=REPORT,
    params:
        results=RESULTS,
    log:
        f"{RESULTS}/logs/report.log",
    shell:
        "{PY:q} -m analysis.report --results {params.results:q} --runs {input.run_list:q} --out {output.report:q}"
        " > {log:q} 2>&1"
