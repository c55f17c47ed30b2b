/* SPDX-License-Identifier: GPL-2.0 */
/*
 * las_core.h - the queueing logic of LAS, Least Attained Service (Rai, Urvoy-Keller, Biersack), the
 * size-based scheduler FavorQueue's authors compare FavorQueue with (Anelli, Diana, Lochin 2013).
 *
 * LAS serves the packet of the flow that has received the least service so far, and when the buffer
 * is full it drops the packet of lowest priority, the one LAS would serve last, which may be the
 * arrival itself (Rai, Biersack, Urvoy-Keller, "Size-based scheduling to improve the performance of
 * short TCP flows", IEEE Network 2005; Rai, Urvoy-Keller, Biersack, "Analysis of LAS scheduling for
 * job size distributions with high variance", SIGMETRICS 2003).
 *
 * The same code runs in the kernel module (sch_las.c) and in the userspace test harness
 * (tests/las_harness.c): the includer provides struct sk_buff, struct sk_buff_head, the __skb_*
 * queue helpers, skb_peek, skb_peek_tail, u32/s32/u64/bool, LAS_SKB_SEQ(skb) (a u32 lvalue the core
 * keeps with a packet while it is queued: the qdisc's skb cb in the kernel) and LAS_SKB_LEN(skb)
 * (qdisc_pkt_len in the kernel, skb->len in the harness; it must not change while queued).
 *
 * Definitions, in bytes. Flows are hashed into buckets; a bucket holds the FIFO of its queued packets,
 * served (bytes of it dequeued: its attained service), queued (bytes queued now) and tag (the full
 * 32-bit flow hash of the flow that owns this state).
 *  - A packet's priority value is p = served + queued of its bucket at its arrival: the bytes of its
 *    flow that arrived before it and were not dropped. Lower p is served first.
 *  - Every queued packet has an arrival sequence number (a wrapping u32). It only breaks ties: among
 *    equal p, the earlier arrival is served first and the later arrival is dropped first.
 *  - Dequeue serves the packet with the smallest (p, seq) and adds its length to its bucket's served.
 *  - An arrival to a queue holding fewer than limit packets is queued. At the limit, let t be the
 *    queued packet with the largest (p, seq), the one LAS would serve last: if the arrival's p >= t's
 *    p, the arrival (the newest, so it loses a tie) is dropped (LAS_VERDICT_DROP_ARRIVAL); otherwise t
 *    is dropped (*victim, a push-out) and the arrival is queued. An arrival of t's own flow always has
 *    p > t's p (it came after t), so it is dropped.
 *  - Lowering the limit (tc qdisc change) drops the largest (p, seq) packets until the queue fits
 *    (drop_limit).
 *
 * Flow state lifetime. A packet arriving at a bucket with nothing queued and a tag other than the
 * packet's starts a new flow there: served = 0, tag = the packet's (flow_resets; this happens before
 * the verdict, so it holds even if that packet is then dropped). A packet with the same tag resumes
 * the same flow, which keeps its attained service. A packet whose tag differs while the bucket has
 * packets queued is a hash collision: the two flows share the bucket's state (one FIFO, one served
 * count) until the bucket empties, as flows that collide in sch_favor are one flow. Buckets start with
 * tag 0 and served 0, so the first flow to take a bucket counts in flow_resets too (unless its hash
 * is 0): flow_resets counts flows that took a bucket another flow (or nobody) held before.
 *
 * How it is O(log active buckets) per operation, scanning neither the queue nor the table. Within a
 * bucket p grows with arrival (and seq too), and packets leave a bucket only at its head (served) or
 * its tail (dropped), so p is not stored per packet: the head's p is served, the tail's p is
 * served + queued - len(tail). The smallest (p, seq) in the queue is the head of the bucket with the
 * smallest (served, head seq): a binary min-heap of the active buckets (those with packets queued),
 * the serve heap. The largest (p, seq) is the tail of the bucket with the largest (tail p, tail seq):
 * a binary max-heap of the active buckets, the drop heap. Each operation changes one key of each
 * heap at most, in a known direction:
 *  - queueing at an active bucket: its tail key grows (drop heap: sift up), its head key is unchanged;
 *  - dequeueing its head: served grows by the head's length, so its head key grows (serve heap: sift
 *    down) and its tail p (served + queued - len(tail)) is unchanged;
 *  - dropping its tail: its tail key shrinks (drop heap: sift down), its head is unchanged;
 *  - a bucket that fills or empties enters or leaves both heaps.
 * Sequence numbers compare as (s32)(a - b) < 0, right while the queued packets' numbers span less
 * than 2^31 arrivals; a packet starved for longer only has its ties broken the wrong way.
 *
 * The heaps are written here by hand rather than taken from lib/: this file must compile unchanged in
 * the kernel and in userspace, and the kernel's heaps are kernel-only and differ across the kernels
 * favorlab builds for (lib/min_heap.h's API changed between 6.1 and 6.12; an rbtree would need
 * lib/rbtree.c in the harness). The caller provides every array (kvcalloc in the kernel, calloc in
 * the harness), as favor_core_init gets its counts.
 */
