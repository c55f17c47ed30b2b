/* SPDX-License-Identifier: GPL-2.0 */
/*
 * skb_shim.h - the few kernel types and sk_buff queue helpers the queueing cores (favor_core.h,
 * las_core.h, run2c_core.h) use, for their userspace harnesses, with the kernel's semantics
 * (doubly linked list whose head is used as an sk_buff, head/tail, qlen). Harnesses compile with
 * -fno-strict-aliasing, as the kernel does, for that reason.
 */
#ifndef _SKB_SHIM_H
#define _SKB_SHIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;

struct sk_buff {
	struct sk_buff *next, *prev;	/* as in the kernel: first members, list head compatible */
	unsigned int len;		/* bytes (qdisc_pkt_len in the kernel) */
	u32 bucket;			/* the core's per-packet word (the qdisc's skb cb in the kernel) */
	u64 prio;			/* a second per-packet word, for cores that need one */
	u32 seq;			/* las_core.h's arrival sequence number (LAS_SKB_SEQ) */
	int id;				/* the harness's name for the packet */
};

struct sk_buff_head {
	struct sk_buff *next, *prev;
	u32 qlen;
};

static inline void __skb_queue_head_init(struct sk_buff_head *l)
{
	l->next = l->prev = (struct sk_buff *)l;
	l->qlen = 0;
}

static inline u32 skb_queue_len(const struct sk_buff_head *l) { return l->qlen; }
static inline bool skb_queue_empty(const struct sk_buff_head *l) { return l->next == (const struct sk_buff *)l; }

static inline void __skb_unlink(struct sk_buff *skb, struct sk_buff_head *l)
{
	l->qlen--;
	skb->next->prev = skb->prev;
	skb->prev->next = skb->next;
	skb->next = skb->prev = NULL;
}

static inline void __skb_queue_tail(struct sk_buff_head *l, struct sk_buff *skb)
{
	skb->next = (struct sk_buff *)l;
	skb->prev = l->prev;
	l->prev->next = skb;
	l->prev = skb;
	l->qlen++;
}

static inline struct sk_buff *__skb_dequeue(struct sk_buff_head *l)
{
	struct sk_buff *skb = skb_queue_empty(l) ? NULL : l->next;

	if (skb)
		__skb_unlink(skb, l);
	return skb;
}

static inline struct sk_buff *skb_peek(const struct sk_buff_head *l)
{
	return skb_queue_empty(l) ? NULL : l->next;
}

static inline struct sk_buff *skb_peek_tail(const struct sk_buff_head *l)
{
	return skb_queue_empty(l) ? NULL : l->prev;
}

static inline struct sk_buff *__skb_dequeue_tail(struct sk_buff_head *l)
{
	struct sk_buff *skb = skb_queue_empty(l) ? NULL : l->prev;

	if (skb)
		__skb_unlink(skb, l);
	return skb;
}

/* For the harnesses' ctypes API, where packets are ints: @skb's id (-1 for none), and @skb freed. */
static inline int take(struct sk_buff *skb)
{
	int id = skb ? skb->id : -1;

	free(skb);
	return id;
}

#endif /* _SKB_SHIM_H */
