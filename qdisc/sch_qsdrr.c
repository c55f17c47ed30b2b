// SPDX-License-Identifier: GPL-2.0
/*
 * net/sched/sch_qsdrr.c	DRR, TDRR and QSDRR: Deficit Round Robin over flow queues with a shared
 *			packet buffer and the discard policies of Kantawala and Turner.
 *
 * Flows are hashed into buckets, each a FIFO served by Deficit Round Robin (one quantum per turn).
 * The buffer holds `limit` packets for all queues; an arrival that finds it full is queued after the
 * front packet of one queue is dropped, the queue the policy picks: the longest (plain DRR, longest
 * queue drop), the one of highest averaged throughput (TDRR), or QSDRR's state Q, kept until it is
 * shorter than every other queue (Figure 1). See qsdrr_core.h for the queueing logic, shared with the
 * tests.
 *
 * References: A. Kantawala, J. Turner, "Efficient Queue Management for TCP Flows", Washington
 * University in St. Louis, WUCS-01-22, 2001; M. Shreedhar, G. Varghese, "Efficient fair queueing
 * using deficit round robin", SIGCOMM 1995; P. McKenney, "Stochastic fairness queueing", INFOCOM 1990.
 */

#include <linux/module.h>
#include <linux/types.h>
#include <linux/kernel.h>
#include <linux/errno.h>
#include <linux/math64.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <net/netlink.h>
#include <net/pkt_sched.h>
#include <net/sch_generic.h>
#include <net/flow_dissector.h>

#include "include/uapi/qsdrr.h"
#include "flow_hash.h"
#include "sch_favorlab.h"

/* the DKMS package's version (dkms.conf): the same as sch_favor.c's FAVOR_VERSION */
#define QSDRR_VERSION		"0.1.0"
#define QSDRR_DEFAULT_BUCKETS	1024

#define QSDRR_SKB_LEN(skb) qdisc_pkt_len(skb)
#include "qsdrr_core.h"

struct qsdrr_sched_data {
	struct favorlab_mem mem;	/* first, where sch_favorlab.h's helpers find it */
	struct qsdrr_core core;
	siphash_key_t perturbation;	/* flow hash key, drawn at init */
};
FAVORLAB_MEM_FIRST(struct qsdrr_sched_data, mem);

static const struct nla_policy qsdrr_policy[TCA_QSDRR_MAX + 1] = {
	/* a new qdisc: every attribute must have its exact size */
	[TCA_QSDRR_UNSPEC]	= { .strict_start_type = TCA_QSDRR_LIMIT },
	[TCA_QSDRR_LIMIT]	= { .type = NLA_U32 },
	[TCA_QSDRR_BUCKETS]	= { .type = NLA_U32 },
	[TCA_QSDRR_QUANTUM]	= { .type = NLA_U32 },
	[TCA_QSDRR_POLICY]	= NLA_POLICY_MAX(NLA_U32, QSDRR_POLICY_MAX),
	[TCA_QSDRR_HALFLIFE]	= { .type = NLA_U32 },
	[TCA_QSDRR_MEMORY_LIMIT] = { .type = NLA_U32 },
};

static int qsdrr_enqueue(struct sk_buff *skb, struct Qdisc *sch, struct sk_buff **to_free)
{
	struct qsdrr_sched_data *q = qdisc_priv(sch);
	struct sk_buff *victim;
	struct flow_keys keys;
	u32 hash;

	if (favorlab_over_memory(sch, skb))
		return favorlab_drop_over_memory(sch, skb, to_free);
	favorlab_dissect(skb, &keys);
	hash = favorlab_flow_hash(&keys, FAVOR_FLOWKEY_5TUPLE, &q->perturbation);
	victim = qsdrr_core_enqueue(&q->core, skb, reciprocal_scale(hash, q->core.buckets));
	if (victim)
		favorlab_drop_queued(sch, victim, to_free);
	return favorlab_queued(sch, skb, victim);
}

