# Which runs are the paper's Table 1 (is_table1, verdict_pairing.R): the dumbbell's web traffic with Pareto II
# sizes of mean 30 packets (docs/sizes.md) at 10 Mb/s and 8 packets or 100 Mb/s and 83. Runs of the Pareto I
# sizes Table 1 once meant are a scenario of their own, never pooled with Table 1's.

table1_run <- function(...) {
  r <- data.table(run_id = "r", scenario = "dumbbell", topology = "dumbbell", bottleneck_mbps = 10, buffer_pkts = 8,
                  iw = 2, profile = "paper", cc = "reno", size_dist = "lomax", size_mean_pkts = 30, dataplane = "kernel",
                  flood_x = "")     # run.csv leaves flood_x empty without a SYN flood
  args <- list(...)
  for (k in names(args)) r[, (k) := args[[k]]]
  r
}

test_that("Table 1 is Pareto II of mean 30 on the dumbbell at 10 Mb/s with 8 packets or 100 Mb/s with 83", {
  expect_true(is_table1(table1_run()))
  expect_true(is_table1(table1_run(bottleneck_mbps = 100, buffer_pkts = 83)))
  # tables without a size column ("" there) still count, as the other columns do
  expect_true(is_table1(table1_run(size_dist = "", size_mean_pkts = NA_real_)))
})

test_that("Pareto I runs, other means, buffers, scenarios and SYN floods are not Table 1", {
  expect_false(is_table1(table1_run(size_dist = "pareto")))            # no flow under 7 packets
  expect_false(is_table1(table1_run(size_mean_pkts = 10)))
  expect_false(is_table1(table1_run(size_dist = "exponential", size_mean_pkts = 6)))
  expect_false(is_table1(table1_run(buffer_pkts = 24)))
  expect_false(is_table1(table1_run(bottleneck_mbps = 100, buffer_pkts = 8)))
  expect_false(is_table1(table1_run(scenario = "persistent")))
  expect_false(is_table1(table1_run(flood_x = 1)))
  # vectorised over rows: one answer per run
  rows <- rbind(table1_run(), table1_run(size_dist = "pareto"), table1_run(bottleneck_mbps = 100, buffer_pkts = 83))
  expect_equal(is_table1(rows), c(TRUE, FALSE, TRUE))
})

test_that("a Pareto I run and a Table 1 run have different scenario keys and a table1 scope keeps only the latter", {
  runs <- with_scenario(rbind(table1_run(run_id = "old", size_dist = "pareto"), table1_run(run_id = "new")))
  expect_equal(runs[run_id == "old"]$scen, "dumbbell 10Mb/s buf8 IW2 paper/reno pareto-mean30 kernel")
  expect_equal(runs[run_id == "new"]$scen, "dumbbell 10Mb/s buf8 IW2 paper/reno lomax-mean30 kernel")
  tables <- list(runs = runs, flows = data.table(run_id = c("old", "new"), flow_id = c("1", "1")))
  kept <- scope_tables(tables, "table1")
  expect_equal(kept$runs$run_id, "new")
  expect_equal(kept$flows$run_id, "new")
})
