# The AQM ranking (the report's "AQM ranking"; config/aqm-bench.yaml runs every qdisc AQM for it): per scenario
# key and load, every AQM run there measured on the same flows of the same schedules (rank_schedules), nine
# metrics (RANK_METRICS), each with a 95 % bootstrap interval, and ranked by the point estimate with ties
# marked where the intervals overlap. ranking.R writes it beside the figures (figures/ranking.csv), one row
# per (scenario, load, AQM, metric); analysis/README.md describes its columns.
#
# Which flows count (like with like): within one scenario and load, only the schedules (replications) every
# ranked AQM has a valid run of (rank_schedules), and in them
#   - "finished": the forward flows of the measurement window that completed under every ranked AQM
#     (in_metrics under each: metric_flows), so no AQM's number loses the flows it was slow on;
#   - "window": the forward window flows seen under every ranked AQM, finished or not (window_flows, as
#     claim C11: SYN losses must not be censored by who finished).
# What that leaves out is in each row: the AQM's window flows of the metric's class (`window_flows`), how
# many it did not finish (`unfinished`), and how many are not counted (`left_out`: unfinished under it or
# under another AQM, or not seen).
# Intervals: boot_ci (bootstrap.R), the claims' bootstrap: over replications where there are three or more,
# else over flows within each schedule; flows are resampled together for every AQM (one resample, every AQM's
# value on it), so each AQM's interval is about the same flows.
# Ranks: 1 is the best (lowest, or highest for goodput and fairness). `rank` orders the point estimates; the
# intervals decide which ranks an AQM can be said to hold: rank_best is 1 + the number of AQMs whose interval
# lies wholly on the better side of its own, rank_worst the number of ranked AQMs less those wholly on the
# worse side (a conservative reading of the intervals, after the league-table caution of Goldstein and
# Spiegelhalter, JRSS A 1996: a rank is claimed only as far as the intervals separate). rank_label is
# "3" where the two agree, "2-5" where they do not: an AQM apart from every other gets one rank, a group that
# overlaps shares a range, and one overlapping only its neighbour is not tied to the whole chain beyond it.
# distinct_from_next says whether the AQM's interval is apart from the next-ranked one's. No estimate (no flow
# of the class, no bottleneck capture): NA, never a rank. Fewer than RANK_MIN_FLOWS flows counted: the
# estimate and its interval, no rank.
RANK_MIN_FLOWS <- 10

rank_metric <- function(what, flows, class, better, f) list(what = what, flows = flows, class = class, better = better, f = f)
on_flows <- function(g) function(fl, cap) g(fl)
RANK_METRICS <- list(
  latency_mean_short = rank_metric("mean latency of the short flows (L < 10 packets), s", "finished", "short", "lower", on_flows(latency_mean)),
  latency_p99_short = rank_metric("99th-percentile latency of the short flows, s", "finished", "short", "lower", on_flows(latency_p99)),
  latency_mean_long = rank_metric("mean latency of the long flows (L >= 100 packets), s", "finished", "long", "lower", on_flows(latency_mean)),
  latency_p99_long = rank_metric("99th-percentile latency of the long flows, s", "finished", "long", "lower", on_flows(latency_p99)),
  drop_ratio = rank_metric("drop ratio: the flows' packets dropped at the bottleneck / arrived there", "finished", "all", "lower",
                           on_flows(drop_ratio)),
  syn_loss = rank_metric("SYN loss ratio: SYN retransmissions / SYNs sent (finished or not)", "window", "all", "lower",
                         on_flows(syn_loss_ratio)),
  rto_ratio = rank_metric("RTO ratio, Eq. 3: sum RTO_i / sum (L_i + R_i)", "finished", "all", "lower", on_flows(rto_ratio)),
  goodput = rank_metric("normalized goodput: mean per-flow goodput / bottleneck rate", "finished", "all", "higher",
                        function(fl, cap) normalized_goodput(fl, cap)),
  jain_long = rank_metric("Jain's fairness index of the long flows' goodputs", "finished", "long", "higher", on_flows(goodput_fairness)))
RANK_COLS <- c("latency_s", "bneck_in", "drops", "RTO", "L", "R", "goodput_bps", "syn_retrans")

