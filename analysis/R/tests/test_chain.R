# Section 8, the five-hop chain, on synthetic tables with known answers: the reference user's flows counted
# per run (F26) and the claim C17.
options(favorlab.boot_B = 200)

# One run per AQM and replication of scenario chain, window [10, 300) s. Under AQM a in replication r the
# reference user starts done(a, r) + unfinished[[a]] flows in the window (the last `unfinished` of them never
# finish), one flow in the warm-up (id 0) and one in the drain; flow ids are the user's sequence, so flow i
# has the same size under every AQM, and FaQ's latency is 0.8 times DropTail's. gaps(m): the relative cycle
# times of the m window flows (constant by default). Each run also has one captured connection that joined
# no schedule row (flow_id empty). seed(a, r): the run's seed; valid(a, r): its validity.
chain_raw <- function(done = function(a, r) if (a == "favor") 400 else 300, unfinished = list(droptail = 1, favor = 0),
                      reps = 0, aqms = c("droptail", "favor"), gaps = function(m) rep(1, m), window = c(10, 300),
                      seed = function(a, r) 100 + r, valid = function(a, r) TRUE) {
  runs <- list(); flows <- list()
  for (a in aqms) for (r in reps) {
    id <- sprintf("chain-10M-buf8-pareto30-paper-reno_%s_load0.00_iw2_rep%d", a, r)
    runs[[id]] <- data.table(run_id = id, scenario = "chain", topology = "chain", aqm = a, load = 0, iw = 2, profile = "paper",
                             replication = r, seed = seed(a, r), bottleneck_mbps = 10, buffer_pkts = 8,
                             valid = as.integer(valid(a, r)), cc = "reno", size_dist = "pareto", size_mean_pkts = 30,
                             dataplane = "kernel", window_start_s = window[1], window_end_s = window[2])
    k <- done(a, r); u <- unfinished[[a]]; m <- k + u
    g <- gaps(m)
    start <- c(window[1] / 2, window[1] + cumsum(c(0, g))[seq_len(m)] * diff(window) / sum(g), window[2] + 0.5)
    i <- seq_along(start) - 1
    L <- c(2, 5, 30, 3, 100, 12)[i %% 6 + 1]
    lat <- (1 + L / 20 + (i %% 3) / 10) * (if (a == "favor") 0.8 else 1)
    fin <- !(i %in% (m - u + seq_len(u)))            # window flows m-u+1 .. m never finish
    inw <- start >= window[1] & start < window[2]
    flows[[id]] <- rbind(
      data.table(run_id = id, flow_id = as.character(i), src = "us", dst = "ur", direction = "forward", seen = "1",
                 start_s = as.character(start), L = as.character(L), size_bytes = as.character(L * 1460),
                 complete = ifelse(fin, "1", "0"), in_window = ifelse(inw, "1", "0"), in_metrics = ifelse(fin & inw, "1", "0"),
                 latency_s = ifelse(fin, as.character(lat), ""), drops = "0"),
      data.table(run_id = id, flow_id = "", src = "us", dst = "ur", direction = "", seen = "1", start_s = "", L = "",
                 size_bytes = "", complete = "1", in_window = "0", in_metrics = "0", latency_s = "0.2", drops = "0"))
  }
  list(runs = rbindlist(runs), flows = rbindlist(flows))
}
chain_tables <- function(...) { r <- chain_raw(...); assemble_tables(r$runs, r$flows) }
# One DropTail run of the Table 1 dumbbell, five flows: what F26 and C17 must leave alone.
web_raw <- function() {
  id <- "dumbbell-10M-buf8-pareto30-paper-reno_droptail_load0.55_iw2_rep0"
  list(runs = data.table(run_id = id, scenario = "dumbbell", topology = "dumbbell", aqm = "droptail", load = 0.55, iw = 2,
                         profile = "paper", replication = 0, seed = 1, bottleneck_mbps = 10, buffer_pkts = 8, valid = 1L, cc = "reno",
                         size_dist = "pareto", size_mean_pkts = 30, dataplane = "kernel", window_start_s = 10, window_end_s = 60),
       flows = data.table(run_id = id, flow_id = as.character(1:5), src = "a1", dst = "b1", direction = "forward", seen = "1",
                          start_s = as.character(10 + 1:5), L = "2", size_bytes = "2920", complete = "1", in_window = "1",
                          in_metrics = "1", latency_s = "0.5", drops = "0"))
}
c17 <- function(t) verdict(t)[claim == "C17"]

