// SPDX-License-Identifier: GPL-2.0
/*
 * net/sched/sch_riops.c	RIO-PS: RIO with Preferential treatment to Short flows.
 *
 * The edge and the core of Guo and Matta's scheme in one qdisc, for a bottleneck that is both: the
 * first L_t packets of every flow (5-tuple hash) are Short, the rest Long, L_t adapted every T_c to
 * keep the active short flows near SLR times the long ones; one FIFO with RIO, Short packets judged on
 * the average Short backlog and Long packets on the average total backlog, gentle RED with ns-2's
 * drop spacing, CE marks instead of early drops with ecn. See riops_core.h for the queueing logic,
 * shared with the tests.
 *
 * References: L. Guo, I. Matta, "The war between mice and elephants", ICNP 2001; D. D. Clark,
 * W. Fang, "Explicit allocation of best-effort packet delivery service", IEEE/ACM ToN 1998 (RIO);
 * S. Floyd, V. Jacobson, "Random early detection gateways for congestion avoidance", IEEE/ACM ToN
 * 1993; ns-2 queue/red.cc and queue/rio.cc.
 */

#include <linux/module.h>
#include <linux/types.h>
#include <linux/kernel.h>
#include <linux/errno.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/math64.h>
#include <linux/random.h>
#include <linux/string.h>
#include <linux/ktime.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <net/netlink.h>
#include <net/pkt_sched.h>
#include <net/sch_generic.h>
#include <net/inet_ecn.h>
#include <net/dsfield.h>
#include <net/flow_dissector.h>

#include "include/uapi/riops.h"
#include "flow_hash.h"
#include "sch_favorlab.h"

/* the DKMS package's version (dkms.conf): the same as sch_favor.c's FAVOR_VERSION */
#define RIOPS_VERSION		"0.1.0"
#define RIOPS_DEFAULT_BUCKETS	1024
/* the typical packet for the idle decay, bytes: tc-red(8)'s default avpkt */
#define RIOPS_AVPKT		1000
/* tc-red(8)'s default bandwidth, 10 Mbit/s, in bytes per second */
#define RIOPS_DEFAULT_BANDWIDTH	(10000000 / 8)
/* T_c of at least 1 ms: the controller scans the flow table every T_c */
#define RIOPS_MIN_TC_US		1000

struct riops_skb_cb {
	u32 is_short;	/* the edge's class, for the Short backlog */
};

static inline struct riops_skb_cb *riops_skb_cb(const struct sk_buff *skb)
{
	qdisc_cb_private_validate(skb, sizeof(struct riops_skb_cb));
	return (struct riops_skb_cb *)qdisc_skb_cb(skb)->data;
}

#define RIOPS_SKB_SHORT(skb) (riops_skb_cb(skb)->is_short)
#include "riops_core.h"

/* The options as last set (dumped back as given); the core holds them in its own units. */
struct riops_opts {
	u64 bandwidth;		/* bytes per second */
	u32 limit, lt, slr, tu, tc;	/* tu, tc: microseconds */
	u32 red[2][3];		/* per class: min_th, max_th (ppm of limit), P_max (ppm) */
	bool fixed, ecn;
};

struct riops_sched_data {
	struct favorlab_mem mem;	/* first, where sch_favorlab.h's helpers find it */
	struct riops_core core;
	struct riops_opts opts;
	siphash_key_t perturbation;	/* flow hash key, drawn at init */
};
FAVORLAB_MEM_FIRST(struct riops_sched_data, mem);

