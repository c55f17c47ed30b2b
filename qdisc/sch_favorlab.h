/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sch_favorlab.h - the Qdisc-side code every favorlab qdisc runs the same way around its queueing
 * core: the bookkeeping of a packet the core hands back (dequeued, removed by a push-out or a front
 * drop, trimmed after the limit shrank, purged by a reset), the bound on the memory the queue holds,
 * and the module's init and exit. Kernel only: the queueing cores stay free of struct Qdisc so that
 * they compile in the userspace harnesses too.
 */
#ifndef _FAVORLAB_SCH_FAVORLAB_H
#define _FAVORLAB_SCH_FAVORLAB_H

#include <linux/device/driver.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <net/pkt_sched.h>
#include <net/sch_generic.h>
#include "include/uapi/favorlab.h"
/* skb_gso_segment: <linux/netdevice.h> in 6.1, <net/gso.h> from 6.4 on (6.12) */
#if __has_include(<net/gso.h>)
#include <net/gso.h>
#endif

/*
 * The limits count packets, and a packet's memory (skb->truesize) ranges from a few hundred bytes to
 * over 64 KB, so a flood of large packets could hold limit times that. Every module's private data
 * starts with this struct (FAVORLAB_MEM_FIRST checks it at build time), so that the helpers below,
 * which take the Qdisc alone, keep its count on every path a packet enters or leaves by.
 */
struct favorlab_mem {
	u32 limit;	/* bytes of skb->truesize the queue may hold (memory_limit) */
	u32 usage;	/* bytes of skb->truesize queued now */
	u64 drops;	/* arrivals dropped because they would have taken usage above limit */
};

