# The baseline claims: judged on a Table 1 scenario (IW 2), one row per claim and scenario. Most compare
# DropTail and FaQ on the same flows (PAIRED_CLAIMS: a pair table, side a DropTail, side b FaQ); C2, C14
# and C15 are about one AQM's own flows (OWN_FLOW_CLAIMS). Each claim function returns the row's parts:
# list(ours, interval, status, n = , note = ); context: the scenario's runs, TCP profile and bottleneck rate.

# The paper's ns-2 numbers (bands) are judged only on the scenario they come from (claims.yaml
# paper_scenario); elsewhere the part is reported, not judged, and its value stays in the row.
band_or_reported <- function(ci, k, target, tolerance, context, label) {
  if (isTRUE(context$paper_scenario)) band_part(ci, k, target, tolerance, label)
  else part_reported(label, sprintf("the paper's number (%s) comes from ns-2 at 10 Mb/s with its TCP: reported here, judged only on the paper's scenario",
                                   paste(target, collapse = "/")))
}
ci_text <- function(ci, k, f = pct) fmt_ci(ci$lo[k], ci$hi[k], f)
signed_pct <- function(v) ifelse(is.na(v), "NA", sprintf("%+.1f%%", 100 * v))
# G (Eq. 2) on a pair table: DropTail's minus FaQ's mean latency over DropTail's (positive: FaQ faster).
relative_latency_gain <- function(pairs) mean_latency_gain(pairs) / latency_mean(pair_side(pairs, "a"))
drop_ratio_gain <- function(pairs) drop_ratio(pair_side(pairs, "a")) - drop_ratio(pair_side(pairs, "b"))
# "the config never had such flows": no flow of the scenario's runs (scheduled, finished or not) in the class
population_absent <- function(context, in_class) !any(in_class(context$scheduled_L), na.rm = TRUE)
NO_FLOWS_OF <- "the config's size distribution produced no such flow"

