# Figures on the per-flow pairing DropTail/FaQ (same schedule): F10 Delta CDF, F11 P(improve/worsen), F12 G(x).
all_pairs <- function(t) {
  fl <- metric_flows(t)
  # pair_flows pairs within one scenario key, which holds the dataplane: kernel DropTail with sch_favor,
  # P4 DropTail with favorqueue.p4, never across IW, buffer or profile
  p <- pair_flows(fl[aqm_is_dt(aqm)], fl[aqm_is_faq(aqm)])
  if (!nrow(p)) return(NULL)
  p[, `:=`(T_dt = latency_s.a, T_faq = latency_s.b, delta = latency_s.a - latency_s.b)]
  p[]
}
fig_F10 <- function(t, out) {
  pr <- all_pairs(t); if (is.null(pr)) return(skip_fig("F10", "no DropTail/FaQ pair of runs with the same schedule"))
  p <- ggplot(pr, aes(delta)) + stat_ecdf() + labs(x = "Delta = T_DT - T_FaQ (s)", y = "CDF", title = "F10") +
    geom_vline(xintercept = 0, linetype = "dotted") + facet_scen(pr) + theme_favorlab()
  save_fig(p, out, "F10", data = pr[, .(scen, load, replication, flow_id, L, T_dt, T_faq, delta)])
}
fig_F11 <- function(t, out) {
  pr <- all_pairs(t); if (is.null(pr)) return(skip_fig("F11", "no DropTail/FaQ pairs"))
  pr[, cls := length_class(L)]
  d <- pr[, .(improve = mean(delta > 0.001), worsen = mean(delta < -0.001), pairs = .N), by = .(scen, cls)]
  d <- melt(d, id.vars = c("scen", "cls", "pairs"), variable.name = "change", value.name = "p")
  p <- ggplot(d, aes(cls, p, colour = change, group = change)) + geom_line() + geom_point() +
    labs(x = "flow length (packets)", y = "probability", title = "F11") + facet_scen(d) + theme_favorlab() + theme(axis.text.x = element_text(angle = 45, hjust = 1))
  save_fig(p, out, "F11")
}
fig_F12 <- function(t, out) {
  pr <- all_pairs(t); if (is.null(pr)) return(skip_fig("F12", "no DropTail/FaQ pairs"))
  pr[, cls := length_class(L)]
  d <- pr[, .(total = latency_gain(.SD, "total"), positive = latency_gain(.SD, "positive"),
              negative = latency_gain(.SD, "negative"), pairs = .N), by = .(scen, cls)]
  d <- melt(d, id.vars = c("scen", "cls", "pairs"), variable.name = "gain", value.name = "G")
  p <- ggplot(d, aes(cls, G, colour = gain, group = gain)) + geom_line() + geom_point() +
    paper_line(0.3, "30% mean, 55% short") +
    labs(x = "flow length (packets)", y = "latency gain G(x), Eq. 2", title = "F12") + facet_scen(d) + theme_favorlab() + theme(axis.text.x = element_text(angle = 45, hjust = 1))
  save_fig(p, out, "F12")
}
