# The intervals of the verdict, the figures and the ranking (docs/statistics.md says why this method).
# boot_ci(flows, stat) is the one call: stat maps a flow (or flow pair) table to a numeric vector, and the
# interval's unit is what is independent in the data. Replications (independent schedules) are; flows of one
# schedule are not (they share the bottleneck's congestion epochs).
# resamples per block bootstrap; the tests lower it (options(favorlab.boot_B = 200)) to stay quick
BOOT_B <- function() getOption("favorlab.boot_B", 1000)
# From this many replications on, the interval comes from the spread between replications alone.
MIN_REPLICATIONS <- 5

replication_groups <- function(flows) split(seq_len(nrow(flows)), as.character(flows$replication))

# Where a column comes in a pair table as col.a / col.b (pair_flows), side a's copy: both sides replay one
# schedule, so the start time is the same, and the longer latency of the two sides bounds the epoch.
flow_col <- function(flows, col) {
  if (col %in% names(flows)) return(num(flows[[col]]))
  sides <- intersect(paste0(col, c(".a", ".b")), names(flows))
  if (!length(sides)) return(NULL)
  do.call(pmax, lapply(sides, function(s) num(flows[[s]])))
}

# The block length of the block bootstrap in one schedule, in seconds of flow start time. Flows whose start
# times lie further apart than the longer one's latency are never in the bottleneck together, so blocks as
# long as most of the schedule's flows last (the 90th percentile of their latency) hold the flows that share
# a congestion epoch, and flows of different blocks seldom do. At least 1 s (arrivals are seconds apart at
# low load) and at most a fifth of the schedule's span, so that it has five blocks or more to draw.
block_length_s <- function(start, latency) {
  epoch <- if (is.null(latency) || all(is.na(latency))) 1 else quantile(latency, 0.9, na.rm = TRUE, names = FALSE)
  max(min(max(epoch, 1), diff(range(start)) / 5), 1e-9)
}

# Within each schedule (load x replication of a scenario), the flows cut into blocks of start time, or
# (by_start FALSE, or without a start time column) into blocks of one flow. Returns list(blocks: per
# schedule, a list of row index vectors; what: the method's words; single: TRUE for blocks of one flow).
start_blocks <- function(flows, by_start = TRUE) {
  schedule <- paste(if ("scen" %in% names(flows)) flows$scen else "", flows$load, flows$replication)
  start <- flow_col(flows, "start_s")
  rows <- seq_len(nrow(flows))
  if (!by_start || is.null(start) || anyNA(start))
    return(list(blocks = lapply(split(rows, schedule), as.list), single = TRUE,
                what = if (by_start) "no start times: blocks of one flow" else "blocks of one flow"))
  latency <- flow_col(flows, "latency_s")
  by_schedule <- split(rows, schedule)
  len <- vapply(by_schedule, function(r) block_length_s(start[r], latency[r]), 0)
  blocks <- Map(function(r, l) unname(split(r, floor((start[r] - min(start[r])) / l))), by_schedule, len)
  lengths_text <- if (diff(range(len)) < 0.005) sprintf("%.3g", len[1]) else sprintf("%.3g-%.3g", min(len), max(len))
  list(blocks = blocks, single = FALSE, what = sprintf("%s s blocks of start time", lengths_text))
}

# The delete-one-replication jackknife of stat, with a t distribution of R - 1 degrees of freedom. Why a
# jackknife and not a t interval over per-replication values of stat: most claims' statistics are ratios
# and shares (drop ratio, G, p99), which are biased on one replication's few long flows and undefined where
# a replication lacks a class of flows; the jackknife keeps the row's estimate (stat on all flows), needs
# stat only on R - 1 replications together, and for a mean over replications of equal size it is exactly
# the t interval over the replications' means.
replication_jackknife <- function(flows, stat, est, level) {
  groups <- replication_groups(flows)
  R <- length(groups)
  leave_out <- vapply(seq_len(R), function(r) as.numeric(stat(flows[unlist(groups[-r], use.names = FALSE)])), est)
  leave_out <- matrix(leave_out, nrow = length(est))
  se <- sqrt((R - 1) / R * rowSums((leave_out - rowMeans(leave_out, na.rm = TRUE))^2, na.rm = TRUE))
  se[rowSums(!is.na(leave_out)) < R] <- NA_real_
  q <- qt(1 - (1 - level) / 2, R - 1)
  p_above <- function(x) {
    t <- (est - x) / se
    ifelse(is.na(se), NA_real_, ifelse(se > 0, pt(t, R - 1, lower.tail = FALSE), ifelse(est > x, 0, 1)))
  }
  list(lo = est - q * se, hi = est + q * se, p_above = p_above, R = R)
}

