# Section 8, the five-hop chain (scenario chain, Fig. 25): F26 the reference user's flows with DropTail at
# every hop and with FaQ at the first hop only, and what the claim C17 (verdict_scenarios.R) judges on.
#
# Which flows count. A chain run's flows.csv holds the reference user's flows and nothing else: extraction
# makes flows from the sender-<host> captures only, and the chain has two of them (sender-us, sender-ur:
# topologies/chain.py capture_points), so the iperf3 cross flows of the five hops never become rows (their
# packets are only in hop 1's bneck-in/out captures, which add counts to known flows); the runner's
# schedule.csv is the reference user's flows (docs/contracts.md, "Scenario chain"). Of its rows:
#   - completed: started in the measurement window [warmup_s, duration_s) and every byte arrived
#     (in_metrics: complete, in the window, joined to the schedule);
#   - unfinished: started in the window, not complete (cut by the end of the run, or aborted by the user's
#     flow timeout). Counted apart, never as completed, never dropped: every table and caption gives them;
#   - outside the window: started in the warm-up or during the drain (the user keeps going to the end of
#     the traffic), like every other scenario's flows outside its window;
#   - a captured connection without a schedule row (flow_id empty) is not one of the user's flows.
is_chain <- function(d) "scenario" %in% names(d) & as.character(d$scenario) == "chain"
NO_CHAIN <- "needs valid runs of the chain scenario (config section with scenario: chain)"

# One row per chain run (valid or not): its reference flows by the classes above, the measurement window,
# and the user's cycle times (one flow's start to the next one's: the flow's latency as the user saw it
# plus its think time), which C17 and the count intervals use for the closed loop's dispersion.
chain_run_counts <- function(t) {
  r <- t$runs[is_chain(t$runs)]
  if (!nrow(r)) return(data.table())
  r <- copy(r)
  for (c in c("seed", "window_start_s", "window_end_s")) if (!c %in% names(r)) r[, (c) := NA_real_]
  f <- if (nrow(t$flows) && "in_window" %in% names(t$flows)) t$flows[run_id %in% r$run_id] else data.table()
  per <- if (!nrow(f)) data.table(run_id = character(), completed = integer(), unfinished = integer(),
                                  outside_window = integer(), unjoined = integer(), gaps = list()) else {
    f <- copy(f)
    if (!"direction" %in% names(f)) f[, direction := ""]
    f[, joined := !is.na(flow_id) & flow_id != ""]
    f[, win := joined & in_window == "1" & direction %in% c("forward", "")]
    f[, .(completed = sum(win & in_metrics == "1"), unfinished = sum(win & in_metrics != "1"),
          outside_window = sum(joined & !win), unjoined = sum(!joined),
          gaps = list(cycle_gaps(.SD))), by = run_id]
  }
  d <- merge(r[, .(run_id, scen, aqm, load, replication, valid, seed = num(seed),
                   window_start = num(window_start_s), window_s = num(window_end_s) - num(window_start_s))],
             per, by = "run_id", all.x = TRUE)
  for (c in c("completed", "unfinished", "outside_window", "unjoined")) set(d, which(is.na(d[[c]])), c, 0L)
  d[, gaps := lapply(seq_len(.N), function(i) if (is.null(gaps[[i]])) numeric() else gaps[[i]])]
  d[, `:=`(cycles = lengths(gaps), cycle_mean_s = vapply(gaps, function(g) if (length(g)) mean(g) else NA_real_, 0),
           cycle_cv2 = vapply(gaps, cv2, 0))]
  setorder(d, scen, replication, aqm)
  d[]
}
# A run's cycles: from each window flow's scheduled start to the next flow's (flows in id order are the
# user's flows in order; the last one has no next).
cycle_gaps <- function(f) {
  s <- f[joined == TRUE][order(num(flow_id))]
  st <- num(s$start_s)
  g <- diff(st)
  g[s$win[-nrow(s)] & !is.na(g)]
}
cv2 <- function(g) if (length(g) < 2 || mean(g) <= 0) NA_real_ else var(g) / mean(g)^2

# The 95 % interval of a count of the user's completed flows. A closed-loop user is a renewal process: over a
# window of T seconds its count N has variance about N * CV^2, CV the coefficient of variation of its cycle
# times (Poisson counts have CV = 1). The exact Poisson interval (poisson.test) is used where the cycles vary
# no more than a Poisson process's would, and widened on the log scale by sqrt(CV^2) where they vary more
# (heavy-tailed Pareto sizes make long flows): never narrower than Poisson.
widen_log <- function(est, lo, hi, w) {
  if (is.na(est) || est <= 0 || is.na(w) || w <= 1) return(c(lo, hi))
  c(if (lo > 0) est * (lo / est)^w else 0, if (is.finite(hi)) est * (hi / est)^w else Inf)
}
count_interval <- function(n, cv2) {
  ci <- poisson.test(n)$conf.int
  widen_log(n, ci[1], ci[2], sqrt(max(1, cv2, na.rm = TRUE)))
}

