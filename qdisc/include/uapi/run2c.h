/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * run2c.h - netlink interface of the "run2c" qdisc (RuN2C). Shared by the kernel module
 * (sch_run2c.c) and the tc plugin (tc/q_run2c.c).
 */
#ifndef _UAPI_RUN2C_H
#define _UAPI_RUN2C_H

#include <linux/types.h>
#include "favorlab.h"

enum {
	TCA_RUN2C_UNSPEC,
	TCA_RUN2C_LIMIT,	/* u32: queue limit in packets, 1 to RUN2C_MAX_LIMIT */
	TCA_RUN2C_THRESHOLD,	/* u32: packets of a flow in the high class, 1 to 65535 */
	TCA_RUN2C_MSS,		/* u32: bytes per packet of the threshold, 1 to 65535 */
	TCA_RUN2C_BUCKETS,	/* u32: ISN table buckets (power of two), set at creation only */
	TCA_RUN2C_MEMORY_LIMIT,	/* u32: bytes of skb->truesize queued at most (favorlab.h's bounds) */
	__TCA_RUN2C_MAX
};
#define TCA_RUN2C_MAX (__TCA_RUN2C_MAX - 1)

#define RUN2C_MAX_LIMIT		(1U << 20)
#define RUN2C_MAX_BUCKETS	(1U << 20)
#define RUN2C_DEFAULT_THRESHOLD	20	/* the FavorQueue paper's setting (Section 5.1) */
#define RUN2C_DEFAULT_MSS	1448	/* a 1500-byte MTU with TCP timestamps */

struct tc_run2c_xstats {
	__u64	high;		/* high-class enqueues */
	__u64	low;		/* low-class enqueues */
	__u64	pushouts;	/* low packets pushed out by high arrivals */
	__u64	drop_high;	/* high arrivals dropped (queue full of high packets) */
	__u64	drop_low;	/* low arrivals dropped (queue full) */
	__u64	drop_limit;	/* packets dropped by lowering the limit (tc qdisc change) */
	__u64	syns;		/* SYNs and SYN-ACKs seen (ISNs learnt) */
	__u64	unknown_flow;	/* TCP packets of flows whose SYN this queue did not see: low */
	__u64	no_tcp;		/* packets without a TCP header: low */
	__u32	high_qlen;	/* high packets queued now */
	__u32	low_qlen;	/* low packets queued now */
	__u64	drop_memory;	/* arrivals dropped as over memory_limit (before the algorithm saw them) */
	__u64	memory_usage;	/* bytes of skb->truesize queued now */
	__u64	takeovers;	/* SYNs that took a bucket holding another flow's ISN */
};

#endif /* _UAPI_RUN2C_H */
