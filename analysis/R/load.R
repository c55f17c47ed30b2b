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
  # persistent.csv: the persistent scenario's iperf3 streams (tables from before it existed have none)
  pf <- file.path(dirname(runs_f), "persistent.csv")
  pers <- rbindlist(lapply(pf[file.exists(pf)], function(f) { d <- fread(f, colClasses = "character"); if (nrow(d)) d else NULL }),
                    fill = TRUE)
  assemble_tables(runs, fl, pers)
}

# runs (run.csv rows) and flows (flows.csv rows) -> the tables every figure and claim reads: each flow
# carries its run's AQM, load, replication, validity and scenario key.
assemble_tables <- function(runs, fl, pers = data.table()) {
  runs <- with_scenario(runs)
  keep <- c("run_id", "aqm", "load", "iw", "profile", "replication", "bottleneck_mbps", "buffer_pkts", "valid",
            "scenario", "realized_load", SCENARIO_COLS, "scen")
  cols <- unique(intersect(keep, names(runs)))
  if (nrow(fl)) fl <- merge(fl, runs[, cols, with = FALSE], by = "run_id")
  if (nrow(pers)) pers <- merge(pers, runs[, cols, with = FALSE], by = "run_id")
  list(runs = runs, flows = fl, invalid = runs[valid != 1], persistent = pers)
}

# What makes two runs comparable apart from AQM, load and replication (analysis/claims.yaml, "scenario").
SCENARIO_COLS <- c("scenario", "topology", "bottleneck_mbps", "buffer_pkts", "iw", "profile", "cc", "size_dist", "size_mean_pkts",
                   "dataplane", "hops", "aqm_hops", "flood_x")

# Tables extracted before run.csv carried every scenario column get what can be derived (dataplane from
# the AQM's name, topology from the scenario) and "" for the rest, so they still group consistently.
with_scenario <- function(runs) {
  runs <- copy(runs)
  if (!"topology" %in% names(runs)) runs[, topology := if ("scenario" %in% names(runs)) as.character(scenario) else "dumbbell"]
  if (!"scenario" %in% names(runs)) runs[, scenario := topology]
  if (!"dataplane" %in% names(runs)) runs[, dataplane := aqm_dataplane(aqm)]
  for (c in SCENARIO_COLS) if (!c %in% names(runs)) runs[, (c) := ""]
  # fread reads a column empty in every run (a dumbbell's hops, aqm_hops) as NA: "" as in run.csv, or the
  # key would end in "NA NA" and differ from the key of the same runs extracted before those columns
  for (c in SCENARIO_COLS) runs[, (c) := fifelse(is.na(get(c)), "", as.character(get(c)))]
  runs[, scen := scenario_key(.SD)]
  runs
}

# One readable key per scenario, e.g. "dumbbell 10Mb/s buf8 IW2 paper/reno pareto-mean30 kernel" (a chain's adds
# its length and where its AQM sits: "... kernel 5hops AQM@hop1"; a run under a SYN flood "... SYN flood 1x"); `drop` leaves
# axes out (the buffer of a buffer sweep, the IW of an IW sweep). It opens with the scenario's name
# (persistent, chain), or the topology's where the scenario is just its topology (dumbbell).
scenario_key <- function(d, drop = character()) {
  v <- function(c) if (c %in% drop || !c %in% names(d)) "" else as.character(d[[c]])
  tag <- function(x, pre = "", post = "") ifelse(x == "", "", paste0(pre, x, post))
  name <- ifelse(v("scenario") == "" | v("scenario") == v("topology"), v("topology"), v("scenario"))
  key <- paste(name, tag(v("bottleneck_mbps"), post = "Mb/s"), tag(v("buffer_pkts"), "buf"), tag(v("iw"), "IW"),
               paste0(v("profile"), tag(v("cc"), "/")), paste0(v("size_dist"), tag(v("size_mean_pkts"), "-mean")),
               v("dataplane"), tag(v("hops"), post = "hops"), tag(v("aqm_hops"), "AQM@hop"),
               tag(v("flood_x"), "SYN flood ", "x"))
  trimws(gsub(" +", " ", key))
}

# Flows of valid runs that enter the metrics: forward (through the AQM), complete, out of warm-up.
metric_flows <- function(t) {
  if (!nrow(t$flows)) return(data.table(aqm = character(), L = character(), latency_s = character(), run_id = character(),
                                         load = character(), replication = character(), flow_id = character(),
                                         scen = character()))
  f <- t$flows[valid == 1 & in_metrics == "1"]
  if ("direction" %in% names(f)) f <- f[direction %in% c("forward", "")]
  f
}

# The workload the schedules offered (F6): every forward flow scheduled in the measurement window, finished
# or not, once per schedule, though each AQM (buffer, IW, cc) of the schedule replays it. A schedule is
# (scenario, rate, sizes, load, replication), as orchestrate names it; it counts when one of its runs is valid.
SCHEDULE_COLS <- c("scenario", "bottleneck_mbps", "size_dist", "size_mean_pkts", "load", "replication")
offered_flows <- function(t) {
  f <- t$flows
  if (!nrow(f) || !"in_window" %in% names(f)) return(data.table())
  f <- f[valid == 1 & in_window == "1" & direction %in% c("forward", "")]
  by <- intersect(SCHEDULE_COLS, names(f))
  f[, schedule := do.call(paste, .SD), .SDcols = by]
  unique(f, by = c("schedule", "flow_id"))
}

aqm_is_dt <- function(a) tolower(a) %in% c("droptail", "dt", "pfifo", "fifo", "p4-droptail")
aqm_is_faq <- function(a) tolower(a) %in% c("favor", "favorqueue", "faq", "p4-favorqueue")
# The dataplane an AQM runs on: DropTail and FaQ are paired within one (kernel qdiscs, or the P4 switch).
aqm_dataplane <- function(a) ifelse(startsWith(tolower(a), "p4-"), "p4", "kernel")

# Like with like across AQMs: within each schedule (scenario, load, replication), only the flows that are
# in the metrics under every AQM of the scenario, so no AQM's numbers lose the flows it was slow on. A
# schedule where one AQM's run is invalid has no flow in common, so it is left out for every AQM.
common_flows <- function(fl) {
  if (!nrow(fl)) return(fl)
  n_aqm <- fl[, .(all = uniqueN(aqm)), by = scen]
  k <- fl[, .(n = uniqueN(aqm)), by = .(scen, load, replication, flow_id)]
  k <- merge(k, n_aqm, by = "scen")[n == all, .(scen, load, replication, flow_id)]
  merge(fl, k, by = c("scen", "load", "replication", "flow_id"))
}