# C1: the peak at the initial RTO, and its absence with FaQ
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
       interval = sprintf("DT %s, FaQ %s, DT - FaQ %s", ci_text(ci, 1), ci_text(ci, 2), ci_text(ci, 3)), method = ci$method,
       parts = list(own_value(better_part(ci, 1, "DT peak")), better_part(ci, 3, "DT above FaQ"),
                    own_value(below_part(ci, 2, claim$margin$faq_peak, "no FaQ peak"))))
}
# C3: G over all flows, and the largest G of the short length classes ("up to 55 %")
claim_C3 <- function(claim, pairs, context) {
  pairs <- copy(pairs)[, short_class := fifelse(num(L) < 10, as.character(length_class(L)), NA_character_)]
  short_classes <- pairs[!is.na(short_class), .N, by = short_class][N >= claim$min_sample$short_pairs]$short_class
  statistic <- function(sample) {
    gain <- function(x) sum(x$latency_s.a - x$latency_s.b) / sum(x$latency_s.a)
    by_class <- vapply(short_classes, function(k) gain(sample[short_class %in% k]), 0)
    c(gain(sample), if (length(by_class)) max(by_class, na.rm = TRUE) else NA_real_)
  }
  ci <- boot_ci(pairs, statistic)
  targets <- unlist(claim$target); tolerances <- unlist(claim$tolerance)
  short_part <- if (population_absent(context, function(L) L < 10)) part_not_run("short flows' gain", NO_FLOWS_OF)
                else if (!length(short_classes)) undecided_part("short flows' gain")
                else band_or_reported(ci, 2, targets[2], tolerances[2], context, "short flows' gain")
  list(ours = sprintf("G %s; short flows (L < 10), largest class gain %s", pct(ci$est[1]), pct(ci$est[2])),
       interval = sprintf("%s; short %s", ci_text(ci, 1), ci_text(ci, 2)), method = ci$method,
       parts = list(better_part(ci, 1, "G above 0"), band_or_reported(ci, 1, targets[1], tolerances[1], context, "G"), short_part))
}
claim_C5 <- function(claim, pairs, context) {
  capacity <- 1e6 * num(context$bottleneck_mbps)
  statistic <- function(sample) {
    droptail <- mean(num(sample$goodput_bps.a)) / capacity; faq <- mean(num(sample$goodput_bps.b)) / capacity
    c(droptail, faq, faq - droptail)
  }
  ci <- boot_ci(pairs, statistic)
  list(ours = sprintf("%s / %s", pct(ci$est[1]), pct(ci$est[2])), interval = sprintf("FaQ - DT %s", ci_text(ci, 3)),
       method = ci$method, parts = list(better_part(ci, 3, "FaQ above DT")))
}
claim_C6 <- function(claim, pairs, context) {
  unchanged <- claim$unchanged_s
  statistic <- function(sample) {
    delta <- num(sample$latency_s.a) - num(sample$latency_s.b)
    c(mean(abs(delta) <= unchanged), mean(delta > unchanged), mean(delta < -unchanged), mean(delta > 1))
  }
  ci <- boot_ci(pairs, statistic)
  targets <- unlist(claim$target); tolerances <- unlist(claim$tolerance)
  labels <- c("unchanged", "faster", "slower", "faster by 1 s")
  list(ours = paste(pct(ci$est), collapse = "/"), interval = paste(mapply(fmt_ci, ci$lo, ci$hi), collapse = " "), method = ci$method,
       parts = lapply(1:4, function(k) band_or_reported(ci, k, targets[k], tolerances[k], context, labels[k])))
}
claim_C7 <- function(claim, pairs, context) {
  unchanged <- claim$unchanged_s
  short <- pairs[num(L) < 10]; long <- pairs[num(L) >= 100]
  statistic <- function(sample) {
    delta <- num(sample$latency_s.a) - num(sample$latency_s.b)
    is_short <- num(sample$L) < 10; is_long <- num(sample$L) >= 100
    c(if (any(is_short)) mean(delta[is_short] > unchanged) else NA, if (any(is_short)) mean(delta[is_short] < -unchanged) else NA,
      if (any(is_long)) mean(delta[is_long] > unchanged) else NA)
  }
  ci <- boot_ci(pairs, statistic)
  targets <- unlist(claim$target); tolerances <- unlist(claim$tolerance)
  labels <- c("short improve", "short worsen", "long improve")
  parts <- lapply(1:3, function(k) {
    is_short_part <- k <= 2
    if (population_absent(context, if (is_short_part) function(L) L < 10 else function(L) L >= 100)) return(part_not_run(labels[k], NO_FLOWS_OF))
    if (nrow(if (is_short_part) short else long) < claim$min_sample[[if (is_short_part) "short_pairs" else "long_pairs"]])
      return(undecided_part(labels[k]))
    band_or_reported(ci, k, targets[k], tolerances[k], context, labels[k])
  })
  list(ours = sprintf("short %s improve / %s worsen (n=%d); long %s improve (n=%d)", pct(ci$est[1]), pct(ci$est[2]),
                      nrow(short), pct(ci$est[3]), nrow(long)),
       interval = paste(mapply(fmt_ci, ci$lo, ci$hi), collapse = " "), method = ci$method, parts = parts)
}
claim_C9 <- function(claim, pairs, context) {
  statistic <- function(sample) {
    droptail <- mean_queueing_delay(pair_side(sample, "a")); faq <- mean_queueing_delay(pair_side(sample, "b"))
    c(droptail, faq, droptail - faq)
  }
  ci <- boot_ci(pairs, statistic)
  ms <- function(x) sprintf("%.2f ms", 1000 * x)
  list(ours = sprintf("%s / %s", ms(ci$est[1]), ms(ci$est[2])),
       interval = sprintf("DT %s, FaQ %s, DT - FaQ %s", ci_text(ci, 1, ms), ci_text(ci, 2, ms), ci_text(ci, 3, ms)), method = ci$method,
       parts = list(own_value(band_or_reported(ci, 1, claim$target, claim$tolerance, context, "DT delay")),
                    equivalent_part(ci, 3, claim$margin$delay_s, "DT - FaQ equivalent")))
}
claim_C10 <- function(claim, pairs, context) {
  pairs[, cls := length_class(L)]
  need <- claim$min_sample$packets_per_class
  big <- pairs[, .(a = sum(num(bneck_in.a)), b = sum(num(bneck_in.b))), by = cls][a >= need & b >= need]$cls
  if (length(big) < claim$min_sample$classes)
    return(list(ours = sprintf("%d length classes with enough packets", length(big)), interval = "", method = "",
                parts = list(undecided_part("length classes"))))
  big <- as.character(sort(big))
  statistic <- function(sample) vapply(big, function(class_name) drop_ratio_gain(sample[cls == class_name]), 0)
  ci <- boot_ci(pairs, statistic)
  parts <- lapply(seq_along(big), function(k) better_part(ci, k, big[k]))
  decided <- decide_parts(parts)$part_status
  list(ours = sprintf("FaQ lower in %d of %d classes (%s)", sum(decided == HOLDS), length(big),
                      paste(sprintf("%s: %s", big, decided), collapse = ", ")),
       interval = sprintf("DT - FaQ drop ratio per class: %s", paste(sprintf("%s %s", big, mapply(fmt_ci, ci$lo, ci$hi)), collapse = ", ")),
       method = ci$method, parts = parts)
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
    c(droptail, faq, droptail - faq, if (droptail > 0) (droptail - faq) / droptail else NA_real_)
  }
  ci <- boot_ci(pairs, statistic)
  parts <- if (lost_droptail < claim$min_sample$dt_syn_losses) list(undecided_part("too few DT SYN losses"))
           else list(better_part(ci, 3, "DT above FaQ"), band_or_reported(ci, 4, claim$target, claim$tolerance, context, "reduction"))
  list(ours = sprintf("%s / %s (%d DT SYNs lost); reduction %s", pct(ci$est[1]), pct(ci$est[2]), as.integer(lost_droptail), pct(ci$est[4])),
       interval = sprintf("DT - FaQ %s; reduction %s", ci_text(ci, 3), ci_text(ci, 4)), method = ci$method, parts = parts,
       note = if (at_bottleneck) "SYNs dropped at the bottleneck, all flows scheduled in the window (complete or not)"
              else "tables without bottleneck SYN drops: the senders' SYN retransmissions (SYN-ACK losses included)")
}
claim_C13 <- function(claim, pairs, context) {
  statistic <- function(sample) {
    droptail <- rto_recovery_ratio(pair_side(sample, "a")); faq <- rto_recovery_ratio(pair_side(sample, "b"))
    c(droptail - faq, droptail, faq)
  }
  ci <- boot_ci(pairs, statistic)
  recoveries <- c(sum(num(pairs$RTO.a) + num(pairs$FR.a)), sum(num(pairs$RTO.b) + num(pairs$FR.b)))
  targets <- unlist(claim$target)
  parts <- if (min(recoveries) < claim$min_sample$recoveries_per_aqm) list(undecided_part("too few recoveries"))
           else c(list(better_part(ci, 1, "DT above FaQ")),
                  lapply(1:3, function(k) { part <- band_or_reported(ci, k, targets[k], claim$tolerance, context, c("DT - FaQ", "DT", "FaQ")[k])
                                           if (k == 1) part else own_value(part) }))
  tiny <- pairs[num(L) < 6]
  list(ours = sprintf("%s / %s; FR in flows < 6 packets: DT %d, FaQ %d", pct(ci$est[2]), pct(ci$est[3]),
                      as.integer(sum(num(tiny$FR.a))), as.integer(sum(num(tiny$FR.b)))),
       interval = sprintf("DT - FaQ %s, DT %s, FaQ %s", ci_text(ci, 1), ci_text(ci, 2), ci_text(ci, 3)), method = ci$method, parts = parts)
}
# "As the load grows" (C4, C4b, C12): per load, each metric (a function of a pair table, oriented so that
# positive is FaQ better) and, over the loads, its least-squares slope against load, all from one set of
# resamples. Parts: better at the highest load run, a slope above 0, no worse (with the metric's margin) at
# every other load; a load run but with fewer than paired_flows_per_load pairs is an undecided part, named.
load_trend <- function(claim, pairs, loads_run, metrics, margins, prefix = "") {
  need <- claim$min_sample$paired_flows_per_load
  pairs <- copy(pairs)[, load_n := num(load)]
  counts <- vapply(loads_run, function(l) sum(pairs$load_n == l), 0L)
  loads <- loads_run[counts >= need]
  missing <- lapply(loads_run[counts < need], function(l) undecided_part(sprintf("%s%g: %d pairs", prefix, l, counts[loads_run == l])))
  if (!length(loads)) return(list(parts = missing, text = paste(vapply(missing, `[[`, "", "label"), collapse = "; "), method = ""))
  n_metrics <- length(metrics)
  statistic <- function(sample) {
    rows <- split(seq_len(nrow(sample)), factor(sample$load_n, levels = loads))
    per_load <- vapply(rows, function(r) vapply(metrics, function(f) f(sample[r]), 0), numeric(n_metrics))
    per_load <- matrix(per_load, nrow = n_metrics)
    slopes <- apply(per_load, 1, function(y) if (length(loads) < 2 || anyNA(y)) NA_real_ else stats::lm.fit(cbind(1, loads), y)$coefficients[[2]])
    c(as.vector(per_load), slopes)
  }
  ci <- boot_ci(pairs[load_n %in% loads], statistic)
  at <- function(i, j) (j - 1) * n_metrics + i                 # metric i at load j
  slope_at <- function(i) length(loads) * n_metrics + i
  top <- max(loads_run)
  parts <- missing
  for (i in seq_len(n_metrics)) {
    name <- names(metrics)[i]
    for (j in seq_along(loads)) parts[[length(parts) + 1]] <- if (loads[j] == top) better_part(ci, at(i, j), sprintf("%s%s better at %g", prefix, name, loads[j]))
      else no_worse_part(ci, at(i, j), margins[[i]], sprintf("%s%s no worse at %g", prefix, name, loads[j]))
    parts[[length(parts) + 1]] <- if (length(loads) >= 2) trend_part(ci, slope_at(i), sprintf("%s%s trend", prefix, name))
                                  else undecided_part(sprintf("%s%s trend (one load)", prefix, name))
  }
  per_load_text <- vapply(seq_along(loads), function(j) sprintf("%g: %s", loads[j], paste(vapply(seq_len(n_metrics), function(i)
    sprintf("%s %s %s", names(metrics)[i], signed_pct(ci$est[at(i, j)]), ci_text(ci, at(i, j), signed_pct)), ""), collapse = ", ")), "")
  slope_text <- if (length(loads) >= 2) sprintf("slope per unit load: %s", paste(vapply(seq_len(n_metrics), function(i)
    sprintf("%s %s %s", names(metrics)[i], signed_pct(ci$est[slope_at(i)]), ci_text(ci, slope_at(i), signed_pct)), ""), collapse = ", ")) else ""
  text <- paste(c(per_load_text, vapply(missing, `[[`, "", "label"), if (nzchar(slope_text)) slope_text), collapse = "; ")
  list(parts = parts, text = text, method = ci$method)
}
C4_METRICS <- list(latency = relative_latency_gain, drops = drop_ratio_gain)
c4_margins <- function(claim) list(claim$margin$latency_gain, claim$margin$drop_ratio)
claim_C4 <- function(claim, pairs, context) {
  judged <- load_trend(claim, pairs, sort(unique(num(context$runs$load))), C4_METRICS, c4_margins(claim), "DT ")
  list(ours = judged$text, interval = "per load and slope, in the text (latency: G; drops: DT - FaQ drop ratio)",
       method = judged$method, parts = judged$parts)
}
claim_C12 <- function(claim, pairs, context) {
  rto_gain <- function(sample) rto_ratio(pair_side(sample, "a")) - rto_ratio(pair_side(sample, "b"))
  judged <- load_trend(claim, pairs, sort(unique(num(context$runs$load))), list(`RTO ratio` = rto_gain), list(claim$margin$rto_ratio))
  list(ours = judged$text, interval = "per load and slope, in the text (DT - FaQ RTO ratio)", method = judged$method, parts = judged$parts)
}

