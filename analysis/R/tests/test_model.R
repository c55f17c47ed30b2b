# testthat tests of the stochastic model of Section 7.2 (model.R), its fit and Figs. 23-24 (fig_model.R).
# The expected values are fractions worked out by hand from the paper's equations, never from the code.
library(testthat)

test_that("Eq. 6, Z = 0: up to three packets of each slow-start burst favored", {
  s <- c(1, 2, 3, 6, 7, 10, 11, 15, 16, 18, 19, 31)
  # 1 for s <= 6, (s-1)/s on 7..10, 9/s on 11..15, (s-6)/s on 16..18, 12/s on 19..31
  expect_equal(p_favor_z0(s), c(1, 1, 1, 1, 6 / 7, 9 / 10, 9 / 11, 9 / 15, 10 / 16, 12 / 18, 12 / 19, 12 / 31))
  # past the paper's "...": bursts 32..63 and 64..127 favor their first three packets too
  expect_equal(p_favor_z0(c(32, 34, 35, 63, 64, 67)), c(13 / 32, 15 / 34, 15 / 35, 15 / 63, 16 / 64, 18 / 67))
})

test_that("Eq. 7, Z = 1: the first packet of each burst favored", {
  s <- c(1, 2, 3, 6, 7, 10, 11, 15, 16, 18, 19, 31)
  expect_equal(p_favor_z1(s), c(1, 2 / 2, 2 / 3, 3 / 6, 3 / 7, 4 / 10, 4 / 11, 4 / 15, 5 / 16, 5 / 18, 5 / 19, 5 / 31))
  expect_equal(p_favor_z1(c(32, 64, 100)), c(6 / 32, 7 / 64, 7 / 100))
})

test_that("Eq. 8, phase 1: the mix by P(Z = 1) = 0.25", {
  # s = 3: 3/4 * 1 + 1/4 * 2/3; s = 7: 3/4 * 6/7 + 1/4 * 3/7; s = 11: 3/4 * 9/11 + 1/4 * 4/11;
  # s = 16: 3/4 * 10/16 + 1/4 * 5/16; s = 19: 3/4 * 12/19 + 1/4 * 5/19
  expect_equal(p_favor_slow_start(c(2, 3, 7, 11, 16, 19), 0.25), c(1, 11 / 12, 3 / 4, 31 / 44, 35 / 64, 41 / 76))
  # below s1 the whole model is phase 1
  expect_equal(favor_model(c(3, 7, 11), 0.25, s1 = 20, s2 = 40), c(11 / 12, 3 / 4, 31 / 44))
})

test_that("phase 2: flows leave slow start uniformly between s1 and s2, then 70 % of their packets favored", {
  # s1 = 4, s2 = 8, s = 6: a quarter of the flows left at k = 4 (packets 1-4 as in slow start, 5 and 6 at
  # 0.7), a quarter at k = 5, half are still in slow start.
  # Z = 0: 1/4 (4 + 1.4)/6 + 1/4 (5 + 0.7)/6 + 1/2 * 6/6 = 77/80
  # Z = 1: 1/4 (3 + 1.4)/6 + 1/4 (3 + 0.7)/6 + 1/2 * 3/6 = 47/80
  z <- p_favor_given_z(6, 4, 8)
  expect_equal(c(z$z0, z$z1), c(77 / 80, 47 / 80))
  expect_equal(p_favor_leaving_slow_start(6, 0.25, 4, 8), 3 / 4 * 77 / 80 + 1 / 4 * 47 / 80)      # 139/160
  # s = s2 = 8: k = 4..7 a quarter each, none left in slow start.
  # Z = 0: (4 + 5 + 6 + 6 + 0.7 * (4 + 3 + 2 + 1)) / 32 = 7/8; Z = 1: (3 * 4 + 7) / 32 = 19/32
  expect_equal(p_favor_leaving_slow_start(8, 0.25, 4, 8), 3 / 4 * 7 / 8 + 1 / 4 * 19 / 32)        # 103/128
  # at s = s1 phase 2 is phase 1 (Z = 0: 4/4, Z = 1: 3/4)
  expect_equal(p_favor_leaving_slow_start(4, 0.25, 4, 8), 15 / 16)
  expect_true(is.na(p_favor_leaving_slow_start(10, 0.25, 4, 8)))
})

