# F9 latency vs buffer size, F13 simultaneous flows vs time, F27 latency CCDF at IW 2 and IW 10.
fig_F9 <- function(t, out) {
  fl <- metric_flows(t)
  if (!nrow(fl) || length(unique(fl$buffer_pkts)) < 2) return(skip_fig("F9", "needs runs at several buffer sizes"))
  d <- fl[, .(v = latency_mean(.SD)), by = .(aqm, buffer = num(buffer_pkts))]
  p <- ggplot(d, aes(buffer, v, colour = aqm)) + geom_line() + geom_point() + scale_colour_manual(values = aqm_colours, na.value = "grey50") +
    labs(x = "queue size (packets)", y = "mean latency (s)", title = "F9") + theme_favorlab()
  save_fig(p, out, "F9")
}
# Number of flows in the system: +1 at the SYN, -1 when the last data byte arrived (complete flows of valid runs,
# warm-up included so the curve starts at t0), one replication (the first) per AQM and load.
fig_F13 <- function(t, out) {
  fl <- t$flows
  if (!nrow(fl)) return(skip_fig("F13", "no flows"))
  fl <- fl[valid == 1 & complete == "1" & replication == min(replication)]
  if ("direction" %in% names(fl)) fl <- fl[direction %in% c("forward", "")]
  if (!nrow(fl)) return(skip_fig("F13", "no complete flows"))
  ev <- rbind(fl[, .(aqm, load, t = num(syn_t), d = 1)], fl[, .(aqm, load, t = num(done_t), d = -1)])
  setorder(ev, aqm, load, t)
  ev[, `:=`(n = cumsum(d), t = t - min(t)), by = .(aqm, load)]
  p <- ggplot(ev, aes(t, n, colour = aqm)) + geom_step() + facet_wrap(~ paste("load", load)) +
    scale_colour_manual(values = aqm_colours, na.value = "grey50") + labs(x = "time (s)", y = "flows in the system", title = "F13") + theme_favorlab()
  save_fig(p, out, "F13")
}
fig_F27 <- function(t, out) {
  fl <- metric_flows(t)
  if (!nrow(fl) || !all(c(2, 10) %in% num(fl$iw))) return(skip_fig("F27", "needs runs at IW 2 and IW 10"))
  fl[, latency := num(latency_s)]
  d <- fl[, .(latency = sort(latency), ccdf = 1 - (seq_len(.N) - 1) / .N), by = .(aqm, iw)]
  p <- ggplot(d, aes(latency, ccdf, colour = aqm, linetype = factor(iw))) + geom_step() + scale_y_log10() +
    scale_colour_manual(values = aqm_colours, na.value = "grey50") + labs(x = "latency (s)", y = "CCDF", linetype = "IW", title = "F27") + theme_favorlab()
  save_fig(p, out, "F27")
}
