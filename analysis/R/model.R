# The paper's stochastic model of FaQ (Section 7.2): P(Favor | S = s), the share of a flow's data packets
# FaQ favors, against the flow size s. Phase #1 (s <= s1): the flow is in slow start and its bursts meet a
# queue with (Z = 1) or without (Z = 0) favored packets in it, Eqs. 6-8. Phase #2 (s1 <= s <= s2): flows
# leave slow start at a packet k uniform on [s1, s2), after which each packet is favored with probability
# p_ca (0.7 in the paper, read off its Fig. 21). Phase #3 (s > s2): every flow has left slow start.
# P(Z = 1), s1 and s2 depend on the load; fit_favor_model() estimates them from measured P(Favor | S = s).

# Favored packets among a slow-start flow's first s packets. Slow start sends bursts (the paper's BS) of
# 1, 2, 4, 8, ... packets, burst k holding packets 2^k .. 2^(k+1) - 1, and the paper assumes the previous
# RTT's packets have left the queue when a burst arrives, so every burst meets the same queue state: with
# Z = 0 its first packet finds no favored packet and is favored, and so are the ones right behind it, up
# to 3 in a row (footnote 4); with Z = 1 only the first packet of each burst (Eq. 7: packets 1, 2, 4, 8, ...).
#
# How Eqs. 6 and 7 continue past their "...": the paper lists the favored packets with Z = 0 as 1, 2, 3, 4,
# 5, 6, 8, 9, 10, 16, 17, 18, ..., i.e. all of bursts 0 and 1 (1 and 2 packets) and the first 3 of bursts
# 2, 3 and 4, and with Z = 1 as 1, 2, 4, 8, 16, 32, .... The rule "the first min(per_burst, 2^k) packets of
# burst k are favored", per_burst = 3 (Z = 0) or 1 (Z = 1), reproduces every listed case and every branch
# of Eqs. 6 and 7 (1 for s <= 6, (s-1)/s on 7..10, 9/s on 11..15, (s-6)/s on 16..18, 12/s on 19..31; 1,
# 2/s, 3/s, 4/s, 5/s), and continues them with the pattern of the listed bursts:
#   P(Favor | Z = 0, S = s) = (s - 19)/s on 32..34, 15/s on 35..63, (s - 48)/s on 64..66, 18/s on 67..127, ...
#   P(Favor | Z = 1, S = s) = (floor(log2 s) + 1) / s
# The listed cases stop at packet 31, so a rule that changes how many packets a later burst has favored
# (e.g. more than 3 once bursts exceed 16 packets) would fit them too; nothing in the paper suggests one:
# footnote 4's "maximum of 3 packets favored in a row" holds for every burst size, so the cap stays 3.
favored_in_bursts <- function(s, per_burst) {
  s <- num(s)
  k <- 0:(floor(log2(max(c(s, 1), na.rm = TRUE))) + 1)
  burst <- matrix(2^k, nrow = length(s), ncol = length(k), byrow = TRUE)
  reached <- pmax(outer(s, 2^k, `-`) + 1, 0)            # packets of burst k among the first s (pmax keeps the first argument's dim)
  rowSums(pmin(reached, burst, per_burst))
}
PER_BURST <- c(z0 = 3, z1 = 1)

# Eq. 6: P(Favor | Z = 0, S = s)
p_favor_z0 <- function(s) favored_in_bursts(s, PER_BURST[["z0"]]) / num(s)
# Eq. 7: P(Favor | Z = 1, S = s)
p_favor_z1 <- function(s) favored_in_bursts(s, PER_BURST[["z1"]]) / num(s)
# Eq. 8, phase #1 (slow start): P(Favor | S = s) = P(Z = 0) Eq. 6 + P(Z = 1) Eq. 7
p_favor_slow_start <- function(s, p_z1) (1 - p_z1) * p_favor_z0(s) + p_z1 * p_favor_z1(s)

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
favored_table <- function(n) lapply(PER_BURST, function(b) favored_in_bursts(seq_len(n), b))

# P(Favor | Z = 0, S = s) and P(Favor | Z = 1, S = s) over all three phases; P(Favor | S = s) mixes them by
# P(Z = 1) as Eq. 8 does in every phase (the paper's second-phase formula).
p_favor_given_z <- function(s, s1, s2, p_ca = 0.7, favored = favored_table(max(c(s, s2), na.rm = TRUE))) {
  s <- num(s)
  lapply(favored, function(f) {
    v <- f[s] / s                                        # phase #1
    late <- !is.na(s) & s > s1
    v[late] <- after_slow_start_z(s[late], s1, s2, p_ca, f)
    v
  })
}

