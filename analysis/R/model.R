# The paper's stochastic model of FaQ (Section 7.2): P(Favor | S = s), the share of a flow's packets (its SYN
# and its data) FaQ favors, against the flow size s in packets, the SYN counted. Phase #1 (s <= s1): the flow is in slow start and its bursts meet a
# queue with (Z = 1) or without (Z = 0) favored packets in it, Eqs. 6-8. Phase #2 (s1 <= s <= s2): flows
# leave slow start at a packet k uniform on [s1, s2), after which each packet is favored with probability
# p_ca (0.7 in the paper, read off its Fig. 21). Phase #3 (s > s2): every flow has left slow start.
# P(Z = 1), s1 and s2 depend on the load; fit_favor_model() estimates them from measured P(Favor | S = s),
# fit_favor_panel() adds an interval on P(Z = 1), and model_fit_claim() puts the paper's model statement in
# numbers for the verdict.

# Packets are numbered as the paper's bursts number them: the SYN is packet 1 (the paper counts it in every
# data set, Section 4, and its footnote 4 takes the SYN as the single packet of the first burst), the data
# packets are 2 .. L + 1. Slow start then sends bursts (the paper's BS) of 1 (the SYN), IW, 2 IW, 4 IW, ...
# packets: with the paper's IW of 2 that is 1, 2, 4, 8, ..., burst k holding packets 2^k .. 2^(k+1) - 1; with
# IW 10 it is 1, 10, 20, 40, ... (packets 1, 2-11, 12-31, 32-71, ...). The paper assumes the previous RTT's
# packets have left the queue when a burst arrives, so every burst meets the same queue state: with
# Z = 0 its first packet finds no favored packet and is favored, and so are the ones right behind it, up
# to 3 in a row (footnote 4); with Z = 1 only the first packet of each burst (Eq. 7: packets 1, 2, 4, 8, ...).
#
# How Eqs. 6 and 7 continue past their "...": the paper lists the favored packets with Z = 0 as 1, 2, 3, 4,
# 5, 6, 8, 9, 10, 16, 17, 18, ..., i.e. all of bursts 0 and 1 (1 and 2 packets) and the first 3 of bursts
# 2, 3 and 4, and with Z = 1 as 1, 2, 4, 8, 16, 32, .... The rule "the first min(per_burst, size) packets of
# each burst are favored", per_burst = 3 (Z = 0) or 1 (Z = 1), reproduces every listed case and every branch
# of Eqs. 6 and 7 (1 for s <= 6, (s-1)/s on 7..10, 9/s on 11..15, (s-6)/s on 16..18, 12/s on 19..31; 1,
# 2/s, 3/s, 4/s, 5/s), and continues them with the pattern of the listed bursts:
#   P(Favor | Z = 0, S = s) = (s - 19)/s on 32..34, 15/s on 35..63, (s - 48)/s on 64..66, 18/s on 67..127, ...
#   P(Favor | Z = 1, S = s) = (floor(log2 s) + 1) / s
# The listed cases stop at packet 31, so a rule that changes how many packets a later burst has favored
# (e.g. more than 3 once bursts exceed 16 packets) would fit them too; nothing in the paper suggests one:
# footnote 4's "maximum of 3 packets favored in a row" holds for every burst size, so the cap stays 3. The
# same rule with another IW's bursts is the model of a panel run with that IW (the paper ran IW 2 only).
PAPER_IW <- 2
favored_in_bursts <- function(s, per_burst, iw = PAPER_IW) {
  s <- num(s)
  k <- ceiling(log2(max(c(s, 1), na.rm = TRUE) / iw + 1)) + 1
  size <- c(1, iw * 2^(0:k))                             # burst sizes: the SYN, then IW doubling
  first <- cumsum(c(1, head(size, -1)))                  # each burst's first packet
  burst <- matrix(size, nrow = length(s), ncol = length(size), byrow = TRUE)
  reached <- pmax(outer(s, first, `-`) + 1, 0)           # packets of each burst among the first s (pmax keeps the first argument's dim)
  rowSums(pmin(reached, burst, per_burst))
}
PER_BURST <- c(z0 = 3, z1 = 1)

