#!/usr/bin/env Rscript
# Rscript analysis/R/figures.R --tables results/quick/tables --out results/quick/figures
favorlab_R_dir <- dirname(normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))))
source(file.path(favorlab_R_dir, "common.R"))
a <- parse_args(c("tables", "out"))
t <- read_tables(a$tables)
dir.create(a$out, recursive = TRUE, showWarnings = FALSE)
if (nrow(t$invalid)) message("invalid runs left out of every figure: ", paste(t$invalid$run_id, collapse = ", "))
fwrite(t$invalid[, .(run_id, invalid_reasons)], file.path(a$out, "invalid-runs.csv"))
# the flows every figure leaves out because they did not finish, per scenario, AQM, load and length class
fwrite(censoring(t), file.path(a$out, "unfinished-flows.csv"))
for (id in c("F2", "F3", "F4", "F8", "F9", "F10", "F11", "F12", "F13", "F17", "F18", "F19", "F20", "F21", "F22", "F23", "F24", "F27")) {
  tryCatch(get(paste0("fig_", id))(t, a$out), error = function(e) message(sprintf("skip %s: %s", id, conditionMessage(e))))
}
for (id in c("F5", "F6", "F7", "F14", "F15", "F16", "F26"))
  message(sprintf("skip %s: scenario not in these tables / not implemented yet", id))
