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
    judged <- if (axis == "iw") claim_C18(claim, of_sweep) else claim_C16(claim, of_sweep)
    verdict_row(claim, paste(sweep_key, "(", axis, "swept)"), judged$ours, judged$interval, judged$n, judged$status,
                runs_text(of_sweep$run_id), judged$note %||% "")
  })
}
claim_C16 <- function(claim, flows) {
  sizes <- sort(unique(num(flows$buffer_pkts)))
  parts <- lapply(sizes, function(buffer) {
    of_size <- flows[num(buffer_pkts) == buffer]
    pairs <- pair_flows(of_size[aqm_is_dt(aqm)], of_size[aqm_is_faq(aqm)])
    if (nrow(pairs) < claim$min_sample$paired_flows_per_size)
      return(list(status = INSUFF, text = sprintf("%g pkts: %d pairs", buffer, nrow(pairs))))
    if (identical_sides(pairs)) return(list(status = INSUFF, text = sprintf("%g pkts: identical DT and FaQ outcomes", buffer)))
    ci <- boot_ci(pairs, mean_latency_gain)
    list(status = better_status(ci$lo, ci$hi), text = sprintf("%g pkts: DT-FaQ %+.3f s [%+.3f, %+.3f]", buffer, ci$est, ci$lo, ci$hi))
  })
  statuses <- vapply(parts, `[[`, "", "status")
  decided <- sum(statuses != INSUFF)
  list(ours = paste(vapply(parts, `[[`, "", "text"), collapse = "; "), interval = "per buffer size, bootstrap",
       n = sprintf("%d buffer sizes, %d decided", length(sizes), decided),
       status = if (decided < claim$min_sample$buffer_sizes) INSUFF else combine_statuses(statuses))
}
claim_C18 <- function(claim, flows) {
  by <- c("load", "replication")
  droptail_iw2 <- flows[aqm_is_dt(aqm) & num(iw) == 2]; droptail_iw10 <- flows[aqm_is_dt(aqm) & num(iw) == 10]
  faq_iw2 <- flows[aqm_is_faq(aqm) & num(iw) == 2]; faq_iw10 <- flows[aqm_is_faq(aqm) & num(iw) == 10]
  pairs <- list(dt_iw = pair_flows(droptail_iw2, droptail_iw10, by), iw2 = pair_flows(droptail_iw2, faq_iw2, by),
                iw10 = pair_flows(droptail_iw10, faq_iw10, by))
  n <- vapply(pairs, nrow, 0L)
  if (any(n < claim$min_sample$paired_flows))
    return(list(ours = "", interval = "", n = paste(names(n), n, collapse = ", "), status = INSUFF))
  droptail_iw <- boot_ci(pairs$dt_iw, function(sample) c(mean_latency_gain(sample),
                                                         drop_ratio(pair_side(sample, "b")) - drop_ratio(pair_side(sample, "a"))))
  gain_iw2 <- boot_ci(pairs$iw2, mean_latency_gain); gain_iw10 <- boot_ci(pairs$iw10, mean_latency_gain)
  statuses <- c(better_status(droptail_iw$lo[1], droptail_iw$hi[1]), better_status(droptail_iw$lo[2], droptail_iw$hi[2]),
                better_status(gain_iw2$lo, gain_iw2$hi), better_status(gain_iw10$lo, gain_iw10$hi))
  seconds <- function(v) sprintf("%+.3f", v)
  list(ours = sprintf("DT IW2-IW10 latency %+.3f s, drop ratio IW10-IW2 %s; FaQ gain IW2 %+.3f s, IW10 %+.3f s",
                      droptail_iw$est[1], pct(droptail_iw$est[2]), gain_iw2$est, gain_iw10$est),
       interval = sprintf("%s; %s; %s; %s", fmt_ci(droptail_iw$lo[1], droptail_iw$hi[1], seconds),
                          fmt_ci(droptail_iw$lo[2], droptail_iw$hi[2]), fmt_ci(gain_iw2$lo, gain_iw2$hi, seconds),
                          fmt_ci(gain_iw10$lo, gain_iw10$hi, seconds)),
       n = paste(names(n), n, collapse = ", "), status = combine_statuses(statuses))
}