test_that("phase 3: every flow has left slow start; long flows tend to 70 %", {
  # s = 10, s1 = 4, s2 = 8: Z = 0 (21 + 0.7 * (6 + 5 + 4 + 3)) / 40 = 21/25, Z = 1 (12 + 12.6) / 40 = 123/200
  expect_equal(p_favor_congestion_avoidance(10, 0.25, 4, 8), 3 / 4 * 21 / 25 + 1 / 4 * 123 / 200)  # 627/800
  expect_equal(p_favor_congestion_avoidance(10, 0, 4, 8, p_ca = 0), 21 / 40)
  expect_true(is.na(p_favor_congestion_avoidance(8, 0.25, 4, 8)))
  expect_equal(favor_model(1e5, 0.25, 4, 8), 0.7, tolerance = 1e-3)
  # every size in its phase, in one call
  expect_equal(favor_model(c(2, 6, 10), 0.25, 4, 8), c(1, 139 / 160, 627 / 800))
  expect_error(favor_model(10, 0.25, 8, 8))
})

test_that("another IW's bursts: the SYN, then IW, 2 IW, 4 IW packets", {
  # IW 10: bursts 1 | 2-11 | 12-31 | 32-71; Z = 1 favors 1, 2, 12, 32; Z = 0 favors 1, 2-4, 12-14, 32-34
  expect_equal(p_favor_z1(c(1, 2, 11, 12, 31, 32, 72), iw = 10), c(1, 1, 2 / 11, 3 / 12, 3 / 31, 4 / 32, 5 / 72))
  expect_equal(p_favor_z0(c(4, 5, 11, 12, 14, 31, 34), iw = 10), c(1, 4 / 5, 4 / 11, 5 / 12, 7 / 14, 7 / 31, 10 / 34))
  # IW 2 is the paper's: the default
  expect_equal(p_favor_z0(c(7, 19), iw = 2), p_favor_z0(c(7, 19)))
  expect_equal(favor_model(c(3, 9), 0.25, 10, 100, iw = 10), 3 / 4 * c(1, 4 / 9) + 1 / 4 * c(2 / 3, 2 / 9))
})

test_that("measured P(Favor) numbers packets as the paper's bursts: the SYN is packet 1", {
  fl <- data.table(run_id = "r", L = c("1", "3", "3"), R = c("0", "0", "1"), syn_retrans = c("0", "0", "1"),
                   syn_drops_bneck = c("0", "0", "1"), fav_favored_data = c("1", "2", "1"))
  d <- favor_by_size(fl)
  expect_equal(d$s, c(2, 4))                         # one data packet: size 2; three: size 4
  # size 2: SYN and data favored, 2/2; size 4: (SYN + 2 data) + (first SYN dropped, its retransmission favored, 1 data)
  # over (4 + 4 + a SYN and a data retransmission)
  expect_equal(d$p, c(1, (3 + 2) / (4 + 6)))
  expect_equal(d$flows, c(1L, 2L))
  # a flow of three data packets under Z = 1: packets 1 (SYN), 2 and 4 favored, i.e. data packets 1 and 3:
  # measured 3/4, the model's Eq. 7 at s = 4 (at s = 3, its data count alone, it would read 2/3)
  one <- favor_by_size(data.table(run_id = "r", L = "3", R = "0", syn_retrans = "0", syn_drops_bneck = "0", fav_favored_data = "2"))
  expect_equal(one$p, p_favor_z1(one$s))
})

# n flows of sizes s (the SYN counted) drawn from a heavy tail: L = s - 1 data packets, the SYN favored (as
# every SYN is, and as the model's packet 1 always is), the data packets favored with the probability that
# makes the flow's share the model's on average (seeded)
model_flows <- function(n, p_z1, s1, s2, seed, iw = 2) {
  set.seed(seed)
  sz <- c(2:40, seq(45, 300, by = 15), 400, 600, 1000)
  s <- sample(sz, n, replace = TRUE, prob = 1 / sz)
  data.table(run_id = "r", load = 0.25, replication = 0L, start_s = as.character(seq_len(n) / 10), L = as.character(s - 1), R = "0",
             syn_retrans = "0", syn_drops_bneck = "0",
             fav_favored_data = as.character(rbinom(n, s - 1, (s * favor_model(s, p_z1, s1, s2, iw = iw) - 1) / (s - 1))))
}

