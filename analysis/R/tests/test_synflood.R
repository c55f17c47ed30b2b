# Section 9.1 on synthetic tables with known answers: the legitimate flows under a SYN flood (X1) and the
# claim C19.
status <- function(v, id) v[claim == id]$status

# Runs of one schedule under DropTail and FaQ with and without a SYN flood (run.csv's flood_x): done(a, fx, i)
# says whether legitimate flow i completed, lat(a, fx, i) its latency.
flood_tables <- function(done, lat, n = 300, rates = c(0, 1)) {
  runs <- list(); flows <- list()
  for (a in c("droptail", "favor")) for (fx in rates) {
    id <- sprintf("dumbbell-10M-syn%gx_%s_load0.50_iw2_rep0", fx, a)
    i <- seq_len(n)
    ok <- done(a, fx, i)
    runs[[id]] <- data.table(run_id = id, scenario = "dumbbell", aqm = a, load = 0.5, iw = 2, profile = "paper", replication = 0,
                             bottleneck_mbps = 10, buffer_pkts = 8, valid = 1L, cc = "reno", size_dist = "pareto",
                             size_mean_pkts = 30, dataplane = "kernel", topology = "dumbbell", flood_x = if (fx > 0) fx else NA)
    flows[[id]] <- data.table(run_id = id, flow_id = as.character(i), direction = "forward", in_window = "1", seen = "1",
                              in_metrics = ifelse(ok, "1", "0"), complete = ifelse(ok, "1", "0"), L = "10",
                              size_bytes = "14600", latency_s = ifelse(ok, as.character(lat(a, fx, i)), ""),
                              R = "0", RTO = "0", FR = "0", syn_retrans = "0", syn_drops_bneck = "0", bneck_in = "10",
                              bneck_out = "10", drops = "0", qdelay_mean_s = "0.003", goodput_bps = "1e5")
  }
  assemble_tables(rbindlist(runs), rbindlist(flows))
}

test_that("C19 is judged per flood rate on the same legitimate flows, finished or not", {
  # without runs under a flood C19 is not run
  expect_equal(status(verdict(flood_tables(function(a, fx, i) TRUE, function(a, fx, i) 1, rates = 0)), "C19"), NOTRUN)
  # under the flood DropTail finishes 60 % of the flows, FaQ 90 %, and FaQ's are faster: holds at 1x and 2x
  done <- function(a, fx, i) if (fx == 0 || a == "favor") i %% 10 != 0 else i %% 5 < 3
  lat <- function(a, fx, i) (0.4 + (i %% 7) / 10) * (if (fx > 0 && a == "droptail") 2 else 1)
  v <- verdict(flood_tables(done, lat, rates = c(0, 1, 2)))[claim == "C19"]
  expect_equal(nrow(v), 2)
  expect_setequal(v$scenario, paste("dumbbell 10Mb/s buf8 IW2 paper/reno pareto-mean30 kernel SYN flood", c("1x", "2x")))
  expect_true(all(v$status == HOLDS))
  expect_match(v$ours[1], "completed DT 60.0%, FaQ 90.0%")
  expect_match(v$n[1], "300 paired flows")
  # FaQ finishing fewer of the legitimate flows than DropTail beyond the interval fails it
  worse <- function(a, fx, i) if (fx > 0 && a == "favor") i %% 5 < 3 else i %% 10 != 0
  expect_equal(status(verdict(flood_tables(worse, lat)), "C19"), FAILS)
  # and too few flows in the window is insufficient data, not a pass
  expect_equal(status(verdict(flood_tables(done, lat, n = 40)), "C19"), INSUFF)
})

test_that("X1 counts every legitimate window flow per rate and AQM, latency on the flows done under both", {
  done <- function(a, fx, i) if (fx == 0 || a == "favor") i %% 10 != 0 else i %% 5 < 3
  lat <- function(a, fx, i) (0.4 + (i %% 7) / 10) * (if (fx > 0 && a == "droptail") 2 else 1)
  t <- flood_tables(done, lat, rates = c(0, 1))
  r <- flood_study_runs(t)
  expect_setequal(r$rate, c(0, 1))              # the rate-0 runs of the same scenario and load come along
  d <- completed_by_rate(flood_window_flows(t, r))
  expect_equal(d[rate == 1 & aqm == "droptail"]$value, 0.6)
  expect_equal(d[rate == 1 & aqm == "favor"]$value, 0.9)
  expect_true(all(d$flows == 300))              # finished or not
  expect_true(all(d$lo <= d$value & d$value <= d$hi))
  l <- latency_by_rate(flood_window_flows(t, r))
  # at 1x only flows done under both count: i %% 5 < 3 and i %% 10 != 0 (150 flows), each side the same ones
  expect_true(all(l[rate == 1]$flows == 150))
  expect_gt(l[rate == 1 & aqm == "droptail"]$value, l[rate == 1 & aqm == "favor"]$value)
  out <- tempfile(); dir.create(out)
  fig_X1(t, out)
  expect_true(file.exists(file.path(out, "X1.png")))
  cap <- readLines(file.path(out, "X1.caption.txt"))
  expect_match(cap, "^Paper \\(X1, Section 9.1\\)")
  expect_match(cap, "DropTail 60.0%")
  expect_equal(nrow(fread(file = file.path(out, "X1.csv"))), 8)
})

