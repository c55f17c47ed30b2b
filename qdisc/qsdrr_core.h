/* SPDX-License-Identifier: GPL-2.0 */
/*
 * qsdrr_core.h - the queueing logic of Deficit Round Robin with the three discard policies of
 * Kantawala and Turner, "Efficient Queue Management for TCP Flows" (Washington University in St. Louis,
 * report WUCS-01-22, 2001): plain DRR (longest queue drop), TDRR and QSDRR.
 *
 * The same code runs in the kernel module (sch_qsdrr.c) and in the userspace test harness
 * (tests/qsdrr_harness.c): the includer provides struct sk_buff, struct sk_buff_head, the __skb_*
 * queue helpers, skb_peek, u32/u64/bool, div64_u64 and QSDRR_SKB_LEN(skb) (qdisc_pkt_len in the
 * kernel, skb->len in the harness; it must not change while queued).
 *
 * Scheduler: DRR (Shreedhar and Varghese, SIGCOMM 1995) over the flow queues, one per hash bucket.
 * The queues with packets (active) form one round robin list. When a queue's turn comes (it is at
 * the head of the list and its turn has not begun) its deficit grows by the quantum; it sends its
 * front packets while the front packet's length is at most its deficit, the deficit shrinking by each
 * length; then its turn ends and it goes to the tail of the list. A queue that empties leaves the
 * list and its deficit is reset to 0 (its turn ends); a queue that gets a packet while empty joins the
 * list's tail with deficit 0. The core serves one packet per dequeue, keeping whose turn it is.
 *
 * Buffer: `limit` packets shared by all queues. An arrival to a full buffer always gets in: first the
 * discard policy picks a queue and its FRONT packet (its oldest) is dropped, even when that queue is
 * the arrival's own. One packet makes room, since the limit counts packets. The policy looks at the
 * queues as they are before the arrival joins. Queue length is counted in packets: the paper's memory
 * is packet buffers (its buffer sizes are 100 to 20,000 packets) and a drop frees one of them.
 *  - drr: the longest queue (Section 2.1; McKenney's longest queue drop, part of DRR).
 *  - tdrr: the queue of highest throughput (Section 2.2), defined below.
 *  - qsdrr: Figure 1. A state variable Q, undefined at first. When the buffer is full: if Q is
 *    undefined, Q := the longest queue (q_set); else if Q is shorter than all other non-empty queues,
 *    Q := the longest queue now (q_reselect; Q itself when it is the only one); else Q stays (q_kept).
 *    Then the front packet of Q is dropped. Q becomes undefined when its queue empties (served, front
 *    dropped or trimmed): an empty bucket is no longer the queue Q named, and the next flow to hash
 *    there starts afresh. "Shorter" is strict: Q tied with another shortest queue stays Q.
 * Ties: among queues equally long (drr, qsdrr) or of equal throughput (tdrr), the one of lowest bucket
 * number is picked. Deterministic, and the same rule for every choice.
 *
 * TDRR throughput. The paper keeps "an exponentially weighted average" of each queue's throughput and
 * leaves the averaging open. Here it is bytes served (dequeued, not dropped), each weighted by 2^-k
 * where k is the number of half-lives (halflife_ns) elapsed between the half-life epoch it was served
 * in (epoch = now / halflife_ns) and the current epoch: a sum decayed by half every half-life, in
 * steps. Every queue's value decays by the same factor at the same instants, so the order of the
 * queues does not change with time, only when one is served: the core keeps thr = sum of len <<
 * (epoch - base), each queue's average times 2^(epoch - base), base an epoch common to all queues;
 * comparing thr is comparing averages. When epoch reaches base + 16, base := epoch and every bucket's
 * thr is shifted right by the difference (rounded down; 0 past 63; rescales): thr stays below 2^63
 * while a queue is served less than 2^48 bytes in 16 half-lives. The rescale shifts the active queues at
 * once and an idle bucket when it next becomes active (the same value: two shifts rounded down are
 * one), and rebuilds the heap: O(active queues), once per 16 half-lives at most. A bucket keeps its
 * throughput while it is empty (the paper's value belongs to the DRR queue); a reset forgets it.
 * Why steps of one half-life and not a weight w per packet: an exact integer value whose order is
 * kept by a common scale needs each decay step to divide by a power of two; the time constant is set
 * with the half-life instead (default 1 s: many round trips of the paper's 40 and 200 ms flows, and
 * longer than its largest buffers' delay, half a second, so that a flow's throughput "remembers"
 * events "much longer in the past than the queue time constant", Section 5).
 *
 * Cost: O(log active queues) per packet, apart from the TDRR rescale (O(active queues)). Heap 0 is a
 * binary max-heap of the active queues by the policy's victim key (length for drr and qsdrr, thr for
 * tdrr); qsdrr also keeps heap 1, a min-heap by length: "Q is shorter than all other non-empty queues"
 * holds iff Q is the root of heap 1 and both of the root's children are longer (the root's children
 * are the shortest of the others). The heaps are written here rather than taken from las_core.h,
 * whose heaps are tied to LAS's bucket and keys; lib/'s differ between the kernels favorlab builds for.
 * DRR's dequeue may pass over queues whose front packet exceeds their deficit: about (largest packet /
 * quantum) rounds at most.
 */
