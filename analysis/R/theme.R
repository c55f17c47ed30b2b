suppressPackageStartupMessages(library(ggplot2))
theme_favorlab <- function() theme_bw(base_size = 11) + theme(legend.position = "bottom", panel.grid.minor = element_blank())
# Colours keyed by the AQM key of the tables (stable whatever the legend says); the legend shows aqms.yaml's
# paper_name (figtext.R's aqm_label). One colour per AQM config/aqms.yaml names, so five or seventeen AQMs on one
# figure (F3, F4: DropTail, FaQ, CHOKe, LAS, RuN2C in the paper) never share one; a key missing here is grey.
aqm_colours <- c(droptail = "#d95f02", favor = "#1b9e77", droptail_twin = "#fdae6b", favor_twin = "#74c476", choke = "#e7298a", las = "#e6ab02", run2c = "#253494",
                 favourtail = "#7570b3", favor_burst1 = "#0b4f3c", riops = "#fb9a99", qsdrr = "#6a3d9a", tdrr = "#cab2d6", red = "#a50f15", sfb = "#8c6d31", pie = "#17becf", codel = "#bcbd22",
                 fq_codel = "#66a61e", cake = "#000000", sfq = "#b2df8a", fq = "#a6cee3",
                 "p4-droptail" = "#a6761d", "p4-favorqueue" = "#1f78b4")
# The order AQMs are listed in (legends, tables, the ranking): DropTail and FaQ first, then the paper's other
# comparators (CHOKe, LAS, RuN2C), then the rest as above; keys not listed follow, alphabetically.
AQM_ORDER <- names(aqm_colours)
aqm_order <- function(keys) { keys <- unique(as.character(keys)); keys[order(match(keys, AQM_ORDER, nomatch = length(AQM_ORDER) + 1L), keys)] }
aqm_scale <- function() scale_colour_manual(values = aqm_colours, breaks = aqm_order, labels = aqm_label, na.value = "grey50",
                                            name = "AQM")
# Flow length on a log axis as the paper draws it; length classes sit at their flows' geometric mean length.
LENGTH_BREAKS <- c(1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000)
scale_length <- function() scale_x_log10(breaks = LENGTH_BREAKS, labels = function(b) format(b, scientific = FALSE, trim = TRUE))
LENGTH_LAB <- "flow length (packets, log scale)"
# Each figure's data goes beside it (<name>.csv): the numbers a reader checks the drawing against, the
# paper's AQM name beside the key; its caption (figtext.R) goes to <name>.caption.txt for the report.
save_fig <- function(p, out, name, w = 6, h = 4, data = p$data, caption = NULL) {
  for (ext in c("png", "pdf")) ggsave(file.path(out, paste0(name, ".", ext)), p, width = w, height = h, dpi = 120)
  if (is.data.frame(data) && nrow(data)) {
    data <- as.data.table(data)
    if ("aqm" %in% names(data)) data <- copy(data)[, aqm_name := aqm_label(aqm)]
    fwrite(data, file.path(out, paste0(name, ".csv")))
  }
  if (!is.null(caption)) writeLines(caption, file.path(out, paste0(name, ".caption.txt")))
  n <- if (!is.null(caption) && grepl("n = ", caption)) sub("\\.?$", "", sub("(?s)^.*?(n = )", "\\1", caption, perl = TRUE)) else ""
  fig_record(name, "drawn", n)             # common.R, which sources this file
  message("wrote ", file.path(out, paste0(name, ".png")))
}
# One panel per scenario where a figure holds several (IW 2 and IW 10 must never share a curve).
facet_scen <- function(d) if (length(unique(d$scen)) > 1) facet_wrap(~ scen, labeller = label_wrap_gen(40)) else NULL
# One panel per value of `by` (an RTT class, a size distribution); with several scenarios in `rows`, one row
# of panels per scenario, so no panel mixes two (a grid's panels are narrow: overlapping tick labels dropped).
facet_scen_by <- function(d, by, rows = "scen", ncol = 3) {
  if (uniqueN(d[[rows]]) > 1) list(facet_grid(reformulate(by, rows), labeller = label_wrap_gen(30)),
                                   guides(x = guide_axis(check.overlap = TRUE)))
  else facet_wrap(reformulate(by), ncol = ncol)
}
# A dashed horizontal line with the paper's value, when the paper gives one. Its label sits at the left edge:
# -Inf, or 0 on a log x axis (log10(0) is the edge; log10(-Inf) is NaN and the label would be dropped).
paper_line <- function(y, label, logx = FALSE) list(geom_hline(yintercept = y, linetype = "dashed", colour = "grey40"),
  annotate("text", x = if (logx) 0 else -Inf, y = y, label = paste("paper:", label), hjust = -0.05, vjust = -0.4, size = 3, colour = "grey30"))
# mean and 95% CI over replications
ci95 <- function(x) { x <- x[!is.na(x)]; n <- length(x); m <- mean(x)
  h <- if (n > 1) qt(0.975, n - 1) * sd(x) / sqrt(n) else NA_real_; list(mean = m, lo = m - h, hi = m + h, n = n) }
