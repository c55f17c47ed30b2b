/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * qsdrr.h - netlink interface of the "qsdrr" qdisc: Deficit Round Robin with the discard policies of
 * Kantawala and Turner (plain DRR's longest queue drop, TDRR, QSDRR).
 * Shared by the kernel module (sch_qsdrr.c) and the tc plugin (tc/q_qsdrr.c).
 */
#ifndef _UAPI_QSDRR_H
#define _UAPI_QSDRR_H

#include <linux/types.h>
#include "favorlab.h"

enum {
	TCA_QSDRR_UNSPEC,
	TCA_QSDRR_LIMIT,	/* u32: buffer size in packets, shared by all queues (1 to QSDRR_MAX_LIMIT) */
	TCA_QSDRR_BUCKETS,	/* u32: flow hash buckets, the DRR queues (power of two), set at creation only */
	TCA_QSDRR_QUANTUM,	/* u32: DRR quantum in bytes (QSDRR_MIN_QUANTUM to QSDRR_MAX_QUANTUM) */
	TCA_QSDRR_POLICY,	/* u32: enum qsdrr_policy, set at creation only */
	TCA_QSDRR_HALFLIFE,	/* u32: TDRR throughput half-life in microseconds, set at creation only */
	TCA_QSDRR_MEMORY_LIMIT,	/* u32: bytes of skb->truesize queued at most (favorlab.h's bounds) */
	__TCA_QSDRR_MAX
};
#define TCA_QSDRR_MAX (__TCA_QSDRR_MAX - 1)

/* The discard policy: which queue loses its front packet when an arrival finds the buffer full. */
enum qsdrr_policy {
	QSDRR_POLICY_QSDRR,	/* Queue State DRR: keep dropping from Q until Q is the shortest queue */
	QSDRR_POLICY_TDRR,	/* Throughput DRR: the queue of highest averaged throughput */
	QSDRR_POLICY_DRR,	/* plain DRR: the longest queue (McKenney's longest queue drop) */
	__QSDRR_POLICY_MAX
};
#define QSDRR_POLICY_MAX (__QSDRR_POLICY_MAX - 1)

#define QSDRR_MAX_BUCKETS	(1U << 20)
#define QSDRR_MAX_LIMIT		(1U << 20)
#define QSDRR_MIN_QUANTUM	256		/* as fq_codel: smaller only loops more per dequeue */
#define QSDRR_MAX_QUANTUM	(1U << 20)
#define QSDRR_MIN_HALFLIFE	1000		/* us: 1 ms */
#define QSDRR_MAX_HALFLIFE	60000000	/* us: 60 s */
#define QSDRR_DEFAULT_HALFLIFE	1000000		/* us: 1 s (see tc-qsdrr(8)) */

struct tc_qsdrr_xstats {
	__u64	enqueued;	/* arrivals queued (every arrival is queued) */
	__u64	front_drops;	/* packets dropped from the front of the policy's queue for an arrival */
	__u64	drop_own;	/* of front_drops, those from the arrival's own queue */
	__u64	drop_limit;	/* packets dropped by lowering the limit (tc qdisc change) */
	__u64	new_flows;	/* queues that got a packet while empty (joined the DRR round) */
	__u64	turns;		/* DRR turns: a queue at the head of the round got its quantum */
	__u64	q_set;		/* QSDRR: Q was undefined, Q := the longest queue */
	__u64	q_reselect;	/* QSDRR: Q was shorter than every other non-empty queue, Q := the longest */
	__u64	q_kept;		/* QSDRR: dropped from Q as it was */
	__u64	rescales;	/* TDRR: throughputs rescaled to a later epoch (every 16 half-lives) */
	__u32	flows;		/* queues with a packet queued now (the DRR round's length) */
	__u32	pad;		/* 0 (no implicit padding is copied to userspace) */
	__u64	drop_memory;	/* arrivals dropped as over memory_limit (before the algorithm saw them) */
	__u64	memory_usage;	/* bytes of skb->truesize queued now */
};

#endif /* _UAPI_QSDRR_H */
