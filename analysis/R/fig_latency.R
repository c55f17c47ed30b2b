# F2: latency density, DropTail vs FaQ (a peak at the initial RTO with DropTail, claim C1).
fig_F2 <- function(t, out) {
  fl <- common_flows(metric_flows(t)[aqm_is_dt(aqm) | aqm_is_faq(aqm)])
  if (!nrow(fl)) return(skip_fig("F2", "no DropTail/FaQ flows"))
  fl[, latency := num(latency_s)]
  fl[, `:=`(flows = .N, runs = uniqueN(run_id)), by = .(scen, aqm)]
  irto <- if (identical(fl$profile[1], "paper")) 3 else 1
  n <- n_note(unique(fl[, .(flows, runs)]), per = "per curve")
  # the flows that waited at least one initial RTO: where DropTail's bump sits
  ours <- sprintf("the share of flows that took at least the initial RTO (%g s): %s", irto,
                  dt_faq_per_scenario(fl, function(f) mean(f$latency >= irto), pct))
  p <- ggplot(fl, aes(latency, colour = aqm)) + geom_density(adjust = 0.5) +
    scale_x_continuous(limits = c(0, quantile(fl$latency, 0.99))) +
    geom_vline(xintercept = irto, linetype = "dotted") + annotate("text", x = irto, y = 0, label = sprintf("initial RTO %g s (paper: 3 s)", irto), hjust = -0.05, vjust = -0.5, size = 3) +
    aqm_scale() + labs(x = "latency (s)", y = "density", title = fig_title("F2"), caption = n) +
    facet_scen(fl) + theme_favorlab()
  save_fig(p, out, "F2", data = fl[, .(scen, aqm, load, replication, flow_id, L, latency, flows, runs)],
           caption = fig_caption("F2", ours, n))
}
