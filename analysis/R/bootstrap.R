# The 95 % intervals of the verdict, the figures and the ranking: a percentile bootstrap of a statistic.
# resamples per interval; the tests lower it (options(favorlab.boot_B = 200)) to stay quick
BOOT_B <- function() getOption("favorlab.boot_B", 1000)

# With three or more replications the resampling unit is the replication (all flows of one replication's
# schedules together: replications are independent, flows within one are not); with fewer, flows are
# resampled within each schedule (load x replication), which keeps each load's weight.
boot_plan <- function(flows) {
  replication_of <- as.character(flows$replication)
  if (length(unique(replication_of)) >= 3)
    return(list(by_rep = TRUE, groups = split(seq_len(nrow(flows)), replication_of),
                method = sprintf("bootstrap over %d replications", length(unique(replication_of)))))
  groups <- split(seq_len(nrow(flows)), paste(flows$load, replication_of))
  list(by_rep = FALSE, groups = groups, method = sprintf("bootstrap over flows within %d schedule(s)", length(groups)))
}
# Percentile bootstrap of stat(flows) (a numeric vector): list(est, lo, hi, method). stat may return NA on a
# resample; those are dropped.
boot_ci <- function(flows, stat, B = BOOT_B(), seed = 2013) {
  est <- as.numeric(stat(flows))
  plan <- boot_plan(flows); groups <- plan$groups
  draw <- if (plan$by_rep) function() unlist(groups[sample.int(length(groups), replace = TRUE)], use.names = FALSE)
          else function() unlist(lapply(groups, function(rows) rows[sample.int(length(rows), length(rows), replace = TRUE)]),
                                 use.names = FALSE)
  set.seed(seed)
  resamples <- matrix(vapply(seq_len(B), function(i) as.numeric(stat(flows[draw()])), numeric(length(est))), nrow = length(est))
  quantile_of <- function(p) apply(resamples, 1, function(x) if (all(is.na(x))) NA_real_ else quantile(x, p, na.rm = TRUE, names = FALSE))
  list(est = est, lo = quantile_of(0.025), hi = quantile_of(0.975), method = plan$method)
}
