// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace harness of run2c_core.h: the exact classification and queueing code sch_run2c.c runs,
 * driven from Python (ctypes) by tests/test_run2c_core.py. skb_shim.h provides the kernel types and
 * sk_buff queue helpers.
 */
#include "uapi/favor.h"
#include "skb_shim.h"

#define FAVOR_SKB_BUCKET(skb) ((skb)->bucket)
#include "../run2c_core.h"

/* ---- API for ctypes: packets are ints (ids); -1 means none ---- */
static struct run2c_core core;
static u32 *counts;
static struct run2c_flow *flows;

int h_init(u32 limit, u32 buckets, u32 threshold, u32 mss)
{
	struct sk_buff *skb;

	if (counts)
		while ((skb = favor_core_dequeue(&core.q)))
			free(skb);
	free(counts);
	free(flows);
	counts = calloc(buckets, sizeof(*counts));
	flows = calloc(buckets, sizeof(*flows));
	if (!counts || !flows)
		return -1;
	run2c_core_init(&core, counts, flows, buckets, limit, threshold, mss);
	return 0;
}

/* returns the verdict (enum favor_verdict: favored = high, standard = low); *victim = pushed-out id or -1 */
int h_enqueue(int id, u32 bucket, int tcp, int syn, u32 seq, u32 tag, int *victim)
{
	struct sk_buff *skb = calloc(1, sizeof(*skb)), *v;
	struct run2c_pkt p = { .tcp = tcp, .syn = syn, .seq = seq, .tag = tag };
	enum favor_verdict verdict;

	skb->id = id;
	verdict = run2c_core_enqueue(&core, skb, bucket, &p, &v);
	*victim = v ? v->id : -1;
	free(v);
	if (verdict == FAVOR_VERDICT_DROP_FAVORED || verdict == FAVOR_VERDICT_DROP_STANDARD)
		free(skb);
	return verdict;
}

int h_dequeue(void) { return take(favor_core_dequeue(&core.q)); }
int h_peek(void)
{
	struct sk_buff *skb = favor_core_peek(&core.q);

	return skb ? skb->id : -1;
}
void h_set_limit(u32 limit) { core.q.limit = limit; }
void h_set_threshold(u32 threshold, u32 mss) { core.threshold = threshold; core.mss = mss; }
int h_trim_one(void) { return take(favor_core_trim_one(&core.q)); }
u32 h_qlen(void) { return favor_core_qlen(&core.q); }
u32 h_high_qlen(void) { return skb_queue_len(&core.q.favored); }
void h_counters(u64 out[10])
{
	out[0] = core.q.c.favored; out[1] = core.q.c.standard; out[2] = core.q.c.pushouts;
	out[3] = core.q.c.drop_favored; out[4] = core.q.c.drop_standard; out[5] = core.q.c.drop_limit;
	out[6] = core.c.syns; out[7] = core.c.unknown_flow; out[8] = core.c.no_tcp;
	out[9] = core.c.takeovers;
}
