// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace harness of favor_core.h: the exact queueing code sch_favor.c runs, driven from
 * Python (ctypes) by tests/test_core.py. skb_shim.h provides the kernel types and sk_buff queue helpers.
 */
#include "uapi/favor.h"
#include "skb_shim.h"

#define FAVOR_SKB_BUCKET(skb) ((skb)->bucket)
#include "../favor_core.h"

/* ---- API for ctypes: packets are ints (ids); -1 means none ---- */
static struct favor_core core;
static u32 *counts;

int h_init(u32 limit, int nopushout, u32 buckets, u32 favored_burst)
{
	struct sk_buff *skb;

	if (counts)
		while ((skb = favor_core_dequeue(&core)))
			free(skb);
	free(counts);
	counts = calloc(buckets, sizeof(*counts));
	if (!counts)
		return -1;
	favor_core_init(&core, counts, buckets, limit, nopushout);
	core.favored_burst = favored_burst;
	return 0;
}

/* returns the verdict; *victim = pushed-out packet id or -1 */
int h_enqueue(int id, u32 bucket, int *victim)
{
	struct sk_buff *skb = calloc(1, sizeof(*skb)), *v;
	enum favor_verdict verdict;

	skb->id = id;
	verdict = favor_core_enqueue(&core, skb, bucket, &v);
	*victim = v ? v->id : -1;
	free(v);
	if (verdict == FAVOR_VERDICT_DROP_FAVORED || verdict == FAVOR_VERDICT_DROP_STANDARD)
		free(skb);
	return verdict;
}

int h_dequeue(void) { return take(favor_core_dequeue(&core)); }
int h_peek(void)
{
	struct sk_buff *skb = favor_core_peek(&core);

	return skb ? skb->id : -1;
}
void h_set_limit(u32 limit) { core.limit = limit; }
int h_trim_one(void) { return take(favor_core_trim_one(&core)); }
u32 h_qlen(void) { return favor_core_qlen(&core); }
u32 h_flows(void) { return core.flows; }
u32 h_favored_qlen(void) { return skb_queue_len(&core.favored); }
void h_set_favored_burst(u32 b) { core.favored_burst = b; }
void h_counters(u64 out[7])
{
	out[0] = core.c.favored; out[1] = core.c.standard; out[2] = core.c.pushouts;
	out[3] = core.c.drop_favored; out[4] = core.c.drop_standard; out[5] = core.c.drop_limit;
	out[6] = core.c.demoted;
}
