# The verdict: one row per claim of analysis/claims.yaml (and per scenario it is judged on).
# Every number comes with a 95 % interval; every claim states its test and minimum sample, and says
# "insufficient data" rather than holding or failing on too little (claims.yaml, header).
HOLDS <- "holds"; FAILS <- "does not hold"; INSUFF <- "insufficient data"; NOTRUN <- "not run"
STATUSES <- c(HOLDS, FAILS, INSUFF, NOTRUN)
# resamples per interval; the tests lower it (options(favorlab.boot_B = 200)) to stay quick
BOOT_B <- function() getOption("favorlab.boot_B", 1000)
EPS_S <- 0.001          # |Delta| at or below 1 ms is "unchanged" (the paper's F10 resolution)

read_claims <- function(path = file.path(favorlab_R_dir, "..", "claims.yaml")) {
  cl <- yaml::read_yaml(path)$claims
  names(cl) <- vapply(cl, `[[`, "", "id")
  cl
}

pct <- function(x) ifelse(is.na(x), "NA", sprintf("%.1f%%", 100 * x))
fmt_ci <- function(lo, hi, f = pct) sprintf("[%s, %s]", f(lo), f(hi))

# ------------------------------------------------------------------ intervals

# Percentile bootstrap of stat(d) (a numeric vector). With three or more replications the resampling unit
# is the replication (all flows of one replication's schedules together: replications are independent,
# flows within one are not); with fewer, flows are resampled within each schedule (load x replication),
# which keeps each load's weight. stat may return NA on a resample; those are dropped.
boot_plan <- function(d) {
  reps_of <- as.character(d$replication)
  if (length(unique(reps_of)) >= 3)
    return(list(by_rep = TRUE, groups = split(seq_len(nrow(d)), reps_of),
                method = sprintf("bootstrap over %d replications", length(unique(reps_of)))))
  g <- split(seq_len(nrow(d)), paste(d$load, reps_of))
  list(by_rep = FALSE, groups = g, method = sprintf("bootstrap over flows within %d schedule(s)", length(g)))
}
boot_ci <- function(d, stat, B = BOOT_B(), seed = 2013) {
  est <- as.numeric(stat(d))
  plan <- boot_plan(d); groups <- plan$groups
  draw <- if (plan$by_rep) function() unlist(groups[sample.int(length(groups), replace = TRUE)], use.names = FALSE)
          else function() unlist(lapply(groups, function(ix) ix[sample.int(length(ix), length(ix), replace = TRUE)]),
                                 use.names = FALSE)
  set.seed(seed)
  r <- matrix(vapply(seq_len(B), function(i) as.numeric(stat(d[draw()])), numeric(length(est))), nrow = length(est))
  q <- function(p) apply(r, 1, function(x) if (all(is.na(x))) NA_real_ else quantile(x, p, na.rm = TRUE, names = FALSE))
  list(est = est, lo = q(0.025), hi = q(0.975), method = plan$method)
}

# ------------------------------------------------------------------ tests (claims.yaml, "test")

band_status <- function(lo, hi, target, tol) {
  if (is.na(lo) || is.na(hi)) return(INSUFF)
  if (lo >= target - tol && hi <= target + tol) HOLDS
  else if (hi < target - tol || lo > target + tol) FAILS else INSUFF
}
# lo/hi: the interval of FaQ's improvement over DropTail (positive = FaQ better)
better_status <- function(lo, hi) if (is.na(lo) || is.na(hi)) INSUFF else if (lo > 0) HOLDS else if (hi < 0) FAILS else INSUFF
no_worse_status <- function(lo, hi) if (is.na(lo) || is.na(hi)) INSUFF else if (hi < 0) FAILS else HOLDS
combine <- function(st) if (any(st == FAILS)) FAILS else if (length(st) && all(st == HOLDS)) HOLDS else INSUFF

# ------------------------------------------------------------------ like with like

# Flows of a and b (flow tables) paired by schedule: same scenario key, load, replication and flow id.
# Columns of a get ".a", of b ".b". Only flows present in both are kept: in-metric flows (complete, inside
# the measurement window) in valid runs, so each side is judged on exactly the same flows.
PAIR_COLS <- c("L", "R", "RTO", "FR", "syn_retrans", "syn_drops_bneck", "latency_s", "bneck_in", "bneck_out", "drops",
               "qdelay_mean_s", "goodput_bps", "fav_favored_data", "fav_pushout_victim", "fav_drop_favored",
               "fav_drop_standard", "run_id")
pair_flows <- function(a, b, by = c("scen", "load", "replication")) {
  cols <- intersect(PAIR_COLS, intersect(names(a), names(b)))
  p <- merge(a[, c(by, "flow_id", cols), with = FALSE], b[, c(by, "flow_id", cols), with = FALSE],
             by = c(by, "flow_id"), suffixes = c(".a", ".b"))
  # numbers once here, not in every bootstrap resample
  for (c in grep("\\.(a|b)$", names(p), value = TRUE)) if (!startsWith(c, "run_id")) set(p, j = c, value = num(p[[c]]))
  p[, L := L.a]
  p[]
}
# One side of a pair table under the names metrics.R reads (a list: metrics take columns with `$`; no copy).
side <- function(p, s) {
  cols <- grep(paste0("\\.", s, "$"), names(p), value = TRUE)
  setNames(as.list(p)[cols], sub(paste0("\\.", s, "$"), "", cols))
}
# DropTail's mean latency minus FaQ's on a pair table (positive: FaQ faster).
lat_gain <- function(d) latency_mean(side(d, "a")) - latency_mean(side(d, "b"))
# The same flows with the same outcome under both AQMs: a pairing error or one run given twice.
identical_sides <- function(p) nrow(p) > 0 && isTRUE(all(p$latency_s.a == p$latency_s.b)) &&
  (!"drops.a" %in% names(p) || isTRUE(all(p$drops.a == p$drops.b)))

