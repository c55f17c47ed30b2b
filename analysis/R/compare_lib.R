# Two results compared (./favorlab compare A B, analysis/R/compare.R): the runs of A and B that replayed the
# same schedule, their flows paired flow by flow, and per scenario, load and AQM pair the difference B - A
# (and B / A) of each metric with the verdict's interval (boot_ci). docs/compare.md says what is paired and
# what the intervals carry.

# The metrics compared: each a function of one side of a pair table (metrics.R's formulas) and the flows it
# reads (functions, not the metrics' names: common.R sources the libraries in any order): "metric" (complete, out of warm-up: in_metrics) or "window" (every flow of the window that was
# seen, finished or not: a SYN loss must not be censored, as in the verdict's C11).
COMPARE_METRICS <- list(
  `mean latency (s)` = list(flows = "metric", f = function(s) latency_mean(s)),
  `mean latency, short flows (s)` = list(flows = "metric", f = function(s) latency_mean(list(latency_s = s$latency_s[is_short(s$L)]))),
  `drop ratio` = list(flows = "metric", f = function(s) drop_ratio(s)),
  `SYN loss ratio` = list(flows = "window", f = function(s) if (length(s$syn_retrans)) syn_loss_ratio(s) else NA_real_),
  `RTO ratio` = list(flows = "metric", f = function(s) if (length(s$RTO)) rto_ratio(s) else NA_real_))

# The AQM pairs: each AQM with itself where A and B share AQMs (those in one only are unpaired), else the
# one AQM of A with the one AQM of B (a DropTail result against a FaQ result).
compare_aqm_pairs <- function(aqms_a, aqms_b) {
  common <- intersect(aqms_a, aqms_b)
  if (length(common)) return(data.table(aqm_a = common, aqm_b = common))
  if (length(aqms_a) == 1 && length(aqms_b) == 1) return(data.table(aqm_a = aqms_a, aqm_b = aqms_b))
  stop(sprintf(paste("A holds the AQMs %s and B %s: none in common and not one each, so nothing pairs;",
                     "fix: compare results that share AQMs, or a result of one AQM with a result of one other"),
               paste(aqms_a, collapse = ", "), paste(aqms_b, collapse = ", ")), call. = FALSE)
}

# A run's schedule as pairing sees it: its seed and window (which must agree) and its schedule file's hash
# (which must agree where both tables carry one: an empty hash is unknown, as in same_schedule).
compare_schedule_parts <- function(runs) {
  id <- fifelse(is.na(runs$schedule_id), "", runs$schedule_id)
  data.table(settings = sub(" schedule .*$", "", id), hash = fifelse(grepl(" schedule ", id), sub("^.*schedule ", "", id), ""))
}

# Valid runs of A and B (run.csv rows after read_tables) matched per AQM pair on scenario key, load,
# replication and schedule. Returns list(matched: run pairs, unpaired: one row per run left out and why).
compare_match_runs <- function(runs_a, runs_b, pairs) {
  keep <- c("run_id", "aqm", "scen", "load", "replication", "valid", "topology")
  side <- function(r) cbind(r[, intersect(keep, names(r)), with = FALSE], compare_schedule_parts(r))
  a <- side(runs_a); b <- side(runs_b)
  unpaired <- rbind(
    a[valid != 1, .(side = "A", run_id, aqm, scen, load, replication, reason = "invalid run")],
    b[valid != 1, .(side = "B", run_id, aqm, scen, load, replication, reason = "invalid run")],
    a[valid == 1 & !aqm %in% pairs$aqm_a, .(side = "A", run_id, aqm, scen, load, replication, reason = "AQM not in B")],
    b[valid == 1 & !aqm %in% pairs$aqm_b, .(side = "B", run_id, aqm, scen, load, replication, reason = "AQM not in A")])
  # A chain's schedule is written by its reference user as the flows happen (a closed loop), so a flow id
  # names another flow in each of its runs: they cannot pair flow by flow.
  chain <- function(r) r$topology %in% "chain"
  closed <- "a chain (closed-loop schedule): its flow ids name different flows in each run"
  unpaired <- rbind(unpaired,
    a[valid == 1 & aqm %in% pairs$aqm_a & chain(a), .(side = "A", run_id, aqm, scen, load, replication, reason = closed)],
    b[valid == 1 & aqm %in% pairs$aqm_b & chain(b), .(side = "B", run_id, aqm, scen, load, replication, reason = closed)])
  a <- a[!chain(a)]; b <- b[!chain(b)]
  a <- merge(a[valid == 1], pairs, by.x = "aqm", by.y = "aqm_a")
  b <- merge(b[valid == 1], pairs, by.x = "aqm", by.y = "aqm_b")
  setnames(a, "aqm", "aqm_a"); setnames(b, "aqm", "aqm_b")
  m <- merge(a, b, by = c("aqm_a", "aqm_b", "scen", "load", "replication"), suffixes = c(".a", ".b"), all = TRUE)
  same <- !is.na(m$run_id.a) & !is.na(m$run_id.b) & m$settings.a == m$settings.b &
    (m$hash.a == "" | m$hash.b == "" | m$hash.a == m$hash.b)
  why <- function(other) fifelse(is.na(other), "no run of this scenario, load and replication on the other side",
                                 "the other side's run replayed another schedule (seed, window or schedule file)")
  lost <- m[!same]
  unpaired <- rbind(unpaired,
    lost[!is.na(run_id.a), .(side = "A", run_id = run_id.a, aqm = aqm_a, scen, load, replication, reason = why(run_id.b))],
    lost[!is.na(run_id.b), .(side = "B", run_id = run_id.b, aqm = aqm_b, scen, load, replication, reason = why(run_id.a))])
  list(matched = m[same, .(aqm_a, aqm_b, scen, load, replication, run_id.a, run_id.b)], unpaired = unpaired)
}

