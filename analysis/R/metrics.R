# One function per metric, each formula in one place (FavorQueue paper, Anelli/Diana/Lochin 2013).
# Inputs are data.tables of flows.csv rows (see analysis/README.md); callers pick the flows
# (normally in_metrics == 1, i.e. complete, out of warm-up, joined to the schedule).
suppressPackageStartupMessages(library(data.table))

# numbers from the tables' text columns; a double vector (a pair table, a resample) passes as it is
num <- function(x) if (is.double(x)) x else suppressWarnings(as.numeric(x))

# The flows a study under a SYN flood counts (X1 and C19 alike): the legitimate forward flows joined to the
# schedule (a flow id) that started in the measurement window, finished or not. The flood's SYNs are never
# rows (the captures leave its spoofed prefix out); a flow the flood kept from finishing stays in, so it
# shows as a lower completed share rather than vanishing from a latency over fewer, luckier flows.
flood_counted_flows <- function(f) {
  if (!nrow(f) || !"in_window" %in% names(f)) return(f[0])
  f <- f[in_window == "1" & !is.na(flow_id) & flow_id != ""]
  if ("direction" %in% names(f)) f <- f[direction %in% c("forward", "")]
  f
}

# Mean latency (s): SYN first sent (sender capture) -> last missing data byte received (receiver capture).
latency_mean <- function(fl) mean(num(fl$latency_s), na.rm = TRUE)
latency_sd <- function(fl) sd(num(fl$latency_s), na.rm = TRUE)

# Drop ratio: packets of the flows lost at the bottleneck / packets of the flows that arrived there.
drop_ratio <- function(fl) {
  i <- num(fl$bneck_in); d <- num(fl$drops); ok <- !is.na(i) & !is.na(d)
  if (!any(ok) || sum(i[ok]) == 0) return(NA_real_)
  sum(d[ok]) / sum(i[ok])
}

# 99th percentile of the flows' latencies (s), R's default quantile (type 7, interpolated); NA without one.
latency_p99 <- function(fl) {
  x <- num(fl$latency_s); x <- x[!is.na(x)]
  if (!length(x)) NA_real_ else quantile(x, 0.99, names = FALSE)
}

# The paper's flow classes (Fig. 11, claim C7): short flows have fewer than 10 packets, long flows 100 or more.
is_short <- function(L) num(L) < 10
is_long <- function(L) num(L) >= 100

# Jain's fairness index of per-flow values x: (sum x)^2 / (n sum x^2); 1 when all are equal, 1/n when one
# flow has everything. NA without a positive value.
jain_index <- function(x) {
  x <- num(x); x <- x[!is.na(x)]
  if (!length(x) || sum(x^2) == 0) NA_real_ else sum(x)^2 / (length(x) * sum(x^2))
}
# Jain's index over the flows' goodputs (bytes / latency). Callers pass the long flows (is_long): a short
# flow ends in slow start, so its goodput says how short it is and how far away its receiver, not how the
# AQM shared the bottleneck.
goodput_fairness <- function(fl) jain_index(fl$goodput_bps)

# SYN loss ratio: SYN retransmissions / SYNs sent (every SYN retransmission follows a lost SYN or SYN-ACK).
syn_loss_ratio <- function(fl) {
  r <- num(fl$syn_retrans)
  sum(r) / sum(1 + r)
}

# RTO ratio, Eq. 3: T(rho) = sum RTO_i / sum (L_i + R_i)
rto_ratio <- function(fl) sum(num(fl$RTO)) / sum(num(fl$L) + num(fl$R))

# RTO recovery ratio, Eq. 4: tau(x) = sum RTO_i / sum (RTO_i + FR_i)
rto_recovery_ratio <- function(fl) {
  den <- sum(num(fl$RTO) + num(fl$FR))
  if (den == 0) NA_real_ else sum(num(fl$RTO)) / den
}