# The tables cut to the runs a figure is about (analysis/figures.yaml `scope`): "table1" keeps the Table 1
# scenarios' runs in every table that has a run_id; no scope keeps everything.
scope_tables <- function(t, scope) {
  if (is.null(scope)) return(t)
  if (scope != "table1") stop(sprintf("unknown figure scope %s (analysis/figures.yaml): table1 or none", scope))
  keep <- t$runs[is_table1(t$runs)]$run_id
  lapply(t, function(x) if (is.data.table(x) && "run_id" %in% names(x)) x[run_id %in% keep] else x)
}
# The flows of a sweep along `axis` (buffer size, IW) that compare like with like: within one scenario but
# the axis, only the schedules (load, replication) run at every value of the axis, so a value measured at
# more loads than the others does not pool loads they lack (a config's sections may sweep at one load).
sweep_schedules <- function(fl, axis) {
  fl <- copy(fl)
  fl[, sweep := scenario_key(.SD, axis)]
  fl[, sched := paste(load, replication)]
  vals <- fl[, .(n = uniqueN(get(axis))), by = sweep]
  per <- fl[, .(n = uniqueN(get(axis))), by = .(sweep, sched)]
  keep <- merge(per, vals, by = "sweep")[n.x == n.y & n.y >= 2, .(sweep, sched)]
  merge(fl, keep, by = c("sweep", "sched"))
}
# Scheduled flows in the measurement window that did not finish, per AQM (count, share of flows, of bytes).
censoring <- function(t, scen_key = NULL) {
  f <- t$flows
  if (!nrow(f) || !"in_window" %in% names(f)) return(data.table())
  f <- f[valid == 1 & in_window == "1" & direction %in% c("forward", "")]
  if (!is.null(scen_key)) f <- f[scen == scen_key]
  if (!nrow(f)) return(data.table())
  f[, .(flows = .N, unfinished = sum(complete != "1"), unfinished_share = mean(complete != "1"),
        unfinished_bytes_share = sum(num(size_bytes)[complete != "1"]) / sum(num(size_bytes))),
    by = .(scen, aqm, load = num(load), length_class = length_class(L))]
}
censoring_note <- function(t, s, aqms) {
  c <- censoring(t, s)
  if (!nrow(c)) return("")
  c <- c[aqm %in% aqms, .(u = sum(unfinished), n = sum(flows)), by = aqm]
  paste0("unfinished in window (left out): ", paste(sprintf("%s %d of %d", c$aqm, c$u, c$n), collapse = ", "))
}

# ------------------------------------------------------------------ the claims

row <- function(cl, scen, ours, interval, n, status, runs = "", note = "") {
  data.table(claim = cl$id, what = cl$what, scenario = scen, paper = as.character(cl$paper), ours = ours,
             interval = interval, test = as.character(cl$test), n = n,
             min_sample = paste(names(cl$min_sample), unlist(cl$min_sample), sep = " ", collapse = ", "),
             status = status, runs = runs, note = note)
}
not_run <- function(cl, why) row(cl, "", "", "", "", NOTRUN, note = why)
runs_text <- function(ids) { ids <- sort(unique(ids)); if (!length(ids)) "none" else
  sprintf("%d runs: %s%s", length(ids), paste(head(ids, 4), collapse = " "), if (length(ids) > 4) " ..." else "") }
pair_runs <- function(p) runs_text(c(p$run_id.a, p$run_id.b))

