# Rscript analysis/R/tests/run.R  -- runs the testthat unit tests of the R analysis: every tests/test_*.R.
favorlab_R_dir <- normalizePath(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), ".."))
source(file.path(favorlab_R_dir, "common.R"))
library(testthat)
test_files <- sort(list.files(file.path(favorlab_R_dir, "tests"), pattern = "^test_.*[.]R$", full.names = TRUE), method = "radix")
if (!length(test_files)) stop(sprintf("no test_*.R under %s/tests", favorlab_R_dir))
for (f in test_files) test_file(f, reporter = "summary", stop_on_failure = TRUE)
