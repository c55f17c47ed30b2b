# The verdict on synthetic tables with known answers (claims.yaml's tests, margins, statuses and minimum
# samples), and the decision rules of verdict_status.R on intervals whose p-values are known. Each test judges
# only the claims it is about (a whole verdict takes seconds per call).
options(favorlab.boot_B = 200)
# the size distribution is_table1 takes for the paper's Table 1 (the synthetic runs are Table 1 runs)
TABLE1_SIZES <- Find(function(d) is_table1(data.table(scenario = "dumbbell", size_dist = d, size_mean_pkts = 30, bottleneck_mbps = 10,
                                                       buffer_pkts = 8)), c("lomax", "pareto"))
TABLE1_KEY <- sprintf("dumbbell 10Mb/s buf8 IW2 paper/reno %s-mean30 kernel", TABLE1_SIZES)
judge <- function(t, ids) verdict(t, read_claims()[ids])

# One run per AQM and load (and buffer, IW), every run the same flows (the same schedule): lat(aqm, load, L, i)
# gives each flow's latency, drops(aqm, load, L, i) its drops, rto/fr its recoveries.
synth_tables <- function(lat, n = 300, loads = c(0.15, 0.55, 0.75, 0.95), aqms = c("droptail", "favor"),
                         buffers = 8, iws = 2, drops = function(a, ld, L, i) 0, rto = function(a, ld, L, i) 0,
                         fr = function(a, ld, L, i) 0, valid = function(a, ld, b, w) TRUE, steady = function(a, ld) 1L,
                         mbps = 10, sizes = c(2, 2, 3, 5, 8, 15, 30, 60, 120, 300), reps = 0) {
  set.seed(1)
  L <- sample(sizes, n, replace = TRUE)
  runs <- list(); flows <- list()
  for (a in aqms) for (ld in loads) for (b in buffers) for (w in iws) for (rep in reps) {
    id <- sprintf("dumbbell-10M_%s_load%.2f_iw%d_rep%d_b%d", a, ld, w, rep, b)
    i <- seq_len(n)
    runs[[id]] <- data.table(run_id = id, scenario = "dumbbell", aqm = a, load = ld, iw = w, profile = "paper", replication = rep,
                             bottleneck_mbps = mbps, buffer_pkts = b, valid = as.integer(valid(a, ld, b, w)), cc = "reno",
                             size_dist = TABLE1_SIZES, size_mean_pkts = 30, dataplane = "kernel", topology = "dumbbell",
                             realized_load = ld + 0.01, steady = steady(a, ld))
    d <- drops(a, ld, L, i); r <- rto(a, ld, L, i); f <- fr(a, ld, L, i); T <- lat(a, ld, L, i)
    flows[[id]] <- data.table(run_id = id, flow_id = as.character(i), start_s = as.character(i * 0.1), direction = "forward", in_metrics = "1", in_window = "1", seen = "1",
                              complete = "1", size_bytes = as.character(L * 1460), L = as.character(L),
                              latency_s = as.character(T), R = as.character(d), RTO = as.character(r), FR = as.character(f),
                              syn_retrans = "0", syn_drops_bneck = "0", bneck_in = as.character(L + d), bneck_out = as.character(L),
                              drops = as.character(d), qdelay_mean_s = "0.003", goodput_bps = as.character(8 * L * 1460 / T))
  }
  assemble_tables(rbindlist(runs), rbindlist(flows))
}
status <- function(v, id) v[claim == id]$status
base_lat <- function(a, ld, L, i) 0.3 + 0.01 * L + 0.05 * (i %% 7)
faq_better <- function(a, ld, L, i) base_lat(a, ld, L, i) * (if (a == "favor") 0.7 else 1)

# FaQ faster by a share that grows with the load (20 % at load 0, 40 % at 1); the short flows (L < 10) gain 55 %
faq_grows <- function(a, ld, L, i) base_lat(a, ld, L, i) * (if (a == "favor") ifelse(L < 10, 0.45, 0.8 - 0.2 * ld) else 1)
# DropTail drops a packet of every fifth flow from load 0.5 on, FaQ none
dt_drops <- function(a, ld, L, i) as.integer(a == "droptail" & ld >= 0.5 & i %% 5 == 0)

# An interval whose p_above is known: a normal estimate est with standard error se (bootstrap.R's contract).
known_ci <- function(est, se) list(est = est, lo = est - 1.96 * se, hi = est + 1.96 * se, method = "known",
                                   p_above = function(x) pnorm((x - est) / se))

