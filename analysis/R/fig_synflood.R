# Beyond the paper, Section 9.1 (scenario synflood, config/synflood.yaml): X1 the legitimate web flows under a
# spoofed SYN flood of 0, 0.5, 1, 2 times the bottleneck, per AQM; the claim C19 (verdict_scenarios.R) judges
# the same flows.
#
# Which flows count. The flood's SYNs never become rows: the runner's captures leave its spoofed prefix out
# (testbed/runner capture_filter), so flows.csv holds the legitimate flows only. Of those, the forward flows
# joined to the schedule and started in the measurement window, finished or not: a flood that stops flows
# from finishing must show as a lower completed share, not as a latency over fewer, luckier flows. The
# latency panel takes, at each flood rate, only the flows completed under every AQM drawn at that rate
# (paired by load, replication and flow id), so the AQMs are compared on the same flows.
NO_FLOOD_RUNS <- "needs valid runs under a SYN flood (config/synflood.yaml: synflood.rates_x above 0)"

# The runs of a flood study: every valid run under a flood, and the valid runs without one that share their
# scenario (its key without the flood rate) and load: the rate-0 points of the same schedule.
flood_study_runs <- function(t) {
  r <- t$runs[valid == 1]
  if (!nrow(r) || !"flood_x" %in% names(r)) return(data.table())
  r <- copy(r)
  r[, `:=`(rate = fifelse(is.na(num(flood_x)), 0, num(flood_x)), base = scenario_key(.SD, drop = "flood_x"))]
  flooded <- unique(r[rate > 0, .(base, load)])
  if (!nrow(flooded)) return(data.table())
  r[flooded, on = c("base", "load"), nomatch = NULL]
}

# Per base scenario, flood rate and AQM: the legitimate forward flows of the window, completed or not.
flood_window_flows <- function(t, r) {
  f <- flood_counted_flows(t$flows[run_id %in% r$run_id])
  if (!nrow(f)) return(data.table())
  f <- merge(f[, .(run_id, flow_id, complete, latency_s)], r[, .(run_id, base, rate, aqm, load, replication)], by = "run_id")
  f[, done := complete == "1"]
  f[]
}

# One row per base scenario, rate and AQM: the completed share with its bootstrap interval over flows.
completed_by_rate <- function(f) {
  f[, {
    ci <- boot_ci(.SD, function(d) mean(d$done))
    list(metric = "completed share", value = ci$est, lo = ci$lo, hi = ci$hi, flows = .N, runs = uniqueN(run_id))
  }, by = .(base, rate, aqm)]
}

# The mean latency of the flows completed under every AQM at the same rate (the same flows on each side).
latency_by_rate <- function(f) {
  f <- f[done == TRUE]
  naqm <- f[, .(n_aqm = uniqueN(aqm)), by = .(base, rate)]
  keep <- f[, .(k = uniqueN(aqm)), by = .(base, rate, load, replication, flow_id)][naqm, on = c("base", "rate")][k == n_aqm]
  f <- f[keep[, .(base, rate, load, replication, flow_id)], on = c("base", "rate", "load", "replication", "flow_id")]
  if (!nrow(f)) return(data.table())
  f[, {
    ci <- boot_ci(.SD, function(d) mean(num(d$latency_s)))
    list(metric = "mean latency of flows completed under every AQM (s)", value = ci$est, lo = ci$lo, hi = ci$hi,
         flows = .N, runs = uniqueN(run_id))
  }, by = .(base, rate, aqm)]
}

fig_X1 <- function(t, out) {
  r <- flood_study_runs(t)
  if (!nrow(r)) return(skip_fig("X1", NO_FLOOD_RUNS))
  f <- flood_window_flows(t, r)
  if (!nrow(f)) return(skip_fig("X1", "the flood runs' tables have no flows in the measurement window"))
  d <- rbind(completed_by_rate(f), latency_by_rate(f))
  d[, scen := base]
  cs <- d[metric == "completed share"]
  top <- cs[rate == max(rate)]
  ours <- sprintf("at %gx the bottleneck, completed share of the legitimate flows: %s.", top$rate[1],
                  paste(sprintf("%s %s %s", aqm_label(top$aqm), pct(top$value), fmt_ci(top$lo, top$hi)), collapse = ", "))
  n <- sprintf("n = %s legitimate forward flows in the window per point (finished or not), %s run(s) per point",
               span(cs$flows), span(cs$runs))
  # the AQMs side by side at each rate, so that their intervals do not hide one another
  dodge <- position_dodge(width = 0.04 * max(d$rate))
  p <- ggplot(d, aes(rate, value, colour = aqm)) + geom_line(position = dodge) + geom_point(position = dodge) +
    geom_errorbar(aes(ymin = lo, ymax = hi), width = 0, position = dodge) + aqm_scale() +
    scale_x_continuous(breaks = sort(unique(d$rate))) +
    facet_wrap(~ metric, scales = "free_y", labeller = label_wrap_gen(35)) +
    labs(x = "SYN flood rate (times the bottleneck)", y = NULL, title = fig_title("X1"),
         caption = paste0("95% bootstrap intervals over flows; the flood's SYNs are not in the tables\n", n)) +
    theme_favorlab()
  save_fig(p, out, "X1", w = 8, data = d, caption = fig_caption("X1", ours, n))
}
