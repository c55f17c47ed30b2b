# The statuses a claim can have, the one-sided tests that decide each part of a claim, and how a claim of
# several parts is decided from them (analysis/claims.yaml's header states the rules for a reader); the way
# numbers and intervals are written in the verdict.
HOLDS <- "holds"; FAILS <- "does not hold"; INSUFF <- "insufficient data"; NOTRUN <- "not run"
STATUSES <- c(HOLDS, FAILS, INSUFF, NOTRUN)
# the level of every one-sided test: a part is decided exactly when the 95 % interval its row shows decides it
ALPHA <- 0.025

pct <- function(x) ifelse(is.na(x), "NA", sprintf("%.1f%%", 100 * x))
fmt_ci <- function(lo, hi, f = pct) sprintf("[%s, %s]", f(lo), f(hi))

# A part of a claim is two one-sided p-values about one statistic, oriented so that larger is what the paper
# says: p_hold, of "the part does not hold" (small: it holds), and p_fail, of "the part is not contradicted"
# (small: it does not hold). `not_run` names a population the config never had (the claim cannot be decided
# on this config); `reported` says why a part is shown but not judged here (the paper's number off its scenario).
# kind: the test (better, no_worse, equivalent, band, above, below, interval, t); between: whether its
# statistic compares the DropTail and FaQ sides (a difference or ratio), rather than one AQM's own value: an
# A/A replay (analysis/aa.py) counts a decided difference between two names of one qdisc only on those.
claim_part <- function(p_hold, p_fail, label = "", not_run = NULL, reported = NULL, kind = "t", between = TRUE)
  list(p_hold = p_hold, p_fail = p_fail, label = label, not_run = not_run, reported = reported, kind = kind, between = between)
# A part about one AQM's own value (C1's DropTail peak, C9's DropTail delay, C2's tau): not a comparison.
own_value <- function(part) { part$between <- FALSE; part }
part_not_run <- function(label, why) claim_part(NA_real_, NA_real_, label, not_run = why)
part_reported <- function(label, why) claim_part(NA_real_, NA_real_, label, reported = why)
# From an interval of bootstrap.R (component k) through its p_above: the statistic above x (holds), below it
# (does not hold); with x = 0 that is "better", with x = -margin "no worse" (non-inferiority).
p_above_at <- function(ci, k, x) ci$p_above(rep_len(x, length(ci$est)))[k]
# The opposite one-sided p-value, of "the true value is at least x": 1 - p_above just below x, so that a
# statistic equal to x on every resample (two AQMs without a single drop) is never "below x".
p_below_at <- function(ci, k, x) 1 - p_above_at(ci, k, x - 1e-9 * max(1, abs(x)))
above_part <- function(ci, k, x, label = "", kind = "above") claim_part(p_above_at(ci, k, x), p_below_at(ci, k, x), label, kind = kind)
better_part <- function(ci, k = 1, label = "") above_part(ci, k, 0, label, "better")
no_worse_part <- function(ci, k, margin, label = "") above_part(ci, k, -margin, label, "no_worse")
trend_part <- function(ci, k, label = "") above_part(ci, k, 0, label, "trend")
# The statistic below x: "no peak" (C1), "at most" claims.
below_part <- function(ci, k, x, label = "") claim_part(p_below_at(ci, k, x), p_above_at(ci, k, x), label, kind = "below")
# The statistic inside [lower, upper]: two one-sided tests (TOST), holding when both reject; outside it
# beyond the interval: does not hold. Equivalence is [-margin, margin]; a band is target +- tolerance.
within_part <- function(ci, k, lower, upper, label = "", kind = "within")
  claim_part(max(p_above_at(ci, k, lower), p_below_at(ci, k, upper)), min(p_below_at(ci, k, lower), p_above_at(ci, k, upper)), label, kind = kind)
equivalent_part <- function(ci, k, margin, label = "") within_part(ci, k, -margin, margin, label, "equivalent")
band_part <- function(ci, k, target, tolerance, label = "") within_part(ci, k, target - tolerance, target + tolerance, label, "band")
# A part judged from an interval alone (no p-value: C8's batch means, C17's ratio): decided at the interval's
# own 95 % level, so Holm cannot lower it further (claims.yaml says which claims do this).
interval_part <- function(lo, hi, lower = 0, upper = Inf, label = "") {
  if (is.na(lo) || is.na(hi)) return(claim_part(NA_real_, NA_real_, label, kind = "interval"))
  claim_part(if (lo > lower && hi < upper) 0 else 1, if (hi < lower || lo > upper) 0 else 1, label, kind = "interval")
}
undecided_part <- function(label = "") claim_part(NA_real_, NA_real_, label)

# A claim of several parts, decided on the parts judged here (the reported ones left aside). does not hold:
# Holm's step-down over the parts' p_fail rejects one (the chance that a true claim is called false stays at
# most ALPHA whatever the number of parts). Else not run when a part's population was never run (more data
# of this config could not decide it), holds when every part holds (an intersection-union test: it needs no
# correction for the number of parts), insufficient data otherwise; not run when nothing is judged here.
# Returns the status and each part's own (held, contradicted after Holm, open, not run, reported).
decide_parts <- function(parts) {
  if (!length(parts)) return(list(status = INSUFF, part_status = character()))
  reported <- vapply(parts, function(p) !is.null(p$reported), TRUE)
  absent <- vapply(parts, function(p) !is.null(p$not_run), TRUE)
  judged <- !reported & !absent
  p_hold <- vapply(parts, function(p) if (is.na(p$p_hold)) 1 else p$p_hold, 0)
  p_fail <- vapply(parts, function(p) if (is.na(p$p_fail)) 1 else p$p_fail, 0)
  fails <- judged & p.adjust(replace(p_fail, !judged, 1), "holm") < ALPHA
  holds <- judged & p_hold < ALPHA
  part_status <- ifelse(reported, "reported", ifelse(absent, NOTRUN, ifelse(fails, FAILS, ifelse(holds, HOLDS, INSUFF))))
  status <- if (any(fails)) FAILS else if (any(absent) || !any(judged)) NOTRUN else if (all(holds[judged])) HOLDS else INSUFF
  list(status = status, part_status = part_status)
}
# The claim's status; judged_status also carries its parts (label, kind, between, own status) as JSON in
# attribute "parts": verdict_row writes them in the row's `parts` column, which the A/A replay reads.
decide <- function(parts) decide_parts(parts)$status
judged_status <- function(parts) {
  decided <- decide_parts(parts)
  structure(decided$status, parts = parts_json(parts, decided$part_status))
}
parts_json <- function(parts, part_status)
  as.character(jsonlite::toJSON(lapply(seq_along(parts), function(i) list(
    label = parts[[i]]$label, kind = parts[[i]]$kind %||% "t", between = isTRUE(parts[[i]]$between %||% TRUE),
    status = part_status[i])), auto_unbox = TRUE))
# The parts not judged here, each with why: "a not run: why; b reported: why" for the row's note.
not_run_note <- function(parts) {
  why <- lapply(parts, function(p) if (!is.null(p$not_run)) sprintf("%s not run: %s", p$label, p$not_run)
                                   else if (!is.null(p$reported)) sprintf("%s reported, not judged: %s", p$label, p$reported))
  paste(unlist(why), collapse = "; ")
}
