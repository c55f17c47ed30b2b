# The AQM ranking (the report's "AQM ranking"; config/aqm-bench.yaml runs every qdisc AQM for it): per scenario
# key and load, every AQM run there measured on the same flows of the same schedules (rank_schedules), nine
# metrics (RANK_METRICS), each with its interval (boot_ci), and ranked on every paired resample of the flows.
# ranking.R writes it beside the figures (figures/ranking.csv), one row per (scenario, load, AQM, metric);
# analysis/README.md describes its columns.
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
# Intervals: boot_ci (bootstrap.R), the claims' interval, on the same flows for every AQM.
# Ranks: 1 is the best (lowest, or highest for goodput and fairness); equal values share the lowest rank
# they span (1, 1, 3: R's ties.method "min"), so no tie is broken by the order the AQMs are listed in.
# `rank` orders the point estimates. How sure that order is comes from ranking every AQM anew on each paired
# resample (rank_resampler: one resample of the schedules and flows, every AQM's value on it, so the ranks
# move only as far as the AQMs' differences on the same flows do): rank_median and the 95 % rank interval
# rank_lo..rank_hi are quantiles of those ranks, p_first the share of resamples where the AQM ranks 1 (the
# "rank quantiles" of league tables: Goldstein and Spiegelhalter, JRSS A 1996; Hall and Miller, Ann. Stat.
# 2009, on bootstrapping ranks). Marginal intervals would not do: two AQMs whose intervals overlap can still
# be ordered on nearly every resample of the same flows. rank_label is "3" where the rank interval is one
# rank, "2-5" where it is not. No estimate (no flow of the class, no bottleneck capture): NA, never a rank.
# Fewer flows than the metric's minimum (RANK_METRICS' min_n, with its reason): the estimate and its
# interval, no rank, and the note says why.
#
# An AQM whose queue is not bounded by the config's buffer (CAKE: config/aqms.yaml gives it no packet
# limit) is not compared on equal terms on drops and latency: its rows say so (buffer_note).

rank_metric <- function(what, flows, class, better, f, min_n, why)
  list(what = what, flows = flows, class = class, better = better, f = f, min_n = as.integer(min_n), why = why)
on_flows <- function(g) function(fl, cap) g(fl)
# The minimum flows per metric. A mean or a ratio of sums: 30 flows, the common floor for a mean's
# sampling distribution to be near normal, which a percentile interval assumes; one flow that met a 1 s RTO
# moves a mean of 30 short flows (about 0.4 s each) by 8 %, of 10 by 25 %. A 99th percentile: 100 flows,
# below which it lies between the two largest flows' values (R's type 7), so it ranks one flow. The SYN loss ratio:
# 100 flows, as one lost SYN in fewer moves it by 1 % or more, the size of the effect ranked (the paper's
# 1.8 % with DropTail against 0.04 % with FaQ).
MIN_MEAN <- "a mean or ratio of fewer flows is swayed by one flow's RTO"
MIN_P99 <- "a 99th percentile of fewer flows is the largest one's value"
RANK_METRICS <- list(
  latency_mean_short = rank_metric("mean latency of the short flows (L < 10 packets), s", "finished", "short", "lower",
                                   on_flows(latency_mean), 30, MIN_MEAN),
  latency_p99_short = rank_metric("99th-percentile latency of the short flows, s", "finished", "short", "lower",
                                  on_flows(latency_p99), 100, MIN_P99),
  latency_mean_long = rank_metric("mean latency of the long flows (L >= 100 packets), s", "finished", "long", "lower",
                                  on_flows(latency_mean), 30, MIN_MEAN),
  latency_p99_long = rank_metric("99th-percentile latency of the long flows, s", "finished", "long", "lower",
                                 on_flows(latency_p99), 100, MIN_P99),
  drop_ratio = rank_metric("drop ratio: the flows' packets dropped at the bottleneck / arrived there", "finished", "all", "lower",
                           on_flows(drop_ratio), 30, MIN_MEAN),
  syn_loss = rank_metric("SYN loss ratio: SYN retransmissions / SYNs sent (finished or not)", "window", "all", "lower",
                         on_flows(syn_loss_ratio), 100, "one lost SYN in fewer flows moves the ratio by 1 % or more"),
  rto_ratio = rank_metric("RTO ratio, Eq. 3: sum RTO_i / sum (L_i + R_i)", "finished", "all", "lower", on_flows(rto_ratio), 30, MIN_MEAN),
  goodput = rank_metric("normalized goodput: mean per-flow goodput / bottleneck rate", "finished", "all", "higher",
                        function(fl, cap) normalized_goodput(fl, cap), 30, MIN_MEAN),
  jain_long = rank_metric("Jain's fairness index of the long flows' goodputs", "finished", "long", "higher",
                          on_flows(goodput_fairness), 30, "a fairness index of fewer flows is bounded below by 1/n"))