#ifndef _QSDRR_CORE_H
#define _QSDRR_CORE_H

#define QSDRR_NONE		((u32)~0U)
#define QSDRR_RESCALE_EPOCHS	16

struct qsdrr_counters {
	u64 enqueued;		/* arrivals queued (all of them) */
	u64 front_drops;	/* front packets dropped to make room for an arrival */
	u64 drop_own;		/* of front_drops: from the arrival's own queue */
	u64 drop_limit;		/* front packets dropped by lowering the limit */
	u64 new_flows;		/* queues that joined the round (got a packet while empty) */
	u64 turns;		/* turns begun: deficit += quantum */
	u64 q_set;		/* qsdrr: Q undefined, Q := longest */
	u64 q_reselect;		/* qsdrr: Q shorter than all others, Q := longest now */
	u64 q_kept;		/* qsdrr: Q kept */
	u64 rescales;		/* tdrr: thr rescaled to a later base epoch */
};

/* Heap 0: the policy's victim order; heap 1 (qsdrr only): shortest first. */
enum { QSDRR_HEAP_VICTIM, QSDRR_HEAP_SHORTEST };

struct qsdrr_bucket {
	struct sk_buff_head fifo;	/* the queue's packets, oldest first */
	u64 thr;			/* tdrr: throughput times 2^(epoch - thr_base), see above */
	u64 thr_base;			/* tdrr: the epoch thr is scaled from (the core's base when active) */
	u32 deficit;			/* DRR deficit, bytes */
	u32 next, prev;			/* neighbours in the round (circular) while active */
	u32 pos[2];			/* index in each heap while active */
};

struct qsdrr_core {
	struct qsdrr_bucket *tab;
	u32 *heap[2];			/* bucket ids; the first 'active' entries are the heap */
	u32 buckets;
	u32 active;			/* queues with packets */
	u32 qlen;			/* packets queued */
	u32 limit;			/* packets, >= 1 */
	u32 quantum;			/* bytes, >= 1 */
	u32 head;			/* the round's head queue, QSDRR_NONE when none is active */
	u32 q;				/* QSDRR's Q, QSDRR_NONE when undefined */
	bool in_turn;			/* the head's turn has begun (its quantum was added) */
	u32 policy;			/* enum qsdrr_policy */
	u64 halflife_ns;		/* tdrr, >= 1 */
	u64 base;			/* tdrr: the epoch thr is scaled from */
	struct qsdrr_counters c;
};

static inline u32 qsdrr_core_qlen(const struct qsdrr_core *q)
{
	return q->qlen;
}

