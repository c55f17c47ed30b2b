# The claims judged on a scenario of their own rather than on Table 1: the buffer and IW sweeps (C16, C18),
# persistent flows (C8), the chain (C17) and the SYN flood (C19, C19b). Each returns a list of rows.

# C16 and C18: judged across one axis (buffer, IW) within a scenario that is otherwise the same.
sweep_claim <- function(claim, tables, flows, axis) {
  if (!nrow(flows)) return(list(not_run(claim, "no valid runs")))
  flows <- sweep_schedules(flows, axis)
  if (!nrow(flows)) return(list(not_run(claim, if (axis == "iw") "needs runs at IW 2 and IW 10 of one scenario and load"
                                               else "needs runs at several buffer sizes of one scenario and load")))
  groups <- flows[, .(values = list(sort(unique(num(get(axis)))))), by = sweep]
  want <- if (axis == "iw") c(2, 10) else NULL
  groups <- groups[vapply(values, function(v) if (is.null(want)) length(v) >= 2 else all(want %in% v), TRUE)]
  if (!nrow(groups)) return(list(not_run(claim, if (axis == "iw") "needs runs at IW 2 and IW 10 of one scenario"
                                                   else "needs runs at several buffer sizes of one scenario")))
  lapply(groups$sweep, function(sweep_key) {
    of_sweep <- flows[sweep == sweep_key]
    steady <- steady_runs(claim, tables$runs[run_id %in% of_sweep$run_id])
    judged <- if (axis == "iw") claim_C18(claim, of_sweep[run_id %in% steady$runs$run_id]) else claim_C16(claim, of_sweep[run_id %in% steady$runs$run_id])
    notes <- c(not_run_note(judged$parts), judged$note, steady$note)
    verdict_row(claim, paste(sweep_key, "(", axis, "swept)"), judged$ours, judged$interval, judged$n, judged_status(judged$parts),
                runs_text(of_sweep$run_id), paste(notes[nzchar(notes)], collapse = "; "), method = judged$method, used = steady$runs)
  })
}
# C16: FaQ faster at every buffer size and at every load of it (loads never pooled: F9's gain depends on both)
claim_C16 <- function(claim, flows) {
  sizes <- sort(unique(num(flows$buffer_pkts)))
  cells <- unique(flows[, .(buffer = num(buffer_pkts), load = num(load))])[order(buffer, load)]
  judged <- lapply(seq_len(nrow(cells)), function(i) {
    buffer <- cells$buffer[i]; load_value <- cells$load[i]
    label <- sprintf("%g pkts at %g", buffer, load_value)
    of_cell <- flows[num(buffer_pkts) == buffer & num(load) == load_value]
    pairs <- pair_flows(of_cell[aqm_is_dt(aqm)], of_cell[aqm_is_faq(aqm)])
    if (nrow(pairs) < claim$min_sample$paired_flows_per_size)
      return(list(part = undecided_part(label), text = sprintf("%s: %d pairs", label, nrow(pairs)), buffer = buffer, method = ""))
    if (identical_sides(pairs)) return(list(part = undecided_part(label), text = sprintf("%s: identical DT and FaQ outcomes", label),
                                            buffer = buffer, method = ""))
    ci <- boot_ci(pairs, mean_latency_gain)
    list(part = better_part(ci, 1, label), buffer = buffer, method = ci$method,
         text = sprintf("%s: DT-FaQ %+.3f s [%+.3f, %+.3f]", label, ci$est, ci$lo, ci$hi))
  })
  parts <- lapply(judged, `[[`, "part")
  decided_sizes <- unique(unlist(lapply(judged, function(x) if (!is.na(x$part$p_hold)) x$buffer)))
  if (length(decided_sizes) < claim$min_sample$buffer_sizes) parts <- c(parts, list(undecided_part("too few buffer sizes decided")))
  plateau <- c16_plateau(claim, flows)
  parts <- c(parts, plateau$parts)
  list(ours = paste(c(vapply(judged, `[[`, "", "text"), plateau$text), collapse = "; "), interval = "per buffer size and load, in the text",
       n = sprintf("%d buffer sizes, %d decided", length(sizes), length(decided_sizes)), parts = parts,
       method = paste(unique(Filter(nzchar, vapply(judged, `[[`, "", "method"))), collapse = "; "))
}
# C16's "no change past about 60 packets": per load, FaQ's mean latency at the smallest and the largest buffer
# of plateau_pkts or more, on the same flows, equivalent within the margin (relative to the smaller buffer's).
# A sweep without two such buffer sizes leaves that part untested, and the claim insufficient data at best.
c16_plateau <- function(claim, flows) {
  big <- sort(unique(num(flows$buffer_pkts)))
  big <- big[big >= claim$plateau_pkts]
  label <- sprintf("no change past %g packets", claim$plateau_pkts)
  if (length(big) < 2) {
    why <- sprintf("%s: untested, the sweep has fewer than two buffer sizes of %g packets or more", label, claim$plateau_pkts)
    return(list(parts = list(undecided_part(why)), text = why))
  }
  faq <- flows[aqm_is_faq(aqm)]
  judged <- lapply(sort(unique(num(faq$load))), function(load_value) {
    of_load <- faq[num(load) == load_value]
    pairs <- pair_flows(of_load[num(buffer_pkts) == min(big)], of_load[num(buffer_pkts) == max(big)], c("load", "replication"))
    at <- sprintf("%s at %g (FaQ, %g vs %g pkts)", label, load_value, min(big), max(big))
    if (nrow(pairs) < claim$min_sample$paired_flows_per_size) return(list(part = undecided_part(at), text = sprintf("%s: %d pairs", at, nrow(pairs))))
    ci <- boot_ci(pairs, relative_latency_gain)
    list(part = equivalent_part(ci, 1, claim$margin$plateau_latency, at), text = sprintf("%s: %s %s", at, signed_pct(ci$est), ci_text(ci, 1, signed_pct)))
  })
  list(parts = lapply(judged, `[[`, "part"), text = vapply(judged, `[[`, "", "text"))
}
claim_C18 <- function(claim, flows) {
  by <- c("load", "replication")
  droptail_iw2 <- flows[aqm_is_dt(aqm) & num(iw) == 2]; droptail_iw10 <- flows[aqm_is_dt(aqm) & num(iw) == 10]
  faq_iw2 <- flows[aqm_is_faq(aqm) & num(iw) == 2]; faq_iw10 <- flows[aqm_is_faq(aqm) & num(iw) == 10]
  pairs <- list(dt_iw = pair_flows(droptail_iw2, droptail_iw10, by), iw2 = pair_flows(droptail_iw2, faq_iw2, by),
                iw10 = pair_flows(droptail_iw10, faq_iw10, by))
  n <- vapply(pairs, nrow, 0L)
  if (any(n < claim$min_sample$paired_flows))
    return(list(ours = "", interval = "", n = paste(names(n), n, collapse = ", "), parts = list(undecided_part("too few pairs")), method = ""))
  droptail_iw <- boot_ci(pairs$dt_iw, function(sample) c(mean_latency_gain(sample),
                                                         drop_ratio(pair_side(sample, "b")) - drop_ratio(pair_side(sample, "a"))))
  gain_iw2 <- boot_ci(pairs$iw2, mean_latency_gain); gain_iw10 <- boot_ci(pairs$iw10, mean_latency_gain)
  parts <- list(own_value(better_part(droptail_iw, 1, "DT IW 10 faster")), own_value(better_part(droptail_iw, 2, "DT IW 10 more drops")),
                better_part(gain_iw2, 1, "FaQ faster at IW 2"), better_part(gain_iw10, 1, "FaQ faster at IW 10"))
  seconds <- function(v) sprintf("%+.3f", v)
  list(ours = sprintf("DT IW2-IW10 latency %+.3f s, drop ratio IW10-IW2 %s; FaQ gain IW2 %+.3f s, IW10 %+.3f s",
                      droptail_iw$est[1], pct(droptail_iw$est[2]), gain_iw2$est, gain_iw10$est),
       interval = sprintf("%s; %s; %s; %s", fmt_ci(droptail_iw$lo[1], droptail_iw$hi[1], seconds),
                          fmt_ci(droptail_iw$lo[2], droptail_iw$hi[2]), fmt_ci(gain_iw2$lo, gain_iw2$hi, seconds),
                          fmt_ci(gain_iw10$lo, gain_iw10$hi, seconds)),
       n = paste(names(n), n, collapse = ", "), parts = parts, method = droptail_iw$method)
}