RANK_COLS <- c("latency_s", "bneck_in", "drops", "RTO", "L", "R", "goodput_bps", "syn_retrans")
# The rank interval's level (its quantiles of the resamples' ranks).
RANK_LEVEL <- 0.95

# Ranks of one metric's values (1 best; NA where v is NA): ties share the lowest rank they span. Values equal
# to 10 significant digits are ties: one number reached by two roundings (Jain's index of goodputs that differ
# by a common factor) differs in its last bits, and that must not order two AQMs.
rank_min <- function(v, better) {
  r <- rep(NA_integer_, length(v)); ok <- !is.na(v)
  r[ok] <- as.integer(rank(signif(if (better == "lower") v[ok] else -v[ok], 10), ties.method = "min"))
  r
}

# Rank quantiles from a resamples x AQMs matrix of one metric's values (columns: the rankable AQMs). A
# resample where an AQM has no value (a class with no flow in it) ranks nobody and is left out: ranking the
# others alone would move their ranks for want of data. Returns per AQM rank_median, rank_lo, rank_hi (type 1
# quantiles: ranks stay whole numbers), p_first, and the resamples used.
rank_quantiles <- function(values, better, level = RANK_LEVEL) {
  k <- ncol(values)
  full <- values[stats::complete.cases(values), , drop = FALSE]
  none <- list(rank_median = rep(NA_integer_, k), rank_lo = rep(NA_integer_, k), rank_hi = rep(NA_integer_, k),
               p_first = rep(NA_real_, k), resamples = 0L)
  if (!nrow(full)) return(none)
  ranks <- matrix(apply(full, 1, rank_min, better = better), nrow = k)      # AQMs x resamples
  q <- function(p) as.integer(apply(ranks, 1, quantile, p, type = 1, names = FALSE))
  list(rank_median = q(0.5), rank_lo = q((1 - level) / 2), rank_hi = q(1 - (1 - level) / 2),
       p_first = rowMeans(ranks == 1L), resamples = nrow(full))
}

# The paired resamples the ranks are taken on: row indices of keys (one resample serves every AQM). The unit
# is bootstrap.R's: with MIN_REPLICATIONS or more replications, the replications (its jackknife's unit,
# drawn with replacement); with one, the blocks of flow start time within the schedule (start_blocks, its
# block bootstrap); with 2 to MIN_REPLICATIONS - 1, both in turn, replications and then blocks within each
# drawn one, so that the ranks carry the variation between schedules as boot_ci's widening to the
# jackknife does (a two-stage draw counts the within-schedule part twice: the rank interval is, if anything,
# too wide, never narrower than the replications allow). Returns list(draw, method).
rank_resampler <- function(keys) {
  reps <- unique(as.character(keys$replication)); R <- length(reps)
  if (R >= MIN_REPLICATIONS) {
    groups <- replication_groups(keys)
    return(list(draw = function() unlist(groups[sample.int(R, R, replace = TRUE)], use.names = FALSE),
                method = sprintf("paired resamples of the %d replications", R)))
  }
  plan <- start_blocks(keys)
  rep_of <- vapply(plan$blocks, function(b) as.character(keys$replication[b[[1]][1]]), "")
  within <- function(bs) unlist(lapply(bs, function(b) b[sample.int(length(b), length(b), replace = TRUE)]), use.names = FALSE)
  if (R < 2) return(list(draw = function() within(plan$blocks),
                         method = sprintf("paired block resamples within one schedule (%s)", plan$what)))
  list(draw = function() unlist(lapply(sample(reps, R, replace = TRUE), function(r) within(plan$blocks[rep_of == r])), use.names = FALSE),
       method = sprintf("paired resamples of the %d replications, then of blocks within each (%s)", R, plan$what))
}

