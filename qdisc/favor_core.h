/* SPDX-License-Identifier: GPL-2.0 */
/*
 * favor_core.h - the queueing logic of FavorQueue (Algorithm 1 of Anelli, Diana, Lochin 2013) and
 * of its no-push-out form FavourTail (Dedu, Lochin 2009).
 *
 * The same code runs in the kernel module (sch_favor.c) and in the userspace test harness
 * (tests/core_harness.c): the includer provides struct sk_buff, struct sk_buff_head, the
 * __skb_* queue helpers, u32/bool, and FAVOR_SKB_BUCKET(skb), an lvalue where the core keeps the
 * packet's flow bucket while it is queued.
 *
 * The queue is two FIFOs served favored-first: "inserted after the last favored packet and before
 * every standard packet" is the favored FIFO's tail; "the last standard packet" is the standard
 * FIFO's tail. counts[] holds the number of queued packets per flow bucket, so "does flow F have a
 * packet in the queue" is one array read: every operation is O(1) in queue length and flows.
 * Hash collisions merge flows (a flow may then be standard when it would have been favored), and
 * never reorder: a packet is favored only when no packet of its bucket is queued.
 */
#ifndef _FAVOR_CORE_H
#define _FAVOR_CORE_H

struct favor_counters {
	u64 favored;
	u64 standard;
	u64 pushouts;
	u64 drop_favored;
	u64 drop_standard;
	u64 drop_limit;
};

struct favor_core {
	struct sk_buff_head favored;	/* favored packets, served first */
	struct sk_buff_head standard;	/* standard packets */
	u32 *counts;			/* queued packets per bucket */
	u32 buckets;
	u32 limit;			/* packets, >= 1 */
	u32 flows;			/* buckets with counts[] > 0 */
	bool nopushout;			/* FavourTail */
	struct favor_counters c;
};

static inline u32 favor_core_qlen(const struct favor_core *q)
{
	return skb_queue_len(&q->favored) + skb_queue_len(&q->standard);
}

static inline void favor_core_init(struct favor_core *q, u32 *counts, u32 buckets, u32 limit,
				   bool nopushout)
{
	__skb_queue_head_init(&q->favored);
	__skb_queue_head_init(&q->standard);
	q->counts = counts;
	q->buckets = buckets;
	q->limit = limit;
	q->flows = 0;
	q->nopushout = nopushout;
	memset(&q->c, 0, sizeof(q->c));
}

static inline void favor_core_account_in(struct favor_core *q, struct sk_buff *skb, u32 bucket)
{
	FAVOR_SKB_BUCKET(skb) = bucket;
	if (q->counts[bucket]++ == 0)
		q->flows++;
}

static inline void favor_core_account_out(struct favor_core *q, struct sk_buff *skb)
{
	if (--q->counts[FAVOR_SKB_BUCKET(skb)] == 0)
		q->flows--;
}

/*
 * The two-class push-out queue: queues skb (flow bucket @bucket) as favored or standard, or not, and
 * returns the verdict for it. A favored arrival to a full queue pushes out the last standard packet
 * (*victim, which the caller frees; NULL otherwise), or is dropped when only favored packets are
 * queued or with nopushout; a standard arrival to a full queue is dropped (the caller frees skb on a
 * drop verdict). FavorQueue decides the class from the queue (favor_core_enqueue); RuN2C from the TCP
 * sequence number (run2c_core.h), with the same push-out.
 */
static inline enum favor_verdict favor_core_enqueue_class(struct favor_core *q, struct sk_buff *skb,
							  u32 bucket, bool favored,
							  struct sk_buff **victim)
{
	bool full = favor_core_qlen(q) >= q->limit;

	*victim = NULL;
	if (favored) {
		if (full) {
			if (q->nopushout || skb_queue_empty(&q->standard)) {
				q->c.drop_favored++;
				return FAVOR_VERDICT_DROP_FAVORED;
			}
			/* push-out: the last standard packet makes room */
			*victim = __skb_dequeue_tail(&q->standard);
			favor_core_account_out(q, *victim);
			q->c.pushouts++;
		}
		__skb_queue_tail(&q->favored, skb);
		favor_core_account_in(q, skb, bucket);
		q->c.favored++;
		return FAVOR_VERDICT_FAVORED;
	}
	if (full) {
		q->c.drop_standard++;
		return FAVOR_VERDICT_DROP_STANDARD;
	}
	__skb_queue_tail(&q->standard, skb);
	favor_core_account_in(q, skb, bucket);
	q->c.standard++;
	return FAVOR_VERDICT_STANDARD;
}

/* Algorithm 1: a packet is favored when no packet of its flow is queued. */
static inline enum favor_verdict favor_core_enqueue(struct favor_core *q, struct sk_buff *skb,
						    u32 bucket, struct sk_buff **victim)
{
	return favor_core_enqueue_class(q, skb, bucket, q->counts[bucket] == 0, victim);
}

/* The packet favor_core_dequeue() returns next, left in the queue (and counted in its flow). */
static inline struct sk_buff *favor_core_peek(struct favor_core *q)
{
	struct sk_buff *skb = skb_peek(&q->favored);

	return skb ? skb : skb_peek(&q->standard);
}

static inline struct sk_buff *favor_core_dequeue(struct favor_core *q)
{
	struct sk_buff *skb = __skb_dequeue(&q->favored);

	if (!skb)
		skb = __skb_dequeue(&q->standard);
	if (skb)
		favor_core_account_out(q, skb);
	return skb;
}

/*
 * Removes one packet above the limit (after the limit was lowered), or returns NULL when the
 * queue fits. Standard packets go first, newest first (the push-out victim's end); then favored
 * packets, newest first. The caller frees the packet.
 */
static inline struct sk_buff *favor_core_trim_one(struct favor_core *q)
{
	struct sk_buff *skb;

	if (favor_core_qlen(q) <= q->limit)
		return NULL;
	skb = __skb_dequeue_tail(&q->standard);
	if (!skb)
		skb = __skb_dequeue_tail(&q->favored);
	favor_core_account_out(q, skb);
	q->c.drop_limit++;
	return skb;
}

#endif /* _FAVOR_CORE_H */
