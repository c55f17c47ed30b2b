# Analysis reads only run directories (docs/contracts.md): extraction per run, then the R metrics and
# figures over all runs of the config, then the verdict table and the report.

rule extract:
    input:
        f"{RESULTS}/runs/{{run_id}}",
    output:
        flows=f"{RESULTS}/tables/{{run_id}}/flows.csv",
        run=f"{RESULTS}/tables/{{run_id}}/run.csv",
        persistent=f"{RESULTS}/tables/{{run_id}}/persistent.csv",
        packets=f"{RESULTS}/tables/{{run_id}}/packets.csv.gz",
    log:
        f"{RESULTS}/logs/extract-{{run_id}}.log",
    shell:
        "{PY} -m analysis.extract --run {input} --out $(dirname {output.flows}) > {log} 2>&1"


# The figures, and beside them the AQM ranking (figures/ranking.csv, R/ranking_lib.R): inside the rule's
# declared directory, so the report rule that reads it depends on it.
rule figures:
    input:
        expand(f"{RESULTS}/tables/{{run_id}}/flows.csv", run_id=sorted(RUNS)),
    output:
        directory(f"{RESULTS}/figures"),
    log:
        f"{RESULTS}/logs/figures.log",
    shell:
        "Rscript analysis/R/figures.R --tables {RESULTS}/tables --out {output} > {log} 2>&1"
        " && Rscript analysis/R/ranking.R --tables {RESULTS}/tables --out {output}/ranking.csv >> {log} 2>&1"


rule verdict:
    input:
        expand(f"{RESULTS}/tables/{{run_id}}/flows.csv", run_id=sorted(RUNS)),
    output:
        f"{RESULTS}/verdict.csv",
    log:
        f"{RESULTS}/logs/verdict.log",
    shell:
        "Rscript analysis/R/verdict.R --tables {RESULTS}/tables --out {output} > {log} 2>&1"


rule report:
    input:
        figures=f"{RESULTS}/figures",
        verdict=f"{RESULTS}/verdict.csv",
        runs=expand(f"{RESULTS}/runs/{{run_id}}", run_id=sorted(RUNS)),
    output:
        report=REPORT,
    log:
        f"{RESULTS}/logs/report.log",
    shell:
        "{PY} -m analysis.report --results {RESULTS} --out {output.report} > {log} 2>&1"