test_that("C19b judges the bounded FaQ on its own row, never pooled with FaQ", {
  # FaQ slower under the flood, FaQ-B1 as fast as DropTail: C19 fails, C19b holds, each on its own AQM
  done <- function(a, fx, i) i %% 10 != 0
  lat <- function(a, fx, i) (0.4 + (i %% 7) / 10) * (if (fx > 0 && a == "favor") 2 else 1)
  t <- flood_tables(done, lat, rates = c(0, 1))
  b1 <- copy(t$flows[aqm == "favor"])
  b1[, `:=`(aqm = "favor_burst1", run_id = sub("_favor_", "_favor_burst1_", run_id))]
  b1[num(flood_x) > 0 & complete == "1", latency_s := as.character(num(latency_s) / 2)]
  rb <- copy(t$runs[aqm == "favor"])
  rb[, `:=`(aqm = "favor_burst1", run_id = sub("_favor_", "_favor_burst1_", run_id))]
  t2 <- t; t2$flows <- rbindlist(list(t$flows, b1), use.names = TRUE); t2$runs <- rbindlist(list(t$runs, rb), use.names = TRUE)
  v <- verdict(t2)
  expect_equal(status(v, "C19"), FAILS)
  expect_equal(status(v, "C19b"), HOLDS)
  expect_match(v[claim == "C19b"]$ours, "FaQ-B1 90.0%")
  # without FaQ-B1 runs C19b is not run, and says which runs it needs
  v <- verdict(t)[claim == "C19b"]
  expect_equal(v$status, NOTRUN)
  expect_match(v$note, "FaQ-B1")
})

test_that("X1 and C19 count the same flows: none without a flow id, none of the reverse direction", {
  done <- function(a, fx, i) if (fx == 0 || a == "favor") i %% 10 != 0 else i %% 5 < 3
  lat <- function(a, fx, i) (0.4 + (i %% 7) / 10) * (if (fx > 0 && a == "droptail") 2 else 1)
  t <- flood_tables(done, lat, rates = c(0, 1))
  # connections the schedule does not know (no flow id: the flood's own, had one slipped into the capture)
  # and the reverse traffic's flows, under every run: they would pair with each other by an empty id
  extra <- t$flows[, .SD[1:20], by = run_id]
  extra[, `:=`(flow_id = "", complete = "0", latency_s = "", in_metrics = "0")]   # unjoined: never in the metrics
  rev <- t$flows[, .SD[1:20], by = run_id]
  rev[, `:=`(direction = "reverse", flow_id = paste0("r", flow_id))]
  t2 <- t; t2$flows <- rbindlist(list(t$flows, extra, rev), use.names = TRUE)
  expect_equal(nrow(flood_counted_flows(t2$flows)), nrow(t$flows))
  v <- verdict(t2)[claim == "C19"]
  expect_match(v$n, "^300 paired flows")
  expect_equal(v$ours, verdict(t)[claim == "C19"]$ours)
  d <- completed_by_rate(flood_window_flows(t2, flood_study_runs(t2)))
  expect_true(all(d$flows == 300))
})

test_that("X1 is not drawn, and says why, without flood runs", {
  out <- tempfile(); dir.create(out)
  t <- flood_tables(function(a, fx, i) TRUE, function(a, fx, i) 1, rates = 0)
  fig_X1(t, out)
  expect_false(file.exists(file.path(out, "X1.png")))
  expect_match(FIG_INDEX[["X1"]]$detail, "synflood.rates_x")
})

test_that("C19 refuses a DropTail and a FaQ run of two schedules under one scenario key", {
  t <- flood_tables(function(a, fx, i) TRUE, function(a, fx, i) 1)
  t$flows[aqm == "favor", schedule_id := "seed 99 window 0-70s"]
  expect_error(verdict(t, read_claims()["C19"]), "C19: runs .* replayed different schedules")
})