static const struct nla_policy riops_policy[TCA_RIOPS_MAX + 1] = {
	/* a new qdisc: every attribute must have its exact size */
	[TCA_RIOPS_UNSPEC]	= { .strict_start_type = TCA_RIOPS_LIMIT },
	[TCA_RIOPS_LIMIT]	= { .type = NLA_U32 },
	[TCA_RIOPS_BUCKETS]	= { .type = NLA_U32 },
	[TCA_RIOPS_LT]		= { .type = NLA_U32 },
	[TCA_RIOPS_FIXED]	= NLA_POLICY_MAX(NLA_U8, 1),
	[TCA_RIOPS_SLR]		= { .type = NLA_U32 },
	[TCA_RIOPS_TU]		= { .type = NLA_U32 },
	[TCA_RIOPS_TC]		= { .type = NLA_U32 },
	[TCA_RIOPS_ECN]		= NLA_POLICY_MAX(NLA_U8, 1),
	[TCA_RIOPS_BANDWIDTH]	= { .type = NLA_U64 },
	[TCA_RIOPS_SMIN]	= { .type = NLA_U32 },
	[TCA_RIOPS_SMAX]	= { .type = NLA_U32 },
	[TCA_RIOPS_SPMAX]	= { .type = NLA_U32 },
	[TCA_RIOPS_LMIN]	= { .type = NLA_U32 },
	[TCA_RIOPS_LMAX]	= { .type = NLA_U32 },
	[TCA_RIOPS_LPMAX]	= { .type = NLA_U32 },
	[TCA_RIOPS_PAD]		= { .type = NLA_REJECT },
	[TCA_RIOPS_MEMORY_LIMIT] = { .type = NLA_U32 },
};

/* the RED attributes in riops_opts.red's order */
static const int riops_red_attr[2][3] = {
	{ TCA_RIOPS_SMIN, TCA_RIOPS_SMAX, TCA_RIOPS_SPMAX },
	{ TCA_RIOPS_LMIN, TCA_RIOPS_LMAX, TCA_RIOPS_LPMAX },
};

/* ECT(0) or ECT(1): a packet INET_ECN_set_ce() can mark. */
static bool riops_ect(struct sk_buff *skb)
{
	switch (skb_protocol(skb, true)) {
	case htons(ETH_P_IP):
		return pskb_network_may_pull(skb, sizeof(struct iphdr)) &&
		       INET_ECN_is_capable(ipv4_get_dsfield(ip_hdr(skb)));
	case htons(ETH_P_IPV6):
		return pskb_network_may_pull(skb, sizeof(struct ipv6hdr)) &&
		       INET_ECN_is_capable(ipv6_get_dsfield(ipv6_hdr(skb)));
	default:
		return false;
	}
}

static int riops_enqueue(struct sk_buff *skb, struct Qdisc *sch, struct sk_buff **to_free)
{
	struct riops_sched_data *q = qdisc_priv(sch);
	struct flow_keys keys;
	enum riops_verdict v;
	bool ect;
	u32 hash;

	if (favorlab_over_memory(sch, skb))
		return favorlab_drop_over_memory(sch, skb, to_free);
	favorlab_dissect(skb, &keys);
	hash = favorlab_flow_hash(&keys, FAVOR_FLOWKEY_5TUPLE, &q->perturbation);
	ect = q->core.ecn && riops_ect(skb);
	v = riops_core_enqueue(&q->core, skb, reciprocal_scale(hash, q->core.buckets), hash,
			       ktime_get_ns(), ect, get_random_u32());
	switch (v) {
	case RIOPS_VERDICT_MARKED:
		qdisc_qstats_overlimit(sch);
		INET_ECN_set_ce(skb);
		fallthrough;
	case RIOPS_VERDICT_ENQUEUED:
		return favorlab_queued(sch, skb, false);
	case RIOPS_VERDICT_DROP_LIMIT:
		return qdisc_drop(skb, sch, to_free);
	default:
		/* an early or forced drop: congestion, as sch_red counts and reports it */
		qdisc_qstats_overlimit(sch);
		qdisc_drop(skb, sch, to_free);
		return NET_XMIT_CN;
	}
}

static struct sk_buff *riops_dequeue(struct Qdisc *sch)
{
	struct riops_sched_data *q = qdisc_priv(sch);
	struct sk_buff *skb = riops_core_dequeue(&q->core);

	/* the clock is read once per idle period, not per packet */
	if (!skb)
		riops_core_start_idle(&q->core, ktime_get_ns());
	return favorlab_dequeued(sch, skb);
}

static struct sk_buff *riops_peek(struct Qdisc *sch)
{
	struct riops_sched_data *q = qdisc_priv(sch);

	return riops_core_peek(&q->core);
}

/* Drops every packet, counted nowhere, and forgets the flow table and the averages. */
static void riops_reset(struct Qdisc *sch)
{
	struct riops_sched_data *q = qdisc_priv(sch);

	/* a failed init leaves no core: qdisc_create_dflt's qdisc_put() resets it all the same */
	if (!q->core.tab)
		return;
	while (favorlab_purged(sch, riops_core_purge_one(&q->core)))
		;
	riops_core_forget(&q->core);
}

