# Like with like: the flows a claim or a figure compares, paired by schedule, cut to a scope, a sweep or a
# measurement window, and what of them never finished.

# Flows of a and b (flow tables) paired by schedule: same scenario key, load, replication and flow id, and
# the same schedule (schedule_id: seed, window and schedule file hash; same_schedule refuses pairs of two
# schedules). Columns of a get ".a", of b ".b". Only flows present in both are kept: in-metric flows
# (complete, inside the measurement window) in valid runs, so each side is judged on exactly the same flows.
PAIR_COLS <- c("L", "R", "RTO", "FR", "syn_retrans", "syn_drops_bneck", "latency_s", "bneck_in", "bneck_out", "drops",
               "qdelay_mean_s", "goodput_bps", "fav_favored_data", "fav_pushout_victim", "fav_drop_favored",
               "fav_drop_standard", "start_s", "run_id")
pair_flows <- function(a, b, by = c("scen", "load", "replication")) {
  ids <- c(by, "schedule_id", "run_id")
  same_schedule(rbind(a[, intersect(ids, names(a)), with = FALSE], b[, intersect(ids, names(b)), with = FALSE], fill = TRUE),
                by, "pair_flows")
  cols <- intersect(PAIR_COLS, intersect(names(a), names(b)))
  pairs <- merge(a[, c(by, "flow_id", cols), with = FALSE], b[, c(by, "flow_id", cols), with = FALSE],
                 by = c(by, "flow_id"), suffixes = c(".a", ".b"))
  # numbers once here, not in every bootstrap resample
  for (col in grep("\\.(a|b)$", names(pairs), value = TRUE)) if (!startsWith(col, "run_id")) set(pairs, j = col, value = num(pairs[[col]]))
  pairs[, L := L.a]
  pairs[]
}
# Flows compared flow by flow (paired, or kept where every AQM has them) must be of one schedule in each
# group `by`: the same flow id in two schedules is two unrelated flows. Runs compared schedule by schedule
# (C8, C20, C21: one statistic per run, DropTail's against FaQ's) are checked the same way. Where runs of one group replayed
# different schedules (schedule_id, load.R with_settings) this stops and names them, rather than pairing
# them or dropping them unsaid. An empty schedule_id (tables without the columns, the chain) is unknown and
# never refused.
same_schedule <- function(flows, by, what) {
  if (!nrow(flows) || !all(c("schedule_id", "run_id", by) %in% names(flows))) return(invisible(TRUE))
  ids <- unique(flows[!is.na(schedule_id) & schedule_id != "", c(by, "schedule_id", "run_id"), with = FALSE])
  # seed and window must agree; the file hash where both runs' tables have one
  ids[, `:=`(.settings = sub(" schedule .*$", "", schedule_id), .hash = sub("^.*schedule ", "", fifelse(grepl(" schedule ", schedule_id), schedule_id, "")))]
  clash <- ids[, if (uniqueN(.settings) > 1 || uniqueN(.hash[.hash != ""]) > 1) .SD, by = by]
  if (!nrow(clash)) return(invisible(TRUE))
  first <- clash[clash[1], on = by]
  stop(sprintf(paste("%s: runs %s share %s but replayed different schedules (%s), so their flow ids name different flows;",
                     "fix: analyse each config's results in a tables directory of its own, or rerun with one schedule"),
               what, paste(first$run_id, collapse = ", "), paste(by, unlist(first[1, by, with = FALSE]), sep = " ", collapse = ", "),
               paste(unique(first$schedule_id), collapse = " / ")), call. = FALSE)
}
# One side of a pair table under the names metrics.R reads (a list: metrics take columns with `$`; no copy).
pair_side <- function(pairs, which) {
  cols <- grep(paste0("\\.", which, "$"), names(pairs), value = TRUE)
  setNames(as.list(pairs)[cols], sub(paste0("\\.", which, "$"), "", cols))
}
# DropTail's mean latency minus FaQ's on a pair table (positive: FaQ faster).
mean_latency_gain <- function(pairs) latency_mean(pair_side(pairs, "a")) - latency_mean(pair_side(pairs, "b"))
# The same flows with the same outcome under both AQMs: a pairing error or one run given twice.
identical_sides <- function(pairs) nrow(pairs) > 0 && isTRUE(all(pairs$latency_s.a == pairs$latency_s.b)) &&
  (!"drops.a" %in% names(pairs) || isTRUE(all(pairs$drops.a == pairs$drops.b)))