#ifndef _LAS_CORE_H
#define _LAS_CORE_H

struct las_counters {
	u64 enqueued;		/* arrivals queued */
	u64 drop_arrival;	/* arrivals dropped: full queue, the arrival had the largest p */
	u64 pushouts;		/* queued packets dropped to make room for an arrival of smaller p */
	u64 drop_limit;		/* packets dropped by lowering the limit */
	u64 flow_resets;	/* a flow took a bucket held by another flow (its state restarted) */
};

/* The two heaps: LAS_SERVE (min by head key, dequeue order), LAS_DROP (max by tail key). */
enum { LAS_SERVE, LAS_DROP };

struct las_bucket {
	struct sk_buff_head fifo;	/* the bucket's queued packets, in arrival order */
	u64 served;			/* bytes dequeued since its flow took the bucket */
	u64 queued;			/* bytes queued now */
	u32 tag;			/* 32-bit flow hash of the flow owning this state */
	u32 pos[2];			/* index in heap[LAS_SERVE] and heap[LAS_DROP] while active */
};

struct las_core {
	struct las_bucket *tab;		/* buckets entries */
	u32 *heap[2];			/* bucket ids; the first 'active' entries are the heap */
	u32 buckets;
	u32 active;			/* buckets with packets queued (flows) */
	u32 qlen;			/* packets queued */
	u32 limit;			/* packets, >= 1 */
	u32 seq;			/* the next arrival's sequence number */
	struct las_counters c;
};

static inline u32 las_core_qlen(const struct las_core *q)
{
	return q->qlen;
}

/* tab[buckets], serve_heap[buckets] and drop_heap[buckets] come from the caller. */
static inline void las_core_init(struct las_core *q, struct las_bucket *tab, u32 *serve_heap,
				 u32 *drop_heap, u32 buckets, u32 limit)
{
	u32 i;

	memset(q, 0, sizeof(*q));
	q->tab = tab;
	q->heap[LAS_SERVE] = serve_heap;
	q->heap[LAS_DROP] = drop_heap;
	q->buckets = buckets;
	q->limit = limit;
	for (i = 0; i < buckets; i++) {
		memset(&tab[i], 0, sizeof(tab[i]));
		__skb_queue_head_init(&tab[i].fifo);
	}
}

static inline bool las_seq_before(u32 a, u32 b)
{
	return (s32)(a - b) < 0;
}

/* p of the bucket's last packet (the bucket is active) */
static inline u64 las_tail_prio(const struct las_bucket *b)
{
	return b->served + b->queued - LAS_SKB_LEN(skb_peek_tail(&b->fifo));
}

/* Serve heap order: does bucket a's head leave before bucket b's? */
static inline bool las_serve_before(const struct las_core *q, u32 a, u32 b)
{
	const struct las_bucket *x = &q->tab[a], *y = &q->tab[b];

	if (x->served != y->served)
		return x->served < y->served;
	return las_seq_before(LAS_SKB_SEQ(skb_peek(&x->fifo)), LAS_SKB_SEQ(skb_peek(&y->fifo)));
}

