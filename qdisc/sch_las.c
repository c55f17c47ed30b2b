// SPDX-License-Identifier: GPL-2.0
/*
 * net/sched/sch_las.c	LAS: Least Attained Service.
 *
 * Serves the packet of the flow that has received the least service (bytes dequeued) so far; a
 * packet's priority value is its flow's attained service plus its bytes queued at the packet's
 * arrival, ties go to the earlier arrival. A full queue drops the packet LAS would serve last: the
 * arrival itself, or the queued packet it pushes out. Flows are hashed into buckets; a bucket's
 * attained service restarts when a new flow finds it idle. See las_core.h for the queueing logic,
 * shared with the tests.
 *
 * References: Rai, Urvoy-Keller, Biersack, "Analysis of LAS scheduling for job size distributions
 * with high variance", SIGMETRICS 2003; Rai, Biersack, Urvoy-Keller, "Size-based scheduling to
 * improve the performance of short TCP flows", IEEE Network 2005; compared with FavorQueue in Anelli,
 * Diana, Lochin, "FavorQueue: a Parameterless Active Queue Management to Improve TCP Traffic
 * Performance", Computer Networks 2014.
 */

#include <linux/module.h>
#include <linux/types.h>
#include <linux/kernel.h>
#include <linux/errno.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/string.h>
#include <net/netlink.h>
#include <net/pkt_sched.h>
#include <net/sch_generic.h>
#include <net/flow_dissector.h>

#include "include/uapi/las.h"
#include "flow_hash.h"
#include "sch_favorlab.h"

/* the DKMS package's version (dkms.conf): the same as sch_favor.c's FAVOR_VERSION */
#define LAS_VERSION		"0.1.0"
#define LAS_DEFAULT_BUCKETS	1024

struct las_skb_cb {
	u32 seq;	/* arrival sequence number, breaks ties of priority value */
};

static inline struct las_skb_cb *las_skb_cb(const struct sk_buff *skb)
{
	qdisc_cb_private_validate(skb, sizeof(struct las_skb_cb));
	return (struct las_skb_cb *)qdisc_skb_cb(skb)->data;
}

#define LAS_SKB_SEQ(skb) (las_skb_cb(skb)->seq)
#define LAS_SKB_LEN(skb) qdisc_pkt_len(skb)
#include "las_core.h"

struct las_sched_data {
	struct favorlab_mem mem;	/* first, where sch_favorlab.h's helpers find it */
	struct las_core core;
	siphash_key_t perturbation;	/* flow hash key, drawn at init */
};
FAVORLAB_MEM_FIRST(struct las_sched_data, mem);

static const struct nla_policy las_policy[TCA_LAS_MAX + 1] = {
	/* a new qdisc: every attribute must have its exact size */
	[TCA_LAS_UNSPEC]	= { .strict_start_type = TCA_LAS_LIMIT },
	[TCA_LAS_LIMIT]		= { .type = NLA_U32 },
	[TCA_LAS_BUCKETS]	= { .type = NLA_U32 },
	[TCA_LAS_MEMORY_LIMIT]	= { .type = NLA_U32 },
};

static int las_enqueue(struct sk_buff *skb, struct Qdisc *sch, struct sk_buff **to_free)
{
	struct las_sched_data *q = qdisc_priv(sch);
	struct sk_buff *victim;
	struct flow_keys keys;
	enum las_verdict v;
	u32 hash;

	if (favorlab_over_memory(sch, skb))
		return favorlab_drop_over_memory(sch, skb, to_free);
	favorlab_dissect(skb, &keys);
	hash = favorlab_flow_hash(&keys, FAVOR_FLOWKEY_5TUPLE, &q->perturbation);
	v = las_core_enqueue(&q->core, skb, reciprocal_scale(hash, q->core.buckets), hash, &victim);
	if (victim)
		favorlab_drop_queued(sch, victim, to_free);
	if (v == LAS_VERDICT_ENQUEUED)
		return favorlab_queued(sch, skb, victim);
	return qdisc_drop(skb, sch, to_free);
}

