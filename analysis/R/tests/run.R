# Rscript analysis/R/tests/run.R  -- runs the testthat unit tests of the R metrics.
favorlab_R_dir <- normalizePath(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), ".."))
source(file.path(favorlab_R_dir, "common.R"))
library(testthat)
for (f in c("test_metrics.R", "test_figures.R", "test_model.R", "test_verdict.R", "test_persistent.R", "test_chain.R", "test_synflood.R", "test_ranking.R", "test_load.R"))
  test_file(file.path(favorlab_R_dir, "tests", f), reporter = "summary", stop_on_failure = TRUE)
