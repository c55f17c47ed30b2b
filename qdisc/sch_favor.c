// SPDX-License-Identifier: GPL-2.0
/*
 * net/sched/sch_favor.c	FavorQueue: favor the first queued packet of every flow.
 *
 * An arriving packet whose flow has no packet in the queue is favored: it goes after the last
 * favored packet and before every standard packet. Other packets are standard and go to the
 * tail. When the queue is full, a favored arrival pushes out the last standard packet (or is
 * dropped if only favored packets are queued, or always with "nopushout": FavourTail), and a
 * standard arrival is dropped. "favored_burst" (off by default: Algorithm 1 as published) bounds
 * the favored packets served while a standard packet waits, against floods of new flows. See
 * favor_core.h for the queueing logic, shared with the tests.
 *
 * References: Anelli, Diana, Lochin, "FavorQueue: a Parameterless Active Queue Management to
 * Improve TCP Traffic Performance", Computer Networks 2014 (Algorithm 1); Dedu, Lochin, "A study
 * on the benefit of TCP packet prioritisation", PDP 2009 (FavourTail).
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

#include "include/uapi/favor.h"
#include "flow_hash.h"
#include "sch_favorlab.h"

#define FAVOR_VERSION		"0.1.0"
#define FAVOR_DEFAULT_BUCKETS	1024

struct favor_skb_cb {
	u32 bucket;
};

static inline struct favor_skb_cb *favor_skb_cb(struct sk_buff *skb)
{
	qdisc_cb_private_validate(skb, sizeof(struct favor_skb_cb));
	return (struct favor_skb_cb *)qdisc_skb_cb(skb)->data;
}

#define FAVOR_SKB_BUCKET(skb) (favor_skb_cb(skb)->bucket)
#include "favor_core.h"

#define CREATE_TRACE_POINTS
#include "favor_trace.h"

struct favor_sched_data {
	struct favorlab_mem mem;	/* first, where sch_favorlab.h's helpers find it */
	struct favor_core core;
	siphash_key_t perturbation;	/* flow hash key, drawn at init */
	u8 flowkey;		/* enum favor_flowkey */
};
FAVORLAB_MEM_FIRST(struct favor_sched_data, mem);

static const struct nla_policy favor_policy[TCA_FAVOR_MAX + 1] = {
	/* strict from the first attribute: a wrong length or an unknown type is refused, not logged and taken */
	[TCA_FAVOR_UNSPEC]	= { .strict_start_type = TCA_FAVOR_LIMIT },
	[TCA_FAVOR_LIMIT]	= { .type = NLA_U32 },
	[TCA_FAVOR_NOPUSHOUT]	= { .type = NLA_U8 },
	[TCA_FAVOR_FLOWKEY]	= { .type = NLA_U8 },
	[TCA_FAVOR_BUCKETS]	= { .type = NLA_U32 },
	[TCA_FAVOR_FAVORED_BURST] = { .type = NLA_U32 },
	[TCA_FAVOR_MEMORY_LIMIT] = { .type = NLA_U32 },
};

static u32 favor_bucket(const struct favor_sched_data *q, const struct flow_keys *k)
{
	return reciprocal_scale(favorlab_flow_hash(k, q->flowkey, &q->perturbation), q->core.buckets);
}

static void favor_trace(struct Qdisc *sch, const struct sk_buff *skb,
			const struct flow_keys *keys, enum favor_verdict v)
{
	struct favor_sched_data *q = qdisc_priv(sch);
	struct flow_keys victim_keys;

	if (!keys) {
		favorlab_dissect(skb, &victim_keys);
		keys = &victim_keys;
	}
	trace_favor_enqueue(qdisc_dev(sch), keys, v, favor_core_qlen(&q->core));
}

static int favor_enqueue_one(struct sk_buff *skb, struct Qdisc *sch, struct sk_buff **to_free)
{
	struct favor_sched_data *q = qdisc_priv(sch);
	bool tracing = trace_favor_enqueue_enabled();
	struct sk_buff *victim;
	struct flow_keys keys;
	enum favor_verdict v;

	if (favorlab_over_memory(sch, skb))
		return favorlab_drop_over_memory(sch, skb, to_free);
	favorlab_dissect(skb, &keys);
	v = favor_core_enqueue(&q->core, skb, favor_bucket(q, &keys), &victim);
	if (victim) {
		if (tracing)
			favor_trace(sch, victim, NULL, FAVOR_VERDICT_PUSHOUT_VICTIM);
		favorlab_drop_queued(sch, victim, to_free);
	}
	if (tracing)
		favor_trace(sch, skb, &keys, v);
	if (v == FAVOR_VERDICT_FAVORED || v == FAVOR_VERDICT_STANDARD)
		return favorlab_queued(sch, skb, victim);
	return qdisc_drop(skb, sch, to_free);
}

/* A GSO super-packet is queued as its segments: each is a packet to Algorithm 1 (the first of a new flow
 * favored, the others standard behind it), as on the wire.
 */
