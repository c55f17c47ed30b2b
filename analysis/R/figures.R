#!/usr/bin/env Rscript
# Rscript analysis/R/figures.R --tables results/quick/tables [--runs results/quick/analysis-runs.txt] --out results/quick/figures
favorlab_R_dir <- dirname(normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))))
source(file.path(favorlab_R_dir, "common.R"))
a <- parse_args(c("tables", "out"))
t <- tables_arg(a)
dir.create(a$out, recursive = TRUE, showWarnings = FALSE)
if (nrow(t$invalid)) message("invalid runs left out of every figure: ", paste(t$invalid$run_id, collapse = ", "))
fwrite(t$invalid[, .(run_id, invalid_reasons)], file.path(a$out, "invalid-runs.csv"))
# the flows every figure leaves out because they did not finish, per scenario, AQM, load and length class
fwrite(censoring(t), file.path(a$out, "unfinished-flows.csv"))
# every figure of the paper (analysis/figures.yaml), drawn where its function and its runs exist
for (id in names(FIGURES)) {
  draw <- paste0("fig_", id)
  if (!exists(draw)) { skip_fig(id, FIGURES[[id]]$missing %||% "not implemented"); next }
  tryCatch(get(draw)(scope_tables(t, FIGURES[[id]]$scope), a$out),
           error = function(e) skip_fig(id, paste("error:", conditionMessage(e))))
  if (is.null(FIG_INDEX[[id]])) skip_fig(id, "its function drew nothing and gave no reason")
}
fwrite(rbindlist(lapply(names(FIGURES), function(id) data.table(
  figure = id, number = FIGURES[[id]]$number %||% NA_integer_, title = FIGURES[[id]]$title, status = FIG_INDEX[[id]]$status,
  detail = FIG_INDEX[[id]]$detail, paper = FIGURES[[id]]$paper))), file.path(a$out, "index.csv"))