# Replications judged: a valid DropTail and a valid FaQ run of one schedule (scenario key, load, replication)
# with the same seed (the same sizes and think times) and the same measurement window. `why` says what the
# replications left out lacked.
chain_pairs <- function(rc) {
  v <- rc[valid == 1]
  dt <- v[aqm_is_dt(aqm)]; fq <- v[aqm_is_faq(aqm)]
  p <- merge(dt, fq, by = c("scen", "load", "replication"), suffixes = c(".dt", ".faq"))
  if (nrow(p)) p[, like := (is.na(seed.dt) | is.na(seed.faq) | seed.dt == seed.faq) & !is.na(window_s.dt) &
                   window_s.dt > 0 & window_s.dt == window_s.faq & window_start.dt == window_start.faq]
  keys <- unique(rc[aqm_is_dt(aqm) | aqm_is_faq(aqm), .(scen, load, replication)])
  why <- vapply(seq_len(nrow(keys)), function(i) {
    k <- keys[i]
    x <- rc[scen == k$scen & load == k$load & replication == k$replication]
    miss <- c(if (!any(aqm_is_dt(x$aqm) & x$valid == 1)) "no valid DropTail run",
              if (!any(aqm_is_faq(x$aqm) & x$valid == 1)) "no valid FaQ run")
    if (!length(miss) && nrow(p)) {
      y <- p[scen == k$scen & load == k$load & replication == k$replication]
      if (nrow(y) && !all(y$like)) miss <- "DropTail and FaQ runs with different seeds or measurement windows"
    }
    if (length(miss)) sprintf("replication %s: %s", k$replication, paste(miss, collapse = ", ")) else ""
  }, "")
  list(pairs = if (nrow(p)) p[like == TRUE] else p, why = why[nzchar(why)])
}

# The ratio FaQ / DropTail of the reference flows completed per second of window over the replications
# judged (q: chain_pairs()$pairs of one scenario), with its 95 % interval. The estimate is the pooled one,
# (sum N_FaQ / sum T) / (sum N_DT / sum T), the paper's 538 / 442. The interval:
#   - five or more replications: a paired t-interval of the per-replication log ratio, exponentiated. It
#     needs no model of the count's variance and uses the pairing (both runs of a replication replay the
#     same sizes and think times); 0.5 is added to each count so a replication with none stays finite.
#   - fewer (a t-interval on 1 to 4 differences is undefined or too wide to decide anything): the exact
#     interval of the ratio of two Poisson rates (poisson.test on the pooled counts and windows), widened by
#     the closed loop's dispersion (count_interval's reasoning: the variance of log N_FaQ - log N_DT is about
#     CV_FaQ^2 / N_FaQ + CV_DT^2 / N_DT, against 1 / N_FaQ + 1 / N_DT for Poisson counts; the pooled cycles
#     of each AQM give its CV^2). The pairing is ignored there: the shared sizes make the two counts move
#     together, so leaving it out can only widen the interval.
RATIO_PAIRED_MIN_REPS <- 5
completed_ratio <- function(q) {
  nd <- sum(q$completed.dt); nf <- sum(q$completed.faq); td <- sum(q$window_s.dt); tf <- sum(q$window_s.faq)
  est <- if (nd > 0) (nf / tf) / (nd / td) else NA_real_
  if (nrow(q) >= RATIO_PAIRED_MIN_REPS) {
    d <- log((q$completed.faq + 0.5) / q$window_s.faq) - log((q$completed.dt + 0.5) / q$window_s.dt)
    ci <- if (sd(d) > 0) t.test(d)$conf.int else rep(mean(d), 2)
    return(list(est = est, lo = exp(ci[1]), hi = exp(ci[2]), widen = 1,
                method = sprintf("paired t over %d replications of log(FaQ/DT), geometric mean %.3g", nrow(q), exp(mean(d)))))
  }
  if (nd + nf == 0) return(list(est = NA_real_, lo = NA_real_, hi = NA_real_, widen = 1, method = "no completed flow"))
  ci <- poisson.test(c(nf, nd), c(tf, td))$conf.int
  pool_cv2 <- function(g) max(1, cv2(unlist(g)), na.rm = TRUE)
  cf <- pool_cv2(q$gaps.faq); cd <- pool_cv2(q$gaps.dt)
  w <- if (nf > 0 && nd > 0) sqrt((cf / nf + cd / nd) / (1 / nf + 1 / nd)) else 1
  lh <- widen_log(est, ci[1], ci[2], w)
  list(est = est, lo = lh[1], hi = lh[2], widen = w,
       method = sprintf("exact Poisson ratio on the pooled counts of %d replication(s)%s", nrow(q),
                        if (w > 1) sprintf(", widened x%.2f on the log scale for the closed loop's dispersion (cycle CV^2 DT %.2f, FaQ %.2f)", w, cd, cf)
                        else ", cycles no more variable than a Poisson process's"))
}

