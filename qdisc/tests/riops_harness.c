// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace harness of riops_core.h: the exact queueing code sch_riops.c runs, driven from Python
 * (ctypes) by tests/test_riops_core.py, with the time and the random draws the test chooses.
 * skb_shim.h provides the kernel types and sk_buff queue helpers; the few math64.h helpers the core
 * uses are written here (exact floors, as the kernel's).
 */
#include "uapi/riops.h"
#include "skb_shim.h"

#define fallthrough __attribute__((__fallthrough__))

static inline u64 div64_u64(u64 a, u64 b) { return a / b; }
static inline u64 mul_u64_u64_div_u64(u64 a, u64 b, u64 c)
{
	return (u64)((unsigned __int128)a * b / c);
}

#define RIOPS_SKB_SHORT(skb) ((skb)->bucket)
#include "../riops_core.h"

/* ---- API for ctypes: packets are ints (ids); -1 means none ---- */
static struct riops_core core;
static struct riops_bucket *tab;

int h_init(u32 limit, u32 buckets, u64 now)
{
	struct sk_buff *skb;

	if (tab)
		while ((skb = riops_core_purge_one(&core)))
			free(skb);
	free(tab);
	tab = calloc(buckets, sizeof(*tab));
	if (!tab)
		return -1;
	riops_core_init(&core, tab, buckets, limit, now);
	return 0;
}

/* what sch_riops.c's options set (times in ns; ptime the typical packet's time) */
void h_set(u32 lt, int fixed, u32 slr, u64 tu, u64 tc, int ecn, u64 ptime)
{
	core.lt = lt;
	core.fixed = fixed;
	core.slr = slr;
	core.tu = tu;
	core.tc = tc;
	core.ecn = ecn;
	core.ptime = ptime;
}

void h_set_next_tc(u64 t) { core.next_tc = t; }
void h_set_red(int i, u32 min_ppm, u32 max_ppm, u32 pmax_ppm) { riops_core_set_red(&core, i, min_ppm, max_ppm, pmax_ppm); }

int h_enqueue(int id, u32 bucket, u32 tag, u64 now, int ect, u32 rnd)
{
	struct sk_buff *skb = calloc(1, sizeof(*skb));
	enum riops_verdict v;

	skb->id = id;
	skb->len = 1000;
	v = riops_core_enqueue(&core, skb, bucket, tag, now, ect, rnd);
	if (v != RIOPS_VERDICT_ENQUEUED && v != RIOPS_VERDICT_MARKED)
		free(skb);
	return v;
}

/* what sch_riops.c's dequeue does: an empty queue starts the idle period */
int h_dequeue(u64 now)
{
	struct sk_buff *skb = riops_core_dequeue(&core);

	if (!skb)
		riops_core_start_idle(&core, now);
	return take(skb);
}

int h_peek(void)
{
	struct sk_buff *skb = riops_core_peek(&core);

	return skb ? skb->id : -1;
}

void h_set_limit(u32 limit)
{
	core.limit = limit;
	riops_core_thresholds(&core);
}

int h_trim_one(void) { return take(riops_core_trim_one(&core)); }

void h_reset(void)
{
	struct sk_buff *skb;

	while ((skb = riops_core_purge_one(&core)))
		free(skb);
	riops_core_forget(&core);
}

u32 h_qlen(void) { return riops_core_qlen(&core); }

/* lt, active short, active long, qshort, the two averages, the two counts and olds, next_tc */
void h_state(u64 out[10])
{
	out[0] = core.lt; out[1] = core.active[RIOPS_SHORT]; out[2] = core.active[RIOPS_LONG];
	out[3] = core.qshort; out[4] = core.qavg_short; out[5] = core.qavg_total;
	out[6] = core.red[RIOPS_SHORT].count; out[7] = core.red[RIOPS_LONG].count;
	out[8] = core.red[RIOPS_SHORT].old | (u64)core.red[RIOPS_LONG].old << 1;
	out[9] = core.next_tc;
}

/* thresholds and P_max in the core's units: min, max, pmax of short, then of long */
void h_thresholds(u64 out[6])
{
	int i;

	for (i = 0; i < 2; i++) {
		out[3 * i] = core.red[i].min_th;
		out[3 * i + 1] = core.red[i].max_th;
		out[3 * i + 2] = core.red[i].pmax;
	}
}

void h_counters(u64 out[12])
{
	int i;

	for (i = 0; i < 2; i++) {
		out[i] = core.c.enqueued[i];
		out[2 + i] = core.c.early[i];
		out[4 + i] = core.c.marked[i];
		out[6 + i] = core.c.forced[i];
	}
	out[8] = core.c.drop_limit; out[9] = core.c.drop_trim;
	out[10] = core.c.flows_seen; out[11] = core.c.collisions;
}

/* Short packets queued add up to qshort (0 when they do, 1 otherwise) */
int h_check(void)
{
	struct sk_buff *skb;
	u32 n = 0;

	for (skb = core.fifo.next; skb != (struct sk_buff *)&core.fifo; skb = skb->next)
		n += skb->bucket;
	return n == core.qshort ? 0 : 1;
}
