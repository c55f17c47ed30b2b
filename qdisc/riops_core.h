/* SPDX-License-Identifier: GPL-2.0 */
/*
 * riops_core.h - the queueing logic of RIO-PS, RIO with Preferential treatment to Short flows (Guo and
 * Matta, "The war between mice and elephants", ICNP 2001): an edge that marks the first L_t packets
 * of every flow Short ("In") and the rest Long ("Out"), and a core router running RIO (Clark and Fang)
 * on one FIFO, where Short packets are judged on the average backlog of Short packets and Long
 * packets on the average total backlog. In favorlab the qdisc sits at the dumbbell's one bottleneck,
 * which is both the edge and the core (the paper's Experiment 1: "the traffic seen at the core router
 * 1 is the same as that at the edge router 0"), so one qdisc classifies, then applies RIO.
 *
 * The same code runs in the kernel module (sch_riops.c) and in the userspace test harness
 * (tests/riops_harness.c). The includer provides struct sk_buff, struct sk_buff_head, the __skb_*
 * queue helpers, u32/s64/u64/bool, div64_u64, mul_u64_u64_div_u64 (exact floor of a*b/c; the kernel's
 * x86-64 version is one mulq/divq) and RIOPS_SKB_SHORT(skb) (a u32 lvalue kept with a queued packet:
 * the qdisc's skb cb in the kernel). The caller passes the time (ns) and, for every arrival, a
 * uniform 32-bit random draw, so the tests can replay a run exactly.
 *
 * Edge (Section III.B, Appendix I.A). Flows are hashed into buckets; a bucket holds the flow's packet
 * count, the time its last packet was seen and the full 32-bit hash (tag) of the flow that started
 * the entry.
 *  - An arrival at a bucket with count 0, or whose last packet is more than T_u old, starts a flow
 *    entry there: count 0, tag the packet's (flows_seen). The paper removes such entries when it
 *    rescans the table every T_u; here expiry is judged at the next packet, which sees the same
 *    thing without a timer. An arrival with another tag at an active entry is a hash collision
 *    (collisions): the two flows share the count, as colliding flows are one flow in sch_favor.
 *  - The arrival adds 1 to the count (saturating) and stamps last = now; it is Short if the count is
 *    now <= L_t ("the first L_t packets will be classified as Short"). Every arrival counts, also the
 *    ones the core then drops: the edge sees them before the core does.
 *  - Every T_c (ticks at init + k T_c): cnt_s and cnt_l, the entries active at the tick's time
 *    (count > 0, last seen at most T_u before) with count <= L_t and > L_t. Unless L_t is fixed:
 *    L_t -= 1 if cnt_s > cnt_l * SLR, else L_t += 1, kept in [1, RIOPS_MAX_LT]. Ticks are taken at
 *    the first arrival at or after their time, each counting at its own time; once a tick finds no
 *    active flow every later tick before this arrival finds none either (nothing arrived in between)
 *    and adds 1 to L_t, so they are applied at once. Counting scans the table: O(buckets) (at most
 *    RIOPS_MAX_BUCKETS) once per T_c, and at most T_u / T_c + 1 scans after an idle gap. Counting
 *    incrementally would need an event when an entry expires, that is a timer per flow or a scan
 *    anyway, and L_t's moves re-classify every entry at once.
 *
 * Core (Section III.C, Appendix I.B, Table III), RED as ns-2 implements it (queue/red.cc,
 * queue/rio.cc, which the paper's simulations ran), in packets:
 *  - Averages: Q_total at every arrival from the packets queued before it, Q_short at Short arrivals
 *    from the Short packets queued before it; both EWMA with w_q = 2^-RIOPS_WLOG (1/512). After an
 *    idle period the average first decays as if m packets had found the queue empty, m = idle time /
 *    the typical packet time (red.cc's estimator(q, m + 1, ...), ptc = link rate / packet size;
 *    Linux include/net/red.h red_calc_qavg_from_idle_time does the same by table). The idle period
 *    starts when a dequeue finds the queue empty (red.cc deque(), sch_red's red_start_of_idle_period)
 *    and ends, for Q_total, at the next arrival, for Q_short at the next Short arrival (rio.cc's
 *    in_idle_; both measure from the same start).
 *  - A class's (Short: Q_short and the Short backlog; Long: Q_total and the total backlog) decision,
 *    red.cc enque(): its count (arrivals since its last drop) += 1; if avg >= min_th and its backlog
 *    > 1: avg >= 2 max_th is a forced drop; else if the average has just crossed min_th (old = 0), no
 *    drop, count = 1, old = 1; else an early drop with probability p_a; otherwise old = 0.
 *  - p_b (calculate_p_new, "gentle_"): P_max (avg - min_th) / (max_th - min_th) below max_th;
 *    P_max + (1 - P_max)(avg - max_th) / max_th from max_th to 2 max_th. p_a (modify_p with wait_,
 *    drops spaced): 0 if count p_b < 1, p_b / (2 - count p_b) if < 2, else 1. Drop if r < p_a
 *    (r/2^32 uniform in [0, 1)); then count = 0.
 *  - ECN (rio.cc drop_in_early): a chosen early drop of an ECT packet with avg < max_th is a CE mark
 *    instead; in the gentle region it is a drop, as at 2 max_th and at the limit.
 *  - A queue holding limit packets drops the arrival (red.cc: qlen >= qlim, forced), whatever the
 *    decision was; a forced drop sets count = 0.
 *  - RIO-PS's Table III: B = limit; Short (0.15 B, 0.35 B, 1/20), Long (0.15 B, 0.5 B, 1/10).
 *    Thresholds are given in parts per million of limit.
 * Departures from rio.cc, for the paper's text: Q_total is updated at Long arrivals too (rio.cc's own
 * comment says it does not, a bug it left); the class is the edge's, not a flow id. From red.cc, for
 * integers: drop if r < p_a (red.cc: u <= p), so p_a = 0 never drops; and the idle period's start is
 * stamped once (red.cc re-stamps it at every empty dequeue; a link dequeues once when it goes idle).
 *
 * Fixed point, no floating point: averages in packets * 2^RIOPS_AVG_SHIFT (a step is avg -= avg >>
 * RIOPS_WLOG, then += q << (RIOPS_AVG_SHIFT - RIOPS_WLOG)); thresholds floor(limit * ppm * 2^16 /
 * 10^6), max_th raised to min_th + 1 if they meet; probabilities in units of 2^-32, floors. The
 * idle decay stops once a step changes nothing (avg < 2^RIOPS_WLOG, 1/128 packet), at most about
 * 512 ln(2^36 / 512) = 9600 steps, once per idle period.
 */
