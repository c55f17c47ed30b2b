/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoint favor:favor_enqueue, one event per enqueue verdict (a push-out emits the victim's
 * pushout_victim event, then the arrival's favored event). Read by tools/favor_trace.py.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM favor

#if !defined(_FAVOR_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _FAVOR_TRACE_H

#include <linux/tracepoint.h>
#include <linux/netdevice.h>
#include <net/flow_dissector.h>
#include "include/uapi/favor.h"

#ifndef _FAVOR_TRACE_HELPERS
#define _FAVOR_TRACE_HELPERS
#define FAVOR_ADDRSTRLEN 40	/* INET6_ADDRSTRLEN rounded up */

/* Address as text ("" for non-IP). Runs only while the event is enabled. */
static inline void favor_trace_addr(char *buf, const struct flow_keys *k, bool src)
{
	switch (k->control.addr_type) {
	case FLOW_DISSECTOR_KEY_IPV4_ADDRS:
		snprintf(buf, FAVOR_ADDRSTRLEN, "%pI4",
			 src ? &k->addrs.v4addrs.src : &k->addrs.v4addrs.dst);
		break;
	case FLOW_DISSECTOR_KEY_IPV6_ADDRS:
		snprintf(buf, FAVOR_ADDRSTRLEN, "%pI6c",
			 src ? &k->addrs.v6addrs.src : &k->addrs.v6addrs.dst);
		break;
	default:
		buf[0] = '\0';
	}
}
#endif

/* so that userspace parsers of the format file (perf, trace-cmd) can resolve the names */
TRACE_DEFINE_ENUM(FAVOR_VERDICT_FAVORED);
TRACE_DEFINE_ENUM(FAVOR_VERDICT_STANDARD);
TRACE_DEFINE_ENUM(FAVOR_VERDICT_PUSHOUT_VICTIM);
TRACE_DEFINE_ENUM(FAVOR_VERDICT_DROP_FAVORED);
TRACE_DEFINE_ENUM(FAVOR_VERDICT_DROP_STANDARD);

TRACE_EVENT(favor_enqueue,

	TP_PROTO(const struct net_device *dev, const struct flow_keys *keys, u8 verdict, u32 qlen),

	TP_ARGS(dev, keys, verdict, qlen),

	TP_STRUCT__entry(
		__array(char, dev, IFNAMSIZ)
		__array(char, src, FAVOR_ADDRSTRLEN)
		__array(char, dst, FAVOR_ADDRSTRLEN)
		__field(u16, sport)
		__field(u16, dport)
		__field(u8, proto)
		__field(u8, verdict)
		__field(u32, qlen)
	),

	TP_fast_assign(
		memcpy(__entry->dev, dev->name, IFNAMSIZ);
		favor_trace_addr(__entry->src, keys, true);
		favor_trace_addr(__entry->dst, keys, false);
		__entry->sport = ntohs(keys->ports.src);
		__entry->dport = ntohs(keys->ports.dst);
		__entry->proto = keys->basic.ip_proto;
		__entry->verdict = verdict;
		__entry->qlen = qlen;
	),

	TP_printk("dev=%s verdict=%s src=%s dst=%s sport=%u dport=%u proto=%u qlen=%u",
		  __entry->dev,
		  __print_symbolic(__entry->verdict,
				   { FAVOR_VERDICT_FAVORED, "favored" },
				   { FAVOR_VERDICT_STANDARD, "standard" },
				   { FAVOR_VERDICT_PUSHOUT_VICTIM, "pushout_victim" },
				   { FAVOR_VERDICT_DROP_FAVORED, "drop_favored" },
				   { FAVOR_VERDICT_DROP_STANDARD, "drop_standard" }),
		  __entry->src, __entry->dst, __entry->sport, __entry->dport,
		  __entry->proto, __entry->qlen)
);

#endif /* _FAVOR_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE favor_trace
#include <trace/define_trace.h>
