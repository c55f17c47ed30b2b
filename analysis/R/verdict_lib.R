# The verdict: one row per claim C1..C18 of paper-targets.md.
HOLDS <- "holds"; FAILS <- "does not hold"; NOTRUN <- "not run"
vrow <- function(id, claim, paper, ours, tol, status, runs, note = "")
  data.table(claim = id, what = claim, paper = paper, ours = ours, tolerance = tol, status = status, runs = runs, note = note)
pct <- function(x) ifelse(is.na(x), "NA", sprintf("%.1f%%", 100 * x))
within <- function(x, target, tol) !is.na(x) && abs(x - target) <= tol

verdict <- function(t) {
  fl <- metric_flows(t)
  dt <- fl[aqm_is_dt(aqm)]; faq <- fl[aqm_is_faq(aqm)]
  runs_of <- function(...) { r <- unique(rbind(...)$run_id); if (!length(r)) "none" else sprintf("%d runs: %s%s", length(r), paste(head(r, 4), collapse = " "), if (length(r) > 4) " ..." else "") }
  both <- nrow(dt) > 0 && nrow(faq) > 0
  rs <- runs_of(dt, faq)
  nr <- function(id, what, paper, why) vrow(id, what, paper, "", "", NOTRUN, "none", why)
  out <- list()
  # C1: peak at the initial RTO with DT, not with FaQ
  out$C1 <- if (!both) nr("C1", "DT latency peak at initial RTO; FaQ removes it", "peak at 3 s", "needs DropTail and FaQ runs") else {
    irto <- ifelse(dt$profile[1] == "paper", 3, 1)
    sh <- function(f) mean(num(f$latency_s) >= irto & num(f$latency_s) < irto + 1)
    a <- sh(dt); b <- sh(faq)
    vrow("C1", "DT latency peak at initial RTO; FaQ removes it", "peak with DT, none with FaQ",
         sprintf("share in [%g,%g) s: DT %s, FaQ %s", irto, irto + 1, pct(a), pct(b)), "DT share > 2 x FaQ share",
         if (a > 2 * b && a > 0) HOLDS else FAILS, rs)
  }
  # C2: 56% of DT drops recovered by RTO
  out$C2 <- if (!nrow(dt)) nr("C2", "DT: 56% of losses recovered by RTO", "56%", "needs DropTail runs") else {
    v <- rto_recovery_ratio(dt)
    vrow("C2", "DT: 56% of losses recovered by RTO", "56%", pct(v), "+-15 points", if (within(v, 0.56, 0.15)) HOLDS else FAILS, runs_of(dt))
  }
  pr <- if (both) paired_delta(dt, faq) else data.table()
  out$C3 <- if (!nrow(pr)) nr("C3", "mean latency gain ~30%, short flows up to 55%", "30% / 55%", "needs paired DT/FaQ runs") else {
    g <- latency_gain(pr); gs <- pr[num(L) < 10, latency_gain(.SD)]
    vrow("C3", "mean latency gain ~30%, short flows up to 55%", "30% / 55%", sprintf("%s / %s", pct(g), pct(gs)), "+-15 points on the total",
         if (within(g, 0.30, 0.15)) HOLDS else FAILS, rs)
  }
  out$C4 <- if (!both) nr("C4", "FaQ lower latency and drop ratio than DT as load grows", "FaQ lower", "needs DT and FaQ runs") else {
    hl <- max(num(fl$load)); a <- dt[num(load) == hl]; b <- faq[num(load) == hl]
    ok <- latency_mean(b) < latency_mean(a) && isTRUE(drop_ratio(b) <= drop_ratio(a))
    vrow("C4", "FaQ lower latency and drop ratio than DT as load grows (DT, FaQ only)", "FaQ lower",
         sprintf("load %g: latency DT %.3f s FaQ %.3f s; drops DT %s FaQ %s", hl, latency_mean(a), latency_mean(b), pct(drop_ratio(a)), pct(drop_ratio(b))),
         "FaQ strictly lower latency, not higher drop ratio", if (ok) HOLDS else FAILS, rs, "CHOKe/LAS/RuN2C not compared")
  }
  out$C5 <- if (!both) nr("C5", "normalized goodput 2.4% DT vs 3.5% FaQ", "2.4% / 3.5%", "needs DT and FaQ runs") else {
    c <- 1e6 * num(fl$bottleneck_mbps[1]); a <- normalized_goodput(dt, c); b <- normalized_goodput(faq, c)
    vrow("C5", "normalized goodput 2.4% DT vs 3.5% FaQ", "2.4% / 3.5%", sprintf("%s / %s", pct(a), pct(b)), "FaQ > DT", if (b > a) HOLDS else FAILS, rs)
  }
  out$C6 <- if (!nrow(pr)) nr("C6", "Delta: 16% same, 54% faster, 30% slower, 10% faster by > 1 s", "16/54/30/10%", "needs paired runs") else {
    s <- delta_shares(pr); tg <- c(0.16, 0.54, 0.30, 0.10)
    vrow("C6", "Delta: 16% same, 54% faster, 30% slower, 10% faster by > 1 s", "16/54/30/10%",
         paste(pct(s), collapse = "/"), "+-15 points each", if (all(abs(s - tg) <= 0.15)) HOLDS else FAILS, rs)
  }
  out$C7 <- if (!nrow(pr)) nr("C7", "short flows 58% improve 25% worsen; long 80% improve", "58/25%; 80/20%", "needs paired runs") else {
    sh <- pr[num(L) < 10]; lg <- pr[num(L) >= 100]
    si <- mean(sh$delta > 0.001); sw <- mean(sh$delta < -0.001); li <- if (nrow(lg)) mean(lg$delta > 0.001) else NA
    ok <- within(si, 0.58, 0.15) && within(sw, 0.25, 0.15) && (is.na(li) || within(li, 0.80, 0.2))
    vrow("C7", "short flows 58% improve 25% worsen; long 80% improve", "58/25%; 80/20%",
         sprintf("short %s/%s; long %s improve (n=%d)", pct(si), pct(sw), pct(li), nrow(lg)), "+-15 points (long +-20)", if (ok) HOLDS else FAILS, rs)
  }
  out$C8 <- nr("C8", "persistent flows: short flows in system 100 vs 30", "100 / 30", "persistent-flows scenario not in these tables")
  out$C9 <- if (!both) nr("C9", "mean queueing delay 2.9 ms DT vs 2.8 ms FaQ", "2.9 / 2.8 ms", "needs DT and FaQ runs") else {
    a <- mean_queueing_delay(dt); b <- mean_queueing_delay(faq)
    vrow("C9", "mean queueing delay 2.9 ms DT vs 2.8 ms FaQ", "2.9 / 2.8 ms", sprintf("%.2f / %.2f ms", 1000 * a, 1000 * b), "+-1.5 ms each",
         if (within(a, 0.0029, 0.0015) && within(b, 0.0028, 0.0015)) HOLDS else FAILS, rs)
  }
  out$C10 <- if (!both) nr("C10", "drop ratio lower with FaQ for every flow length", "FaQ lower", "needs DT and FaQ runs") else {
    d <- rbind(dt, faq)[, .(v = drop_ratio(.SD)), by = .(aqm = ifelse(aqm_is_dt(aqm), "dt", "faq"), cls = length_class(L))]
    w <- dcast(d, cls ~ aqm, value.var = "v")[!is.na(dt) & !is.na(faq)]
    vrow("C10", "drop ratio lower with FaQ for every flow length", "FaQ lower", sprintf("FaQ < DT in %d of %d length classes", sum(w$faq < w$dt), nrow(w)),
         "all classes", if (nrow(w) && all(w$faq < w$dt)) HOLDS else FAILS, rs)
  }
  out$C11 <- if (!both) nr("C11", "SYN loss DT 1.8% vs FaQ 0.04%", "1.8% / 0.04%", "needs DT and FaQ runs") else {
    a <- syn_loss_ratio(dt); b <- syn_loss_ratio(faq)
    vrow("C11", "SYN loss DT 1.8% vs FaQ 0.04%", "1.8% / 0.04%", sprintf("%s / %s", pct(a), pct(b)), "FaQ below DT / 3", if (a > 0 && b < a / 3) HOLDS else FAILS, rs)
  }
  out$C12 <- if (!both) nr("C12", "RTO ratio T(rho) lower with FaQ, more at high load", "FaQ lower", "needs DT and FaQ runs") else {
    d <- rbind(dt, faq)[, .(v = rto_ratio(.SD)), by = .(a = ifelse(aqm_is_dt(aqm), "dt", "faq"), load = num(load))]
    w <- dcast(d, load ~ a, value.var = "v")[!is.na(dt) & !is.na(faq)]
    vrow("C12", "RTO ratio T(rho) lower with FaQ, more at high load", "FaQ lower", sprintf("FaQ < DT at %d of %d loads", sum(w$faq < w$dt), nrow(w)),
         "all loads", if (nrow(w) && all(w$faq < w$dt)) HOLDS else FAILS, rs)
  }
  out$C13 <- if (!both) nr("C13", "tau 56% DT vs 38% FaQ; flows < 6 packets recover only by RTO", "56% / 38%", "needs DT and FaQ runs") else {
    a <- rto_recovery_ratio(dt); b <- rto_recovery_ratio(faq); small_fr <- sum(num(rbind(dt, faq)[num(L) < 6]$FR))
    vrow("C13", "tau 56% DT vs 38% FaQ; flows < 6 packets recover only by RTO", "56% / 38%", sprintf("%s / %s; FR in flows < 6 pkts: %d", pct(a), pct(b), small_fr),
         "FaQ < DT, each +-15 points", if (isTRUE(b < a) && within(a, 0.56, 0.15) && within(b, 0.38, 0.15)) HOLDS else FAILS, rs)
  }
  has_fav <- nrow(faq) && any(!is.na(num(faq$fav_favored)))
  out$C14 <- if (!has_fav) nr("C14", "2-packet flows always favored; mid ~50%; long ~70%", "100/50/70%", "needs FaQ runs with favor trace") else {
    p2 <- p_favor(faq[num(L) == 2]); pm <- p_favor(faq[num(L) >= 10 & num(L) < 100]); pl <- p_favor(faq[num(L) >= 100])
    vrow("C14", "2-packet flows always favored; mid ~50%; long ~70%", "100/50/70%", sprintf("%s / %s / %s", pct(p2), pct(pm), pct(pl)),
         "2-pkt >= 95%, others +-20 points", if (isTRUE(p2 >= 0.95) && within(pm, 0.5, 0.2)) HOLDS else FAILS, runs_of(faq))
  }
  out$C15 <- if (!has_fav) nr("C15", "push-out ~30% of drops", "30%", "needs FaQ runs with favor trace") else {
    v <- pushout_share(faq)
    vrow("C15", "push-out ~30% of drops", "30%", pct(v), "+-15 points", if (within(v, 0.3, 0.15)) HOLDS else FAILS, runs_of(faq))
  }
  nb <- length(unique(fl$buffer_pkts))
  out$C16 <- if (!both || nb < 2) nr("C16", "FaQ below DT for every queue size", "FaQ lower", "needs several buffer sizes") else {
    d <- rbind(dt, faq)[, .(v = latency_mean(.SD)), by = .(a = ifelse(aqm_is_dt(aqm), "dt", "faq"), b = num(buffer_pkts))]
    w <- dcast(d, b ~ a, value.var = "v")[!is.na(dt) & !is.na(faq)]
    vrow("C16", "FaQ below DT for every queue size", "FaQ lower", sprintf("FaQ < DT at %d of %d sizes", sum(w$faq < w$dt), nrow(w)), "all sizes",
         if (all(w$faq < w$dt)) HOLDS else FAILS, rs)
  }
  out$C17 <- nr("C17", "five-hop chain: 442 (DT) vs 538 (FaQ) flows completed", "442 / 538", "chain scenario not in these tables")
  iws <- unique(num(fl$iw))
  out$C18 <- if (!both || !all(c(2, 10) %in% iws)) nr("C18", "IW10 lowers DT latency with more loss; FaQ improves both", "see F27", "needs IW 2 and IW 10 runs") else {
    m <- function(f, w) latency_mean(f[num(iw) == w]); dr <- function(f, w) drop_ratio(f[num(iw) == w])
    ok <- m(dt, 10) < m(dt, 2) && isTRUE(dr(dt, 10) > dr(dt, 2)) && m(faq, 2) < m(dt, 2) && m(faq, 10) < m(dt, 10)
    vrow("C18", "IW10 lowers DT latency with more loss; FaQ improves both", "see F27",
         sprintf("DT %.3f->%.3f s; FaQ %.3f / %.3f s", m(dt, 2), m(dt, 10), m(faq, 2), m(faq, 10)), "signs", if (ok) HOLDS else FAILS, rs)
  }
  rbindlist(out)
}