test_that("the fit recovers the parameters of data drawn from the model", {
  g <- c(4, 6, 8, 10, 12, 15, 20, 30, 50, 80, 120, 200)
  # without noise: exactly, on a grid that holds them and on the default grid
  s <- c(1:40, seq(45, 300, by = 15), 400, 600, 1000)
  f <- fit_favor_model(data.table(s = s, p = favor_model(s, 0.3, 12, 80), flows = 5L), grid = g)
  expect_equal(c(f$p_z1, f$s1, f$s2, f$residual), c(0.3, 12, 80, 0))
  f <- fit_favor_model(data.table(s = s, p = favor_model(s, 0.7, 10, 100), flows = 5L))
  expect_equal(c(f$p_z1, f$s1, f$s2, f$residual), c(0.7, 10, 100, 0))
  # with binomial noise (1500 flows): P(Z = 1) and s2 closely; s1 only roughly, as the model changes little
  # where the first flows start to leave slow start (seeds 1-4 give s1 = 10..15 for 12, 8..13 for 10)
  f <- fit_favor_model(favor_by_size(model_flows(1500, 0.3, 12, 80, 1)), grid = g)
  expect_equal(f$status, "fit")
  expect_equal(f$p_z1, 0.3, tolerance = 0.05)
  expect_equal(f$s2, 80)
  expect_true(f$s1 >= 8 && f$s1 <= 18)
  expect_lt(f$residual, 0.05)
  expect_equal(f$flows, 1500)
  f <- fit_favor_model(favor_by_size(model_flows(1500, 0.7, 10, 100, 2)))
  expect_equal(f$p_z1, 0.7, tolerance = 0.05)
  expect_equal(f$s2, 100, tolerance = 0.1)
  expect_true(f$s1 >= 7 && f$s1 <= 15)
  # P(Z = 1) stays in [0, 1] even when the data ask for more
  d <- data.table(s = 1:20, p = 1 / (1:20), flows = 5L)
  expect_equal(fit_favor_model(d, grid = g)$p_z1, 1)
})

test_that("an interval on P(Z = 1) that holds the value the data were drawn with; IW 10 data fitted with IW 10", {
  f <- fit_favor_panel(model_flows(1000, 0.3, 12, 80, 1), B = 40)
  expect_equal(f$status, "fit")
  expect_true(f$low < 0.3 && 0.3 < f$high && f$low <= f$p_z1 && f$p_z1 <= f$high)
  expect_lt(f$high - f$low, 0.25)
  expect_match(f$interval, "^block bootstrap over flows within 1 schedule.*, 40 resamples$")
  expect_true(f$one_schedule)
  expect_gt(f$explained, 0.8)
  # data of IW 10's bursts: its own bursts recover P(Z = 1); IW 2's fit it worse
  fl <- model_flows(1500, 0.7, 12, 80, 2, iw = 10)
  f10 <- fit_favor_model(favor_by_size(fl), iw = 10)
  expect_equal(f10$p_z1, 0.7, tolerance = 0.1)
  expect_lt(f10$residual, fit_favor_model(favor_by_size(fl), iw = 2)$residual)
  # too little to fit: no interval
  g <- fit_favor_panel(model_flows(20, 0.3, 12, 80, 3), B = 20)
  expect_equal(g$status, "insufficient data")
  expect_true(is.na(g$low) && is.na(g$high))
})

test_that("too few flows or sizes: insufficient data, not a fit", {
  fl <- model_flows(200, 0.3, 12, 80, 3)
  d <- favor_by_size(fl)
  few <- d[1:6][, flows := c(5L, 5L, 5L, 5L, 5L, 4L)]                 # 29 flows of 6 sizes
  f <- fit_favor_model(few)
  expect_equal(f$status, "insufficient data")
  expect_true(is.na(f$p_z1) && is.na(f$s1))
  expect_match(f$note, "29 flows of 6 sizes")
  expect_equal(fit_favor_model(d[1:4][, flows := 10L])$status, "insufficient data")  # 40 flows, 4 sizes
  expect_equal(fit_favor_model(d[1:5][, flows := 6L], grid = c(4, 8, 16))$status, "fit")  # 30 flows, 5 sizes
  # flows without a paired favor trace are left out, not counted as never favored
  fl2 <- rbind(fl, data.table(run_id = "r", L = "1", R = "0", syn_retrans = "0", syn_drops_bneck = "0", fav_favored_data = ""), fill = TRUE)
  expect_equal(favor_by_size(fl2)[s == 2], favor_by_size(fl)[s == 2])
})

