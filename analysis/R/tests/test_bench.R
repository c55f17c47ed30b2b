# testthat tests of the benchmark figures (fig_bench.R) on a scenario that is not Table 1 (buffer 20, IW 10,
# the linux profile, Pareto mean 10) with DropTail, FaQ, CHOKe and FQ-CoDel at two loads.
library(testthat)

bench_tables <- function(aqms = c("droptail", "favor", "choke", "fq_codel"), loads = c(0.5, 0.9), reps = 0:2, per_run = 12) {
  runs <- CJ(aqm = aqms, load = loads, replication = reps)
  runs[, `:=`(run_id = sprintf("%s_%g_%d", aqm, load, replication), valid = 1L, realized_load = load, profile = "linux",
              iw = "10", buffer_pkts = "20", bottleneck_mbps = "10", scenario = "dumbbell", size_dist = "lomax",
              size_mean_pkts = "10", invalid_reasons = "")]
  fl <- runs[, .(flow_id = as.character(seq_len(per_run)), L = as.character(rep(c(2, 5, 40), length.out = per_run))),
             by = .(run_id, aqm, load, replication)]
  fl[, lat := 0.1 + load + num(L) / 50 + match(aqm, aqms) / 10 + replication / 100]
  fl[, `:=`(latency_s = as.character(lat), in_metrics = "1", direction = "forward", bneck_in = as.character(num(L) + 2),
            drops = as.character(match(aqm, aqms) - 1), RTO = as.character(as.integer(aqm == "droptail")), R = "1", FR = "0",
            syn_retrans = as.character(as.integer(flow_id == "1" & aqm != "favor")))]
  assemble_tables(runs[, !"aqm"][runs, on = "run_id", aqm := i.aqm][], fl[, !c("aqm", "load", "replication", "lat")])
}

test_that("a scenario outside Table 1 gets no paper load figure but every benchmark figure, each table holding every AQM x load", {
  t <- bench_tables(); out <- tempfile("bench"); dir.create(out)
  expect_false(any(is_table1(t$runs)))
  expect_equal(nrow(scope_tables(t, "table1")$runs), 0)
  bench <- grep("^B[0-9]+$", names(FIGURES), value = TRUE)
  expect_setequal(bench, paste0("B", 1:6))
  for (id in bench) get(paste0("fig_", id))(scope_tables(t, FIGURES[[id]]$scope), out)
  for (id in bench) {
    expect_true(file.exists(file.path(out, paste0(id, ".png"))), info = id)
    d <- fread(file = file.path(out, paste0(id, ".csv")))
    cells <- unique(d[, .(aqm, load)])
    expect_equal(nrow(cells), 8, info = id)                      # 4 AQMs x 2 loads, none pooled or missing
    expect_setequal(unique(d$aqm_name), c("DropTail", "FaQ", "CHOKe", aqm_label("fq_codel")))
    cap <- readLines(file.path(out, paste0(id, ".caption.txt")))
    expect_match(paste(cap, collapse = " "), "Flows counted: ", info = id)
  }
})

test_that("the benchmark values are the metrics of metrics.R over the counted flows", {
  t <- bench_tables(); out <- tempfile("bench"); dir.create(out)
  fig_B1(t, out); fig_B2(t, out); fig_B4(t, out); fig_B6(t, out)
  b1 <- fread(file = file.path(out, "B1.csv"))
  # droptail at load 0.5: latency 0.1 + 0.5 + L/50 + 0.1 + rep/100, mean over L in (2, 5, 40) and reps 0..2
  expect_equal(b1[aqm == "droptail" & load == 0.5]$mean, 0.7 + mean(c(2, 5, 40)) / 50 + 0.01, tolerance = 1e-9)
  expect_equal(b1$flows, rep(36L, 8))
  b2 <- fread(file = file.path(out, "B2.csv"))
  expect_true(all(b2$flows == 24L))                             # the 2- and 5-packet flows only, 8 per run
  expect_equal(b2[aqm == "favor" & load == 0.9]$mean, 0.1 + 0.9 + quantile(rep(c(2, 5), each = 4) / 50, 0.99, names = FALSE) + 0.2 + 0.01,
               tolerance = 1e-9)
  b4 <- fread(file = file.path(out, "B4.csv"))
  expect_equal(b4[aqm == "favor"]$mean, c(0, 0))
  expect_equal(b4[aqm == "choke"]$mean, rep(1 / 13, 2), tolerance = 1e-9)
  b6 <- fread(file = file.path(out, "B6.csv"))
  expect_equal(nrow(b6), 8 * 101)
  expect_true(all(b6[, all(diff(latency_s) >= 0), by = .(aqm, load)]$V1))
})
