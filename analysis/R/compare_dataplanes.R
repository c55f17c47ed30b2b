#!/usr/bin/env Rscript
# The same DropTail/FavorQueue comparison on two dataplanes: the kernel qdiscs (pfifo, sch_favor) and
# the P4 switch (p4-droptail, p4-favorqueue), run on the same schedules (config/quick.yaml and
# config/p4-quick.yaml share seed, loads and durations). Per dataplane, AQM and load: flows, mean
# latency, drop ratio, SYN loss ratio, RTO recovery ratio (metrics.R), and FaQ's latency gain over
# DropTail on each dataplane.
#
#   Rscript analysis/R/compare_dataplanes.R --kernel results/quick/tables --p4 results/p4-quick/tables \
#       --out results/p4-quick/dataplanes.csv [--include-invalid]
#
# Writes the tidy table (one row per dataplane, AQM, load and metric) and prints a wide one. Only valid
# runs count unless --include-invalid: then invalid runs count too, and every row says how many of its
# runs were invalid (column invalid_runs; the printed table marks them with '!').
favorlab_R_dir <- normalizePath(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))))
source(file.path(favorlab_R_dir, "common.R"))

# One row per dataplane, AQM role (droptail/favorqueue) and load of a tables directory's valid runs.
dataplane_summary <- function(tables_dir, include_invalid = FALSE) {
  t <- read_tables(tables_dir)
  if (include_invalid) t$flows[, valid := "1"]      # metric_flows keeps valid runs only
  invalid <- t$runs[valid != 1, .(invalid_runs = .N), by = .(aqm, load = num(load))]
  f <- metric_flows(t)
  f <- f[aqm_is_dt(aqm) | aqm_is_faq(aqm)]
  if (!nrow(f)) stop(sprintf("no DropTail or FavorQueue flows in the valid runs under %s", tables_dir))
  f[, `:=`(dataplane = aqm_dataplane(aqm), aqm_role = ifelse(aqm_is_dt(aqm), "droptail", "favorqueue"),
           load = num(load))]
  s <- f[, .(aqm = aqm[1], flows = .N, latency_s = latency_mean(.SD), drop_ratio = drop_ratio(.SD),
             syn_loss_ratio = syn_loss_ratio(.SD), rto_recovery_ratio = rto_recovery_ratio(.SD)),
         by = .(dataplane, aqm_role, load)]
  s <- merge(s, invalid, by = c("aqm", "load"), all.x = TRUE)
  s[is.na(invalid_runs), invalid_runs := 0L]
  if (!include_invalid) s[, invalid_runs := 0L]     # they were left out
  s[, aqm := NULL]
  s[]
}

# FaQ's mean latency gain over DropTail, per dataplane and load: 1 - T_FaQ / T_DT.
faq_latency_gain <- function(s) {
  w <- dcast(s, dataplane + load ~ aqm_role, value.var = "latency_s")
  if (!all(c("droptail", "favorqueue") %in% names(w))) return(w[, .(dataplane, load, faq_latency_gain = NA_real_)])
  w[, .(dataplane, load, faq_latency_gain = 1 - favorqueue / droptail)]
}

# The printed table: per load, each AQM's mean latency and drop ratio on both dataplanes, FaQ's gains.
print_comparison <- function(s, gain) {
  v <- function(dp, role, ld, m) { x <- s[dataplane == dp & aqm_role == role & load == ld][[m]]; if (length(x)) x else NA_real_ }
  bang <- function(ld) if (any(s[load == ld]$invalid_runs > 0)) "!" else ""
  g <- function(dp, ld) { x <- gain[dataplane == dp & load == ld]$faq_latency_gain; if (length(x)) x else NA_real_ }
  cat("| load | DT latency s kernel / P4 | FaQ latency s kernel / P4 | FaQ gain kernel / P4 | DT drops kernel / P4 | FaQ drops kernel / P4 | flows kernel / P4 (DT) |\n")
  cat("|---|---|---|---|---|---|---|\n")
  for (ld in sort(unique(s$load))) {
    cat(sprintf("| %.2f%s | %.3f / %.3f | %.3f / %.3f | %+.1f %% / %+.1f %% | %.1f %% / %.1f %% | %.1f %% / %.1f %% | %d / %d |\n", ld,
                bang(ld), v("kernel", "droptail", ld, "latency_s"), v("p4", "droptail", ld, "latency_s"),
                v("kernel", "favorqueue", ld, "latency_s"), v("p4", "favorqueue", ld, "latency_s"),
                100 * g("kernel", ld), 100 * g("p4", ld),
                100 * v("kernel", "droptail", ld, "drop_ratio"), 100 * v("p4", "droptail", ld, "drop_ratio"),
                100 * v("kernel", "favorqueue", ld, "drop_ratio"), 100 * v("p4", "favorqueue", ld, "drop_ratio"),
                as.integer(v("kernel", "droptail", ld, "flows")), as.integer(v("p4", "droptail", ld, "flows"))))
  }
}

if (sys.nframe() == 0L) {
  a <- parse_args(c("kernel", "p4", "out"))
  all_runs <- "--include-invalid" %in% commandArgs(TRUE)
  k <- dataplane_summary(a$kernel, all_runs); p <- dataplane_summary(a$p4, all_runs)
  if (!all(k$dataplane == "kernel") || !all(p$dataplane == "p4"))
    stop("--kernel must hold kernel-qdisc runs (droptail, favor) and --p4 P4 runs (p4-droptail, p4-favorqueue); ",
         "fix: --kernel results/quick/tables --p4 results/p4-quick/tables")
  s <- rbind(k, p)
  tidy <- melt(s, id.vars = c("dataplane", "aqm_role", "load"), variable.name = "metric", value.name = "value")
  tidy[, value := as.numeric(value)]
  gain <- faq_latency_gain(s)
  tidy <- rbind(tidy, gain[, .(dataplane, aqm_role = "favorqueue", load, metric = "faq_latency_gain",
                               value = faq_latency_gain)])
  dir.create(dirname(a$out), showWarnings = FALSE, recursive = TRUE)
  fwrite(tidy[order(metric, dataplane, aqm_role, load)], a$out)
  if (all_runs) cat(sprintf("INVALID RUNS INCLUDED: %d of the runs counted here failed a fidelity check (rows marked !)\n\n",
                            sum(s$invalid_runs)))
  print_comparison(s, gain)
  message(sprintf("wrote %s (%d rows)", a$out, nrow(tidy)))
}
