# The words on and under the figures: titles (analysis/figures.yaml), the paper's AQM names
# (config/aqms.yaml), how many flows and runs stand behind each point, and each figure's caption.
# Captions are computed here, from the very table written beside the figure, so the report only shows them.
suppressPackageStartupMessages(library(yaml))

FIGURES <- yaml::read_yaml(file.path(favorlab_R_dir, "..", "figures.yaml"))
AQM_NAMES <- local({
  a <- yaml::read_yaml(file.path(favorlab_R_dir, "..", "..", "config", "aqms.yaml"))
  unlist(lapply(a, function(e) if (is.null(e$paper_name)) NA_character_ else e$paper_name))
})

# A paper figure by its number; one beyond the paper (no number) by its id and the section it tests.
fig_ref <- function(id) if (is.null(FIGURES[[id]]$number)) sprintf("%s, %s", id, FIGURES[[id]]$section) else
  sprintf("Fig. %d", FIGURES[[id]]$number)
fig_title <- function(id) sprintf("%s: %s", if (is.null(FIGURES[[id]]$number)) id else fig_ref(id), FIGURES[[id]]$title)
# The paper's name of an AQM key; a key aqms.yaml does not know stays itself, so nothing is mislabelled.
aqm_label <- function(key) { n <- unname(AQM_NAMES[as.character(key)]); ifelse(is.na(n), as.character(key), n) }

span <- function(x) if (min(x) == max(x)) format(min(x)) else sprintf("%s-%s", min(x), max(x))
# Flows and runs behind each point, e.g. "n = 1234 flows from 10 runs per point and AQM".
n_note <- function(d, flows = "flows", runs = "runs", per = "per point and AQM") {
  if (!nrow(d) || !all(c("flows", "runs") %in% names(d))) return("")
  count <- function(x, w) paste(span(x), if (max(x) == 1) sub("s$", "", w) else w)
  sprintf("n = %s from %s %s", count(d$flows, flows), count(d$runs, runs), per)
}
# Counts on the points themselves when they differ from point to point (a caption range would hide which).
n_labels <- function(d, x, y) {
  if (!nrow(d) || uniqueN(d$flows) == 1) return(NULL)
  geom_text(data = d, aes(x = .data[[x]], y = .data[[y]], label = flows), size = 2.2, vjust = -0.9,
            check_overlap = TRUE, show.legend = FALSE, na.rm = TRUE)
}

