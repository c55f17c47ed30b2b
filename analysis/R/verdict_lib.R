# The verdict: one row per claim of analysis/claims.yaml (and per scenario it is judged on).
# Every number comes with a 95 % interval (bootstrap.R); every claim states its test (verdict_status.R) and
# minimum sample, and says "insufficient data" rather than holding or failing on too little (claims.yaml,
# header). The claims themselves: verdict_baseline.R (Table 1) and verdict_scenarios.R (the others); the
# flows they compare: verdict_pairing.R.

CLAIMS_YAML <- function() file.path(favorlab_R_dir, "..", "claims.yaml")
read_claims <- function(path = CLAIMS_YAML()) {
  claims <- yaml::read_yaml(path)$claims
  names(claims) <- vapply(claims, `[[`, "", "id")
  for (claim in claims) check_claim_reasons(claim, path)
  claims
}
# Each margin, tolerance and unchanged threshold comes with its reason, and a reason with its value. A reason
# alone is worse than a missing key: R's `$` matches names by prefix, so claim$margin would read margin_reason
# and a row would show the reason's words as its margin.
CLAIM_REASONS <- c(margin = "margin_reason", tolerance = "tolerance_reason", unchanged_s = "unchanged_reason")
check_claim_reasons <- function(claim, path) for (key in names(CLAIM_REASONS)) {
  reason <- CLAIM_REASONS[[key]]
  has <- c(!is.null(claim[[key]]), !is.null(claim[[reason]]))
  if (has[1] != has[2])
    stop(sprintf("%s: claim %s has %s without %s; fix: give both, the value and why it is what it is", path, claim[["id"]],
                 if (has[1]) key else reason, if (has[1]) reason else key), call. = FALSE)
}
# The scenario the paper's numbers come from (claims.yaml paper_scenario): run.csv columns and their values.
read_paper_scenario <- function(path = CLAIMS_YAML()) yaml::read_yaml(path)$paper_scenario
# Whether a run (a run.csv row) is of that scenario, where the paper's numbers are judged.
is_paper_scenario <- function(run, paper = read_paper_scenario())
  all(vapply(names(paper), function(k) k %in% names(run) && identical(as.character(run[[k]]), as.character(paper[[k]])), TRUE))
`%||%` <- function(a, b) if (is.null(a)) b else a

# One row of the verdict. method: how its intervals were made (bootstrap.R); margin: the claim's margins and
# bands (claims.yaml), shown beside every decision they enter; used: the run.csv rows the row's numbers come
# from, whose realized loads and steady-state results the row carries.
verdict_row <- function(claim, scen, ours, interval, n, status, runs = "", note = "", method = "", used = NULL) {
  data.table(claim = claim$id, what = claim$what, scenario = scen, paper = as.character(claim$paper), ours = ours,
             interval = interval, method = method, test = as.character(claim$test), margin = margin_text(claim), n = n,
             min_sample = paste(names(claim$min_sample), unlist(claim$min_sample), sep = " ", collapse = ", "),
             status = as.character(status), runs = runs, realized_load = realized_load_text(used), steady = steady_text(used), note = note,
             parts = attr(status, "parts") %||% "[]")
}
not_run <- function(claim, why) verdict_row(claim, "", "", "", "", NOTRUN, note = why)
# "name value" for each margin, "target +- tolerance" for each band, "unchanged: |Delta| <= s"
margin_text <- function(claim) {
  named <- function(x, f = format) if (is.null(x)) character() else if (is.list(x) || length(x) > 1)
    sprintf("%s %s", names(x) %||% seq_along(x), vapply(x, f, "")) else f(x)
  parts <- c(if (!is.null(claim$margin)) paste("margin", paste(named(claim$margin), collapse = ", ")),
             if (!is.null(claim$target)) sprintf("band %s +- %s", paste(unlist(claim$target), collapse = "/"),
                                                 paste(unique(unlist(claim$tolerance)), collapse = "/")),
             if (!is.null(claim$unchanged_s)) sprintf("unchanged |Delta| <= %g s", claim$unchanged_s))
  paste(parts, collapse = "; ")
}
# Per load, the realized load of each run used ("0.25: 0.279 0.279; 0.85: 0.708 0.708").
realized_load_text <- function(used) {
  if (is.null(used) || !nrow(used) || !"realized_load" %in% names(used)) return("")
  by_load <- split(num(used$realized_load), num(used$load))
  paste(sprintf("%s: %s", names(by_load), vapply(by_load, function(x) paste(ifelse(is.na(x), "NA", sprintf("%.3g", x)), collapse = " "), "")),
        collapse = "; ")
}
# The steady test's result of the runs used (analysis/tables/run.py, steady_state). A run it could not test
# (no forward flow, a window under 3 s: steady empty) is said to be untested, not unsteady: steady_runs keeps it.
steady_text <- function(used) {
  if (is.null(used) || !nrow(used) || !"steady" %in% names(used)) return("")
  unsteady <- used[!is.na(num(steady)) & num(steady) != 1]
  untested <- used[is.na(num(steady))]
  if (!nrow(unsteady) && !nrow(untested)) return(sprintf("all %d steady", nrow(used)))
  paste(c(sprintf("%d of %d steady", nrow(used) - nrow(unsteady) - nrow(untested), nrow(used)),
          if (nrow(unsteady)) sprintf("not steady: %s", paste(unsteady$run_id, collapse = " ")),
          if (nrow(untested)) sprintf("steady test not run: %s", paste(untested$run_id, collapse = " "))), collapse = "; ")
}
# A steady-state claim's runs: the unsteady ones left out and named (claims.yaml steady_state).
steady_runs <- function(claim, runs) {
  if (!isTRUE(claim$steady_state) || !"steady" %in% names(runs)) return(list(runs = runs, note = ""))
  unsteady <- runs[!is.na(num(steady)) & num(steady) == 0]
  list(runs = runs[!run_id %in% unsteady$run_id],
       note = if (nrow(unsteady)) sprintf("left out, not steady (a steady-state claim): %s", paste(unsteady$run_id, collapse = " ")) else "")
}
runs_text <- function(ids) {
  ids <- sort(unique(ids))
  if (!length(ids)) "none"
  else sprintf("%d runs: %s%s", length(ids), paste(head(ids, 4), collapse = " "), if (length(ids) > 4) " ..." else "")
}
pair_runs <- function(pairs) runs_text(c(pairs$run_id.a, pairs$run_id.b))

