# Sources every analysis R file next to this one.
here <- local({ a <- commandArgs(FALSE); f <- sub("^--file=", "", a[grep("^--file=", a)]); if (length(f)) dirname(normalizePath(f)) else getwd() })
if (!exists("favorlab_R_dir")) favorlab_R_dir <- here
for (f in c("metrics.R", "load.R", "theme.R", "figtext.R", "fig_latency.R", "fig_load.R", "fig_length.R", "model.R", "fig_model.R", "fig_pairs.R", "fig_scenarios.R", "fig_sizes.R", "fig_persistent.R", "fig_chain.R", "fig_synflood.R", "verdict_lib.R", "ranking_lib.R"))
  source(file.path(favorlab_R_dir, f))
# What became of each figure: drawn (with the counts its caption states) or not drawn and why. figures.R
# writes it as figures/index.csv; the report shows it as the figure index.
FIG_INDEX <- new.env()
fig_record <- function(id, status, detail) assign(id, list(status = status, detail = detail), envir = FIG_INDEX)
skip_fig <- function(id, why) { message(sprintf("skip %s: %s", id, why)); fig_record(id, "not drawn", why); invisible(NULL) }
parse_args <- function(names) {
  a <- commandArgs(TRUE); v <- list()
  for (n in names) { i <- match(paste0("--", n), a); if (is.na(i) || i == length(a)) stop(sprintf("missing --%s", n)); v[[n]] <- a[i + 1] }
  v
}
# --name VALUE when given, else NULL
opt_arg <- function(name) {
  a <- commandArgs(TRUE); i <- match(paste0("--", name), a)
  if (is.na(i)) return(NULL)
  if (i == length(a)) stop(sprintf("--%s needs a value", name))
  a[i + 1]
}