test_that("no worse needs its margin: a flat interval that says little does not hold", {
  expect_equal(decide(list(no_worse_part(known_ci(-0.01, 0.001), 1, 0.05))), HOLDS)       # worse by less than the margin, precisely
  expect_equal(decide(list(no_worse_part(known_ci(0, 0.1), 1, 0.05))), INSUFF)            # the old rule held here
  expect_equal(decide(list(no_worse_part(known_ci(-0.2, 0.01), 1, 0.05))), FAILS)         # wholly below -margin
  expect_equal(decide(list(no_worse_part(known_ci(-0.06, 0.02), 1, 0.05))), INSUFF)       # below 0 but not beyond the margin
})

test_that("equivalence and bands are two one-sided tests; a statistic equal to the bound everywhere never fails", {
  expect_equal(decide(list(equivalent_part(known_ci(0.01, 0.01), 1, 0.05))), HOLDS)
  expect_equal(decide(list(equivalent_part(known_ci(0.01, 0.05), 1, 0.05))), INSUFF)
  expect_equal(decide(list(equivalent_part(known_ci(0.2, 0.01), 1, 0.05))), FAILS)
  expect_equal(decide(list(band_part(known_ci(0.55, 0.02), 1, 0.56, 0.10))), HOLDS)
  expect_equal(decide(list(band_part(known_ci(0.30, 0.02), 1, 0.56, 0.10))), FAILS)
  # every resample at exactly 0 (no drop under either AQM): neither better nor worse
  zero <- boot_ci(data.table(x = rep(0, 50), load = 0.5, replication = 0), function(d) mean(d$x))
  expect_equal(decide(list(better_part(zero, 1))), INSUFF)
})

test_that("several parts: holds only when all hold, does not hold by Holm, so many parts do not inflate false failures", {
  holds <- claim_part(0.001, 0.999); open <- claim_part(0.5, 0.5)
  expect_equal(decide(list(holds, holds)), HOLDS)
  expect_equal(decide(list(holds, open)), INSUFF)
  # 12 parts, one at p = 0.01: a single test would fail it, Holm (0.025 / 12) does not; at 0.001 it does
  expect_equal(decide(c(rep(list(open), 11), list(claim_part(1, 0.01)))), INSUFF)
  expect_equal(decide(c(rep(list(open), 11), list(claim_part(1, 0.001)))), FAILS)
  # every part exactly on its boundary (p uniform): how often is the claim called false? at most 2.5 %
  set.seed(34)
  false_fails <- mean(replicate(4000, decide(lapply(runif(12), function(p) claim_part(1 - p, p))) == FAILS))
  expect_lte(false_fails, 0.025 + 2 * sqrt(0.025 * 0.975 / 4000))
  expect_gt(false_fails, 0.005)                                 # and it is a test, not a rule that never fails
  # a part whose population the config never ran: the claim is not run on this config (never held on the rest),
  # unless a part that ran fails; a part reported off the paper's scenario is left aside
  absent <- part_not_run("2 packets", "no such flow"); reported <- part_reported("56 %", "ns-2's number")
  expect_equal(decide(list(holds, absent)), NOTRUN)
  expect_equal(decide(list(claim_part(1, 0.001), absent)), FAILS)
  expect_equal(decide(list(holds, reported)), HOLDS)
  expect_equal(decide(list(reported)), NOTRUN)
})

test_that("no claim holds on empty, one-flow or identical DropTail/FaQ tables", {
  empty <- assemble_tables(data.table(run_id = "r", aqm = "droptail", load = 0.5, iw = 2, profile = "paper", replication = 0,
                                      bottleneck_mbps = 10, buffer_pkts = 8, valid = 1L), data.table())
  v <- verdict(empty)
  expect_equal(v$claim, names(read_claims()))
  expect_true(all(v$status == NOTRUN))
  one <- synth_tables(faq_better, n = 1, loads = 0.55)
  expect_false(any(judge(one, c("C1", "C3", "C4", "C9", "C12"))$status %in% c(HOLDS, FAILS)))
  v <- judge(synth_tables(base_lat), c("C1", "C3", "C4", "C9", "C12"))
  expect_true(all(v$status == INSUFF))
  expect_match(v[claim == "C9"]$note, "same outcome")
})

