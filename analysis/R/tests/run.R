# Rscript analysis/R/tests/run.R [NAME ...]  -- runs the testthat unit tests of the R analysis: every tests/test_*.R,
# or test_NAME.R for each NAME given.
favorlab_R_dir <- normalizePath(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), ".."))
source(file.path(favorlab_R_dir, "common.R"))
library(testthat)
test_files <- sort(list.files(file.path(favorlab_R_dir, "tests"), pattern = "^test_.*[.]R$", full.names = TRUE), method = "radix")
# names given (run.R intervals verdict) run only those files' tests
only <- commandArgs(TRUE)
if (length(only)) test_files <- test_files[basename(test_files) %in% sprintf("test_%s.R", only)]
if (!length(test_files)) stop(sprintf("no test_*.R under %s/tests%s", favorlab_R_dir,
                                      if (length(only)) paste0(" named ", paste(only, collapse = ", ")) else ""))
for (f in test_files) test_file(f, reporter = "summary", stop_on_failure = TRUE)