# Each AQM's values of `cols` on the flows `keys` (replication, flow_id), in the keys' order.
aligned_cols <- function(f, keys, cols = RANK_COLS) {
  m <- f[keys, on = c("replication", "flow_id"), mult = "first"]
  setNames(lapply(cols, function(c) if (c %in% names(m)) num(m[[c]]) else rep(NA_real_, nrow(keys))), cols)
}
# The flows (load, replication, flow_id, L) present in f under every AQM of aqms, with what start_blocks
# cuts them by: the start time (one schedule: the same under every AQM) and the longest latency among the
# AQMs (the epoch the flow can share the bottleneck in).
common_keys <- function(f, aqms) {
  if (!nrow(f)) return(data.table(load = numeric(), replication = character(), flow_id = character(), L = numeric(),
                                  start_s = numeric(), latency_s = numeric(), idx = integer()))
  top <- function(x) { x <- num(x); if (all(is.na(x))) NA_real_ else max(x, na.rm = TRUE) }
  if (!"start_s" %in% names(f)) f <- copy(f)[, start_s := NA_character_]
  k <- f[aqm %in% aqms & flow_id != "", .(n = uniqueN(aqm), L = num(L[1]), start_s = num(start_s[1]), latency_s = top(latency_s)),
         by = .(load, replication, flow_id)][n == length(aqms)]
  k[, n := NULL]
  setorder(k, replication, flow_id)[, idx := .I][]
}

# Estimates, intervals and ranks of the metrics `ms` for every AQM on the flows `keys`: boot_ci for each
# value's interval, and the paired resamples (rank_resampler) for the ranks, both over the same flows for
# every AQM. Returns one row per (aqm, metric): flows, estimate, low, high, interval, rank, rank_median,
# rank_lo, rank_hi, p_first, rank_resamples, rank_method. Ranked: the AQMs with an estimate, where the
# metric's class has at least its min_n flows.
rank_boot <- function(f, keys, aqms, ms, cap, B = BOOT_B(), seed = 2013) {
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
  n_cls <- vapply(ms, function(m) switch(m$class, all = nrow(keys), short = sum(is_short(keys$L)), long = sum(is_long(keys$L))), 0L)
  d <- data.table(aqm = rep(aqms, each = length(ms)), metric = rep(names(ms), length(aqms)), flows = rep(n_cls, length(aqms)),
                  estimate = NA_real_, low = NA_real_, high = NA_real_, interval = "no flows", rank = NA_integer_,
                  rank_median = NA_integer_, rank_lo = NA_integer_, rank_hi = NA_integer_, p_first = NA_real_,
                  rank_resamples = 0L, rank_method = "")
  if (!nrow(keys)) return(d)
  ci <- boot_ci(keys, stat, B = B, seed = seed)
  d[, `:=`(estimate = ci$est, low = ci$lo, high = ci$hi, interval = ci$method)]
  rs <- rank_resampler(keys)
  set.seed(seed)
  values <- vapply(seq_len(B), function(i) stat(keys[rs$draw()]), numeric(nrow(d)))    # (aqm, metric) x resamples
  for (j in seq_along(ms)) {
    m <- ms[[j]]
    rows <- which(d$metric == names(ms)[j] & !is.na(d$estimate))
    if (n_cls[j] < m$min_n || !length(rows)) next
    q <- rank_quantiles(t(values[rows, , drop = FALSE]), m$better)
    d[rows, `:=`(rank = rank_min(estimate, m$better), rank_median = q$rank_median, rank_lo = q$rank_lo, rank_hi = q$rank_hi,
                 p_first = q$p_first, rank_resamples = q$resamples,
                 rank_method = sprintf("%d of %d %s", q$resamples, B, rs$method))]
  }
  d
}

# Where an AQM's queue is not bounded by the config's buffer: config/aqms.yaml's forward qdisc has no
# `limit` set from {buffer_pkts} or {buffer_bytes} (CAKE's, whose COBALT bounds it by delay and its memory
# limit by 4 MB). A key aqms.yaml does not know gets no note: nothing is known of its buffer.
AQM_FORWARD_ARGS <- local({
  a <- yaml::read_yaml(file.path(favorlab_R_dir, "..", "..", "config", "aqms.yaml"))
  lapply(a, function(e) as.character(unlist((if (is.null(e$twin_of)) e else a[[e$twin_of]])$forward$args)))
})
buffer_note <- function(aqm, buffer_pkts) vapply(as.character(aqm), function(a) {
  args <- AQM_FORWARD_ARGS[[a]]
  if (is.null(args)) return("")
  i <- which(args == "limit")
  if (length(i) && any(args[i + 1] %in% c("{buffer_pkts}", "{buffer_bytes}"))) return("")
  sprintf("its queue is not limited to the config's %s-packet buffer (config/aqms.yaml: %s %s), so its drops and delays are not on equal terms",
          buffer_pkts, a, paste(args, collapse = " "))
}, "", USE.NAMES = FALSE)

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