test_that("a FaQ gain that grows with the load holds as the paper says: G about 30 %, short flows 55 %, C4's trend", {
  t <- synth_tables(faq_grows, drops = dt_drops, loads = c(0.15, 0.55, 0.95))
  v <- judge(t, c("C3", "C4", "C12"))
  expect_equal(status(v, "C3"), HOLDS)
  expect_match(v[claim == "C3"]$ours, "short flows \\(L < 10\\), largest class gain 55.0%")
  expect_match(v[claim == "C3"]$method, "block bootstrap over flows within 3 schedule")
  expect_equal(v[claim == "C3"]$scenario, TABLE1_KEY)
  expect_equal(status(v, "C4"), HOLDS)
  expect_match(v[claim == "C4"]$ours, "slope per unit load: latency \\+")
  expect_match(v[claim == "C4"]$margin, "margin latency_gain 0.05, drop_ratio 0.005", fixed = TRUE)
  expect_equal(v[claim == "C4"]$realized_load, "0.15: 0.16 0.16; 0.55: 0.56 0.56; 0.95: 0.96 0.96")
  expect_equal(v[claim == "C4"]$steady, "all 6 steady")
  # C12 has no RTO at all here: nothing is lower, nothing worse
  expect_equal(status(v, "C12"), INSUFF)
  # a gain that does not grow with the load is not "as the load grows", however clear at each load
  v <- judge(synth_tables(faq_better, drops = dt_drops, loads = c(0.15, 0.55, 0.95)), c("C3", "C4"))
  expect_equal(status(v, "C4"), INSUFF)
  expect_match(v[claim == "C4"]$ours, "slope per unit load: latency -?0.0%")
  # G 30 % but the short flows gain 30 %, not 55 %: the paper's "up to 55 %" is tested
  expect_equal(status(v, "C3"), FAILS)
})

test_that("the paper's numbers are judged on its scenario only; elsewhere they are reported, and no part is invented", {
  rto <- function(a, ld, L, i) as.integer(i %% 9 < 5)
  fr <- function(a, ld, L, i) as.integer(i %% 9 >= 5)                      # tau = 5 / 9, inside 56 +- 10 %
  v <- judge(synth_tables(faq_better, rto = rto, fr = fr, loads = 0.55), c("C2", "C9"))
  expect_equal(status(v, "C2"), HOLDS)
  expect_equal(status(v, "C9"), HOLDS)                                     # 3 ms each: DT in its band, the difference 0
  v <- judge(synth_tables(faq_better, rto = rto, fr = fr, loads = 0.55, mbps = 100, buffers = 83), c("C2", "C9"))
  expect_equal(status(v, "C2"), NOTRUN)
  expect_match(v[claim == "C2"]$ours, "^5[56].[0-9]%$")
  expect_match(v[claim == "C2"]$note, "reported here, judged only on the paper's scenario")
  expect_equal(status(v, "C9"), HOLDS)                                     # the equivalence part is judged anywhere
})

test_that("C1 needs a peak at the initial RTO with DropTail and none left with FaQ", {
  # DropTail latencies spread evenly over 0.5-6 s: much mass in [3, 4) s, no peak; FaQ all fast
  flat <- function(a, ld, L, i) if (a == "favor") 0.5 + (i %% 10) / 20 else 0.5 + 5.5 * ((i * 7919) %% 1000) / 1000
  expect_true(status(judge(synth_tables(flat, n = 600, loads = 0.55), "C1"), "C1") != HOLDS)
  peak <- function(a, ld, L, i) ifelse(a == "droptail" & i %% 5 == 0, 3.1 + (i %% 3) / 10, 0.5 + (i %% 10) / 20)
  expect_equal(status(judge(synth_tables(peak, n = 600, loads = 0.55), "C1"), "C1"), HOLDS)
  # FaQ keeps half of DropTail's 20 % peak: smaller, but not gone
  half <- function(a, ld, L, i) ifelse(i %% (if (a == "droptail") 5 else 10) == 0, 3.1 + (i %% 3) / 10, 0.5 + (i %% 10) / 20)
  expect_equal(status(judge(synth_tables(half, n = 600, loads = 0.55), "C1"), "C1"), FAILS)
})

test_that("C7: a class with too few flows is insufficient data; a class the sizes never produce is not run", {
  # short flows exactly as the paper: 58 % faster with FaQ, 25 % slower (each by more than unchanged_s), the rest unchanged; no long flow
  paper_short <- function(a, ld, L, i) base_lat(a, ld, L, i) *
    (if (a == "favor") ifelse(i %% 100 < 58, 0.6, ifelse(i %% 100 < 83, 1.4, 1)) else 1)
  t <- synth_tables(paper_short, n = 1000, loads = c(0.55, 0.75), sizes = c(2, 3, 5, 8))
  t$flows[run_id == run_id[1] & flow_id == "1", L := "150"]             # one long flow scheduled: too few
  v <- judge(t, "C7")
  expect_equal(status(v, "C7"), INSUFF)
  expect_match(v[claim == "C7"]$ours, "short 58.0% improve / 25.0% worsen .* long .* improve \\(n=[01]\\)")
  v <- judge(synth_tables(paper_short, n = 1000, loads = c(0.55, 0.75), sizes = c(2, 3, 5, 8)), "C7")
  expect_equal(status(v, "C7"), NOTRUN)
  expect_match(v[claim == "C7"]$note, "long improve not run: the config's size distribution produced no such flow")
  v <- judge(synth_tables(paper_short, n = 600, loads = 0.55, sizes = c(120, 300)), "C7")
  expect_match(v[claim == "C7"]$note, "short improve not run: .*short worsen not run: ")
})

