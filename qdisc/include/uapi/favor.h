/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * favor.h - netlink interface of the "favor" qdisc (FavorQueue / FavourTail).
 * Shared by the kernel module (sch_favor.c) and the tc plugin (tc/q_favor.c).
 */
#ifndef _UAPI_FAVOR_H
#define _UAPI_FAVOR_H

#include <linux/types.h>
#include "favorlab.h"

enum {
	TCA_FAVOR_UNSPEC,
	TCA_FAVOR_LIMIT,	/* u32: queue limit in packets (>= 1) */
	TCA_FAVOR_NOPUSHOUT,	/* u8: 1 = FavourTail (a favored arrival to a full queue is dropped) */
	TCA_FAVOR_FLOWKEY,	/* u8: enum favor_flowkey */
	TCA_FAVOR_BUCKETS,	/* u32: flow hash buckets (power of two), set at creation only */
	TCA_FAVOR_FAVORED_BURST,	/* u32: 0 = off (Algorithm 1); else at most this many favored
				 * packets are served while a standard packet waits (favor_core.h)
				 */
	TCA_FAVOR_MEMORY_LIMIT,	/* u32: bytes of skb->truesize queued at most (favorlab.h's bounds) */
	__TCA_FAVOR_MAX
};
#define TCA_FAVOR_MAX (__TCA_FAVOR_MAX - 1)

/* What identifies a flow. Every key also includes the ethertype. */
enum favor_flowkey {
	FAVOR_FLOWKEY_5TUPLE,	/* saddr, daddr, sport, dport, IP protocol (default) */
	FAVOR_FLOWKEY_ADDRS,	/* saddr, daddr */
	FAVOR_FLOWKEY_DST,	/* daddr */
	FAVOR_FLOWKEY_SRC,	/* saddr */
	__FAVOR_FLOWKEY_MAX
};
#define FAVOR_FLOWKEY_MAX (__FAVOR_FLOWKEY_MAX - 1)

#define FAVOR_MAX_BUCKETS	(1U << 20)
#define FAVOR_MAX_LIMIT		(1U << 20)

/* Per-packet verdicts, as counted in xstats and emitted by the favor_enqueue tracepoint. */
enum favor_verdict {
	FAVOR_VERDICT_FAVORED,		/* enqueued as favored (flow had no packet queued) */
	FAVOR_VERDICT_STANDARD,		/* enqueued at the tail as standard */
	FAVOR_VERDICT_PUSHOUT_VICTIM,	/* standard packet pushed out by a favored arrival */
	FAVOR_VERDICT_DROP_FAVORED,	/* favored arrival dropped (queue full of favored, or nopushout) */
	FAVOR_VERDICT_DROP_STANDARD,	/* standard arrival dropped (queue full) */
};

struct tc_favor_xstats {
	__u64	favored;	/* favored enqueues */
	__u64	standard;	/* standard enqueues */
	__u64	pushouts;	/* standard packets pushed out by favored arrivals */
	__u64	drop_favored;	/* favored arrivals dropped */
	__u64	drop_standard;	/* standard arrivals dropped */
	__u64	drop_limit;	/* packets dropped by lowering the limit (tc qdisc change) */
	__u32	flows;		/* flows (hash buckets) with a packet queued now */
	__u32	favored_qlen;	/* favored packets queued now */
	__u64	demoted;	/* would have been favored, queued as standard by favored_burst */
	__u64	drop_memory;	/* arrivals dropped as over memory_limit (before the algorithm saw them) */
	__u64	memory_usage;	/* bytes of skb->truesize queued now */
};

#endif /* _UAPI_FAVOR_H */