#ifndef _RIOPS_CORE_H
#define _RIOPS_CORE_H

#define RIOPS_WLOG		9
#define RIOPS_AVG_SHIFT		16
#define RIOPS_ONE		(1ULL << 32)	/* probability 1 */

enum { RIOPS_SHORT, RIOPS_LONG };

struct riops_counters {
	u64 enqueued[2];	/* per class (RIOPS_SHORT, RIOPS_LONG) */
	u64 early[2];
	u64 marked[2];
	u64 forced[2];
	u64 drop_limit;
	u64 drop_trim;
	u64 flows_seen;
	u64 collisions;
};

struct riops_bucket {
	u64 last;		/* ns, the flow's last packet */
	u32 tag;		/* hash of the flow that started the entry */
	u32 count;		/* packets seen since; 0: no entry */
};

/* One class's RED: thresholds in averages' units, P_max in 2^-32, the drop spacing state. */
struct riops_red {
	u32 min_ppm, max_ppm, pmax_ppm;
	u64 min_th, max_th, pmax;
	u32 count;		/* arrivals since the last drop (red.cc edv_.count) */
	bool old;		/* the average was above min_th at the last arrival (edv_.old) */
};

struct riops_core {
	struct sk_buff_head fifo;
	struct riops_bucket *tab;
	u32 buckets;
	u32 limit;		/* packets: B */
	u32 lt;			/* L_t */
	u32 slr;
	bool fixed;		/* L_t not adapted */
	bool ecn;
	bool idle_total, idle_short;
	u64 idle_since;		/* ns */
	u64 tu, tc;		/* ns */
	u64 ptime;		/* ns, the typical packet's transmission time, >= 1 */
	u64 next_tc;		/* ns, the controller's next tick */
	u64 qavg_short, qavg_total;
	u32 qshort;		/* Short packets queued */
	u32 active[2];		/* cnt_s, cnt_l at the last tick */
	struct riops_red red[2];
	struct riops_counters c;
};

