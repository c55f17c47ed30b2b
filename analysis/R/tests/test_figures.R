# testthat tests of the figures: titles, the paper's AQM names, the log length axis, the counts behind each
# point and the captions, on tables whose answers are known (run: Rscript analysis/R/tests/run.R).
library(testthat)

# loads x replications x AQMs runs of `per_run` flows each, lengths 2, 20 and 200 in turn; FaQ's latency is
# lower than DropTail's at the loads in `faq_wins`, higher at the others. Two data packets of every flow
# favored (P(Favor) = 2 / L), one push-out in four drops.
# Other AQMs (`aqms`) add `extra[aqm]` seconds to DropTail's latency and drop `drops[aqm]` packets per flow.
synth_tables <- function(loads = c(0.25, 0.5, 0.75, 0.95), reps = 0:2, per_run = 6, faq_wins = c(0.5, 0.95),
                         aqms = c("droptail", "favor"), extra = c(choke = 0.2, las = 0.6, run2c = 0.9),
                         drops = c(droptail = 1, favor = 1, choke = 2, las = 3, run2c = 4)) {
  runs <- CJ(aqm = aqms, load = loads, replication = reps)
  runs[, `:=`(run_id = sprintf("%s_%g_%d", aqm, load, replication), valid = 1L, realized_load = load, profile = "paper",
              iw = "2", buffer_pkts = "8", bottleneck_mbps = "10", scenario = "dumbbell", invalid_reasons = "")]
  fl <- runs[, .(flow_id = as.character(seq_len(per_run)), L = as.character(rep(c(2, 20, 200), length.out = per_run))),
             by = .(run_id, aqm, load, replication)]
  fl[, lat := 1 + load + num(L) / 100 + ifelse(aqm == "favor", ifelse(load %in% faq_wins, -0.5, 0.25), 0) +
       ifelse(aqm %in% names(extra), extra[aqm], 0)]
  fl[, `:=`(latency_s = as.character(lat), in_metrics = "1", direction = "forward", bneck_in = as.character(num(L) + 2),
            drops = as.character(drops[aqm]), RTO = "1", R = "0", FR = "1", syn_retrans = "0", fav_favored_data = "2", fav_pushout_victim = "1",
            fav_drop_favored = "0", fav_drop_standard = "3")]
  assemble_tables(runs[, !"aqm"][runs, on = "run_id", aqm := i.aqm][], fl[, !c("aqm", "load", "replication", "lat")])
}
out <- tempfile("figs"); dir.create(out)
t <- synth_tables()

test_that("titles carry the paper's figure number and what it shows", {
  expect_equal(fig_title("F3"), "Fig. 3: mean latency vs load")
  expect_match(fig_title("F12"), "^Fig. 12: latency gain")
  paper <- Filter(function(f) !is.null(f$number), FIGURES)
  expect_true(all(sprintf("Fig. %d:", sapply(paper, `[[`, "number")) == sprintf("Fig. %s:", sub("F", "", names(paper)))))
  # a figure beyond the paper has no number: its id, and the section it tests in its caption
  expect_equal(fig_title("X1"), "X1: legitimate web flows under a spoofed SYN flood")
  expect_match(fig_caption("X1", "ours"), "^Paper \\(X1, Section 9.1\\): .* Here: ours")
})

test_that("legends and tables name the AQMs as the paper does; unknown keys stay themselves", {
  expect_equal(aqm_label(c("favor", "droptail", "p4-favorqueue", "no-such-aqm")), c("FaQ", "DropTail", "FaQ (P4)", "no-such-aqm"))
  fig_F3(t, out)
  p <- ggplot_build(last_plot())
  expect_equal(p$plot$labels$title, "Fig. 3: mean latency vs load")
  expect_equal(p$plot$scales$get_scales("colour")$get_labels(), c("DropTail", "FaQ"))
  d <- fread(file = file.path(out, "F3.csv"))
  expect_equal(sort(unique(d$aqm_name)), c("DropTail", "FaQ"))
  expect_equal(d[aqm == "favor"]$aqm_name[1], "FaQ")
})

