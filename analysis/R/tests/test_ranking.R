# The AQM ranking (R/ranking_lib.R) on synthetic tables with known answers: ranks, rank quantiles from paired
# resamples, ties, unfinished flows counted beside, metrics without data, invalid runs, each metric's minimum
# sample, the direction of each metric, the note on a buffer that is not the config's.
options(favorlab.boot_B = 200)

# One run per AQM, load and replication of the Table 1 dumbbell, every run the same n flows (one schedule per
# load and replication, flow i starting at i / 5 s). lat(a, ld, L, i) gives each flow's latency, done(a, ld, i) whether it finished,
# drops(a, ld, L, i) its drops; flows alternate between 2, 5, 120 and 300 packets unless L is given.
rank_raw <- function(lat, aqms = c("droptail", "favor", "choke"), loads = 0.85, reps = 0, n = 200,
                     L = rep(c(2, 5, 120, 300), length.out = n), done = function(a, ld, i) rep(TRUE, length(i)),
                     drops = function(a, ld, L, i) rep(0, length(i)), syn = function(a, ld, i) rep(0, length(i)),
                     valid = function(a, ld, r) TRUE) {
  runs <- list(); flows <- list()
  for (a in aqms) for (ld in loads) for (r in reps) {
    id <- sprintf("dumbbell-10M_%s_load%.2f_iw2_rep%d", a, ld, r)
    i <- seq_len(n)
    runs[[id]] <- data.table(run_id = id, scenario = "dumbbell", topology = "dumbbell", aqm = a, load = ld, iw = 2, profile = "paper",
                             replication = r, bottleneck_mbps = 10, buffer_pkts = 8, valid = as.integer(valid(a, ld, r)), cc = "reno",
                             size_dist = "pareto", size_mean_pkts = 30, dataplane = "kernel")
    T <- lat(a, ld, L, i) * (1 + r / 100); fin <- done(a, ld, i); d <- drops(a, ld, L, i)
    flows[[id]] <- data.table(run_id = id, flow_id = as.character(i), start_s = as.character(i / 5), direction = "forward", in_window = "1", seen = "1",
                              complete = ifelse(fin, "1", "0"), in_metrics = ifelse(fin, "1", "0"), L = as.character(L),
                              size_bytes = as.character(L * 1460), latency_s = ifelse(fin, as.character(T), ""),
                              R = as.character(d), RTO = as.character(pmin(d, 1)), FR = "0", syn_retrans = as.character(syn(a, ld, i)),
                              bneck_in = as.character(L + d), drops = as.character(d),
                              goodput_bps = ifelse(fin, as.character(8 * L * 1460 / T), ""))
  }
  list(runs = rbindlist(runs), flows = rbindlist(flows))
}
rank_tables <- function(...) { r <- rank_raw(...); assemble_tables(r$runs, r$flows) }
base <- function(a, ld, L, i) 0.2 + L / 100 + 0.05 * (i %% 7)
times <- function(k) function(a, ld, L, i) base(a, ld, L, i) * k[[a]]
val <- function(r, m, col, a = NULL) { x <- r[metric == m]; if (!is.null(a)) x <- x[aqm == a]; x[[col]] }

