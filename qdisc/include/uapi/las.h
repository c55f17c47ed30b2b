/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * las.h - netlink interface of the "las" qdisc (LAS, Least Attained Service).
 * Shared by the kernel module (sch_las.c) and the tc plugin (tc/q_las.c).
 */
#ifndef _UAPI_LAS_H
#define _UAPI_LAS_H

#include <linux/types.h>
#include "favorlab.h"

enum {
	TCA_LAS_UNSPEC,
	TCA_LAS_LIMIT,		/* u32: queue limit in packets (1 to LAS_MAX_LIMIT) */
	TCA_LAS_BUCKETS,	/* u32: flow hash buckets (power of two), set at creation only */
	TCA_LAS_MEMORY_LIMIT,	/* u32: bytes of skb->truesize queued at most (favorlab.h's bounds) */
	__TCA_LAS_MAX
};
#define TCA_LAS_MAX (__TCA_LAS_MAX - 1)

#define LAS_MAX_BUCKETS		(1U << 20)
#define LAS_MAX_LIMIT		(1U << 20)

/* Per-packet verdicts of an enqueue. */
enum las_verdict {
	LAS_VERDICT_ENQUEUED,		/* queued (the queue had room, or a push-out made room) */
	LAS_VERDICT_DROP_ARRIVAL,	/* full queue, the arrival had the largest priority value: dropped */
	LAS_VERDICT_PUSHOUT_VICTIM,	/* queued packet of largest priority value dropped for an arrival */
};

struct tc_las_xstats {
	__u64	enqueued;	/* arrivals queued */
	__u64	drop_arrival;	/* arrivals dropped (full queue, the arrival had the largest priority value) */
	__u64	pushouts;	/* queued packets dropped to make room for an arrival of smaller priority value */
	__u64	drop_limit;	/* packets dropped by lowering the limit (tc qdisc change) */
	__u64	flow_resets;	/* flows that took a bucket held by another flow (attained service restarted at 0) */
	__u32	flows;		/* flows (hash buckets) with a packet queued now */
	__u32	pad;		/* 0 (no implicit padding is copied to userspace) */
	__u64	drop_memory;	/* arrivals dropped as over memory_limit (before the algorithm saw them) */
	__u64	memory_usage;	/* bytes of skb->truesize queued now */
};

#endif /* _UAPI_LAS_H */
