/* SPDX-License-Identifier: GPL-2.0 */
/*
 * run2c_core.h - the queueing logic of RuN2C (Running Number 2 Class; Avrachenkov, Ayesta, Brown,
 * Nyberg, "Differentiation between short and long TCP flows: predictability of the response time",
 * INFOCOM 2004), as the FavorQueue paper compares it (Section 5.1: threshold 20 packets; "an AQM
 * which enables a push out algorithm to protect short TCP flow packets from loss").
 *
 * A packet whose TCP sequence number, counted from the start of its flow, is below the threshold is
 * of the high class, any other packet of the low class. The high class is served first (strict
 * priority); the buffer is shared: a high arrival to a full queue pushes out the last low packet, a
 * low arrival to a full queue is dropped. That queue is favor_core.h's two-class push-out queue
 * (favored = high, standard = low), so RuN2C and FavorQueue differ only in how a packet's class is
 * chosen.
 *
 * RuN2C's authors number TCP segments from zero at every sender, so a router reads the running
 * number off the header. Real stacks choose a random initial sequence number (RFC 6528), so this
 * qdisc learns it instead: a SYN or SYN-ACK it forwards records its flow's ISN in the flow's hash
 * bucket (with the flow's full 32-bit hash as a tag), and a later packet of the flow counts its
 * sequence number from there. That is one 12-byte entry per bucket, a router-side stand-in for the
 * modified senders. A packet of a flow whose SYN this queue did not see (or whose entry another
 * flow's SYN took over), and every packet without a TCP header, is of the low class: RuN2C cannot
 * tell it is short. The includer provides struct sk_buff, the __skb_* helpers and
 * FAVOR_SKB_BUCKET(skb) for favor_core.h, and u32/bool.
 */
#ifndef _RUN2C_CORE_H
#define _RUN2C_CORE_H

#include "favor_core.h"

/* What the qdisc read from a packet's headers; the harness builds it by hand. */
struct run2c_pkt {
	bool tcp;	/* it has a TCP header (TCP, not a non-first fragment) */
	bool syn;	/* SYN flag (a SYN or a SYN-ACK) */
	u32 seq;	/* TCP sequence number */
	u32 tag;	/* the flow's full 32-bit hash; its bucket is chosen from it */
};

struct run2c_flow {
	u32 tag;
	u32 isn;
	bool known;
};

struct run2c_counters {
	u64 syns;		/* SYNs and SYN-ACKs seen: ISNs learnt */
	u64 takeovers;		/* of them, SYNs whose bucket held another flow's ISN */
	u64 unknown_flow;	/* TCP packets of a flow without an ISN here: low class */
	u64 no_tcp;		/* packets without a TCP header: low class */
};

struct run2c_core {
	struct favor_core q;		/* favored = high class, standard = low class */
	struct run2c_flow *flows;	/* per bucket: the ISN of the flow that last sent a SYN */
	u32 threshold;			/* packets */
	u32 mss;			/* bytes per packet of the threshold */
	struct run2c_counters c;
};

static inline void run2c_core_init(struct run2c_core *r, u32 *counts, struct run2c_flow *flows,
				   u32 buckets, u32 limit, u32 threshold, u32 mss)
{
	favor_core_init(&r->q, counts, buckets, limit, false);
	r->flows = flows;
	r->threshold = threshold;
	r->mss = mss;
	memset(&r->c, 0, sizeof(r->c));
}

/*
 * The class of a packet: true = high. The relative sequence number of the first data byte is 0 (the
 * SYN takes one number), so with threshold 20 and mss 1448 the first 20 full-sized segments are high.
 * threshold * mss is at most 65535 * 65535 < 2^32 (the netlink policy bounds both).
 */
static inline bool run2c_core_classify(struct run2c_core *r, u32 bucket, const struct run2c_pkt *p)
{
	struct run2c_flow *f = &r->flows[bucket];

	if (!p->tcp) {
		r->c.no_tcp++;
		return false;
	}
	if (p->syn) {
		/* the bucket's flow, if it still sends, reads as unknown from now on: say how often */
		if (f->known && f->tag != p->tag)
			r->c.takeovers++;
		f->tag = p->tag;
		f->isn = p->seq;
		f->known = true;
		r->c.syns++;
		return true;
	}
	if (!f->known || f->tag != p->tag) {
		r->c.unknown_flow++;
		return false;
	}
	/* u32 arithmetic: sequence numbers wrap; a number before the first data byte reads as huge */
	return p->seq - f->isn - 1 < r->threshold * r->mss;
}

static inline enum favor_verdict run2c_core_enqueue(struct run2c_core *r, struct sk_buff *skb,
						    u32 bucket, const struct run2c_pkt *p,
						    struct sk_buff **victim)
{
	return favor_core_enqueue_class(&r->q, skb, bucket, run2c_core_classify(r, bucket, p), victim);
}

#endif /* _RUN2C_CORE_H */