test_that("each run counts the user's window flows: completed, unfinished, outside the window, unjoined", {
  rc <- chain_run_counts(chain_tables())
  expect_equal(rc[aqm == "droptail", .(completed, unfinished, outside_window, unjoined)],
               data.table(completed = 300L, unfinished = 1L, outside_window = 2L, unjoined = 1L))
  expect_equal(rc[aqm == "favor", .(completed, unfinished)], data.table(completed = 400L, unfinished = 0L))
  expect_equal(rc[aqm == "favor"]$cycles, 400L)               # every window flow has a next one (the drain's)
  expect_lt(rc[aqm == "favor"]$cycle_cv2, 0.01)               # constant cycles
  expect_equal(rc$window_s, c(290, 290))
})

test_that("C17 holds when FaQ completes clearly more flows in the same window", {
  v <- c17(chain_tables())
  expect_equal(v$status, HOLDS)
  expect_match(v$scenario, "^chain 10Mb/s buf8 IW2")
  expect_match(v$ours, "completed reference flows DT 300, FaQ 400 in 1 x 290 s: FaQ/DT 1.33", fixed = TRUE)
  expect_match(v$method, "exact Poisson ratio on the pooled counts of 1 replication(s), cycles no more variable than a Poisson process's", fixed = TRUE)
  # the exact interval of 400 vs 300 in equal windows: binom.test's, turned into a ratio
  b <- binom.test(400, 700)$conf.int
  expect_match(v$interval, sprintf("FaQ/DT [%.3g, %.3g]", b[1] / (1 - b[1]), b[2] / (1 - b[2])), fixed = TRUE)
  # the mean latency of the 300 flows completed under both (same ids, same sizes): FaQ 0.8 of DropTail
  expect_match(v$ours, "mean latency FaQ/DT 0.8 [0.8, 0.8] over the 300 flows completed under both", fixed = TRUE)
  expect_match(v$n, "1 replication(s); completed DT 300, FaQ 400; unfinished DT 1, FaQ 0", fixed = TRUE)
  expect_match(v$note, "left out: unfinished in the window DT 1, FaQ 0; started in the warm-up or the drain DT 2, FaQ 2", fixed = TRUE)
  expect_equal(v$min_sample, "completed_flows_per_aqm 30")
})

test_that("with five replications or more the interval is a paired one over them", {
  v <- c17(chain_tables(done = function(a, r) if (a == "favor") 80 + 3 * r else 60 + 2 * r, reps = 0:4))
  expect_equal(v$status, HOLDS)
  expect_match(v$method, "paired t over 5 replications of log(FaQ/DT)", fixed = TRUE)
  expect_match(v$ours, "DT 320, FaQ 430 in 5 x 290 s", fixed = TRUE)
  # the same counts in replications that disagree (FaQ ahead in three, behind in two) decide nothing
  mixed <- function(a, r) if (a == "favor") c(120, 30, 120, 30, 130)[r + 1] else c(60, 90, 60, 90, 20)[r + 1]
  expect_equal(c17(chain_tables(done = mixed, reps = 0:4))$status, INSUFF)
})

test_that("C17 does not hold on equal counts, and fails when FaQ completes clearly fewer", {
  v <- c17(chain_tables(done = function(a, r) 300))
  expect_equal(v$status, INSUFF)                              # the interval holds 1: no gain shown
  expect_match(v$ours, "FaQ/DT 1;", fixed = TRUE)
  expect_equal(c17(chain_tables(done = function(a, r) if (a == "favor") 300 else 400))$status, FAILS)
})