# FaQ and DropTail runs at `loads`, one replication, the same 48 flows each (sizes s below, the SYN counted,
# three each: L = s - 1 data packets); FaQ at load 0.25 favors round(s * model) - 1 data packets besides the
# SYN (P(Z = 1) = 0.25, s1 = 10, s2 = 100), FaQ at other loads none, DropTail all (so a figure reading the wrong
# runs shows it). DropTail's flow 48 did not finish, so common_flows leaves it out for FaQ too.
SIZES <- c(2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 20, 30, 50, 100, 200)
model_tables <- function(loads = c(0.25, 0.5), trace = TRUE, iws = 2) {
  runs <- CJ(aqm = c("droptail", "favor"), load = loads, iw = iws)
  runs[, `:=`(run_id = sprintf("%s_%g_iw%d", aqm, load, iw), replication = 0L, valid = 1L, realized_load = load, profile = "paper",
              buffer_pkts = "8", bottleneck_mbps = "10", scenario = "dumbbell", invalid_reasons = "")]
  fl <- runs[, .(flow_id = as.character(1:48), L = rep(SIZES - 1, each = 3)), by = .(run_id, aqm, load, iw)]
  fl[, fa := ifelse(aqm == "droptail", L, ifelse(load == 0.25, round((L + 1) * favor_model(L + 1, 0.25, 10, 100, iw = iw[1])) - 1, 0)),
     by = iw]
  fl[, `:=`(L = as.character(L), R = "0", syn_retrans = "0", syn_drops_bneck = "0", start_s = as.character(seq_len(.N)),
            in_metrics = ifelse(aqm == "droptail" & flow_id == "48", "0", "1"), direction = "forward", latency_s = "1",
            fav_favored_data = if (trace) as.character(fa) else "")]
  runs[, iw := as.character(iw)]
  assemble_tables(copy(runs)[, aqm := NULL][runs, on = "run_id", aqm := i.aqm][], fl[, !c("aqm", "load", "fa", "iw")])
}

test_that("F23 draws FaQ's flows at load 0.25 with the fitted and the paper's model", {
  withr::local_options(favorlab.boot_B = 40)                          # the interval's resamples: enough to check its text
  out <- tempfile("model"); dir.create(out)
  fig_F23(model_tables(), out)
  expect_true(file.exists(file.path(out, "F23.png")) && file.exists(file.path(out, "F23.pdf")))
  p <- last_plot()
  expect_equal(p$labels$title, "Fig. 23: stochastic model of P(Favor | S = s) fitted at load 0.25")
  expect_equal(p$scales$get_scales("x")$trans$name, "log-10")
  d <- fread(file = file.path(out, "F23.csv"))
  m <- d[series == "FaQ measured"][order(s)]
  expect_equal(m$s, SIZES)
  expect_equal(m$p, round(SIZES * favor_model(SIZES, 0.25, 10, 100)) / SIZES)
  expect_equal(m$flows, c(rep(3, 15), 2))                           # DropTail's unfinished flow 48 is out
  expect_equal(unique(d$aqm_name), "FaQ")
  expect_setequal(unique(d$series), c("FaQ measured", "model, fitted", "model, paper's P(Z = 1) = 0.25"))
  expect_equal(d[series == "model, paper's P(Z = 1) = 0.25"][s == 6]$p, 3 / 4 * 1 + 1 / 4 * 3 / 6)
  cap <- readLines(file.path(out, "F23.caption.txt"))
  expect_match(cap, "^Paper \\(Fig. 23\\): the model of Sec. 7.2 with P\\(Z = 1\\) = 0.25")
  expect_match(cap, "IW 2: fitted P(Z = 1) = 0.2", fixed = TRUE)
  expect_match(cap, "fitted P\\(Z = 1\\) = 0\\.2[0-9] \\[0\\.[0-9]+, 0\\.[0-9]+\\] \\(block bootstrap")
  expect_match(cap, "on 47 flows of 16 sizes", fixed = TRUE)
  expect_false(grepl("below the shortest flow", cap))                # sizes start at 2 here
  expect_match(cap, "paper: P(Z = 1) = 0.25, no s1 or s2 given (its line: s1 = 10, s2 = 100", fixed = TRUE)
  expect_match(cap, "n = 47 flows of 16 sizes from 1 FaQ run at load 0.25", fixed = TRUE)
})