# C8 (F14-F16): beside the persistent flows, FaQ keeps fewer short flows in the system than DropTail, and
# does not take throughput from the persistent flows. Judged per scenario on the schedules (load,
# replication) with a valid DropTail and a valid FaQ run: short flows in the system, per schedule the
# window's mean with a batch-means interval of DT - FaQ (blocks of the window paired by time: both runs
# replay the same schedule); the persistent flows' total share of the bottleneck, FaQ - DT, equivalent
# within the margin by a paired t over the schedules. Not over flows: the persistent flows' shares add up to
# what the short flows leave, so the flows of one run are not independent observations of their total.
persistent_schedules <- function(claim, tables) {
  in_system <- short_in_system(tables)
  if (!nrow(in_system)) return(NULL)
  in_system <- in_system[t >= window_start & t < window_end]
  in_system[, sched := paste(load, replication)]
  in_system
}
persistent_of <- function(tables, run_ids) {
  if (!nrow(tables$persistent %||% data.table())) return(data.table(run_id = character(), aqm = character(), share_pct = character()))
  tables$persistent[valid == 1 & run_id %in% run_ids]
}
claim_C8 <- function(claim, tables) {
  in_system <- persistent_schedules(claim, tables)
  if (is.null(in_system)) return(list(not_run(claim, NO_PERSISTENT)))
  same_schedule(tables$runs[run_id %in% in_system$run_id], c("scen", "load", "replication"), claim$id)
  lapply(unique(in_system$scen), function(scen_key) {
    of_scen <- in_system[scen == scen_key]
    schedules <- Filter(Negate(is.null), lapply(unique(of_scen$sched), function(schedule) {
      of_schedule <- of_scen[sched == schedule]
      droptail <- of_schedule[aqm_is_dt(aqm)]; faq <- of_schedule[aqm_is_faq(aqm)]
      if (!nrow(droptail) || !nrow(faq)) return(NULL)
      by_time <- merge(droptail[, .(t, n_dt = n)], faq[, .(t, n_fq = n)], by = "t")
      persistent <- persistent_of(tables, c(droptail$run_id[1], faq$run_id[1]))
      share_droptail <- num(persistent[aqm_is_dt(aqm)]$share_pct); share_faq <- num(persistent[aqm_is_faq(aqm)]$share_pct)
      list(schedule = schedule, runs = c(droptail$run_id[1], faq$run_id[1]), seconds = nrow(by_time),
           difference = batch_means(by_time$n_dt - by_time$n_fq, claim$min_sample$batches),
           mean_droptail = mean(by_time$n_dt), mean_faq = mean(by_time$n_fq),
           enough = min(length(share_droptail), length(share_faq)) >= claim$min_sample$persistent_flows,
           total_droptail = sum(share_droptail) / 100, total_faq = sum(share_faq) / 100, flows = length(share_droptail) + length(share_faq))
    }))
    run_ids <- unique(of_scen$run_id)
    if (!length(schedules))
      return(verdict_row(claim, scen_key, "", "", "", INSUFF, runs_text(run_ids), "needs a valid DropTail and a valid FaQ run of one schedule",
                         used = tables$runs[run_id %in% run_ids]))
    field <- function(name) vapply(schedules, function(x) as.numeric(x[[name]]), 0)
    lo <- vapply(schedules, function(x) x$difference$lo, 0); hi <- vapply(schedules, function(x) x$difference$hi, 0)
    in_system_parts <- mapply(function(x, l, h) interval_part(l, h, 0, Inf, sprintf("fewer in the system (%s)", x$schedule)),
                              schedules, lo, hi, SIMPLIFY = FALSE)
    with_shares <- Filter(function(x) x$enough, schedules)
    share_difference <- vapply(with_shares, function(x) x$total_faq - x$total_droptail, 0)
    margin <- claim$margin$persistent_share
    share_part <- if (length(share_difference) < claim$min_sample$schedules) undecided_part(sprintf(
      "persistent share (%d schedule(s) with enough persistent flows: the total share is one number per run)", length(share_difference)))
      else if (sd(share_difference) == 0) undecided_part("persistent share (the same difference in every schedule: no spread to test against)")
      else claim_part(max(t.test(share_difference, mu = -margin, alternative = "greater")$p.value,
                          t.test(share_difference, mu = margin, alternative = "less")$p.value),
                      min(t.test(share_difference, mu = -margin, alternative = "less")$p.value,
                          t.test(share_difference, mu = margin, alternative = "greater")$p.value), "persistent share equivalent")
    share_ci <- if (length(share_difference) >= 2 && sd(share_difference) > 0) t.test(share_difference)$conf.int else c(NA, NA)
    parts <- c(in_system_parts, list(share_part))
    used_ids <- unlist(lapply(schedules, `[[`, "runs"))
    verdict_row(claim, scen_key,
                sprintf("short flows in the system DT %.1f, FaQ %.1f; persistent flows' total share DT %s, FaQ %s (means over %d schedule(s))",
                        mean(field("mean_droptail")), mean(field("mean_faq")), pct(mean(field("total_droptail"))), pct(mean(field("total_faq"))),
                        length(schedules)),
                sprintf("DT - FaQ flows per schedule %s (batch means); FaQ - DT total share %s (paired t over schedules)",
                        paste(fmt_ci(lo, hi, function(v) sprintf("%+.1f", v)), collapse = " "), fmt_ci(share_ci[1], share_ci[2], signed_pct)),
                sprintf("%d schedule(s), %d s of window, %d persistent flows", length(schedules), sum(field("seconds")), sum(field("flows"))),
                judged_status(parts), runs_text(used_ids), paste(c(not_run_note(parts)), collapse = "; "),
                method = sprintf("batch means over %d blocks per schedule; paired t over schedules", claim$min_sample$batches),
                used = tables$runs[run_id %in% used_ids])
  })
}
# C21 (F16): the persistent flows' throughput varies less with FaQ: per schedule, the log of DropTail's over
# FaQ's variance of the flows' shares, the flows paired by stream (the same persistent flow under both AQMs:
# same hosts and stream number) and resampled together. A variance over flows is a property of the flows
# of one run, so resampling them is what its interval needs (unlike C8's total share, which they sum to).
claim_C21 <- function(claim, tables) {
  persistent <- tables$persistent %||% data.table()
  if (!nrow(persistent)) return(list(not_run(claim, NO_PERSISTENT)))
  persistent <- persistent[valid == 1]
  same_schedule(persistent[aqm_is_dt(aqm) | aqm_is_faq(aqm)], c("scen", "load", "replication"), claim$id)
  by <- c("scen", "load", "replication", "src", "dst", "stream")
  pairs <- merge(persistent[aqm_is_dt(aqm), c(by, "share_pct", "run_id"), with = FALSE],
                 persistent[aqm_is_faq(aqm), c(by, "share_pct", "run_id"), with = FALSE], by = by, suffixes = c(".a", ".b"))
  if (!nrow(pairs)) return(list(not_run(claim, "needs a valid DropTail and a valid FaQ run of one persistent schedule")))
  lapply(unique(pairs$scen), function(scen_key) {
    of_scen <- pairs[scen == scen_key]
    schedules <- unique(of_scen[, .(load, replication)])
    judged <- lapply(seq_len(nrow(schedules)), function(i) {
      of_schedule <- of_scen[load == schedules$load[i] & replication == schedules$replication[i]]
      label <- sprintf("load %s rep %s", schedules$load[i], schedules$replication[i])
      if (nrow(of_schedule) < claim$min_sample$persistent_flows) return(list(part = undecided_part(label), text = sprintf("%s: %d flows", label, nrow(of_schedule)), method = ""))
      ci <- boot_ci(of_schedule, function(sample) log(var(num(sample$share_pct.a)) / var(num(sample$share_pct.b))))
      list(part = better_part(ci, 1, label), method = ci$method,
           text = sprintf("%s: DT/FaQ variance %.3g [%.3g, %.3g] over %d flows", label, exp(ci$est), exp(ci$lo), exp(ci$hi), nrow(of_schedule)))
    })
    parts <- lapply(judged, `[[`, "part")
    used_ids <- unique(c(of_scen$run_id.a, of_scen$run_id.b))
    verdict_row(claim, scen_key, paste(vapply(judged, `[[`, "", "text"), collapse = "; "), "per schedule, in the text",
                sprintf("%d persistent flow pairs", nrow(of_scen)), judged_status(parts), runs_text(used_ids),
                method = paste(unique(Filter(nzchar, vapply(judged, `[[`, "", "method"))), collapse = "; "), used = tables$runs[run_id %in% used_ids])
  })
}
PERSISTENT_CLAIMS <- list(C8 = claim_C8, C21 = claim_C21)

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
claim_C17 <- function(claim, tables) {
  run_counts <- chain_run_counts(tables)
  if (!nrow(run_counts)) return(list(not_run(claim, NO_CHAIN)))
  need <- claim$min_sample$completed_flows_per_aqm
  lapply(unique(run_counts$scen), function(scen_key) {
    of_scen <- run_counts[scen == scen_key]
    paired <- chain_pairs(of_scen)
    reps <- paired$pairs
    why <- paste(paired$why, collapse = "; ")
    if (!nrow(reps))
      return(verdict_row(claim, scen_key, "", "", "0 replications", INSUFF, runs_text(of_scen$run_id),
                         paste0("needs a valid DropTail and a valid FaQ run of one replication (same seed and window)",
                                if (nzchar(why)) paste0(": ", why) else "")))
    runs <- runs_text(c(reps$run_id.dt, reps$run_id.faq))
    completed_dt <- sum(reps$completed.dt); completed_faq <- sum(reps$completed.faq)
    unfinished_dt <- sum(reps$unfinished.dt); unfinished_faq <- sum(reps$unfinished.faq)
    n <- sprintf("%d replication(s); completed DT %d, FaQ %d; unfinished DT %d, FaQ %d", nrow(reps), completed_dt,
                 completed_faq, unfinished_dt, unfinished_faq)
    note <- c(sprintf("counted: the reference user's flows started in the window [%g, %g) s that completed (the cross flows are not in the tables)",
                      reps$window_start.dt[1], reps$window_start.dt[1] + reps$window_s.dt[1]),
              sprintf("left out: unfinished in the window DT %d, FaQ %d; started in the warm-up or the drain DT %d, FaQ %d",
                      unfinished_dt, unfinished_faq, sum(reps$outside_window.dt), sum(reps$outside_window.faq)),
              if (nzchar(why)) paste("replications left out:", why))
    flow_pairs <- chain_flow_pairs(tables, reps)
    if (identical_sides(flow_pairs))
      return(verdict_row(claim, scen_key, "", "", n, INSUFF, runs, paste(c(
        "DropTail and FaQ give every reference flow the same outcome: one run given twice, or a pairing error", note), collapse = "; ")))
    ratio <- completed_ratio(reps)
    ours <- sprintf("completed reference flows DT %d, FaQ %d in %d x %g s: FaQ/DT %.3g", completed_dt, completed_faq,
                    nrow(reps), reps$window_s.dt[1], ratio$est)
    latency <- latency_ratio(flow_pairs)
    if (!is.null(latency))
      ours <- paste0(ours, sprintf("; mean latency FaQ/DT %.3g %s over the %d flows completed under both (%s; not tested)", latency$est,
                                   fmt_ci(latency$lo, latency$hi, function(v) sprintf("%.3g", v)), nrow(flow_pairs), latency$method))
    few <- min(completed_dt, completed_faq) < need
    if (few) note <- c(sprintf("fewer than %d completed reference flows under %s", need,
                               paste(c(if (completed_dt < need) "DropTail", if (completed_faq < need) "FaQ"), collapse = " and ")), note)
    verdict_row(claim, scen_key, ours, sprintf("FaQ/DT %s", fmt_ci(ratio$lo, ratio$hi, function(v) sprintf("%.3g", v))),
                n, if (few) INSUFF else judged_status(list(interval_part(log(ratio$lo), log(ratio$hi), 0, Inf, "FaQ/DT above 1"))), runs,
                paste(note, collapse = "; "), method = ratio$method, used = tables$runs[run_id %in% c(reps$run_id.dt, reps$run_id.faq)])
  })
}