test_that("the closed loop's dispersion widens the interval: very variable cycles do not decide 400 against 300", {
  # nine short cycles for every long one: cycle CV^2 about 7, the Poisson interval about 2.7 times as wide (log scale)
  spiky <- function(m) ifelse(seq_len(m) %% 10 == 0, 100, 1)
  v <- c17(chain_tables(gaps = spiky))
  expect_equal(v$status, INSUFF)
  expect_match(v$method, "widened x2.[67]")
  expect_gt(chain_run_counts(chain_tables(gaps = spiky))[aqm == "favor"]$cycle_cv2, 5)
})

test_that("C17 is not run without chain runs, and insufficient data without a valid pair or enough flows", {
  web <- assemble_tables(data.table(run_id = "r", aqm = "droptail", load = 0.5, iw = 2, profile = "paper", replication = 0,
                                    bottleneck_mbps = 10, buffer_pkts = 8, valid = 1L, scenario = "dumbbell"), data.table())
  expect_equal(c17(web)$status, NOTRUN)
  v <- c17(chain_tables(aqms = "droptail"))
  expect_equal(v$status, INSUFF)
  expect_match(v$note, "replication 0: no valid FaQ run")
  expect_equal(c17(chain_tables(valid = function(a, r) a != "favor"))$status, INSUFF)
  # a chain whose every run is invalid has no valid flow at all: still C17's own insufficient data
  expect_equal(c17(chain_tables(valid = function(a, r) FALSE))$status, INSUFF)
  # different seeds are different sequences of sizes: not the same experiment
  v <- c17(chain_tables(seed = function(a, r) if (a == "favor") 7 else 8))
  expect_equal(v$status, INSUFF)
  expect_match(v$note, "different seeds or measurement windows")
  # below the minimum sample the numbers are shown but decide nothing
  v <- c17(chain_tables(done = function(a, r) if (a == "favor") 200 else 20))
  expect_equal(v$status, INSUFF)
  expect_match(v$note, "^fewer than 30 completed reference flows under DropTail")
  expect_match(v$ours, "DT 20, FaQ 200")
})

test_that("a DropTail run given twice says nothing about FaQ", {
  r <- chain_raw(aqms = "droptail")
  fq <- copy(r); fq$runs[, `:=`(aqm = "favor", run_id = sub("droptail", "favor", run_id))]
  fq$flows[, run_id := sub("droptail", "favor", run_id)]
  v <- c17(assemble_tables(rbind(r$runs, fq$runs), rbind(r$flows, fq$flows)))
  expect_equal(v$status, INSUFF)
  expect_match(v$note, "same outcome")
})

