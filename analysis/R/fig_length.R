# Metrics against the flow length L (packets), on the paper's log axis: F8 latency, F17 queueing delay,
# F18 drop ratio, F20 RTO recovery ratio, F21 P(Favor|S=s), F22 push-out share of drops.
# Loads pooled, as the paper's ten-averaged figures; every AQM on the same flows (common_flows).
# Each class of length_class() is drawn at its flows' geometric mean length (the same for every AQM).
by_length <- function(fl, metric) {
  fl[, cls := length_class(L)]
  fl[, L_mean := exp(mean(log(num(L)))), by = .(scen, cls)]
  fl[, .(v = metric(.SD), flows = .N, runs = uniqueN(run_id)), by = .(scen, aqm, cls, L_mean)][!is.na(v)]
}
length_plot <- function(d, id, ylab, out, caption, paper = NULL, logy = FALSE) {
  n <- n_note(d)
  p <- ggplot(d, aes(L_mean, v, colour = aqm, group = aqm)) + geom_line() + geom_point() + facet_scen(d) +
    aqm_scale() + scale_length() + n_labels(d, "L_mean", "v") +
    labs(x = LENGTH_LAB, y = ylab, title = fig_title(id), caption = n) + theme_favorlab()
  if (logy) p <- p + scale_y_log10()
  if (!is.null(paper)) p <- p + paper
  save_fig(p, out, id, data = d, caption = fig_caption(id, caption, n))
}
# What the caption says: DropTail against FaQ class by class and over all lengths, or (FaQ-only
# figures) the value at the shortest and the longest class.
length_caption <- function(d, fl, metric) {
  if (!any(aqm_is_dt(d$aqm))) {
    e <- d[order(L_mean), .(s = sprintf("%s %.2g for the shortest flows (about %.0f packets), %.2g for the longest (about %.0f packets)",
                                        aqm_label(aqm[1]), v[1], L_mean[1], v[.N], L_mean[.N])), by = .(scen, aqm)]
    return(paste0(paste(e$s, collapse = "; "), "."))
  }
  all <- fl[aqm_is_dt(aqm) | aqm_is_faq(aqm), .(v = metric(.SD)), by = aqm]
  paste(faq_vs_dt(d, "L_mean", "v", "length", "length classes"),
        sprintf("Over all lengths: %s.", per_aqm(setNames(all$v, all$aqm))))
}
length_fig <- function(id, metric, ylab, filter = identity, paper = NULL, logy = FALSE) function(t, out) {
  fl <- filter(common_flows(metric_flows(t)))
  if (!nrow(fl)) return(skip_fig(id, "no flows"))
  d <- by_length(fl, metric)
  if (!nrow(d)) return(skip_fig(id, "metric undefined on these data (missing captures or favor trace)"))
  length_plot(d, id, ylab, out, length_caption(d, fl, metric), paper, logy)
}
fig_F8 <- length_fig("F8", latency_mean, "mean latency (s)")
fig_F17 <- length_fig("F17", function(f) 1000 * mean_queueing_delay(f), "mean queueing delay (ms)", paper = paper_line(2.9, "2.9 ms DT / 2.8 ms FaQ", logx = TRUE))
fig_F18 <- length_fig("F18", drop_ratio, "drop ratio", logy = TRUE)
fig_F20 <- length_fig("F20", rto_recovery_ratio, "RTO recovery ratio tau(x), Eq. 4", paper = paper_line(0.56, "56% DT / 38% FaQ", logx = TRUE))
fig_F21 <- length_fig("F21", p_favor, "P(Favor | S = s), Eq. 5", filter = function(f) f[aqm_is_faq(aqm)])
fig_F22 <- length_fig("F22", pushout_share, "push-out share of drops", filter = function(f) f[aqm_is_faq(aqm)], paper = paper_line(0.3, "about 30%", logx = TRUE))