# C8 (F14-F16): beside the persistent flows, FaQ keeps fewer short flows in the system than DropTail, and
# does not take throughput from the persistent flows. Judged per pair of valid DropTail and FaQ runs of one
# schedule (scenario, load, replication): short flows in the system, the window's mean with a batch-means
# interval of DT - FaQ (blocks of the window paired by time: both runs replay the same schedule), and the
# persistent flows' mean share of the bottleneck, FaQ - DT with a t-interval over the flows.
claim_C8 <- function(claim, tables) {
  in_system <- short_in_system(tables)
  if (!nrow(in_system)) return(list(not_run(claim, NO_PERSISTENT)))
  in_system <- in_system[t >= window_start & t < window_end]
  in_system[, sched := paste(scen, load, replication)]
  lapply(unique(in_system$sched), function(schedule) {
    of_schedule <- in_system[sched == schedule]
    droptail <- of_schedule[aqm_is_dt(aqm)]; faq <- of_schedule[aqm_is_faq(aqm)]
    if (!nrow(droptail) || !nrow(faq))
      return(verdict_row(claim, of_schedule$scen[1], "", "", "", INSUFF, runs_text(of_schedule$run_id),
                         "needs a valid DropTail and a valid FaQ run of this schedule"))
    by_time <- merge(droptail[, .(t, n_dt = n)], faq[, .(t, n_fq = n)], by = "t")
    need <- claim$min_sample$batches
    difference <- batch_means(by_time$n_dt - by_time$n_fq, need)
    mean_droptail <- batch_means(by_time$n_dt, need); mean_faq <- batch_means(by_time$n_fq, need)
    persistent <- if (nrow(tables$persistent %||% data.table()))
      tables$persistent[valid == 1 & run_id %in% c(droptail$run_id[1], faq$run_id[1])]
      else data.table(aqm = character(), share_pct = character())
    share_droptail <- num(persistent[aqm_is_dt(aqm)]$share_pct); share_faq <- num(persistent[aqm_is_faq(aqm)]$share_pct)
    enough <- length(share_droptail) >= claim$min_sample$persistent_flows && length(share_faq) >= claim$min_sample$persistent_flows
    share_test <- if (enough) t.test(share_faq, share_droptail) else NULL
    statuses <- c(better_status(difference$lo, difference$hi),
                  if (is.null(share_test)) INSUFF else no_worse_status(share_test$conf.int[1], share_test$conf.int[2]))
    mean_share <- function(x) if (length(x)) sprintf("%.2f%%", mean(x)) else "NA"
    verdict_row(claim, of_schedule$scen[1],
                sprintf("short flows in the system DT %.1f, FaQ %.1f; persistent share DT %s, FaQ %s", mean_droptail$mean,
                        mean_faq$mean, mean_share(share_droptail), mean_share(share_faq)),
                sprintf("DT - FaQ flows %s (batch means, %d blocks); FaQ - DT share %s (t, over flows)",
                        fmt_ci(difference$lo, difference$hi, function(v) sprintf("%+.1f", v)), difference$batches,
                        if (is.null(share_test)) "[NA, NA]"
                        else fmt_ci(share_test$conf.int[1], share_test$conf.int[2], function(v) sprintf("%+.2f%%", v))),
                sprintf("%d s of window, %d + %d persistent flows", nrow(by_time), length(share_droptail), length(share_faq)),
                if (difference$batches == 0) INSUFF else combine_statuses(statuses), runs_text(c(droptail$run_id, faq$run_id)))
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
    verdict_row(claim, scen_key, ours, sprintf("FaQ/DT %s (%s)", fmt_ci(ratio$lo, ratio$hi, function(v) sprintf("%.3g", v)), ratio$method),
                n, if (few) INSUFF else better_status(log(ratio$lo), log(ratio$hi)), runs, paste(note, collapse = "; "))
  })
}

# C19 (Section 9.1): under a spoofed SYN flood, FaQ's legitimate flows fare no worse than DropTail's. Judged per
# scenario key with a flood (runs' flood_x > 0) on the schedules that have a valid DropTail and a valid FaQ run:
# every forward flow scheduled in the window (finished or not) is paired by flow id; the completed share, FaQ -
# DropTail, and the mean latency of the flows completed under both, DropTail - FaQ, each with a bootstrap
# interval over flows; "no_worse" on both (claims.yaml). C19b is the same test with the claim's `aqm` (the
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
      c(mean(sample$done.b) - mean(sample$done.a), if (any(both)) mean(sample$lat.a[both]) - mean(sample$lat.b[both]) else NA_real_)
    }
    ci <- boot_ci(pairs, statistic)
    statuses <- c(no_worse_status(ci$lo[1], ci$hi[1]), no_worse_status(ci$lo[2], ci$hi[2]))
    verdict_row(claim, scen_key,
                sprintf("completed DT %s, %s %s (%s - DT %+.1f points); mean latency of the %d completed under both DT - %s %+.3f s",
                        pct(mean(pairs$done.a)), label, pct(mean(pairs$done.b)), label, 100 * ci$est[1],
                        sum(pairs$done.a & pairs$done.b), label, ci$est[2]),
                sprintf("%s; %s (%s)", fmt_ci(ci$lo[1], ci$hi[1], function(v) sprintf("%+.1f points", 100 * v)),
                        fmt_ci(ci$lo[2], ci$hi[2], function(v) sprintf("%+.3f s", v)), ci$method),
                n, combine_statuses(statuses), runs_text(c(pairs$run_id.a, pairs$run_id.b)),
                "counted: every legitimate forward flow scheduled in the window, finished or not; the flood's SYNs are not flows")
  })
}