test_that("F3 and F4 draw one line per AQM, the paper's five named and ordered, DropTail and FaQ first", {
  five <- synth_tables(aqms = c("run2c", "las", "favor", "droptail", "choke"))
  fig_F3(five, out)
  p <- ggplot_build(last_plot())
  sc <- p$plot$scales$get_scales("colour")
  expect_equal(sc$get_labels(), c("DropTail", "FaQ", "CHOKe", "LAS", "RuN2C"))
  # one colour per AQM, the theme's, none the grey of an unknown key
  cols <- unique(p$data[[1]][, c("colour", "group")])$colour
  expect_equal(length(unique(cols)), 5)
  expect_setequal(cols, unname(aqm_colours[c("droptail", "favor", "choke", "las", "run2c")]))
  d <- fread(file = file.path(out, "F3.csv"))
  expect_equal(nrow(d), 20)                                    # 5 AQMs x 4 loads, nothing pooled
  expect_equal(unique(d$aqm_name), c("DropTail", "FaQ", "CHOKe", "LAS", "RuN2C"))
  # each AQM's own mean: 1 + load + mean L / 100 (L = 2, 20, 200 twice each: 0.74) + its offset
  m <- function(a, l) d[aqm == a & load == l]$mean
  expect_equal(c(m("droptail", 0.25), m("choke", 0.25), m("las", 0.25), m("run2c", 0.25)), 1.99 + c(0, 0.2, 0.6, 0.9))
  expect_equal(c(m("favor", 0.25), m("favor", 0.5)), c(1.99 + 0.25, 2.24 - 0.5))
  cap <- readLines(file.path(out, "F3.caption.txt"))
  expect_match(cap, "Here: FaQ below DropTail at 2 of 4 loads (largest gap 0.5 at load 0.5)", fixed = TRUE)
  expect_match(cap, paste("FaQ below CHOKe at 2 of 4 loads (95 % intervals apart at 2); LAS at 4 of 4 loads (95 % intervals apart at 4);",
                    "RuN2C at 4 of 4 loads (95 % intervals apart at 4)."), fixed = TRUE)
  fig_F4(five, out)
  d <- fread(file = file.path(out, "F4.csv"))
  expect_equal(nrow(d), 20)
  # drops per flow / (L + 2) pooled over the six flows of a run: (k * 6) / (74 * 6 / 3 + 12) with L = 2, 20, 200
  expect_equal(d[load == 0.5, setNames(mean, aqm)][c("droptail", "favor", "choke", "las", "run2c")],
               setNames(c(1, 1, 2, 3, 4) * 6 / (2 * (2 + 20 + 200) + 12), c("droptail", "favor", "choke", "las", "run2c")))
  expect_equal(ggplot_build(last_plot())$plot$scales$get_scales("colour")$get_labels(), c("DropTail", "FaQ", "CHOKe", "LAS", "RuN2C"))
  expect_match(readLines(file.path(out, "F4.caption.txt")), "FaQ below CHOKe at 4 of 4 loads", fixed = TRUE)
  fig_F3(t, out)                                               # the DropTail/FaQ figure the next tests read
})

test_that("each load point counts its flows and runs", {
  d <- fread(file = file.path(out, "F3.csv"))
  expect_equal(nrow(d), 8)
  expect_true(all(d$flows == 18 & d$runs == 3))               # 3 replications x 6 flows
  expect_match(readLines(file.path(out, "F3.caption.txt")), "n = 18 flows from 3 runs per point and AQM", fixed = TRUE)
})

test_that("the caption counts the loads where FaQ is below DropTail", {
  cap <- readLines(file.path(out, "F3.caption.txt"))
  expect_match(cap, "^Paper \\(Fig. 3\\): FaQ's mean latency stays below")
  expect_match(cap, "Here: FaQ below DropTail at 2 of 4 loads (largest gap 0.5 at load 0.5", fixed = TRUE)
  expect_match(cap, "95 % intervals apart at 2", fixed = TRUE)
  # with FaQ's point missing at one load, the caption says so instead of counting it
  d <- data.table(scen = "s", aqm = c("droptail", "favor", "droptail", "favor", "droptail"), load = c(0.1, 0.1, 0.5, 0.5, 0.9),
                  mean = c(2, 1, 2, 3, 4))
  expect_equal(faq_vs_dt(d, "load", "mean", "load", "loads"),
               "FaQ below DropTail at 1 of 2 loads (largest gap 1 at load 0.1); 1 loads with too few flows under one of them.")
})