static struct sk_buff *las_dequeue(struct Qdisc *sch)
{
	struct las_sched_data *q = qdisc_priv(sch);

	return favorlab_dequeued(sch, las_core_dequeue(&q->core));
}

/*
 * A real peek, not qdisc_peek_dequeued(): the peeked packet stays queued and unserved, so a parent
 * that peeks (tbf, hfsc) neither lets the queue exceed its limit by one nor counts its bytes as its
 * flow's service before it leaves.
 */
static struct sk_buff *las_peek(struct Qdisc *sch)
{
	struct las_sched_data *q = qdisc_priv(sch);

	return las_core_peek(&q->core);
}

/* Drops every packet, neither served nor counted as drops, and forgets every flow's service. */
static void las_reset(struct Qdisc *sch)
{
	struct las_sched_data *q = qdisc_priv(sch);

	while (favorlab_purged(sch, las_core_purge_one(&q->core)))
		;
	las_core_forget(&q->core);
}

/* Checks every option before anything changes; the caller applies them. */
static int las_parse(struct Qdisc *sch, struct nlattr *opt, struct nlattr **tb, bool create,
		     struct netlink_ext_ack *extack)
{
	struct las_sched_data *q = qdisc_priv(sch);
	int err;

	/* Strict, unlike fq_codel's deprecated parser (stock tc sends its options without NLA_F_NESTED):
	 * favorlab's own plugin sets the flag, so a message that lacks it, or holds an attribute of a
	 * wrong length or an unknown type, is refused with the reason instead of half taken
	 */
	err = nla_parse_nested(tb, TCA_LAS_MAX, opt, las_policy, extack);
	if (err < 0)
		return err;
	err = favorlab_check_memory_limit(tb[TCA_LAS_MEMORY_LIMIT], "las", extack);
	if (err)
		return err;
	if (tb[TCA_LAS_LIMIT]) {
		u32 limit = nla_get_u32(tb[TCA_LAS_LIMIT]);

		if (limit < 1 || limit > LAS_MAX_LIMIT) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_LAS_LIMIT],
					    "las: limit must be 1 to 1048576 packets");
			return -EINVAL;
		}
	}
	if (tb[TCA_LAS_BUCKETS]) {
		u32 n = nla_get_u32(tb[TCA_LAS_BUCKETS]);

		if (n < 1 || n > LAS_MAX_BUCKETS || !is_power_of_2(n)) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_LAS_BUCKETS],
					    "las: buckets must be a power of two from 1 to 1048576");
			return -EINVAL;
		}
		if (!create && n != q->core.buckets) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_LAS_BUCKETS],
					    "las: buckets is set at creation only (delete and add the qdisc)");
			return -EINVAL;
		}
	}
	return 0;
}

static int las_change(struct Qdisc *sch, struct nlattr *opt, struct netlink_ext_ack *extack)
{
	struct las_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_LAS_MAX + 1];
	int err;

	if (!opt)
		return 0;
	err = las_parse(sch, opt, tb, false, extack);
	if (err)
		return err;

	sch_tree_lock(sch);
	if (tb[TCA_LAS_LIMIT])
		q->core.limit = nla_get_u32(tb[TCA_LAS_LIMIT]);
	if (tb[TCA_LAS_MEMORY_LIMIT])
		q->mem.limit = nla_get_u32(tb[TCA_LAS_MEMORY_LIMIT]);
	favorlab_trim(sch, las_core_trim_one(&q->core));
	sch_tree_unlock(sch);
	return 0;
}