# C1: the peak at the initial RTO
initial_rto_s <- function(profile) if (identical(profile, "linux")) 1 else 3
peak_excess <- function(lat, rto) mean(lat >= rto & lat < rto + 0.5) - mean(lat >= rto - 0.5 & lat < rto)
claim_C1 <- function(cl, p, ctx) {
  rto <- initial_rto_s(ctx$profile)
  st <- function(d) { a <- peak_excess(num(d$latency_s.a), rto); b <- peak_excess(num(d$latency_s.b), rto); c(a, b, a - b) }
  ci <- boot_ci(p, st)
  list(ours = sprintf("peak excess at %g s: DT %s, FaQ %s", rto, pct(ci$est[1]), pct(ci$est[2])),
       interval = sprintf("DT %s, DT - FaQ %s (%s)", fmt_ci(ci$lo[1], ci$hi[1]), fmt_ci(ci$lo[3], ci$hi[3]), ci$method),
       status = combine(c(better_status(ci$lo[1], ci$hi[1]), better_status(ci$lo[3], ci$hi[3]))))
}
claim_C3 <- function(cl, p, ctx) {
  st <- function(d) { g <- function(x) sum(num(x$latency_s.a) - num(x$latency_s.b)) / sum(num(x$latency_s.a))
    s <- d[num(L) < 10]; c(g(d), if (nrow(s)) g(s) else NA_real_) }
  ci <- boot_ci(p, st)
  list(ours = sprintf("G %s; short flows (L < 10) %s", pct(ci$est[1]), pct(ci$est[2])),
       interval = sprintf("%s; short %s (%s)", fmt_ci(ci$lo[1], ci$hi[1]), fmt_ci(ci$lo[2], ci$hi[2]), ci$method),
       status = band_status(ci$lo[1], ci$hi[1], cl$target, cl$tolerance))
}
claim_C5 <- function(cl, p, ctx) {
  cap <- 1e6 * num(ctx$bottleneck_mbps)
  st <- function(d) { a <- mean(num(d$goodput_bps.a)) / cap; b <- mean(num(d$goodput_bps.b)) / cap; c(a, b, b - a) }
  ci <- boot_ci(p, st)
  list(ours = sprintf("%s / %s", pct(ci$est[1]), pct(ci$est[2])),
       interval = sprintf("FaQ - DT %s (%s)", fmt_ci(ci$lo[3], ci$hi[3]), ci$method),
       status = better_status(ci$lo[3], ci$hi[3]))
}
claim_C6 <- function(cl, p, ctx) {
  st <- function(d) { x <- num(d$latency_s.a) - num(d$latency_s.b)
    c(mean(abs(x) <= EPS_S), mean(x > EPS_S), mean(x < -EPS_S), mean(x > 1)) }
  ci <- boot_ci(p, st)
  tg <- unlist(cl$target)
  list(ours = paste(pct(ci$est), collapse = "/"),
       interval = paste0(paste(mapply(fmt_ci, ci$lo, ci$hi), collapse = " "), " (", ci$method, ")"),
       status = combine(mapply(band_status, ci$lo, ci$hi, tg, cl$tolerance)))
}
claim_C7 <- function(cl, p, ctx) {
  short <- p[num(L) < 10]; long <- p[num(L) >= 100]
  st <- function(d) { x <- num(d$latency_s.a) - num(d$latency_s.b); s <- num(d$L) < 10; l <- num(d$L) >= 100
    c(if (any(s)) mean(x[s] > EPS_S) else NA, if (any(s)) mean(x[s] < -EPS_S) else NA, if (any(l)) mean(x[l] > EPS_S) else NA) }
  ci <- boot_ci(p, st)
  tg <- unlist(cl$target); tol <- unlist(cl$tolerance)
  s <- mapply(band_status, ci$lo, ci$hi, tg, tol)
  if (nrow(short) < cl$min_sample$short_pairs) s[1:2] <- INSUFF
  if (nrow(long) < cl$min_sample$long_pairs) s[3] <- INSUFF
  list(ours = sprintf("short %s improve / %s worsen (n=%d); long %s improve (n=%d)", pct(ci$est[1]), pct(ci$est[2]),
                      nrow(short), pct(ci$est[3]), nrow(long)),
       interval = paste0(paste(mapply(fmt_ci, ci$lo, ci$hi), collapse = " "), " (", ci$method, ")"),
       status = combine(s))
}
claim_C9 <- function(cl, p, ctx) {
  st <- function(d) { a <- mean_queueing_delay(side(d, "a")); b <- mean_queueing_delay(side(d, "b")); c(a, b, a - b) }
  ci <- boot_ci(p, st)
  ms <- function(x) sprintf("%.2f ms", 1000 * x)
  tg <- unlist(cl$target)
  list(ours = sprintf("%s / %s", ms(ci$est[1]), ms(ci$est[2])),
       interval = sprintf("DT %s, FaQ %s, DT - FaQ %s (%s)", fmt_ci(ci$lo[1], ci$hi[1], ms), fmt_ci(ci$lo[2], ci$hi[2], ms),
                          fmt_ci(ci$lo[3], ci$hi[3], ms), ci$method),
       status = combine(c(band_status(ci$lo[1], ci$hi[1], tg[1], cl$tolerance), band_status(ci$lo[2], ci$hi[2], tg[2], cl$tolerance),
                          no_worse_status(ci$lo[3], ci$hi[3]))))
}
claim_C10 <- function(cl, p, ctx) {
  p[, cls := length_class(L)]
  big <- p[, .(a = sum(num(bneck_in.a)), b = sum(num(bneck_in.b))), by = cls][a >= cl$min_sample$packets_per_class &
                                                                                 b >= cl$min_sample$packets_per_class]$cls
  if (length(big) < cl$min_sample$classes)
    return(list(ours = sprintf("%d length classes with enough packets", length(big)), interval = "", status = INSUFF))
  big <- sort(big)
  st <- function(d) vapply(big, function(k) { x <- d[cls == k]; drop_ratio(side(x, "a")) - drop_ratio(side(x, "b")) }, 0)
  ci <- boot_ci(p, st)
  s <- mapply(better_status, ci$lo, ci$hi)
  list(ours = sprintf("FaQ lower beyond the interval in %d of %d classes (%s)", sum(s == HOLDS), length(s),
                      paste(sprintf("%s: %s", big, ifelse(s == HOLDS, "lower", ifelse(s == FAILS, "HIGHER", "tie"))), collapse = ", ")),
       interval = sprintf("DT - FaQ drop ratio per class (%s)", ci$method), status = combine(s))
}
syn_ratio <- function(d, s, bneck) {
  lost <- if (bneck) num(d[[paste0("syn_drops_bneck.", s)]]) else num(d[[paste0("syn_retrans.", s)]])
  sum(lost) / sum(1 + num(d[[paste0("syn_retrans.", s)]]))
}
claim_C11 <- function(cl, p, ctx) {
  bneck <- "syn_drops_bneck.a" %in% names(p)
  lost_dt <- sum(num(p[[if (bneck) "syn_drops_bneck.a" else "syn_retrans.a"]]))
  st <- function(d) { a <- syn_ratio(d, "a", bneck); b <- syn_ratio(d, "b", bneck); c(a, b, a / 3 - b) }
  ci <- boot_ci(p, st)
  list(ours = sprintf("%s / %s (%d DT SYNs lost)", pct(ci$est[1]), pct(ci$est[2]), as.integer(lost_dt)),
       interval = sprintf("DT/3 - FaQ %s (%s)", fmt_ci(ci$lo[3], ci$hi[3]), ci$method),
       status = if (lost_dt < cl$min_sample$dt_syn_losses) INSUFF else better_status(ci$lo[3], ci$hi[3]),
       note = if (bneck) "SYNs dropped at the bottleneck, all flows scheduled in the window (complete or not)"
              else "tables without bottleneck SYN drops: the senders' SYN retransmissions (SYN-ACK losses included)")
}
claim_C13 <- function(cl, p, ctx) {
  st <- function(d) { a <- rto_recovery_ratio(side(d, "a")); b <- rto_recovery_ratio(side(d, "b")); c(a, b, a - b) }
  ci <- boot_ci(p, st)
  rec <- c(sum(num(p$RTO.a) + num(p$FR.a)), sum(num(p$RTO.b) + num(p$FR.b)))
  tg <- unlist(cl$target)
  s <- c(band_status(ci$lo[1], ci$hi[1], tg[1], cl$tolerance), band_status(ci$lo[2], ci$hi[2], tg[2], cl$tolerance),
         better_status(ci$lo[3], ci$hi[3]))
  list(ours = sprintf("%s / %s; FR in flows < 6 packets: DT %d, FaQ %d", pct(ci$est[1]), pct(ci$est[2]),
                      as.integer(sum(num(p[num(L) < 6]$FR.a))), as.integer(sum(num(p[num(L) < 6]$FR.b)))),
       interval = sprintf("DT %s, FaQ %s, DT - FaQ %s (%s)", fmt_ci(ci$lo[1], ci$hi[1]), fmt_ci(ci$lo[2], ci$hi[2]),
                          fmt_ci(ci$lo[3], ci$hi[3]), ci$method),
       status = if (min(rec) < cl$min_sample$recoveries_per_aqm) INSUFF else combine(s))
}
# Per-load claims (C4, C12): every load the scenario ran (valid or not) from from_load up must be decided.
per_load <- function(cl, p, ctx, test_of_load) {
  loads <- sort(unique(num(ctx$runs$load)))
  parts <- lapply(loads, function(ld) {
    x <- p[num(load) == ld]
    if (nrow(x) < cl$min_sample$paired_flows_per_load)
      return(list(status = INSUFF, text = sprintf("%g: %d pairs", ld, nrow(x))))
    test_of_load(ld, x)
  })
  st <- vapply(parts, `[[`, "", "status")
  list(ours = paste(vapply(parts, `[[`, "", "text"), collapse = "; "),
       interval = "per load: bootstrap over flows within each schedule (or over replications where there are 3 or more)",
       status = combine(st))
}
# C4's test at one load on pairs (side a: the AQM FaQ is compared with, named `a`; side b: FaQ): FaQ's mean
# latency below a's beyond the interval (better), its drop ratio not above a's beyond it (no_worse).
c4_load_test <- function(ld, x, a = "DT") {
  ci <- boot_ci(x, function(d) c(lat_gain(d), drop_ratio(side(d, "a")) - drop_ratio(side(d, "b"))))
  s <- c(better_status(ci$lo[1], ci$hi[1]), no_worse_status(ci$lo[2], ci$hi[2]))
  list(status = combine(s), text = sprintf("%g: latency %s-FaQ %+.3f s %s, drops %s-FaQ %s %s", ld, a, ci$est[1],
                                           fmt_ci(ci$lo[1], ci$hi[1], function(v) sprintf("%+.3f", v)), a, pct(ci$est[2]),
                                           fmt_ci(ci$lo[2], ci$hi[2])))
}
claim_C4 <- function(cl, p, ctx) per_load(cl, p[num(load) >= cl$from_load], list(runs = ctx$runs[num(load) >= cl$from_load]),
  function(ld, x) c4_load_test(ld, x))

