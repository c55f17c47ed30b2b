# Figures on the per-flow pairing DropTail/FaQ (same schedule): F10 Delta CDF, F11 P(improve/worsen), F12 G(x).
# n behind a point: the flow pairs, and the DropTail/FaQ run pairs (one per load and replication of a scenario).
all_pairs <- function(t) {
  fl <- metric_flows(t)
  # pair_flows pairs within one scenario key, which holds the dataplane: kernel DropTail with sch_favor,
  # P4 DropTail with favorqueue.p4, never across IW, buffer or profile
  p <- pair_flows(fl[aqm_is_dt(aqm)], fl[aqm_is_faq(aqm)])
  if (!nrow(p)) return(NULL)
  p[, `:=`(T_dt = latency_s.a, T_faq = latency_s.b, delta = latency_s.a - latency_s.b)]
  p[]
}
run_pairs <- function(p) uniqueN(p[, .(load, replication)])
# The |Delta| within which a flow counts as unchanged: the claim's own unchanged_s (claims.yaml, C6 for F10 and
# C7 for F11), so a figure's shares are the ones its claim's verdict row judges.
unchanged_s <- function(claim_id) read_claims()[[claim_id]]$unchanged_s
delta_text <- function(s) sprintf("|Delta| <= %g s", s)
# Pairs per flow-length class, at the class's geometric mean length (as fig_length.R).
by_length_pairs <- function(pr, f) {
  pr[, cls := length_class(L)]
  pr[, L_mean := exp(mean(log(L))), by = .(scen, cls)]
  pr[, c(f(.SD), list(flows = .N, runs = run_pairs(.SD))), by = .(scen, cls, L_mean)]
}
pairs_note <- function(d) n_note(d, "flow pairs", "DropTail/FaQ run pairs", "per point")
fig_F10 <- function(t, out) {
  pr <- all_pairs(t); if (is.null(pr)) return(skip_fig("F10", "no DropTail/FaQ pair of runs with the same schedule"))
  pr[, `:=`(flows = .N, runs = run_pairs(.SD)), by = scen]
  n <- n_note(unique(pr[, .(flows, runs)]), "flow pairs", "DropTail/FaQ run pairs", "per curve")
  eps <- unchanged_s("C6")
  s <- delta_shares(pr, eps)
  ours <- sprintf("of the %d flow pairs %s are unchanged (%s, claim C6's), %s faster with FaQ, %s slower, %s faster by more than 1 s.",
                  nrow(pr), pct(s[["unchanged"]]), delta_text(eps), pct(s[["faster"]]), pct(s[["slower"]]), pct(s[["faster_1s"]]))
  p <- ggplot(pr, aes(delta)) + stat_ecdf() + labs(x = "Delta = T_DropTail - T_FaQ (s)", y = "CDF", title = fig_title("F10"), caption = n) +
    geom_vline(xintercept = 0, linetype = "dotted") + facet_scen(pr) + theme_favorlab()
  save_fig(p, out, "F10", data = pr[, .(scen, load, replication, flow_id, L, T_dt, T_faq, delta, flows, runs)],
           caption = fig_caption("F10", ours, n))
}
# P(improve) and P(worsen) of the flows below 10 and from 100 packets, the paper's two groups.
# A flow improves or worsens when its |Delta| is beyond C7's unchanged_s.
improve_text <- function(pr, sel, what, eps) {
  x <- pr[sel]
  if (!nrow(x)) return(sprintf("no %s", what))
  sprintf("%s improve %s and worsen %s (%d pairs)", what, pct(mean(x$delta > eps)), pct(mean(x$delta < -eps)), nrow(x))
}
fig_F11 <- function(t, out) {
  pr <- all_pairs(t); if (is.null(pr)) return(skip_fig("F11", "no DropTail/FaQ pairs"))
  eps <- unchanged_s("C7")
  d <- by_length_pairs(pr, function(x) list(improve = mean(x$delta > eps), worsen = mean(x$delta < -eps)))
  d <- melt(d, id.vars = c("scen", "cls", "L_mean", "flows", "runs"), variable.name = "change", value.name = "p")
  n <- pairs_note(d)
  ours <- paste0(improve_text(pr, pr$L < 10, "short flows (< 10 packets)", eps), "; ",
                 improve_text(pr, pr$L >= 100, "long flows (>= 100 packets)", eps),
                 sprintf(" (a change within %s, claim C7's, counts as neither).", delta_text(eps)))
  p <- ggplot(d, aes(L_mean, p, colour = change, group = change)) + geom_line() + geom_point() + scale_length() +
    n_labels(d[change == "improve"], "L_mean", "p") +
    labs(x = LENGTH_LAB, y = "probability", colour = "latency with FaQ", title = fig_title("F11"), caption = n) +
    facet_scen(d) + theme_favorlab()
  save_fig(p, out, "F11", data = d, caption = fig_caption("F11", ours, n))
}
fig_F12 <- function(t, out) {
  pr <- all_pairs(t); if (is.null(pr)) return(skip_fig("F12", "no DropTail/FaQ pairs"))
  d <- by_length_pairs(pr, function(x) list(total = latency_gain(x, "total"), positive = latency_gain(x, "positive"),
                                            negative = latency_gain(x, "negative")))
  d <- melt(d, id.vars = c("scen", "cls", "L_mean", "flows", "runs"), variable.name = "gain", value.name = "G")
  n <- pairs_note(d)
  short <- pr[L < 10]
  ours <- sprintf("G = %s over all %d flow pairs, %s for the flows under 10 packets.", pct(latency_gain(pr)), nrow(pr),
                  if (nrow(short)) pct(latency_gain(short)) else "none")
  p <- ggplot(d, aes(L_mean, G, colour = gain, group = gain)) + geom_line() + geom_point() + scale_length() +
    paper_line(0.3, "30% mean, 55% short", logx = TRUE) + n_labels(d[gain == "total"], "L_mean", "G") +
    labs(x = LENGTH_LAB, y = "latency gain G(x), Eq. 2", colour = "part of G", title = fig_title("F12"), caption = n) +
    facet_scen(d) + theme_favorlab()
  save_fig(p, out, "F12", data = d, caption = fig_caption("F12", ours, n))
}
