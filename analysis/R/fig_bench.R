# Benchmark figures for any scenario (ids B<k>, analysis/figures.yaml): the paper's load figures (F3, F4, F19)
# are scoped to Table 1, so a config with a scenario of its own (another buffer, IW, size distribution, AQM
# set) would get no load figure. These draw every scenario the tables hold, one panel per scenario key, one
# line per AQM it ran, beside the paper's figures. Each point is the mean and 95% CI over replications of one
# metric of analysis/R/metrics.R, on the flows every AQM of the schedule completed (by_load, fig_load.R).
BENCH_FLOWS <- "Flows counted: the forward flows that completed out of warm-up under every AQM of the same schedule (scenario, load, replication)"

# by_load on the short flows only (is_short: fewer than 10 packets), the paper's class for tail latency
bench_short <- function(t) { t$flows <- t$flows[is_short(L)]; t }

bench_load <- function(id, t, metric, ylab, out, flows = BENCH_FLOWS) {
  d <- by_load(t, metric)
  if (is.null(d) || all(is.na(d$mean))) return(skip_fig(id, "no completed flows with this metric in any scenario"))
  ours <- paste0(flows, ". ", trimws(paste(faq_vs_dt(d, "load", "mean", "load", "loads"), faq_vs_others(d, "load", "mean", "loads"))))
  load_plot(d, id, ylab, out, ours = ours, h = 3 + 1.5 * ceiling(uniqueN(d$scen) / 3))
}

fig_B1 <- function(t, out) bench_load("B1", t, latency_mean, "mean latency (s)", out)
fig_B2 <- function(t, out) bench_load("B2", bench_short(t), latency_p99, "short-flow p99 latency (s)", out,
                                      paste(BENCH_FLOWS, "and are shorter than 10 packets; p99 per run"))
fig_B3 <- function(t, out) bench_load("B3", t, drop_ratio, "drop ratio", out,
                                      paste(BENCH_FLOWS, "and have bottleneck counters"))
fig_B4 <- function(t, out) bench_load("B4", t, syn_loss_ratio, "SYN loss ratio", out)
fig_B5 <- function(t, out) bench_load("B5", t, rto_ratio, "RTO ratio T(rho), Eq. 3", out)

# B6: the latency CDF per scenario and load, one curve per AQM. Its table holds the CDF at every percentile
# (0 to 100 %) rather than every flow, so the table stays small whatever the run length.
fig_B6 <- function(t, out) {
  fl <- common_flows(metric_flows(t))
  if (!nrow(fl)) return(skip_fig("B6", "no completed flows in any scenario"))
  fl[, latency := num(latency_s)]
  p <- seq(0, 1, by = 0.01)
  d <- fl[!is.na(latency), .(cdf = p, latency_s = quantile(latency, p, names = FALSE), flows = .N, runs = uniqueN(run_id)),
          by = .(scen, aqm, load = num(load))]
  d <- d[order(scen, match(aqm, aqm_order(aqm)), load, cdf)]
  d[, load_label := sprintf("load %g", load)]
  pl <- ggplot(d, aes(latency_s, cdf, colour = aqm)) + geom_step() + aqm_scale() +
    # only the scenario x load panels that ran (a grid would leave most of them empty)
    facet_wrap(if (uniqueN(d$scen) > 1) vars(scen, load_label) else vars(load_label), ncol = 3, labeller = label_wrap_gen(40)) +
    scale_x_log10() +
    labs(x = "flow latency (s, log scale)", y = "P(latency <= x)", title = fig_title("B6"),
         caption = paste0("flows that completed under every AQM of the schedule\n", n_note(d, per = "per curve"))) + theme_favorlab()
  med <- d[cdf == 0.5, .(scen, aqm, load, latency_s)]
  ours <- sprintf("%s. Median latency per AQM, scenario and load: %s.", BENCH_FLOWS,
                  paste(sprintf("%s %s load %g: %.3g s", med$scen, aqm_label(med$aqm), med$load, med$latency_s), collapse = "; "))
  save_fig(pl, out, "B6", w = 8, h = 1.5 + 2.5 * ceiling(uniqueN(d[, .(scen, load)]) / 3), data = d[, !"load_label"],
           caption = fig_caption("B6", ours, n_note(d, per = "per curve")))
}