test_that("three AQMs, FaQ clearly fastest: ranks 1, 2, 3 apart, the estimates by hand", {
  r <- aqm_ranking(rank_tables(times(c(favor = 0.5, droptail = 1, choke = 2))))
  expect_equal(unique(r$aqm), c("droptail", "favor", "choke"))        # AQM order: DropTail, FaQ first
  expect_equal(unique(r$aqm_name), c("DropTail", "FaQ", "CHOKe"))
  expect_equal(unique(r$metric), names(RANK_METRICS))
  expect_equal(nrow(r), 3 * length(RANK_METRICS))
  expect_equal(unique(r$scenario), "dumbbell 10Mb/s buf8 IW2 paper/reno pareto-mean30 kernel")
  for (m in c("latency_mean_short", "latency_mean_long", "latency_p99_short", "latency_p99_long")) {
    expect_equal(val(r, m, "rank", "favor"), 1L); expect_equal(val(r, m, "rank", "droptail"), 2L)
    expect_equal(val(r, m, "rank", "choke"), 3L)
    # every flow is slower under DropTail than under FaQ, and slower still under CHOKe: every resample agrees
    expect_equal(r[metric == m, rank_label], c("2", "1", "3"))
    expect_equal(r[metric == m, p_first], c(0, 1, 0))
    expect_equal(r[metric == m, rank_resamples], c(200L, 200L, 200L))
  }
  i <- seq_len(200); L <- rep(c(2, 5, 120, 300), length.out = 200)
  s <- L < 10
  expect_equal(val(r, "latency_mean_short", "estimate", "droptail"), mean(base(0, 0, L, i)[s]))
  expect_equal(val(r, "latency_mean_long", "estimate", "choke"), 2 * mean(base(0, 0, L, i)[!s]))
  expect_equal(val(r, "latency_p99_short", "estimate", "favor"), unname(0.5 * quantile(base(0, 0, L, i)[s], 0.99)))
  expect_true(all(r[metric == "latency_mean_short", flows_counted == 100 & window_flows == 100 & unfinished == 0 & left_out == 0]))
  expect_true(all(r$flows_counted[r$metric %in% c("drop_ratio", "rto_ratio", "goodput", "syn_loss")] == 200))
  expect_match(val(r, "latency_mean_short", "interval", "favor"), "block bootstrap over flows within 1 schedule")
  expect_match(val(r, "latency_mean_short", "rank_method", "favor"), "^200 of 200 paired block resamples within one schedule \\(.* s blocks of start time\\)$")
  lo <- val(r, "latency_mean_short", "low", "favor"); hi <- val(r, "latency_mean_short", "high", "favor")
  expect_true(lo < val(r, "latency_mean_short", "estimate", "favor") && hi > lo)
  # goodput is better higher: the fastest AQM has the most
  expect_equal(r[metric == "goodput", rank], c(2L, 1L, 3L))
  expect_equal(unique(r[metric == "goodput"]$better), "higher")
  # no drops, no SYN loss anywhere: every AQM at 0, all tied at rank 1 on every resample
  expect_equal(r[metric == "drop_ratio", estimate], c(0, 0, 0))
  expect_equal(r[metric == "drop_ratio", rank], c(1L, 1L, 1L))
  expect_equal(r[metric == "drop_ratio", rank_label], c("1", "1", "1"))
  expect_equal(r[metric == "syn_loss", p_first], c(1, 1, 1))
  # Jain's index is the same under all three (their goodputs differ by a common factor): tied, though
  # computed from different numbers
  expect_equal(r[metric == "jain_long", rank], c(1L, 1L, 1L))
  expect_equal(r$note, rep("", nrow(r)))
})

# Each AQM's own noise on every flow (log-normal, sd 0.3, seeded by the AQM): AQMs with the same factor are
# indistinguishable, however many flows.
noisy <- function(k) function(a, ld, L, i) {
  set.seed(match(a, c("droptail", "favor", "choke", "las")))
  base(a, ld, L, i) * k[[a]] * exp(rnorm(length(i), 0, 0.3))
}

