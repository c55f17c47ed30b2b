// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace shim around favor_core.h: the exact queueing code sch_favor.c runs, driven from
 * Python (ctypes) by tests/test_core.py. The shim provides the few kernel types and sk_buff queue
 * helpers the core uses, with the kernel's semantics (doubly linked list, head/tail).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include "uapi/favor.h"

typedef uint32_t u32;
typedef uint64_t u64;

struct sk_buff {
	struct sk_buff *next, *prev;	/* as in the kernel: first members, list head compatible */
	u32 bucket;
	int id;
};

struct sk_buff_head {
	struct sk_buff *next, *prev;
	u32 qlen;
};

static void __skb_queue_head_init(struct sk_buff_head *l)
{
	l->next = l->prev = (struct sk_buff *)l;
	l->qlen = 0;
}

static u32 skb_queue_len(const struct sk_buff_head *l) { return l->qlen; }
static bool skb_queue_empty(const struct sk_buff_head *l) { return l->next == (const struct sk_buff *)l; }

static void __skb_unlink(struct sk_buff *skb, struct sk_buff_head *l)
{
	l->qlen--;
	skb->next->prev = skb->prev;
	skb->prev->next = skb->next;
	skb->next = skb->prev = NULL;
}

static void __skb_queue_tail(struct sk_buff_head *l, struct sk_buff *skb)
{
	skb->next = (struct sk_buff *)l;
	skb->prev = l->prev;
	l->prev->next = skb;
	l->prev = skb;
	l->qlen++;
}

static struct sk_buff *__skb_dequeue(struct sk_buff_head *l)
{
	struct sk_buff *skb = skb_queue_empty(l) ? NULL : l->next;

	if (skb)
		__skb_unlink(skb, l);
	return skb;
}

static struct sk_buff *skb_peek(const struct sk_buff_head *l)
{
	return skb_queue_empty(l) ? NULL : l->next;
}

static struct sk_buff *__skb_dequeue_tail(struct sk_buff_head *l)
{
	struct sk_buff *skb = skb_queue_empty(l) ? NULL : l->prev;

	if (skb)
		__skb_unlink(skb, l);
	return skb;
}

#define FAVOR_SKB_BUCKET(skb) ((skb)->bucket)
#include "../favor_core.h"

/* ---- API for ctypes: packets are ints (ids); -1 means none ---- */
static struct favor_core core;
static u32 *counts;

int h_init(u32 limit, int nopushout, u32 buckets)
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

static int take(struct sk_buff *skb)
{
	int id = skb ? skb->id : -1;

	free(skb);
	return id;
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
void h_counters(u64 out[6])
{
	out[0] = core.c.favored; out[1] = core.c.standard; out[2] = core.c.pushouts;
	out[3] = core.c.drop_favored; out[4] = core.c.drop_standard; out[5] = core.c.drop_limit;
}