/* Drop heap order: is bucket a's tail dropped before bucket b's (larger p, or equal p and newer)? */
static inline bool las_drop_before(const struct las_core *q, u32 a, u32 b)
{
	const struct las_bucket *x = &q->tab[a], *y = &q->tab[b];
	u64 px = las_tail_prio(x), py = las_tail_prio(y);

	if (px != py)
		return px > py;
	return las_seq_before(LAS_SKB_SEQ(skb_peek_tail(&y->fifo)),
			      LAS_SKB_SEQ(skb_peek_tail(&x->fifo)));
}

static inline bool las_heap_before(const struct las_core *q, int h, u32 a, u32 b)
{
	return h == LAS_SERVE ? las_serve_before(q, a, b) : las_drop_before(q, a, b);
}

static inline void las_heap_set(struct las_core *q, int h, u32 i, u32 bucket)
{
	q->heap[h][i] = bucket;
	q->tab[bucket].pos[h] = i;
}

/* Moves heap h's entry i towards the root while it goes before its parent. */
static inline void las_heap_up(struct las_core *q, int h, u32 i)
{
	u32 bucket = q->heap[h][i];

	while (i > 0) {
		u32 parent = (i - 1) / 2;

		if (!las_heap_before(q, h, bucket, q->heap[h][parent]))
			break;
		las_heap_set(q, h, i, q->heap[h][parent]);
		i = parent;
	}
	las_heap_set(q, h, i, bucket);
}

/* Moves heap h's entry i towards the leaves while a child goes before it. */
static inline void las_heap_down(struct las_core *q, int h, u32 i)
{
	u32 bucket = q->heap[h][i];

	for (;;) {
		u32 child = 2 * i + 1;

		if (child >= q->active)
			break;
		if (child + 1 < q->active &&
		    las_heap_before(q, h, q->heap[h][child + 1], q->heap[h][child]))
			child++;
		if (!las_heap_before(q, h, q->heap[h][child], bucket))
			break;
		las_heap_set(q, h, i, q->heap[h][child]);
		i = child;
	}
	las_heap_set(q, h, i, bucket);
}

/* A bucket got its first queued packet: it enters both heaps. */
static inline void las_activate(struct las_core *q, u32 bucket)
{
	u32 i = q->active++;

	las_heap_set(q, LAS_SERVE, i, bucket);
	las_heap_up(q, LAS_SERVE, i);
	las_heap_set(q, LAS_DROP, i, bucket);
	las_heap_up(q, LAS_DROP, i);
}

/* Takes heap h's entry i out; q->active is already the new size. */
static inline void las_heap_remove(struct las_core *q, int h, u32 i)
{
	u32 last = q->heap[h][q->active];

	if (i == q->active)
		return;
	las_heap_set(q, h, i, last);
	if (i > 0 && las_heap_before(q, h, last, q->heap[h][(i - 1) / 2]))
		las_heap_up(q, h, i);
	else
		las_heap_down(q, h, i);
}

/* A bucket's last packet left: it leaves both heaps (its key is not read: its FIFO is empty). */
static inline void las_deactivate(struct las_core *q, u32 bucket)
{
	q->active--;
	las_heap_remove(q, LAS_SERVE, q->tab[bucket].pos[LAS_SERVE]);
	las_heap_remove(q, LAS_DROP, q->tab[bucket].pos[LAS_DROP]);
}

/* Removes the tail of the drop heap's root bucket: the queued packet of largest (p, seq). */
static inline struct sk_buff *las_remove_last(struct las_core *q)
{
	u32 bucket = q->heap[LAS_DROP][0];
	struct las_bucket *b = &q->tab[bucket];
	struct sk_buff *skb = __skb_dequeue_tail(&b->fifo);

	b->queued -= LAS_SKB_LEN(skb);
	q->qlen--;
	if (skb_queue_empty(&b->fifo))
		las_deactivate(q, bucket);
	else
		las_heap_down(q, LAS_DROP, 0);
	return skb;
}