static inline u32 riops_core_qlen(const struct riops_core *q)
{
	return skb_queue_len(&q->fifo);
}

/* Thresholds in the averages' units from their ppm of limit (after a change of either). */
static inline void riops_core_thresholds(struct riops_core *q)
{
	int i;

	for (i = 0; i < 2; i++) {
		struct riops_red *r = &q->red[i];

		r->min_th = div64_u64((u64)q->limit * r->min_ppm << RIOPS_AVG_SHIFT, 1000000);
		r->max_th = div64_u64((u64)q->limit * r->max_ppm << RIOPS_AVG_SHIFT, 1000000);
		if (r->max_th <= r->min_th)
			r->max_th = r->min_th + 1;
		r->pmax = div64_u64((u64)r->pmax_ppm << 32, 1000000);
	}
}

/* The paper's Table III for class i (B = limit): min_th, max_th in ppm of limit, P_max in ppm. */
static inline void riops_core_set_red(struct riops_core *q, int i, u32 min_ppm, u32 max_ppm,
				      u32 pmax_ppm)
{
	q->red[i].min_ppm = min_ppm;
	q->red[i].max_ppm = max_ppm;
	q->red[i].pmax_ppm = pmax_ppm;
	riops_core_thresholds(q);
}

/*
 * tab[buckets] comes from the caller; the other parameters are set in the struct afterwards (limit
 * through riops_core_thresholds). Defaults: Table III, L_t 20, T_u 1 s, T_c 10 s, SLR 3.
 */
static inline void riops_core_init(struct riops_core *q, struct riops_bucket *tab, u32 buckets,
				   u32 limit, u64 now)
{
	memset(q, 0, sizeof(*q));
	memset(tab, 0, sizeof(*tab) * buckets);
	__skb_queue_head_init(&q->fifo);
	q->tab = tab;
	q->buckets = buckets;
	q->limit = limit;
	q->lt = 20;
	q->slr = 3;
	q->tu = 1000000000ULL;
	q->tc = 10000000000ULL;
	q->ptime = 800000;		/* 1000 bytes at 10 Mbit/s, tc-red(8)'s default bandwidth */
	q->next_tc = now + q->tc;
	riops_core_set_red(q, RIOPS_SHORT, 150000, 350000, 50000);
	riops_core_set_red(q, RIOPS_LONG, 150000, 500000, 100000);
}

/* cnt_s and cnt_l at time t: entries seen within T_u, by their count against L_t. */
static inline void riops_count_active(struct riops_core *q, u64 t)
{
	u32 i, n[2] = { 0, 0 };

	for (i = 0; i < q->buckets; i++) {
		const struct riops_bucket *b = &q->tab[i];

		if (b->count && (s64)(t - b->last) <= (s64)q->tu)
			n[b->count <= q->lt ? RIOPS_SHORT : RIOPS_LONG]++;
	}
	q->active[RIOPS_SHORT] = n[RIOPS_SHORT];
	q->active[RIOPS_LONG] = n[RIOPS_LONG];
}

static inline void riops_lt_add(struct riops_core *q, u64 k)
{
	if (!q->fixed)
		q->lt = k >= RIOPS_MAX_LT - q->lt ? RIOPS_MAX_LT : q->lt + (u32)k;
}

/* The edge's load control, Appendix I.A: every tick due by now. */
static inline void riops_core_ticks(struct riops_core *q, u64 now)
{
	while ((s64)(now - q->next_tc) >= 0) {
		riops_count_active(q, q->next_tc);
		if (!q->active[RIOPS_SHORT] && !q->active[RIOPS_LONG]) {
			u64 k = div64_u64(now - q->next_tc, q->tc) + 1;

			riops_lt_add(q, k);
			q->next_tc += k * q->tc;
			return;
		}
		if ((u64)q->active[RIOPS_SHORT] > (u64)q->active[RIOPS_LONG] * q->slr) {
			if (!q->fixed && q->lt > 1)
				q->lt--;
		} else {
			riops_lt_add(q, 1);
		}
		q->next_tc += q->tc;
	}
}

