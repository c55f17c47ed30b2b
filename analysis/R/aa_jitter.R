#!/usr/bin/env Rscript
# Rscript analysis/R/aa_jitter.R --tables T --runs RUNS --roles droptail=A,favorqueue=B --out jitter.csv
# The replay jitter of an A/A pairing (analysis/aa.py): the same flow of the same schedule under two names of
# one qdisc, whose latencies differ only by how the replay went. Per scenario and flow class (all, L < 10,
# L >= 100): the quantiles of |latency difference| and the share of pairs within each threshold; claims.yaml's
# `unchanged_s` (C6, C7) is read from it. The flows: in the metrics (complete) under both names, valid runs.
favorlab_R_dir <- dirname(normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))))
source(file.path(favorlab_R_dir, "common.R"))
a <- parse_args(c("tables", "roles", "out"))
options(favorlab.verdict_roles = parse_roles(a$roles))
t <- tables_arg(a)
fl <- metric_flows(t)
pairs <- pair_flows(fl[aqm_is_dt(aqm)], fl[aqm_is_faq(aqm)])
THRESHOLDS_S <- c(0.001, 0.01, 0.05, 0.1, 0.2, 0.5, 1)
QUANTILES <- c(0.5, 0.75, 0.9, 0.95, 0.99)
jitter <- function(d) {
  delta <- abs(num(d$latency_s.a) - num(d$latency_s.b))
  q <- if (length(delta)) quantile(delta, QUANTILES, names = FALSE) else rep(NA_real_, length(QUANTILES))
  as.data.table(c(list(pairs = length(delta), schedules = uniqueN(d[, .(load, replication)])),
                  setNames(as.list(q), sprintf("abs_delta_q%g_s", 100 * QUANTILES)),
                  setNames(lapply(THRESHOLDS_S, function(x) mean(delta <= x)), sprintf("share_within_%gs", THRESHOLDS_S))))
}
classes <- list(all = function(L) rep(TRUE, length(L)), `L < 10` = function(L) L < 10, `L >= 100` = function(L) L >= 100)
out <- rbindlist(lapply(split(pairs, by = "scen"), function(of_scen) rbindlist(lapply(names(classes), function(k)
  cbind(data.table(scen = of_scen$scen[1], flows = k), jitter(of_scen[classes[[k]](num(L))]))))))
fwrite(out, a$out)
message(sprintf("aa_jitter: %d pairs -> %s", nrow(pairs), a$out))