# C19 (Section 9.1): under a spoofed SYN flood, FaQ's legitimate flows fare no worse than DropTail's. Judged per
# scenario key with a flood (runs' flood_x > 0) on the schedules that have a valid DropTail and a valid FaQ run:
# every forward flow scheduled in the window (finished or not) is paired by flow id; the completed share, FaQ -
# DropTail, and the mean latency of the flows completed under both, (DropTail - FaQ) / DropTail, each with a bootstrap
# interval over flows, relative for the latency; "no_worse" on both with the claim's margins (claims.yaml). C19b is the same test with the claim's `aqm` (the
# bounded FaQ, favored_burst) in FaQ's place: Algorithm 1 and its protection are judged apart, never pooled.
NO_FLOOD <- "needs valid runs under a SYN flood (config/synflood.yaml: synflood.rates_x above 0)"
flood_scens <- function(tables) {
  runs <- tables$runs
  if (!nrow(runs) || !"flood_x" %in% names(runs)) return(character())
  sort(unique(runs[!is.na(num(flood_x)) & num(flood_x) > 0]$scen))
}
claim_C19 <- function(claim, tables) {
  scens <- flood_scens(tables)
  if (!length(scens) || !nrow(tables$flows) || !"in_window" %in% names(tables$flows)) return(list(not_run(claim, NO_FLOOD)))
  is_compared <- if (is.null(claim$aqm)) aqm_is_faq else function(a) tolower(a) == tolower(claim$aqm)
  label <- if (is.null(claim$aqm)) "FaQ" else aqm_label(claim$aqm)
  if (!any(is_compared(tables$runs[scen %in% scens]$aqm)))
    return(list(not_run(claim, sprintf("needs runs of %s under a SYN flood (config/synflood.yaml's aqms)", label))))
  lapply(scens, function(scen_key) {
    counted <- flood_counted_flows(tables$flows[scen == scen_key & valid == 1])
    same_schedule(counted[aqm_is_dt(aqm) | is_compared(aqm)], c("scen", "load", "replication"), claim$id)
    by <- c("load", "replication", "flow_id")
    droptail <- counted[aqm_is_dt(aqm), c(by, "complete", "latency_s", "run_id"), with = FALSE]
    compared <- counted[is_compared(aqm), c(by, "complete", "latency_s", "run_id"), with = FALSE]
    pairs <- merge(droptail, compared, by = by, suffixes = c(".a", ".b"))
    n <- sprintf("%d paired flows", nrow(pairs))
    if (nrow(pairs) < claim$min_sample$paired_flows)
      return(verdict_row(claim, scen_key, "", "", n, INSUFF, runs_text(c(droptail$run_id, compared$run_id)),
                         sprintf("fewer than %d flows scheduled in the window of a valid DropTail and a valid %s run",
                                 claim$min_sample$paired_flows, label)))
    pairs[, `:=`(done.a = complete.a == "1", done.b = complete.b == "1", lat.a = num(latency_s.a), lat.b = num(latency_s.b))]
    statistic <- function(sample) {
      both <- sample$done.a & sample$done.b
      c(mean(sample$done.b) - mean(sample$done.a),
        if (any(both)) (mean(sample$lat.a[both]) - mean(sample$lat.b[both])) / mean(sample$lat.a[both]) else NA_real_)
    }
    ci <- boot_ci(pairs, statistic)
    parts <- list(no_worse_part(ci, 1, claim$margin$completed_share, "completed share"), no_worse_part(ci, 2, claim$margin$latency_gain, "latency"))
    verdict_row(claim, scen_key,
                sprintf("completed DT %s, %s %s (%s - DT %+.1f points); mean latency of the %d completed under both (DT - %s) / DT %s",
                        pct(mean(pairs$done.a)), label, pct(mean(pairs$done.b)), label, 100 * ci$est[1],
                        sum(pairs$done.a & pairs$done.b), label, signed_pct(ci$est[2])),
                sprintf("%s; %s", fmt_ci(ci$lo[1], ci$hi[1], function(v) sprintf("%+.1f points", 100 * v)), fmt_ci(ci$lo[2], ci$hi[2], signed_pct)),
                n, judged_status(parts), runs_text(c(pairs$run_id.a, pairs$run_id.b)),
                "counted: every legitimate forward flow scheduled in the window, finished or not; the flood's SYNs are not flows",
                method = ci$method, used = tables$runs[run_id %in% c(pairs$run_id.a, pairs$run_id.b)])
  })
}

