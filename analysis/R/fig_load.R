# Metrics against the load, mean and 95% CI over replications: F3 latency, F4 drop ratio, F19 RTO ratio.
# One line per AQM the scenario ran (the paper's F3 and F4: DropTail, FaQ, CHOKe, LAS, RuN2C), none pooled,
# listed in AQM_ORDER (theme.R). Every AQM of a scenario on the same flows (common_flows); the label under each
# point is the load the schedule really offered in its window (realized_load), which a short Pareto schedule
# moves far from the configured one.
by_load <- function(t, metric) {
  fl <- common_flows(metric_flows(t))
  if (!nrow(fl)) return(NULL)
  per_run <- fl[, .(v = metric(.SD), flows = .N, realized = num(realized_load[1])),
                by = .(scen, aqm, load = num(load), replication)]
  d <- per_run[, c(ci95(v), list(flows = sum(flows), runs = .N, realized_load = mean(realized))), by = .(scen, aqm, load)]
  d[order(scen, match(aqm, aqm_order(aqm)), load)]
}
# The caption compares FaQ with DropTail, then with every other AQM of the figure (faq_vs_others); with more
# than two AQMs the points of one load are dodged apart so their bars do not hide each other.
load_plot <- function(d, id, ylab, out, paper = NULL, facet = facet_scen(d),
                      ours = trimws(paste(faq_vs_dt(d, "load", "mean", "load", "loads"), faq_vs_others(d, "load", "mean", "loads"))),
                      w = 6, h = 4) {
  n <- n_note(d)
  pos <- position_dodge(width = if (uniqueN(d$aqm) > 2) 0.03 else 0)
  p <- ggplot(d, aes(load, mean, colour = aqm)) + geom_line(na.rm = TRUE, position = pos) + geom_point(position = pos) +
    geom_errorbar(aes(ymin = lo, ymax = hi), width = 0.02, na.rm = TRUE, position = pos) + facet + aqm_scale() + n_labels(d, "load", "mean") +
    labs(x = "configured load (label: realized load)", y = ylab, title = fig_title(id),
         caption = paste0("flows that completed under every AQM of the schedule; bars: 95% CI over replications\n", n)) +
    theme_favorlab()
  if (any(!is.na(d$realized_load)))
    p <- p + geom_text(data = unique(d, by = c("scen", "load")), aes(label = sprintf("%.2f", realized_load), y = -Inf), vjust = -0.5,
                       size = 2.5, colour = "grey40", na.rm = TRUE)
  if (!is.null(paper)) p <- p + paper
  save_fig(p, out, id, w = w, h = h, data = d, caption = fig_caption(id, ours, n))
}
fig_F3 <- function(t, out) { d <- by_load(t, latency_mean); if (is.null(d)) return(skip_fig("F3", "no flows")); load_plot(d, "F3", "mean latency (s)", out) }
fig_F4 <- function(t, out) { d <- by_load(t, drop_ratio); if (is.null(d) || all(is.na(d$mean))) return(skip_fig("F4", "no bottleneck captures")); load_plot(d, "F4", "drop ratio", out) }
fig_F19 <- function(t, out) { d <- by_load(t, rto_ratio); if (is.null(d)) return(skip_fig("F19", "no flows")); load_plot(d, "F19", "RTO ratio T(rho), Eq. 3", out) }
