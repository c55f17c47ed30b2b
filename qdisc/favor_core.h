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
 *
 * favored_burst (0: off, Algorithm 1 exactly) bounds how many favored packets are served while a
 * standard packet waits. Algorithm 1 serves favored packets strictly first, so a flood of new flows
 * (spoofed SYNs: every packet a new 5-tuple, so every one favored) at the link rate takes the whole
 * link and the standard class, every established flow's packets, gets nothing. With favored_burst B
 * an arrival that would be favored is queued as standard instead (counted in "demoted") when B favored
 * packets would then be served ahead of the standard head: the packets served while it waited
 * ("overtaken") plus the favored packets queued now. The standard class thus gets at least one packet
 * in B + 1 while it is backlogged, and nothing is reordered: a demoted packet's flow has no other
 * packet queued, and it goes to the tail like any standard packet. An O(1) test, no flow state.
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
	u64 demoted;		/* would have been favored; standard by favored_burst */
};

struct favor_core {
	struct sk_buff_head favored;	/* favored packets, served first */
	struct sk_buff_head standard;	/* standard packets */
	u32 *counts;			/* queued packets per bucket */
	u32 buckets;
	u32 limit;			/* packets, >= 1 */
	u32 flows;			/* buckets with counts[] > 0 */
	bool nopushout;			/* FavourTail */
	u32 favored_burst;		/* 0: off; else at most this many favored served per standard */
	u32 overtaken;			/* favored packets served since the standard head became head */
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
	q->favored_burst = 0;
	q->overtaken = 0;
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

/* A standard packet left the queue's tail (push-out, trim): with none left, no standard packet waits. */
static inline void favor_core_standard_left(struct favor_core *q)
{
	if (skb_queue_empty(&q->standard))
		q->overtaken = 0;
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
			favor_core_standard_left(q);
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

/* Would one more favored packet make the standard head wait behind more than favored_burst? */
static inline bool favor_core_burst_reached(const struct favor_core *q)
{
	return q->favored_burst && !skb_queue_empty(&q->standard) &&
	       q->overtaken + skb_queue_len(&q->favored) >= q->favored_burst;
}

/* Algorithm 1: a packet is favored when no packet of its flow is queued (and, with favored_burst, while
 * the standard head has not waited for favored_burst favored packets).
 */
static inline enum favor_verdict favor_core_enqueue(struct favor_core *q, struct sk_buff *skb,
						    u32 bucket, struct sk_buff **victim)
{
	bool favored = q->counts[bucket] == 0;

	if (favored && favor_core_burst_reached(q)) {
		favored = false;
		q->c.demoted++;
	}
	return favor_core_enqueue_class(q, skb, bucket, favored, victim);
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

	if (skb) {
		if (!skb_queue_empty(&q->standard))
			q->overtaken++;
	} else {
		skb = __skb_dequeue(&q->standard);
		q->overtaken = 0;	/* a new standard head, or none */
	}
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
	if (skb)
		favor_core_standard_left(q);
	else
		skb = __skb_dequeue_tail(&q->favored);
	favor_core_account_out(q, skb);
	q->c.drop_limit++;
	return skb;
}

#endif /* _FAVOR_CORE_H */