# C4b: C4 against the paper's other comparators (claims.yaml `comparators`: CHOKe, LAS, RuN2C), each judged
# as C4 judges DropTail: pairs are the comparator's flow and FaQ's flow of the same schedule row (pair_flows:
# same scenario, load, replication, flow id, complete under both), per load from `from_load` up, every load
# the comparator or FaQ ran there must be decided (per_load; fewer than paired_flows_per_load pairs:
# insufficient data). A comparator whose every pair has the same outcome as FaQ's is insufficient data (one
# run given twice, or a pairing error). The claim is about all three: it holds only when every comparator
# holds; one comparator that does not hold makes it not hold; a comparator the results do not have leaves it
# insufficient data at best (a claim never holds on a part it did not test), and the row names it. None of
# them run: not run.
c4b_comparators <- function(cl) unlist(cl$comparators)
claim_C4b <- function(cl, t, f, scen_key) {
  keys <- c4b_comparators(cl)
  runs <- t$runs[scen == scen_key]
  ran <- keys[keys %in% tolower(runs$aqm)]
  missing <- setdiff(keys, ran)
  names_of <- function(k) paste(aqm_label(k), collapse = ", ")
  faq <- f[aqm_is_faq(aqm)]
  if (!nrow(faq)) return(row(cl, scen_key, "", "", "", NOTRUN, runs_text(runs[tolower(aqm) %in% ran]$run_id),
                             note = sprintf("needs valid FaQ runs of this scenario beside %s", names_of(ran))))
  parts <- lapply(ran, function(k) {
    name <- aqm_label(k)
    comp <- f[tolower(aqm) == k]
    if (!nrow(comp)) return(list(status = INSUFF, text = sprintf("%s: no valid run", name), n = sprintf("%s 0", name), p = NULL))
    p <- pair_flows(comp, faq)
    n <- sprintf("%s %d", name, nrow(p))
    if (identical_sides(p))
      return(list(status = INSUFF, n = n, p = p, text = sprintf(
        "%s: every paired flow has the same outcome under %s and FaQ (one run given twice, or a pairing error)", name, name)))
    ctx <- list(runs = runs[(tolower(aqm) == k | aqm_is_faq(aqm)) & num(load) >= cl$from_load])
    r <- per_load(cl, p[num(load) >= cl$from_load], ctx, function(ld, x) c4_load_test(ld, x, name))
    list(status = r$status, n = n, p = p, text = sprintf("%s (%s): %s", name, r$status, if (nzchar(r$ours)) r$ours else "no load"))
  })
  st <- vapply(parts, `[[`, "", "status")
  status <- combine(c(st, rep(INSUFF, length(missing))))
  ours <- paste(vapply(parts, `[[`, "", "text"), collapse = " | ")
  if (length(missing)) ours <- paste0(ours, sprintf(" | not run: %s", names_of(missing)))
  p <- rbindlist(lapply(parts, `[[`, "p"), fill = TRUE)
  note <- c(if (length(missing)) sprintf("%s not run in this scenario: the claim cannot hold without %s", names_of(missing),
                                         if (length(missing) == 1) "it" else "them"),
            censoring_note(t, scen_key, unique(c(faq$aqm, f[tolower(aqm) %in% ran]$aqm))))
  row(cl, scen_key, ours, "per comparator and load: bootstrap over flows within each schedule (or over replications where there are 3 or more)",
      paste(paste(vapply(parts, `[[`, "", "n"), collapse = ", "), "paired flows"), status,
      if (nrow(p)) pair_runs(p) else "none", paste(note[nzchar(note)], collapse = "; "))
}
claim_C12 <- function(cl, p, ctx) per_load(cl, p, ctx, function(ld, x) {
  ci <- boot_ci(x, function(d) rto_ratio(side(d, "a")) - rto_ratio(side(d, "b")))
  s <- if (ld >= cl$from_load) better_status(ci$lo, ci$hi) else no_worse_status(ci$lo, ci$hi)
  list(status = s, text = sprintf("%g: DT-FaQ %s %s%s", ld, pct(ci$est), fmt_ci(ci$lo, ci$hi), if (ld < cl$from_load) " (no worse)" else ""))
})

