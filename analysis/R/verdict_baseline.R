# The baseline claims: judged on a Table 1 scenario (IW 2), one row per claim and scenario. Most compare
# DropTail and FaQ on the same flows (PAIRED_CLAIMS: a pair table, side a DropTail, side b FaQ); C2, C14
# and C15 are about one AQM's own flows (OWN_FLOW_CLAIMS). Each claim function returns the row's parts:
# list(ours, interval, status, n = , note = ); context: the scenario's runs, TCP profile and bottleneck rate.

# C1: the peak at the initial RTO
initial_rto_s <- function(profile) if (identical(profile, "linux")) 1 else 3
peak_excess <- function(latency, rto) mean(latency >= rto & latency < rto + 0.5) - mean(latency >= rto - 0.5 & latency < rto)
claim_C1 <- function(claim, pairs, context) {
  rto <- initial_rto_s(context$profile)
  statistic <- function(sample) {
    droptail <- peak_excess(num(sample$latency_s.a), rto); faq <- peak_excess(num(sample$latency_s.b), rto)
    c(droptail, faq, droptail - faq)
  }
  ci <- boot_ci(pairs, statistic)
  list(ours = sprintf("peak excess at %g s: DT %s, FaQ %s", rto, pct(ci$est[1]), pct(ci$est[2])),
       interval = sprintf("DT %s, DT - FaQ %s (%s)", fmt_ci(ci$lo[1], ci$hi[1]), fmt_ci(ci$lo[3], ci$hi[3]), ci$method),
       status = combine_statuses(c(better_status(ci$lo[1], ci$hi[1]), better_status(ci$lo[3], ci$hi[3]))))
}
claim_C3 <- function(claim, pairs, context) {
  statistic <- function(sample) {
    gain <- function(x) sum(num(x$latency_s.a) - num(x$latency_s.b)) / sum(num(x$latency_s.a))
    short <- sample[num(L) < 10]
    c(gain(sample), if (nrow(short)) gain(short) else NA_real_)
  }
  ci <- boot_ci(pairs, statistic)
  list(ours = sprintf("G %s; short flows (L < 10) %s", pct(ci$est[1]), pct(ci$est[2])),
       interval = sprintf("%s; short %s (%s)", fmt_ci(ci$lo[1], ci$hi[1]), fmt_ci(ci$lo[2], ci$hi[2]), ci$method),
       status = band_status(ci$lo[1], ci$hi[1], claim$target, claim$tolerance))
}
claim_C5 <- function(claim, pairs, context) {
  capacity <- 1e6 * num(context$bottleneck_mbps)
  statistic <- function(sample) {
    droptail <- mean(num(sample$goodput_bps.a)) / capacity; faq <- mean(num(sample$goodput_bps.b)) / capacity
    c(droptail, faq, faq - droptail)
  }
  ci <- boot_ci(pairs, statistic)
  list(ours = sprintf("%s / %s", pct(ci$est[1]), pct(ci$est[2])),
       interval = sprintf("FaQ - DT %s (%s)", fmt_ci(ci$lo[3], ci$hi[3]), ci$method),
       status = better_status(ci$lo[3], ci$hi[3]))
}
claim_C6 <- function(claim, pairs, context) {
  statistic <- function(sample) {
    delta <- num(sample$latency_s.a) - num(sample$latency_s.b)
    c(mean(abs(delta) <= EPS_S), mean(delta > EPS_S), mean(delta < -EPS_S), mean(delta > 1))
  }
  ci <- boot_ci(pairs, statistic)
  targets <- unlist(claim$target)
  list(ours = paste(pct(ci$est), collapse = "/"),
       interval = paste0(paste(mapply(fmt_ci, ci$lo, ci$hi), collapse = " "), " (", ci$method, ")"),
       status = combine_statuses(mapply(band_status, ci$lo, ci$hi, targets, claim$tolerance)))
}
claim_C7 <- function(claim, pairs, context) {
  short <- pairs[num(L) < 10]; long <- pairs[num(L) >= 100]
  statistic <- function(sample) {
    delta <- num(sample$latency_s.a) - num(sample$latency_s.b)
    is_short <- num(sample$L) < 10; is_long <- num(sample$L) >= 100
    c(if (any(is_short)) mean(delta[is_short] > EPS_S) else NA, if (any(is_short)) mean(delta[is_short] < -EPS_S) else NA,
      if (any(is_long)) mean(delta[is_long] > EPS_S) else NA)
  }
  ci <- boot_ci(pairs, statistic)
  statuses <- mapply(band_status, ci$lo, ci$hi, unlist(claim$target), unlist(claim$tolerance))
  if (nrow(short) < claim$min_sample$short_pairs) statuses[1:2] <- INSUFF
  if (nrow(long) < claim$min_sample$long_pairs) statuses[3] <- INSUFF
  list(ours = sprintf("short %s improve / %s worsen (n=%d); long %s improve (n=%d)", pct(ci$est[1]), pct(ci$est[2]),
                      nrow(short), pct(ci$est[3]), nrow(long)),
       interval = paste0(paste(mapply(fmt_ci, ci$lo, ci$hi), collapse = " "), " (", ci$method, ")"),
       status = combine_statuses(statuses))
}
claim_C9 <- function(claim, pairs, context) {
  statistic <- function(sample) {
    droptail <- mean_queueing_delay(pair_side(sample, "a")); faq <- mean_queueing_delay(pair_side(sample, "b"))
    c(droptail, faq, droptail - faq)
  }
  ci <- boot_ci(pairs, statistic)
  ms <- function(x) sprintf("%.2f ms", 1000 * x)
  targets <- unlist(claim$target)
  list(ours = sprintf("%s / %s", ms(ci$est[1]), ms(ci$est[2])),
       interval = sprintf("DT %s, FaQ %s, DT - FaQ %s (%s)", fmt_ci(ci$lo[1], ci$hi[1], ms), fmt_ci(ci$lo[2], ci$hi[2], ms),
                          fmt_ci(ci$lo[3], ci$hi[3], ms), ci$method),
       status = combine_statuses(c(band_status(ci$lo[1], ci$hi[1], targets[1], claim$tolerance),
                                   band_status(ci$lo[2], ci$hi[2], targets[2], claim$tolerance),
                                   no_worse_status(ci$lo[3], ci$hi[3]))))
}
claim_C10 <- function(claim, pairs, context) {
  pairs[, cls := length_class(L)]
  need <- claim$min_sample$packets_per_class
  big <- pairs[, .(a = sum(num(bneck_in.a)), b = sum(num(bneck_in.b))), by = cls][a >= need & b >= need]$cls
  if (length(big) < claim$min_sample$classes)
    return(list(ours = sprintf("%d length classes with enough packets", length(big)), interval = "", status = INSUFF))
  big <- sort(big)
  statistic <- function(sample) vapply(big, function(class_name) {
    of_class <- sample[cls == class_name]
    drop_ratio(pair_side(of_class, "a")) - drop_ratio(pair_side(of_class, "b"))
  }, 0)
  ci <- boot_ci(pairs, statistic)
  statuses <- mapply(better_status, ci$lo, ci$hi)
  list(ours = sprintf("FaQ lower beyond the interval in %d of %d classes (%s)", sum(statuses == HOLDS), length(statuses),
                      paste(sprintf("%s: %s", big, ifelse(statuses == HOLDS, "lower", ifelse(statuses == FAILS, "HIGHER", "tie"))),
                            collapse = ", ")),
       interval = sprintf("DT - FaQ drop ratio per class (%s)", ci$method), status = combine_statuses(statuses))
}
# SYNs lost over SYNs sent on one side ("a" or "b") of a pair table: dropped at the bottleneck where the
# tables count them, else the senders' SYN retransmissions.
side_syn_loss_ratio <- function(pairs, which, at_bottleneck) {
  lost <- if (at_bottleneck) num(pairs[[paste0("syn_drops_bneck.", which)]]) else num(pairs[[paste0("syn_retrans.", which)]])
  sum(lost) / sum(1 + num(pairs[[paste0("syn_retrans.", which)]]))
}
claim_C11 <- function(claim, pairs, context) {
  at_bottleneck <- "syn_drops_bneck.a" %in% names(pairs)
  lost_droptail <- sum(num(pairs[[if (at_bottleneck) "syn_drops_bneck.a" else "syn_retrans.a"]]))
  statistic <- function(sample) {
    droptail <- side_syn_loss_ratio(sample, "a", at_bottleneck); faq <- side_syn_loss_ratio(sample, "b", at_bottleneck)
    c(droptail, faq, droptail / 3 - faq)
  }
  ci <- boot_ci(pairs, statistic)
  list(ours = sprintf("%s / %s (%d DT SYNs lost)", pct(ci$est[1]), pct(ci$est[2]), as.integer(lost_droptail)),
       interval = sprintf("DT/3 - FaQ %s (%s)", fmt_ci(ci$lo[3], ci$hi[3]), ci$method),
       status = if (lost_droptail < claim$min_sample$dt_syn_losses) INSUFF else better_status(ci$lo[3], ci$hi[3]),
       note = if (at_bottleneck) "SYNs dropped at the bottleneck, all flows scheduled in the window (complete or not)"
              else "tables without bottleneck SYN drops: the senders' SYN retransmissions (SYN-ACK losses included)")
}
claim_C13 <- function(claim, pairs, context) {
  statistic <- function(sample) {
    droptail <- rto_recovery_ratio(pair_side(sample, "a")); faq <- rto_recovery_ratio(pair_side(sample, "b"))
    c(droptail, faq, droptail - faq)
  }
  ci <- boot_ci(pairs, statistic)
  recoveries <- c(sum(num(pairs$RTO.a) + num(pairs$FR.a)), sum(num(pairs$RTO.b) + num(pairs$FR.b)))
  targets <- unlist(claim$target)
  statuses <- c(band_status(ci$lo[1], ci$hi[1], targets[1], claim$tolerance),
                band_status(ci$lo[2], ci$hi[2], targets[2], claim$tolerance), better_status(ci$lo[3], ci$hi[3]))
  tiny <- pairs[num(L) < 6]
  list(ours = sprintf("%s / %s; FR in flows < 6 packets: DT %d, FaQ %d", pct(ci$est[1]), pct(ci$est[2]),
                      as.integer(sum(num(tiny$FR.a))), as.integer(sum(num(tiny$FR.b)))),
       interval = sprintf("DT %s, FaQ %s, DT - FaQ %s (%s)", fmt_ci(ci$lo[1], ci$hi[1]), fmt_ci(ci$lo[2], ci$hi[2]),
                          fmt_ci(ci$lo[3], ci$hi[3]), ci$method),
       status = if (min(recoveries) < claim$min_sample$recoveries_per_aqm) INSUFF else combine_statuses(statuses))
}
# Per-load claims (C4, C12): every load the scenario ran (valid or not) from from_load up must be decided.
# test_at_load(load_value, pairs of that load) returns list(status, text).
per_load <- function(claim, pairs, context, test_at_load) {
  loads <- sort(unique(num(context$runs$load)))
  parts <- lapply(loads, function(load_value) {
    of_load <- pairs[num(load) == load_value]
    if (nrow(of_load) < claim$min_sample$paired_flows_per_load)
      return(list(status = INSUFF, text = sprintf("%g: %d pairs", load_value, nrow(of_load))))
    test_at_load(load_value, of_load)
  })
  list(ours = paste(vapply(parts, `[[`, "", "text"), collapse = "; "),
       interval = "per load: bootstrap over flows within each schedule (or over replications where there are 3 or more)",
       status = combine_statuses(vapply(parts, `[[`, "", "status")))
}
# C4's test at one load on pairs (side a: the AQM FaQ is compared with, named `name`; side b: FaQ): FaQ's mean
# latency below a's beyond the interval (better), its drop ratio not above a's beyond it (no_worse).
c4_test_at_load <- function(load_value, pairs, name = "DT") {
  ci <- boot_ci(pairs, function(sample) c(mean_latency_gain(sample), drop_ratio(pair_side(sample, "a")) - drop_ratio(pair_side(sample, "b"))))
  statuses <- c(better_status(ci$lo[1], ci$hi[1]), no_worse_status(ci$lo[2], ci$hi[2]))
  list(status = combine_statuses(statuses),
       text = sprintf("%g: latency %s-FaQ %+.3f s %s, drops %s-FaQ %s %s", load_value, name, ci$est[1],
                      fmt_ci(ci$lo[1], ci$hi[1], function(v) sprintf("%+.3f", v)), name, pct(ci$est[2]), fmt_ci(ci$lo[2], ci$hi[2])))
}
claim_C4 <- function(claim, pairs, context) {
  per_load(claim, pairs[num(load) >= claim$from_load], list(runs = context$runs[num(load) >= claim$from_load]),
           function(load_value, of_load) c4_test_at_load(load_value, of_load))
}
claim_C12 <- function(claim, pairs, context) per_load(claim, pairs, context, function(load_value, of_load) {
  ci <- boot_ci(of_load, function(sample) rto_ratio(pair_side(sample, "a")) - rto_ratio(pair_side(sample, "b")))
  status <- if (load_value >= claim$from_load) better_status(ci$lo, ci$hi) else no_worse_status(ci$lo, ci$hi)
  list(status = status, text = sprintf("%g: DT-FaQ %s %s%s", load_value, pct(ci$est), fmt_ci(ci$lo, ci$hi),
                                       if (load_value < claim$from_load) " (no worse)" else ""))
})