# The flows of A's and B's matched runs paired by flow id (pair_flows), and the flows of one side without a
# partner on the other (unfinished or out of the metrics there, or never scheduled there).
compare_pair_flows <- function(fa, fb, matched) {
  fa <- merge(fa, matched[, .(run_id = run_id.a, aqm_a, aqm_b)], by = "run_id")
  fb <- merge(fb, matched[, .(run_id = run_id.b, aqm_a, aqm_b)], by = "run_id")
  by <- c("aqm_a", "aqm_b", "scen", "load", "replication")
  pairs <- if (nrow(fa) && nrow(fb)) pair_flows(fa, fb, by) else data.table()
  key <- c(by, "flow_id")
  alone <- rbind(fa[!fb, on = key, c(key, "run_id"), with = FALSE][, side := "A"],
                 fb[!fa, on = key, c(key, "run_id"), with = FALSE][, side := "B"])
  list(pairs = pairs, alone = alone)
}

# verdict words of an interval of B - A
compare_verdict <- function(lo, hi) fifelse(is.na(lo) | is.na(hi), "not computable",
                                       fifelse(lo > 0, "B higher", fifelse(hi < 0, "B lower", "no difference shown")))

# One row per scenario, load, AQM pair and metric: A's and B's value on the paired flows, B - A and B / A,
# each with its 95 % interval (boot_ci: jackknife over 5+ replications, block bootstrap below).
compare_metric_rows <- function(pairs, window_pairs) {
  rows <- list()
  for (name in names(COMPARE_METRICS)) {
    m <- COMPARE_METRICS[[name]]
    p <- if (m$flows == "window") window_pairs else pairs
    if (!nrow(p)) next
    stat <- function(s) {
      va <- m$f(pair_side(s, "a")); vb <- m$f(pair_side(s, "b"))
      c(va, vb, vb - va, if (is.na(va) || va == 0) NA_real_ else vb / va)
    }
    for (g in split(p, by = c("scen", "load", "aqm_a", "aqm_b"))) {
      ci <- boot_ci(g, stat)
      rows[[length(rows) + 1]] <- data.table(
        scenario = g$scen[1], load = g$load[1], aqm_a = g$aqm_a[1], aqm_b = g$aqm_b[1], metric = name,
        runs = uniqueN(g$run_id.a), replications = uniqueN(g$replication), flows = nrow(g),
        a = ci$est[1], b = ci$est[2], diff = ci$est[3], diff_lo = ci$lo[3], diff_hi = ci$hi[3],
        ratio = ci$est[4], ratio_lo = ci$lo[4], ratio_hi = ci$hi[4],
        verdict = compare_verdict(ci$lo[3], ci$hi[3]), method = ci$method)
    }
  }
  out <- rbindlist(rows)
  if (nrow(out)) setorder(out, scenario, load, aqm_a, aqm_b)
  out
}

# Tables A and B (read_tables) -> list(rows: the metric rows, unpaired: runs and flows left out, and why).
compare_tables <- function(ta, tb) {
  aqms <- function(t) sort(unique(t$runs[valid == 1]$aqm))
  if (!length(aqms(ta)) || !length(aqms(tb)))
    stop(sprintf("%s has no valid run: nothing to compare; fix: compare results whose runs passed their fidelity checks",
                 if (!length(aqms(ta))) "A" else "B"), call. = FALSE)
  aqm_pairs <- compare_aqm_pairs(aqms(ta), aqms(tb))
  runs <- compare_match_runs(ta$runs, tb$runs, aqm_pairs)
  if (!nrow(runs$matched))
    stop(paste("A and B have no run in common (same scenario key, load, replication and schedule); fix: compare",
               "results of configs with the same scenarios, loads, seed and windows (unpaired runs:",
               paste(head(sprintf("%s %s", runs$unpaired$side, runs$unpaired$run_id), 4), collapse = ", "), "...)"),
         call. = FALSE)
  metric <- compare_pair_flows(metric_flows(ta), metric_flows(tb), runs$matched)
  window <- compare_pair_flows(window_flows(ta), window_flows(tb), runs$matched)
  flows_alone <- if (!nrow(metric$alone)) NULL else metric$alone[, .(side, run_id, aqm = fifelse(side == "A", aqm_a, aqm_b), scen, load, replication,
                                  flow_id, reason = "flow not in the metrics on the other side (unfinished, or not scheduled there)")]
  unpaired <- rbind(runs$unpaired[, flow_id := ""], flows_alone, use.names = TRUE)
  setcolorder(unpaired, c("side", "run_id", "aqm", "scen", "load", "replication", "flow_id", "reason"))
  list(rows = compare_metric_rows(metric$pairs, window$pairs), unpaired = unpaired, matched = runs$matched)
}
