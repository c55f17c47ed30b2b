// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace harness of las_core.h: the exact queueing code sch_las.c runs, driven from Python
 * (ctypes) by tests/test_las_core.py. skb_shim.h provides the kernel types and sk_buff queue helpers.
 */
#include "uapi/las.h"
#include "skb_shim.h"

#define LAS_SKB_SEQ(skb) ((skb)->seq)
#define LAS_SKB_LEN(skb) ((skb)->len)
#include "../las_core.h"

/* ---- API for ctypes: packets are ints (ids); -1 means none ---- */
static struct las_core core;
static struct las_bucket *tab;
static u32 *heaps;

int h_init(u32 limit, u32 buckets)
{
	struct sk_buff *skb;

	if (tab)
		while ((skb = las_core_purge_one(&core)))
			free(skb);
	free(tab);
	free(heaps);
	tab = calloc(buckets, sizeof(*tab));
	heaps = calloc(2 * (size_t)buckets, sizeof(*heaps));
	if (!tab || !heaps)
		return -1;
	las_core_init(&core, tab, heaps, heaps + buckets, buckets, limit);
	return 0;
}

/* returns the verdict for the arrival; *victim = pushed-out packet id or -1 */
int h_enqueue(int id, u32 bucket, u32 tag, u32 len, int *victim)
{
	struct sk_buff *skb = calloc(1, sizeof(*skb)), *v;
	enum las_verdict verdict;

	skb->id = id;
	skb->len = len;
	verdict = las_core_enqueue(&core, skb, bucket, tag, &v);
	*victim = take(v);
	if (verdict == LAS_VERDICT_DROP_ARRIVAL)
		free(skb);
	return verdict;
}

int h_dequeue(void) { return take(las_core_dequeue(&core)); }
int h_peek(void)
{
	struct sk_buff *skb = las_core_peek(&core);

	return skb ? skb->id : -1;
}
void h_set_limit(u32 limit) { core.limit = limit; }
int h_trim_one(void) { return take(las_core_trim_one(&core)); }
/* what sch_las.c's reset does */
void h_reset(void)
{
	struct sk_buff *skb;

	while ((skb = las_core_purge_one(&core)))
		free(skb);
	las_core_forget(&core);
}
/* the next arrival's sequence number, to test the wrap-around */
void h_set_seq(u32 seq) { core.seq = seq; }
u32 h_qlen(void) { return las_core_qlen(&core); }
u32 h_flows(void) { return core.active; }
u64 h_served(u32 bucket) { return tab[bucket].served; }
void h_counters(u64 out[5])
{
	out[0] = core.c.enqueued; out[1] = core.c.drop_arrival; out[2] = core.c.pushouts;
	out[3] = core.c.drop_limit; out[4] = core.c.flow_resets;
}

/*
 * The core's invariants, O(queued packets): each heap holds the active buckets with the right
 * positions and heap order; queued bytes and qlen add up; seq grows within a bucket. Returns 0, or
 * the number of the first check that failed.
 */
int h_check(void)
{
	u32 h, i, total = 0;

	for (h = 0; h < 2; h++)
		for (i = 0; i < core.active; i++) {
			u32 b = core.heap[h][i];

			if (b >= core.buckets || tab[b].pos[h] != i)
				return 1;
			if (skb_queue_empty(&tab[b].fifo))
				return 2;
			if (i > 0 && las_heap_before(&core, h, b, core.heap[h][(i - 1) / 2]))
				return 3;
		}
	for (i = 0; i < core.active; i++) {
		struct las_bucket *b = &tab[core.heap[LAS_SERVE][i]];
		struct sk_buff *skb;
		u64 bytes = 0;

		for (skb = b->fifo.next; skb != (struct sk_buff *)&b->fifo; skb = skb->next) {
			if (skb != b->fifo.next && !las_seq_before(skb->prev->seq, skb->seq))
				return 4;
			bytes += skb->len;
		}
		if (bytes != b->queued)
			return 5;
		total += skb_queue_len(&b->fifo);
	}
	return total == core.qlen ? 0 : 6;
}
