# Reading the extraction tables: TABLES/<run_id>/{flows.csv, run.csv} (analysis/README.md).
suppressPackageStartupMessages(library(data.table))

# The pipeline's run ids (contract/rundir.py RUN_ID_PATTERN, workflow/rules/common.smk's wildcard
# constraint; a test holds the two equal). Only such names become paths here.
RUN_ID_RE <- "[A-Za-z0-9.-]+_[a-z0-9_-]+_load[0-9.]+_iw[0-9]+_rep[0-9]+"
# A tables directory read without a run list (by hand, the tests): any plain name, never a space, a shell
# metacharacter or a path separator.
TABLE_DIR_RE <- "[A-Za-z0-9][A-Za-z0-9._-]*"
is_run_id <- function(x, re = RUN_ID_RE) grepl(paste0("^(", re, ")$"), x)

# Every file is read with fread(file = ...): given as its first argument, a string that is not an existing
# file and holds a space is run as a shell command by data.table, and the paths here come from a results
# bundle someone else made.
read_csv_file <- function(path, ...) fread(file = path, ...)

# The run ids to read: runs_file (one id a line, written by the pipeline: analysis-runs.txt), every one a run
# id of the pipeline; without it, the plain-named directories of dir that hold a run.csv.
table_runs <- function(dir, runs_file = NULL) {
  present <- list.dirs(dir, recursive = FALSE, full.names = FALSE)
  if (!is.null(runs_file)) {
    if (!file.exists(runs_file)) stop(sprintf("run list %s does not exist; the pipeline writes it (rule analysis_runs)", runs_file))
    ids <- if (file.size(runs_file) > 0)
      read_csv_file(runs_file, sep = "\n", header = FALSE, colClasses = "character", quote = "", strip.white = FALSE)[[1]]
    else character()
    ids <- ids[!is.na(ids) & ids != ""]
    bad <- ids[!is_run_id(ids)]
    if (length(bad)) stop(sprintf("run list %s: %s is not a run id of the pipeline (%s); fix: list run ids only",
                                  runs_file, encodeString(bad[1], quote = '"'), RUN_ID_RE))
    lacking <- ids[!file.exists(file.path(dir, ids, "run.csv"))]
    if (length(lacking)) stop(sprintf("no run.csv for run %s under %s; run `python -m analysis.extract --run RUNDIR --out %s/<run_id>`",
                                      lacking[1], dir, dir))
  } else {
    ids <- present[is_run_id(present, TABLE_DIR_RE)]
    ids <- ids[file.exists(file.path(dir, ids, "run.csv"))]
  }
  # the order list.files gave when every run.csv under dir was read
  ids <- sort(ids)
  ignored <- setdiff(present, ids)
  if (length(ignored)) message(sprintf("%d table director%s not among the runs analysed, ignored", length(ignored),
                                       if (length(ignored) == 1) "y" else "ies"))
  ids
}

read_tables <- function(dir, runs_file = NULL) {
  if (!dir.exists(dir)) stop(sprintf("tables directory %s does not exist; run `python -m analysis.extract` first", dir))
  ids <- table_runs(dir, runs_file)
  if (!length(ids)) stop(sprintf("no run.csv under %s; run `python -m analysis.extract --run RUNDIR --out %s/<run_id>`", dir, dir))
  # each table's run is the directory it was read from (an id checked above), whatever its rows say
  one <- function(id, f, ...) {
    p <- file.path(dir, id, f)
    if (!file.exists(p)) return(NULL)
    d <- read_csv_file(p, ...)
    if (!nrow(d)) return(NULL)
    if ("run_id" %in% names(d)) d[, run_id := id]
    d
  }
  runs <- rbindlist(lapply(ids, one, "run.csv", colClasses = list(character = "invalid_reasons")), fill = TRUE)
  fl <- rbindlist(lapply(ids, one, "flows.csv", colClasses = "character"), fill = TRUE)
  # persistent.csv: the persistent scenario's iperf3 streams (tables without the file have none)
  pers <- rbindlist(lapply(ids, one, "persistent.csv", colClasses = "character"), fill = TRUE)
  assemble_tables(runs, fl, pers)
}