# Claims on one AQM's own flows (no pairing: nothing is compared).
claim_C2 <- function(claim, flows, context) {
  recoveries <- sum(num(flows$RTO) + num(flows$FR))
  ci <- boot_ci(flows, rto_recovery_ratio)
  list(ours = pct(ci$est), interval = sprintf("%s (%s)", fmt_ci(ci$lo, ci$hi), ci$method),
       n = sprintf("%d recoveries in %d DT flows", as.integer(recoveries), nrow(flows)),
       status = if (recoveries < claim$min_sample$recoveries) INSUFF else band_status(ci$lo, ci$hi, claim$target, claim$tolerance))
}
p_favor_by_class <- function(flows) c(p_favor(flows[num(L) == 2]), p_favor(flows[num(L) >= 10 & num(L) < 100]), p_favor(flows[num(L) >= 100]))
claim_C14 <- function(claim, flows, context) {
  ci <- boot_ci(flows, p_favor_by_class)
  per_class <- c(sum(num(flows$L) == 2), sum(num(flows$L) >= 10 & num(flows$L) < 100), sum(num(flows$L) >= 100))
  statuses <- mapply(band_status, ci$lo, ci$hi, unlist(claim$target), unlist(claim$tolerance))
  statuses[per_class < claim$min_sample$flows_per_class] <- INSUFF
  list(ours = sprintf("%s / %s / %s", pct(ci$est[1]), pct(ci$est[2]), pct(ci$est[3])),
       interval = paste0(paste(mapply(fmt_ci, ci$lo, ci$hi), collapse = " "), " (", ci$method, ")"),
       n = sprintf("FaQ flows per class %s", paste(per_class, collapse = "/")), status = combine_statuses(statuses))
}
claim_C15 <- function(claim, flows, context) {
  drops <- sum(num(flows$fav_pushout_victim) + num(flows$fav_drop_favored) + num(flows$fav_drop_standard), na.rm = TRUE)
  ci <- boot_ci(flows, pushout_share)
  list(ours = pct(ci$est), interval = sprintf("%s (%s)", fmt_ci(ci$lo, ci$hi), ci$method), n = sprintf("%d drops", as.integer(drops)),
       status = if (drops < claim$min_sample$drops) INSUFF else band_status(ci$lo, ci$hi, claim$target, claim$tolerance))
}

