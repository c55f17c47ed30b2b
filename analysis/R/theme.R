suppressPackageStartupMessages(library(ggplot2))
theme_favorlab <- function() theme_bw(base_size = 11) + theme(legend.position = "bottom", panel.grid.minor = element_blank())
aqm_colours <- c(droptail = "#d95f02", favor = "#1b9e77", favourtail = "#7570b3", choke = "#e7298a", fq_codel = "#66a61e")
# Each figure's data goes beside it (<name>.csv): the numbers a reader checks the drawing against.
save_fig <- function(p, out, name, w = 6, h = 4, data = p$data) {
  for (ext in c("png", "pdf")) ggsave(file.path(out, paste0(name, ".", ext)), p, width = w, height = h, dpi = 120)
  if (is.data.frame(data) && nrow(data)) fwrite(data, file.path(out, paste0(name, ".csv")))
  message("wrote ", file.path(out, paste0(name, ".png")))
}
# One panel per scenario where a figure holds several (IW 2 and IW 10 must never share a curve).
facet_scen <- function(d) if (length(unique(d$scen)) > 1) facet_wrap(~ scen, labeller = label_wrap_gen(40)) else NULL
# A dashed horizontal line with the paper's value, when the paper gives one.
paper_line <- function(y, label) list(geom_hline(yintercept = y, linetype = "dashed", colour = "grey40"),
  annotate("text", x = -Inf, y = y, label = paste("paper:", label), hjust = -0.05, vjust = -0.4, size = 3, colour = "grey30"))
# mean and 95% CI over replications
ci95 <- function(x) { x <- x[!is.na(x)]; n <- length(x); m <- mean(x)
  h <- if (n > 1) qt(0.975, n - 1) * sd(x) / sqrt(n) else NA_real_; list(mean = m, lo = m - h, hi = m + h, n = n) }
