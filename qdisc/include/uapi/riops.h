/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * riops.h - netlink interface of the "riops" qdisc (RIO-PS, RIO with Preferential treatment to Short
 * flows: Guo and Matta, "The war between mice and elephants", ICNP 2001).
 * Shared by the kernel module (sch_riops.c), its queueing core (riops_core.h) and the tc plugin
 * (tc/q_riops.c).
 */
#ifndef _UAPI_RIOPS_H
#define _UAPI_RIOPS_H

#include <linux/types.h>
#include "favorlab.h"

enum {
	TCA_RIOPS_UNSPEC,
	TCA_RIOPS_LIMIT,	/* u32: the buffer B, packets (1 to RIOPS_MAX_LIMIT) */
	TCA_RIOPS_BUCKETS,	/* u32: flow table size (power of two, to RIOPS_MAX_BUCKETS), at creation only */
	TCA_RIOPS_LT,		/* u32: the threshold L_t, packets (1 to RIOPS_MAX_LT); sets the current value */
	TCA_RIOPS_FIXED,	/* u8: 1 = L_t is not adapted every T_c */
	TCA_RIOPS_SLR,		/* u32: the target short-to-long ratio SLR (1 to RIOPS_MAX_SLR) */
	TCA_RIOPS_TU,		/* u32: T_u, microseconds: a flow unseen this long leaves the table */
	TCA_RIOPS_TC,		/* u32: T_c, microseconds: the L_t controller's period */
	TCA_RIOPS_ECN,		/* u8: 1 = mark ECT packets CE instead of an early drop */
	TCA_RIOPS_BANDWIDTH,	/* u64: link rate in bytes per second, for the averages' decay when idle */
	TCA_RIOPS_SMIN,		/* u32: short min_th, parts per million of limit */
	TCA_RIOPS_SMAX,		/* u32: short max_th, ppm of limit */
	TCA_RIOPS_SPMAX,	/* u32: short P_max, ppm */
	TCA_RIOPS_LMIN,		/* u32: long min_th, ppm of limit */
	TCA_RIOPS_LMAX,		/* u32: long max_th, ppm of limit */
	TCA_RIOPS_LPMAX,	/* u32: long P_max, ppm */
	TCA_RIOPS_PAD,		/* alignment of the u64 in dumps */
	TCA_RIOPS_MEMORY_LIMIT,	/* u32: bytes of skb->truesize queued at most (favorlab.h's bounds) */
	__TCA_RIOPS_MAX
};
#define TCA_RIOPS_MAX (__TCA_RIOPS_MAX - 1)

#define RIOPS_MAX_LIMIT		(1U << 20)
/* the controller scans the table every T_c: at most 65536 buckets bounds that scan */
#define RIOPS_MAX_BUCKETS	(1U << 16)
#define RIOPS_MAX_LT		65535U
#define RIOPS_MAX_SLR		1000U
#define RIOPS_PPM		1000000U

/* Per-packet verdicts of an enqueue. */
enum riops_verdict {
	RIOPS_VERDICT_ENQUEUED,		/* queued */
	RIOPS_VERDICT_MARKED,		/* queued, and the caller marks it CE (an early drop turned mark) */
	RIOPS_VERDICT_DROP_EARLY,	/* dropped at random, average between min_th and max_th */
	RIOPS_VERDICT_DROP_FORCED,	/* dropped, average at or above max_th (gentle region or beyond) */
	RIOPS_VERDICT_DROP_LIMIT,	/* dropped, the queue held limit packets */
};

struct tc_riops_xstats {
	__u64	enqueued_short;	/* Short ("In") arrivals queued (marked ones included) */
	__u64	enqueued_long;	/* Long ("Out") arrivals queued */
	__u64	early_short;	/* Short arrivals dropped at random, min_th <= Q_short < max_th */
	__u64	early_long;	/* Long arrivals dropped at random, min_th <= Q_total < max_th */
	__u64	marked_short;	/* Short arrivals marked CE instead of an early drop */
	__u64	marked_long;	/* Long arrivals marked CE instead of an early drop */
	__u64	forced_short;	/* Short arrivals dropped with Q_short >= max_th (gentle region, or >= 2 max_th) */
	__u64	forced_long;	/* Long arrivals dropped with Q_total >= max_th */
	__u64	drop_limit;	/* arrivals dropped at a full queue (limit packets) */
	__u64	drop_trim;	/* queued packets dropped by lowering the limit */
	__u64	flows_seen;	/* packets that started a flow entry (empty or expired bucket) */
	__u64	collisions;	/* packets of another flow than their bucket's active entry (state shared) */
	__u64	qavg_short;	/* Q_short, packets * 2^16 */
	__u64	qavg_total;	/* Q_total, packets * 2^16 */
	__u32	lt;		/* L_t now, packets */
	__u32	active_short;	/* cnt_s: active Short flows at the last T_c */
	__u32	active_long;	/* cnt_l: active Long flows at the last T_c */
	__u32	qlen_short;	/* Short packets queued now */
	__u64	drop_memory;	/* arrivals dropped as over memory_limit (before the algorithm saw them) */
	__u64	memory_usage;	/* bytes of skb->truesize queued now */
};

#endif /* _UAPI_RIOPS_H */