static struct sk_buff *qsdrr_dequeue(struct Qdisc *sch)
{
	struct qsdrr_sched_data *q = qdisc_priv(sch);
	u64 now = q->core.policy == QSDRR_POLICY_TDRR ? ktime_get_ns() : 0;

	return favorlab_dequeued(sch, qsdrr_core_dequeue(&q->core, now));
}

/*
 * A real peek, not qdisc_peek_dequeued(): the peeked packet stays queued, so a parent that peeks
 * (tbf, hfsc) neither lets the buffer exceed its limit by one nor keeps it out of the discard policy's
 * reach. It runs the round as far as the next dequeue would (see qsdrr_core_peek).
 */
static struct sk_buff *qsdrr_peek(struct Qdisc *sch)
{
	struct qsdrr_sched_data *q = qdisc_priv(sch);

	return qsdrr_core_peek(&q->core);
}

/* Drops every packet, neither served nor counted as drops, and forgets every queue's throughput. */
static void qsdrr_reset(struct Qdisc *sch)
{
	struct qsdrr_sched_data *q = qdisc_priv(sch);

	while (favorlab_purged(sch, qsdrr_core_purge_one(&q->core)))
		;
	qsdrr_core_forget(&q->core);
}

/* Would a change set this creation-only attribute to another value than @now? */
static bool qsdrr_changes(const struct nlattr *attr, u32 now)
{
	return attr && nla_get_u32(attr) != now;
}

/* Checks every option before anything changes; the caller applies them. */
static int qsdrr_parse(struct Qdisc *sch, struct nlattr *opt, struct nlattr **tb, bool create,
		       struct netlink_ext_ack *extack)
{
	struct qsdrr_sched_data *q = qdisc_priv(sch);
	int err;

	/* Strict, unlike fq_codel's deprecated parser (stock tc sends its options without NLA_F_NESTED):
	 * favorlab's own plugin sets the flag, so a message that lacks it, or holds an attribute of a
	 * wrong length or an unknown type, is refused with the reason instead of half taken
	 */
	err = nla_parse_nested(tb, TCA_QSDRR_MAX, opt, qsdrr_policy, extack);
	if (err < 0)
		return err;
	err = favorlab_check_memory_limit(tb[TCA_QSDRR_MEMORY_LIMIT], "qsdrr", extack);
	if (err)
		return err;
	if (tb[TCA_QSDRR_LIMIT]) {
		u32 limit = nla_get_u32(tb[TCA_QSDRR_LIMIT]);

		if (limit < 1 || limit > QSDRR_MAX_LIMIT) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_QSDRR_LIMIT],
					    "qsdrr: limit must be 1 to 1048576 packets");
			return -EINVAL;
		}
	}
	if (tb[TCA_QSDRR_QUANTUM]) {
		u32 quantum = nla_get_u32(tb[TCA_QSDRR_QUANTUM]);

		if (quantum < QSDRR_MIN_QUANTUM || quantum > QSDRR_MAX_QUANTUM) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_QSDRR_QUANTUM],
					    "qsdrr: quantum must be 256 to 1048576 bytes");
			return -EINVAL;
		}
	}
	if (tb[TCA_QSDRR_BUCKETS]) {
		u32 n = nla_get_u32(tb[TCA_QSDRR_BUCKETS]);

		if (n < 1 || n > QSDRR_MAX_BUCKETS || !is_power_of_2(n)) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_QSDRR_BUCKETS],
					    "qsdrr: buckets must be a power of two from 1 to 1048576");
			return -EINVAL;
		}
	}
	if (tb[TCA_QSDRR_HALFLIFE]) {
		u32 us = nla_get_u32(tb[TCA_QSDRR_HALFLIFE]);

		if (us < QSDRR_MIN_HALFLIFE || us > QSDRR_MAX_HALFLIFE) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_QSDRR_HALFLIFE],
					    "qsdrr: tdrr_halflife must be 1ms to 60s");
			return -EINVAL;
		}
	}
	if (create)
		return 0;
	if (qsdrr_changes(tb[TCA_QSDRR_BUCKETS], q->core.buckets)) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_QSDRR_BUCKETS],
				    "qsdrr: buckets is set at creation only (delete and add the qdisc)");
		return -EINVAL;
	}
	if (qsdrr_changes(tb[TCA_QSDRR_POLICY], q->core.policy)) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_QSDRR_POLICY],
				    "qsdrr: policy is set at creation only (delete and add the qdisc)");
		return -EINVAL;
	}
	if (qsdrr_changes(tb[TCA_QSDRR_HALFLIFE], (u32)div_u64(q->core.halflife_ns, NSEC_PER_USEC))) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_QSDRR_HALFLIFE],
				    "qsdrr: tdrr_halflife is set at creation only (delete and add the qdisc)");
		return -EINVAL;
	}
	return 0;
}