/* The edge's classification of an arrival of flow @tag in @bucket: RIOPS_SHORT or RIOPS_LONG. */
static inline int riops_classify(struct riops_core *q, u32 bucket, u32 tag, u64 now)
{
	struct riops_bucket *b = &q->tab[bucket];

	if (!b->count || (s64)(now - b->last) > (s64)q->tu) {
		b->count = 0;
		b->tag = tag;
		q->c.flows_seen++;
	} else if (b->tag != tag) {
		q->c.collisions++;
	}
	if (b->count != ~0U)
		b->count++;
	b->last = now;
	return b->count <= q->lt ? RIOPS_SHORT : RIOPS_LONG;
}

/* red.cc estimator(): m steps with an empty queue (stopping once a step changes nothing), then q. */
static inline u64 riops_ewma(u64 avg, u32 qlen, u64 m)
{
	while (m && (avg >> RIOPS_WLOG)) {
		avg -= avg >> RIOPS_WLOG;
		m--;
	}
	return avg - (avg >> RIOPS_WLOG) + ((u64)qlen << (RIOPS_AVG_SHIFT - RIOPS_WLOG));
}

/* Packets that would have been sent during the idle period (red.cc: m = ptc * idle time). */
static inline u64 riops_idle_steps(const struct riops_core *q, u64 now)
{
	return (s64)(now - q->idle_since) > 0 ? div64_u64(now - q->idle_since, q->ptime) : 0;
}

/* red.cc calculate_p_new(), gentle: p_b for avg in [min_th, 2 max_th). */
static inline u64 riops_prob(const struct riops_red *r, u64 avg)
{
	if (avg < r->max_th)
		return mul_u64_u64_div_u64(r->pmax, avg - r->min_th, r->max_th - r->min_th);
	return r->pmax + mul_u64_u64_div_u64(RIOPS_ONE - r->pmax, avg - r->max_th, r->max_th);
}

/* red.cc modify_p() with wait_: p_a from p_b and the arrivals since the last drop. */
static inline u64 riops_spaced(u64 pb, u32 count)
{
	u64 x = (u64)count * pb, pa;

	if (x < RIOPS_ONE)
		return 0;
	if (x >= 2 * RIOPS_ONE)
		return RIOPS_ONE;
	pa = mul_u64_u64_div_u64(pb, RIOPS_ONE, 2 * RIOPS_ONE - x);
	return pa > RIOPS_ONE ? RIOPS_ONE : pa;
}

/* red.cc enque()'s drop logic for class @i, average @avg, the class's backlog @qlen_class. */
static inline enum riops_verdict riops_red_decide(struct riops_core *q, int i, u64 avg,
						  u32 qlen_class, bool ect, u32 rnd)
{
	struct riops_red *r = &q->red[i];

	if (r->count != ~0U)
		r->count++;
	if (avg < r->min_th || qlen_class <= 1) {
		r->old = false;
		return RIOPS_VERDICT_ENQUEUED;
	}
	if (avg >= 2 * r->max_th)
		return RIOPS_VERDICT_DROP_FORCED;
	if (!r->old) {
		/* the average has just crossed min_th */
		r->count = 1;
		r->old = true;
		return RIOPS_VERDICT_ENQUEUED;
	}
	if ((u64)rnd >= riops_spaced(riops_prob(r, avg), r->count))
		return RIOPS_VERDICT_ENQUEUED;
	r->count = 0;
	if (avg >= r->max_th)
		return RIOPS_VERDICT_DROP_FORCED;
	return q->ecn && ect ? RIOPS_VERDICT_MARKED : RIOPS_VERDICT_DROP_EARLY;
}

/*
 * An arrival of flow @tag (its full hash) in @bucket at @now (ns), @ect if it is ECN-capable (ECT(0)
 * or ECT(1)), @rnd a uniform 32-bit draw. Returns the verdict: ENQUEUED or MARKED (queued; the caller
 * sets CE on a MARKED one), or a DROP_* (the caller frees skb).
 */