#define FAVORLAB_MEM_FIRST(type, member) \
	static_assert(offsetof(type, member) == 0, #type " must start with its struct favorlab_mem")

static inline struct favorlab_mem *favorlab_mem(struct Qdisc *sch)
{
	return qdisc_priv(sch);
}

static inline void favorlab_mem_init(struct Qdisc *sch)
{
	struct favorlab_mem *m = favorlab_mem(sch);

	m->limit = FAVORLAB_DEFAULT_MEMORY_LIMIT;
	m->usage = 0;
	m->drops = 0;
}

/*
 * True when @skb, arriving, would take the queue's memory above its limit: the module drops it with
 * favorlab_drop_over_memory before its queueing algorithm sees it. An empty queue takes any packet, so
 * that a limit below one packet's truesize still lets traffic through, one packet at a time.
 */
static inline bool favorlab_over_memory(struct Qdisc *sch, const struct sk_buff *skb)
{
	const struct favorlab_mem *m = favorlab_mem(sch);

	return sch->q.qlen && (u64)m->usage + skb->truesize > m->limit;
}

static inline int favorlab_drop_over_memory(struct Qdisc *sch, struct sk_buff *skb,
					    struct sk_buff **to_free)
{
	favorlab_mem(sch)->drops++;
	return qdisc_drop(skb, sch, to_free);
}

/*
 * Account for @skb, the arrival the core queued: one more packet unless it took the place of a
 * packet the core removed for it (@replaced), its length in the backlog, its memory.
 */
static inline int favorlab_queued(struct Qdisc *sch, struct sk_buff *skb, bool replaced)
{
	if (!replaced)
		sch->q.qlen++;
	qdisc_qstats_backlog_inc(sch, skb);
	favorlab_mem(sch)->usage += skb->truesize;
	return NET_XMIT_SUCCESS;
}

/* @skb, a queued packet, leaves the queue (served, dropped or trimmed): its memory is free */
static inline void favorlab_mem_release(struct Qdisc *sch, const struct sk_buff *skb)
{
	favorlab_mem(sch)->usage -= skb->truesize;
}

/*
 * Drop @victim, a packet already counted in sch->q.qlen and the backlog, from the enqueue path.
 * The parents counted it too: qdisc_tree_reduce_backlog tells them it is gone (as sch_sfq and
 * sch_fq_codel do for the packets they drop from a queue's head).
 */
static inline void favorlab_drop_queued(struct Qdisc *sch, struct sk_buff *victim,
					struct sk_buff **to_free)
{
	unsigned int len = qdisc_pkt_len(victim);

	favorlab_mem_release(sch, victim);
	qdisc_qstats_backlog_dec(sch, victim);
	qdisc_drop(victim, sch, to_free);
	qdisc_tree_reduce_backlog(sch, 1, len);
}

/*
 * Free @skb, a queued packet removed under sch_tree_lock in change() after the limit shrank, and
 * add it to the totals passed to qdisc_tree_reduce_backlog once the trimming is done.
 */
static inline void favorlab_drop_trimmed(struct Qdisc *sch, struct sk_buff *skb,
					 unsigned int *pkts, unsigned int *bytes)
{
	(*pkts)++;
	*bytes += qdisc_pkt_len(skb);
	sch->q.qlen--;
	favorlab_mem_release(sch, skb);
	qdisc_qstats_backlog_dec(sch, skb);
	qdisc_qstats_drop(sch);
	rtnl_kfree_skbs(skb, skb);
}

/*
 * In change(), under sch_tree_lock and after the new options are in: drop what @trim_one (a call of
 * the core's x_core_trim_one, NULL once the queue fits its limit) returns, then tell the parents
 * once for the lot, as sch_fq_codel_change does. A macro, as each core's trim function takes its
 * own core type.
 */
#define favorlab_trim(sch, trim_one)						\
	do {									\
		unsigned int pkts_ = 0, bytes_ = 0;				\
		struct sk_buff *skb_;						\
										\
		while ((skb_ = (trim_one)))					\
			favorlab_drop_trimmed(sch, skb_, &pkts_, &bytes_);	\
		qdisc_tree_reduce_backlog(sch, pkts_, bytes_);			\
	} while (0)

/*
 * Account for @skb, the packet the core dequeued (NULL: nothing queued), and return it: what
 * qdisc_dequeue_head() does around __qdisc_dequeue_head() for a qdisc whose packets sit on sch->q.
 */
static inline struct sk_buff *favorlab_dequeued(struct Qdisc *sch, struct sk_buff *skb)
{
	if (likely(skb)) {
		sch->q.qlen--;
		favorlab_mem_release(sch, skb);
		qdisc_qstats_backlog_dec(sch, skb);
		qdisc_bstats_update(sch, skb);
	}
	return skb;
}

/*
 * For reset(), called with the packets a core purges one at a time until it returns NULL:
 *	while (favorlab_purged(sch, x_core_purge_one(&q->core)))
 *		;
 * frees @skb, counted neither as served nor as dropped, and returns true; NULL (the core is empty)
 * zeroes the queue's length, backlog and memory and returns false.
 */
static inline bool favorlab_purged(struct Qdisc *sch, struct sk_buff *skb)
{
	if (!skb) {
		sch->q.qlen = 0;
		sch->qstats.backlog = 0;
		favorlab_mem(sch)->usage = 0;
		return false;
	}
	rtnl_kfree_skbs(skb, skb);
	return true;
}

/*
 * Enqueue @skb, a GSO super-packet, as the segments it stands for (as sch_tbf and sch_cake do): each
 * segment through @enqueue_one, the qdisc's own per-packet enqueue, so that a queue counting packets,
 * favoring a flow's first queued packet or pushing one out sees wire-sized packets, not one 64 KB
 * packet favored or dropped whole. The parents were told of one packet of qdisc_pkt_len(@skb); they
 * are told of the segments queued instead, as soon as one is, as sch_tbf's tbf_segment does: with a
 * single segment queued the packet count is right but the bytes are not (the segment is shorter than
 * the super-packet, or the parent's size table counted more), and the parents would keep the
 * difference as backlog that never leaves. A packet that cannot be segmented is dropped.
 */
static inline int favorlab_enqueue_segments(struct sk_buff *skb, struct Qdisc *sch,
					    struct sk_buff **to_free,
					    int (*enqueue_one)(struct sk_buff *, struct Qdisc *,
							       struct sk_buff **))
{
	netdev_features_t features = netif_skb_features(skb);
	unsigned int prev_len = qdisc_pkt_len(skb), len = 0;
	struct sk_buff *segs, *nskb;
	int nb = 0;

	segs = skb_gso_segment(skb, features & ~NETIF_F_GSO_MASK);
	if (IS_ERR_OR_NULL(segs))
		return qdisc_drop(skb, sch, to_free);

	skb_list_walk_safe(segs, segs, nskb) {
		unsigned int seg_len = segs->len;

		skb_mark_not_on_list(segs);
		qdisc_skb_cb(segs)->pkt_len = seg_len;
		if (enqueue_one(segs, sch, to_free) == NET_XMIT_SUCCESS) {
			nb++;
			len += seg_len;
		}
	}
	if (nb > 0)
		qdisc_tree_reduce_backlog(sch, 1 - nb, prev_len - len);
	consume_skb(skb);
	return nb > 0 ? NET_XMIT_SUCCESS : NET_XMIT_DROP;
}

/*
 * TCA_<KIND>_MEMORY_LIMIT, checked in a module's parse (@kind: the qdisc's name, a string literal, for
 * the message): 0 if absent or within bounds, else -EINVAL with the reason in @extack.
 */
#define favorlab_check_memory_limit(attr, kind, extack)					\
	({										\
		int err_ = 0;								\
		if ((attr) && (nla_get_u32(attr) < FAVORLAB_MIN_MEMORY_LIMIT ||		\
			       nla_get_u32(attr) > FAVORLAB_MAX_MEMORY_LIMIT)) {	\
			NL_SET_ERR_MSG_ATTR(extack, attr, kind				\
				": memory_limit must be 4096 to 2147483648 bytes");	\
			err_ = -EINVAL;							\
		}									\
		err_;									\
	})

/*
 * MODULE_ALIAS_NET_SCH names the alias request_module("net-sch-<id>") loads the module by (6.12's
 * headers have it); 6.1 has neither and loads "sch_<id>", the module's file name.
 */
#ifdef MODULE_ALIAS_NET_SCH
#define FAVORLAB_ALIAS_NET_SCH(id) MODULE_ALIAS_NET_SCH(id);
#else
#define FAVORLAB_ALIAS_NET_SCH(id)
#endif

/*
 * The module of qdisc @ops with tc name @id: its alias, and an init and exit that only register and
 * unregister @ops. Neither kernel favorlab builds for has a module_qdisc() helper: module_driver()
 * writes the two functions (as module_platform_driver does), the same in 6.1 and 6.12.
 */
#define favorlab_qdisc_module(ops, id)					\
	FAVORLAB_ALIAS_NET_SCH(id)					\
	module_driver(ops, register_qdisc, unregister_qdisc)

#endif /* _FAVORLAB_SCH_FAVORLAB_H */