test_that("indistinguishable AQMs get overlapping rank intervals; a clearly better one ranks 1 on nearly every resample", {
  r <- aqm_ranking(rank_tables(noisy(c(favor = 0.5, droptail = 1, choke = 1)), n = 400))
  for (m in c("latency_mean_short", "latency_mean_long")) {
    x <- r[metric == m]
    expect_equal(x[aqm == "favor"]$rank_label, "1")
    expect_gte(x[aqm == "favor"]$p_first, 0.99)
    # DropTail and CHOKe: each can be second or third
    expect_equal(x[aqm != "favor"]$rank_label, c("2-3", "2-3"))
    expect_equal(sort(x[aqm != "favor"]$rank), 2:3)
    expect_equal(x[aqm != "favor"]$p_first, c(0, 0))
  }
  # rank quantiles by hand: four resamples of three AQMs (lower is better); the third ties the first on two
  v <- rbind(c(1, 2, 1), c(1, 2, 3), c(2, 1, 2), c(1, 3, 1))
  q <- rank_quantiles(v, "lower", level = 0.5)
  # ranks per resample: (1 3 1), (1 2 3), (2 1 2), (1 3 1): type 1 quantiles at 0.25, 0.5, 0.75
  expect_equal(q$rank_lo, c(1L, 1L, 1L)); expect_equal(q$rank_median, c(1L, 2L, 1L)); expect_equal(q$rank_hi, c(1L, 3L, 2L))
  expect_equal(q$p_first, c(3 / 4, 1 / 4, 2 / 4))
  expect_equal(q$resamples, 4L)
  # better higher turns them over; a resample without every AQM's value is left out
  expect_equal(rank_quantiles(v, "higher", level = 0.5)$rank_median, c(2L, 1L, 1L))
  expect_equal(rank_quantiles(rbind(v, c(NA, 1, 1)), "lower")$resamples, 4L)
})

test_that("ties share the lowest rank, never broken by the AQMs' order", {
  expect_equal(rank_min(c(1, 1, 3), "lower"), c(1L, 1L, 3L))
  expect_equal(rank_min(c(3, 1, 1), "higher"), c(1L, 2L, 2L))
  expect_equal(rank_min(c(2, NA, 2), "lower"), c(1L, NA, 1L))
  expect_equal(rank_min(c(0.1 + 0.2, 0.3), "lower"), c(1L, 1L))          # equal but for the last bits
  # CHOKe and LAS the same on every flow and faster than DropTail and FaQ: both first on every resample,
  # though DropTail and FaQ come first in the AQM order; DropTail and FaQ tied behind them
  r <- aqm_ranking(rank_tables(times(c(favor = 1, droptail = 1, choke = 0.5, las = 0.5)), aqms = c("droptail", "favor", "choke", "las")))
  x <- r[metric == "latency_mean_short"]
  expect_equal(x$aqm, c("droptail", "favor", "choke", "las"))
  expect_equal(x$rank, c(3L, 3L, 1L, 1L))
  expect_equal(x$rank_label, c("3", "3", "1", "1"))
  expect_equal(x$p_first, c(0, 0, 1, 1))
})

test_that("unfinished flows are counted beside, and left out under every AQM alike", {
  # CHOKe leaves flows 1-8 unfinished (two of each length): the others are measured without them too
  t <- rank_tables(times(c(favor = 0.5, droptail = 1, choke = 2)), done = function(a, ld, i) !(a == "choke" & i <= 8))
  r <- aqm_ranking(t)
  x <- r[metric == "latency_mean_short"]
  expect_equal(x$flows_counted, c(96L, 96L, 96L))
  expect_equal(x$window_flows, c(100L, 100L, 100L))
  expect_equal(x$unfinished, c(0L, 0L, 4L))
  expect_equal(x$left_out, c(4L, 4L, 4L))
  expect_equal(r[metric == "drop_ratio"]$unfinished, c(0L, 0L, 8L))
  expect_equal(r[metric == "drop_ratio"]$flows_counted, c(192L, 192L, 192L))
  # the estimate is on the common flows: DropTail's mean without flows 1-8
  i <- 9:200; L <- rep(c(2, 5, 120, 300), length.out = 200)[i]
  expect_equal(val(r, "latency_mean_short", "estimate", "droptail"), mean(base(0, 0, L, i)[L < 10]))
  # SYN loss counts every window flow seen, finished or not
  expect_equal(r[metric == "syn_loss"]$flows_counted, c(200L, 200L, 200L))
  expect_equal(r[metric == "syn_loss"]$left_out, c(0L, 0L, 0L))
})

