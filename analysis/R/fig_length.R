# Metrics against the flow length L (packets), on the paper's log axis: F8 latency, F17 queueing delay,
# F18 drop ratio, F20 RTO recovery ratio, F21 P(Favor|S=s), F22 push-out share of drops; F5 latency per
# RTT class. Loads pooled, as the paper's ten-averaged figures; every AQM on the same flows (common_flows).
# Each class of length_class() is drawn at its flows' geometric mean length (the same for every AQM of a
# panel: `by` names what splits a scenario into panels, e.g. F5's RTT class).
by_length <- function(fl, metric, by = character()) {
  fl[, cls := length_class(L)]
  fl[, L_mean := exp(mean(log(num(L)))), by = c("scen", by, "cls")]
  fl[, .(v = metric(.SD), flows = .N, runs = uniqueN(run_id)), by = c("scen", by, "aqm", "cls", "L_mean")][!is.na(v)]
}
length_plot <- function(d, id, ylab, out, caption, paper = NULL, logy = FALSE, facet = facet_scen(d), note = NULL,
                        w = 6, h = 4) {
  n <- n_note(d)
  p <- ggplot(d, aes(L_mean, v, colour = aqm, group = aqm)) + geom_line() + geom_point() + facet +
    aqm_scale() + scale_length() + n_labels(d, "L_mean", "v") +
    labs(x = LENGTH_LAB, y = ylab, title = fig_title(id), caption = paste(c(note, n), collapse = "\n")) + theme_favorlab()
  if (logy) p <- p + scale_y_log10()
  if (!is.null(paper)) p <- p + paper
  save_fig(p, out, id, w = w, h = h, data = d, caption = fig_caption(id, caption, n))
}
# What the caption says: DropTail against FaQ class by class and over all lengths, or (FaQ-only
# figures) the value at the shortest and the longest class.
length_caption <- function(d, fl, metric) {
  if (!any(aqm_is_dt(d$aqm))) {
    e <- d[order(L_mean), .(s = sprintf("%s %.2g for the shortest flows (about %.0f packets), %.2g for the longest (about %.0f packets)",
                                        aqm_label(aqm[1]), v[1], L_mean[1], v[.N], L_mean[.N])), by = .(scen, aqm)]
    return(paste0(paste(e$s, collapse = "; "), "."))
  }
  paste(faq_vs_dt(d, "L_mean", "v", "length", "length classes"), "Over all lengths:", dt_faq_per_scenario(fl, metric))
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

# F5: F8 within each RTT class (the configured RTT of the flow's path, rtt_class()); one panel per class,
# and per scenario, so no curve pools two IWs or two size distributions.
fig_F5 <- function(t, out) {
  fl <- common_flows(metric_flows(t))
  if (!nrow(fl)) return(skip_fig("F5", "no flows"))
  fl[, rtt := rtt_class(.SD)]
  d <- by_length(fl, latency_mean, by = "rtt")
  known <- "path_rtt_ms" %in% names(fl) && any(!is.na(num(fl$path_rtt_ms)))
  note <- paste0("flows that completed under every AQM of their schedule, loads pooled",
                 if (!known) "; panels named by path: these tables carry no configured RTT (re-extract them)" else "")
  # log y: nine panels on one scale, where a few long flows' tens of seconds would flatten every short flow
  ns <- uniqueN(d$scen)
  length_plot(d, "F5", "mean latency (s, log scale)", out, rtt_caption(d, fl, t, known), logy = TRUE,
              facet = facet_scen_by(d, "rtt"), note = note, w = if (ns > 1) 14 else 9, h = if (ns > 1) 2 + 2.5 * ns else 7)
}
# DropTail against FaQ in each RTT class over all its lengths, then point by point; then what is counted.
rtt_caption <- function(d, fl, t, known) {
  a <- fl[aqm_is_dt(aqm) | aqm_is_faq(aqm), .(v = latency_mean(.SD)), by = .(scen, rtt, role = ifelse(aqm_is_faq(aqm), "faq", "dt"))]
  if (!all(c("dt", "faq") %in% a$role)) {
    vs <- "no DropTail/FaQ pair to compare."
  } else {
    a <- dcast(a, scen + rtt ~ role, value.var = "v")[!is.na(dt) & !is.na(faq)][order(scen, rtt)]
    p <- d[aqm_is_dt(aqm) | aqm_is_faq(aqm), .(scen, rtt, cls, role = ifelse(aqm_is_faq(aqm), "faq", "dt"), v)]
    p <- dcast(p, scen + rtt + cls ~ role, value.var = "v")
    p <- p[!is.na(dt) & !is.na(faq)]
    pre <- if (uniqueN(a$scen) > 1) paste0(a$scen, ", ") else ""
    vs <- sprintf("over all lengths FaQ's mean latency is below DropTail's in %d of %d RTT classes (%s); per length class, at %d of %d points.",
                  a[, sum(faq < dt)], nrow(a), paste(sprintf("%s%s: DropTail %.3g s, FaQ %.3g s", pre, a$rtt, a$dt, a$faq), collapse = "; "),
                  p[, sum(faq < dt)], nrow(p))
  }
  paste0(vs, if (known) "" else " Panels are paths: these tables carry no configured RTT.", " ",
         common_note(t, fl), "; loads pooled.")
}
