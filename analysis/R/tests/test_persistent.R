# Section 5.3 on synthetic tables with known answers: short flows in the system (F14), the persistent flows'
# throughput (F16), their latency by length (F15) and the claim C8.

# One DropTail and one FaQ run of the persistent scenario on the same schedule: a short flow starts every
# second from t0 and lasts `dur(aqm)` seconds (the ones starting in the last `unfinished` seconds never
# finish); `shares(aqm)` are the persistent flows' throughputs (% of the bottleneck), a hundredth of a point
# more in each further replication (`reps` of them, each a schedule). t0 = 1000, window [60, 160).
persistent_tables <- function(dur = function(a) if (a == "favor") 5 else 20, shares = function(a) rep(if (a == "favor") 1.7 else 1.6, 20) + seq(-0.1, 0.1, length.out = 20),
                              window = c(60, 160), unfinished = 3, aqms = c("droptail", "favor"), reps = 1) {
  runs <- list(); flows <- list(); pers <- list()
  for (a in aqms) for (r in seq_len(reps) - 1) {
    id <- sprintf("persistent-10M-buf8-exp6-paper-reno_%s_load0.20_iw2_rep%d", a, r)
    runs[[id]] <- data.table(run_id = id, scenario = "persistent", topology = "dumbbell", aqm = a, load = 0.2, iw = 2,
                             profile = "paper", replication = r, bottleneck_mbps = 10, buffer_pkts = 8, valid = 1L, cc = "reno",
                             size_dist = "exponential", size_mean_pkts = 6, dataplane = "kernel", t0_unix = 1000,
                             window_start_s = window[1], window_end_s = window[2])
    k <- 0:(window[2] - 1)
    done <- ifelse(k >= window[2] - unfinished, NA, 1000 + k + dur(a))
    L <- rep(c(2, 6, 12), length.out = length(k))
    flows[[id]] <- data.table(run_id = id, flow_id = as.character(k), direction = "forward", seen = "1", complete = ifelse(is.na(done), "0", "1"),
                              in_window = as.character(as.integer(k >= window[1])),
                              in_metrics = as.character(as.integer(k >= window[1] & !is.na(done))),
                              syn_t = as.character(1000 + k), done_t = ifelse(is.na(done), "", as.character(done)),
                              L = as.character(L), size_bytes = as.character(L * 1460), latency_s = as.character(dur(a)))
    s <- shares(a) + (if (a == "favor") 0.01 * r else 0)
    pers[[id]] <- data.table(run_id = id, src = "a1", dst = "b1", path_rtt_ms = "4", stream = as.character(seq_along(s) - 1),
                             start_s = "40", share_pct = as.character(s), mbps = as.character(s / 10), retransmits = "0")
  }
  assemble_tables(rbindlist(runs), rbindlist(flows), rbindlist(pers))
}
c8 <- function(t) verdict(t)[claim == "C8"]

test_that("short flows in the system are counted from each flow's SYN to its last byte, unfinished ones stay", {
  d <- short_in_system(persistent_tables())
  expect_equal(d[aqm == "droptail" & t == 100]$n, 20)     # flows started at 81..100 are in (81's ends at 101)
  expect_equal(d[aqm == "favor" & t == 100]$n, 5)
  expect_equal(d[aqm == "favor" & t == 160]$n, 4)         # 156's (ends at 161) and the 3 that never finish
  expect_true(all(d$pers_start == 40))
})

test_that("F14 and F16 draw with the window's means and the persistent shares", {
  out <- tempfile(); dir.create(out)
  t <- persistent_tables()
  fig_F14(t, out); fig_F16(t, out)
  cap14 <- readLines(file.path(out, "F14.caption.txt"))
  expect_match(cap14, "DropTail 20.0 \\[", fixed = FALSE)
  expect_match(cap14, "FaQ 5.0 \\[")
  cap16 <- readLines(file.path(out, "F16.caption.txt"))
  expect_match(cap16, "DropTail 1.60% \\(0.06\\), FaQ 1.70% \\(0.06\\)")
  d16 <- fread(file = file.path(out, "F16.csv"))
  expect_equal(nrow(d16), 40)
  expect_equal(d16[aqm == "favor" & rank == 1]$share, 1.8)
})

test_that("F15 uses the persistent scenario's flows only", {
  out <- tempfile(); dir.create(out)
  t <- persistent_tables()
  fig_F15(t, out)
  d <- fread(file = file.path(out, "F15.csv"))
  expect_true(all(startsWith(d$scen, "persistent ")))
  expect_equal(sort(unique(d[aqm == "favor"]$v)), 5)
  web <- assemble_tables(copy(t$runs)[, scenario := "dumbbell"],
                         t$flows[, .(run_id, flow_id, direction, seen, complete, in_window, in_metrics, syn_t, done_t, L,
                                     size_bytes, latency_s)])
  expect_null(fig_F15(web, out))
  expect_match(FIG_INDEX$F15$detail, "persistent scenario")
})

test_that("C8 holds when FaQ keeps fewer short flows and the persistent flows about the same throughput, over three schedules", {
  v <- c8(persistent_tables(reps = 3))
  expect_equal(v$status, HOLDS)
  expect_match(v$ours, "DT 20.0, FaQ 5.0; persistent flows' total share DT 32.0%, FaQ 34.2%")
  expect_match(v$scenario, "^persistent 10Mb/s")
  # one schedule: the persistent flows' total share is one number per run, so it cannot decide
  expect_equal(c8(persistent_tables())$status, INSUFF)
})

test_that("C8 fails when FaQ keeps more short flows, or takes throughput from the persistent flows beyond the margin", {
  expect_equal(c8(persistent_tables(dur = function(a) if (a == "favor") 20 else 5))$status, FAILS)
  low <- function(a) rep(if (a == "favor") 1.2 else 1.8, 20) + seq(-0.05, 0.05, length.out = 20)
  expect_equal(c8(persistent_tables(shares = low, reps = 3))$status, FAILS)
})

test_that("C8 is insufficient data on a short window or few persistent flows, and not run without the scenario", {
  expect_equal(c8(persistent_tables(window = c(60, 70)))$status, INSUFF)          # 10 samples < 2 x 10 blocks
  expect_equal(c8(persistent_tables(shares = function(a) c(1.5, 1.7)))$status, INSUFF)
  expect_equal(c8(persistent_tables(aqms = "favor"))$status, INSUFF)
  web <- assemble_tables(data.table(run_id = "r", aqm = "droptail", load = 0.5, iw = 2, profile = "paper", replication = 0,
                                    bottleneck_mbps = 10, buffer_pkts = 8, valid = 1L, scenario = "dumbbell"), data.table())
  expect_equal(c8(web)$status, NOTRUN)
})

test_that("C8 and C21 refuse a DropTail and a FaQ run of two schedules under one scenario key", {
  t <- persistent_tables(reps = 3)
  other <- "seed 99 window 60-160s"
  t$runs[aqm == "favor", schedule_id := other]; t$persistent[aqm == "favor", schedule_id := other]
  expect_error(verdict(t, read_claims()["C8"]), "C8: runs .* replayed different schedules")
  expect_error(verdict(t, read_claims()["C21"]), "C21: runs .* replayed different schedules")
})