# Claims on one AQM's own flows (no pairing: nothing is compared).
claim_C2 <- function(claim, flows, context) {
  recoveries <- sum(num(flows$RTO) + num(flows$FR))
  ci <- boot_ci(flows, rto_recovery_ratio)
  list(ours = pct(ci$est), interval = ci_text(ci, 1), method = ci$method,
       n = sprintf("%d recoveries in %d DT flows", as.integer(recoveries), nrow(flows)),
       parts = list(if (recoveries < claim$min_sample$recoveries) undecided_part("tau")
                    else band_or_reported(ci, 1, claim$target, claim$tolerance, context, "tau")))
}
# C14's classes: 2 packets; the bowl's length classes (its bottom is their lowest P(Favor)); 100 packets or more
C14_BOWL <- c("11-20", "21-50", "51-100")
claim_C14 <- function(claim, flows, context) {
  need <- claim$min_sample$flows_per_class
  bowl <- intersect(C14_BOWL, flows[as.character(length_class(L)) %in% C14_BOWL, .N, by = .(cls = as.character(length_class(L)))][N >= need]$cls)
  statistic <- function(sample) {
    of_bowl <- vapply(bowl, function(k) p_favor(sample[as.character(length_class(L)) == k]), 0)
    c(p_favor(sample[num(L) == 2]), if (length(of_bowl)) min(of_bowl) else NA_real_, p_favor(sample[num(L) >= 100]))
  }
  ci <- boot_ci(flows, statistic)
  per_class <- c(sum(num(flows$L) == 2), sum(as.character(length_class(flows$L)) %in% C14_BOWL), sum(num(flows$L) >= 100))
  in_class <- list(function(L) L == 2, function(L) L > 10 & L <= 100, function(L) L >= 100)
  labels <- c("2 packets", "bowl bottom", "L >= 100")
  targets <- unlist(claim$target); tolerances <- unlist(claim$tolerance)
  parts <- lapply(1:3, function(k) {
    if (population_absent(context, in_class[[k]])) return(part_not_run(labels[k], NO_FLOWS_OF))
    if (per_class[k] < need || (k == 2 && !length(bowl))) return(undecided_part(labels[k]))
    band_or_reported(ci, k, targets[k], tolerances[k], context, labels[k])
  })
  list(ours = sprintf("%s / %s (lowest of %s) / %s", pct(ci$est[1]), pct(ci$est[2]), if (length(bowl)) paste(bowl, collapse = ", ") else "none",
                      pct(ci$est[3])),
       interval = paste(mapply(fmt_ci, ci$lo, ci$hi), collapse = " "), method = ci$method,
       n = sprintf("FaQ flows per class %s", paste(per_class, collapse = "/")), parts = parts)
}
# C15: the overall push-out share, and each length class's share against it ("for all flow lengths")
claim_C15 <- function(claim, flows, context) {
  drops_of <- function(x) sum(num(x$fav_pushout_victim) + num(x$fav_drop_favored) + num(x$fav_drop_standard), na.rm = TRUE)
  drops <- drops_of(flows)
  flows <- copy(flows)[, cls := as.character(length_class(L))]
  classes <- intersect(levels(length_class(1)), flows$cls)
  classes <- classes[vapply(classes, function(k) drops_of(flows[cls == k]) >= claim$min_sample$drops_per_class, TRUE)]
  statistic <- function(sample) {
    overall <- pushout_share(sample)
    c(overall, vapply(classes, function(k) pushout_share(sample[cls == k]) - overall, 0))
  }
  ci <- boot_ci(flows, statistic)
  parts <- if (drops < claim$min_sample$drops) list(undecided_part("too few drops"))
           else c(list(band_or_reported(ci, 1, claim$target, claim$tolerance, context, "overall")),
                  lapply(seq_along(classes), function(k) equivalent_part(ci, k + 1, claim$margin$class_minus_overall, classes[k])))
  list(ours = sprintf("%s overall; per class minus overall: %s", pct(ci$est[1]),
                      if (length(classes)) paste(sprintf("%s %s", classes, signed_pct(ci$est[-1])), collapse = ", ") else "no class with enough drops"),
       interval = paste(c(ci_text(ci, 1), sprintf("%s %s", classes, mapply(fmt_ci, ci$lo[-1], ci$hi[-1], MoreArgs = list(f = signed_pct)))),
                        collapse = "; "),
       method = ci$method, n = sprintf("%d drops", as.integer(drops)), parts = parts)
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
# as C4 judges DropTail (load_trend) on the pairs of the comparator's flow and FaQ's flow of the same
# schedule row; every load the comparator or FaQ ran must be decided. A comparator whose every pair has the
# same outcome as FaQ's is insufficient data (one run given twice, or a pairing error). The claim is about
# all three, decided on the parts of all of them together (Holm over them all): a comparator the results do
# not have leaves it insufficient data at best (a claim never holds on a part it did not test), and the row
# names it. None of them run: not run.
c4b_comparators <- function(claim) unlist(claim$comparators)
claim_C4b <- function(claim, tables, flows, scen_key, context) {
  comparators <- c4b_comparators(claim)
  runs <- context$runs
  ran <- comparators[comparators %in% tolower(runs$aqm)]
  missing <- setdiff(comparators, ran)
  names_of <- function(keys) paste(aqm_label(keys), collapse = ", ")
  faq <- flows[aqm_is_faq(aqm)]
  if (!nrow(faq)) return(verdict_row(claim, scen_key, "", "", "", NOTRUN, runs_text(runs[tolower(aqm) %in% ran]$run_id),
                                     note = sprintf("needs valid FaQ runs of this scenario beside %s", names_of(ran))))
  judged <- lapply(ran, function(comparator) {
    name <- aqm_label(comparator)
    compared <- flows[tolower(aqm) == comparator]
    if (!nrow(compared)) return(list(parts = list(undecided_part(sprintf("%s: no valid run", name))), text = sprintf("%s: no valid run", name),
                                     n = sprintf("%s 0", name), pairs = NULL, method = ""))
    pairs <- pair_flows(compared, faq)
    n <- sprintf("%s %d", name, nrow(pairs))
    if (identical_sides(pairs)) {
      why <- sprintf("%s: every paired flow has the same outcome under %s and FaQ (one run given twice, or a pairing error)", name, name)
      return(list(parts = list(undecided_part(why)), n = n, pairs = pairs, text = why, method = ""))
    }
    loads_run <- sort(unique(num(runs[tolower(aqm) == comparator | aqm_is_faq(aqm)]$load)))
    trend <- load_trend(claim, pairs, loads_run, C4_METRICS, c4_margins(claim), paste0(name, " "))
    c(trend, list(n = n, pairs = pairs, name = name))
  })
  parts <- c(unlist(lapply(judged, `[[`, "parts"), recursive = FALSE),
             lapply(missing, function(m) undecided_part(sprintf("%s not run", aqm_label(m)))))
  decided <- decide_parts(parts)$part_status
  status_of <- function(one) { mine <- vapply(parts, `[[`, "", "label") %in% vapply(one$parts, `[[`, "", "label")
                               if (any(decided[mine] == FAILS)) FAILS else if (all(decided[mine] == HOLDS)) HOLDS else INSUFF }
  ours <- paste(vapply(judged, function(one) if (is.null(one$name)) one$text else sprintf("%s (%s): %s", one$name, status_of(one), one$text), ""),
                collapse = " | ")
  if (length(missing)) ours <- paste0(ours, sprintf(" | not run: %s", names_of(missing)))
  all_pairs <- rbindlist(lapply(judged, `[[`, "pairs"), fill = TRUE)
  note <- c(if (length(missing)) sprintf("%s not run in this scenario: the claim cannot hold without %s", names_of(missing),
                                         if (length(missing) == 1) "it" else "them"),
            context$steady_note, censoring_note(tables, scen_key, unique(c(faq$aqm, flows[tolower(aqm) %in% ran]$aqm))))
  verdict_row(claim, scen_key, ours, "per comparator, load and slope, in the text",
              paste(paste(vapply(judged, `[[`, "", "n"), collapse = ", "), "paired flows"), judged_status(parts),
              if (nrow(all_pairs)) pair_runs(all_pairs) else "none", paste(note[nzchar(note)], collapse = "; "),
              method = paste(unique(unlist(lapply(judged, `[[`, "method"))), collapse = "; "),
              used = runs[run_id %in% c(all_pairs$run_id.a, all_pairs$run_id.b)])
}

# C20 (F13): per schedule, DropTail's over FaQ's mean number of flows in the system and its noise around
# the trend (run.csv, written by the steady test), their logs tested over the schedules with a paired t.
claim_C20 <- function(claim, tables, scen_key, context) {
  runs <- tables$runs[scen == scen_key & valid == 1]
  cols <- c("in_system_mean", "in_system_noise_sd")
  if (!all(cols %in% names(runs))) return(verdict_row(claim, scen_key, "", "", "", NOTRUN, note = "the run tables have no in_system_mean (extract them again)"))
  by <- c("load", "replication")
  same_schedule(runs[aqm_is_dt(aqm) | aqm_is_faq(aqm)], c("scen", by), claim$id)
  schedules <- merge(runs[aqm_is_dt(aqm), c(by, cols, "run_id"), with = FALSE], runs[aqm_is_faq(aqm), c(by, cols, "run_id"), with = FALSE],
                     by = by, suffixes = c(".a", ".b"))
  log_ratio <- function(col) log(num(schedules[[paste0(col, ".a")]]) / num(schedules[[paste0(col, ".b")]]))
  ratios <- lapply(cols, log_ratio)
  n <- sprintf("%d schedules", nrow(schedules))
  used <- runs[run_id %in% c(schedules$run_id.a, schedules$run_id.b)]
  runs_used <- runs_text(used$run_id)
  if (nrow(schedules) < claim$min_sample$schedules)
    return(verdict_row(claim, scen_key, "", "", n, INSUFF, runs_used, sprintf("fewer than %d schedules with a valid DropTail and FaQ run",
                                                                              claim$min_sample$schedules), used = used))
  # the same ratio in every schedule leaves no spread to test against: undecided
  tests <- lapply(ratios, function(d) if (anyNA(d) || sd(d) == 0) list(two = list(estimate = mean(d), conf.int = c(NA, NA)), p_hold = NA, p_fail = NA)
                                      else list(two = t.test(d), p_hold = t.test(d, alternative = "greater")$p.value,
                                                p_fail = t.test(d, alternative = "less")$p.value))
  parts <- mapply(function(t, label) claim_part(t$p_hold, t$p_fail, label), tests, c("mean", "variability"), SIMPLIFY = FALSE)
  ratio_text <- function(t) sprintf("%.3g [%.3g, %.3g]", exp(t$two$estimate), exp(t$two$conf.int[1]), exp(t$two$conf.int[2]))
  verdict_row(claim, scen_key, sprintf("DT/FaQ flows in the system: mean %s, noise sd %s (geometric means over schedules)",
                                       sprintf("%.3g", exp(tests[[1]]$two$estimate)), sprintf("%.3g", exp(tests[[2]]$two$estimate))),
              sprintf("mean %s; noise sd %s", ratio_text(tests[[1]]), ratio_text(tests[[2]])), n, judged_status(parts), runs_used,
              method = sprintf("paired t over %d schedules (log ratio)", nrow(schedules)), used = used)
}

# What a baseline claim knows of its scenario: its runs (the steady ones, for a steady-state claim, the
# others named in steady_note), TCP profile, bottleneck rate, whether it is the paper's own scenario (where
# bands are judged) and the sizes of every flow its runs scheduled (a population the config never had).
baseline_context <- function(claim, tables, scen_key) {
  runs <- tables$runs[scen == scen_key]
  first <- runs[1]
  steady <- steady_runs(claim, runs)
  scheduled <- tables$flows[scen == scen_key]
  list(profile = first$profile, bottleneck_mbps = first$bottleneck_mbps, runs = steady$runs, paper_scenario = is_paper_scenario(first),
       steady_note = steady$note, scheduled_L = if (nrow(scheduled)) num(scheduled$L) else numeric())
}

# A load the scenario ran that a pooled claim's pairs lack, and a schedule (load and replication) of a load it
# has (a run invalid, or no flow complete under both), named with the runs' validity: pooling without it
# weighs the other loads and schedules more. used: the pairs' (or flows') load and replication columns.
missing_schedules_note <- function(runs, used) {
  have <- unique(data.table(load = num(used$load), replication = as.character(used$replication)))
  why <- function(of) {
    invalid <- of[valid != 1]
    if (nrow(invalid)) sprintf("invalid: %s", paste(aqm_label(invalid$aqm), collapse = ", ")) else "no pair"
  }
  loads <- setdiff(sort(unique(num(runs$load))), have$load)
  ran <- unique(runs[num(load) %in% have$load, .(load = num(load), replication = as.character(replication))])
  schedules <- ran[!have, on = c("load", "replication")][order(load, replication)]
  paste(c(if (length(loads)) sprintf("loads missing from the pooled pairs: %s", paste(vapply(loads, function(l)
            sprintf("%g (%s)", l, why(runs[num(load) == l])), ""), collapse = ", ")),
          if (nrow(schedules)) sprintf("schedules missing from the pooled pairs: %s", paste(vapply(seq_len(nrow(schedules)), function(i)
            sprintf("load %g rep %s (%s)", schedules$load[i], schedules$replication[i],
                    why(runs[num(load) == schedules$load[i] & as.character(replication) == schedules$replication[i]])), ""), collapse = ", "))),
        collapse = "; ")
}

# One baseline claim on one scenario: its row.
baseline_claims <- function(claim, tables, judged_flows, scen_key) {
  if (claim$id == "C20") return(claim_C20(claim, tables, scen_key, NULL))
  context <- baseline_context(claim, tables, scen_key)
  runs <- context$runs
  flows <- judged_flows[scen == scen_key & run_id %in% runs$run_id]
  droptail <- flows[aqm_is_dt(aqm)]; faq <- flows[aqm_is_faq(aqm)]
  if (claim$id == "C4b" && !any(c4b_comparators(claim) %in% tolower(tables$runs[scen == scen_key]$aqm)))
    return(verdict_row(claim, scen_key, "", "", "", NOTRUN, note = sprintf("needs runs of %s in this scenario (config/aqm-bench.yaml runs them)",
                                                                           paste(aqm_label(c4b_comparators(claim)), collapse = ", "))))
  # the same run given twice (or a pairing error) says nothing about FaQ, nor about either AQM alone
  all_pairs <- if (nrow(droptail) && nrow(faq)) pair_flows(droptail, faq) else NULL
  if (!is.null(all_pairs) && identical_sides(all_pairs))
    return(verdict_row(claim, scen_key, "", "", "", INSUFF, runs_text(flows$run_id),
                       "DropTail and FaQ give every paired flow the same outcome: one run given twice, or a pairing error"))
  if (claim$id == "C4b") return(claim_C4b(claim, tables, flows, scen_key, context))
  row <- function(judged, n, runs_used, used, extra_note = character()) {
    notes <- c(not_run_note(judged$parts), judged$note, context$steady_note, extra_note)
    verdict_row(claim, scen_key, judged$ours, judged$interval, n, judged_status(judged$parts), runs_used,
                paste(notes[nzchar(notes)], collapse = "; "), method = judged$method, used = used)
  }
  if (claim$id %in% names(PAIRED_CLAIMS)) {
    if (!nrow(droptail) || !nrow(faq))
      return(verdict_row(claim, scen_key, "", "", "", NOTRUN, note = paste(c("needs valid DropTail and FaQ runs of this scenario",
                                                                           if (nzchar(context$steady_note)) context$steady_note), collapse = "; ")))
    pairs <- if (claim$id == "C11") {
      in_window <- window_flows(tables)[scen == scen_key & run_id %in% runs$run_id]
      pair_flows(in_window[aqm_is_dt(aqm)], in_window[aqm_is_faq(aqm)])
    } else all_pairs
    n <- sprintf("%d paired flows", nrow(pairs))
    note <- c(missing_schedules_note(runs, pairs), censoring_note(tables, scen_key, unique(c(droptail$aqm, faq$aqm))))
    note <- note[nzchar(note)]
    used <- runs[run_id %in% c(pairs$run_id.a, pairs$run_id.b)]
    # [[ ]]: `$` would take C4's and C12's paired_flows_per_load (a prefix match) as a pooled minimum they do not have
    need <- claim$min_sample[["paired_flows"]]
    if (!nrow(pairs) || (!is.null(need) && nrow(pairs) < need))
      return(verdict_row(claim, scen_key, "", "", n, INSUFF, pair_runs(pairs),
                         paste(c(sprintf("fewer than %s paired flows", need %||% 1), note), collapse = "; "), used = used))
    return(row(PAIRED_CLAIMS[[claim$id]](claim, pairs, context), n, pair_runs(pairs), used, note))
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
  judged$parts <- lapply(judged$parts, own_value)
  row(judged, judged$n, runs_text(own$run_id), runs[run_id %in% own$run_id],
      missing_schedules_note(runs[if (own_claim$aqm == "droptail") aqm_is_dt(aqm) else aqm_is_faq(aqm)], own))
}