# Eq. 6: P(Favor | Z = 0, S = s)
p_favor_z0 <- function(s, iw = PAPER_IW) favored_in_bursts(s, PER_BURST[["z0"]], iw) / num(s)
# Eq. 7: P(Favor | Z = 1, S = s)
p_favor_z1 <- function(s, iw = PAPER_IW) favored_in_bursts(s, PER_BURST[["z1"]], iw) / num(s)
# Eq. 8, phase #1 (slow start): P(Favor | S = s) = P(Z = 0) Eq. 6 + P(Z = 1) Eq. 7
p_favor_slow_start <- function(s, p_z1, iw = PAPER_IW) (1 - p_z1) * p_favor_z0(s, iw) + p_z1 * p_favor_z1(s, iw)

# P(Favor | Z = z, S = s) of flows that leave slow start at packet k with probability p_k = 1 / (s2 - s1)
# for each k in s1 .. s2 - 1 (the paper's uniform "first approximation"): those with k < s had packets
# 1..k favored as in slow start and each of the s - k packets after with probability p_ca; the share
# (s2 - s) / (s2 - s1) that has not left yet (none past s2) is still in slow start, phase #1. The sum over k
# is written with cumulative sums so that every size is computed at once. At s = s1 this is Eq. 6 or 7,
# so the model is continuous where phase #1 ends. `favored` holds favored_in_bursts(1:n, z), n >= max(s, s2).
after_slow_start_z <- function(s, s1, s2, p_ca, favored) {
  cum <- c(0, cumsum(favored))                           # cum[k + 1] = favored packets summed over sizes 1..k
  top <- pmin(s, s2)                                     # leaving points k = s1 .. top - 1
  n <- top - s1
  sum_favored <- cum[top] - cum[s1]
  sum_after <- n * s - (s1 + top - 1) * n / 2            # sum over k of (s - k)
  still <- pmax(0, s2 - s) * favored[s]
  (sum_favored + p_ca * sum_after + still) / ((s2 - s1) * s)
}

check_model_args <- function(p_z1, s1, s2, p_ca) {
  stopifnot(length(p_z1) == 1, p_z1 >= 0, p_z1 <= 1, length(p_ca) == 1, p_ca >= 0, p_ca <= 1,
            length(s1) == 1, length(s2) == 1, s1 >= 1, s1 == round(s1), s2 == round(s2), s2 > s1)
}
favored_table <- function(n, iw = PAPER_IW) lapply(PER_BURST, function(b) favored_in_bursts(seq_len(n), b, iw))

# P(Favor | Z = 0, S = s) and P(Favor | Z = 1, S = s) over all three phases; P(Favor | S = s) mixes them by
# P(Z = 1) as Eq. 8 does in every phase (the paper's second-phase formula).
p_favor_given_z <- function(s, s1, s2, p_ca = 0.7, iw = PAPER_IW, favored = favored_table(max(c(s, s2), na.rm = TRUE), iw)) {
  s <- num(s)
  lapply(favored, function(f) {
    v <- f[s] / s                                        # phase #1
    late <- !is.na(s) & s > s1
    v[late] <- after_slow_start_z(s[late], s1, s2, p_ca, f)
    v
  })
}

# Phase #2, s1 <= s <= s2 (NA elsewhere): flows leaving slow start.
p_favor_leaving_slow_start <- function(s, p_z1, s1, s2, p_ca = 0.7, iw = PAPER_IW) {
  check_model_args(p_z1, s1, s2, p_ca)
  s <- num(s)
  v <- favor_model(s, p_z1, s1, s2, p_ca, iw)
  v[!(s >= s1 & s <= s2)] <- NA_real_
  v
}
# Phase #3, s > s2 (NA elsewhere): every flow has left slow start, its later packets favored with p_ca.
p_favor_congestion_avoidance <- function(s, p_z1, s1, s2, p_ca = 0.7, iw = PAPER_IW) {
  check_model_args(p_z1, s1, s2, p_ca)
  s <- num(s)
  v <- favor_model(s, p_z1, s1, s2, p_ca, iw)
  v[!(s > s2)] <- NA_real_
  v
}

# The model: P(Favor | S = s) for any vector of sizes (packets, the SYN counted, >= 1), each in its phase.
favor_model <- function(s, p_z1, s1, s2, p_ca = 0.7, iw = PAPER_IW) {
  check_model_args(p_z1, s1, s2, p_ca)
  z <- p_favor_given_z(s, s1, s2, p_ca, iw)
  (1 - p_z1) * z$z0 + p_z1 * z$z1
}