static int favor_enqueue(struct sk_buff *skb, struct Qdisc *sch, struct sk_buff **to_free)
{
	if (skb_is_gso(skb))
		return favorlab_enqueue_segments(skb, sch, to_free, favor_enqueue_one);
	return favor_enqueue_one(skb, sch, to_free);
}

static struct sk_buff *favor_dequeue(struct Qdisc *sch)
{
	struct favor_sched_data *q = qdisc_priv(sch);

	return favorlab_dequeued(sch, favor_core_dequeue(&q->core));
}

/*
 * A real peek, not qdisc_peek_dequeued(): a peeked packet stays in its FIFO and in its flow's
 * count, so a parent that peeks (tbf, hfsc) neither lets the queue exceed its limit by one nor
 * makes the peeked packet's next sibling look like the first of its flow.
 */
static struct sk_buff *favor_peek(struct Qdisc *sch)
{
	struct favor_sched_data *q = qdisc_priv(sch);

	return favor_core_peek(&q->core);
}

static void favor_reset(struct Qdisc *sch)
{
	struct favor_sched_data *q = qdisc_priv(sch);

	while (favorlab_purged(sch, favor_core_dequeue(&q->core)))
		;
}

/* Checks every option before anything changes; the caller applies them. */
static int favor_parse(struct Qdisc *sch, struct nlattr *opt, struct nlattr **tb, bool create,
		       struct netlink_ext_ack *extack)
{
	struct favor_sched_data *q = qdisc_priv(sch);
	int err;

	/* Strict, unlike fq_codel's deprecated parser (stock tc sends its options without NLA_F_NESTED):
	 * favorlab's own plugin sets the flag, so a message that lacks it, or holds an attribute of a
	 * wrong length or an unknown type, is refused with the reason instead of half taken
	 */
	err = nla_parse_nested(tb, TCA_FAVOR_MAX, opt, favor_policy, extack);
	if (err < 0)
		return err;
	if (tb[TCA_FAVOR_LIMIT]) {
		u32 limit = nla_get_u32(tb[TCA_FAVOR_LIMIT]);

		if (limit < 1 || limit > FAVOR_MAX_LIMIT) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FAVOR_LIMIT],
					    "favor: limit must be 1 to 1048576 packets");
			return -EINVAL;
		}
	}
	err = favorlab_check_memory_limit(tb[TCA_FAVOR_MEMORY_LIMIT], "favor", extack);
	if (err)
		return err;
	if (tb[TCA_FAVOR_FAVORED_BURST] &&
	    nla_get_u32(tb[TCA_FAVOR_FAVORED_BURST]) > FAVOR_MAX_LIMIT) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FAVOR_FAVORED_BURST],
				    "favor: favored_burst must be 0 (off) to 1048576 packets");
		return -EINVAL;
	}
	if (tb[TCA_FAVOR_NOPUSHOUT] && nla_get_u8(tb[TCA_FAVOR_NOPUSHOUT]) > 1) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FAVOR_NOPUSHOUT],
				    "favor: nopushout must be 0 or 1");
		return -EINVAL;
	}
	if (tb[TCA_FAVOR_FLOWKEY]) {
		u8 key = nla_get_u8(tb[TCA_FAVOR_FLOWKEY]);

		if (key > FAVOR_FLOWKEY_MAX) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FAVOR_FLOWKEY],
					    "favor: unknown flowkey (use 5tuple, addrs, dst or src)");
			return -EINVAL;
		}
		if (!create && key != q->flowkey) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FAVOR_FLOWKEY],
					    "favor: flowkey is set at creation only (delete and add the qdisc)");
			return -EINVAL;
		}
	}
	if (tb[TCA_FAVOR_BUCKETS]) {
		u32 n = nla_get_u32(tb[TCA_FAVOR_BUCKETS]);

		if (n < 1 || n > FAVOR_MAX_BUCKETS || !is_power_of_2(n)) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FAVOR_BUCKETS],
					    "favor: buckets must be a power of two from 1 to 1048576");
			return -EINVAL;
		}
		if (!create && n != q->core.buckets) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FAVOR_BUCKETS],
					    "favor: buckets is set at creation only (delete and add the qdisc)");
			return -EINVAL;
		}
	}
	return 0;
}

static void favor_apply(struct Qdisc *sch, struct nlattr **tb)
{
	struct favor_sched_data *q = qdisc_priv(sch);

	if (tb[TCA_FAVOR_LIMIT])
		q->core.limit = nla_get_u32(tb[TCA_FAVOR_LIMIT]);
	if (tb[TCA_FAVOR_NOPUSHOUT])
		q->core.nopushout = nla_get_u8(tb[TCA_FAVOR_NOPUSHOUT]);
	if (tb[TCA_FAVOR_FLOWKEY])
		q->flowkey = nla_get_u8(tb[TCA_FAVOR_FLOWKEY]);
	if (tb[TCA_FAVOR_FAVORED_BURST])
		q->core.favored_burst = nla_get_u32(tb[TCA_FAVOR_FAVORED_BURST]);
	if (tb[TCA_FAVOR_MEMORY_LIMIT])
		q->mem.limit = nla_get_u32(tb[TCA_FAVOR_MEMORY_LIMIT]);
}