static int qsdrr_change(struct Qdisc *sch, struct nlattr *opt, struct netlink_ext_ack *extack)
{
	struct qsdrr_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_QSDRR_MAX + 1];
	int err;

	if (!opt)
		return 0;
	err = qsdrr_parse(sch, opt, tb, false, extack);
	if (err)
		return err;

	sch_tree_lock(sch);
	if (tb[TCA_QSDRR_LIMIT])
		q->core.limit = nla_get_u32(tb[TCA_QSDRR_LIMIT]);
	if (tb[TCA_QSDRR_QUANTUM])
		q->core.quantum = nla_get_u32(tb[TCA_QSDRR_QUANTUM]);
	if (tb[TCA_QSDRR_MEMORY_LIMIT])
		q->mem.limit = nla_get_u32(tb[TCA_QSDRR_MEMORY_LIMIT]);
	favorlab_trim(sch, qsdrr_core_trim_one(&q->core));
	sch_tree_unlock(sch);
	return 0;
}

static u32 qsdrr_get(struct nlattr **tb, int type, u32 def)
{
	return tb[type] ? nla_get_u32(tb[type]) : def;
}

static int qsdrr_init(struct Qdisc *sch, struct nlattr *opt, struct netlink_ext_ack *extack)
{
	struct qsdrr_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_QSDRR_MAX + 1] = {};
	u32 limit = clamp_t(u32, READ_ONCE(qdisc_dev(sch)->tx_queue_len), 1, QSDRR_MAX_LIMIT);
	/* one MTU, as fq_codel's default quantum */
	u32 quantum = clamp_t(u32, psched_mtu(qdisc_dev(sch)), QSDRR_MIN_QUANTUM, QSDRR_MAX_QUANTUM);
	u32 buckets, halflife_us;
	struct qsdrr_bucket *tab;
	u32 *heaps;
	int err;

	if (opt) {
		err = qsdrr_parse(sch, opt, tb, true, extack);
		if (err)
			return err;
	}
	buckets = qsdrr_get(tb, TCA_QSDRR_BUCKETS, QSDRR_DEFAULT_BUCKETS);
	halflife_us = qsdrr_get(tb, TCA_QSDRR_HALFLIFE, QSDRR_DEFAULT_HALFLIFE);
	tab = kvcalloc(buckets, sizeof(*tab), GFP_KERNEL_ACCOUNT);
	heaps = kvcalloc(2 * (size_t)buckets, sizeof(*heaps), GFP_KERNEL_ACCOUNT);
	if (!tab || !heaps) {
		kvfree(tab);
		kvfree(heaps);
		NL_SET_ERR_MSG_MOD(extack, "cannot allocate the flow table");
		return -ENOMEM;
	}
	/* heap[QSDRR_HEAP_VICTIM] is the start of the heaps' allocation (qsdrr_destroy frees it) */
	qsdrr_core_init(&q->core, tab, heaps, heaps + buckets, buckets,
			qsdrr_get(tb, TCA_QSDRR_LIMIT, limit), qsdrr_get(tb, TCA_QSDRR_QUANTUM, quantum),
			qsdrr_get(tb, TCA_QSDRR_POLICY, QSDRR_POLICY_QSDRR),
			(u64)halflife_us * NSEC_PER_USEC);
	favorlab_mem_init(sch);
	if (tb[TCA_QSDRR_MEMORY_LIMIT])
		q->mem.limit = nla_get_u32(tb[TCA_QSDRR_MEMORY_LIMIT]);
	get_random_bytes(&q->perturbation, sizeof(q->perturbation));
	return 0;
}