/* a rejected option: its message (a literal, as NL_SET_ERR_MSG needs) and -EINVAL */
#define riops_bad(extack, attr, msg) ({ NL_SET_ERR_MSG_ATTR(extack, attr, msg); -EINVAL; })

static bool riops_get_u32(struct nlattr **tb, int attr, u32 lo, u32 hi, u32 *val)
{
	if (!tb[attr])
		return true;
	*val = nla_get_u32(tb[attr]);
	return *val >= lo && *val <= hi;
}

/*
 * Parses the options over @o (the current ones, or the defaults at init) and checks every one,
 * and the thresholds together, before anything changes; the caller applies them.
 */
static int riops_parse(struct nlattr *opt, struct nlattr **tb, struct riops_opts *o, u32 buckets,
		       struct netlink_ext_ack *extack)
{
	int err, i, j;

	/* Strict, unlike fq_codel's deprecated parser (stock tc sends its options without NLA_F_NESTED):
	 * favorlab's own plugin sets the flag, so a message that lacks it, or holds an attribute of a
	 * wrong length or an unknown type, is refused with the reason instead of half taken
	 */
	err = nla_parse_nested(tb, TCA_RIOPS_MAX, opt, riops_policy, extack);
	if (err < 0)
		return err;
	err = favorlab_check_memory_limit(tb[TCA_RIOPS_MEMORY_LIMIT], "riops", extack);
	if (err)
		return err;
	if (tb[TCA_RIOPS_BUCKETS]) {
		u32 n = nla_get_u32(tb[TCA_RIOPS_BUCKETS]);

		if (n < 1 || n > RIOPS_MAX_BUCKETS || !is_power_of_2(n))
			return riops_bad(extack, tb[TCA_RIOPS_BUCKETS],
					 "riops: buckets must be a power of two from 1 to 65536");
		if (buckets && n != buckets)
			return riops_bad(extack, tb[TCA_RIOPS_BUCKETS],
					 "riops: buckets is set at creation only (delete and add the qdisc)");
	}
	if (!riops_get_u32(tb, TCA_RIOPS_LIMIT, 1, RIOPS_MAX_LIMIT, &o->limit))
		return riops_bad(extack, tb[TCA_RIOPS_LIMIT], "riops: limit must be 1 to 1048576 packets");
	if (!riops_get_u32(tb, TCA_RIOPS_LT, 1, RIOPS_MAX_LT, &o->lt))
		return riops_bad(extack, tb[TCA_RIOPS_LT], "riops: lt must be 1 to 65535 packets");
	if (!riops_get_u32(tb, TCA_RIOPS_SLR, 1, RIOPS_MAX_SLR, &o->slr))
		return riops_bad(extack, tb[TCA_RIOPS_SLR], "riops: slr must be 1 to 1000");
	if (!riops_get_u32(tb, TCA_RIOPS_TU, 1, U32_MAX, &o->tu))
		return riops_bad(extack, tb[TCA_RIOPS_TU], "riops: tu must be at least 1 us");
	if (!riops_get_u32(tb, TCA_RIOPS_TC, RIOPS_MIN_TC_US, U32_MAX, &o->tc))
		return riops_bad(extack, tb[TCA_RIOPS_TC], "riops: tc must be at least 1 ms");
	if (tb[TCA_RIOPS_BANDWIDTH]) {
		o->bandwidth = nla_get_u64(tb[TCA_RIOPS_BANDWIDTH]);
		if (o->bandwidth < RIOPS_AVPKT)
			return riops_bad(extack, tb[TCA_RIOPS_BANDWIDTH],
					 "riops: bandwidth must be at least 8 kbit/s");
	}
	if (tb[TCA_RIOPS_FIXED])
		o->fixed = nla_get_u8(tb[TCA_RIOPS_FIXED]);
	if (tb[TCA_RIOPS_ECN])
		o->ecn = nla_get_u8(tb[TCA_RIOPS_ECN]);
	for (i = 0; i < 2; i++) {
		for (j = 0; j < 3; j++)
			if (!riops_get_u32(tb, riops_red_attr[i][j], j == 2, RIOPS_PPM, &o->red[i][j]))
				return riops_bad(extack, tb[riops_red_attr[i][j]],
						 "riops: min/max thresholds are fractions 0 to 1 of limit, pmax 0 (excluded) to 1");
		if (o->red[i][0] >= o->red[i][1])
			return riops_bad(extack, tb[riops_red_attr[i][1]] ?: tb[riops_red_attr[i][0]],
					 "riops: a class's min threshold must be below its max threshold");
	}
	return 0;
}