# Latency gain, Eq. 2: G(x) = sum Delta_x,i / sum Td_x,i over the N flows of length x.
# part = "total", "positive" (only improved flows' Delta) or "negative" (only worsened flows').
latency_gain <- function(pairs, part = c("total", "positive", "negative")) {
  part <- match.arg(part)
  d <- pairs$delta
  d <- switch(part, total = d, positive = pmax(d, 0), negative = pmin(d, 0))
  sum(d) / sum(pairs$T_dt)
}

# Eq. 5: P(Favor | S = s) = sum fa_i / sum (s + R_i), fa_i the flow's favored DATA packets (the SYN, the
# handshake ACK and the FIN are favored too, but s + R_i counts data packets only). Over the flows whose
# favor trace was paired (fa_i known): a flow without one would add its packets to the denominator and
# none to the numerator, pulling the share down by however many flows went unpaired.
p_favor <- function(fl) {
  fa <- num(fl$fav_favored_data)
  ok <- !is.na(fa)
  if (!any(ok)) return(NA_real_)
  sum(fa[ok]) / sum(num(fl$L)[ok] + num(fl$R)[ok])
}

# Push-out share of drops: push-out victims / all drops recorded by the favor trace.
pushout_share <- function(fl) {
  po <- num(fl$fav_pushout_victim)
  all <- po + num(fl$fav_drop_favored) + num(fl$fav_drop_standard)
  if (all(is.na(all)) || sum(all, na.rm = TRUE) == 0) return(NA_real_)
  sum(po, na.rm = TRUE) / sum(all, na.rm = TRUE)
}

# Normalized goodput: mean per-flow goodput (bytes / latency) as a share of the bottleneck rate.
normalized_goodput <- function(fl, bottleneck_bps) mean(num(fl$goodput_bps), na.rm = TRUE) / bottleneck_bps

# Mean queueing delay (s) over all packets that left the bottleneck (per-flow means weighted by packets out).
mean_queueing_delay <- function(fl) {
  q <- num(fl$qdelay_mean_s); n <- num(fl$bneck_out); ok <- !is.na(q) & !is.na(n) & n > 0
  if (!any(ok)) NA_real_ else sum(q[ok] * n[ok]) / sum(n[ok])
}

# Share of flows faster / slower / unchanged (|Delta| <= eps) and faster by more than 1 s (claim C6). eps has
# no default: it is claims.yaml's unchanged_s, the replay jitter measured by the A/A replay (fig_pairs.R reads it).
delta_shares <- function(pairs, eps) {
  d <- pairs$delta
  c(unchanged = mean(abs(d) <= eps), faster = mean(d > eps), slower = mean(d < -eps), faster_1s = mean(d > 1))
}

# Flow-length classes used on the x axes (log-spaced, as in the paper's figures).
length_class <- function(L) {
  br <- c(0, 1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, Inf)
  lab <- c("1", "2", "3", "4-5", "6-10", "11-20", "21-50", "51-100", "101-200", "201-500", "501-1000", ">1000")
  cut(num(L), breaks = br, labels = lab)
}

# RTT class of a flow (F5): its path's configured RTT (flows.csv path_rtt_ms, from hosts.json), classes in
# RTT order. Tables whose flows.csv lacks it name the path by its hosts instead (a1-b2):
# a guessed RTT would be worse than none.
rtt_class <- function(fl) {
  rtt <- if ("path_rtt_ms" %in% names(fl)) num(fl$path_rtt_ms) else rep(NA_real_, nrow(fl))
  lab <- ifelse(is.na(rtt), paste(fl$src, fl$dst, sep = "-"), sprintf("RTT %g ms", rtt))
  factor(lab, levels = unique(lab[order(is.na(rtt), rtt, lab)]))
}

# CCDF of flow sizes (F6): P(S >= s) at each size s present among L (packets).
size_ccdf <- function(L) {
  L <- sort(num(L)); s <- unique(L)
  data.table(L = s, ccdf = 1 - (match(s, L) - 1) / length(L))
}