# Measured P(Favor | S = s), Eq. 5, per flow size s in the model's numbering: s = L + 1, the SYN being
# packet 1. Its numerator is the favored data packets (fav_favored_data) plus the favored SYNs: every SYN that
# entered the queue, 1 + syn_retrans - syn_drops_bneck, since a SYN is its flow's only packet and so finds none
# of its flow queued (FaQ's rule favors it); its denominator s + R_i counts the SYN retransmissions with the
# data's. One row per size with its flows and runs. Flows whose favor trace could not be paired
# (fav_favored_data empty) are left out here too, so that a size's `flows` (its weight in the fit) counts only
# the flows its P(Favor) was measured on.
favor_by_size <- function(fl) {
  fl <- fl[!is.na(num(fav_favored_data)) & !is.na(num(L)) & num(L) >= 1]
  if (!nrow(fl)) return(data.table(s = numeric(), p = numeric(), flows = integer(), runs = integer()))
  col0 <- function(c) if (c %in% names(fl)) { x <- num(fl[[c]]); x[is.na(x)] <- 0; x } else rep(0, nrow(fl))
  syn_sent <- 1 + col0("syn_retrans")
  d <- data.table(s = num(fl$L) + 1, fa = num(fl$fav_favored_data) + syn_sent - col0("syn_drops_bneck"),
                  sent = num(fl$L) + 1 + col0("R") + col0("syn_retrans"), run_id = fl$run_id)
  d[, .(p = sum(fa) / sum(sent), flows = .N, runs = uniqueN(run_id)), by = s][order(s)]
}

# The paper gives no s1 or s2; phase #2 is "the bowl between [10 : 100] in Figure 21".
PAPER_S1 <- 10
PAPER_S2 <- 100
# s1 and s2 are searched on integers spaced about 8 % apart from 2 to 2000 packets, plus the paper's bowl
# (so the fit is never worse than the bowl with the fitted P(Z = 1)); a finer grid can be passed.
FIT_GRID <- sort(unique(c(round(exp(seq(log(2), log(2000), by = log(1.08)))), PAPER_S1, PAPER_S2)))
FIT_MIN_FLOWS <- 30
FIT_MIN_SIZES <- 5

# P(Favor | Z = z, S = s) at the sizes s (rows) for one s1 and every s2 of a vector (columns): p_favor_given_z
# written for all s2 at once.
given_z_over_s2 <- function(s, s1, s2, p_ca, favored) {
  n <- length(s); m <- length(s2)
  S <- matrix(s, n, m); S2 <- matrix(s2, n, m, byrow = TRUE)
  lapply(favored, function(f) {
    cum <- c(0, cumsum(f))
    top <- pmin(S, S2); k <- top - s1
    late <- (cum[top] - cum[s1] + p_ca * (k * S - (s1 + top - 1) * k / 2) + pmax(0, S2 - S) * f[S]) / ((S2 - s1) * S)
    ifelse(S > s1, late, f[S] / S)
  })
}

# The model at the sizes s for every (s1, s2) of the grid, s1 < s2, once: columns in the order (s1, then s2)
# of `pairs`, as the products the fit's closed form needs (z0, dz = z1 - z0 and their squares and product).
# A fit then costs a few matrix-vector products, so that the interval can refit every resample.
model_grid <- function(s, grid = FIT_GRID, p_ca = 0.7, iw = PAPER_IW) {
  s <- sort(unique(num(s))); grid <- sort(unique(grid))
  favored <- favored_table(max(c(s, grid)), iw)
  per <- lapply(grid[-length(grid)], function(s1) given_z_over_s2(s, s1, grid[grid > s1], p_ca, favored))
  z0 <- do.call(cbind, lapply(per, `[[`, "z0")); dz <- do.call(cbind, lapply(per, `[[`, "z1")) - z0
  list(s = s, p_ca = p_ca, iw = iw, pairs = CJ(s1 = grid, s2 = grid)[s1 < s2], z0 = z0, dz = dz, dz2 = dz^2, dz_z0 = dz * z0, z02 = z0^2)
}