/* tab[buckets], heap0[buckets] and heap1[buckets] come from the caller. */
static inline void qsdrr_core_init(struct qsdrr_core *q, struct qsdrr_bucket *tab, u32 *heap0,
				   u32 *heap1, u32 buckets, u32 limit, u32 quantum, u32 policy,
				   u64 halflife_ns)
{
	u32 i;

	memset(q, 0, sizeof(*q));
	q->tab = tab;
	q->heap[QSDRR_HEAP_VICTIM] = heap0;
	q->heap[QSDRR_HEAP_SHORTEST] = heap1;
	q->buckets = buckets;
	q->limit = limit;
	q->quantum = quantum;
	q->policy = policy;
	q->halflife_ns = halflife_ns;
	q->head = QSDRR_NONE;
	q->q = QSDRR_NONE;
	for (i = 0; i < buckets; i++) {
		memset(&tab[i], 0, sizeof(tab[i]));
		__skb_queue_head_init(&tab[i].fifo);
	}
}

static inline u32 qsdrr_heaps(const struct qsdrr_core *q)
{
	return q->policy == QSDRR_POLICY_QSDRR ? 2 : 1;
}

/* Does bucket a come before bucket b in heap h? Ties: the lower bucket number first. */
static inline bool qsdrr_before(const struct qsdrr_core *q, int h, u32 a, u32 b)
{
	const struct qsdrr_bucket *x = &q->tab[a], *y = &q->tab[b];
	u32 lx = skb_queue_len(&x->fifo), ly = skb_queue_len(&y->fifo);

	if (h == QSDRR_HEAP_SHORTEST) {
		if (lx != ly)
			return lx < ly;
	} else if (q->policy == QSDRR_POLICY_TDRR) {
		if (x->thr != y->thr)
			return x->thr > y->thr;
	} else if (lx != ly) {
		return lx > ly;
	}
	return a < b;
}

static inline void qsdrr_place(struct qsdrr_core *q, int h, u32 i, u32 bucket)
{
	q->heap[h][i] = bucket;
	q->tab[bucket].pos[h] = i;
}

/* Moves heap h's entry i towards the leaves while a child comes before it. */
static inline void qsdrr_sift_down(struct qsdrr_core *q, int h, u32 i)
{
	u32 *heap = q->heap[h], bucket = heap[i];

	for (;;) {
		u32 c = 2 * i + 1;

		if (c >= q->active)
			break;
		if (c + 1 < q->active && qsdrr_before(q, h, heap[c + 1], heap[c]))
			c++;
		if (!qsdrr_before(q, h, heap[c], bucket))
			break;
		qsdrr_place(q, h, i, heap[c]);
		i = c;
	}
	qsdrr_place(q, h, i, bucket);
}