test_that("C4's minimum is per load: too few pairs at each load are named per load, no pooled minimum is invented", {
  v <- judge(synth_tables(faq_grows, drops = dt_drops, n = 10, loads = c(0.15, 0.55)), "C4")
  expect_equal(status(v, "C4"), INSUFF)
  expect_match(v$ours, "DT 0.15: 10 pairs; DT 0.55: 10 pairs", fixed = TRUE)
})

test_that("C12 decides 'more so at high load' by its trend, and fails when FaQ is worse beyond the margin at high load", {
  rto <- function(a, ld, L, i) as.integer(i %% 3 == 0 & (a == "droptail" | ld < 0.5) | (a == "droptail" & ld >= 0.9 & i %% 3 == 1))
  v <- judge(synth_tables(faq_better, rto = rto, loads = c(0.15, 0.55, 0.95)), "C12")
  expect_equal(status(v, "C12"), HOLDS)
  worse <- function(a, ld, L, i) as.integer(i %% 3 == 0) * (if (a == "favor" && ld == 0.95) 2L else 1L)
  expect_equal(status(judge(synth_tables(faq_better, rto = worse, loads = c(0.15, 0.55, 0.95)), "C12"), "C12"), FAILS)
})

test_that("a load whose FaQ run is invalid leaves C4 insufficient, named; an unsteady load is left out of a steady-state claim, named", {
  t <- synth_tables(faq_grows, drops = dt_drops, valid = function(a, ld, b, w) !(a == "favor" && ld == 0.95))
  v <- judge(t, "C4")
  expect_equal(status(v, "C4"), INSUFF)
  expect_match(v[claim == "C4"]$ours, "0.95: 0 pairs")
  # a pooled claim names the load it lost
  expect_match(judge(t, "C5")$note, "loads missing from the pooled pairs: 0.95 \\(invalid: FaQ\\)")
  # and a schedule it lost at a load it has: one of two replications of 0.55 with an invalid FaQ run
  t <- synth_tables(faq_grows, n = 120, loads = c(0.15, 0.55), reps = 0:1)
  lost <- t$runs[aqm == "favor" & load == 0.55 & replication == 1]$run_id
  t$runs[run_id == lost, valid := 0L]; t$flows[run_id == lost, valid := 0L]
  expect_match(judge(t, "C5")$note, "schedules missing from the pooled pairs: load 0.55 rep 1 \\(invalid: FaQ\\)")
  expect_false(grepl("loads missing", judge(t, "C5")$note, fixed = TRUE))
  t <- synth_tables(faq_grows, drops = dt_drops, loads = c(0.15, 0.55, 0.75, 0.95), steady = function(a, ld) as.integer(ld < 0.9))
  v <- judge(t, "C4")
  expect_equal(status(v, "C4"), HOLDS)                                   # decided on 0.15-0.75
  expect_false(grepl("0.95:", v[claim == "C4"]$ours, fixed = TRUE))
  expect_match(v[claim == "C4"]$note, "left out, not steady \\(a steady-state claim\\): .*load0.95")
  expect_equal(v[claim == "C4"]$steady, "all 6 steady")
  # a run the steady test could not judge (steady empty) is kept, and its row says it was not tested, not that it was unsteady
  t <- synth_tables(faq_grows, drops = dt_drops, loads = c(0.15, 0.55, 0.95), steady = function(a, ld) if (ld == 0.95) NA_integer_ else 1L)
  v <- judge(t, "C4")
  expect_match(v$ours, "0.95:", fixed = TRUE)
  expect_equal(v$steady, "4 of 6 steady; steady test not run: dumbbell-10M_droptail_load0.95_iw2_rep0_b8 dumbbell-10M_favor_load0.95_iw2_rep0_b8")
  t$runs[num(load) == 0.55, steady := 0L]
  expect_match(judge(t, "C5")$steady, "^2 of 4 steady; steady test not run: .*load0.95.*load0.95")
})