# Claims on one AQM's own flows (no pairing: nothing is compared).
claim_C2 <- function(cl, f, ctx) {
  rec <- sum(num(f$RTO) + num(f$FR))
  ci <- boot_ci(f, rto_recovery_ratio)
  list(ours = pct(ci$est), interval = sprintf("%s (%s)", fmt_ci(ci$lo, ci$hi), ci$method), n = sprintf("%d recoveries in %d DT flows", as.integer(rec), nrow(f)),
       status = if (rec < cl$min_sample$recoveries) INSUFF else band_status(ci$lo, ci$hi, cl$target, cl$tolerance))
}
p_favor_classes <- function(d) c(p_favor(d[num(L) == 2]), p_favor(d[num(L) >= 10 & num(L) < 100]), p_favor(d[num(L) >= 100]))
claim_C14 <- function(cl, f, ctx) {
  ci <- boot_ci(f, p_favor_classes)
  n <- c(sum(num(f$L) == 2), sum(num(f$L) >= 10 & num(f$L) < 100), sum(num(f$L) >= 100))
  s <- mapply(band_status, ci$lo, ci$hi, unlist(cl$target), unlist(cl$tolerance))
  s[n < cl$min_sample$flows_per_class] <- INSUFF
  list(ours = sprintf("%s / %s / %s", pct(ci$est[1]), pct(ci$est[2]), pct(ci$est[3])),
       interval = paste0(paste(mapply(fmt_ci, ci$lo, ci$hi), collapse = " "), " (", ci$method, ")"),
       n = sprintf("FaQ flows per class %s", paste(n, collapse = "/")), status = combine(s))
}
claim_C15 <- function(cl, f, ctx) {
  drops <- sum(num(f$fav_pushout_victim) + num(f$fav_drop_favored) + num(f$fav_drop_standard), na.rm = TRUE)
  ci <- boot_ci(f, pushout_share)
  list(ours = pct(ci$est), interval = sprintf("%s (%s)", fmt_ci(ci$lo, ci$hi), ci$method), n = sprintf("%d drops", as.integer(drops)),
       status = if (drops < cl$min_sample$drops) INSUFF else band_status(ci$lo, ci$hi, cl$target, cl$tolerance))
}

PAIRED <- c("C1", "C3", "C4", "C5", "C6", "C7", "C9", "C10", "C11", "C12", "C13")

# All flows scheduled in the window of valid runs, finished or not (C11: SYN losses must not be censored).
window_flows <- function(t) {
  if (!nrow(t$flows) || !"in_window" %in% names(t$flows)) return(metric_flows(t))
  # a connection joins its schedule row through the header of its first data segment: one whose every SYN
  # was lost never sends it and stays unjoined (its losses are in run.csv's ours_syn_drops_bneck)
  f <- t$flows[valid == 1 & in_window == "1" & seen == "1"]
  if ("direction" %in% names(f)) f <- f[direction %in% c("forward", "")]
  f
}

baseline_claims <- function(cl, t, fl, scen_key) {
  runs <- t$runs[scen == scen_key]
  ctx <- list(profile = runs$profile[1], bottleneck_mbps = runs$bottleneck_mbps[1], runs = runs)
  f <- fl[scen == scen_key]
  dt <- f[aqm_is_dt(aqm)]; faq <- f[aqm_is_faq(aqm)]
  if (cl$id == "C4b" && !any(c4b_comparators(cl) %in% tolower(runs$aqm)))
    return(row(cl, scen_key, "", "", "", NOTRUN, note = sprintf("needs runs of %s in this scenario (config/aqm-bench.yaml runs them)",
                                                                paste(aqm_label(c4b_comparators(cl)), collapse = ", "))))
  # the same run given twice (or a pairing error) says nothing about FaQ, nor about either AQM alone
  p_all <- if (nrow(dt) && nrow(faq)) pair_flows(dt, faq) else NULL
  if (!is.null(p_all) && identical_sides(p_all))
    return(row(cl, scen_key, "", "", "", INSUFF, runs_text(f$run_id),
               "DropTail and FaQ give every paired flow the same outcome: one run given twice, or a pairing error"))
  if (cl$id == "C4b") return(claim_C4b(cl, t, f, scen_key))
  if (cl$id %in% PAIRED) {
    if (!nrow(dt) || !nrow(faq)) return(row(cl, scen_key, "", "", "", NOTRUN, note = "needs valid DropTail and FaQ runs of this scenario"))
    p <- if (cl$id == "C11") { w <- window_flows(t)[scen == scen_key]; pair_flows(w[aqm_is_dt(aqm)], w[aqm_is_faq(aqm)]) }
         else p_all
    n <- sprintf("%d paired flows", nrow(p))
    note <- censoring_note(t, scen_key, unique(c(dt$aqm, faq$aqm)))
    need <- cl$min_sample$paired_flows
    if (!nrow(p) || (!is.null(need) && nrow(p) < need))
      return(row(cl, scen_key, "", "", n, INSUFF, pair_runs(p), paste(c(sprintf("fewer than %s paired flows", need %||% 1), note), collapse = "; ")))
    r <- get(paste0("claim_", cl$id))(cl, p, ctx)
    return(row(cl, scen_key, r$ours, r$interval, n, r$status, pair_runs(p), paste(c(r$note, note)[nzchar(c(r$note, note))], collapse = "; ")))
  }
  own <- if (cl$id == "C2") dt else faq
  # C14 needs favored data packets (older tables count the handshake too: Eq. 5 would exceed 1)
  need <- c(C14 = "fav_favored_data", C15 = "fav_pushout_victim")[cl$id]
  if (!is.na(need)) own <- if (need %in% names(own)) own[!is.na(num(own[[need]]))] else own[0]
  own <- copy(own)
  for (c in intersect(PAIR_COLS, names(own))) if (c != "run_id") set(own, j = c, value = num(own[[c]]))
  if (!nrow(own)) return(row(cl, scen_key, "", "", "", NOTRUN,
                             note = if (cl$id == "C2") "needs valid DropTail runs" else "needs valid FaQ runs with the favor trace"))
  r <- get(paste0("claim_", cl$id))(cl, own, ctx)
  row(cl, scen_key, r$ours, r$interval, r$n, r$status, runs_text(own$run_id))
}
`%||%` <- function(a, b) if (is.null(a)) b else a

