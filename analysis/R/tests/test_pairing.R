# Pairing keyed on schedule identity: flows of two runs are compared flow by flow only when the runs replayed
# the same schedule (seed, measurement window, schedule file hash), whatever their labels say.
pairing_run <- function(id, aqm, sha, seed = 11, rep = 0, topology = "dumbbell")
  data.table(run_id = id, scenario = topology, topology = topology, aqm = aqm, load = 0.5, iw = 2, profile = "paper",
             replication = rep, seed = seed, bottleneck_mbps = 10, buffer_pkts = 8, valid = 1L, cc = "reno",
             size_dist = "lomax", size_mean_pkts = 30, dataplane = "kernel", window_start_s = 10, window_end_s = 40,
             schedule_sha256 = sha)
pairing_flows <- function(ids) rbindlist(lapply(ids, function(id)
  data.table(run_id = id, flow_id = as.character(0:9), direction = "forward", in_metrics = "1", complete = "1",
             start_s = as.character(10 + 0:9), L = "3", latency_s = "0.5", drops = "0")))
SHA_A <- strrep("a", 64); SHA_B <- strrep("b", 64)
ids <- c("dumbbell-10M-buf8_droptail_load0.50_iw2_rep0", "dumbbell-10M-buf8_favor_load0.50_iw2_rep0")

test_that("runs of one schedule pair flow by flow; their flows carry the schedule's identity", {
  t <- assemble_tables(rbind(pairing_run(ids[1], "droptail", SHA_A), pairing_run(ids[2], "favor", SHA_A)), pairing_flows(ids))
  expect_equal(unique(t$flows$schedule_id), "seed 11 window 10-40s schedule aaaaaaaaaaaa")
  p <- pair_flows(t$flows[aqm == "droptail"], t$flows[aqm == "favor"])
  expect_equal(nrow(p), 10)
  expect_equal(p$start_s.a, 10 + 0:9)                      # the block bootstrap's start times
  expect_equal(nrow(common_flows(t$flows)), 20)
})

test_that("two runs with the same labels but different schedule files do not pair", {
  runs <- rbind(pairing_run(ids[1], "droptail", SHA_A), pairing_run(ids[2], "favor", SHA_B))
  # read as the pipeline reads them: each schedule a scenario of its own, and the message names both runs
  expect_message(t <- assemble_tables(runs, pairing_flows(ids)), "schedule aaaaaaaaaaaa.*schedule bbbbbbbbbbbb")
  expect_equal(uniqueN(t$flows$scen), 2)
  expect_equal(nrow(pair_flows(t$flows[aqm == "droptail"], t$flows[aqm == "favor"])), 0)
  # tables put together under one scenario key by other means: pairing them is an error naming the runs
  t$flows[, `:=`(scen = "one", settings = "")]
  expect_error(pair_flows(t$flows[aqm == "droptail"], t$flows[aqm == "favor"]),
               paste0("pair_flows: runs ", ids[1], ", ", ids[2], " share scen one, load 0.5, replication 0 but replayed different schedules"))
  expect_error(common_flows(t$flows), "common_flows: .*different schedules")
  expect_error(sweep_schedules(t$flows, "iw"), "the iw sweep: .*different schedules")
})

test_that("a different seed or window splits as well; an unknown hash or the chain's schedule is never refused", {
  expect_message(t <- assemble_tables(rbind(pairing_run(ids[1], "droptail", SHA_A, seed = 11),
                                            pairing_run(ids[2], "favor", SHA_A, seed = 12)), pairing_flows(ids)), "seed 12")
  expect_equal(nrow(pair_flows(t$flows[aqm == "droptail"], t$flows[aqm == "favor"])), 0)
  # tables without schedule_sha256 (extracted before it) next to ones with it: not a reason to refuse
  t <- assemble_tables(rbind(pairing_run(ids[1], "droptail", ""), pairing_run(ids[2], "favor", SHA_A)), pairing_flows(ids))
  expect_equal(nrow(pair_flows(t$flows[aqm == "droptail"], t$flows[aqm == "favor"])), 10)
  # the chain's reference user writes its schedule as it goes: DropTail's and FaQ's files differ by design
  chain <- sub("dumbbell", "chain", ids)
  t <- assemble_tables(rbind(pairing_run(chain[1], "droptail", SHA_A, topology = "chain"),
                             pairing_run(chain[2], "favor", SHA_B, topology = "chain")), pairing_flows(chain))
  expect_equal(unique(t$flows$schedule_id), "")
  expect_equal(nrow(pair_flows(t$flows[aqm == "droptail"], t$flows[aqm == "favor"])), 10)
})

test_that("C20, which compares DropTail's and FaQ's runs schedule by schedule, refuses two schedules under one key too", {
  runs <- rbind(pairing_run(ids[1], "droptail", SHA_A), pairing_run(ids[2], "favor", SHA_B))
  runs[, `:=`(in_system_mean = c(9, 6), in_system_noise_sd = c(3, 2))]
  t <- suppressMessages(assemble_tables(runs, pairing_flows(ids)))
  t$runs[, scen := "one"]; t$flows[, scen := "one"]
  expect_error(verdict(t, read_claims()["C20"]), paste0("C20: runs ", ids[1], ", ", ids[2], " share scen one, load 0.5, replication 0 but replayed different schedules"))
})
