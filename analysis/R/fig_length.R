# Metrics against the flow length L (packets): F8 latency, F17 queueing delay, F18 drop ratio,
# F20 RTO recovery ratio, F21 P(Favor|S=s), F22 push-out share of drops.
# Loads pooled, as the paper's ten-averaged figures; every AQM on the same flows (common_flows).
by_length <- function(fl, metric) {
  fl[, cls := length_class(L)]
  fl[, .(v = metric(.SD), n = .N), by = .(scen, aqm, cls)][!is.na(v)]
}
length_plot <- function(d, id, ylab, out, paper = NULL, logy = FALSE) {
  p <- ggplot(d, aes(cls, v, colour = aqm, group = aqm)) + geom_line() + geom_point() + facet_scen(d) +
    scale_colour_manual(values = aqm_colours, na.value = "grey50") +
    labs(x = "flow length (packets)", y = ylab, title = id) + theme_favorlab() +
    theme(axis.text.x = element_text(angle = 45, hjust = 1))
  if (logy) p <- p + scale_y_log10()
  if (!is.null(paper)) p <- p + paper
  save_fig(p, out, id)
}
length_fig <- function(id, metric, ylab, filter = identity, paper = NULL, logy = FALSE) function(t, out) {
  fl <- filter(common_flows(metric_flows(t)))
  if (!nrow(fl)) return(skip_fig(id, "no flows"))
  d <- by_length(fl, metric)
  if (!nrow(d)) return(skip_fig(id, "metric undefined on these data (missing captures or favor trace)"))
  length_plot(d, id, ylab, out, paper, logy)
}
fig_F8 <- length_fig("F8", latency_mean, "mean latency (s)")
fig_F17 <- length_fig("F17", function(f) 1000 * mean_queueing_delay(f), "mean queueing delay (ms)", paper = paper_line(2.9, "2.9 ms DT / 2.8 ms FaQ"))
fig_F18 <- length_fig("F18", drop_ratio, "drop ratio", logy = TRUE)
fig_F20 <- length_fig("F20", rto_recovery_ratio, "RTO recovery ratio tau(x), Eq. 4", paper = paper_line(0.56, "56% DT / 38% FaQ"))
fig_F21 <- length_fig("F21", p_favor, "P(Favor | S = s), Eq. 5", filter = function(f) f[aqm_is_faq(aqm)])
fig_F22 <- length_fig("F22", pushout_share, "push-out share of drops", filter = function(f) f[aqm_is_faq(aqm)], paper = paper_line(0.3, "about 30%"))