# The Table 1 scenarios (paper Section 4): the dumbbell's web traffic with Pareto sizes of mean 30 packets,
# at 10 Mb/s with an 8-packet buffer or at 100 Mb/s with 83 packets. The baseline claims and the figures of
# Sections 5.1, 5.2, 6 and 7 are about them; a config's other sections (the buffer sweep, other size
# distributions, persistent flows) have figures and claims of their own and must not be pooled in. Tables
# from before a column existed have "" there and count as Table 1.
is_table1 <- function(d) {
  sc <- if ("scenario" %in% names(d)) as.character(d$scenario) else rep("", nrow(d))
  b <- num(d$bottleneck_mbps); q <- num(d$buffer_pkts); m <- num(d$size_mean_pkts)
  fx <- if ("flood_x" %in% names(d)) num(d$flood_x) else rep(NA_real_, nrow(d))   # a SYN flood is not Table 1
  sc %in% c("dumbbell", "") & as.character(d$size_dist) %in% c("pareto", "") & (is.na(m) | m == 30) &
    (is.na(q) | (b %in% 10 & q %in% 8) | (b %in% 100 & q %in% 83)) & (is.na(fx) | fx == 0)
}

# C16 and C18: judged across one axis (buffer, IW) within a scenario that is otherwise the same.
sweep_claim <- function(cl, t, fl, axis) {
  if (!nrow(fl)) return(list(not_run(cl, "no valid runs")))
  fl <- sweep_schedules(fl, axis)
  if (!nrow(fl)) return(list(not_run(cl, if (axis == "iw") "needs runs at IW 2 and IW 10 of one scenario and load"
                                          else "needs runs at several buffer sizes of one scenario and load")))
  groups <- fl[, .(values = list(sort(unique(num(get(axis)))))), by = sweep]
  want <- if (axis == "iw") c(2, 10) else NULL
  groups <- groups[vapply(values, function(v) if (is.null(want)) length(v) >= 2 else all(want %in% v), TRUE)]
  if (!nrow(groups)) return(list(not_run(cl, if (axis == "iw") "needs runs at IW 2 and IW 10 of one scenario"
                                              else "needs runs at several buffer sizes of one scenario")))
  lapply(groups$sweep, function(g) {
    f <- fl[sweep == g]
    r <- if (axis == "iw") claim_C18(cl, f) else claim_C16(cl, f)
    row(cl, paste(g, "(", axis, "swept)"), r$ours, r$interval, r$n, r$status, runs_text(f$run_id), r$note %||% "")
  })
}
claim_C16 <- function(cl, f) {
  sizes <- sort(unique(num(f$buffer_pkts)))
  parts <- lapply(sizes, function(b) {
    x <- f[num(buffer_pkts) == b]
    p <- pair_flows(x[aqm_is_dt(aqm)], x[aqm_is_faq(aqm)])
    if (nrow(p) < cl$min_sample$paired_flows_per_size) return(list(s = INSUFF, text = sprintf("%g pkts: %d pairs", b, nrow(p))))
    if (identical_sides(p)) return(list(s = INSUFF, text = sprintf("%g pkts: identical DT and FaQ outcomes", b)))
    ci <- boot_ci(p, lat_gain)
    list(s = better_status(ci$lo, ci$hi), text = sprintf("%g pkts: DT-FaQ %+.3f s [%+.3f, %+.3f]", b, ci$est, ci$lo, ci$hi))
  })
  s <- vapply(parts, `[[`, "", "s")
  decided <- sum(s != INSUFF)
  list(ours = paste(vapply(parts, `[[`, "", "text"), collapse = "; "), interval = "per buffer size, bootstrap",
       n = sprintf("%d buffer sizes, %d decided", length(sizes), decided),
       status = if (decided < cl$min_sample$buffer_sizes) INSUFF else combine(s))
}
claim_C18 <- function(cl, f) {
  by <- c("load", "replication")
  dt2 <- f[aqm_is_dt(aqm) & num(iw) == 2]; dt10 <- f[aqm_is_dt(aqm) & num(iw) == 10]
  fq2 <- f[aqm_is_faq(aqm) & num(iw) == 2]; fq10 <- f[aqm_is_faq(aqm) & num(iw) == 10]
  pr <- list(dt_iw = pair_flows(dt2, dt10, by), iw2 = pair_flows(dt2, fq2, by), iw10 = pair_flows(dt10, fq10, by))
  n <- vapply(pr, nrow, 0L)
  if (any(n < cl$min_sample$paired_flows))
    return(list(ours = "", interval = "", n = paste(names(n), n, collapse = ", "), status = INSUFF))
  a <- boot_ci(pr$dt_iw, function(d) c(lat_gain(d), drop_ratio(side(d, "b")) - drop_ratio(side(d, "a"))))
  b <- boot_ci(pr$iw2, lat_gain); c <- boot_ci(pr$iw10, lat_gain)
  s <- c(better_status(a$lo[1], a$hi[1]), better_status(a$lo[2], a$hi[2]), better_status(b$lo, b$hi), better_status(c$lo, c$hi))
  f3 <- function(v) sprintf("%+.3f", v)
  list(ours = sprintf("DT IW2-IW10 latency %+.3f s, drop ratio IW10-IW2 %s; FaQ gain IW2 %+.3f s, IW10 %+.3f s",
                      a$est[1], pct(a$est[2]), b$est, c$est),
       interval = sprintf("%s; %s; %s; %s", fmt_ci(a$lo[1], a$hi[1], f3), fmt_ci(a$lo[2], a$hi[2]), fmt_ci(b$lo, b$hi, f3), fmt_ci(c$lo, c$hi, f3)),
       n = paste(names(n), n, collapse = ", "), status = combine(s))
}