# C22 (F23, F24): the paper's model fits P(Favor | S = s) at loads 0.25 and 0.85, with P(Z = 1) about 0.25
# and 0.7. R/model.R fits it per Table 1 scenario and load (model_fit_claim: P(Z = 1) with its interval,
# refitting s1 and s2 on every resample, and the share of the variation across sizes the fit explains). The
# parts: P(Z = 1) inside the paper's value +- tolerance at each of the two loads, from that interval (a band:
# judged on the paper's scenario only); a load not run, or too few flows to fit, is undecided and named.
# How well the model fits is reported (the share explained by the fit and by the paper's own parameters):
# "correctly fits" gives no threshold to test.
claim_C22 <- function(claim, tables) {
  fits <- model_fit_claim(scope_tables(tables, "table1"))
  if (!nrow(fits)) return(list(not_run(claim, "needs valid FaQ runs of Table 1 at load 0.25 or 0.85 with the favor trace")))
  targets <- setNames(unlist(claim$target), names(PAPER_P_Z1))
  lapply(unique(fits$scenario), function(scen_key) {
    of_scen <- fits[scenario == scen_key]
    paper <- is_paper_scenario(tables$runs[scen == scen_key][1])
    parts <- lapply(names(targets), function(rho) {
      fit <- of_scen[abs(load - as.numeric(rho)) < 1e-9]
      label <- sprintf("P(Z = 1) at %s", rho)
      if (!nrow(fit) || fit$status != "fit") return(undecided_part(sprintf("%s (%s)", label, if (nrow(fit)) fit$note else "load not run")))
      if (!paper) return(part_reported(label, "the paper's P(Z = 1) is fitted to ns-2 at 10 Mb/s: judged only on the paper's scenario"))
      own_value(interval_part(fit$low, fit$high, targets[[rho]] - claim$tolerance, targets[[rho]] + claim$tolerance, label))
    })
    text <- sprintf("%g: P(Z = 1) %.2f [%.2f, %.2f], s1 %g, s2 %g, explained %s (paper's parameters %s), %d flows", of_scen$load,
                    of_scen$p_z1, of_scen$low, of_scen$high, of_scen$s1, of_scen$s2, pct(of_scen$explained), pct(of_scen$paper_explained),
                    as.integer(of_scen$flows))
    used <- tables$runs[scen == scen_key & aqm_is_faq(aqm) & num(load) %in% of_scen$load]
    verdict_row(claim, scen_key, paste(text, collapse = "; "), "P(Z = 1) per load, in the text",
                sprintf("%s flows", paste(as.integer(of_scen$flows), collapse = " + ")), judged_status(parts), runs_text(used$run_id),
                not_run_note(parts), method = paste(unique(of_scen$interval[nzchar(of_scen$interval)]), collapse = "; "), used = used)
  })
}