# The table arguments of the R scripts: --tables DIR, and --runs FILE where the pipeline gives its run list.
tables_arg <- function(a) read_tables(a$tables, opt_arg("runs"))

# runs (run.csv rows) and flows (flows.csv rows) -> the tables every figure and claim reads: each flow
# carries its run's AQM, load, replication, validity and scenario key.
assemble_tables <- function(runs, fl, pers = data.table()) {
  runs <- with_scenario(runs)
  keep <- c("run_id", "aqm", "load", "iw", "profile", "replication", "bottleneck_mbps", "buffer_pkts", "valid",
            "scenario", "realized_load", SCENARIO_COLS, "scen", "schedule_id")
  cols <- unique(intersect(keep, names(runs)))
  if (nrow(fl)) fl <- merge(fl, runs[, cols, with = FALSE], by = "run_id")
  if (nrow(pers)) pers <- merge(pers, runs[, cols, with = FALSE], by = "run_id")
  list(runs = runs, flows = fl, invalid = runs[valid != 1], persistent = pers)
}

# What makes two runs comparable apart from AQM, load and replication (analysis/claims.yaml, "scenario").
SCENARIO_COLS <- c("scenario", "topology", "bottleneck_mbps", "buffer_pkts", "iw", "profile", "cc", "size_dist", "size_mean_pkts",
                   "dataplane", "hops", "aqm_hops", "flood_x", "http_connections", "settings")

# Tables whose run.csv lacks some scenario columns get what can be derived (dataplane from the AQM's
# name, topology from the scenario) and "" for the rest, so they still group consistently.
with_scenario <- function(runs) {
  runs <- copy(runs)
  if (!"topology" %in% names(runs)) runs[, topology := if ("scenario" %in% names(runs)) as.character(scenario) else "dumbbell"]
  if (!"scenario" %in% names(runs)) runs[, scenario := topology]
  if (!"dataplane" %in% names(runs)) runs[, dataplane := aqm_dataplane(aqm)]
  for (c in SCENARIO_COLS) if (!c %in% names(runs)) runs[, (c) := ""]
  # fread reads a column empty in every run (a dumbbell's hops, aqm_hops) as NA: "" as in run.csv, or the
  # key would end in "NA NA" and differ from the key of the same runs in tables without those columns
  for (c in SCENARIO_COLS) runs[, (c) := fifelse(is.na(get(c)), "", as.character(get(c)))]
  runs <- with_settings(runs)
  runs[, scen := scenario_key(.SD)]
  runs
}

# How a run was measured, where runs that would be pooled disagree on it: the measurement window (warm-up
# and duration, run.csv's window_start_s/window_end_s) across a scenario, whose loads and replications are
# pooled, and the schedule within one (scenario, load, replication), whose AQMs are paired flow by flow: its
# seed and its file's hash (run.csv's schedule_sha256; tables without it say nothing against a hash). Runs
# made with other settings (a run kept from an earlier version of the config, or a config with another
# schedule under the same labels) then form a scenario of their own, its key naming the settings, and are
# never pooled or paired with the others silently. Where the runs agree the column is empty and the key is
# the scenario's alone. The chain's runs are paired run by run, not flow by flow: chain_pairs (fig_chain.R)
# refuses a DropTail/FaQ pair whose seeds or windows differ and says so.
# schedule_id, the schedule a run replayed (seed, window, hash), is what the flows carry for pairing to check
# (same_schedule, verdict_pairing.R); the chain's is empty: its schedule file is written by its reference
# user as the flows happen (a closed loop), so its DropTail and FaQ files differ by design.
with_settings <- function(runs) {
  runs[, `:=`(settings = "", schedule_id = "")]
  col <- function(c) if (c %in% names(runs)) fifelse(is.na(runs[[c]]), "", as.character(runs[[c]])) else rep("", nrow(runs))
  if (!nrow(runs)) return(runs)
  runs[, `:=`(.base = scenario_key(.SD), .window = paste0("window ", col("window_start_s"), "-", col("window_end_s"), "s"),
              .seed = paste0("seed ", col("seed")), .hash = substr(col("schedule_sha256"), 1, 12))]
  runs[topology != "chain", schedule_id := paste0(.seed, " ", .window, fifelse(.hash == "", "", paste0(" schedule ", .hash)))]
  runs[topology == "chain", `:=`(.window = "", .seed = "", .hash = "")]
  runs[, .nw := uniqueN(.window), by = .base]
  runs[.nw > 1, settings := .window]
  same_schedule <- c(".base", "settings", intersect(c("load", "replication"), names(runs)))
  runs[, `:=`(.ns = uniqueN(.seed), .nh = uniqueN(.hash[.hash != ""])), by = same_schedule]
  runs[.ns > 1, settings := trimws(paste(settings, .seed))]
  runs[.nh > 1, settings := trimws(paste(settings, "schedule", .hash))]
  split <- runs[settings != ""]
  if (nrow(split))
    message(sprintf("runs measured with different settings are not pooled (each set a scenario of its own): %s",
                    paste(sprintf("%s (%s)", split$run_id, split$settings), collapse = ", ")))
  runs[, c(".base", ".window", ".seed", ".hash", ".nw", ".ns", ".nh") := NULL]
  runs
}