# The Table 1 scenarios (paper Section 4): the dumbbell's web traffic with Pareto sizes of mean 30 packets,
# drawn as ns-2's Pareto of the second kind (size_dist lomax, docs/sizes.md), at 10 Mb/s with an 8-packet
# buffer or at 100 Mb/s with 83 packets. Pareto I runs (size_dist pareto) are not Table 1: they have no flow
# under 7 packets, so the paper's small-flow statements cannot be tested on them; they stay a scenario of
# their own. The baseline claims and the figures of
# Sections 5.1, 5.2, 6 and 7 are about them; a config's other sections (the buffer sweep, other size
# distributions, persistent flows) have figures and claims of their own and must not be pooled in. Tables
# without one of these columns have "" there and count as Table 1.
is_table1 <- function(rows) {
  scenario <- if ("scenario" %in% names(rows)) as.character(rows$scenario) else rep("", nrow(rows))
  mbps <- num(rows$bottleneck_mbps); buffer <- num(rows$buffer_pkts); mean_pkts <- num(rows$size_mean_pkts)
  flood <- if ("flood_x" %in% names(rows)) num(rows$flood_x) else rep(NA_real_, nrow(rows))   # a SYN flood is not Table 1
  scenario %in% c("dumbbell", "") & as.character(rows$size_dist) %in% c("lomax", "") & (is.na(mean_pkts) | mean_pkts == 30) &
    (is.na(buffer) | (mbps %in% 10 & buffer %in% 8) | (mbps %in% 100 & buffer %in% 83)) & (is.na(flood) | flood == 0)
}

# The tables cut to the runs a figure is about (analysis/figures.yaml `scope`): "table1" keeps the Table 1
# scenarios' runs in every table that has a run_id; no scope keeps everything.
scope_tables <- function(tables, scope) {
  if (is.null(scope)) return(tables)
  if (scope != "table1") stop(sprintf("unknown figure scope %s (analysis/figures.yaml): table1 or none", scope))
  keep <- tables$runs[is_table1(tables$runs)]$run_id
  lapply(tables, function(x) if (is.data.table(x) && "run_id" %in% names(x)) x[run_id %in% keep] else x)
}
# The flows of a sweep along `axis` (buffer size, IW) that compare like with like: within one scenario but
# the axis, only the schedules (load, replication) run at every value of the axis, so a value measured at
# more loads than the others does not pool loads they lack (a config's sections may sweep at one load).
sweep_schedules <- function(flows, axis) {
  flows <- copy(flows)
  flows[, sweep := scenario_key(.SD, axis)]
  flows[, sched := paste(load, replication)]
  same_schedule(flows, c("sweep", "load", "replication"), sprintf("the %s sweep", axis))
  values <- flows[, .(n = uniqueN(get(axis))), by = sweep]
  per_schedule <- flows[, .(n = uniqueN(get(axis))), by = .(sweep, sched)]
  keep <- merge(per_schedule, values, by = "sweep")[n.x == n.y & n.y >= 2, .(sweep, sched)]
  merge(flows, keep, by = c("sweep", "sched"))
}
# Scheduled flows in the measurement window that did not finish, per AQM (count, share of flows, of bytes).
censoring <- function(tables, scen_key = NULL) {
  flows <- tables$flows
  if (!nrow(flows) || !"in_window" %in% names(flows)) return(data.table())
  flows <- flows[valid == 1 & in_window == "1" & direction %in% c("forward", "")]
  if (!is.null(scen_key)) flows <- flows[scen == scen_key]
  if (!nrow(flows)) return(data.table())
  flows[, .(flows = .N, unfinished = sum(complete != "1"), unfinished_share = mean(complete != "1"),
            unfinished_bytes_share = sum(num(size_bytes)[complete != "1"]) / sum(num(size_bytes))),
        by = .(scen, aqm, load = num(load), length_class = length_class(L))]
}
censoring_note <- function(tables, scen_key, aqms) {
  counts <- censoring(tables, scen_key)
  if (!nrow(counts)) return("")
  counts <- counts[aqm %in% aqms, .(unfinished = sum(unfinished), flows = sum(flows)), by = aqm]
  paste0("unfinished in window (left out): ", paste(sprintf("%s %d of %d", counts$aqm, counts$unfinished, counts$flows), collapse = ", "))
}
# All flows scheduled in the window of valid runs, finished or not (C11: SYN losses must not be censored).
window_flows <- function(tables) {
  if (!nrow(tables$flows) || !"in_window" %in% names(tables$flows)) return(metric_flows(tables))
  # a connection joins its schedule row through the header of its first data segment: one whose every SYN
  # was lost never sends it and stays unjoined (its losses are in run.csv's ours_syn_drops_bneck)
  flows <- tables$flows[valid == 1 & in_window == "1" & seen == "1"]
  if ("direction" %in% names(flows)) flows <- flows[direction %in% c("forward", "")]
  flows
}