RANKING_COLS <- c("scenario", "load", "aqm", "aqm_name", "metric", "better", "schedules", "flows_counted", "min_flows", "estimate", "low",
                  "high", "interval", "rank", "rank_median", "rank_lo", "rank_hi", "rank_label", "p_first", "rank_resamples", "rank_method",
                  "window_flows", "unfinished", "left_out", "note")

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
rank_load <- function(t, s, ld, fin, win) {
  runs <- t$runs[scen == s & num(load) == ld]
  sel <- rank_schedules(runs)
  all_aqms <- aqm_order(runs$aqm); reps <- sel$reps; ranked <- sel$ranked
  cap <- 1e6 * num(runs$bottleneck_mbps[1])
  census <- rank_census(t, s, ld, reps)
  ms <- RANK_METRICS
  by_flows <- function(w) ms[vapply(ms, `[[`, "", "flows") == w]
  res <- if (length(ranked) >= 2) {
    f <- fin[scen == s & num(load) == ld & replication %in% reps & aqm %in% ranked]
    w <- win[scen == s & num(load) == ld & replication %in% reps & aqm %in% ranked]
    rbind(rank_boot(f, common_keys(f, ranked), ranked, by_flows("finished"), cap),
          rank_boot(w, common_keys(w, ranked), ranked, by_flows("window"), cap))
  } else data.table(aqm = character(), metric = character(), flows = integer(), estimate = numeric(), low = numeric(),
                    high = numeric(), interval = character(), rank = integer(), rank_median = integer(), rank_lo = integer(),
                    rank_hi = integer(), p_first = numeric(), rank_resamples = integer(), rank_method = character())
  grid <- CJ(aqm = all_aqms, metric = names(ms), sorted = FALSE)
  d <- merge(grid, res, by = c("aqm", "metric"), all.x = TRUE, sort = FALSE)
  d[, `:=`(class = vapply(metric, function(m) ms[[m]]$class, ""), min_flows = vapply(metric, function(m) ms[[m]]$min_n, 0L),
           why = vapply(metric, function(m) ms[[m]]$why, ""))]
  d <- merge(d, census, by = c("aqm", "class"), all.x = TRUE, sort = FALSE)
  d[is.na(window_flows), `:=`(window_flows = 0L, unfinished = 0L)]
  d[is.na(rank_resamples), rank_resamples := 0L]
  d[, `:=`(better = vapply(metric, function(m) ms[[m]]$better, ""), flows_counted = ifelse(is.na(flows), 0L, flows))]
  d[, left_out := window_flows - ifelse(aqm %in% ranked, flows_counted, 0L)]
  d[, note := if (length(ranked) < 2) "not ranked: fewer than two AQMs have a valid run of one schedule of this load"
               else ifelse(!aqm %in% ranked, "not ranked: its run of this load is invalid or missing",
                           ifelse(is.na(estimate), "no data (no flow of the class, or no bottleneck capture)",
                                  ifelse(flows_counted < min_flows,
                                         sprintf("not ranked: %d flows, fewer than the %d this metric needs (%s)", flows_counted,
                                                 as.integer(min_flows), why),
                                         ifelse(is.na(rank_median), "not ranked: no resample has a value for every AQM", ""))))]
  add_note <- function(x, y) ifelse(nzchar(y), ifelse(nzchar(x), paste0(x, "; ", y), y), x)
  if (length(sel$dropped))
    d[, note := add_note(note, sprintf("replication(s) %s left out: a run of them is invalid or missing", paste(sel$dropped, collapse = " ")))]
  d[, note := add_note(note, buffer_note(aqm, runs$buffer_pkts[1]))]
  d[, `:=`(schedules = length(reps), rank_label = ifelse(is.na(rank_lo), NA_character_,
                                                          ifelse(rank_lo == rank_hi, as.character(rank_lo), paste0(rank_lo, "-", rank_hi))))]
  d[is.na(interval), interval := ""]
  d[is.na(rank_method), rank_method := ""]
  d[, `:=`(scenario = s, load = ld, aqm_name = aqm_label(aqm))]
  d[order(match(metric, names(ms)), match(aqm, all_aqms)), RANKING_COLS, with = FALSE]
}

# The whole ranking: every scenario key and load where two AQMs or more were run.
aqm_ranking <- function(t) {
  empty <- setnames(data.table(matrix(nrow = 0, ncol = length(RANKING_COLS))), RANKING_COLS)
  if (!nrow(t$runs)) return(empty)
  fin <- metric_flows(t)
  win <- window_flows(t)
  sl <- unique(t$runs[, .(scen, load = num(load))])[order(scen, load)]
  sl <- sl[vapply(seq_len(nrow(sl)), function(i) uniqueN(t$runs[scen == sl$scen[i] & num(load) == sl$load[i]]$aqm) >= 2, TRUE)]
  if (!nrow(sl)) return(empty)
  rbindlist(lapply(seq_len(nrow(sl)), function(i) rank_load(t, sl$scen[i], sl$load[i], fin, win)))
}
