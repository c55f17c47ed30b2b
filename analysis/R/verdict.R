#!/usr/bin/env Rscript
# Rscript analysis/R/verdict.R --tables results/quick/tables [--runs results/quick/analysis-runs.txt] [--roles droptail=A,favorqueue=B] --out results/quick/verdict.csv
favorlab_R_dir <- dirname(normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))))
source(file.path(favorlab_R_dir, "common.R"))
a <- parse_args(c("tables", "out"))
# --roles droptail=NAME,favorqueue=NAME: which AQMs play the two sides (an A/A replay, analysis/aa.py)
roles <- opt_arg("roles")
if (!is.null(roles)) options(favorlab.verdict_roles = parse_roles(roles))
t <- tables_arg(a)
v <- verdict(t)
fwrite(v, a$out)
message(sprintf("verdict: %d holds, %d does not hold, %d insufficient data, %d not run -> %s", sum(v$status == HOLDS),
                sum(v$status == FAILS), sum(v$status == INSUFF), sum(v$status == NOTRUN), a$out))
