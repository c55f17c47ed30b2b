#!/usr/bin/env Rscript
# Rscript analysis/R/ranking.R --tables results/aqm-bench/tables [--runs results/aqm-bench/analysis-runs.txt] --out results/aqm-bench/figures/ranking.csv
# The AQM ranking (R/ranking_lib.R): per scenario key and load, every AQM on the same flows, nine metrics with
# 95 % intervals and ranks, ties marked; one row per (scenario, load, AQM, metric). The report's "AQM ranking".
favorlab_R_dir <- dirname(normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))))
source(file.path(favorlab_R_dir, "common.R"))
a <- parse_args(c("tables", "out"))
t <- tables_arg(a)
r <- aqm_ranking(t)
dir.create(dirname(a$out), recursive = TRUE, showWarnings = FALSE)
fwrite(r, a$out)
message(sprintf("ranking: %d AQMs, %d scenario(s) x load(s), %d rows -> %s", uniqueN(r$aqm), uniqueN(r[, .(scenario, load)]),
                nrow(r), a$out))