/* Moves heap h's entry i to where its key belongs: up past its parents, else down. */
static inline void qsdrr_sift(struct qsdrr_core *q, int h, u32 i)
{
	u32 *heap = q->heap[h], bucket = heap[i];

	if (i == 0 || !qsdrr_before(q, h, bucket, heap[(i - 1) / 2])) {
		qsdrr_sift_down(q, h, i);
		return;
	}
	while (i > 0 && qsdrr_before(q, h, bucket, heap[(i - 1) / 2])) {
		qsdrr_place(q, h, i, heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	qsdrr_place(q, h, i, bucket);
}

/* A bucket's key (length or thr) changed: each heap puts it back in order. */
static inline void qsdrr_resift(struct qsdrr_core *q, u32 bucket)
{
	u32 h;

	for (h = 0; h < qsdrr_heaps(q); h++)
		qsdrr_sift(q, h, q->tab[bucket].pos[h]);
}

/* Brings a bucket's thr to the core's base; shifting by a then b is shifting by a + b, exactly. */
static inline void qsdrr_rebase(struct qsdrr_core *q, struct qsdrr_bucket *b)
{
	u64 shift = q->base - b->thr_base;

	b->thr = shift > 63 ? 0 : b->thr >> shift;
	b->thr_base = q->base;
}

/* A queue got its first packet: it joins the round's tail (deficit 0) and the heaps. */
static inline void qsdrr_activate(struct qsdrr_core *q, u32 bucket)
{
	struct qsdrr_bucket *b = &q->tab[bucket];
	u32 h, i = q->active++;

	if (q->head == QSDRR_NONE) {
		q->head = b->next = b->prev = bucket;
	} else {
		struct qsdrr_bucket *first = &q->tab[q->head];

		b->next = q->head;
		b->prev = first->prev;
		q->tab[first->prev].next = bucket;
		first->prev = bucket;
	}
	qsdrr_rebase(q, b);
	for (h = 0; h < qsdrr_heaps(q); h++) {
		qsdrr_place(q, h, i, bucket);
		qsdrr_sift(q, h, i);
	}
	q->c.new_flows++;
}

/* A queue emptied: it leaves the round (its deficit reset, its turn over) and the heaps; Q, if it
 * named this queue, is undefined again.
 */
static inline void qsdrr_deactivate(struct qsdrr_core *q, u32 bucket)
{
	struct qsdrr_bucket *b = &q->tab[bucket];
	u32 h, last;

	if (q->head == bucket) {
		/* its turn ends; the next queue's turn has not begun */
		q->head = b->next == bucket ? QSDRR_NONE : b->next;
		q->in_turn = false;
	}
	q->tab[b->prev].next = b->next;
	q->tab[b->next].prev = b->prev;
	b->deficit = 0;
	if (q->q == bucket)
		q->q = QSDRR_NONE;
	q->active--;
	for (h = 0; h < qsdrr_heaps(q); h++) {
		last = q->heap[h][q->active];
		if (b->pos[h] != q->active) {
			qsdrr_place(q, h, b->pos[h], last);
			qsdrr_sift(q, h, b->pos[h]);
		}
	}
}

/* Drops the front (oldest) packet of an active queue and returns it. */
static inline struct sk_buff *qsdrr_drop_front(struct qsdrr_core *q, u32 bucket)
{
	struct sk_buff *skb = __skb_dequeue(&q->tab[bucket].fifo);

	q->qlen--;
	if (skb_queue_empty(&q->tab[bucket].fifo))
		qsdrr_deactivate(q, bucket);
	else
		qsdrr_resift(q, bucket);
	return skb;
}

/* Figure 1's test: is Q (active) shorter than all other non-empty queues? */
static inline bool qsdrr_q_is_shortest(const struct qsdrr_core *q)
{
	const u32 *heap = q->heap[QSDRR_HEAP_SHORTEST];
	u32 len = skb_queue_len(&q->tab[q->q].fifo), i;

	/* another queue at the root is no longer than Q; else the root's children are the others' shortest */
	if (heap[0] != q->q)
		return false;
	for (i = 1; i <= 2 && i < q->active; i++)
		if (skb_queue_len(&q->tab[heap[i]].fifo) <= len)
			return false;
	return true;
}

/* The queue the policy drops from (some queue is active). */
static inline u32 qsdrr_victim(struct qsdrr_core *q)
{
	u32 top = q->heap[QSDRR_HEAP_VICTIM][0];

	if (q->policy != QSDRR_POLICY_QSDRR)
		return top;
	if (q->q == QSDRR_NONE) {
		q->q = top;
		q->c.q_set++;
	} else if (qsdrr_q_is_shortest(q)) {
		q->q = top;
		q->c.q_reselect++;
	} else {
		q->c.q_kept++;
	}
	return q->q;
}

/*
 * Queues skb in @bucket's queue. The buffer full, the policy's queue first loses its front packet,
 * returned (the caller frees it); NULL otherwise. The arrival is always queued.
 */
static inline struct sk_buff *qsdrr_core_enqueue(struct qsdrr_core *q, struct sk_buff *skb, u32 bucket)
{
	struct qsdrr_bucket *b = &q->tab[bucket];
	struct sk_buff *victim = NULL;

	if (q->qlen >= q->limit) {
		u32 v = qsdrr_victim(q);

		victim = qsdrr_drop_front(q, v);
		q->c.front_drops++;
		if (v == bucket)
			q->c.drop_own++;
	}
	__skb_queue_tail(&b->fifo, skb);
	q->qlen++;
	q->c.enqueued++;
	if (skb_queue_len(&b->fifo) == 1)
		qsdrr_activate(q, bucket);
	else
		qsdrr_resift(q, bucket);
	return victim;
}

/*
 * Runs the round until the head queue may send its front packet (some queue is active): what a
 * dequeue does first. Returns the head bucket.
 */
static inline u32 qsdrr_advance(struct qsdrr_core *q)
{
	for (;;) {
		struct qsdrr_bucket *b = &q->tab[q->head];

		if (!q->in_turn) {
			b->deficit += q->quantum;
			q->in_turn = true;
			q->c.turns++;
		}
		if (QSDRR_SKB_LEN(skb_peek(&b->fifo)) <= b->deficit)
			return q->head;
		q->in_turn = false;
		q->head = b->next;
	}
}

/*
 * The packet qsdrr_core_dequeue() returns next, left in the queue. It runs the round as far as that
 * dequeue would (turns begun, queues moved to the tail), so it is not free of effects: a queue that
 * becomes active after a peek joins the round behind the queues the peek moved.
 */
static inline struct sk_buff *qsdrr_core_peek(struct qsdrr_core *q)
{
	return q->active ? skb_peek(&q->tab[qsdrr_advance(q)].fifo) : NULL;
}

/*
 * Moves the common scale to a later epoch (tdrr). Only the active queues are compared, so only they
 * are rebased now, O(active); an idle bucket is rebased when it becomes active again, to the same
 * value. Heap 0 is rebuilt.
 */
static inline void qsdrr_rescale(struct qsdrr_core *q, u64 epoch)
{
	u32 i;

	q->base = epoch;
	for (i = 0; i < q->active; i++)
		qsdrr_rebase(q, &q->tab[q->heap[QSDRR_HEAP_VICTIM][i]]);
	/* rounding down may tie keys that were ordered: rebuild (Floyd, O(active)) */
	for (i = q->active / 2; i-- > 0;)
		qsdrr_sift_down(q, QSDRR_HEAP_VICTIM, i);
	q->c.rescales++;
}

/* TDRR: @len bytes of @bucket served at time @now_ns. */
static inline void qsdrr_credit(struct qsdrr_core *q, struct qsdrr_bucket *b, u32 len, u64 now_ns)
{
	u64 epoch = div64_u64(now_ns, q->halflife_ns);

	if (epoch >= q->base + QSDRR_RESCALE_EPOCHS)
		qsdrr_rescale(q, epoch);
	/* an epoch before base (the clock went back) counts as base */
	b->thr += (u64)len << (epoch > q->base ? epoch - q->base : 0);
}

/* Serves one packet at time @now_ns (read by tdrr only), or returns NULL. */
static inline struct sk_buff *qsdrr_core_dequeue(struct qsdrr_core *q, u64 now_ns)
{
	struct qsdrr_bucket *b;
	struct sk_buff *skb;
	u32 bucket;

	if (!q->active)
		return NULL;
	bucket = qsdrr_advance(q);
	b = &q->tab[bucket];
	skb = __skb_dequeue(&b->fifo);
	b->deficit -= QSDRR_SKB_LEN(skb);
	q->qlen--;
	if (q->policy == QSDRR_POLICY_TDRR)
		qsdrr_credit(q, b, QSDRR_SKB_LEN(skb), now_ns);
	if (skb_queue_empty(&b->fifo))
		qsdrr_deactivate(q, bucket);
	else
		qsdrr_resift(q, bucket);
	return skb;
}

/*
 * Removes one packet above the limit (after the limit was lowered), or returns NULL when the queue
 * fits: the front packet of the queue the policy picks, as for an arrival. The caller frees it.
 */
static inline struct sk_buff *qsdrr_core_trim_one(struct qsdrr_core *q)
{
	if (q->qlen <= q->limit)
		return NULL;
	q->c.drop_limit++;
	return qsdrr_drop_front(q, qsdrr_victim(q));
}

/*
 * For a qdisc reset: removes one queued packet (NULL when empty), counted neither as service nor as
 * a drop; the caller frees it. Once empty, qsdrr_core_forget() clears the queues' throughputs.
 */
static inline struct sk_buff *qsdrr_core_purge_one(struct qsdrr_core *q)
{
	return q->active ? qsdrr_drop_front(q, q->head) : NULL;
}

/* Forgets every queue's throughput (the queue is empty); counters are kept. */
static inline void qsdrr_core_forget(struct qsdrr_core *q)
{
	u32 i;

	for (i = 0; i < q->buckets; i++) {
		q->tab[i].thr = 0;
		q->tab[i].thr_base = 0;
	}
	q->base = 0;
}

#endif /* _QSDRR_CORE_H */