# DropTail against FaQ at each x of a figure's table (within a scenario, so a dataplane pairs with itself):
# at how many x FaQ is lower, its largest lead, and the x where one of the two has no value.
faq_vs_dt <- function(d, x, y, one, many, fmt = "%.3g") {
  w <- d[aqm_is_dt(aqm) | aqm_is_faq(aqm), .(scen, x = get(x), role = ifelse(aqm_is_faq(aqm), "faq", "dt"), y = get(y),
                                              lo = if ("lo" %in% names(d)) lo else NA_real_,
                                              hi = if ("hi" %in% names(d)) hi else NA_real_)]
  if (!all(c("dt", "faq") %in% w$role)) return("no DropTail/FaQ pair to compare.")
  w <- dcast(w, scen + x ~ role, value.var = c("y", "lo", "hi"))
  ok <- w[!is.na(y_dt) & !is.na(y_faq)]
  where <- if (uniqueN(w$scen) > 1) sprintf(" (over %d scenarios)", uniqueN(w$scen)) else ""
  s <- sprintf("FaQ below DropTail at %d of %d %s%s", ok[, sum(y_faq < y_dt)], nrow(ok), many, where)
  if (ok[, any(y_faq < y_dt)]) {
    b <- ok[y_faq < y_dt][which.max(y_dt - y_faq)]
    s <- paste0(s, sprintf(" (largest gap %s at %s %s)", sprintf(fmt, b$y_dt - b$y_faq), one, format(signif(b$x, 3))))
  }
  if (ok[, any(y_faq == y_dt)]) s <- paste0(s, sprintf(", equal at %d", ok[, sum(y_faq == y_dt)]))
  if (ok[, any(!is.na(hi_faq) & !is.na(lo_dt))]) s <- paste0(s, sprintf(", 95 %% intervals apart at %d", ok[, sum(hi_faq < lo_dt, na.rm = TRUE)]))
  miss <- nrow(w) - nrow(ok)
  paste0(s, if (miss) sprintf("; %d %s with too few flows under one of them", miss, many) else "", ".")
}
# FaQ against every other AQM of a figure's table but DropTail (faq_vs_dt has it), in AQM_ORDER: at how many x
# FaQ is lower, and at how many the two 95 % intervals are apart, e.g. "FaQ below CHOKe at 3 of 4 loads (95 %
# intervals apart at 2); LAS at 4 of 4 loads (...)." Empty when the table has FaQ alone, or only DropTail beside it.
faq_vs_others <- function(d, x, y, many) {
  others <- setdiff(aqm_order(d$aqm[!aqm_is_dt(d$aqm) & !aqm_is_faq(d$aqm)]), NA)
  if (!length(others) || !any(aqm_is_faq(d$aqm))) return("")
  g <- function(c) if (c %in% names(d)) d[[c]] else rep(NA_real_, nrow(d))
  w <- data.table(scen = d$scen, x = d[[x]], aqm = as.character(d$aqm), y = d[[y]], lo = g("lo"), hi = g("hi"))
  fq <- w[aqm_is_faq(aqm), .(scen, x, y_faq = y, lo_faq = lo, hi_faq = hi)]
  parts <- vapply(others, function(a) {
    m <- merge(w[aqm == a], fq, by = c("scen", "x"))[!is.na(y) & !is.na(y_faq)]
    apart <- m[, sum(!is.na(hi_faq) & !is.na(lo) & hi_faq < lo)]
    sprintf("%s at %d of %d %s%s", aqm_label(a), m[, sum(y_faq < y)], nrow(m), many,
            if (m[, any(!is.na(hi_faq) & !is.na(lo))]) sprintf(" (95 %% intervals apart at %d)", apart) else "")
  }, "")
  sprintf("FaQ below %s.", paste(parts, collapse = "; "))
}
# What a figure on common_flows counts and what it leaves out of the window's flows, per AQM (censoring(),
# verdict_pairing.R): comparing like with like drops the flows one AQM did not finish, and the reader sees how many.
common_note <- function(t, fl) {
  w <- censoring(t)
  w <- if (nrow(w)) w[scen %in% fl$scen, .(window = sum(flows)), by = aqm] else data.table(aqm = character(), window = integer())
  k <- merge(fl[, .(kept = .N, runs = uniqueN(run_id)), by = aqm], w, by = "aqm", all.x = TRUE)[order(aqm)]
  sprintf(paste("counted: the forward flows of the measurement window that completed under every AQM of their schedule,",
                "%s; left out: %s window flows (unfinished under an AQM, or their schedule has an invalid run)"),
          paste(sprintf("%s %d flows from %d %s", aqm_label(k$aqm), k$kept, k$runs, ifelse(k$runs == 1, "run", "runs")), collapse = ", "),
          paste(sprintf("%s %s of %s", aqm_label(k$aqm), ifelse(is.na(k$window), "?", k$window - k$kept),
                        ifelse(is.na(k$window), "?", k$window)), collapse = ", "))
}
# One value per AQM, named the paper's way: "DropTail 0.012, FaQ 0.009" (pct from verdict_status.R for shares).
per_aqm <- function(v, f = function(x) sprintf("%.3g", x)) paste(aqm_label(names(v)), f(v), collapse = ", ")

# DropTail and FaQ, `metric` of each one's flows, per scenario and only in the scenarios that have both, e.g.
# "DropTail 3.7, FaQ 3." (with the scenario's name before each when there are several, or always with
# name_each). Pooled across scenarios, one that has a single one of the two (its partner's run invalid)
# would weigh on one side only.
dt_faq_per_scenario <- function(fl, metric, f = function(x) sprintf("%.3g", x), name_each = FALSE) {
  a <- fl[aqm_is_dt(aqm) | aqm_is_faq(aqm), .(v = metric(.SD)), by = .(scen, aqm)]
  pair <- a[, .(both = any(aqm_is_dt(aqm)) && any(aqm_is_faq(aqm))), by = scen][both == TRUE, scen]
  alone <- setdiff(unique(a$scen), pair)
  a <- a[scen %in% pair]
  if (!nrow(a)) return("no scenario with both DropTail and FaQ.")
  pre <- name_each || length(pair) > 1
  s <- a[, .(s = paste0(if (pre) paste0(scen[1], ": ") else "", per_aqm(setNames(v, aqm), f))), by = scen]$s
  paste0(paste(s, collapse = "; "), ".",
         if (length(alone)) sprintf(" Not compared (one of the two alone): %s.", paste(alone, collapse = "; ")) else "")
}

# "Paper (Fig. 3): ... Here: ... n = ...": what the paper's figure shows, then ours.
fig_caption <- function(id, ours, n = "") {
  trimws(paste(sprintf("Paper (%s): %s", fig_ref(id), FIGURES[[id]]$paper), "Here:", ours,
               if (nzchar(n)) paste0(n, ".") else ""))
}
