# Reading the extraction tables: TABLES/<run_id>/{flows.csv, run.csv} (analysis/README.md).
suppressPackageStartupMessages(library(data.table))

read_tables <- function(dir) {
  if (!dir.exists(dir)) stop(sprintf("tables directory %s does not exist; run `python -m analysis.extract` first", dir))
  runs_f <- list.files(dir, pattern = "^run\\.csv$", recursive = TRUE, full.names = TRUE)
  if (!length(runs_f)) stop(sprintf("no run.csv under %s; run `python -m analysis.extract --run RUNDIR --out %s/<run_id>`", dir, dir))
  runs <- rbindlist(lapply(runs_f, fread, colClasses = list(character = "invalid_reasons")), fill = TRUE)
  fl <- rbindlist(lapply(file.path(dirname(runs_f), "flows.csv"), function(f) {
    d <- fread(f, colClasses = "character"); if (nrow(d)) d else NULL
  }), fill = TRUE)
  keep <- c("run_id", "aqm", "load", "iw", "profile", "replication", "bottleneck_mbps", "buffer_pkts", "valid", "scenario")
  if (nrow(fl)) fl <- merge(fl, runs[, intersect(keep, names(runs)), with = FALSE], by = "run_id")
  list(runs = runs, flows = fl, invalid = runs[valid != 1])
}

# Flows of valid runs that enter the metrics: forward (through the AQM), complete, out of warm-up.
metric_flows <- function(t) {
  if (!nrow(t$flows)) return(data.table(aqm = character(), L = character(), latency_s = character(), run_id = character()))
  f <- t$flows[valid == 1 & in_metrics == "1"]
  if ("direction" %in% names(f)) f <- f[direction %in% c("forward", "")]
  f
}

aqm_is_dt <- function(a) tolower(a) %in% c("droptail", "dt", "pfifo", "fifo", "p4-droptail")
aqm_is_faq <- function(a) tolower(a) %in% c("favor", "favorqueue", "faq", "p4-favorqueue")
# The dataplane an AQM runs on: DropTail and FaQ are paired within one (kernel qdiscs, or the P4 switch).
aqm_dataplane <- function(a) ifelse(startsWith(tolower(a), "p4-"), "p4", "kernel")