PAIRED_CLAIMS <- list(C1 = claim_C1, C3 = claim_C3, C4 = claim_C4, C5 = claim_C5, C6 = claim_C6, C7 = claim_C7,
                      C9 = claim_C9, C10 = claim_C10, C11 = claim_C11, C12 = claim_C12, C13 = claim_C13)
# the AQM whose flows each is about, the column it needs (C14 counts favored data packets only: tables
# without fav_favored_data have only the favored packets, handshake included, and Eq. 5 would exceed 1)
# and what its row says when no flow has it
OWN_FLOW_CLAIMS <- list(C2 = list(judge = claim_C2, aqm = "droptail", needs = NA, not_run = "needs valid DropTail runs"),
                        C14 = list(judge = claim_C14, aqm = "faq", needs = "fav_favored_data",
                                   not_run = "needs valid FaQ runs with the favor trace"),
                        C15 = list(judge = claim_C15, aqm = "faq", needs = "fav_pushout_victim",
                                   not_run = "needs valid FaQ runs with the favor trace"))

# C4b: C4 against the paper's other comparators (claims.yaml `comparators`: CHOKe, LAS, RuN2C), each judged
# as C4 judges DropTail: pairs are the comparator's flow and FaQ's flow of the same schedule row (pair_flows:
# same scenario, load, replication, flow id, complete under both), per load from `from_load` up, every load
# the comparator or FaQ ran there must be decided (per_load; fewer than paired_flows_per_load pairs:
# insufficient data). A comparator whose every pair has the same outcome as FaQ's is insufficient data (one
# run given twice, or a pairing error). The claim is about all three: it holds only when every comparator
# holds; one comparator that does not hold makes it not hold; a comparator the results do not have leaves it
# insufficient data at best (a claim never holds on a part it did not test), and the row names it. None of
# them run: not run.
c4b_comparators <- function(claim) unlist(claim$comparators)
claim_C4b <- function(claim, tables, flows, scen_key) {
  comparators <- c4b_comparators(claim)
  runs <- tables$runs[scen == scen_key]
  ran <- comparators[comparators %in% tolower(runs$aqm)]
  missing <- setdiff(comparators, ran)
  names_of <- function(keys) paste(aqm_label(keys), collapse = ", ")
  faq <- flows[aqm_is_faq(aqm)]
  if (!nrow(faq)) return(verdict_row(claim, scen_key, "", "", "", NOTRUN, runs_text(runs[tolower(aqm) %in% ran]$run_id),
                                     note = sprintf("needs valid FaQ runs of this scenario beside %s", names_of(ran))))
  parts <- lapply(ran, function(comparator) {
    name <- aqm_label(comparator)
    compared <- flows[tolower(aqm) == comparator]
    if (!nrow(compared)) return(list(status = INSUFF, text = sprintf("%s: no valid run", name), n = sprintf("%s 0", name), pairs = NULL))
    pairs <- pair_flows(compared, faq)
    n <- sprintf("%s %d", name, nrow(pairs))
    if (identical_sides(pairs))
      return(list(status = INSUFF, n = n, pairs = pairs, text = sprintf(
        "%s: every paired flow has the same outcome under %s and FaQ (one run given twice, or a pairing error)", name, name)))
    context <- list(runs = runs[(tolower(aqm) == comparator | aqm_is_faq(aqm)) & num(load) >= claim$from_load])
    judged <- per_load(claim, pairs[num(load) >= claim$from_load], context,
                       function(load_value, of_load) c4_test_at_load(load_value, of_load, name))
    list(status = judged$status, n = n, pairs = pairs,
         text = sprintf("%s (%s): %s", name, judged$status, if (nzchar(judged$ours)) judged$ours else "no load"))
  })
  status <- combine_statuses(c(vapply(parts, `[[`, "", "status"), rep(INSUFF, length(missing))))
  ours <- paste(vapply(parts, `[[`, "", "text"), collapse = " | ")
  if (length(missing)) ours <- paste0(ours, sprintf(" | not run: %s", names_of(missing)))
  all_pairs <- rbindlist(lapply(parts, `[[`, "pairs"), fill = TRUE)
  note <- c(if (length(missing)) sprintf("%s not run in this scenario: the claim cannot hold without %s", names_of(missing),
                                         if (length(missing) == 1) "it" else "them"),
            censoring_note(tables, scen_key, unique(c(faq$aqm, flows[tolower(aqm) %in% ran]$aqm))))
  verdict_row(claim, scen_key, ours, "per comparator and load: bootstrap over flows within each schedule (or over replications where there are 3 or more)",
              paste(paste(vapply(parts, `[[`, "", "n"), collapse = ", "), "paired flows"), status,
              if (nrow(all_pairs)) pair_runs(all_pairs) else "none", paste(note[nzchar(note)], collapse = "; "))
}