# Weighted least squares fit of P(Z = 1) in [0, 1] and s1 < s2 on `grid` to measured P(Favor | S = s)
# (d: s, p, flows; the flows of a size are its weight), with the bursts of the panel's IW. The model is linear
# in P(Z = 1) (Eq. 8), so for each (s1, s2) P(Z = 1) has a closed form, clamped to [0, 1] (the constrained
# optimum of a 1-D quadratic); the (s1, s2) with the least weighted squared error wins (ties: the smallest s1,
# then s2). residual is the weighted root mean square of measured minus model; explained the share of the
# weighted variance of P(Favor) across sizes the model accounts for (1 - wss / the squared error about the
# weighted mean: how much of the peaks and the bowl it reproduces); s_min the smallest size measured (an s1
# below it is only weakly pinned down, through where flows leave slow start). Fewer than min_flows flows or
# min_sizes sizes say "insufficient data": a handful of sizes cannot separate P(Z = 1) from s1 and s2.
# mg: the model_grid of the sizes (a superset of d's), when a caller fits many resamples of one panel.
fit_favor_model <- function(d, grid = FIT_GRID, p_ca = 0.7, min_flows = FIT_MIN_FLOWS, min_sizes = FIT_MIN_SIZES, iw = PAPER_IW,
                            mg = NULL) {
  d <- as.data.table(d)[!is.na(p) & !is.na(s)]
  res <- list(status = "insufficient data", p_z1 = NA_real_, s1 = NA_real_, s2 = NA_real_, residual = NA_real_,
              wss = NA_real_, explained = NA_real_, flows = sum(d$flows), sizes = nrow(d), s_min = suppressWarnings(min(d$s)), iw = iw,
              note = sprintf("%d flows of %d sizes (a fit needs %d flows and %d sizes)", sum(d$flows), nrow(d),
                             min_flows, min_sizes))
  if (res$flows < min_flows || res$sizes < min_sizes) return(res)
  if (is.null(mg)) mg <- model_grid(d$s, grid, p_ca, iw)
  stopifnot(mg$p_ca == p_ca, mg$iw == iw, all(d$s %in% mg$s))
  # the weighted squared error for each pair, expanded so that each term is a product with the grid's columns
  w <- pm <- numeric(length(mg$s)); i <- match(d$s, mg$s)
  w[i] <- d$flows; pm[i] <- d$p
  den <- drop(crossprod(mg$dz2, w))
  num_ <- drop(crossprod(mg$dz, w * pm) - crossprod(mg$dz_z0, w))
  p <- ifelse(den > 0, pmin(1, pmax(0, num_ / ifelse(den > 0, den, 1))), 0)
  r0 <- sum(w * pm^2) - 2 * drop(crossprod(mg$z0, w * pm)) + drop(crossprod(mg$z02, w))
  wss <- pmax(r0 - 2 * p * num_ + p^2 * den, 0)
  b <- which.min(wss)
  best <- list(p_z1 = p[b], s1 = mg$pairs$s1[b], s2 = mg$pairs$s2[b])
  gof <- model_gof(d, favor_model(d$s, best$p_z1, best$s1, best$s2, p_ca, iw))
  modifyList(res, list(status = "fit", p_z1 = best$p_z1, s1 = best$s1, s2 = best$s2, wss = gof$residual^2 * sum(d$flows),
                       residual = gof$residual, explained = gof$explained, note = ""))
}

# Resamples of a fit's interval. Each re-measures P(Favor) per size and refits the whole (s1, s2) grid, about
# 12 ms on a panel of a few hundred flows; 200 put the 2.5 % and 97.5 % points of a percentile interval on
# the 5th and 195th values, enough to read P(Z = 1) to two decimals, in seconds per panel where the verdict's
# 1000 would add a minute to every analysis (F23, F24 and the verdict's row each fit every panel).
MODEL_B <- function() min(BOOT_B(), 200)

# FaQ's flows the model is fitted to at load rho: those every figure uses (common_flows of metric_flows, as
# F21: valid runs, finished under every AQM of the scenario), FaQ's alone.
faq_model_flows <- function(t, rho) {
  fl <- common_flows(metric_flows(t))
  fl[aqm_is_faq(aqm) & abs(num(load) - rho) < 1e-9]
}