test_that("C16 needs two buffer sizes with DropTail and FaQ pairs, judges each load apart, and tests the plateau past 60 packets", {
  only_dt_at_60 <- synth_tables(faq_better, loads = 0.55, buffers = c(8, 60, 100),
                                valid = function(a, ld, b, w) !(a == "favor" && b == 60))
  expect_equal(status(judge(only_dt_at_60, "C16"), "C16"), INSUFF)
  v <- judge(synth_tables(faq_better, loads = c(0.55, 0.95), buffers = c(8, 60, 100)), "C16")
  expect_equal(status(v, "C16"), HOLDS)
  expect_match(v$ours, "8 pkts at 0.55: .*8 pkts at 0.95: .*60 pkts at 0.55: .*100 pkts at 0.95: .*no change past 60 packets at 0.95")
  # FaQ 20 % slower at 100 packets than at 60: the latency still changes past 60 packets
  t <- synth_tables(faq_better, loads = 0.55, buffers = c(8, 60, 100))
  t$flows[aqm == "favor" & num(buffer_pkts) == 100, latency_s := as.character(num(latency_s) * 1.2)]
  t$flows[aqm == "droptail" & num(buffer_pkts) == 100, latency_s := as.character(num(latency_s) * 1.5)]
  expect_equal(status(judge(t, "C16"), "C16"), FAILS)
  # no two buffers of 60 packets or more: the plateau is untested, the claim never holds
  v <- judge(synth_tables(faq_better, loads = 0.55, buffers = c(8, 60)), "C16")
  expect_equal(status(v, "C16"), INSUFF)
  expect_match(v$ours, "no change past 60 packets: untested, the sweep has fewer than two buffer sizes of 60 packets or more")
  expect_equal(status(judge(synth_tables(faq_better, loads = 0.55), "C16"), "C16"), NOTRUN)
})

test_that("claims are judged per scenario: IW 10 runs never mix into the IW 2 baseline", {
  # FaQ better at IW 2; at IW 10 FaQ is worse: the baseline claims see only IW 2
  t <- synth_tables(faq_grows, iws = c(2, 10), loads = c(0.15, 0.55, 0.95))
  t$flows[num(iw) == 10 & aqm == "favor", latency_s := as.character(num(latency_s) * 2)]
  v <- judge(t, c("C3", "C18"))
  expect_equal(unique(v[claim == "C3"]$scenario), TABLE1_KEY)
  expect_equal(status(v, "C3"), HOLDS)
  expect_equal(status(v, "C18"), FAILS)                  # FaQ worse at IW 10
})

test_that("pairs are the flows that completed under both AQMs", {
  t <- synth_tables(faq_better, loads = 0.55)
  t$flows[aqm == "favor" & flow_id %in% c("1", "2"), `:=`(in_metrics = "0", complete = "0", latency_s = "")]
  fl <- metric_flows(t)
  p <- pair_flows(fl[aqm_is_dt(aqm)], fl[aqm_is_faq(aqm)])
  expect_equal(nrow(p), 298)
  expect_false(any(p$flow_id %in% c("1", "2")))
  cz <- censoring(t)
  expect_equal(cz[aqm == "favor", sum(unfinished)], 2)
  expect_match(censoring_note(t, unique(t$runs$scen), c("droptail", "favor")), "favor 2 of 300")
})

# C4b: FaQ against CHOKe, LAS and RuN2C, each as C4 judges DropTail (pairs of the same schedule row, per load)
FIVE <- c("droptail", "favor", "choke", "las", "run2c")
v4 <- function(t) judge(t, c("C4", "C4b"))
faster_than_all <- function(a, ld, L, i) faq_grows(if (a == "favor") a else "droptail", ld, L, i)
drops_but_faq <- function(a, ld, L, i) dt_drops(if (a == "favor") a else "droptail", ld, L, i)

test_that("C4b holds when FaQ's gain over CHOKe, LAS and RuN2C grows with the load, and C4 is unchanged", {
  v <- v4(synth_tables(faster_than_all, drops = drops_but_faq, aqms = FIVE, loads = c(0.15, 0.55, 0.95)))
  r <- v[claim == "C4b"]
  expect_equal(r$status, HOLDS)
  expect_match(r$ours, "CHOKe (holds): 0.15: latency +", fixed = TRUE)
  expect_match(r$ours, "LAS \\(holds\\): .* \\| RuN2C \\(holds\\): .*slope per unit load")
  expect_equal(r$n, "CHOKe 900, LAS 900, RuN2C 900 paired flows")     # 300 flows x 3 loads each
  expect_match(r$runs, "^12 runs: ")                                  # 3 loads x (FaQ + 3 comparators), first 4 listed
  # C4 reads DropTail and FaQ alone: the same row with or without the other AQMs
  c4 <- v4(synth_tables(faster_than_all, drops = drops_but_faq, loads = c(0.15, 0.55, 0.95)))[claim == "C4"]
  expect_equal(v[claim == "C4"], c4)
  expect_equal(c4$status, HOLDS)
})