# C8 (F14-F16): beside the persistent flows, FaQ keeps fewer short flows in the system than DropTail, and
# does not take throughput from the persistent flows. Judged per pair of valid DropTail and FaQ runs of one
# schedule (scenario, load, replication): short flows in the system, the window's mean with a batch-means
# interval of DT - FaQ (blocks of the window paired by time: both runs replay the same schedule), and the
# persistent flows' mean share of the bottleneck, FaQ - DT with a t-interval over the flows.
claim_C8 <- function(cl, t) {
  d <- short_in_system(t)
  if (!nrow(d)) return(list(not_run(cl, NO_PERSISTENT)))
  d <- d[t >= window_start & t < window_end]
  d[, sched := paste(scen, load, replication)]
  lapply(unique(d$sched), function(sc) {
    x <- d[sched == sc]
    dt <- x[aqm_is_dt(aqm)]; fq <- x[aqm_is_faq(aqm)]
    if (!nrow(dt) || !nrow(fq)) return(row(cl, x$scen[1], "", "", "", INSUFF, runs_text(x$run_id), "needs a valid DropTail and a valid FaQ run of this schedule"))
    m <- merge(dt[, .(t, n_dt = n)], fq[, .(t, n_fq = n)], by = "t")
    need <- cl$min_sample$batches
    b <- batch_means(m$n_dt - m$n_fq, need)
    a <- batch_means(m$n_dt, need); f <- batch_means(m$n_fq, need)
    pr <- if (nrow(t$persistent %||% data.table())) t$persistent[valid == 1 & run_id %in% c(dt$run_id[1], fq$run_id[1])]
          else data.table(aqm = character(), share_pct = character())
    pd <- num(pr[aqm_is_dt(aqm)]$share_pct); pq <- num(pr[aqm_is_faq(aqm)]$share_pct)
    tp <- if (length(pd) >= cl$min_sample$persistent_flows && length(pq) >= cl$min_sample$persistent_flows)
      t.test(pq, pd) else NULL
    st <- c(better_status(b$lo, b$hi), if (is.null(tp)) INSUFF else no_worse_status(tp$conf.int[1], tp$conf.int[2]))
    list_text <- sprintf("short flows in the system DT %.1f, FaQ %.1f; persistent share DT %s, FaQ %s", a$mean, f$mean,
                         if (length(pd)) sprintf("%.2f%%", mean(pd)) else "NA", if (length(pq)) sprintf("%.2f%%", mean(pq)) else "NA")
    row(cl, x$scen[1], list_text,
        sprintf("DT - FaQ flows %s (batch means, %d blocks); FaQ - DT share %s (t, over flows)",
                fmt_ci(b$lo, b$hi, function(v) sprintf("%+.1f", v)), b$batches,
                if (is.null(tp)) "[NA, NA]" else fmt_ci(tp$conf.int[1], tp$conf.int[2], function(v) sprintf("%+.2f%%", v))),
        sprintf("%d s of window, %d + %d persistent flows", nrow(m), length(pd), length(pq)),
        if (b$batches == 0) INSUFF else combine(st), runs_text(c(dt$run_id, fq$run_id)))
  })
}

# C17 (F26): with FaQ at the first hop, the chain's reference user completes more flows than with DropTail at
# every hop in the same time. Judged per chain scenario key on the replications that have a valid DropTail
# and a valid FaQ run with the same seed and measurement window (chain_pairs, fig_chain.R, which also says
# which flows count: the user's flows started in the window that completed; the unfinished ones are counted
# apart). The number: the ratio FaQ / DropTail of completed flows per second of window (completed_ratio: a
# paired t-interval from five replications, else the exact Poisson interval widened for the closed loop).
# The test is claims.yaml's "better", as for every FaQ-vs-DropTail claim: holds when the interval lies above
# 1, does not hold when it lies below 1, insufficient data when it holds 1 or when either AQM completed fewer
# flows than min_sample. The mean latency ratio of the flows completed under both AQMs (same flow id, same
# size) is reported beside it and not tested.
claim_C17 <- function(cl, t) {
  rc <- chain_run_counts(t)
  if (!nrow(rc)) return(list(not_run(cl, NO_CHAIN)))
  need <- cl$min_sample$completed_flows_per_aqm
  lapply(unique(rc$scen), function(s) {
    x <- rc[scen == s]
    cp <- chain_pairs(x)
    q <- cp$pairs
    why <- paste(cp$why, collapse = "; ")
    if (!nrow(q))
      return(row(cl, s, "", "", "0 replications", INSUFF, runs_text(x$run_id),
                 paste0("needs a valid DropTail and a valid FaQ run of one replication (same seed and window)",
                        if (nzchar(why)) paste0(": ", why) else "")))
    runs <- runs_text(c(q$run_id.dt, q$run_id.faq))
    nd <- sum(q$completed.dt); nf <- sum(q$completed.faq)
    ud <- sum(q$unfinished.dt); uf <- sum(q$unfinished.faq)
    n <- sprintf("%d replication(s); completed DT %d, FaQ %d; unfinished DT %d, FaQ %d", nrow(q), nd, nf, ud, uf)
    note <- c(sprintf("counted: the reference user's flows started in the window [%g, %g) s that completed (the cross flows are not in the tables)",
                      q$window_start.dt[1], q$window_start.dt[1] + q$window_s.dt[1]),
              sprintf("left out: unfinished in the window DT %d, FaQ %d; started in the warm-up or the drain DT %d, FaQ %d",
                      ud, uf, sum(q$outside_window.dt), sum(q$outside_window.faq)),
              if (nzchar(why)) paste("replications left out:", why))
    p <- chain_flow_pairs(t, q)
    if (identical_sides(p))
      return(row(cl, s, "", "", n, INSUFF, runs, paste(c(
        "DropTail and FaQ give every reference flow the same outcome: one run given twice, or a pairing error", note), collapse = "; ")))
    r <- completed_ratio(q)
    ours <- sprintf("completed reference flows DT %d, FaQ %d in %d x %g s: FaQ/DT %.3g", nd, nf, nrow(q), q$window_s.dt[1], r$est)
    lr <- latency_ratio(p)
    if (!is.null(lr))
      ours <- paste0(ours, sprintf("; mean latency FaQ/DT %.3g %s over the %d flows completed under both (%s; not tested)", lr$est,
                                   fmt_ci(lr$lo, lr$hi, function(v) sprintf("%.3g", v)), nrow(p), lr$method))
    few <- min(nd, nf) < need
    if (few) note <- c(sprintf("fewer than %d completed reference flows under %s", need,
                               paste(c(if (nd < need) "DropTail", if (nf < need) "FaQ"), collapse = " and ")), note)
    row(cl, s, ours, sprintf("FaQ/DT %s (%s)", fmt_ci(r$lo, r$hi, function(v) sprintf("%.3g", v)), r$method), n,
        if (few) INSUFF else better_status(log(r$lo), log(r$hi)), runs, paste(note, collapse = "; "))
  })
}