test_that("flow length is on a log10 axis, classes at their flows' mean length", {
  fig_F8(t, out)
  p <- last_plot()
  expect_equal(p$scales$get_scales("x")$trans$name, "log-10")
  d <- fread(file = file.path(out, "F8.csv"))
  expect_equal(sort(unique(d$L_mean)), c(2, 20, 200))
  # 2 flows of each length per run, 4 loads x 3 replications pooled
  expect_true(all(d$flows == 24 & d$runs == 12))
  # loads pooled: FaQ's -0.5 s at two loads outweighs its +0.25 s at the other two, at every length
  expect_match(readLines(file.path(out, "F8.caption.txt")), "FaQ below DropTail at 3 of 3 length classes (largest gap 0.125", fixed = TRUE)
  for (f in c(fig_F11, fig_F12)) { f(t, out); expect_equal(last_plot()$scales$get_scales("x")$trans$name, "log-10") }
})

test_that("pair figures count flow pairs and run pairs", {
  fig_F12(t, out)
  d <- fread(file = file.path(out, "F12.csv"))
  expect_true(all(d$flows == 24 & d$runs == 12))
  fig_F10(t, out)
  expect_match(readLines(file.path(out, "F10.caption.txt")), "of the 72 flow pairs 0.0% are unchanged (|Delta| <= 0.1 s, claim C6's), 50.0% faster",
               fixed = TRUE)
})

test_that("F10 and F11 count a flow unchanged within its claim's unchanged_s, as C6 and C7 judge them", {
  # FaQ 50 ms faster on every flow: within the replay jitter the claims allow (claims.yaml unchanged_s 0.1 s)
  within_jitter <- synth_tables(per_run = 18)                     # 216 pairs: C6's minimum sample is 200
  within_jitter$flows[aqm == "favor", latency_s := as.character(num(within_jitter$flows[aqm == "droptail"]$latency_s) - 0.05)]
  expect_equal(read_claims()$C6$unchanged_s, 0.1)
  fig_F10(within_jitter, out)
  expect_match(readLines(file.path(out, "F10.caption.txt")), "100.0% are unchanged (|Delta| <= 0.1 s, claim C6's), 0.0% faster", fixed = TRUE)
  v <- verdict(within_jitter, read_claims()["C6"])
  expect_match(v$ours, "^100.0%/0.0%/0.0%/0.0%")
  fig_F11(within_jitter, out)
  expect_match(readLines(file.path(out, "F11.caption.txt")), "short flows (< 10 packets) improve 0.0% and worsen 0.0%", fixed = TRUE)
  expect_true(all(fread(file = file.path(out, "F11.csv"))$p == 0))
})

test_that("FaQ-only figures name FaQ and give the shortest and longest flows' values", {
  fig_F21(t, out)
  expect_equal(ggplot_build(last_plot())$plot$scales$get_scales("colour")$get_labels(), "FaQ")
  expect_match(readLines(file.path(out, "F21.caption.txt")),
               "Here: FaQ 1 for the shortest flows (about 2 packets), 0.01 for the longest (about 200 packets).", fixed = TRUE)
  fig_F22(t, out)
  expect_match(readLines(file.path(out, "F22.caption.txt")), "Here: FaQ 0.25 for the shortest flows", fixed = TRUE)
  expect_equal(unique(fread(file = file.path(out, "F22.csv"))$aqm_name), "FaQ")
})

# Hand-written flows replayed by DropTail and FaQ in every run of one scenario (load x replication), with the
# latency each AQM gave (NA: unfinished under it) plus the load; `scale` multiplies both AQMs' latencies.
# Flows 1-6 on three paths of known RTT, 7 unfinished under both, 8 reverse, 9 in the warm-up.
HAND_FLOWS <- data.table(flow_id = as.character(1:9),
  src = c("a1", "a1", "a1", "a3", "a3", "a2", "a1", "b1", "a1"), dst = c("b1", "b1", "b1", "b3", "b3", "b2", "b1", "a1", "b1"),
  path_rtt_ms = c(4, 4, 4, 200, 200, 98, 4, 4, 4), L = c(2, 2, 20, 2, 20, 2, 50, 3, 100),
  dt = c(1, 2, 3, 4, 6, 1, NA, 1, 1), faq = c(0.5, 1.5, 3.5, 2, 5, NA, NA, 1, 1),
  direction = c(rep("forward", 7), "reverse", "forward"), in_window = c(rep("1", 8), "0"))