test_that("a metric without data is NA, never ranked; too few flows give no rank", {
  # only short flows: nothing for the long-flow metrics
  r <- aqm_ranking(rank_tables(times(c(favor = 0.5, droptail = 1, choke = 2)), L = rep(c(2, 5), 100)))
  for (m in c("latency_mean_long", "latency_p99_long", "jain_long")) {
    x <- r[metric == m]
    expect_true(all(is.na(x$estimate) & is.na(x$rank) & is.na(x$rank_label)))
    expect_true(all(x$flows_counted == 0))
    expect_match(x$note[1], "no data")
  }
  expect_equal(r[metric == "latency_mean_short"]$rank, c(2L, 1L, 3L))
  # no bottleneck capture: no drop ratio
  raw <- rank_raw(times(c(favor = 0.5, droptail = 1, choke = 2)))
  raw$flows[, `:=`(bneck_in = "", drops = "")]
  x <- aqm_ranking(assemble_tables(raw$runs, raw$flows))[metric == "drop_ratio"]
  expect_true(all(is.na(x$estimate) & is.na(x$rank)))
  # 8 flows of each length class: estimates, no rank
  r <- aqm_ranking(rank_tables(times(c(favor = 0.5, droptail = 1, choke = 2)), n = 16))
  x <- r[metric == "latency_mean_short"]
  expect_true(all(!is.na(x$estimate) & is.na(x$rank) & is.na(x$rank_label) & x$rank_resamples == 0))
  expect_match(x$note[1], "not ranked: 8 flows, fewer than the 30 this metric needs (a mean or ratio", fixed = TRUE)
})

test_that("each metric's minimum: a mean from 30 flows, a 99th percentile and the SYN loss ratio from 100", {
  expect_equal(vapply(RANK_METRICS, `[[`, 0L, "min_n"),
               c(latency_mean_short = 30L, latency_p99_short = 100L, latency_mean_long = 30L, latency_p99_long = 100L,
                 drop_ratio = 30L, syn_loss = 100L, rto_ratio = 30L, goodput = 30L, jain_long = 30L))
  # 99 flows: 50 short, 49 long (mean latencies ranked, p99 not); 99 SYNs: no SYN loss rank
  r <- aqm_ranking(rank_tables(times(c(favor = 0.5, droptail = 1, choke = 2)), n = 99, L = rep(c(5, 200), length.out = 99)))
  expect_equal(r[metric == "latency_mean_short"]$rank, c(2L, 1L, 3L))
  expect_equal(r[metric == "latency_mean_long"]$rank, c(2L, 1L, 3L))
  for (m in c("latency_p99_short", "latency_p99_long", "syn_loss")) {
    x <- r[metric == m]
    expect_true(all(!is.na(x$estimate) & is.na(x$rank)))
    expect_equal(x$min_flows, rep(100L, 3))
  }
  expect_match(r[metric == "latency_p99_short"]$note[1], "not ranked: 50 flows, fewer than the 100 this metric needs (a 99th percentile",
               fixed = TRUE)
  expect_match(r[metric == "syn_loss"]$note[1], "99 flows, fewer than the 100")
  expect_equal(r[metric == "rto_ratio"]$rank, c(1L, 1L, 1L))
})

test_that("an AQM whose queue is not the config's buffer says so on every row", {
  r <- aqm_ranking(rank_tables(times(c(favor = 0.5, droptail = 1, cake = 0.7)), aqms = c("droptail", "favor", "cake")))
  expect_true(all(grepl("its queue is not limited to the config's 8-packet buffer (config/aqms.yaml: cake unlimited", r[aqm == "cake"]$note,
                        fixed = TRUE)))
  expect_equal(r[aqm != "cake"]$note, rep("", 2 * length(RANK_METRICS)))
  expect_equal(r[metric == "latency_mean_short"]$rank, c(3L, 1L, 2L))          # ranked all the same, with the note beside
  expect_equal(buffer_note(c("red", "fq", "codel", "no-such-aqm"), 8), rep("", 4))     # red's limit is the buffer in bytes
})

