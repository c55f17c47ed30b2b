# F6 the flow sizes the schedules offered, F7 mean latency vs load for each size distribution. A size
# distribution is run.csv's (size_dist, size_mean_pkts); it is part of the scenario key, so F7's AQMs meet on
# common flows within one distribution and never across two.
size_label <- function(dist, mean) ifelse(is.na(dist) | dist == "", "size distribution not recorded",
                                          sprintf("%s, mean %s packets", dist, mean))

# F6: CCDF of the sizes offered, not of the sizes that finished: a distribution seen through its completed
# flows would lose its long tail, the flows least likely to finish in the window (offered_flows, load.R).
# Loads and replications pooled per distribution; each schedule once, though every AQM of it replays it.
fig_F6 <- function(t, out) {
  f <- offered_flows(t)
  if (!nrow(f)) return(skip_fig("F6", "no flow scheduled in the measurement window of a valid run"))
  f[, dist := size_label(size_dist, size_mean_pkts)]
  # the persistent scenario's short flows have their own distribution; the name says which scenario offered it
  if ("scenario" %in% names(f) && uniqueN(f$scenario) > 1) f[, dist := sprintf("%s (%s)", dist, scenario)]
  d <- f[, c(size_ccdf(L), list(mean_pkts = num(size_mean_pkts[1]), sample_mean = mean(num(L)), median = median(num(L)),
                                largest = max(num(L)), flows = .N, runs = uniqueN(schedule))), by = dist]
  d[, dist := factor(dist, levels = unique(dist[order(mean_pkts, dist)]))]
  s <- unique(d[, .(dist, mean_pkts, sample_mean, median, largest, flows, runs)])[order(dist)]
  s[, legend := sprintf("%s: sample mean %.1f", dist, sample_mean)]
  d[s, legend := i.legend, on = "dist"]
  d[, legend := factor(legend, levels = s$legend)]
  n <- n_note(s, runs = "schedules", per = "per distribution")
  ours <- paste0(if (nrow(s) == 1) "one size distribution in these tables (the paper draws three): " else sprintf("%d size distributions: ", nrow(s)),
                 paste(sprintf("%s: sample mean %.1f packets, median %g, largest %g", s$dist, s$sample_mean, s$median, s$largest), collapse = "; "),
                 ". Sizes offered: every forward flow scheduled in the measurement window, finished or not, each schedule",
                 " (load x replication with a valid run) once.")
  p <- ggplot(d, aes(L, ccdf, colour = legend)) + geom_step() +
    geom_vline(data = s, aes(xintercept = mean_pkts, colour = legend), linetype = "dashed", na.rm = TRUE, show.legend = FALSE) +
    geom_vline(data = s, aes(xintercept = sample_mean, colour = legend), linetype = "dotted", show.legend = FALSE) +
    scale_length() + scale_y_log10() + guides(colour = guide_legend(ncol = 1)) +
    labs(x = "flow size (packets, log scale)", y = "CCDF P(S >= s), log scale", colour = NULL, title = fig_title("F6"),
         caption = paste0("flows scheduled in the window, finished or not; dashed: configured mean, dotted: sample mean\n", n)) +
    theme_favorlab()
  save_fig(p, out, "F6", w = 8, data = d, caption = fig_caption("F6", ours, n))
}

# F7: F3 in one panel per size distribution (a row of panels per scenario that has several distributions;
# the persistent scenario's short flows are a scenario of their own, not a fourth distribution of the web runs).
fig_F7 <- function(t, out) {
  d <- by_load(t, latency_mean)
  if (is.null(d)) return(skip_fig("F7", "no flows"))
  r <- copy(t$runs)
  if (!"scenario" %in% names(r)) r[, scenario := ""]
  sz <- unique(r[, .(scen, dist = size_label(size_dist, size_mean_pkts), mean_pkts = num(size_mean_pkts),
                     sweep = trimws(paste(scenario, scenario_key(.SD, c("size_dist", "size_mean_pkts")))))])
  d <- merge(d, unique(sz, by = "scen"), by = "scen")
  many <- d[, .(n = uniqueN(dist)), by = sweep][n >= 2]$sweep
  if (!length(many))
    return(skip_fig("F7", sprintf("these tables hold one size distribution per scenario (%s); F7 compares several",
                                  paste(unique(d$dist), collapse = "; "))))
  d <- d[sweep %in% many]
  d[, dist := factor(dist, levels = unique(dist[order(mean_pkts, dist)]))]
  ours <- d[order(sweep, dist), .(s = {
    w <- dcast(.SD[aqm_is_dt(aqm) | aqm_is_faq(aqm), .(load, role = ifelse(aqm_is_faq(aqm), "faq", "dt"), mean)], load ~ role,
               value.var = "mean")
    ratio <- if (all(c("dt", "faq") %in% names(w))) w[, mean(faq / dt, na.rm = TRUE)] else NA_real_
    paste0(if (length(many) > 1) paste0(sweep, ", ") else "", dist, ": ", sub("\\.$", "", faq_vs_dt(.SD, "load", "mean", "load", "loads")),
           if (!is.na(ratio)) sprintf(", FaQ's mean latency %.2f of DropTail's on average over loads", ratio) else "")
  }), by = .(sweep, dist)]
  load_plot(d, "F7", "mean latency (s)", out, facet = facet_scen_by(d, "dist", rows = "sweep"),
            ours = paste0(paste(ours$s, collapse = "; "), "."), w = 9, h = 2 + 3 * length(many))
}