# The reference flows that completed under both AQMs of a replication (the same flow id is the same size:
# both runs replay one sequence), DropTail as side a and FaQ as side b of pair_flows.
chain_flow_pairs <- function(t, q) {
  fl <- metric_flows(t)
  if (!nrow(fl)) return(data.table())
  fl <- fl[flow_id != "" & run_id %in% c(q$run_id.dt, q$run_id.faq)]
  pair_flows(fl[aqm_is_dt(aqm)], fl[aqm_is_faq(aqm)])
}
# Mean latency FaQ / DropTail over those pairs, with boot_ci's interval (bootstrap.R: a jackknife over five
# replications or more, else a block bootstrap within each replication). A secondary number: no test on it.
latency_ratio <- function(p) {
  if (nrow(p) < 2) return(NULL)
  boot_ci(p, function(d) mean(num(d$latency_s.b)) / mean(num(d$latency_s.a)))
}

fig_F26 <- function(t, out) {
  rc <- chain_run_counts(t)
  if (!nrow(rc)) return(skip_fig("F26", NO_CHAIN))
  rc <- rc[valid == 1]
  if (!nrow(rc)) return(skip_fig("F26", "no valid run of the chain scenario"))
  # like with like: the replications with a valid run of every AQM of their scenario (common_flows' rule)
  n_aqm <- rc[, .(all = uniqueN(aqm)), by = scen]
  full <- merge(rc[, .(n = uniqueN(aqm)), by = .(scen, load, replication)], n_aqm, by = "scen")[n == all]
  left <- rc[!full, on = c("scen", "load", "replication")]
  rc <- rc[full, on = c("scen", "load", "replication"), nomatch = NULL]
  if (!nrow(rc)) return(skip_fig("F26", "no replication of the chain with a valid run of every AQM"))
  fl <- t$flows[run_id %in% rc$run_id & flow_id != "" & in_metrics == "1"]
  if ("direction" %in% names(fl)) fl <- fl[direction %in% c("forward", "")]
  fl <- fl[, .(scen, aqm, run_id, replication, flow_id, latency = num(latency_s))]
  if (!nrow(fl)) return(skip_fig("F26", sprintf("no completed reference flow in the valid chain runs (%s)",
                                                 paste(sprintf("%s: %d unfinished", rc$run_id, rc$unfinished), collapse = ", "))))
  # (a) the latency CDF of each AQM's completed reference flows, its replications pooled (the paper's one run)
  d <- fl[order(latency), .(latency, cdf = seq_len(.N) / .N, flows = .N, runs = uniqueN(run_id)), by = .(scen, aqm)]
  # (b) completed flows per run with a 95 % interval (count_interval), unfinished and left-out flows beside
  rc[, c("lo", "hi") := as.list(count_interval(completed, cycle_cv2)), by = run_id]
  counts <- rc[, .(scen, aqm, replication, run_id, seed, window_start_s = window_start, window_s, completed, lo, hi,
                   unfinished, outside_window, unjoined, cycles, cycle_mean_s, cycle_cv2)]
  s <- counts[, .(completed = sum(completed), unfinished = sum(unfinished), outside = sum(outside_window),
                  unjoined = sum(unjoined), runs = .N, window = sum(window_s)), by = .(scen, aqm)]
  lat <- fl[, .(m = mean(latency)), by = .(scen, aqm)]
  s <- merge(s, lat, by = c("scen", "aqm"), all.x = TRUE)[order(scen, aqm)]
  where <- if (uniqueN(s$scen) > 1) paste0(s$scen, ": ") else ""
  ratio <- vapply(unique(counts$scen), function(sc) {
    q <- chain_pairs(rc[scen == sc])$pairs
    if (!nrow(q)) return("")
    r <- completed_ratio(q)
    sprintf("FaQ/DropTail %.3g, 95%% interval [%.3g, %.3g] (%s)", r$est, r$lo, r$hi, r$method)
  }, "")
  ratio <- ratio[nzchar(ratio)]
  ours <- paste0(
    "reference-user flows completed (started in the measurement window, every byte arrived): ",
    paste(sprintf("%s%s %d in %d run(s) of %g s (mean latency %s)", where, aqm_label(s$aqm), s$completed, s$runs,
                  s$window / s$runs, ifelse(is.na(s$m), "none", sprintf("%.3g s", s$m))), collapse = ", "),
    if (length(ratio)) paste0("; ", paste(ratio, collapse = "; ")) else "",
    sprintf(". The paper's counts (442 and 538 in 5000 s) scaled to one run's window of %g s: DropTail %.1f, FaQ %.1f",
            s$window[1] / s$runs[1], 442 / 5000 * s$window[1] / s$runs[1], 538 / 5000 * s$window[1] / s$runs[1]),
    ". Left out: unfinished in the window ",
    paste(sprintf("%s %d", aqm_label(s$aqm), s$unfinished), collapse = ", "),
    " (no latency; counted apart in panel b); started in the warm-up or the drain ",
    paste(sprintf("%s %d", aqm_label(s$aqm), s$outside), collapse = ", "),
    if (any(s$unjoined > 0)) paste0("; captured connections without a schedule row ", paste(sprintf("%s %d", aqm_label(s$aqm), s$unjoined), collapse = ", ")) else "",
    if (nrow(left)) sprintf("; runs of replications without a valid run of every AQM: %s", paste(left$run_id, collapse = " ")) else "",
    ". The cross flows are not in the tables.")
  n <- n_note(unique(d[, .(scen, aqm, flows, runs)]), per = "per AQM")
  pa <- ggplot(d, aes(latency, cdf, colour = aqm)) + geom_step() + aqm_scale() + facet_scen(d) + scale_x_log10() +
    labs(x = "latency (s, log scale)", y = "CDF", title = "(a) latency of the reference user's completed flows",
         subtitle = "replications pooled; unfinished flows have none (b)") + theme_favorlab()
  counts[, label := ifelse(unfinished > 0, sprintf("%d (+%d)", completed, unfinished), as.character(completed))]
  dodge <- position_dodge(width = 0.5)
  pb <- ggplot(counts, aes(factor(replication), completed, colour = aqm)) +
    geom_point(position = dodge) + geom_errorbar(aes(ymin = lo, ymax = hi), width = 0.2, position = dodge) +
    geom_text(aes(label = label, y = hi), position = dodge, vjust = -0.5, size = 3, show.legend = FALSE) +
    scale_y_continuous(limits = c(0, NA), expand = expansion(mult = c(0, 0.15))) + aqm_scale() + facet_scen(counts) +
    labs(x = "replication", y = "flows completed in the window", title = "(b) flows completed per run",
         subtitle = "95% interval; (+k): k unfinished") + theme_favorlab()
  g <- side_by_side(list(pa, pb), c(3, 2), fig_title("F26"),
                    paste("DropTail at every hop vs FaQ at the first hop only (DropTail at the others);",
                          "the reference user's flows only, the cross flows not counted\n", n))
  # panel (b)'s data beside the figure; panel (a)'s is F26.csv (save_fig)
  fwrite(copy(counts)[, label := NULL][, aqm_name := aqm_label(aqm)], file.path(out, "F26-completed.csv"))
  save_fig(g, out, "F26", w = 10, h = 4.5, data = d, caption = fig_caption("F26", ours, n))
  invisible(list(a = pa, b = pb, counts = counts))
}