# Ranks of one metric's AQMs (vectors in any order): rank (1 best, NA without an estimate or below the minimum
# sample), rank_best and rank_worst (the ranks its interval allows; an AQM without an interval is taken to
# overlap every other), rank_label ("3" or "2-5") and distinct_from_next (the AQM's interval apart from the
# next-ranked one's; NA for the last or where an interval is missing).
rank_aqms <- function(est, lo, hi, better, rankable = rep(TRUE, length(est))) {
  n <- length(est)
  rank <- best <- worst <- rep(NA_integer_, n); distinct <- rep(NA, n); label <- rep(NA_character_, n)
  ok <- which(!is.na(est) & rankable)
  if (!length(ok)) return(list(rank = rank, rank_best = best, rank_worst = worst, distinct_from_next = distinct, rank_label = label))
  o <- ok[order(if (better == "lower") est[ok] else -est[ok])]
  rank[o] <- seq_along(o)
  apart <- function(a, b) !anyNA(c(lo[a], hi[a], lo[b], hi[b])) && (hi[a] < lo[b] || hi[b] < lo[a])
  # b is wholly better than a: its interval lies entirely on the better side of a's (which implies apart)
  wholly_better <- function(b, a) !anyNA(c(lo[a], hi[a], lo[b], hi[b])) &&
    (if (better == "lower") hi[b] < lo[a] else lo[b] > hi[a])
  for (a in o) {
    others <- setdiff(o, a)
    n_better <- sum(vapply(others, function(b) wholly_better(b, a), TRUE))
    n_worse <- sum(vapply(others, function(b) wholly_better(a, b), TRUE))
    # a percentile interval need not hold its own estimate: the range always holds the point rank
    best[a] <- min(1L + n_better, rank[a]); worst[a] <- max(length(o) - n_worse, rank[a])
  }
  for (j in seq_along(o)[-length(o)]) {
    a <- o[j]; b <- o[j + 1]
    distinct[a] <- if (anyNA(c(lo[a], hi[a], lo[b], hi[b]))) NA else apart(a, b)
  }
  label[o] <- ifelse(best[o] == worst[o], as.character(best[o]), paste0(best[o], "-", worst[o]))
  list(rank = rank, rank_best = best, rank_worst = worst, distinct_from_next = distinct, rank_label = label)
}

# Each AQM's values of `cols` on the flows `keys` (replication, flow_id), in the keys' order.
aligned_cols <- function(f, keys, cols = RANK_COLS) {
  m <- f[keys, on = c("replication", "flow_id"), mult = "first"]
  setNames(lapply(cols, function(c) if (c %in% names(m)) num(m[[c]]) else rep(NA_real_, nrow(keys))), cols)
}
# The flows (load, replication, flow_id, L) present in f under every AQM of aqms.
common_keys <- function(f, aqms) {
  if (!nrow(f)) return(data.table(load = numeric(), replication = character(), flow_id = character(), L = numeric()))
  k <- f[aqm %in% aqms & flow_id != "", .(n = uniqueN(aqm), L = num(L[1])), by = .(load, replication, flow_id)][n == length(aqms)]
  k[, n := NULL]
  setorder(k, replication, flow_id)[, idx := .I][]
}

# Estimates and intervals of the metrics `ms` for every AQM on the flows `keys` (one bootstrap, every AQM on
# each resample). Returns one row per (aqm, metric): estimate, low, high, flows, interval.
rank_boot <- function(f, keys, aqms, ms, cap) {
  vecs <- lapply(aqms, function(a) aligned_cols(f[aqm == a], keys))
  value <- function(m, s) { if (!length(s$L)) return(NA_real_); v <- m$f(s, cap); if (is.nan(v)) NA_real_ else v }
  classes <- unique(vapply(ms, `[[`, "", "class"))
  stat <- function(kk) {
    ix <- list(all = kk$idx, short = kk$idx[is_short(kk$L)], long = kk$idx[is_long(kk$L)])[classes]
    unlist(lapply(vecs, function(v) {
      sub <- lapply(ix, function(i) lapply(v, `[`, i))
      vapply(ms, function(m) value(m, sub[[m$class]]), 0)
    }), use.names = FALSE)
  }
  ci <- if (nrow(keys)) boot_ci(keys, stat) else list(est = rep(NA_real_, length(aqms) * length(ms)), lo = NA_real_, hi = NA_real_,
                                                      method = "no flows")
  n_cls <- vapply(ms, function(m) switch(m$class, all = nrow(keys), short = sum(is_short(keys$L)), long = sum(is_long(keys$L))), 0L)
  data.table(aqm = rep(aqms, each = length(ms)), metric = rep(names(ms), length(aqms)), flows = rep(n_cls, length(aqms)),
             estimate = ci$est, low = ci$lo, high = ci$hi, interval = ci$method)
}

# Per AQM and class: the forward flows scheduled in the window of its valid runs of these replications, and
# how many did not finish (seen or not).
rank_census <- function(t, s, ld, reps) {
  f <- t$flows
  if (!nrow(f) || !"in_window" %in% names(f)) return(data.table(aqm = character(), class = character(), window_flows = integer(),
                                                                unfinished = integer()))
  f <- f[valid == 1 & in_window == "1" & direction %in% c("forward", "") & scen == s & num(load) == ld & replication %in% reps]
  rbindlist(list(f[, .(class = "all", window_flows = .N, unfinished = sum(complete != "1")), by = aqm],
                 f[is_short(L), .(class = "short", window_flows = .N, unfinished = sum(complete != "1")), by = aqm],
                 f[is_long(L), .(class = "long", window_flows = .N, unfinished = sum(complete != "1")), by = aqm]))
}

RANKING_COLS <- c("scenario", "load", "aqm", "aqm_name", "metric", "better", "schedules", "flows_counted", "estimate", "low", "high", "rank",
                  "rank_best", "rank_worst", "rank_label", "distinct_from_next", "window_flows", "unfinished", "left_out", "interval", "note")