static int las_init(struct Qdisc *sch, struct nlattr *opt, struct netlink_ext_ack *extack)
{
	struct las_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_LAS_MAX + 1] = {};
	u32 buckets = LAS_DEFAULT_BUCKETS;
	u32 limit = clamp_t(u32, READ_ONCE(qdisc_dev(sch)->tx_queue_len), 1, LAS_MAX_LIMIT);
	struct las_bucket *tab;
	u32 *heaps;
	int err;

	if (opt) {
		err = las_parse(sch, opt, tb, true, extack);
		if (err)
			return err;
		if (tb[TCA_LAS_BUCKETS])
			buckets = nla_get_u32(tb[TCA_LAS_BUCKETS]);
		if (tb[TCA_LAS_LIMIT])
			limit = nla_get_u32(tb[TCA_LAS_LIMIT]);
	}
	tab = kvcalloc(buckets, sizeof(*tab), GFP_KERNEL_ACCOUNT);
	heaps = kvcalloc(2 * (size_t)buckets, sizeof(*heaps), GFP_KERNEL_ACCOUNT);
	if (!tab || !heaps) {
		kvfree(tab);
		kvfree(heaps);
		NL_SET_ERR_MSG_MOD(extack, "cannot allocate the flow table");
		return -ENOMEM;
	}
	/* heap[LAS_SERVE] is the start of the heaps' allocation (las_destroy frees it) */
	las_core_init(&q->core, tab, heaps, heaps + buckets, buckets, limit);
	favorlab_mem_init(sch);
	if (tb[TCA_LAS_MEMORY_LIMIT])
		q->mem.limit = nla_get_u32(tb[TCA_LAS_MEMORY_LIMIT]);
	get_random_bytes(&q->perturbation, sizeof(q->perturbation));
	return 0;
}

static void las_destroy(struct Qdisc *sch)
{
	struct las_sched_data *q = qdisc_priv(sch);

	/* qdisc_destroy() has reset the queue; both are NULL if init failed */
	kvfree(q->core.tab);
	kvfree(q->core.heap[LAS_SERVE]);
	q->core.tab = NULL;
	q->core.heap[LAS_SERVE] = NULL;
	q->core.heap[LAS_DROP] = NULL;
}

static int las_dump(struct Qdisc *sch, struct sk_buff *skb)
{
	struct las_sched_data *q = qdisc_priv(sch);
	struct nlattr *opts;

	opts = nla_nest_start_noflag(skb, TCA_OPTIONS);
	if (!opts)
		goto nla_put_failure;
	if (nla_put_u32(skb, TCA_LAS_LIMIT, q->core.limit) ||
	    nla_put_u32(skb, TCA_LAS_BUCKETS, q->core.buckets) ||
	    nla_put_u32(skb, TCA_LAS_MEMORY_LIMIT, q->mem.limit))
		goto nla_put_failure;
	return nla_nest_end(skb, opts);

nla_put_failure:
	nla_nest_cancel(skb, opts);
	return -1;
}

static int las_dump_stats(struct Qdisc *sch, struct gnet_dump *d)
{
	struct las_sched_data *q = qdisc_priv(sch);
	struct tc_las_xstats st = {};

	/* tc_fill_qdisc calls this under RTNL only, not the qdisc's lock: copy the counters under it,
	 * as sch_fq does, so that one dump is one consistent snapshot of them
	 */
	sch_tree_lock(sch);
	st.enqueued = q->core.c.enqueued;
	st.drop_arrival = q->core.c.drop_arrival;
	st.pushouts = q->core.c.pushouts;
	st.drop_limit = q->core.c.drop_limit;
	st.flow_resets = q->core.c.flow_resets;
	st.flows = q->core.active;
	st.drop_memory = q->mem.drops;
	st.memory_usage = q->mem.usage;
	sch_tree_unlock(sch);

	return gnet_stats_copy_app(d, &st, sizeof(st));
}

static struct Qdisc_ops las_qdisc_ops __read_mostly = {
	.id		= "las",
	.priv_size	= sizeof(struct las_sched_data),
	.enqueue	= las_enqueue,
	.dequeue	= las_dequeue,
	.peek		= las_peek,
	.init		= las_init,
	.reset		= las_reset,
	.destroy	= las_destroy,
	.change		= las_change,
	.dump		= las_dump,
	.dump_stats	= las_dump_stats,
	.owner		= THIS_MODULE,
};
favorlab_qdisc_module(las_qdisc_ops, "las");
MODULE_AUTHOR("favorlab");
MODULE_DESCRIPTION("LAS: serve the flow with the least attained service");
MODULE_LICENSE("GPL");
MODULE_VERSION(LAS_VERSION);