# How each kind of claim (claims.yaml `scenario`) is judged: judge(claim, tables, valid_flows) gives the
# claim's rows, valid_flows being the in-metric flows of valid runs (metric_flows). A kind whose
# needs_flows is TRUE is "not run: no valid runs" without them; the others decide that themselves (a chain
# run that is invalid is insufficient data).
CLAIM_KINDS <- list(
  baseline = list(needs_flows = FALSE, judge = function(claim, tables, valid_flows) {
    table1 <- if (nrow(valid_flows)) sort(unique(valid_flows[num(iw) == 2 & is_table1(valid_flows)]$scen)) else character()
    if (!length(table1)) return(list(not_run(claim, "needs valid runs of the Table 1 scenario with IW 2")))
    lapply(table1, function(scen_key) baseline_claims(claim, tables, valid_flows, scen_key))
  }),
  chain = list(needs_flows = FALSE, judge = function(claim, tables, valid_flows) claim_C17(claim, tables)),
  synflood = list(needs_flows = FALSE, judge = function(claim, tables, valid_flows) claim_C19(claim, tables)),
  buffer_sweep = list(needs_flows = TRUE, judge = function(claim, tables, valid_flows)
    sweep_claim(claim, tables, copy(valid_flows[num(iw) == 2]), "buffer_pkts")),
  iw_sweep = list(needs_flows = TRUE, judge = function(claim, tables, valid_flows)
    sweep_claim(claim, tables, copy(valid_flows), "iw")),
  persistent = list(needs_flows = TRUE, judge = function(claim, tables, valid_flows) PERSISTENT_CLAIMS[[claim$id]](claim, tables)),
  model = list(needs_flows = TRUE, judge = function(claim, tables, valid_flows) claim_C22(claim, tables)))

verdict <- function(tables, claims = read_claims()) {
  valid_flows <- metric_flows(tables)
  rows <- lapply(claims, function(claim) {
    kind <- CLAIM_KINDS[[claim$scenario]]
    if ((is.null(kind) || kind$needs_flows) && !nrow(valid_flows)) return(list(not_run(claim, "no valid runs")))
    if (is.null(kind)) return(list(not_run(claim, sprintf("the %s scenario is not part of the pipeline yet", claim$scenario))))
    kind$judge(claim, tables, valid_flows)
  })
  rbindlist(unlist(rows, recursive = FALSE), fill = TRUE)
}