static void qsdrr_destroy(struct Qdisc *sch)
{
	struct qsdrr_sched_data *q = qdisc_priv(sch);

	/* qdisc_destroy() has reset the queue; both are NULL if init failed */
	kvfree(q->core.tab);
	kvfree(q->core.heap[QSDRR_HEAP_VICTIM]);
	q->core.tab = NULL;
	q->core.heap[QSDRR_HEAP_VICTIM] = NULL;
	q->core.heap[QSDRR_HEAP_SHORTEST] = NULL;
}

static int qsdrr_dump(struct Qdisc *sch, struct sk_buff *skb)
{
	struct qsdrr_sched_data *q = qdisc_priv(sch);
	struct nlattr *opts;

	opts = nla_nest_start_noflag(skb, TCA_OPTIONS);
	if (!opts)
		goto nla_put_failure;
	if (nla_put_u32(skb, TCA_QSDRR_LIMIT, q->core.limit) ||
	    nla_put_u32(skb, TCA_QSDRR_BUCKETS, q->core.buckets) ||
	    nla_put_u32(skb, TCA_QSDRR_QUANTUM, q->core.quantum) ||
	    nla_put_u32(skb, TCA_QSDRR_POLICY, q->core.policy) ||
	    nla_put_u32(skb, TCA_QSDRR_HALFLIFE, (u32)div_u64(q->core.halflife_ns, NSEC_PER_USEC)) ||
	    nla_put_u32(skb, TCA_QSDRR_MEMORY_LIMIT, q->mem.limit))
		goto nla_put_failure;
	return nla_nest_end(skb, opts);

nla_put_failure:
	nla_nest_cancel(skb, opts);
	return -1;
}

static int qsdrr_dump_stats(struct Qdisc *sch, struct gnet_dump *d)
{
	struct qsdrr_sched_data *q = qdisc_priv(sch);
	const struct qsdrr_counters *c = &q->core.c;
	struct tc_qsdrr_xstats st = {};

	/* tc_fill_qdisc calls this under RTNL only, not the qdisc's lock: one dump, one snapshot */
	sch_tree_lock(sch);
	st.enqueued = c->enqueued;
	st.front_drops = c->front_drops;
	st.drop_own = c->drop_own;
	st.drop_limit = c->drop_limit;
	st.new_flows = c->new_flows;
	st.turns = c->turns;
	st.q_set = c->q_set;
	st.q_reselect = c->q_reselect;
	st.q_kept = c->q_kept;
	st.rescales = c->rescales;
	st.flows = q->core.active;
	st.drop_memory = q->mem.drops;
	st.memory_usage = q->mem.usage;
	sch_tree_unlock(sch);

	return gnet_stats_copy_app(d, &st, sizeof(st));
}

static struct Qdisc_ops qsdrr_qdisc_ops __read_mostly = {
	.id		= "qsdrr",
	.priv_size	= sizeof(struct qsdrr_sched_data),
	.enqueue	= qsdrr_enqueue,
	.dequeue	= qsdrr_dequeue,
	.peek		= qsdrr_peek,
	.init		= qsdrr_init,
	.reset		= qsdrr_reset,
	.destroy	= qsdrr_destroy,
	.change		= qsdrr_change,
	.dump		= qsdrr_dump,
	.dump_stats	= qsdrr_dump_stats,
	.owner		= THIS_MODULE,
};
favorlab_qdisc_module(qsdrr_qdisc_ops, "qsdrr");
MODULE_AUTHOR("favorlab");
MODULE_DESCRIPTION("DRR with the TDRR and QSDRR discard policies (Kantawala and Turner)");
MODULE_LICENSE("GPL");
MODULE_VERSION(QSDRR_VERSION);