/* @fresh at init; @restart_lt: lt or fixed was given, L_t restarts at lt */
static void riops_apply(struct riops_sched_data *q, const struct riops_opts *o, bool fresh,
			bool restart_lt)
{
	struct riops_core *c = &q->core;
	u64 tc = (u64)o->tc * NSEC_PER_USEC;
	int i;

	if (fresh || restart_lt)
		c->lt = o->lt;
	/* a new T_c counts from now; an unchanged one keeps its phase */
	if (fresh || o->tc != q->opts.tc)
		c->next_tc = ktime_get_ns() + tc;
	q->opts = *o;
	c->limit = o->limit;
	c->slr = o->slr;
	c->fixed = o->fixed;
	c->ecn = o->ecn;
	c->tu = (u64)o->tu * NSEC_PER_USEC;
	c->tc = tc;
	c->ptime = div64_u64((u64)RIOPS_AVPKT * NSEC_PER_SEC, o->bandwidth) ?: 1;
	for (i = 0; i < 2; i++) {
		c->red[i].min_ppm = o->red[i][0];
		c->red[i].max_ppm = o->red[i][1];
		c->red[i].pmax_ppm = o->red[i][2];
	}
	riops_core_thresholds(c);
}

static int riops_change(struct Qdisc *sch, struct nlattr *opt, struct netlink_ext_ack *extack)
{
	struct riops_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_RIOPS_MAX + 1];
	struct riops_opts o = q->opts;
	int err;

	if (!opt)
		return 0;
	err = riops_parse(opt, tb, &o, q->core.buckets, extack);
	if (err)
		return err;

	sch_tree_lock(sch);
	riops_apply(q, &o, false, tb[TCA_RIOPS_LT] || tb[TCA_RIOPS_FIXED]);
	if (tb[TCA_RIOPS_MEMORY_LIMIT])
		q->mem.limit = nla_get_u32(tb[TCA_RIOPS_MEMORY_LIMIT]);
	favorlab_trim(sch, riops_core_trim_one(&q->core));
	sch_tree_unlock(sch);
	return 0;
}

static int riops_init(struct Qdisc *sch, struct nlattr *opt, struct netlink_ext_ack *extack)
{
	struct riops_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_RIOPS_MAX + 1] = {};
	u32 buckets = RIOPS_DEFAULT_BUCKETS;
	struct riops_bucket *tab;
	/* Table III (B = limit) and Section III.B: T_u 1 s, T_c 10 s, SLR 3; L_t 20, see tc-riops(8) */
	struct riops_opts o = {
		.bandwidth = RIOPS_DEFAULT_BANDWIDTH,
		.limit = clamp_t(u32, READ_ONCE(qdisc_dev(sch)->tx_queue_len), 1, RIOPS_MAX_LIMIT),
		.lt = 20, .slr = 3, .tu = USEC_PER_SEC, .tc = 10 * USEC_PER_SEC,
		.red = { { 150000, 350000, 50000 }, { 150000, 500000, 100000 } },
		.ecn = true,
	};
	int err;

	if (opt) {
		err = riops_parse(opt, tb, &o, 0, extack);
		if (err)
			return err;
		if (tb[TCA_RIOPS_BUCKETS])
			buckets = nla_get_u32(tb[TCA_RIOPS_BUCKETS]);
	}
	tab = kvcalloc(buckets, sizeof(*tab), GFP_KERNEL_ACCOUNT);
	if (!tab) {
		NL_SET_ERR_MSG_MOD(extack, "cannot allocate the flow table");
		return -ENOMEM;
	}
	riops_core_init(&q->core, tab, buckets, o.limit, ktime_get_ns());
	riops_apply(q, &o, true, true);
	favorlab_mem_init(sch);
	if (tb[TCA_RIOPS_MEMORY_LIMIT])
		q->mem.limit = nla_get_u32(tb[TCA_RIOPS_MEMORY_LIMIT]);
	get_random_bytes(&q->perturbation, sizeof(q->perturbation));
	return 0;
}

