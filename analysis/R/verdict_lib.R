# The verdict: one row per claim of analysis/claims.yaml (and per scenario it is judged on).
# Every number comes with a 95 % interval (bootstrap.R); every claim states its test (verdict_status.R) and
# minimum sample, and says "insufficient data" rather than holding or failing on too little (claims.yaml,
# header). The claims themselves: verdict_baseline.R (Table 1) and verdict_scenarios.R (the others); the
# flows they compare: verdict_pairing.R.

read_claims <- function(path = file.path(favorlab_R_dir, "..", "claims.yaml")) {
  claims <- yaml::read_yaml(path)$claims
  names(claims) <- vapply(claims, `[[`, "", "id")
  claims
}
`%||%` <- function(a, b) if (is.null(a)) b else a

verdict_row <- function(claim, scen, ours, interval, n, status, runs = "", note = "") {
  data.table(claim = claim$id, what = claim$what, scenario = scen, paper = as.character(claim$paper), ours = ours,
             interval = interval, test = as.character(claim$test), n = n,
             min_sample = paste(names(claim$min_sample), unlist(claim$min_sample), sep = " ", collapse = ", "),
             status = status, runs = runs, note = note)
}
not_run <- function(claim, why) verdict_row(claim, "", "", "", "", NOTRUN, note = why)
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
  persistent = list(needs_flows = TRUE, judge = function(claim, tables, valid_flows) claim_C8(claim, tables)))

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