hand_raw <- function(loads = 0.5, reps = 0:1, mean = "30", iw = "2", scale = 1, flows = HAND_FLOWS) {
  runs <- CJ(aqm = c("droptail", "favor"), load = loads, replication = reps)
  runs[, `:=`(run_id = sprintf("%s_%g_%d_m%s_iw%s", aqm, load, replication, mean, iw), valid = 1L, realized_load = load,
              profile = "paper", iw = iw, buffer_pkts = "8", bottleneck_mbps = "10", scenario = "dumbbell",
              topology = "dumbbell", size_dist = "lomax", size_mean_pkts = mean, invalid_reasons = "")]
  fl <- rbindlist(lapply(seq_len(nrow(runs)), function(i) cbind(runs[i, .(run_id, aqm, load)], flows)))
  fl[, lat := scale * ifelse(aqm == "favor", faq, dt) + load]
  fl[, `:=`(latency_s = ifelse(is.na(lat), "", as.character(lat)), complete = ifelse(is.na(lat), "0", "1"),
            in_metrics = ifelse(!is.na(lat) & in_window == "1", "1", "0"), size_bytes = as.character(1460 * L),
            L = as.character(L), path_rtt_ms = as.character(path_rtt_ms))]
  list(runs = runs, flows = fl[, !c("aqm", "load", "lat", "dt", "faq")])
}
hand_tables <- function(...) { r <- list(...); assemble_tables(rbindlist(lapply(r, `[[`, "runs")), rbindlist(lapply(r, `[[`, "flows"))) }
panels <- function(var) as.character(unique(ggplot_build(last_plot())$layout$layout[[var]]))

test_that("F5: one panel per RTT class present in the common flows, its means by hand", {
  fig_F5(hand_tables(hand_raw()), out)
  # flow 6 (RTT 98 ms) is unfinished under FaQ: left out under DropTail too, so its class has no panel
  expect_equal(panels("rtt"), c("RTT 4 ms", "RTT 200 ms"))
  expect_equal(last_plot()$scales$get_scales("x")$trans$name, "log-10")
  d <- fread(file = file.path(out, "F5.csv"))
  v <- function(r, a, l) d[rtt == r & aqm == a & L_mean == l]$v
  expect_equal(c(v("RTT 4 ms", "droptail", 2), v("RTT 4 ms", "favor", 2)), c((1 + 2) / 2, (0.5 + 1.5) / 2) + 0.5)
  expect_equal(c(v("RTT 4 ms", "droptail", 20), v("RTT 4 ms", "favor", 20)), c(3, 3.5) + 0.5)
  expect_equal(c(v("RTT 200 ms", "droptail", 2), v("RTT 200 ms", "favor", 20)), c(4, 5) + 0.5)
  expect_equal(d[rtt == "RTT 4 ms" & L_mean == 2]$flows, c(4L, 4L))    # 2 flows x 2 replications, each AQM
  expect_true(all(d$runs == 2))
  cap <- readLines(file.path(out, "F5.caption.txt"))
  expect_match(cap, "below DropTail's in 2 of 2 RTT classes (RTT 4 ms: DropTail 2.5 s, FaQ 2.33 s; RTT 200 ms: DropTail 5.5 s, FaQ 4 s); per length class, at 3 of 4 points", fixed = TRUE)
  # counted: flows 1-5 in both replications; left out: 6 (unfinished under FaQ) and 7 (under both) of the 7 forward window flows
  expect_match(cap, "DropTail 10 flows from 2 runs, FaQ 10 flows from 2 runs; left out: DropTail 4 of 14, FaQ 4 of 14 window flows", fixed = TRUE)
  expect_equal(FIG_INDEX[["F5"]]$detail, "n = 2-4 flows from 2 runs per point and AQM")
})