# One readable key per scenario, e.g. "dumbbell 10Mb/s buf8 IW2 paper/reno pareto-mean30 kernel" (a chain's adds
# its length and where its AQM sits: "... kernel 5hops AQM@hop1"; a run under a SYN flood "... SYN flood 1x"; the HTTP
# workload's "... HTTP closed loop 1conn/path", the replay's nothing); `drop` leaves
# axes out (the buffer of a buffer sweep, the IW of an IW sweep). It opens with the scenario's name
# (persistent, chain), or the topology's where the scenario is just its topology (dumbbell).
scenario_key <- function(d, drop = character()) {
  v <- function(c) if (c %in% drop || !c %in% names(d)) "" else as.character(d[[c]])
  tag <- function(x, pre = "", post = "") ifelse(x == "", "", paste0(pre, x, post))
  name <- ifelse(v("scenario") == "" | v("scenario") == v("topology"), v("topology"), v("scenario"))
  key <- paste(name, tag(v("bottleneck_mbps"), post = "Mb/s"), tag(v("buffer_pkts"), "buf"), tag(v("iw"), "IW"),
               paste0(v("profile"), tag(v("cc"), "/")), paste0(v("size_dist"), tag(v("size_mean_pkts"), "-mean")),
               v("dataplane"), tag(v("hops"), post = "hops"), tag(v("aqm_hops"), "AQM@hop"),
               tag(v("flood_x"), "SYN flood ", "x"), tag(v("http_connections"), "HTTP closed loop ", "conn/path"),
               v("settings"))
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

# The AQM names that play DropTail's and FaQ's sides of every comparison. An A/A replay (analysis/aa.py,
# verdict.R --roles) gives the sides to two names of one qdisc (config/aqms.yaml twin_of) for one verdict.
VERDICT_ROLES <- list(droptail = c("droptail", "dt", "pfifo", "fifo", "p4-droptail"),
                      favorqueue = c("favor", "favorqueue", "faq", "p4-favorqueue"))
verdict_roles <- function() getOption("favorlab.verdict_roles", VERDICT_ROLES)
aqm_is_dt <- function(a) tolower(a) %in% verdict_roles()$droptail
aqm_is_faq <- function(a) tolower(a) %in% verdict_roles()$favorqueue
# "droptail=NAME,favorqueue=NAME" (verdict.R --roles) -> the two sides, each one name
parse_roles <- function(text) {
  kv <- strsplit(strsplit(text, ",", fixed = TRUE)[[1]], "=", fixed = TRUE)
  roles <- setNames(lapply(kv, function(x) tolower(x[2])), vapply(kv, `[`, "", 1))
  if (!setequal(names(roles), names(VERDICT_ROLES)) || any(vapply(kv, length, 0L) != 2))
    stop(sprintf("--roles %s: give both sides, as droptail=NAME,favorqueue=NAME (the AQM keys of config/aqms.yaml)", text))
  roles[names(VERDICT_ROLES)]
}
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
  same_schedule(fl, c("scen", "load", "replication"), "common_flows")
  merge(fl, k, by = c("scen", "load", "replication", "flow_id"))
}
