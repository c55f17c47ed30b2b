# F9 latency vs buffer size, F13 simultaneous flows vs time, F27 latency CCDF at IW 2 and IW 10.
fig_F9 <- function(t, out) {
  fl <- common_flows(metric_flows(t))
  if (!nrow(fl)) return(skip_fig("F9", "no flows"))
  fl <- sweep_schedules(fl, "buffer_pkts")
  if (!nrow(fl)) return(skip_fig("F9", "needs runs at several buffer sizes of one scenario and load"))
  d <- fl[, .(v = latency_mean(.SD), flows = .N, runs = uniqueN(run_id), loads = paste(sort(unique(num(load))), collapse = " ")),
          by = .(sweep, aqm, buffer = num(buffer_pkts))]
  n <- n_note(d)
  p <- ggplot(d, aes(buffer, v, colour = aqm)) + geom_line() + geom_point() + aqm_scale() + n_labels(d, "buffer", "v") +
    (if (length(unique(d$sweep)) > 1) facet_wrap(~ sweep) else NULL) +
    labs(x = "queue size (packets)", y = "mean latency (s)", title = fig_title("F9"), caption = n) + theme_favorlab()
  ours <- faq_vs_dt(d[, scen := sweep], "buffer", "v", "buffer", "buffer sizes")
  save_fig(p, out, "F9", data = d[, !"scen"], caption = fig_caption("F9", ours, n))
}
# Number of flows in the system: +1 at the SYN, -1 when the last data byte arrived; a flow that never
# finished stays in the system to the end of the capture (counting only finished flows would hide the
# backlog). Valid runs of the Table 1 scenarios, warm-up included so the curve starts at t0, one
# replication (the first).
fig_F13 <- function(t, out) {
  fl <- t$flows
  if (!nrow(fl)) return(skip_fig("F13", "no flows"))
  fl <- fl[valid == 1 & replication == min(replication) & !is.na(num(syn_t)) & is_table1(fl)]
  if ("direction" %in% names(fl)) fl <- fl[direction %in% c("forward", "")]
  if (!nrow(fl)) return(skip_fig("F13", "no flows with a SYN in the captures"))
  ev <- rbind(fl[, .(scen, aqm, load, t = num(syn_t), d = 1)], fl[!is.na(num(done_t)), .(scen, aqm, load, t = num(done_t), d = -1)])
  setorder(ev, scen, aqm, load, t)
  ev[, `:=`(n = cumsum(d), t = t - min(t), flows = sum(d == 1), runs = 1L), by = .(scen, aqm, load)]
  ev[, panel := if (uniqueN(scen) > 1) paste(scen, "load", load) else paste("load", load)]
  nn <- n_note(unique(ev[, .(flows, runs)]), per = "per curve")
  # per curve's panel (scenario and load), so a load or scenario where one AQM's run is invalid does not set
  # that AQM's maximum alone
  ours <- paste("the most flows in the system at once, per panel:",
                dt_faq_per_scenario(ev[, .(scen = panel, aqm, n)], function(d) max(d$n),
                                    function(x) sprintf("%d", as.integer(x)), name_each = TRUE))
  p <- ggplot(ev, aes(t, n, colour = aqm)) + geom_step() + facet_wrap(~ panel, labeller = label_wrap_gen(40)) + aqm_scale() +
    labs(x = "time (s)", y = "flows in the system", title = fig_title("F13"),
         caption = paste0("unfinished flows stay counted to the end; ", nn)) + theme_favorlab()
  save_fig(p, out, "F13", data = ev, caption = fig_caption("F13", ours, nn))
}
fig_F27 <- function(t, out) {
  fl <- metric_flows(t)
  if (!nrow(fl)) return(skip_fig("F27", "no flows"))
  fl[, sweep := scenario_key(.SD, "iw")]
  fl <- fl[sweep %in% fl[, .(ok = all(c(2, 10) %in% num(iw))), by = sweep][ok == TRUE]$sweep]
  if (!nrow(fl)) return(skip_fig("F27", "needs runs at IW 2 and IW 10 of one scenario"))
  # the same flows at both IWs and under both AQMs (one schedule per load and replication)
  fl[, scen := sweep]
  same_schedule(fl, c("scen", "load", "replication"), "F27")
  fl[, aqm_iw := paste(aqm, iw)]
  k <- fl[, .(n = uniqueN(aqm_iw)), by = .(scen, load, replication, flow_id)]
  fl <- merge(fl, k[n == max(n), .(scen, load, replication, flow_id)], by = c("scen", "load", "replication", "flow_id"))
  fl[, latency := num(latency_s)]
  d <- fl[, .(latency = sort(latency), ccdf = 1 - (seq_len(.N) - 1) / .N, flows = .N, runs = uniqueN(run_id)), by = .(scen, aqm, iw)]
  n <- n_note(unique(d[, .(flows, runs)]), per = "per curve")
  m <- d[, .(v = mean(latency)), by = .(aqm, iw)][order(aqm, num(iw))]
  ours <- sprintf("mean latency %s.", paste(sprintf("%s at IW %s %.3g s", aqm_label(m$aqm), m$iw, m$v), collapse = ", "))
  p <- ggplot(d, aes(latency, ccdf, colour = aqm, linetype = factor(iw))) + geom_step() + scale_y_log10() + facet_scen(d) +
    aqm_scale() + labs(x = "latency (s)", y = "CCDF", linetype = "IW", title = fig_title("F27"), caption = n) + theme_favorlab()
  save_fig(p, out, "F27", data = d, caption = fig_caption("F27", ours, n))
}
