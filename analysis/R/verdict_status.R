# The statuses a claim can have, the tests that decide them from a 95 % interval (claims.yaml, "test"), and
# the way numbers and intervals are written in the verdict.
HOLDS <- "holds"; FAILS <- "does not hold"; INSUFF <- "insufficient data"; NOTRUN <- "not run"
STATUSES <- c(HOLDS, FAILS, INSUFF, NOTRUN)
EPS_S <- 0.001          # |Delta| at or below 1 ms is "unchanged" (the paper's F10 resolution)

pct <- function(x) ifelse(is.na(x), "NA", sprintf("%.1f%%", 100 * x))
fmt_ci <- function(lo, hi, f = pct) sprintf("[%s, %s]", f(lo), f(hi))

# "band": the interval lies inside target +- tolerance (holds), wholly outside it (does not hold), or across
# an edge (insufficient data).
band_status <- function(lo, hi, target, tolerance) {
  if (is.na(lo) || is.na(hi)) return(INSUFF)
  if (lo >= target - tolerance && hi <= target + tolerance) HOLDS
  else if (hi < target - tolerance || lo > target + tolerance) FAILS else INSUFF
}
# lo/hi: the interval of FaQ's improvement over DropTail (positive = FaQ better)
better_status <- function(lo, hi) if (is.na(lo) || is.na(hi)) INSUFF else if (lo > 0) HOLDS else if (hi < 0) FAILS else INSUFF
no_worse_status <- function(lo, hi) if (is.na(lo) || is.na(hi)) INSUFF else if (hi < 0) FAILS else HOLDS
# A claim of several parts: one part that does not hold makes it not hold; it holds only when every part holds.
combine_statuses <- function(statuses) {
  if (any(statuses == FAILS)) FAILS else if (length(statuses) && all(statuses == HOLDS)) HOLDS else INSUFF
}
