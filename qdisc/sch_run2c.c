// SPDX-License-Identifier: GPL-2.0
/*
 * net/sched/sch_run2c.c	RuN2C: the first packets of every TCP flow served first.
 *
 * A packet whose TCP sequence number, counted from its flow's SYN, is below threshold * mss is of
 * the high class; others are of the low class. High is served first; a high arrival to a full queue
 * pushes out the last low packet. See run2c_core.h for the logic (shared with the tests) and for how
 * the flow's initial sequence number is learnt from its SYN.
 *
 * References: Avrachenkov, Ayesta, Brown, Nyberg, "Differentiation between short and long TCP flows:
 * predictability of the response time", IEEE INFOCOM 2004; Anelli, Diana, Lochin, "FavorQueue: a
 * Parameterless Active Queue Management to Improve TCP Traffic Performance", Computer Networks 2014
 * (Section 5.1: RuN2C with a threshold of 20 packets).
 */

#include <linux/module.h>
#include <linux/types.h>
#include <linux/kernel.h>
#include <linux/errno.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/tcp.h>
#include <net/netlink.h>
#include <net/pkt_sched.h>
#include <net/sch_generic.h>
#include <net/flow_dissector.h>

#include "include/uapi/favor.h"
#include "include/uapi/run2c.h"
#include "flow_hash.h"
#include "sch_favorlab.h"

#define RUN2C_VERSION		"0.1.0"		/* the DKMS package's, as sch_favor's */
#define RUN2C_DEFAULT_BUCKETS	1024

struct run2c_skb_cb {
	u32 bucket;
};

static inline struct run2c_skb_cb *run2c_skb_cb(struct sk_buff *skb)
{
	qdisc_cb_private_validate(skb, sizeof(struct run2c_skb_cb));
	return (struct run2c_skb_cb *)qdisc_skb_cb(skb)->data;
}

#define FAVOR_SKB_BUCKET(skb) (run2c_skb_cb(skb)->bucket)
#include "run2c_core.h"

struct run2c_sched_data {
	struct favorlab_mem mem;	/* first, where sch_favorlab.h's helpers find it */
	struct run2c_core core;
	siphash_key_t perturbation;	/* flow hash key, drawn at init */
};
FAVORLAB_MEM_FIRST(struct run2c_sched_data, mem);

static const struct nla_policy run2c_policy[TCA_RUN2C_MAX + 1] = {
	/* strict from the first attribute: a wrong length or an unknown type is refused, not logged and taken */
	[TCA_RUN2C_UNSPEC]	= { .strict_start_type = TCA_RUN2C_LIMIT },
	[TCA_RUN2C_LIMIT]	= { .type = NLA_U32 },
	[TCA_RUN2C_THRESHOLD]	= { .type = NLA_U32 },
	[TCA_RUN2C_MSS]		= { .type = NLA_U32 },
	[TCA_RUN2C_BUCKETS]	= { .type = NLA_U32 },
	[TCA_RUN2C_MEMORY_LIMIT] = { .type = NLA_U32 },
};

/* The flow (5-tuple hash: tag and bucket) and the TCP header fields the class depends on. */
static u32 run2c_read(const struct run2c_sched_data *q, const struct sk_buff *skb, struct run2c_pkt *p)
{
	struct flow_keys keys;
	struct tcphdr _th;
	const struct tcphdr *th = NULL;

	favorlab_dissect(skb, &keys);
	p->tag = favorlab_flow_hash(&keys, FAVOR_FLOWKEY_5TUPLE, &q->perturbation);
	/* a non-first fragment has no TCP header (the dissector says so and gives no ports) */
	if (keys.basic.ip_proto == IPPROTO_TCP && !(keys.control.flags & FLOW_DIS_IS_FRAGMENT))
		th = skb_header_pointer(skb, keys.control.thoff, sizeof(_th), &_th);
	p->tcp = th;
	p->syn = th && th->syn;
	p->seq = th ? ntohl(th->seq) : 0;
	return reciprocal_scale(p->tag, q->core.q.buckets);
}

static int run2c_enqueue(struct sk_buff *skb, struct Qdisc *sch, struct sk_buff **to_free)
{
	struct run2c_sched_data *q = qdisc_priv(sch);
	struct sk_buff *victim;
	struct run2c_pkt p;
	enum favor_verdict v;
	u32 bucket;

	if (favorlab_over_memory(sch, skb))
		return favorlab_drop_over_memory(sch, skb, to_free);
	bucket = run2c_read(q, skb, &p);
	v = run2c_core_enqueue(&q->core, skb, bucket, &p, &victim);
	if (victim)
		favorlab_drop_queued(sch, victim, to_free);
	if (v == FAVOR_VERDICT_FAVORED || v == FAVOR_VERDICT_STANDARD)
		return favorlab_queued(sch, skb, victim);
	return qdisc_drop(skb, sch, to_free);
}