test_that("F26 draws the latency CDF and the completed flows of the chain only, unfinished ones counted apart", {
  out <- tempfile(); dir.create(out)
  web <- web_raw()
  ch <- chain_raw()
  t <- assemble_tables(rbind(web$runs, ch$runs, fill = TRUE), rbind(web$flows, ch$flows, fill = TRUE))
  r <- fig_F26(t, out)
  d <- fread(file = file.path(out, "F26.csv"))
  expect_equal(names(d), c("scen", "aqm", "latency", "cdf", "flows", "runs", "aqm_name"))
  expect_true(all(startsWith(d$scen, "chain ")))
  expect_equal(d[, .N, by = aqm][order(aqm)]$N, c(300L, 400L))
  expect_equal(d[, max(cdf), by = aqm]$V1, c(1, 1))
  expect_equal(sort(unique(d$aqm_name)), c("DropTail", "FaQ"))
  k <- fread(file = file.path(out, "F26-completed.csv"))
  expect_equal(names(k), c("scen", "aqm", "replication", "run_id", "seed", "window_start_s", "window_s", "completed", "lo", "hi",
                           "unfinished", "outside_window", "unjoined", "cycles", "cycle_mean_s", "cycle_cv2", "aqm_name"))
  expect_equal(k[order(aqm), .(completed, unfinished, outside_window, unjoined)],
               data.table(completed = c(300L, 400L), unfinished = c(1L, 0L), outside_window = c(2L, 2L), unjoined = c(1L, 1L)))
  expect_equal(as.numeric(unlist(k[aqm == "favor", .(lo, hi)])), as.numeric(poisson.test(400)$conf.int), tolerance = 1e-9)
  cap <- readLines(file.path(out, "F26.caption.txt"))
  expect_match(cap, "^Paper \\(Fig. 26\\): with FaQ at the first hop only, 538 user flows")
  expect_match(cap, "DropTail 300 in 1 run(s) of 290 s", fixed = TRUE)
  expect_match(cap, "FaQ/DropTail 1.33, 95% interval [", fixed = TRUE)
  expect_match(cap, "Left out: unfinished in the window DropTail 1, FaQ 0 (no latency; counted apart in panel b)", fixed = TRUE)
  expect_match(cap, "captured connections without a schedule row DropTail 1, FaQ 1", fixed = TRUE)
  expect_equal(FIG_INDEX[["F26"]], list(status = "drawn", detail = "n = 300-400 flows from 1 run per AQM"))
  expect_true(file.exists(file.path(out, "F26.png")) && file.info(file.path(out, "F26.png"))$size > 1000)
  expect_equal(r$a$labels$title, "(a) latency of the reference user's completed flows")
  expect_equal(ggplot_build(r$b)$plot$scales$get_scales("colour")$get_labels(), c("DropTail", "FaQ"))
})

test_that("F26 is not drawn without valid chain runs, and says why", {
  out <- tempfile(); dir.create(out)
  web <- web_raw()
  expect_null(fig_F26(assemble_tables(web$runs, web$flows), out))
  expect_equal(FIG_INDEX[["F26"]], list(status = "not drawn", detail = NO_CHAIN))
  expect_null(fig_F26(chain_tables(valid = function(a, r) FALSE), out))
  expect_equal(FIG_INDEX[["F26"]]$detail, "no valid run of the chain scenario")
  expect_false(file.exists(file.path(out, "F26.png")))
})

test_that("F26 leaves out a replication whose FaQ run is invalid, for DropTail too, and names its run", {
  out <- tempfile(); dir.create(out)
  fig_F26(chain_tables(reps = 0:1, valid = function(a, r) !(a == "favor" && r == 1)), out)
  k <- fread(file = file.path(out, "F26-completed.csv"))
  expect_equal(k$replication, c(0L, 0L))
  expect_match(readLines(file.path(out, "F26.caption.txt")),
               "runs of replications without a valid run of every AQM: chain-10M-buf8-pareto30-paper-reno_droptail_load0.00_iw2_rep1",
               fixed = TRUE)
  # and C17 says which replication it could not judge
  expect_match(c17(chain_tables(reps = 0:1, valid = function(a, r) !(a == "favor" && r == 1)))$note,
               "replications left out: replication 1: no valid FaQ run", fixed = TRUE)
})

test_that("a chain's length and AQM hops are part of its scenario key, so chains differing there never pool", {
  d <- data.table(scenario = "chain", topology = "chain", bottleneck_mbps = "10", buffer_pkts = "8", iw = "2",
                  profile = "paper", cc = "reno", size_dist = "pareto", size_mean_pkts = "30", dataplane = "kernel",
                  hops = c("5", "5", "3"), aqm_hops = c("1", "1+3", "1"))
  k <- scenario_key(d)
  expect_equal(k[1], "chain 10Mb/s buf8 IW2 paper/reno pareto-mean30 kernel 5hops AQM@hop1")
  expect_equal(uniqueN(k), 3)
  # the dumbbell's are empty: its key is unchanged
  expect_equal(scenario_key(d[1][, `:=`(scenario = "dumbbell", topology = "dumbbell", hops = "", aqm_hops = "")]),
               "dumbbell 10Mb/s buf8 IW2 paper/reno pareto-mean30 kernel")
})
