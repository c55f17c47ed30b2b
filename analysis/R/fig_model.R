# Figs. 23 and 24: the stochastic model of Section 7.2 (model.R) fitted to FaQ's measured P(Favor | S = s)
# at one load, beside the model with the paper's P(Z = 1) for that load. Measured: FaQ's flows of that load
# only, out of the flows every figure uses (common_flows of metric_flows, as F21), one point per flow size:
# the model's peaks sit at single sizes (burst boundaries), which F21's length classes would smear. One
# fit per scenario (IW 2 and IW 10 must never share a curve).
# The paper gives P(Z = 1) (0.25 at load 0.25, 0.7 at 0.85) but no s1 or s2; its line here uses the bowl of
# Fig. 21 that the paper's phase #2 names, PAPER_S1 = 10 and PAPER_S2 = 100 (model.R).

# Sizes the model lines are drawn at: every integer up to 1024 (the slow-start peaks), log-spaced beyond.
model_sizes <- function(smax) {
  smax <- max(1, smax)
  sort(unique(c(seq_len(min(smax, 1024)), if (smax > 1024) round(exp(seq(log(1024), log(smax), length.out = 200))))))
}
wrms <- function(y, m, w) sqrt(sum(w * (y - m)^2) / sum(w))

fit_text <- function(f) {
  if (f$status != "fit") return(sprintf("insufficient data for a fit (%s)", f$note))
  sprintf("fitted P(Z = 1) = %.2f, s1 = %d%s, s2 = %d, weighted RMS residual %.3f, on %d flows of %d sizes",
          f$p_z1, as.integer(f$s1), if (f$s1 < f$s_min) sprintf(" (below the shortest flow measured, %g packets)", f$s_min) else "",
          as.integer(f$s2), f$residual, as.integer(f$flows), as.integer(f$sizes))
}

model_fig <- function(id, rho, paper_p_z1) function(t, out) {
  at_rho <- function(x) abs(num(x) - rho) < 1e-9
  if (!nrow(t$runs[aqm_is_faq(aqm) & at_rho(load)])) return(skip_fig(id, sprintf("no FaQ run at load %g", rho)))
  fl <- common_flows(metric_flows(t))
  fl <- fl[aqm_is_faq(aqm) & at_rho(load)]
  if (!nrow(fl)) return(skip_fig(id, sprintf("no FaQ flow in the metrics at load %g (valid runs, finished under every AQM)", rho)))
  meas <- fl[, favor_by_size(.SD), by = scen]
  if (!nrow(meas)) return(skip_fig(id, sprintf("no favor trace in FaQ's runs at load %g", rho)))
  paper_series <- sprintf("model, paper's P(Z = 1) = %g", paper_p_z1)
  keys <- c("FaQ measured", "model, fitted", paper_series)
  per_scen <- lapply(split(meas, by = "scen"), function(m) {
    f <- fit_favor_model(m)
    s <- model_sizes(max(m$s))
    lines <- data.table(series = paper_series, s = s, p = favor_model(s, paper_p_z1, PAPER_S1, PAPER_S2),
                        p_z1 = paper_p_z1, s1 = PAPER_S1, s2 = PAPER_S2, residual = wrms(m$p, favor_model(m$s, paper_p_z1, PAPER_S1, PAPER_S2), m$flows))
    if (f$status == "fit")
      lines <- rbind(data.table(series = "model, fitted", s = s, p = favor_model(s, f$p_z1, f$s1, f$s2), p_z1 = f$p_z1,
                                s1 = f$s1, s2 = f$s2, residual = f$residual), lines)
    lines[, `:=`(scen = m$scen[1], flows = NA_integer_, runs = NA_integer_)]
    runs <- uniqueN(fl[scen == m$scen[1]]$run_id)
    txt <- sprintf("%s%s; paper: P(Z = 1) = %g, no s1 or s2 given (its line: s1 = %d, s2 = %d, weighted RMS residual %.3f here)",
                   if (uniqueN(meas$scen) > 1) paste0(m$scen[1], ": ") else "", fit_text(f), paper_p_z1, PAPER_S1, PAPER_S2,
                   lines[series == paper_series]$residual[1])
    list(lines = lines, text = txt, flows = f$flows, sizes = f$sizes, runs = runs)
  })
  lines <- rbindlist(lapply(per_scen, `[[`, "lines"))
  d <- rbind(meas[, .(scen, series = keys[1], s, p, flows, runs)], lines, fill = TRUE)
  d[, `:=`(aqm = "favor", load = rho, series = factor(series, levels = keys))]
  nruns <- sapply(per_scen, `[[`, "runs")
  n <- sprintf("n = %s flows of %s sizes from %s FaQ %s at load %g", span(sapply(per_scen, `[[`, "flows")),
               span(sapply(per_scen, `[[`, "sizes")), span(nruns), if (max(nruns) == 1) "run" else "runs", rho)
  cols <- setNames(c(aqm_colours[["favor"]], "black", "grey50"), keys)
  drawn <- keys %in% d$series                            # no fitted line when the data are insufficient
  p <- ggplot(d, aes(s, p, colour = series)) +
    geom_line(data = d[series != keys[1]], aes(linetype = series)) +
    geom_point(data = d[series == keys[1]], aes(size = flows), alpha = 0.6) +
    scale_colour_manual(values = cols, name = NULL) +
    scale_linetype_manual(values = setNames(c("solid", "solid", "dashed"), keys), guide = "none") +
    scale_size_area(max_size = 3, guide = "none") +
    guides(colour = guide_legend(override.aes = list(linetype = c(0, 1, 2)[drawn], shape = c(16, NA, NA)[drawn], size = 2))) +
    facet_scen(d) + scale_length() + coord_cartesian(ylim = c(0, 1)) +
    labs(x = LENGTH_LAB, y = "P(Favor | S = s), Eq. 5", title = fig_title(id),
         caption = paste0("points: one per flow size (area: flows); lines: the model of Sec. 7.2 (p_ca = 0.7)\n", n)) +
    theme_favorlab()
  save_fig(p, out, id, data = d, caption = fig_caption(id, paste0(paste(sapply(per_scen, `[[`, "text"), collapse = ". "), "."), n))
}
fig_F23 <- model_fig("F23", 0.25, 0.25)
fig_F24 <- model_fig("F24", 0.85, 0.7)