static struct sk_buff *run2c_dequeue(struct Qdisc *sch)
{
	struct run2c_sched_data *q = qdisc_priv(sch);

	return favorlab_dequeued(sch, favor_core_dequeue(&q->core.q));
}

/* A real peek (the packet stays queued), for the reason favor_peek gives. */
static struct sk_buff *run2c_peek(struct Qdisc *sch)
{
	struct run2c_sched_data *q = qdisc_priv(sch);

	return favor_core_peek(&q->core.q);
}

static void run2c_reset(struct Qdisc *sch)
{
	struct run2c_sched_data *q = qdisc_priv(sch);

	while (favorlab_purged(sch, favor_core_dequeue(&q->core.q)))
		;
}

static bool run2c_in(const struct nlattr *a, u32 lo, u32 hi)
{
	u32 v = nla_get_u32(a);

	return v >= lo && v <= hi;
}

/*
 * Checks every option before anything changes; the caller applies them. Ranges are checked here, not by
 * the policy, so that the message names the range and the unit, as sch_favor does.
 */
static int run2c_parse(struct Qdisc *sch, struct nlattr *opt, struct nlattr **tb, bool create,
		       struct netlink_ext_ack *extack)
{
	struct run2c_sched_data *q = qdisc_priv(sch);
	int err;

	/* Strict, unlike fq_codel's deprecated parser (stock tc sends its options without NLA_F_NESTED):
	 * favorlab's own plugin sets the flag, so a message that lacks it, or holds an attribute of a
	 * wrong length or an unknown type, is refused with the reason instead of half taken
	 */
	err = nla_parse_nested(tb, TCA_RUN2C_MAX, opt, run2c_policy, extack);
	if (err < 0)
		return err;
	err = favorlab_check_memory_limit(tb[TCA_RUN2C_MEMORY_LIMIT], "run2c", extack);
	if (err)
		return err;
	if (tb[TCA_RUN2C_LIMIT] && !run2c_in(tb[TCA_RUN2C_LIMIT], 1, RUN2C_MAX_LIMIT)) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_RUN2C_LIMIT],
				    "run2c: limit must be 1 to 1048576 packets");
		return -EINVAL;
	}
	if (tb[TCA_RUN2C_THRESHOLD] && !run2c_in(tb[TCA_RUN2C_THRESHOLD], 1, 65535)) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_RUN2C_THRESHOLD],
				    "run2c: threshold must be 1 to 65535 packets");
		return -EINVAL;
	}
	if (tb[TCA_RUN2C_MSS] && !run2c_in(tb[TCA_RUN2C_MSS], 1, 65535)) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_RUN2C_MSS], "run2c: mss must be 1 to 65535 bytes");
		return -EINVAL;
	}
	if (tb[TCA_RUN2C_BUCKETS]) {
		u32 n = nla_get_u32(tb[TCA_RUN2C_BUCKETS]);

		if (n < 1 || n > RUN2C_MAX_BUCKETS || !is_power_of_2(n)) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_RUN2C_BUCKETS],
					    "run2c: buckets must be a power of two from 1 to 1048576");
			return -EINVAL;
		}
		if (!create && n != q->core.q.buckets) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_RUN2C_BUCKETS],
					    "run2c: buckets is set at creation only (delete and add the qdisc)");
			return -EINVAL;
		}
	}
	return 0;
}

static void run2c_apply(struct Qdisc *sch, struct nlattr **tb)
{
	struct run2c_sched_data *q = qdisc_priv(sch);

	if (tb[TCA_RUN2C_LIMIT])
		q->core.q.limit = nla_get_u32(tb[TCA_RUN2C_LIMIT]);
	if (tb[TCA_RUN2C_THRESHOLD])
		q->core.threshold = nla_get_u32(tb[TCA_RUN2C_THRESHOLD]);
	if (tb[TCA_RUN2C_MSS])
		q->core.mss = nla_get_u32(tb[TCA_RUN2C_MSS]);
	if (tb[TCA_RUN2C_MEMORY_LIMIT])
		q->mem.limit = nla_get_u32(tb[TCA_RUN2C_MEMORY_LIMIT]);
}

static int run2c_change(struct Qdisc *sch, struct nlattr *opt, struct netlink_ext_ack *extack)
{
	struct run2c_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_RUN2C_MAX + 1];
	int err;

	if (!opt)
		return 0;
	err = run2c_parse(sch, opt, tb, false, extack);
	if (err)
		return err;

	sch_tree_lock(sch);
	run2c_apply(sch, tb);
	favorlab_trim(sch, favor_core_trim_one(&q->core.q));
	sch_tree_unlock(sch);
	return 0;
}

