/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * favorlab.h - what the netlink interfaces of favorlab's qdiscs share: the bounds of their memory_limit
 * option (TCA_<KIND>_MEMORY_LIMIT, u32 bytes of skb->truesize). Included by each qdisc's own header.
 */
#ifndef _UAPI_FAVORLAB_H
#define _UAPI_FAVORLAB_H

/* fq_codel's default: packets of any length and GSO super-packets stay far below it at favorlab's limits */
#define FAVORLAB_DEFAULT_MEMORY_LIMIT	(32U << 20)
/* about one full-sized packet's truesize: a smaller value is more likely a packet count typed as bytes */
#define FAVORLAB_MIN_MEMORY_LIMIT	4096U
/* fq_codel's cap */
#define FAVORLAB_MAX_MEMORY_LIMIT	(1U << 31)

#endif /* _UAPI_FAVORLAB_H */