test_that("an AQM without a valid run of the load is listed, not ranked; the others are", {
  t <- rank_tables(times(c(favor = 0.5, droptail = 1, choke = 2, las = 3)), aqms = c("droptail", "favor", "choke", "las"),
                   loads = c(0.55, 0.95), valid = function(a, ld, r) !(a == "las" && ld == 0.95))
  r <- aqm_ranking(t)
  x <- r[load == 0.95 & metric == "latency_mean_short"]
  expect_equal(x$aqm, c("droptail", "favor", "choke", "las"))
  expect_equal(x$rank, c(2L, 1L, 3L, NA))
  expect_match(x[aqm == "las"]$note, "not ranked: its run of this load is invalid or missing")
  expect_equal(x[aqm == "las"]$window_flows, 0L)                # no valid run: no flow of it is counted anywhere
  expect_equal(r[load == 0.55 & metric == "latency_mean_short"]$rank, c(2L, 1L, 3L, 4L))
  # each load ranked on its own: the two loads' rows never mix
  expect_equal(r[, .N, by = load]$N, rep(4L * length(RANK_METRICS), 2))
  # with replications, the schedule with an invalid run is left out for every AQM, and the rows say so
  t <- rank_tables(times(c(favor = 0.5, droptail = 1, choke = 2)), reps = 0:2, n = 40,
                   valid = function(a, ld, r) !(a == "choke" && r == 1))
  x <- aqm_ranking(t)[metric == "latency_mean_short"]
  expect_equal(x$rank, c(2L, 1L, 3L))
  expect_equal(x$schedules, c(2L, 2L, 2L))
  expect_equal(x$flows_counted, c(40L, 40L, 40L))                # 20 short flows in each of replications 0 and 2
  expect_match(x$note, "replication\\(s\\) 1 left out: a run of them is invalid or missing")
  expect_match(x$interval[1], "bootstrap over flows within 2 schedule")
})

test_that("Jain's index of the long flows' goodputs: higher is better; three replications resample replications", {
  # under FaQ the long flows' latency grows with their size (equal goodputs); under DropTail it does not
  eq <- function(a, ld, L, i) if (a == "favor") L / 100 else 0.2 + (i %% 5) / 2
  r <- aqm_ranking(rank_tables(eq, aqms = c("droptail", "favor", "choke"), reps = 0:2, n = 120))
  x <- r[metric == "jain_long"]
  expect_equal(val(r, "jain_long", "estimate", "favor"), jain_index(rep(1 / c(1, 1.01, 1.02), each = 60)))   # replication r: 1 + r % slower
  expect_gt(val(r, "jain_long", "estimate", "favor"), 0.9999)
  expect_equal(x$rank[x$aqm == "favor"], 1L)
  expect_match(x$interval[1], "jackknife over 3 replications")
  expect_match(x$rank_method[1], "paired resamples of the 3 replications, then of blocks within each")
  expect_equal(x$flows_counted[1], 3L * 60L)                   # 60 long flows in each of 3 schedules
  L <- rep(c(120, 300), 30); i <- which(rep(c(2, 5, 120, 300), 30) >= 100)
  g <- 8 * L * 1460 / (0.2 + (i %% 5) / 2)
  expect_equal(val(r, "jain_long", "estimate", "droptail"), jain_index(c(g, g / 1.01, g / 1.02)))
  # five replications: the replications alone, as boot_ci's jackknife
  x <- aqm_ranking(rank_tables(eq, aqms = c("droptail", "favor"), reps = 0:4, n = 40))[metric == "latency_mean_short"]
  expect_match(x$interval[1], "jackknife over 5 replications")
  expect_match(x$rank_method[1], "^200 of 200 paired resamples of the 5 replications$")
})

test_that("nothing to rank with one AQM; no runs, no rows", {
  expect_equal(nrow(aqm_ranking(rank_tables(base, aqms = "favor"))), 0)
  expect_equal(names(aqm_ranking(rank_tables(base, aqms = "favor"))), RANKING_COLS)
})