# The fit of one panel (one scenario: flows of one IW) with an interval on P(Z = 1): fit_favor_model on the
# measured P(Favor | S = s), with the bursts of the panel's IW, and boot_ci (bootstrap.R, the verdict's
# interval and unit: replications where there are enough, else blocks of flow start time within each
# schedule) over the flows, refitting P(Z = 1), s1 and s2 on every resample, so the interval carries what s1
# and s2 leave uncertain too. A resample too small to fit is left out. Returns fit_favor_model's list with
# low, high, interval (the method) and one_schedule.
fit_favor_panel <- function(fl, iw = PAPER_IW, B = MODEL_B(), level = 0.95) {
  d <- favor_by_size(fl)
  f <- fit_favor_model(d, iw = iw)
  none <- list(low = NA_real_, high = NA_real_, interval = "", one_schedule = NA)
  if (f$status != "fit") return(modifyList(f, none))
  mg <- model_grid(d$s, iw = iw)
  ci <- boot_ci(fl, function(x) fit_favor_model(favor_by_size(x), iw = iw, mg = mg)$p_z1, B = B, level = level)
  modifyList(f, list(low = ci$lo, high = ci$hi, interval = sprintf("%s, %d resamples", ci$method, B), one_schedule = ci$one_schedule))
}

# The paper's P(Z = 1) at the loads it fitted (Section 7.2, Figs. 23 and 24).
PAPER_P_Z1 <- c("0.25" = 0.25, "0.85" = 0.7)

# The paper's model statement ("our model correctly fits both experiments", with P(Z = 1) = 0.25 at load 0.25
# and 0.7 at 0.85) as data for the verdict: one row per scenario and load of FaQ runs at those loads, with
#   iw, flows, sizes, runs: the panel (its IW sets the model's bursts);
#   p_z1, low, high, interval, one_schedule: the fitted P(Z = 1) and its interval (fit_favor_panel);
#   s1, s2, residual, explained: the fitted bowl, the weighted RMS residual of measured minus model and the
#     share of the variation of P(Favor) across sizes the model explains (the goodness of fit);
#   paper_p_z1, paper_residual, paper_explained: the same two measures for the model with the paper's P(Z = 1)
#     and the bowl of Fig. 21 (s1 = 10, s2 = 100; the paper gives no s1 or s2);
#   status ("fit" or "insufficient data") and note.
# The paper's IW is 2; a panel with another IW is fitted with its own bursts, its row says which. The tables
# are taken as given: the verdict passes the Table 1 runs (scope_tables(t, "table1")), as F23 and F24 get them.
MODEL_CLAIM_COLS <- c("scenario", "load", "iw", "flows", "sizes", "runs", "p_z1", "low", "high", "interval", "one_schedule", "s1", "s2",
                      "residual", "explained", "paper_p_z1", "paper_residual", "paper_explained", "status", "note")
model_fit_claim <- function(t, loads = as.numeric(names(PAPER_P_Z1)), B = MODEL_B()) {
  rows <- lapply(loads, function(rho) {
    fl <- faq_model_flows(t, rho)
    if (!nrow(fl)) return(NULL)
    rbindlist(lapply(split(fl, by = "scen"), function(x) {
      iw <- num(x$iw[1])
      f <- fit_favor_panel(x, iw = iw, B = B)
      d <- favor_by_size(x)
      paper <- PAPER_P_Z1[[sprintf("%g", rho)]]
      gof <- model_gof(d, favor_model(d$s, paper, PAPER_S1, PAPER_S2, iw = iw))
      data.table(scenario = x$scen[1], load = rho, iw = iw, flows = f$flows, sizes = f$sizes, runs = uniqueN(x$run_id), p_z1 = f$p_z1,
                 low = f$low, high = f$high, interval = f$interval, one_schedule = f$one_schedule, s1 = f$s1, s2 = f$s2,
                 residual = f$residual, explained = f$explained, paper_p_z1 = paper, paper_residual = gof$residual,
                 paper_explained = gof$explained, status = f$status, note = f$note)
    }))
  })
  out <- rbindlist(rows)
  if (!nrow(out)) return(setnames(data.table(matrix(nrow = 0, ncol = length(MODEL_CLAIM_COLS))), MODEL_CLAIM_COLS))
  out[, MODEL_CLAIM_COLS, with = FALSE]
}

# The goodness of fit of model values m at the measured sizes d (s, p, flows): the weighted RMS residual and the
# share of the weighted variance across sizes explained, as fit_favor_model reports them.
model_gof <- function(d, m) {
  if (!nrow(d)) return(list(residual = NA_real_, explained = NA_real_))
  w <- d$flows; wss <- sum(w * (d$p - m)^2); null <- sum(w * (d$p - sum(w * d$p) / sum(w))^2)
  list(residual = sqrt(wss / sum(w)), explained = if (null > 0) 1 - wss / null else NA_real_)
}
