# Reading tables (load.R): only the runs of the run list, only directories named as run ids, and runs measured
# with other settings never pooled with the rest.

ids <- c("dumbbell-10M-buf8-pareto30-paper-reno_droptail_load0.50_iw2_rep0",
         "dumbbell-10M-buf8-pareto30-paper-reno_favor_load0.50_iw2_rep0")

run_row <- function(id, aqm, window_end = 40, seed = 11, load = 0.5, rep = 0)
  data.table(run_id = id, scenario = "dumbbell", aqm = aqm, load = load, iw = 2, profile = "paper", replication = rep,
             bottleneck_mbps = 10, buffer_pkts = 8, valid = 1L, cc = "reno", size_dist = "pareto", size_mean_pkts = 30,
             dataplane = "kernel", topology = "dumbbell", seed = seed, window_start_s = 1, window_end_s = window_end,
             invalid_reasons = "")

flow_rows <- function(id) data.table(run_id = id, flow_id = as.character(1:3), direction = "forward", in_metrics = "1",
                                     latency_s = c("0.1", "0.2", "0.3"))

write_tables <- function(dir, rows) {
  for (r in split(rows, by = "run_id")) {
    d <- file.path(dir, r$run_id); dir.create(d, recursive = TRUE)
    fwrite(r, file.path(d, "run.csv")); fwrite(flow_rows(r$run_id), file.path(d, "flows.csv"))
  }
}

test_that("read_tables reads the runs of the run list only, and refuses a list entry that is not a run id", {
  dir <- tempfile("tables"); stale <- sub("load0.50", "load0.90", ids[2])
  write_tables(dir, rbind(run_row(ids[1], "droptail"), run_row(ids[2], "favor"), run_row(stale, "favor", load = 0.9)))
  lst <- tempfile("runs"); writeLines(ids, lst)
  t <- read_tables(dir, lst)
  expect_setequal(t$runs$run_id, ids)
  expect_setequal(unique(t$flows$run_id), ids)
  # without a list every run-named directory is read, the stale run with them
  expect_setequal(read_tables(dir)$runs$run_id, c(ids, stale))
  writeLines(c(ids[1], "x; touch CANARY; echo "), lst)
  expect_error(read_tables(dir, lst), "is not a run id of the pipeline")
  writeLines(c(ids, sub("rep0", "rep7", ids[1])), lst)
  expect_error(read_tables(dir, lst), "no run.csv for run .*rep7")
})

test_that("a table's run is the directory it was read from, whatever its rows say", {
  dir <- tempfile("tables")
  write_tables(dir, rbind(run_row(ids[1], "droptail"), run_row(ids[2], "favor")))
  r <- fread(file = file.path(dir, ids[2], "run.csv")); r[, run_id := ids[1]]
  fwrite(r, file.path(dir, ids[2], "run.csv"))
  t <- read_tables(dir)
  expect_setequal(t$runs$run_id, ids)
})

test_that("a directory named with a space or a shell metacharacter is never read, and nothing is run", {
  dir <- tempfile("tables"); canary <- tempfile("canary")
  write_tables(dir, rbind(run_row(ids[1], "droptail"), run_row(ids[2], "favor")))
  evil <- file.path(dir, sprintf("x; touch %s; echo ", canary), "run")
  dir.create(evil, recursive = TRUE)
  fwrite(run_row("x", "favor"), file.path(evil, "run.csv"))      # run.csv there, flows.csv not: fread(path) ran it
  dir.create(file.path(dir, "a b")); fwrite(run_row("a b", "favor"), file.path(dir, "a b", "run.csv"))
  expect_message(t <- read_tables(dir), "not among the runs analysed, ignored")
  expect_setequal(t$runs$run_id, ids)
  expect_false(file.exists(canary))
})

test_that("runs measured with other settings form a scenario of their own, named by them", {
  same <- assemble_tables(rbind(run_row(ids[1], "droptail"), run_row(ids[2], "favor")), data.table())
  expect_equal(uniqueN(same$runs$scen), 1)
  expect_false(grepl("window|seed", same$runs$scen[1]))
  # a run kept from a config with a longer duration: its own scenario, the key says its window
  other <- sub("load0.50", "load0.90", ids[2])
  expect_message(t <- assemble_tables(rbind(run_row(ids[1], "droptail"), run_row(ids[2], "favor"),
                                            run_row(other, "favor", window_end = 60, load = 0.9)), data.table()),
                 "not pooled")
  expect_equal(uniqueN(t$runs$scen), 2)
  expect_equal(uniqueN(t$runs[run_id %in% ids]$scen), 1)
  expect_match(t$runs[run_id == ids[1]]$scen, "window 1-40s$")
  expect_match(t$runs[run_id == other]$scen, "window 1-60s$")
  # DropTail and FaQ of one schedule with different seeds: not paired flow by flow
  s <- assemble_tables(rbind(run_row(ids[1], "droptail", seed = 11), run_row(ids[2], "favor", seed = 12)), data.table())
  expect_equal(uniqueN(s$runs$scen), 2)
  expect_match(s$runs[run_id == ids[2]]$scen, "seed 12$")
  # seeds differ across loads and replications by design: pooled as one scenario
  r <- assemble_tables(rbind(run_row(ids[1], "droptail", seed = 11), run_row(ids[2], "favor", seed = 11),
                             run_row(sub("rep0", "rep1", ids[1]), "droptail", seed = 99, rep = 1)), data.table())
  expect_equal(uniqueN(r$runs$scen), 1)
})

test_that("the HTTP workload is part of the scenario key: its runs never pool with the replay's", {
  d <- data.table(scenario = "dumbbell", topology = "dumbbell", bottleneck_mbps = "10", buffer_pkts = "8", iw = "2",
                  profile = "paper", cc = "reno", size_dist = "lomax", size_mean_pkts = "30", dataplane = "kernel",
                  http_connections = c("", "1", "4"))
  k <- scenario_key(d)
  expect_equal(k, c("dumbbell 10Mb/s buf8 IW2 paper/reno lomax-mean30 kernel",
                    "dumbbell 10Mb/s buf8 IW2 paper/reno lomax-mean30 kernel HTTP closed loop 1conn/path",
                    "dumbbell 10Mb/s buf8 IW2 paper/reno lomax-mean30 kernel HTTP closed loop 4conn/path"))
})