test_that("F5 names paths when the tables carry no RTT, and never pools two scenarios", {
  r <- hand_raw(); r$flows[, path_rtt_ms := NULL]
  fig_F5(hand_tables(r), out)
  expect_equal(panels("rtt"), c("a1-b1", "a3-b3"))
  expect_match(readLines(file.path(out, "F5.caption.txt")), "Panels are paths: these tables carry no configured RTT.", fixed = TRUE)
  fig_F5(hand_tables(hand_raw(), hand_raw(iw = "10", scale = 3)), out)
  l <- ggplot_build(last_plot())$layout$layout
  expect_equal(nrow(l), 4)                                      # 2 scenarios (rows) x 2 RTT classes
  expect_equal(length(unique(l$scen)), 2)
  d <- fread(file = file.path(out, "F5.csv"))
  expect_equal(d[grepl("IW2 ", scen) & rtt == "RTT 4 ms" & aqm == "droptail" & L_mean == 2]$v, 2)
  expect_equal(d[grepl("IW10 ", scen) & rtt == "RTT 4 ms" & aqm == "droptail" & L_mean == 2]$v, 3 * 1.5 + 0.5)
})

test_that("F6: CCDF of the offered sizes, finished or not, each schedule once", {
  fig_F6(hand_tables(hand_raw()), out)
  d <- fread(file = file.path(out, "F6.csv"))
  # forward window flows 1-7 (sizes 2, 2, 20, 2, 20, 2, 50) of 2 schedules; both AQMs replay them, counted once
  expect_equal(d$L, c(2, 20, 50))
  expect_equal(d$ccdf, c(1, 6 / 14, 2 / 14))
  expect_true(all(d$flows == 14 & d$runs == 2 & d$sample_mean == 14 & d$mean_pkts == 30))
  cap <- readLines(file.path(out, "F6.caption.txt"))
  expect_match(cap, "one size distribution in these tables (the paper draws three): lomax, mean 30 packets: sample mean 14.0 packets", fixed = TRUE)
  expect_match(cap, "finished or not", fixed = TRUE)
  expect_match(cap, "n = 14 flows from 2 schedules per distribution.", fixed = TRUE)
  expect_equal(last_plot()$scales$get_scales("x")$trans$name, "log-10")
  expect_equal(last_plot()$scales$get_scales("y")$trans$name, "log-10")
  # a second distribution is a second line, its own counts
  few <- HAND_FLOWS[flow_id %in% c("1", "3")]
  fig_F6(hand_tables(hand_raw(), hand_raw(mean = "10", reps = 0, flows = few)), out)
  d <- fread(file = file.path(out, "F6.csv"))
  expect_equal(levels(ggplot_build(last_plot())$plot$data$legend),
               c("lomax, mean 10 packets: sample mean 11.0", "lomax, mean 30 packets: sample mean 14.0"))
  expect_equal(d[mean_pkts == 10, .(L, ccdf, flows, runs)], data.table(L = c(2, 20), ccdf = c(1, 0.5), flows = 2L, runs = 1L))
  expect_match(readLines(file.path(out, "F6.caption.txt")), "^Paper.*Here: 2 size distributions: lomax, mean 10 packets")
  # no flow in any window: not drawn, with the reason
  e <- hand_raw(); e$flows <- e$flows[0]
  fig_F6(hand_tables(e), out)
  expect_equal(FIG_INDEX[["F6"]], list(status = "not drawn", detail = "no flow scheduled in the measurement window of a valid run"))
})

test_that("F2 and the length figures compare DropTail and FaQ per scenario, never with a scenario one AQM lacks", {
  # the mean-100 scenario has DropTail alone (as when FaQ's run is invalid), with latencies a hundred times
  # lower: pooled into DropTail's side it would put DropTail below FaQ over all lengths
  alone <- hand_raw(mean = "100", scale = 0.01)
  alone$flows <- alone$flows[run_id %in% alone$runs[aqm == "droptail", run_id]]
  alone$runs <- alone$runs[aqm == "droptail"]
  fig_F8(hand_tables(hand_raw(mean = "30"), alone), out)
  cap <- readLines(file.path(out, "F8.caption.txt"))
  # the paired scenario's common flows 1-5, plus load 0.5: DropTail 3.2 + 0.5, FaQ 2.5 + 0.5
  expect_match(cap, "Over all lengths: DropTail 3.7, FaQ 3.", fixed = TRUE)
  expect_match(cap, "Not compared \\(one of the two alone\\): [^.]*lomax-mean100 kernel\\.")
  # F2's share of flows at or past the initial RTO (3 s): DropTail 3 of 5, FaQ 2 of 5 (latency plus load)
  fig_F2(hand_tables(hand_raw(mean = "30"), alone), out)
  cap <- readLines(file.path(out, "F2.caption.txt"))
  expect_match(cap, "the initial RTO (3 s): DropTail 60.0%, FaQ 40.0%. Not compared (one of the two alone): ", fixed = TRUE)
  fig_F8(hand_tables(alone), out)
  expect_match(readLines(file.path(out, "F8.caption.txt")), "Over all lengths: no scenario with both DropTail and FaQ.", fixed = TRUE)
})