static void riops_destroy(struct Qdisc *sch)
{
	struct riops_sched_data *q = qdisc_priv(sch);

	/* qdisc_destroy() has reset the queue; NULL if init failed */
	kvfree(q->core.tab);
	q->core.tab = NULL;
}

static int riops_dump(struct Qdisc *sch, struct sk_buff *skb)
{
	struct riops_sched_data *q = qdisc_priv(sch);
	const struct riops_opts *o = &q->opts;
	struct nlattr *opts;
	int i, j;

	opts = nla_nest_start_noflag(skb, TCA_OPTIONS);
	if (!opts)
		goto nla_put_failure;
	if (nla_put_u32(skb, TCA_RIOPS_LIMIT, o->limit) ||
	    nla_put_u32(skb, TCA_RIOPS_BUCKETS, q->core.buckets) ||
	    nla_put_u32(skb, TCA_RIOPS_LT, o->lt) ||
	    nla_put_u8(skb, TCA_RIOPS_FIXED, o->fixed) ||
	    nla_put_u32(skb, TCA_RIOPS_SLR, o->slr) ||
	    nla_put_u32(skb, TCA_RIOPS_TU, o->tu) ||
	    nla_put_u32(skb, TCA_RIOPS_TC, o->tc) ||
	    nla_put_u8(skb, TCA_RIOPS_ECN, o->ecn) ||
	    nla_put_u64_64bit(skb, TCA_RIOPS_BANDWIDTH, o->bandwidth, TCA_RIOPS_PAD) ||
	    nla_put_u32(skb, TCA_RIOPS_MEMORY_LIMIT, q->mem.limit))
		goto nla_put_failure;
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++)
			if (nla_put_u32(skb, riops_red_attr[i][j], o->red[i][j]))
				goto nla_put_failure;
	return nla_nest_end(skb, opts);

nla_put_failure:
	nla_nest_cancel(skb, opts);
	return -1;
}

static int riops_dump_stats(struct Qdisc *sch, struct gnet_dump *d)
{
	struct riops_sched_data *q = qdisc_priv(sch);
	const struct riops_core *c = &q->core;
	struct tc_riops_xstats st = {};

	/* tc_fill_qdisc calls this under RTNL only, not the qdisc's lock: copy under it, as sch_las */
	sch_tree_lock(sch);
	st.enqueued_short = c->c.enqueued[RIOPS_SHORT];
	st.enqueued_long = c->c.enqueued[RIOPS_LONG];
	st.early_short = c->c.early[RIOPS_SHORT];
	st.early_long = c->c.early[RIOPS_LONG];
	st.marked_short = c->c.marked[RIOPS_SHORT];
	st.marked_long = c->c.marked[RIOPS_LONG];
	st.forced_short = c->c.forced[RIOPS_SHORT];
	st.forced_long = c->c.forced[RIOPS_LONG];
	st.drop_limit = c->c.drop_limit;
	st.drop_trim = c->c.drop_trim;
	st.flows_seen = c->c.flows_seen;
	st.collisions = c->c.collisions;
	st.qavg_short = c->qavg_short;
	st.qavg_total = c->qavg_total;
	st.lt = c->lt;
	st.active_short = c->active[RIOPS_SHORT];
	st.active_long = c->active[RIOPS_LONG];
	st.qlen_short = c->qshort;
	st.drop_memory = q->mem.drops;
	st.memory_usage = q->mem.usage;
	sch_tree_unlock(sch);

	return gnet_stats_copy_app(d, &st, sizeof(st));
}

static struct Qdisc_ops riops_qdisc_ops __read_mostly = {
	.id		= "riops",
	.priv_size	= sizeof(struct riops_sched_data),
	.enqueue	= riops_enqueue,
	.dequeue	= riops_dequeue,
	.peek		= riops_peek,
	.init		= riops_init,
	.reset		= riops_reset,
	.destroy	= riops_destroy,
	.change		= riops_change,
	.dump		= riops_dump,
	.dump_stats	= riops_dump_stats,
	.owner		= THIS_MODULE,
};
favorlab_qdisc_module(riops_qdisc_ops, "riops");
MODULE_AUTHOR("favorlab");
MODULE_DESCRIPTION("RIO-PS: the first packets of every flow In, RIO on one FIFO");
MODULE_LICENSE("GPL");
MODULE_VERSION(RIOPS_VERSION);