test_that("C4b is not run without CHOKe, LAS and RuN2C, and never holds with one of them missing", {
  v <- v4(synth_tables(faq_better, loads = 0.55))
  expect_equal(status(v, "C4b"), NOTRUN)
  expect_match(v[claim == "C4b"]$note, "needs runs of CHOKe, LAS, RuN2C in this scenario")
  # CHOKe and LAS clearly beaten, RuN2C not run: insufficient data, and the row says which is missing
  v <- v4(synth_tables(faster_than_all, drops = drops_but_faq, aqms = c("droptail", "favor", "choke", "las"), loads = c(0.15, 0.55, 0.95)))
  r <- v[claim == "C4b"]
  expect_equal(r$status, INSUFF)
  expect_match(r$ours, "CHOKe \\(holds\\): .* \\| LAS \\(holds\\): .* \\| not run: RuN2C$")
  expect_match(r$note, "RuN2C not run in this scenario: the claim cannot hold without it")
  # LAS faster than FaQ beyond the margin: does not hold, whatever RuN2C would have said
  las_wins <- function(a, ld, L, i) base_lat(a, ld, L, i) * switch(a, favor = 0.7, las = 0.5, 1)
  v <- v4(synth_tables(las_wins, aqms = c("favor", "choke", "las"), loads = 0.55))
  r <- v[claim == "C4b"]
  expect_equal(r$status, FAILS)
  expect_match(r$ours, "LAS (does not hold): 0.55: latency -40.0%", fixed = TRUE)
  expect_match(r$ours, "not run: RuN2C", fixed = TRUE)
})

test_that("C4b: a comparator with too few pairs at a load is insufficient data, named with its load", {
  v <- v4(synth_tables(faster_than_all, drops = drops_but_faq, aqms = FIVE, loads = c(0.15, 0.55, 0.95),
                       valid = function(a, ld, b, w) !(a == "run2c" && ld == 0.95)))
  r <- v[claim == "C4b"]
  expect_equal(r$status, INSUFF)
  expect_match(r$ours, "RuN2C \\(insufficient data\\): .*RuN2C 0.95: 0 pairs")
  expect_match(r$ours, "CHOKe (holds)", fixed = TRUE)
  # FaQ given CHOKe's outcomes on every flow: a pairing error or one run given twice says nothing
  t <- synth_tables(faq_better, aqms = c("favor", "choke", "las", "run2c"), loads = 0.55)
  t$flows[aqm == "choke", latency_s := t$flows[aqm == "favor"]$latency_s]
  r <- v4(t)[claim == "C4b"]
  expect_equal(r$status, INSUFF)
  expect_match(r$ours, "CHOKe: every paired flow has the same outcome under CHOKe and FaQ", fixed = TRUE)
})

# C19: the SYN-flood safety claim, no worse within its margins (completed share 2 points, latency 10 %)
flood_tables <- function(lat, done = function(a, i) TRUE) {
  t <- synth_tables(lat, loads = 0.55, n = 400)
  t$runs[, flood_x := 10]
  t$flows[, complete := ifelse(done(aqm, as.integer(flow_id)), "1", "0")]
  assemble_tables(t$runs[, !c("scen", "settings")], t$flows[, names(t$flows) %in% c("run_id", "flow_id", "direction", "in_metrics", "in_window", "seen",
                                                                               "complete", "size_bytes", "L", "latency_s", "start_s", "R", "RTO", "FR",
                                                                               "syn_retrans", "syn_drops_bneck", "bneck_in", "bneck_out", "drops",
                                                                               "qdelay_mean_s", "goodput_bps"), with = FALSE])
}
test_that("C19 holds only within its margins: a small loss holds, a flat interval that says little does not, a clear loss fails", {
  slower <- function(f) function(a, ld, L, i) base_lat(a, ld, L, i) * (if (a == "favor") f else 1)
  expect_equal(status(judge(flood_tables(slower(1.03)), "C19"), "C19"), HOLDS)        # 3 % slower: inside the 10 % margin
  expect_equal(status(judge(flood_tables(slower(1.5)), "C19"), "C19"), FAILS)         # 50 % slower
  # FaQ leaves one flow in ten unfinished that DropTail finishes: 10 points beyond the 2-point margin
  v <- judge(flood_tables(slower(1), done = function(a, i) !(a == "favor" & i %% 10 == 0)), "C19")
  expect_equal(status(v, "C19"), FAILS)
  expect_match(v$margin, "margin completed_share 0.02, latency_gain 0.1", fixed = TRUE)
  # the same mean latency, but one FaQ flow in 40 ten times slower: an interval wider than the margin, which
  # the old rule ("not worse beyond the interval") held
  noisy <- function(a, ld, L, i) if (a == "favor") ifelse(i %% 40 == 0, 10, 0.775) else rep(1, length(i))
  expect_equal(status(judge(flood_tables(noisy), "C19"), "C19"), INSUFF)
})