test_that("F23 and F24 are skipped with a reason when there is nothing to fit", {
  out <- tempfile("model"); dir.create(out)
  expect_message(fig_F23(model_tables(loads = c(0.5, 0.85)), out), "skip F23: no FaQ run at load 0.25")
  expect_message(fig_F24(model_tables(), out), "skip F24: no FaQ run at load 0.85")
  expect_message(fig_F23(model_tables(trace = FALSE), out), "skip F23: no favor trace in FaQ's runs at load 0.25")
  expect_false(file.exists(file.path(out, "F23.png")) || file.exists(file.path(out, "F24.png")))
})

test_that("each panel's model has its own IW's bursts: IW 2 and IW 10 never share a curve", {
  withr::local_options(favorlab.boot_B = 20)
  out <- tempfile("model"); dir.create(out)
  fig_F23(model_tables(iws = c(2, 10)), out)
  d <- fread(file = file.path(out, "F23.csv"))
  expect_equal(uniqueN(d$scen), 2)
  paper <- d[series == "model, paper's P(Z = 1) = 0.25"]
  expect_equal(sort(unique(paper$iw)), c(2, 10))
  for (w in c(2, 10)) {
    x <- paper[iw == w & s %in% c(3, 9, 12)][order(s)]
    expect_equal(x$p, favor_model(c(3, 9, 12), 0.25, 10, 100, iw = w))
    # the data of each panel were drawn from its IW's model: the fit is closer with it than the other IW's
    m <- d[series == "FaQ measured" & grepl(sprintf("IW%d ", w), scen)]
    expect_lt(model_gof(m, favor_model(m$s, 0.25, 10, 100, iw = w))$residual,
              model_gof(m, favor_model(m$s, 0.25, 10, 100, iw = 12 - w))$residual)
  }
  cap <- readLines(file.path(out, "F23.caption.txt"))
  expect_match(cap, "IW 2: fitted", fixed = TRUE); expect_match(cap, "IW 10: fitted", fixed = TRUE)
})

test_that("model_fit_claim: per scenario and load, P(Z = 1) with its interval and the fit's quality, the paper's beside", {
  withr::local_options(favorlab.boot_B = 20)
  r <- model_fit_claim(model_tables(loads = c(0.25, 0.85)))
  expect_equal(names(r), MODEL_CLAIM_COLS)
  expect_equal(r$load, c(0.25, 0.85))
  expect_equal(r$paper_p_z1, c(0.25, 0.7))
  expect_equal(r$status, c("fit", "fit"))
  expect_equal(r$flows, c(47L, 47L)); expect_equal(r$sizes, c(16L, 16L)); expect_equal(r$iw, c(2, 2))
  # load 0.25's flows were drawn (rounded) from the paper's model: it explains nearly all, the fit holds 0.25
  x <- r[load == 0.25]
  expect_equal(x$p_z1, 0.25, tolerance = 0.1)
  expect_true(x$low <= x$p_z1 && x$p_z1 <= x$high)
  expect_gt(x$paper_explained, 0.95); expect_lt(x$paper_residual, 0.06)        # the rounding of small flows
  expect_match(x$interval, "one schedule per load")
  expect_true(x$one_schedule)
  # at 0.85 FaQ favored only the SYNs here: the paper's model is far off
  expect_gt(r[load == 0.85]$paper_residual, 0.3)
  # no FaQ run at a load: no row; nothing at all: the columns, no rows
  expect_equal(nrow(model_fit_claim(model_tables(loads = 0.5))), 0)
  expect_equal(names(model_fit_claim(model_tables(loads = 0.5))), MODEL_CLAIM_COLS)
})
