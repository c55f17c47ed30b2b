# Figs. 23 and 24: the stochastic model of Section 7.2 (model.R) fitted to FaQ's measured P(Favor | S = s) at
# one load, beside the model with the paper's P(Z = 1) for that load. Measured: FaQ's flows of that load
# (faq_model_flows: the flows every figure uses, as F21), one point per flow size s numbered as the paper's
# bursts number packets, the SYN being packet 1 (s = L + 1): the model's peaks sit at single sizes (burst
# boundaries), which F21's length classes would smear. One fit per scenario (IW 2 and IW 10 must never share a
# curve), each with the bursts of its own IW (both lines of an IW 10 panel are the model with IW 10's bursts),
# and an interval on its P(Z = 1) (fit_favor_panel).
# The paper gives P(Z = 1) (0.25 at load 0.25, 0.7 at 0.85) but no s1 or s2; its line here uses the bowl of
# Fig. 21 that the paper's phase #2 names, PAPER_S1 = 10 and PAPER_S2 = 100 (model.R).

# Sizes the model lines are drawn at: every integer up to 1024 (the slow-start peaks), log-spaced beyond.
model_sizes <- function(smax) {
  smax <- max(1, smax)
  sort(unique(c(seq_len(min(smax, 1024)), if (smax > 1024) round(exp(seq(log(1024), log(smax), length.out = 200))))))
}

fit_text <- function(f) {
  if (f$status != "fit") return(sprintf("insufficient data for a fit (%s)", f$note))
  sprintf("IW %g: fitted P(Z = 1) = %.2f [%.2f, %.2f] (%s), s1 = %d%s, s2 = %d, weighted RMS residual %.3f, %.0f %% of the variation across sizes explained, on %d flows of %d sizes",
          f$iw, f$p_z1, f$low, f$high, f$interval, as.integer(f$s1),
          if (f$s1 < f$s_min) sprintf(" (below the shortest flow measured, %g packets)", f$s_min) else "",
          as.integer(f$s2), f$residual, 100 * f$explained, as.integer(f$flows), as.integer(f$sizes))
}

model_fig <- function(id, rho, paper_p_z1) function(t, out) {
  if (!nrow(t$runs[aqm_is_faq(aqm) & abs(num(load) - rho) < 1e-9])) return(skip_fig(id, sprintf("no FaQ run at load %g", rho)))
  fl <- faq_model_flows(t, rho)
  if (!nrow(fl)) return(skip_fig(id, sprintf("no FaQ flow in the metrics at load %g (valid runs, finished under every AQM)", rho)))
  meas <- fl[, favor_by_size(.SD), by = scen]
  if (!nrow(meas)) return(skip_fig(id, sprintf("no favor trace in FaQ's runs at load %g", rho)))
  paper_series <- sprintf("model, paper's P(Z = 1) = %g", paper_p_z1)
  keys <- c("FaQ measured", "model, fitted", paper_series)
  per_scen <- lapply(split(meas, by = "scen"), function(m) {
    x <- fl[scen == m$scen[1]]
    iw <- num(x$iw[1])
    f <- fit_favor_panel(x, iw = iw)
    s <- model_sizes(max(m$s))
    lines <- data.table(series = paper_series, s = s, p = favor_model(s, paper_p_z1, PAPER_S1, PAPER_S2, iw = iw),
                        p_z1 = paper_p_z1, p_z1_low = NA_real_, p_z1_high = NA_real_, s1 = PAPER_S1, s2 = PAPER_S2, iw = iw,
                        residual = model_gof(m, favor_model(m$s, paper_p_z1, PAPER_S1, PAPER_S2, iw = iw))$residual)
    if (f$status == "fit")
      lines <- rbind(data.table(series = "model, fitted", s = s, p = favor_model(s, f$p_z1, f$s1, f$s2, iw = iw), p_z1 = f$p_z1,
                                p_z1_low = f$low, p_z1_high = f$high, s1 = f$s1, s2 = f$s2, iw = iw, residual = f$residual), lines)
    lines[, `:=`(scen = m$scen[1], flows = NA_integer_, runs = NA_integer_)]
    runs <- uniqueN(x$run_id)
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
    labs(x = "flow size s (packets, the SYN counted as packet 1; log scale)", y = "P(Favor | S = s), Eq. 5", title = fig_title(id),
         caption = paste0("points: one per flow size (area: flows); lines: the model of Sec. 7.2 (p_ca = 0.7)\n", n)) +
    theme_favorlab()
  save_fig(p, out, id, data = d, caption = fig_caption(id, paste0(paste(sapply(per_scen, `[[`, "text"), collapse = ". "), "."), n))
}
fig_F23 <- model_fig("F23", 0.25, 0.25)
fig_F24 <- model_fig("F24", 0.85, 0.7)