# The favor trace's columns on FaQ's flows: favored data packets share(L) of each flow, one drop per flow, a
# push-out with probability pushout(L) (as every i-th flow).
with_favor <- function(t, share, pushout = function(L) 0.3) {
  size <- num(t$flows$L); i <- as.integer(t$flows$flow_id)
  set(t$flows, j = "fav_favored_data", value = as.character(round(share(size) * size)))
  pushed <- (i * 7919) %% 10 < 10 * pushout(size)                 # spread over the schedule, not in runs of start time
  set(t$flows, j = "fav_pushout_victim", value = as.character(as.integer(pushed)))
  set(t$flows, j = "fav_drop_favored", value = "0")
  set(t$flows, j = "fav_drop_standard", value = as.character(as.integer(!pushed)))
  t
}
bowl <- function(L) ifelse(L == 2, 1, ifelse(L >= 100, 0.7, ifelse(L > 20 & L <= 50, 0.5, 0.9)))

test_that("C14 reads the bowl's bottom, not its mean, and is not run without 2-packet flows", {
  v <- judge(with_favor(synth_tables(faq_better, n = 600, loads = 0.55, sizes = c(2, 15, 30, 60, 120, 300)), bowl), "C14")
  expect_equal(status(v, "C14"), HOLDS)                       # the bowl's mean (about 79 %) is far from 50 %: its bottom is 50 %
  expect_match(v$ours, "^100.0% / 50.0% \\(lowest of 11-20, 21-50, 51-100\\) / 70.0%")
  v <- judge(with_favor(synth_tables(faq_better, n = 600, loads = 0.55, sizes = c(15, 30, 60, 120, 300)), bowl), "C14")
  expect_equal(status(v, "C14"), NOTRUN)
  expect_match(v$note, "2 packets not run: the config's size distribution produced no such flow")
})

test_that("C15 holds when push-outs are 30 % in every length class, and fails when one class takes twice its share", {
  sizes <- c(5, 30, 300)
  v <- judge(with_favor(synth_tables(faq_better, n = 1500, loads = 0.55, sizes = sizes), bowl), "C15")
  expect_equal(status(v, "C15"), HOLDS)
  v <- judge(with_favor(synth_tables(faq_better, n = 1500, loads = 0.55, sizes = sizes), bowl, function(L) ifelse(L >= 100, 0.6, 0.3)), "C15")
  expect_equal(status(v, "C15"), FAILS)
  expect_match(v$ours, "201-500 \\+2[0-9].[0-9]%")
})

test_that("C13 cannot hold on two AQMs with the same recovery ratio, whatever their level", {
  rto <- function(a, ld, L, i) as.integer(i %% 100 < 47)               # 47 %: inside both AQMs' bands
  fr <- function(a, ld, L, i) as.integer(i %% 100 >= 47)
  expect_equal(status(judge(synth_tables(faq_better, rto = rto, fr = fr, loads = 0.55), "C13"), "C13"), FAILS)
  # the paper's 56 % and 38 %, the flows that recover by RTO spread over the schedule (not in runs of start time)
  rto_faq <- function(a, ld, L, i) as.integer((i * 7919) %% 100 < (if (a == "favor") 38 else 56))
  fr_faq <- function(a, ld, L, i) 1L - rto_faq(a, ld, L, i)
  expect_equal(status(judge(synth_tables(faq_better, rto = rto_faq, fr = fr_faq, loads = 0.55, n = 600), "C13"), "C13"), HOLDS)
})

