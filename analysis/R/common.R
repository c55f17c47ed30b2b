# Sources every analysis library next to this one: each .R file of the directory but this one and the
# commands (a command starts with "#!", the Rscript line, and runs as `Rscript analysis/R/<name>.R`).
# Libraries only define functions and constants, so the order they are sourced in does not matter.
here <- local({ a <- commandArgs(FALSE); f <- sub("^--file=", "", a[grep("^--file=", a)]); if (length(f)) dirname(normalizePath(f)) else getwd() })
if (!exists("favorlab_R_dir")) favorlab_R_dir <- here
is_command <- function(path) startsWith(readLines(path, n = 1L, warn = FALSE)[1], "#!")
r_libraries <- function(dir = favorlab_R_dir) {
  files <- sort(list.files(dir, pattern = "[.]R$", full.names = TRUE), method = "radix")
  files[basename(files) != "common.R" & !vapply(files, is_command, TRUE)]
}
for (f in r_libraries()) source(f)
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
