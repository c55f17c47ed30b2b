/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sch_favorlab.h - the Qdisc-side bookkeeping every favorlab qdisc does the same way when its
 * queueing core hands back a packet it removed (a push-out victim, a front drop, or a packet
 * trimmed after the limit shrank). Kernel only: the queueing cores stay free of struct Qdisc so
 * that they compile in the userspace harnesses too.
 */
#ifndef _FAVORLAB_SCH_FAVORLAB_H
#define _FAVORLAB_SCH_FAVORLAB_H

#include <linux/skbuff.h>
#include <net/pkt_sched.h>
#include <net/sch_generic.h>

/*
 * Drop @victim, a packet already counted in sch->q.qlen and the backlog, from the enqueue path.
 * The parents counted it too: qdisc_tree_reduce_backlog tells them it is gone (as sch_sfq and
 * sch_fq_codel do for the packets they drop from a queue's head).
 */
static inline void favorlab_drop_queued(struct Qdisc *sch, struct sk_buff *victim,
					struct sk_buff **to_free)
{
	unsigned int len = qdisc_pkt_len(victim);

	qdisc_qstats_backlog_dec(sch, victim);
	qdisc_drop(victim, sch, to_free);
	qdisc_tree_reduce_backlog(sch, 1, len);
}

/*
 * Free @skb, a queued packet removed under sch_tree_lock in change() after the limit shrank, and
 * add it to the totals the caller passes to qdisc_tree_reduce_backlog once the trimming is done
 * (one call for the lot, as sch_fq_codel_change does).
 */
static inline void favorlab_drop_trimmed(struct Qdisc *sch, struct sk_buff *skb,
					 unsigned int *pkts, unsigned int *bytes)
{
	(*pkts)++;
	*bytes += qdisc_pkt_len(skb);
	sch->q.qlen--;
	qdisc_qstats_backlog_dec(sch, skb);
	qdisc_qstats_drop(sch);
	rtnl_kfree_skbs(skb, skb);
}

#endif /* _FAVORLAB_SCH_FAVORLAB_H */