# Phase #2, s1 <= s <= s2 (NA elsewhere): flows leaving slow start.
p_favor_leaving_slow_start <- function(s, p_z1, s1, s2, p_ca = 0.7) {
  check_model_args(p_z1, s1, s2, p_ca)
  s <- num(s)
  v <- favor_model(s, p_z1, s1, s2, p_ca)
  v[!(s >= s1 & s <= s2)] <- NA_real_
  v
}
# Phase #3, s > s2 (NA elsewhere): every flow has left slow start, its later packets favored with p_ca.
p_favor_congestion_avoidance <- function(s, p_z1, s1, s2, p_ca = 0.7) {
  check_model_args(p_z1, s1, s2, p_ca)
  s <- num(s)
  v <- favor_model(s, p_z1, s1, s2, p_ca)
  v[!(s > s2)] <- NA_real_
  v
}

# The model: P(Favor | S = s) for any vector of sizes (packets, >= 1), each in its phase.
favor_model <- function(s, p_z1, s1, s2, p_ca = 0.7) {
  check_model_args(p_z1, s1, s2, p_ca)
  z <- p_favor_given_z(s, s1, s2, p_ca)
  (1 - p_z1) * z$z0 + p_z1 * z$z1
}

# Measured P(Favor | S = s) (Eq. 5, p_favor) per flow size, one row per size with its flows and runs.
# Flows whose favor trace could not be paired (fav_favored_data empty) are left out here too, so that a
# size's `flows` (its weight in the fit) counts only the flows its P(Favor) was measured on.
favor_by_size <- function(fl) {
  fl <- fl[!is.na(num(fav_favored_data)) & !is.na(num(L)) & num(L) >= 1]
  if (!nrow(fl)) return(data.table(s = numeric(), p = numeric(), flows = integer(), runs = integer()))
  fl[, s := num(L)]                                      # a by column, not an expression of L: .SD keeps L
  fl[, .(p = p_favor(.SD), flows = .N, runs = uniqueN(run_id)), by = s][order(s)]
}

# The paper gives no s1 or s2; phase #2 is "the bowl between [10 : 100] in Figure 21".
PAPER_S1 <- 10
PAPER_S2 <- 100
# s1 and s2 are searched on integers spaced about 8 % apart from 2 to 2000 packets, plus the paper's bowl
# (so the fit is never worse than the bowl with the fitted P(Z = 1)); a finer grid can be passed.
FIT_GRID <- sort(unique(c(round(exp(seq(log(2), log(2000), by = log(1.08)))), PAPER_S1, PAPER_S2)))
FIT_MIN_FLOWS <- 30
FIT_MIN_SIZES <- 5

# Weighted least squares fit of P(Z = 1) in [0, 1] and s1 < s2 on `grid` to measured P(Favor | S = s)
# (d: s, p, flows; the flows of a size are its weight). The model is linear in P(Z = 1) (Eq. 8), so for
# each (s1, s2) P(Z = 1) has a closed form, clamped to [0, 1] (the constrained optimum of a 1-D quadratic);
# the (s1, s2) with the least weighted squared error wins (ties: the smallest s1, then s2). residual is
# the weighted root mean square of measured minus model; s_min the smallest size measured (an s1 below it
# is only weakly pinned down, through where flows leave slow start). Fewer than min_flows flows or min_sizes sizes
# say "insufficient data": a handful of sizes cannot separate P(Z = 1) from s1 and s2.
fit_favor_model <- function(d, grid = FIT_GRID, p_ca = 0.7, min_flows = FIT_MIN_FLOWS, min_sizes = FIT_MIN_SIZES) {
  d <- as.data.table(d)[!is.na(p) & !is.na(s)]
  res <- list(status = "insufficient data", p_z1 = NA_real_, s1 = NA_real_, s2 = NA_real_, residual = NA_real_,
              wss = NA_real_, flows = sum(d$flows), sizes = nrow(d), s_min = suppressWarnings(min(d$s)),
              note = sprintf("%d flows of %d sizes (a fit needs %d flows and %d sizes)", sum(d$flows), nrow(d),
                             min_flows, min_sizes))
  if (res$flows < min_flows || res$sizes < min_sizes) return(res)
  grid <- sort(unique(grid))
  pairs <- CJ(s1 = grid, s2 = grid)[s1 < s2]
  favored <- favored_table(max(c(d$s, grid)))
  w <- d$flows
  one <- function(s1, s2) {
    z <- p_favor_given_z(d$s, s1, s2, p_ca, favored)
    dz <- z$z1 - z$z0; r0 <- d$p - z$z0
    den <- sum(w * dz^2)
    p <- if (den > 0) min(1, max(0, sum(w * dz * r0) / den)) else 0
    c(p, sum(w * (r0 - p * dz)^2))
  }
  f <- mapply(one, pairs$s1, pairs$s2)
  b <- which.min(f[2, ])
  modifyList(res, list(status = "fit", p_z1 = f[1, b], s1 = pairs$s1[b], s2 = pairs$s2[b], wss = f[2, b],
                       residual = sqrt(f[2, b] / sum(w)), note = ""))
}