/*
 * Queues skb of flow @tag (its full hash) in @bucket, or not, and returns the verdict for it:
 * LAS_VERDICT_ENQUEUED, or LAS_VERDICT_DROP_ARRIVAL (the caller frees skb). When the queue is full and
 * the arrival's p is smaller than the largest queued p, that packet is pushed out: *victim (the caller
 * frees it; NULL otherwise).
 */
static inline enum las_verdict las_core_enqueue(struct las_core *q, struct sk_buff *skb, u32 bucket,
						u32 tag, struct sk_buff **victim)
{
	struct las_bucket *b = &q->tab[bucket];
	u64 p;

	*victim = NULL;
	if (skb_queue_empty(&b->fifo) && b->tag != tag) {
		/* a new flow takes the idle bucket (with packets queued: a collision, shared state) */
		b->served = 0;
		b->tag = tag;
		q->c.flow_resets++;
	}
	p = b->served + b->queued;
	if (q->qlen >= q->limit) {
		/* the arrival is the newest packet: it loses a tie */
		if (p >= las_tail_prio(&q->tab[q->heap[LAS_DROP][0]])) {
			q->c.drop_arrival++;
			return LAS_VERDICT_DROP_ARRIVAL;
		}
		/* never the arrival's bucket: its tail has a smaller p than the arrival */
		*victim = las_remove_last(q);
		q->c.pushouts++;
	}
	LAS_SKB_SEQ(skb) = q->seq++;
	__skb_queue_tail(&b->fifo, skb);
	b->queued += LAS_SKB_LEN(skb);
	q->qlen++;
	if (skb_queue_len(&b->fifo) == 1)
		las_activate(q, bucket);
	else
		las_heap_up(q, LAS_DROP, b->pos[LAS_DROP]);
	q->c.enqueued++;
	return LAS_VERDICT_ENQUEUED;
}

/* The packet las_core_dequeue() returns next, left in the queue. */
static inline struct sk_buff *las_core_peek(const struct las_core *q)
{
	return q->active ? skb_peek(&q->tab[q->heap[LAS_SERVE][0]].fifo) : NULL;
}

static inline struct sk_buff *las_core_dequeue(struct las_core *q)
{
	struct las_bucket *b;
	struct sk_buff *skb;
	u32 bucket;

	if (!q->active)
		return NULL;
	bucket = q->heap[LAS_SERVE][0];
	b = &q->tab[bucket];
	skb = __skb_dequeue(&b->fifo);
	b->served += LAS_SKB_LEN(skb);
	b->queued -= LAS_SKB_LEN(skb);
	q->qlen--;
	if (skb_queue_empty(&b->fifo))
		las_deactivate(q, bucket);
	else
		las_heap_down(q, LAS_SERVE, 0);
	return skb;
}

/*
 * Removes one packet above the limit (after the limit was lowered), or returns NULL when the queue
 * fits: the packet of largest (p, seq), the one a push-out would drop. The caller frees it.
 */
static inline struct sk_buff *las_core_trim_one(struct las_core *q)
{
	if (q->qlen <= q->limit)
		return NULL;
	q->c.drop_limit++;
	return las_remove_last(q);
}

/*
 * For a qdisc reset: removes one queued packet (NULL when empty), counted neither as service nor as
 * a drop; the caller frees it. Once empty, las_core_forget() clears every flow's state.
 */
static inline struct sk_buff *las_core_purge_one(struct las_core *q)
{
	return q->active ? las_remove_last(q) : NULL;
}

/* Forgets every flow's attained service and owner (the queue is empty); counters are kept. */
static inline void las_core_forget(struct las_core *q)
{
	u32 i;

	for (i = 0; i < q->buckets; i++) {
		q->tab[i].served = 0;
		q->tab[i].tag = 0;
	}
}

#endif /* _LAS_CORE_H */
