# testthat tests of the figures: titles, the paper's AQM names, the log length axis, the counts behind each
# point and the captions, on tables whose answers are known (run: Rscript analysis/R/tests/run.R).
library(testthat)

# loads x replications x AQMs runs of `per_run` flows each, lengths 2, 20 and 200 in turn; FaQ's latency is
# lower than DropTail's at the loads in `faq_wins`, higher at the others. Two data packets of every flow
# favored (P(Favor) = 2 / L), one push-out in four drops.
synth_tables <- function(loads = c(0.25, 0.5, 0.75, 0.95), reps = 0:2, per_run = 6, faq_wins = c(0.5, 0.95)) {
  runs <- CJ(aqm = c("droptail", "favor"), load = loads, replication = reps)
  runs[, `:=`(run_id = sprintf("%s_%g_%d", aqm, load, replication), valid = 1L, realized_load = load, profile = "paper",
              iw = "2", buffer_pkts = "8", bottleneck_mbps = "10", scenario = "dumbbell", invalid_reasons = "")]
  fl <- runs[, .(flow_id = as.character(seq_len(per_run)), L = as.character(rep(c(2, 20, 200), length.out = per_run))),
             by = .(run_id, aqm, load, replication)]
  fl[, lat := 1 + load + num(L) / 100 + ifelse(aqm == "favor", ifelse(load %in% faq_wins, -0.5, 0.25), 0)]
  fl[, `:=`(latency_s = as.character(lat), in_metrics = "1", direction = "forward", bneck_in = as.character(num(L) + 2),
            drops = "1", RTO = "1", R = "0", FR = "1", syn_retrans = "0", fav_favored_data = "2", fav_pushout_victim = "1",
            fav_drop_favored = "0", fav_drop_standard = "3")]
  assemble_tables(runs[, !"aqm"][runs, on = "run_id", aqm := i.aqm][], fl[, !c("aqm", "load", "replication", "lat")])
}
out <- tempfile("figs"); dir.create(out)
t <- synth_tables()

test_that("titles carry the paper's figure number and what it shows", {
  expect_equal(fig_title("F3"), "Fig. 3: mean latency vs load")
  expect_match(fig_title("F12"), "^Fig. 12: latency gain")
  expect_true(all(sprintf("Fig. %d:", sapply(FIGURES, `[[`, "number")) == sprintf("Fig. %s:", sub("F", "", names(FIGURES)))))
})

test_that("legends and tables name the AQMs as the paper does; unknown keys stay themselves", {
  expect_equal(aqm_label(c("favor", "droptail", "p4-favorqueue", "red")), c("FaQ", "DropTail", "FaQ (P4)", "red"))
  fig_F3(t, out)
  p <- ggplot_build(last_plot())
  expect_equal(p$plot$labels$title, "Fig. 3: mean latency vs load")
  expect_equal(p$plot$scales$get_scales("colour")$get_labels(), c("DropTail", "FaQ"))
  d <- fread(file.path(out, "F3.csv"))
  expect_equal(sort(unique(d$aqm_name)), c("DropTail", "FaQ"))
  expect_equal(d[aqm == "favor"]$aqm_name[1], "FaQ")
})

test_that("each load point counts its flows and runs", {
  d <- fread(file.path(out, "F3.csv"))
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
  d <- fread(file.path(out, "F8.csv"))
  expect_equal(sort(unique(d$L_mean)), c(2, 20, 200))
  # 2 flows of each length per run, 4 loads x 3 replications pooled
  expect_true(all(d$flows == 24 & d$runs == 12))
  # loads pooled: FaQ's -0.5 s at two loads outweighs its +0.25 s at the other two, at every length
  expect_match(readLines(file.path(out, "F8.caption.txt")), "FaQ below DropTail at 3 of 3 length classes (largest gap 0.125", fixed = TRUE)
  for (f in c(fig_F11, fig_F12)) { f(t, out); expect_equal(last_plot()$scales$get_scales("x")$trans$name, "log-10") }
})

test_that("pair figures count flow pairs and run pairs", {
  fig_F12(t, out)
  d <- fread(file.path(out, "F12.csv"))
  expect_true(all(d$flows == 24 & d$runs == 12))
  fig_F10(t, out)
  expect_match(readLines(file.path(out, "F10.caption.txt")), "of the 72 flow pairs 0.0% are unchanged (|Delta| <= 1 ms), 50.0% faster", fixed = TRUE)
})

test_that("FaQ-only figures name FaQ and give the shortest and longest flows' values", {
  fig_F21(t, out)
  expect_equal(ggplot_build(last_plot())$plot$scales$get_scales("colour")$get_labels(), "FaQ")
  expect_match(readLines(file.path(out, "F21.caption.txt")),
               "Here: FaQ 1 for the shortest flows (about 2 packets), 0.01 for the longest (about 200 packets).", fixed = TRUE)
  fig_F22(t, out)
  expect_match(readLines(file.path(out, "F22.caption.txt")), "Here: FaQ 0.25 for the shortest flows", fixed = TRUE)
  expect_equal(unique(fread(file.path(out, "F22.csv"))$aqm_name), "FaQ")
})