test_that("F13 compares the most flows in the system per panel, never with a load one AQM lacks", {
  # flow k starts (SYN) at k s and leaves at k + its latency; under FaQ every flow takes 0.75 s at load 0.25
  with_times <- function(r) {
    r$flows[, `:=`(syn_t = flow_id, done_t = ifelse(latency_s == "", "", as.character(as.numeric(flow_id) + as.numeric(latency_s))))]
    r
  }
  both <- with_times(hand_raw(loads = 0.25, flows = copy(HAND_FLOWS)[, faq := 0.5]))
  alone <- with_times(hand_raw(loads = 0.75, scale = 3))
  alone$flows <- alone$flows[run_id %in% alone$runs[aqm == "droptail", run_id]]
  alone$runs <- alone$runs[aqm == "droptail"]
  fig_F13(hand_tables(both, alone), out)
  expect_equal(FIG_INDEX[["F13"]]$status, "drawn")
  # replication 0, forward flows 1-7 and 9. DropTail at 0.25 holds flows 3, 4, 5, 6 at t = 6 (flow 3 leaves at
  # 6.25); FaQ's flows never overlap; DropTail at 0.75 (latency 3 dt + 0.75) holds 3, 4, 5, 6, 7, 9 at t = 9
  d <- fread(file = file.path(out, "F13.csv"))
  expect_equal(d[, .(m = max(n)), keyby = .(aqm, load)]$m, c(4L, 6L, 1L))
  cap <- readLines(file.path(out, "F13.caption.txt"))
  expect_match(cap, "per panel: load 0.25: DropTail 4, FaQ 1. Not compared (one of the two alone): load 0.75.", fixed = TRUE)
})

test_that("F7: skipped with one size distribution, one panel per distribution with two, means by hand", {
  fig_F7(hand_tables(hand_raw(loads = c(0.25, 0.75))), out)
  expect_equal(FIG_INDEX[["F7"]]$status, "not drawn")
  expect_match(FIG_INDEX[["F7"]]$detail, "one size distribution per scenario (lomax, mean 30 packets)", fixed = TRUE)
  fig_F7(hand_tables(hand_raw(loads = c(0.25, 0.75), mean = "30", scale = 2), hand_raw(loads = c(0.25, 0.75), mean = "10")), out)
  expect_equal(FIG_INDEX[["F7"]]$status, "drawn")
  expect_equal(panels("dist"), c("lomax, mean 10 packets", "lomax, mean 30 packets"))
  d <- fread(file = file.path(out, "F7.csv"))
  # common flows 1-5: DropTail (1 + 2 + 3 + 4 + 6) / 5 = 3.2, FaQ (0.5 + 1.5 + 3.5 + 2 + 5) / 5 = 2.5, times scale, plus load
  m <- function(which, a, l) d[grepl(which, dist) & aqm == a & load == l]$mean
  expect_equal(c(m("mean 10", "droptail", 0.25), m("mean 10", "favor", 0.25)), c(3.2, 2.5) + 0.25)
  expect_equal(c(m("mean 30", "droptail", 0.75), m("mean 30", "favor", 0.75)), 2 * c(3.2, 2.5) + 0.75)
  expect_true(all(d$flows == 10 & d$runs == 2))
  cap <- readLines(file.path(out, "F7.caption.txt"))
  expect_match(cap, "lomax, mean 10 packets: FaQ below DropTail at 2 of 2 loads (largest gap 0.7 at load 0.25)", fixed = TRUE)
  expect_match(cap, "lomax, mean 30 packets: FaQ below DropTail at 2 of 2 loads (largest gap 1.4 at load 0.25)", fixed = TRUE)
  expect_match(cap, sprintf("FaQ's mean latency %.2f of DropTail's", mean(c(2.75 / 3.45, 3.25 / 3.95))), fixed = TRUE)
})
