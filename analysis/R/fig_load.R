# Metrics against the load, mean and 95% CI over replications: F3 latency, F4 drop ratio, F19 RTO ratio.
by_load <- function(t, metric) {
  fl <- metric_flows(t)
  if (!nrow(fl)) return(NULL)
  per_run <- fl[, .(v = metric(.SD)), by = .(aqm, load = num(load), replication, bottleneck_mbps)]
  per_run[, ci95(v), by = .(aqm, load, bottleneck_mbps)]
}
load_plot <- function(d, id, ylab, out, paper = NULL) {
  p <- ggplot(d, aes(load, mean, colour = aqm)) + geom_line(na.rm = TRUE) + geom_point() +
    geom_errorbar(aes(ymin = lo, ymax = hi), width = 0.02, na.rm = TRUE) +
    facet_wrap(~ paste(bottleneck_mbps, "Mb/s"), scales = "free_y") +
    scale_colour_manual(values = aqm_colours, na.value = "grey50") +
    labs(x = "load", y = ylab, title = id) + theme_favorlab()
  if (!is.null(paper)) p <- p + paper
  save_fig(p, out, id)
}
fig_F3 <- function(t, out) { d <- by_load(t, latency_mean); if (is.null(d)) return(skip_fig("F3", "no flows")); load_plot(d, "F3", "mean latency (s)", out) }
fig_F4 <- function(t, out) { d <- by_load(t, drop_ratio); if (is.null(d) || all(is.na(d$mean))) return(skip_fig("F4", "no bottleneck captures")); load_plot(d, "F4", "drop ratio", out) }
fig_F19 <- function(t, out) { d <- by_load(t, rto_ratio); if (is.null(d)) return(skip_fig("F19", "no flows")); load_plot(d, "F19", "RTO ratio T(rho), Eq. 3", out) }