# Which schedules (replications) and AQMs of one scenario and load are ranked: every AQM run there, on the
# replications where each of them has a valid run (a schedule with an invalid run is left out for all, as
# common_flows does for the figures); when no replication has every AQM valid (one replication, one AQM's run
# invalid), the AQMs with a valid run of every replication that has one, on those replications.
rank_schedules <- function(runs) {
  aqms <- unique(runs$aqm)
  per <- runs[, .(ok = all(aqms %in% aqm[valid == 1])), by = replication]
  reps_all <- sort(unique(runs$replication))
  reps <- sort(per[ok == TRUE]$replication)
  if (length(reps)) return(list(reps = reps, ranked = aqm_order(aqms), dropped = setdiff(reps_all, reps)))
  reps <- sort(unique(runs[valid == 1]$replication))
  ranked <- aqm_order(runs[valid == 1, .(n = uniqueN(replication)), by = aqm][n == length(reps)]$aqm)
  list(reps = reps, ranked = ranked, dropped = setdiff(reps_all, reps))
}

# The ranking of one scenario and load (see the top of this file).
rank_load <- function(t, s, ld, fin, win, min_flows = RANK_MIN_FLOWS) {
  runs <- t$runs[scen == s & num(load) == ld]
  sel <- rank_schedules(runs)
  all_aqms <- aqm_order(runs$aqm); reps <- sel$reps; ranked <- sel$ranked
  cap <- 1e6 * num(runs$bottleneck_mbps[1])
  census <- rank_census(t, s, ld, reps)
  ms <- RANK_METRICS
  res <- if (length(ranked) >= 2) {
    f <- fin[scen == s & num(load) == ld & replication %in% reps & aqm %in% ranked]
    w <- win[scen == s & num(load) == ld & replication %in% reps & aqm %in% ranked]
    rbind(rank_boot(f, common_keys(f, ranked), ranked, ms[vapply(ms, `[[`, "", "flows") == "finished"], cap),
          rank_boot(w, common_keys(w, ranked), ranked, ms[vapply(ms, `[[`, "", "flows") == "window"], cap))
  } else data.table(aqm = character(), metric = character(), flows = integer(), estimate = numeric(), low = numeric(),
                    high = numeric(), interval = character())
  grid <- CJ(aqm = all_aqms, metric = names(ms), sorted = FALSE)
  d <- merge(grid, res, by = c("aqm", "metric"), all.x = TRUE, sort = FALSE)
  d[, class := vapply(metric, function(m) ms[[m]]$class, "")]
  d <- merge(d, census, by = c("aqm", "class"), all.x = TRUE, sort = FALSE)
  d[is.na(window_flows), `:=`(window_flows = 0L, unfinished = 0L)]
  d[, `:=`(better = vapply(metric, function(m) ms[[m]]$better, ""), flows_counted = ifelse(is.na(flows), 0L, flows))]
  d[, left_out := window_flows - ifelse(aqm %in% ranked, flows_counted, 0L)]
  d[, note := if (length(ranked) < 2) "not ranked: fewer than two AQMs have a valid run of one schedule of this load"
               else ifelse(!aqm %in% ranked, "not ranked: its run of this load is invalid or missing",
                           ifelse(is.na(estimate), "no data (no flow of the class, or no bottleneck capture)",
                                  ifelse(flows_counted < min_flows, sprintf("not ranked: fewer than %d flows", min_flows), "")))]
  if (length(sel$dropped))
    d[, note := paste0(note, if (nzchar(note[1])) "; " else "", sprintf("replication(s) %s left out: a run of them is invalid or missing",
                                                                         paste(sel$dropped, collapse = " ")))]
  d[, schedules := length(reps)]
  d[, c("rank", "rank_best", "rank_worst", "distinct_from_next", "rank_label") := {
    r <- rank_aqms(estimate, low, high, better[1], aqm %in% ranked & flows_counted >= min_flows)
    list(r$rank, r$rank_best, r$rank_worst, r$distinct_from_next, r$rank_label)
  }, by = metric]
  d[is.na(interval), interval := ""]
  d[, `:=`(scenario = s, load = ld, aqm_name = aqm_label(aqm))]
  d[order(match(metric, names(ms)), match(aqm, all_aqms)), RANKING_COLS, with = FALSE]
}

# The whole ranking: every scenario key and load where two AQMs or more were run.
aqm_ranking <- function(t, min_flows = RANK_MIN_FLOWS) {
  empty <- setnames(data.table(matrix(nrow = 0, ncol = length(RANKING_COLS))), RANKING_COLS)
  if (!nrow(t$runs)) return(empty)
  fin <- metric_flows(t)
  win <- window_flows(t)
  sl <- unique(t$runs[, .(scen, load = num(load))])[order(scen, load)]
  sl <- sl[vapply(seq_len(nrow(sl)), function(i) uniqueN(t$runs[scen == sl$scen[i] & num(load) == sl$load[i]]$aqm) >= 2, TRUE)]
  if (!nrow(sl)) return(empty)
  rbindlist(lapply(seq_len(nrow(sl)), function(i) rank_load(t, sl$scen[i], sl$load[i], fin, win, min_flows)))
}
