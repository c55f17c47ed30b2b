#!/usr/bin/env Rscript
# Two results compared flow by flow (./favorlab compare A B; orchestrate/compare.py finds the tables):
#
#   Rscript analysis/R/compare.R --a TABLES_A --b TABLES_B --out DIR [--label-a NAME] [--label-b NAME] [--resamples B]
#
# Writes DIR/compare.csv (one row per scenario, load, AQM pair and metric: A, B, B - A and B / A with 95 %
# intervals and a verdict), DIR/unpaired.csv (every run and flow left out of the pairing, and why) and
# DIR/summary.md, and prints a one-screen summary. A problem with the input ends in one line
# "favorlab compare: ..." naming the fix, exit status 2.
favorlab_R_dir <- normalizePath(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))))
source(file.path(favorlab_R_dir, "common.R"))

# the rows a summary prints in full; more are counted, and only those with a difference shown are printed
SCREEN_ROWS <- 30
fmt <- function(x) ifelse(is.na(x), "NA", formatC(signif(x, 3), format = "fg", digits = 3, flag = "#"))
interval <- function(lo, hi) ifelse(is.na(lo) | is.na(hi), "", sprintf("[%s, %s]", fmt(lo), fmt(hi)))

summary_lines <- function(res, label_a, label_b) {
  rows <- res$rows
  counts <- res$unpaired[, .N, by = .(side, what = fifelse(flow_id == "", "runs", "flows"))]
  n_of <- function(s, w) { n <- counts[side == s & what == w]$N; if (length(n)) n else 0L }
  head <- c(sprintf("A: %s", label_a), sprintf("B: %s", label_b),
            sprintf("paired: %d run pairs, %d flows; unpaired: A %d runs and %d flows, B %d runs and %d flows (unpaired.csv)",
                    nrow(res$matched), if (nrow(rows)) sum(rows[metric == names(COMPARE_METRICS)[1]]$flows) else 0L,
                    n_of("A", "runs"), n_of("A", "flows"), n_of("B", "runs"), n_of("B", "flows")))
  if (!nrow(rows)) return(c(head, "no metric could be computed on the paired flows"))
  table <- rows[, .(scenario, load, aqm = ifelse(aqm_a == aqm_b, aqm_a, paste(aqm_a, "vs", aqm_b)), metric,
                    A = fmt(a), B = fmt(b), `B - A [95 %]` = paste(fmt(diff), interval(diff_lo, diff_hi)), verdict)]
  shown <- function(t) unlist(lapply(split(t, by = "scenario"), function(s)
    c("", s$scenario[1], capture.output(print(s[, -"scenario"], row.names = FALSE, class = FALSE)))), use.names = FALSE)
  if (nrow(table) <= SCREEN_ROWS) return(c(head, shown(table)))
  # one screen: the verdicts counted per metric, then the rows where a difference shows (summary.md has all)
  counts <- dcast(rows[, .N, by = .(metric = factor(metric, names(COMPARE_METRICS)), verdict)], metric ~ verdict,
                  value.var = "N", fill = 0)
  differ <- table[verdict %in% c("B higher", "B lower")]
  c(head, "", sprintf("%d rows (all in summary.md and compare.csv); verdicts per metric:", nrow(table)),
    capture.output(print(counts, row.names = FALSE, class = FALSE)),
    if (nrow(differ)) c("", sprintf("where a difference shows (%s):", if (nrow(differ) > SCREEN_ROWS)
      sprintf("the first %d of %d", SCREEN_ROWS, nrow(differ)) else nrow(differ)), shown(head(differ, SCREEN_ROWS))))
}

markdown <- function(res, lines, label_a, label_b) {
  rows <- res$rows
  md_row <- function(...) paste0("| ", paste(..., sep = " | "), " |")
  c("# Comparison", "", sprintf("- A: `%s`", label_a), sprintf("- B: `%s`", label_b), "",
    "B - A per scenario, load and AQM pair on the flows both sides completed (docs/compare.md).",
    "Intervals are 95 %: a jackknife over replications with 5 or more, a block bootstrap below (method column of compare.csv).", "",
    md_row("scenario", "load", "A", "B", "metric", "value A", "value B", "B - A [95 %]", "B / A [95 %]", "verdict"),
    md_row("---", "---", "---", "---", "---", "---", "---", "---", "---", "---"),
    if (nrow(rows)) rows[, md_row(scenario, load, aqm_a, aqm_b, metric, fmt(a), fmt(b), paste(fmt(diff), interval(diff_lo, diff_hi)),
                                  paste(fmt(ratio), interval(ratio_lo, ratio_hi)), verdict)],
    "", sprintf("%s", lines[3]), "")
}

main <- function() {
  options(width = 200)   # a table row per line: the summary is read in a terminal, not wrapped
  a <- parse_args(c("a", "b", "out"))
  label_a <- opt_arg("label-a"); if (is.null(label_a)) label_a <- a$a
  label_b <- opt_arg("label-b"); if (is.null(label_b)) label_b <- a$b
  resamples <- opt_arg("resamples")
  if (!is.null(resamples)) options(favorlab.boot_B = as.integer(resamples))
  # data.table's note on 64-bit integer columns (seeds, times) without bit64: the comparison reads them as
  # text only (schedule_id), the same way on both sides, so the note says nothing about the result
  quiet <- function(dir) withCallingHandlers(read_tables(dir), warning = function(w)
    if (grepl("integer64", conditionMessage(w))) invokeRestart("muffleWarning"))
  res <- compare_tables(quiet(a$a), quiet(a$b))
  dir.create(a$out, recursive = TRUE, showWarnings = FALSE)
  fwrite(res$rows, file.path(a$out, "compare.csv"))
  fwrite(res$unpaired, file.path(a$out, "unpaired.csv"))
  lines <- summary_lines(res, label_a, label_b)
  writeLines(markdown(res, lines, label_a, label_b), file.path(a$out, "summary.md"))
  writeLines(lines)
}

tryCatch(main(), error = function(e) {
  message(gsub("[\r\n]+", " ", paste0("favorlab compare: ", conditionMessage(e))))
  quit(status = 2)
})