test_that("claims.yaml: every margin, band and threshold has its reason, and every no-worse or equivalence test its margin", {
  claims <- read_claims()
  for (claim in claims) {
    test <- paste(claim$test, collapse = " ")
    # "as C4", "as C19": the test of the claim named, whose margins it must repeat
    like <- regmatches(test, regexpr("^as C[0-9]+b?", test))
    if (length(like)) test <- paste(test, claims[[sub("^as ", "", like)]]$test)
    # [[ ]], not $: `$` matches a prefix, and claim$margin would find margin_reason
    if (grepl("no_worse|equivalent|no peak", test)) expect_false(is.null(claim[["margin"]]), label = paste(claim$id, "margin"))
    if (!is.null(claim[["margin"]])) expect_true(nzchar(claim[["margin_reason"]] %||% ""), label = paste(claim$id, "margin_reason"))
    if (!is.null(claim[["target"]])) expect_true(nzchar(claim[["tolerance_reason"]] %||% ""), label = paste(claim$id, "tolerance_reason"))
    if (!is.null(claim[["unchanged_s"]])) expect_true(nzchar(claim[["unchanged_reason"]] %||% ""), label = paste(claim$id, "unchanged_reason"))
  }
  expect_setequal(names(read_paper_scenario()), c("bottleneck_mbps", "profile", "dataplane", "iw"))
  # a margin's reason without the margin (C19b's margin deleted) is refused by name, never shown as the margin
  lines <- readLines(CLAIMS_YAML())
  c19b <- which(lines == "  - id: C19b")
  cut <- c19b + which(grepl("^    margin: ", lines[-seq_len(c19b)]))[1]
  path <- tempfile(fileext = ".yaml"); writeLines(lines[-cut], path)
  expect_error(read_claims(path), "claim C19b has margin_reason without margin; fix: give both")
})

test_that("C20 compares the flows in the system per schedule over three or more schedules, never over one", {
  t <- synth_tables(faq_better, loads = c(0.15, 0.55, 0.95), n = 50)
  t$runs[, `:=`(in_system_mean = ifelse(aqm == "favor", 6 + load, 9 * (1 + load)), in_system_noise_sd = ifelse(aqm == "favor", 2, 3 + load))]
  v <- judge(t, "C20")
  expect_equal(status(v, "C20"), HOLDS)
  expect_match(v$method, "paired t over 3 schedules")
  one <- copy(t); one$runs <- one$runs[num(load) == 0.55]
  expect_equal(status(judge(one, "C20"), "C20"), INSUFF)
})

test_that("C21: the persistent flows' shares vary less with FaQ, judged per schedule on the same flows under both AQMs", {
  t <- synth_tables(faq_better, loads = 0.2, n = 50)
  with_persistent <- function(spread) {
    shares <- rbindlist(lapply(c("droptail", "favor"), function(a) data.table(
      run_id = t$runs[aqm == a]$run_id, src = "a1", dst = "b1", stream = as.character(0:29),
      share_pct = as.character(1.8 + (if (a == "droptail") spread else 0.2) * sin(1:30 * 2.3)))))
    t$persistent <- merge(shares, t$runs[, .(run_id, aqm, load, replication, valid, scen)], by = "run_id")
    t
  }
  v <- judge(with_persistent(1.5), "C21")
  expect_equal(status(v, "C21"), HOLDS)
  expect_match(v$ours, "^load 0.2 rep 0: DT/FaQ variance 56.[23] \\[.* over 30 flows$")
  expect_equal(status(judge(with_persistent(0.2), "C21"), "C21"), INSUFF)
})

test_that("a verdict row carries its parts: kind, whether they compare the two sides, and their own status", {
  parts <- list(own_value(better_part(known_ci(0.05, 0.01), 1, "DT peak")), better_part(known_ci(-0.001, 0.01), 1, "DT above FaQ"),
                no_worse_part(known_ci(0, 0.001), 1, 0.05, "latency"))
  got <- jsonlite::fromJSON(attr(judged_status(parts), "parts"))
  expect_equal(got$label, c("DT peak", "DT above FaQ", "latency"))
  expect_equal(got$kind, c("better", "better", "no_worse"))
  expect_equal(got$between, c(FALSE, TRUE, TRUE))
  expect_equal(got$status, c(HOLDS, INSUFF, HOLDS))
  expect_equal(as.character(judged_status(parts)), decide(parts))
})

test_that("--roles gives the two sides to the names it lists, and a half-given role is refused", {
  old <- options(favorlab.verdict_roles = parse_roles("droptail=favor_twin,favorqueue=favor"))
  on.exit(options(old))
  expect_equal(aqm_is_dt(c("droptail", "favor_twin", "favor")), c(FALSE, TRUE, FALSE))
  expect_equal(aqm_is_faq(c("droptail", "favor_twin", "favor")), c(FALSE, FALSE, TRUE))
  expect_error(parse_roles("droptail=favor"), "give both sides")
})