static int run2c_init(struct Qdisc *sch, struct nlattr *opt, struct netlink_ext_ack *extack)
{
	struct run2c_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_RUN2C_MAX + 1] = {};
	u32 buckets = RUN2C_DEFAULT_BUCKETS;
	struct run2c_flow *flows;
	u32 *counts;
	int err;

	if (opt) {
		err = run2c_parse(sch, opt, tb, true, extack);
		if (err)
			return err;
		if (tb[TCA_RUN2C_BUCKETS])
			buckets = nla_get_u32(tb[TCA_RUN2C_BUCKETS]);
	}
	counts = kvcalloc(buckets, sizeof(*counts), GFP_KERNEL_ACCOUNT);
	flows = kvcalloc(buckets, sizeof(*flows), GFP_KERNEL_ACCOUNT);
	if (!counts || !flows) {
		kvfree(counts);
		kvfree(flows);
		NL_SET_ERR_MSG_MOD(extack, "cannot allocate the flow table");
		return -ENOMEM;
	}
	run2c_core_init(&q->core, counts, flows, buckets,
			clamp_t(u32, READ_ONCE(qdisc_dev(sch)->tx_queue_len), 1, RUN2C_MAX_LIMIT),
			RUN2C_DEFAULT_THRESHOLD, RUN2C_DEFAULT_MSS);
	favorlab_mem_init(sch);
	get_random_bytes(&q->perturbation, sizeof(q->perturbation));
	run2c_apply(sch, tb);
	return 0;
}

static void run2c_destroy(struct Qdisc *sch)
{
	struct run2c_sched_data *q = qdisc_priv(sch);

	/* qdisc_destroy() has reset the queue; the tables are NULL if init failed early */
	kvfree(q->core.q.counts);
	kvfree(q->core.flows);
	q->core.q.counts = NULL;
	q->core.flows = NULL;
}

static int run2c_dump(struct Qdisc *sch, struct sk_buff *skb)
{
	struct run2c_sched_data *q = qdisc_priv(sch);
	struct nlattr *opts;

	opts = nla_nest_start_noflag(skb, TCA_OPTIONS);
	if (!opts)
		goto nla_put_failure;
	if (nla_put_u32(skb, TCA_RUN2C_LIMIT, q->core.q.limit) ||
	    nla_put_u32(skb, TCA_RUN2C_THRESHOLD, q->core.threshold) ||
	    nla_put_u32(skb, TCA_RUN2C_MSS, q->core.mss) ||
	    nla_put_u32(skb, TCA_RUN2C_BUCKETS, q->core.q.buckets) ||
	    nla_put_u32(skb, TCA_RUN2C_MEMORY_LIMIT, q->mem.limit))
		goto nla_put_failure;
	return nla_nest_end(skb, opts);

nla_put_failure:
	nla_nest_cancel(skb, opts);
	return -1;
}

static int run2c_dump_stats(struct Qdisc *sch, struct gnet_dump *d)
{
	struct run2c_sched_data *q = qdisc_priv(sch);
	const struct favor_core *c = &q->core.q;
	struct tc_run2c_xstats st = {};

	/* tc_fill_qdisc calls this under RTNL only, not the qdisc's lock: copy the counters under it,
	 * as sch_fq does, so that one dump is one consistent snapshot of them
	 */
	sch_tree_lock(sch);
	st.high = c->c.favored;
	st.low = c->c.standard;
	st.pushouts = c->c.pushouts;
	st.drop_high = c->c.drop_favored;
	st.drop_low = c->c.drop_standard;
	st.drop_limit = c->c.drop_limit;
	st.syns = q->core.c.syns;
	st.takeovers = q->core.c.takeovers;
	st.unknown_flow = q->core.c.unknown_flow;
	st.no_tcp = q->core.c.no_tcp;
	st.high_qlen = skb_queue_len(&c->favored);
	st.low_qlen = skb_queue_len(&c->standard);
	st.drop_memory = q->mem.drops;
	st.memory_usage = q->mem.usage;
	sch_tree_unlock(sch);

	return gnet_stats_copy_app(d, &st, sizeof(st));
}

static struct Qdisc_ops run2c_qdisc_ops __read_mostly = {
	.id		= "run2c",
	.priv_size	= sizeof(struct run2c_sched_data),
	.enqueue	= run2c_enqueue,
	.dequeue	= run2c_dequeue,
	.peek		= run2c_peek,
	.init		= run2c_init,
	.reset		= run2c_reset,
	.destroy	= run2c_destroy,
	.change		= run2c_change,
	.dump		= run2c_dump,
	.dump_stats	= run2c_dump_stats,
	.owner		= THIS_MODULE,
};
favorlab_qdisc_module(run2c_qdisc_ops, "run2c");
MODULE_AUTHOR("favorlab");
MODULE_DESCRIPTION("RuN2C: serve the first packets of every TCP flow first, with push-out");
MODULE_LICENSE("GPL");
MODULE_VERSION(RUN2C_VERSION);