# Two ggplots side by side in one figure (widths relative), with a title above and a caption below: gtable
# is ggplot2's own layout package (no gridExtra or patchwork on the controller). Each plot keeps its legend,
# so the panels line up.
side_by_side <- function(plots, widths, title, caption) {
  # ggplotGrob measures text on the open device, and with none R opens its default one: Rplots.pdf in the
  # working directory. A null PDF device measures the same and writes nothing.
  grDevices::pdf(NULL)
  grobs <- tryCatch(lapply(plots, ggplotGrob), finally = grDevices::dev.off())
  g <- gtable::gtable_row("panels", grobs, height = grid::unit(1, "null"),
                          widths = grid::unit(widths, "null"))
  g <- gtable::gtable_add_rows(g, grid::unit(2, "lines"), pos = 0)
  g <- gtable::gtable_add_grob(g, grid::textGrob(title, x = grid::unit(0.01, "npc"), hjust = 0, gp = grid::gpar(fontsize = 13)),
                               t = 1, l = 1, r = ncol(g))
  g <- gtable::gtable_add_rows(g, grid::unit(2.5, "lines"), pos = -1)
  g <- gtable::gtable_add_grob(g, grid::textGrob(caption, x = grid::unit(0.99, "npc"), hjust = 1, gp = grid::gpar(fontsize = 8)),
                               t = nrow(g), l = 1, r = ncol(g))
  gtable::gtable_add_grob(g, grid::rectGrob(gp = grid::gpar(fill = "white", col = NA)), t = 1, l = 1, b = nrow(g),
                          r = ncol(g), z = -Inf, name = "background")
}
