# testthat unit tests of each metric on tiny tables (run: Rscript analysis/R/tests/run.R).
library(testthat)
fl <- data.table(flow_id = c("1", "2", "3"), L = c("2", "10", "100"), R = c("0", "2", "6"), RTO = c("1", "1", "0"),
                 FR = c("0", "1", "2"), syn_retrans = c("1", "0", "0"), latency_s = c("3.5", "1.0", "2.5"),
                 bneck_in = c("4", "14", "110"), drops = c("1", "2", "5"), qdelay_mean_s = c("0.002", "0.004", ""),
                 bneck_out = c("3", "12", "105"), fav_favored = c("3", "5", "50"), fav_favored_data = c("2", "4", "49"), fav_pushout_victim = c("0", "1", "2"),
                 fav_drop_favored = c("0", "0", "1"), fav_drop_standard = c("1", "1", "2"), goodput_bps = c("1e5", "2e5", "3e5"))
test_that("latency is the mean over flows", expect_equal(latency_mean(fl), 7 / 3))
test_that("drop ratio = drops / bottleneck arrivals", expect_equal(drop_ratio(fl), 8 / 128))
test_that("SYN loss ratio = SYN retransmissions / SYNs sent", expect_equal(syn_loss_ratio(fl), 1 / 4))
test_that("RTO ratio Eq. 3", expect_equal(rto_ratio(fl), 2 / (112 + 8)))
test_that("RTO recovery ratio Eq. 4", {
  expect_equal(rto_recovery_ratio(fl), 2 / 5)
  expect_true(is.na(rto_recovery_ratio(fl[0])))
})
test_that("P(Favor|S=s) Eq. 5 counts favored data packets only, so it never exceeds 1", {
  expect_equal(p_favor(fl[1]), 2 / 2)      # the favored SYN of the 2-packet flow is not a data packet
  expect_equal(p_favor(fl), (2 + 4 + 49) / (112 + 8))
  # a flow whose favor trace was not paired (empty fav_favored_data) counts on neither side
  unpaired <- copy(fl)[2, fav_favored_data := ""]
  expect_equal(p_favor(unpaired), (2 + 49) / (2 + 100 + 6))
  expect_true(is.na(p_favor(unpaired[2])))
})
test_that("push-out share of drops", expect_equal(pushout_share(fl), 3 / 8))
test_that("normalized goodput", expect_equal(normalized_goodput(fl, 1e7), 0.02))
test_that("queueing delay weighted by packets out, missing ignored", expect_equal(mean_queueing_delay(fl), (0.006 + 0.048) / 15))
test_that("latency gain Eq. 2 and the Delta shares, unchanged within the threshold given", {
  # three flow pairs as fig_pairs.R's all_pairs gives them (pair_flows, then T_dt, T_faq, delta)
  p <- data.table(flow_id = c("1", "2", "3"), L = 2, T_dt = c(4, 1, 2), T_faq = c(1, 1.5, 2))[, delta := T_dt - T_faq][]
  expect_equal(latency_gain(p), (3 - 0.5 + 0) / 7)
  expect_equal(latency_gain(p, "positive"), 3 / 7)
  expect_equal(latency_gain(p, "negative"), -0.5 / 7)
  expect_equal(unname(delta_shares(p, 0.001)), c(1 / 3, 1 / 3, 1 / 3, 1 / 3))
  # within a 1 s threshold the 0.5 s slower flow is unchanged
  expect_equal(unname(delta_shares(p, 1)), c(2 / 3, 1 / 3, 0, 1 / 3))
  expect_error(delta_shares(p), "eps")
})
test_that("length classes", expect_equal(as.character(length_class(c(2, 30, 1500))), c("2", "21-50", ">1000")))
test_that("RTT class: the path's configured RTT in RTT order, else the path's hosts", {
  f <- data.table(src = c("a3", "a1", "a2", "a1"), dst = c("b3", "b1", "b2", "b1"), path_rtt_ms = c("200", "4", "", "4"))
  r <- rtt_class(f)
  expect_equal(as.character(r), c("RTT 200 ms", "RTT 4 ms", "a2-b2", "RTT 4 ms"))
  expect_equal(levels(r), c("RTT 4 ms", "RTT 200 ms", "a2-b2"))
  expect_equal(levels(rtt_class(f[, !"path_rtt_ms"])), c("a1-b1", "a2-b2", "a3-b3"))
})
test_that("size CCDF is P(S >= s) at each size present", {
  expect_equal(size_ccdf(c("20", "2", "2", "50", "2")), data.table(L = c(2, 20, 50), ccdf = c(1, 2 / 5, 1 / 5)))
})
test_that("99th-percentile latency, R's default quantile", {
  expect_equal(latency_p99(fl), unname(quantile(c(3.5, 1, 2.5), 0.99)))
  expect_true(is.na(latency_p99(fl[0])))
})
test_that("Jain's index: 1 for equal shares, 1/n when one flow has all, NA without data", {
  expect_equal(jain_index(c(5, 5, 5)), 1)
  expect_equal(jain_index(c(1, 0, 0, 0)), 1 / 4)
  expect_equal(jain_index(c("1", "3", "")), 16 / (2 * 10))
  expect_true(is.na(jain_index(numeric())))
  expect_equal(goodput_fairness(fl), (6e5)^2 / (3 * 14e10))
})
test_that("short flows have fewer than 10 packets, long flows 100 or more", {
  expect_equal(is_short(c("2", "9", "10", "100")), c(TRUE, TRUE, FALSE, FALSE))
  expect_equal(is_long(c("99", "100", "3000")), c(FALSE, TRUE, TRUE))
})