# C19 (Section 9.1): under a spoofed SYN flood, FaQ's legitimate flows fare no worse than DropTail's. Judged per
# scenario key with a flood (runs' flood_x > 0) on the schedules that have a valid DropTail and a valid FaQ run:
# every forward flow scheduled in the window (finished or not) is paired by flow id; the completed share, FaQ -
# DropTail, and the mean latency of the flows completed under both, DropTail - FaQ, each with a bootstrap
# interval over flows; "no_worse" on both (claims.yaml). C19b is the same test with the claim's `aqm` (the
# bounded FaQ, favored_burst) in FaQ's place: Algorithm 1 and its protection are judged apart, never pooled.
NO_FLOOD <- "needs valid runs under a SYN flood (config/synflood.yaml: synflood.rates_x above 0)"
flood_scens <- function(t) {
  r <- t$runs
  if (!nrow(r) || !"flood_x" %in% names(r)) return(character())
  sort(unique(r[!is.na(num(flood_x)) & num(flood_x) > 0]$scen))
}
claim_C19 <- function(cl, t) {
  scens <- flood_scens(t)
  if (!length(scens) || !nrow(t$flows) || !"in_window" %in% names(t$flows)) return(list(not_run(cl, NO_FLOOD)))
  is_b <- if (is.null(cl$aqm)) aqm_is_faq else function(a) tolower(a) == tolower(cl$aqm)
  lab <- if (is.null(cl$aqm)) "FaQ" else aqm_label(cl$aqm)
  if (!any(is_b(t$runs[scen %in% scens]$aqm)))
    return(list(not_run(cl, sprintf("needs runs of %s under a SYN flood (config/synflood.yaml's aqms)", lab))))
  lapply(scens, function(s) {
    w <- flood_counted_flows(t$flows[scen == s & valid == 1])
    by <- c("load", "replication", "flow_id")
    a <- w[aqm_is_dt(aqm), c(by, "complete", "latency_s", "run_id"), with = FALSE]
    b <- w[is_b(aqm), c(by, "complete", "latency_s", "run_id"), with = FALSE]
    p <- merge(a, b, by = by, suffixes = c(".a", ".b"))
    n <- sprintf("%d paired flows", nrow(p))
    if (nrow(p) < cl$min_sample$paired_flows)
      return(row(cl, s, "", "", n, INSUFF, runs_text(c(a$run_id, b$run_id)),
                 sprintf("fewer than %d flows scheduled in the window of a valid DropTail and a valid %s run", cl$min_sample$paired_flows, lab)))
    p[, `:=`(done.a = complete.a == "1", done.b = complete.b == "1", lat.a = num(latency_s.a), lat.b = num(latency_s.b))]
    stat <- function(d) {
      both <- d$done.a & d$done.b
      c(mean(d$done.b) - mean(d$done.a), if (any(both)) mean(d$lat.a[both]) - mean(d$lat.b[both]) else NA_real_)
    }
    ci <- boot_ci(p, stat)
    st <- c(no_worse_status(ci$lo[1], ci$hi[1]), no_worse_status(ci$lo[2], ci$hi[2]))
    row(cl, s, sprintf("completed DT %s, %s %s (%s - DT %+.1f points); mean latency of the %d completed under both DT - %s %+.3f s",
                       pct(mean(p$done.a)), lab, pct(mean(p$done.b)), lab, 100 * ci$est[1], sum(p$done.a & p$done.b), lab, ci$est[2]),
        sprintf("%s; %s (%s)", fmt_ci(ci$lo[1], ci$hi[1], function(v) sprintf("%+.1f points", 100 * v)),
                fmt_ci(ci$lo[2], ci$hi[2], function(v) sprintf("%+.3f s", v)), ci$method),
        n, combine(st), runs_text(c(p$run_id.a, p$run_id.b)),
        "counted: every legitimate forward flow scheduled in the window, finished or not; the flood's SYNs are not flows")
  })
}

verdict <- function(t, claims = read_claims()) {
  fl <- metric_flows(t)
  base <- if (nrow(fl)) sort(unique(fl[num(iw) == 2 & is_table1(fl)]$scen)) else character()
  out <- list()
  for (cl in claims) {
    out[[cl$id]] <- if (cl$scenario == "baseline") {
      if (!length(base)) list(not_run(cl, "needs valid runs of the Table 1 scenario with IW 2"))
      else lapply(base, function(s) baseline_claims(cl, t, fl, s))
    } else if (cl$scenario == "chain") claim_C17(cl, t)   # decides itself: a chain run that is invalid is insufficient data
    else if (cl$scenario == "synflood") claim_C19(cl, t)
    else if (!nrow(fl)) list(not_run(cl, "no valid runs"))
    else if (cl$scenario == "buffer_sweep") sweep_claim(cl, t, copy(fl[num(iw) == 2]), "buffer_pkts")
    else if (cl$scenario == "iw_sweep") sweep_claim(cl, t, copy(fl), "iw")
    else if (cl$scenario == "persistent") claim_C8(cl, t)
    else list(not_run(cl, sprintf("the %s scenario is not part of the pipeline yet", cl$scenario)))
  }
  rbindlist(unlist(out, recursive = FALSE), fill = TRUE)
}