static int favor_change(struct Qdisc *sch, struct nlattr *opt, struct netlink_ext_ack *extack)
{
	struct favor_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_FAVOR_MAX + 1];
	int err;

	if (!opt)
		return 0;
	err = favor_parse(sch, opt, tb, false, extack);
	if (err)
		return err;

	sch_tree_lock(sch);
	favor_apply(sch, tb);
	favorlab_trim(sch, favor_core_trim_one(&q->core));
	sch_tree_unlock(sch);
	return 0;
}

static int favor_init(struct Qdisc *sch, struct nlattr *opt, struct netlink_ext_ack *extack)
{
	struct favor_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_FAVOR_MAX + 1] = {};
	u32 buckets = FAVOR_DEFAULT_BUCKETS;
	u32 *counts;
	int err;

	if (opt) {
		err = favor_parse(sch, opt, tb, true, extack);
		if (err)
			return err;
		if (tb[TCA_FAVOR_BUCKETS])
			buckets = nla_get_u32(tb[TCA_FAVOR_BUCKETS]);
	}
	counts = kvcalloc(buckets, sizeof(*counts), GFP_KERNEL_ACCOUNT);
	if (!counts) {
		NL_SET_ERR_MSG_MOD(extack, "cannot allocate the flow table");
		return -ENOMEM;
	}
	favor_core_init(&q->core, counts, buckets,
			clamp_t(u32, READ_ONCE(qdisc_dev(sch)->tx_queue_len), 1, FAVOR_MAX_LIMIT), false);
	q->flowkey = FAVOR_FLOWKEY_5TUPLE;
	favorlab_mem_init(sch);
	get_random_bytes(&q->perturbation, sizeof(q->perturbation));
	favor_apply(sch, tb);
	return 0;
}

static void favor_destroy(struct Qdisc *sch)
{
	struct favor_sched_data *q = qdisc_priv(sch);

	/* qdisc_destroy() has reset the queue; counts is NULL if init failed early */
	kvfree(q->core.counts);
	q->core.counts = NULL;
}

static int favor_dump(struct Qdisc *sch, struct sk_buff *skb)
{
	struct favor_sched_data *q = qdisc_priv(sch);
	struct nlattr *opts;

	opts = nla_nest_start_noflag(skb, TCA_OPTIONS);
	if (!opts)
		goto nla_put_failure;
	if (nla_put_u32(skb, TCA_FAVOR_LIMIT, q->core.limit) ||
	    nla_put_u8(skb, TCA_FAVOR_NOPUSHOUT, q->core.nopushout) ||
	    nla_put_u8(skb, TCA_FAVOR_FLOWKEY, q->flowkey) ||
	    nla_put_u32(skb, TCA_FAVOR_BUCKETS, q->core.buckets) ||
	    nla_put_u32(skb, TCA_FAVOR_FAVORED_BURST, q->core.favored_burst) ||
	    nla_put_u32(skb, TCA_FAVOR_MEMORY_LIMIT, q->mem.limit))
		goto nla_put_failure;
	return nla_nest_end(skb, opts);

nla_put_failure:
	nla_nest_cancel(skb, opts);
	return -1;
}

static int favor_dump_stats(struct Qdisc *sch, struct gnet_dump *d)
{
	struct favor_sched_data *q = qdisc_priv(sch);
	struct tc_favor_xstats st = {};

	/* tc_fill_qdisc calls this under RTNL only, not the qdisc's lock: copy the counters under it,
	 * as sch_fq does, so that one dump is one consistent snapshot of them
	 */
	sch_tree_lock(sch);
	st.favored = q->core.c.favored;
	st.standard = q->core.c.standard;
	st.pushouts = q->core.c.pushouts;
	st.drop_favored = q->core.c.drop_favored;
	st.drop_standard = q->core.c.drop_standard;
	st.drop_limit = q->core.c.drop_limit;
	st.flows = q->core.flows;
	st.favored_qlen = skb_queue_len(&q->core.favored);
	st.demoted = q->core.c.demoted;
	st.drop_memory = q->mem.drops;
	st.memory_usage = q->mem.usage;
	sch_tree_unlock(sch);

	return gnet_stats_copy_app(d, &st, sizeof(st));
}

static struct Qdisc_ops favor_qdisc_ops __read_mostly = {
	.id		= "favor",
	.priv_size	= sizeof(struct favor_sched_data),
	.enqueue	= favor_enqueue,
	.dequeue	= favor_dequeue,
	.peek		= favor_peek,
	.init		= favor_init,
	.reset		= favor_reset,
	.destroy	= favor_destroy,
	.change		= favor_change,
	.dump		= favor_dump,
	.dump_stats	= favor_dump_stats,
	.owner		= THIS_MODULE,
};
favorlab_qdisc_module(favor_qdisc_ops, "favor");
MODULE_AUTHOR("favorlab");
MODULE_DESCRIPTION("FavorQueue / FavourTail: favor the first queued packet of each flow");
MODULE_LICENSE("GPL");
MODULE_VERSION(FAVOR_VERSION);
