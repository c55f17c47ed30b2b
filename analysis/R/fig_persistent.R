# Section 5.3, short flows beside persistent flows (scenario persistent): F14 short flows in the system over
# time, F15 their latency against length, F16 the persistent flows' throughput; the claim C8 (verdict_scenarios.R).
is_persistent <- function(d) "scenario" %in% names(d) & as.character(d$scenario) == "persistent"
NO_PERSISTENT <- "needs valid runs of the persistent scenario (config section with scenario: persistent)"

# Short flows in the system once a second over a run, from its t0 (run.csv t0_unix): a flow is in from its
# first SYN until its last byte arrived, and a flow that never finished stays in (as steady_state counts
# them, analysis/tables/run.py). One row per run and second, with the run's measurement window and the persistent flows' start.
short_in_system <- function(t) {
  r <- t$runs[valid == 1 & is_persistent(t$runs)]
  if (!nrow(r) || !"t0_unix" %in% names(r)) return(data.table())
  f <- t$flows[run_id %in% r$run_id & direction == "forward" & !is.na(num(syn_t))]
  if (!nrow(f)) return(data.table())
  start <- if (nrow(t$persistent %||% data.table())) t$persistent[, .(pers_start = min(num(start_s), na.rm = TRUE)), by = run_id] else
    data.table(run_id = character(), pers_start = numeric())
  d <- rbindlist(lapply(split(f, by = "run_id"), function(x) {
    ri <- r[run_id == x$run_id[1]]
    t0 <- num(ri$t0_unix)
    ts <- seq(0, floor(num(ri$window_end_s)))
    s <- sort(num(x$syn_t) - t0); e <- sort(num(x$done_t[!is.na(num(x$done_t))]) - t0)
    data.table(run_id = ri$run_id, scen = ri$scen, aqm = ri$aqm, load = ri$load, replication = ri$replication, t = ts,
               n = findInterval(ts, s) - findInterval(ts, e), window_start = num(ri$window_start_s),
               window_end = num(ri$window_end_s))
  }))
  d[, pers_start := NA_real_]
  d[start, pers_start := i.pers_start, on = "run_id"]
  d[]
}

# The mean number in the window, per run, with a 95 % interval by batch means: the window cut into `batches`
# consecutive blocks, each block's mean one observation (samples a second apart are strongly correlated;
# block means far less), t-interval over the blocks.
batch_means <- function(x, batches = 10) {
  if (length(x) < 2 * batches) return(list(mean = mean(x), lo = NA_real_, hi = NA_real_, batches = 0L))
  b <- tapply(x, cut(seq_along(x), batches, labels = FALSE), mean)
  h <- qt(0.975, batches - 1) * sd(b) / sqrt(batches)
  list(mean = mean(x), lo = mean(b) - h, hi = mean(b) + h, batches = batches)
}

fig_F14 <- function(t, out) {
  d <- short_in_system(t)
  if (!nrow(d)) return(skip_fig("F14", if (any(is_persistent(t$runs))) "the persistent runs' tables have no t0_unix (extract them again)" else NO_PERSISTENT))
  w <- d[t >= window_start & t < window_end, c(batch_means(n), list(flows = .N, runs = 1L)), by = .(scen, run_id, aqm)]
  d[, aqm := factor(aqm)]
  n <- sprintf("n = %s one-second samples in the window per run, %d run(s) per AQM", span(w$flows), max(w[, .N, by = aqm]$N))
  ours <- paste0("mean short flows in the system over the window (after the persistent flows started), 95% batch-means interval: ",
                 paste(sprintf("%s %.1f [%.1f, %.1f]", aqm_label(w$aqm), w$mean, w$lo, w$hi), collapse = ", "), ".")
  p <- ggplot(d, aes(t, n, colour = aqm)) + geom_step() + aqm_scale() + facet_scen(d) +
    geom_vline(data = unique(d[!is.na(pers_start), .(scen, pers_start)]), aes(xintercept = pers_start), linetype = "dashed") +
    geom_vline(data = unique(d[, .(scen, window_start)]), aes(xintercept = window_start), linetype = "dotted") +
    labs(x = "time since t0 (s)", y = "short flows in the system", title = fig_title("F14"),
         caption = paste0("dashed: persistent flows start; dotted: measurement window starts; unfinished flows stay counted\n", n)) +
    theme_favorlab()
  save_fig(p, out, "F14", data = d, caption = fig_caption("F14", ours, n))
}

fig_F15 <- function(t, out) {
  fl <- common_flows(metric_flows(t))
  fl <- fl[is_persistent(fl)]
  if (!nrow(fl)) return(skip_fig("F15", NO_PERSISTENT))
  d <- by_length(fl, latency_mean)
  length_plot(d, "F15", "mean latency (s)", out,
              paste("short flows of the measurement window, beside the persistent flows;", length_caption(d, fl, latency_mean)))
}

# F16: each persistent flow's throughput as a share of the bottleneck (the paper's unit), flows ranked by it.
fig_F16 <- function(t, out) {
  p <- t$persistent %||% data.table()
  if (!nrow(p)) return(skip_fig("F16", NO_PERSISTENT))
  p <- p[valid == 1]
  if (!nrow(p)) return(skip_fig("F16", "no valid run of the persistent scenario"))
  p[, share := num(share_pct)]
  p[, rank := frank(-share, ties.method = "first"), by = .(scen, run_id)]
  s <- p[, .(mean = mean(share), sd = sd(share), flows = .N, runs = uniqueN(run_id)), by = .(scen, aqm)]
  n <- n_note(s, flows = "persistent flows", per = "per AQM")
  ours <- paste0("mean share of the bottleneck per persistent flow (sd): ",
                 paste(sprintf("%s %.2f%% (%.2f)", aqm_label(s$aqm), s$mean, s$sd), collapse = ", "), ".")
  g <- ggplot(p, aes(rank, share, colour = aqm)) + geom_point(size = 1) + aqm_scale() + facet_scen(p) +
    geom_hline(data = s, aes(yintercept = mean, colour = aqm), linetype = "dashed") +
    paper_line(1.81, "mean 1.81% DT / 1.86% FaQ") +
    labs(x = "persistent flow (ranked by throughput)", y = "throughput (% of the bottleneck)", title = fig_title("F16"),
         caption = paste0("dashed: mean per AQM (iperf3's sender report, from the flows' start to the end of the traffic)\n", n)) +
    theme_favorlab()
  save_fig(g, out, "F16", data = p[, .(scen, run_id, aqm, src, dst, path_rtt_ms, stream, rank, share, mbps, retransmits)],
           caption = fig_caption("F16", ours, n))
}