static inline enum riops_verdict riops_core_enqueue(struct riops_core *q, struct sk_buff *skb,
						    u32 bucket, u32 tag, u64 now, bool ect, u32 rnd)
{
	u32 qlen = skb_queue_len(&q->fifo);
	enum riops_verdict v;
	int i;

	riops_core_ticks(q, now);
	i = riops_classify(q, bucket, tag, now);
	q->qavg_total = riops_ewma(q->qavg_total, qlen,
				   q->idle_total ? riops_idle_steps(q, now) : 0);
	q->idle_total = false;
	if (i == RIOPS_SHORT) {
		q->qavg_short = riops_ewma(q->qavg_short, q->qshort,
					   q->idle_short ? riops_idle_steps(q, now) : 0);
		q->idle_short = false;
		v = riops_red_decide(q, i, q->qavg_short, q->qshort, ect, rnd);
	} else {
		v = riops_red_decide(q, i, q->qavg_total, qlen, ect, rnd);
	}
	if (qlen >= q->limit)
		v = RIOPS_VERDICT_DROP_LIMIT;
	switch (v) {
	case RIOPS_VERDICT_MARKED:
		q->c.marked[i]++;
		fallthrough;
	case RIOPS_VERDICT_ENQUEUED:
		RIOPS_SKB_SHORT(skb) = i == RIOPS_SHORT;
		__skb_queue_tail(&q->fifo, skb);
		q->qshort += i == RIOPS_SHORT;
		q->c.enqueued[i]++;
		break;
	case RIOPS_VERDICT_DROP_EARLY:
		q->c.early[i]++;
		break;
	case RIOPS_VERDICT_DROP_FORCED:
		q->red[i].count = 0;
		q->c.forced[i]++;
		break;
	case RIOPS_VERDICT_DROP_LIMIT:
		q->red[i].count = 0;
		q->c.drop_limit++;
		break;
	}
	return v;
}

static inline struct sk_buff *riops_core_peek(const struct riops_core *q)
{
	return skb_peek(&q->fifo);
}

static inline void riops_unlinked(struct riops_core *q, struct sk_buff *skb)
{
	if (skb && RIOPS_SKB_SHORT(skb))
		q->qshort--;
}

/* The FIFO's head; NULL when empty (then the caller calls riops_core_start_idle). */
static inline struct sk_buff *riops_core_dequeue(struct riops_core *q)
{
	struct sk_buff *skb = __skb_dequeue(&q->fifo);

	riops_unlinked(q, skb);
	return skb;
}

/* A dequeue found the queue empty at @now: the idle period starts, unless it already had. */
static inline void riops_core_start_idle(struct riops_core *q, u64 now)
{
	if (q->idle_total)
		return;
	q->idle_total = true;
	q->idle_short = true;
	q->idle_since = now;
}

/* After the limit was lowered: removes the newest packet while above it (NULL when it fits). */
static inline struct sk_buff *riops_core_trim_one(struct riops_core *q)
{
	struct sk_buff *skb;

	if (skb_queue_len(&q->fifo) <= q->limit)
		return NULL;
	skb = __skb_dequeue_tail(&q->fifo);
	riops_unlinked(q, skb);
	q->c.drop_trim++;
	return skb;
}

/* For a qdisc reset: removes one packet (NULL when empty), counted nowhere. */
static inline struct sk_buff *riops_core_purge_one(struct riops_core *q)
{
	struct sk_buff *skb = __skb_dequeue_tail(&q->fifo);

	riops_unlinked(q, skb);
	return skb;
}

/* After a purge: forgets the flow table, the averages and the drop spacing; L_t and counters stay. */
static inline void riops_core_forget(struct riops_core *q)
{
	int i;

	memset(q->tab, 0, sizeof(*q->tab) * q->buckets);
	q->qavg_short = 0;
	q->qavg_total = 0;
	q->idle_total = false;
	q->idle_short = false;
	for (i = 0; i < 2; i++) {
		q->red[i].count = 0;
		q->red[i].old = false;
	}
}

#endif /* _RIOPS_CORE_H */