# The block bootstrap on `plan` (start_blocks): each resample draws, within every schedule, as many blocks
# as it has, with replacement. Percentile interval; p_above(x) is the share of resamples at or below x, with
# the +1 of Davison & Hinkley (so it is never 0 from B resamples).
block_bootstrap <- function(flows, stat, est, level, B, seed, plan) {
  draw <- function() unlist(lapply(plan$blocks, function(b) b[sample.int(length(b), length(b), replace = TRUE)]),
                            use.names = FALSE)
  set.seed(seed)
  resamples <- matrix(vapply(seq_len(B), function(i) as.numeric(stat(flows[draw()])), est), nrow = length(est))
  quantile_of <- function(p) apply(resamples, 1, function(x) if (all(is.na(x))) NA_real_ else quantile(x, p, na.rm = TRUE, names = FALSE))
  p_above <- function(x) {
    x <- rep_len(x, length(est))
    vapply(seq_along(est), function(i) {
      r <- resamples[i, ]; r <- r[!is.na(r)]
      if (!length(r) || is.na(x[i])) NA_real_ else (1 + sum(r <= x[i])) / (length(r) + 1)
    }, 0)
  }
  list(lo = quantile_of((1 - level) / 2), hi = quantile_of(1 - (1 - level) / 2), p_above = p_above)
}

# The wider of two intervals of one statistic (per component; a side NA where the method gave none). Its
# p_above takes the p-value of the two nearer to 1/2: it rejects in either direction only where both would,
# so p_above(lo) and p_above(hi) are those of the wider interval's ends.
wider_of <- function(a, b) {
  pick <- function(x, y, f) ifelse(is.na(x), y, ifelse(is.na(y), x, f(x, y)))
  list(lo = pick(a$lo, b$lo, pmin), hi = pick(a$hi, b$hi, pmax),
       p_above = function(x) pick(a$p_above(x), b$p_above(x), function(p, q) ifelse(abs(p - 0.5) <= abs(q - 0.5), p, q)))
}

# The interval of stat(flows) at `level`: list(est, lo, hi, method, p_above, one_schedule).
#  - MIN_REPLICATIONS or more replications: the replication jackknife (t, R - 1 df).
#  - fewer: a block bootstrap over flow start time within each schedule; it estimates the variation of flows
#    within the schedules run, not that between schedules. It is never narrower than the bootstrap of single
#    flows: flows that share a congestion epoch are correlated positively, so a narrower block interval is
#    the noise of a few blocks, not information. With 2 to 4 replications the interval is the wider of it
#    and the replication jackknife, so a config that lost a replication does not get a narrower interval by
#    changing method; with one replication the between-schedule variation cannot be told (one_schedule).
# p_above(x): the one-sided p-value of "the true value is at most x" against "it is above x", per component
# of stat, by the same method as the interval (so p_above(lo) is (1 - level) / 2 or less).
# stat may return NA (on a resample or a jackknife subset); those are left out.
boot_ci <- function(flows, stat, B = BOOT_B(), seed = 2013, level = 0.95) {
  est <- as.numeric(stat(flows))
  R <- length(replication_groups(flows))
  result <- function(ci, one_schedule, method)
    list(est = est, lo = ci$lo, hi = ci$hi, p_above = ci$p_above, one_schedule = one_schedule, method = method)
  if (R >= MIN_REPLICATIONS)
    return(result(replication_jackknife(flows, stat, est, level), FALSE,
                  sprintf("jackknife over %d replications, t %d df", R, R - 1)))
  plan <- start_blocks(flows)
  ci <- block_bootstrap(flows, stat, est, level, B, seed, plan)
  if (!plan$single) ci <- wider_of(ci, block_bootstrap(flows, stat, est, level, B, seed, start_blocks(flows, FALSE)))
  what <- sprintf("block bootstrap over flows within %d schedule(s) (%s%s)", sum(lengths(plan$blocks) > 0), plan$what,
                  if (plan$single) "" else ", never narrower than with single flows")
  if (R < 2) return(result(ci, TRUE, paste0(what, "; one schedule per load: variation between schedules not estimated")))
  result(wider_of(ci, replication_jackknife(flows, stat, est, level)), FALSE,
         sprintf("%s, widened to the jackknife over %d replications (t %d df) where wider", what, R, R - 1))
}
