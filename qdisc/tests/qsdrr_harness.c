// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace harness of qsdrr_core.h: the exact queueing code sch_qsdrr.c runs, driven from Python
 * (ctypes) by tests/test_qsdrr_core.py. skb_shim.h provides the kernel types and sk_buff queue helpers.
 */
#include "uapi/qsdrr.h"
#include "skb_shim.h"

#define QSDRR_SKB_LEN(skb) ((skb)->len)
#define div64_u64(a, b) ((a) / (b))
#include "../qsdrr_core.h"

/* ---- API for ctypes: packets are ints (ids); -1 means none ---- */
static struct qsdrr_core core;
static struct qsdrr_bucket *tab;
static u32 *heaps;

int h_init(u32 limit, u32 buckets, u32 quantum, u32 policy, u64 halflife_ns)
{
	struct sk_buff *skb;

	if (tab)
		while ((skb = qsdrr_core_purge_one(&core)))
			free(skb);
	free(tab);
	free(heaps);
	tab = calloc(buckets, sizeof(*tab));
	heaps = calloc(2 * (size_t)buckets, sizeof(*heaps));
	if (!tab || !heaps)
		return -1;
	qsdrr_core_init(&core, tab, heaps, heaps + buckets, buckets, limit, quantum, policy,
			halflife_ns);
	return 0;
}

/* queues packet id; returns the id of the front packet dropped for it, or -1 */
int h_enqueue(int id, u32 bucket, u32 len)
{
	struct sk_buff *skb = calloc(1, sizeof(*skb));

	skb->id = id;
	skb->len = len;
	return take(qsdrr_core_enqueue(&core, skb, bucket));
}

int h_dequeue(u64 now_ns) { return take(qsdrr_core_dequeue(&core, now_ns)); }
int h_peek(void)
{
	struct sk_buff *skb = qsdrr_core_peek(&core);

	return skb ? skb->id : -1;
}
void h_set_limit(u32 limit) { core.limit = limit; }
void h_set_quantum(u32 quantum) { core.quantum = quantum; }
int h_trim_one(void) { return take(qsdrr_core_trim_one(&core)); }
/* what sch_qsdrr.c's reset does */
void h_reset(void)
{
	struct sk_buff *skb;

	while ((skb = qsdrr_core_purge_one(&core)))
		free(skb);
	qsdrr_core_forget(&core);
}
u32 h_qlen(void) { return qsdrr_core_qlen(&core); }
u32 h_flows(void) { return core.active; }
int h_q(void) { return core.q == QSDRR_NONE ? -1 : (int)core.q; }
/* a bucket's throughput at the core's scale (an idle bucket is rebased lazily) */
u64 h_thr(u32 bucket)
{
	u64 shift = core.base - tab[bucket].thr_base;

	return shift > 63 ? 0 : tab[bucket].thr >> shift;
}
u32 h_deficit(u32 bucket) { return tab[bucket].deficit; }
void h_counters(u64 out[10])
{
	out[0] = core.c.enqueued; out[1] = core.c.front_drops; out[2] = core.c.drop_own;
	out[3] = core.c.drop_limit; out[4] = core.c.new_flows; out[5] = core.c.turns;
	out[6] = core.c.q_set; out[7] = core.c.q_reselect; out[8] = core.c.q_kept;
	out[9] = core.c.rescales;
}

/*
 * The core's invariants, O(queued packets + buckets): the round is a circular list of exactly the
 * active queues; each heap holds them with the right positions and heap order; qlen adds up; idle
 * queues have deficit 0; Q is active or undefined. Returns 0, or the number of the first check that
 * failed.
 */
int h_check(void)
{
	u32 h, i, n = 0, total = 0, b;

	for (h = 0; h < qsdrr_heaps(&core); h++)
		for (i = 0; i < core.active; i++) {
			b = core.heap[h][i];
			if (b >= core.buckets || tab[b].pos[h] != i)
				return 1;
			if (skb_queue_empty(&tab[b].fifo))
				return 2;
			if (i > 0 && qsdrr_before(&core, h, b, core.heap[h][(i - 1) / 2]))
				return 3;
		}
	if ((core.head == QSDRR_NONE) != (core.active == 0))
		return 4;
	if (core.head != QSDRR_NONE) {
		b = core.head;
		do {
			if (skb_queue_empty(&tab[b].fifo) || tab[tab[b].next].prev != b)
				return 5;
			total += skb_queue_len(&tab[b].fifo);
			n++;
			b = tab[b].next;
		} while (b != core.head && n <= core.buckets);
		if (n != core.active)
			return 6;
	}
	for (b = 0; b < core.buckets; b++)
		if (skb_queue_empty(&tab[b].fifo) && tab[b].deficit)
			return 7;
	if (core.q != QSDRR_NONE && skb_queue_empty(&tab[core.q].fifo))
		return 8;
	for (i = 0; i < core.active; i++)
		if (tab[core.heap[0][i]].thr_base != core.base)
			return 10;
	return total == core.qlen ? 0 : 9;
}