# One baseline claim on one scenario: its row.
baseline_claims <- function(claim, tables, judged_flows, scen_key) {
  runs <- tables$runs[scen == scen_key]
  context <- list(profile = runs$profile[1], bottleneck_mbps = runs$bottleneck_mbps[1], runs = runs)
  flows <- judged_flows[scen == scen_key]
  droptail <- flows[aqm_is_dt(aqm)]; faq <- flows[aqm_is_faq(aqm)]
  if (claim$id == "C4b" && !any(c4b_comparators(claim) %in% tolower(runs$aqm)))
    return(verdict_row(claim, scen_key, "", "", "", NOTRUN, note = sprintf("needs runs of %s in this scenario (config/aqm-bench.yaml runs them)",
                                                                           paste(aqm_label(c4b_comparators(claim)), collapse = ", "))))
  # the same run given twice (or a pairing error) says nothing about FaQ, nor about either AQM alone
  all_pairs <- if (nrow(droptail) && nrow(faq)) pair_flows(droptail, faq) else NULL
  if (!is.null(all_pairs) && identical_sides(all_pairs))
    return(verdict_row(claim, scen_key, "", "", "", INSUFF, runs_text(flows$run_id),
                       "DropTail and FaQ give every paired flow the same outcome: one run given twice, or a pairing error"))
  if (claim$id == "C4b") return(claim_C4b(claim, tables, flows, scen_key))
  if (claim$id %in% names(PAIRED_CLAIMS)) {
    if (!nrow(droptail) || !nrow(faq))
      return(verdict_row(claim, scen_key, "", "", "", NOTRUN, note = "needs valid DropTail and FaQ runs of this scenario"))
    pairs <- if (claim$id == "C11") {
      in_window <- window_flows(tables)[scen == scen_key]
      pair_flows(in_window[aqm_is_dt(aqm)], in_window[aqm_is_faq(aqm)])
    } else all_pairs
    n <- sprintf("%d paired flows", nrow(pairs))
    note <- censoring_note(tables, scen_key, unique(c(droptail$aqm, faq$aqm)))
    need <- claim$min_sample$paired_flows
    if (!nrow(pairs) || (!is.null(need) && nrow(pairs) < need))
      return(verdict_row(claim, scen_key, "", "", n, INSUFF, pair_runs(pairs),
                         paste(c(sprintf("fewer than %s paired flows", need %||% 1), note), collapse = "; ")))
    judged <- PAIRED_CLAIMS[[claim$id]](claim, pairs, context)
    notes <- c(judged$note, note)
    return(verdict_row(claim, scen_key, judged$ours, judged$interval, n, judged$status, pair_runs(pairs),
                       paste(notes[nzchar(notes)], collapse = "; ")))
  }
  own_claim <- OWN_FLOW_CLAIMS[[claim$id]]
  if (is.null(own_claim)) stop(sprintf("claim %s (scenario baseline) has no function in R/verdict_baseline.R", claim$id))
  own <- if (own_claim$aqm == "droptail") droptail else faq
  need <- own_claim$needs
  if (!is.na(need)) own <- if (need %in% names(own)) own[!is.na(num(own[[need]]))] else own[0]
  own <- copy(own)
  for (col in intersect(PAIR_COLS, names(own))) if (col != "run_id") set(own, j = col, value = num(own[[col]]))
  if (!nrow(own)) return(verdict_row(claim, scen_key, "", "", "", NOTRUN, note = own_claim$not_run))
  judged <- own_claim$judge(claim, own, context)
  verdict_row(claim, scen_key, judged$ours, judged$interval, judged$n, judged$status, runs_text(own$run_id))
}
