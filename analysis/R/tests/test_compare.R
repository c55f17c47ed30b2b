# ./favorlab compare's R part (compare_lib.R): a DropTail result against a FaQ result is the verdict's own
# comparison, so its mean latency row is the verdict's DropTail - FaQ gain (mean_latency_gain) negated,
# interval and all; the same tables on both sides differ by nothing.
compare_side <- function(aqm, reps = 0:5) {
  ids <- sprintf("dumbbell-10M-buf8_%s_load0.50_iw2_rep%d", aqm, reps)
  runs <- rbindlist(lapply(seq_along(ids), function(i)
    data.table(run_id = ids[i], scenario = "dumbbell", topology = "dumbbell", aqm = aqm, load = 0.5, iw = 2,
               profile = "paper", replication = reps[i], seed = 11 + reps[i], bottleneck_mbps = 10, buffer_pkts = 8,
               valid = 1L, cc = "reno", size_dist = "lomax", size_mean_pkts = 30, dataplane = "kernel",
               window_start_s = 10, window_end_s = 40, schedule_sha256 = strrep(letters[i], 64))))
  flows <- rbindlist(lapply(seq_along(ids), function(i) {
    set.seed(reps[i])                      # one schedule per replication, the same under both AQMs
    L <- pmax(1, round(rexp(40, 1 / 12)))
    lat <- 0.1 * (1 + sqrt(L)) * exp(rnorm(40, 0, 0.3)) * ifelse(aqm == "favor" & L < 10, 0.7, 1)
    data.table(run_id = ids[i], flow_id = as.character(0:39), direction = "forward", in_metrics = "1", complete = "1",
               in_window = "1", seen = "1", start_s = as.character(10 + 0.7 * 0:39), L = as.character(L),
               latency_s = as.character(lat), drops = as.character(L %/% 20), bneck_in = as.character(L + 2),
               syn_retrans = "0", R = as.character(L %/% 20), RTO = "0")
  }))
  assemble_tables(runs, flows)
}

test_that("DropTail against FaQ: the mean latency row is the verdict's gain negated, with its interval", {
  dt <- compare_side("droptail"); faq <- compare_side("favor")
  res <- compare_tables(dt, faq)
  row <- res$rows[metric == "mean latency (s)"]
  expect_equal(nrow(row), 1)
  expect_equal(c(row$aqm_a, row$aqm_b), c("droptail", "favor"))
  gain <- boot_ci(pair_flows(metric_flows(dt), metric_flows(faq)), mean_latency_gain)
  expect_equal(c(row$diff, row$diff_lo, row$diff_hi), -c(gain$est, gain$hi, gain$lo))
  expect_equal(row$verdict, "B lower")
  expect_equal(row$method, gain$method)
  expect_equal(nrow(res$unpaired), 0)
})

test_that("the same tables on both sides differ by nothing; a replication of one side only is listed", {
  both <- compare_side("droptail")
  res <- compare_tables(both, both)
  expect_true(all(res$rows$diff == 0 & res$rows$diff_lo == 0 & res$rows$diff_hi == 0))
  expect_true(all(res$rows$verdict == "no difference shown"))
  fewer <- compare_side("droptail", 0:4)
  res <- compare_tables(both, fewer)
  expect_equal(res$unpaired$run_id, "dumbbell-10M-buf8_droptail_load0.50_iw2_rep5")
  expect_equal(unique(res$rows$replications), 5L)
})
