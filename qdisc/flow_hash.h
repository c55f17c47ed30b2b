/* SPDX-License-Identifier: GPL-2.0 */
/*
 * flow_hash.h - how favorlab's qdiscs (sch_favor, sch_las, sch_run2c) key and hash a packet's flow.
 * Kernel only; the userspace harnesses take the bucket (and tag) as given.
 */
#ifndef _FAVORLAB_FLOW_HASH_H
#define _FAVORLAB_FLOW_HASH_H

#include <linux/siphash.h>
#include <linux/string.h>
#include <net/flow_dissector.h>

#include "include/uapi/favor.h"

/*
 * The flow key of a packet. The flow dissector (as fq_codel's hash uses) handles IPv4, IPv6,
 * tunnels and non-IP. Not skb->hash: a TCP socket's hash changes on retransmission timeout
 * (sk_rethink_txhash), which would make a flow look new and let it overtake itself.
 * IPv4/IPv6 fragments: no ports (flags 0), so all fragments of a datagram share one flow.
 * Non-IP (ARP...): no addresses or ports; the ethertype alone is the key.
 */
static inline void favorlab_dissect(const struct sk_buff *skb, struct flow_keys *keys)
{
	skb_flow_dissect_flow_keys(skb, keys, 0);
}

/*
 * 32-bit hash of the flow key @flowkey (enum favor_flowkey) selects, keyed with the qdisc's own
 * @key (get_random_bytes at init). SipHash, as sch_sfq and the flow dissector key theirs: jhash's
 * 32-bit seed can be recovered from the collisions an outsider observes, and then a sender can
 * choose 5-tuples that all land in one bucket.
 */
static inline u32 favorlab_flow_hash(const struct flow_keys *k, u8 flowkey, const siphash_key_t *key)
{
	/* words: src address (4), dst address (4), ports, ethertype + IP protocol; 8-byte aligned
	 * for siphash's word-at-a-time path
	 */
	u32 w[10] __aligned(8) = {};
	bool src = flowkey != FAVOR_FLOWKEY_DST;
	bool dst = flowkey != FAVOR_FLOWKEY_SRC;

	switch (k->control.addr_type) {
	case FLOW_DISSECTOR_KEY_IPV4_ADDRS:
		if (src)
			w[0] = (__force u32)k->addrs.v4addrs.src;
		if (dst)
			w[4] = (__force u32)k->addrs.v4addrs.dst;
		break;
	case FLOW_DISSECTOR_KEY_IPV6_ADDRS:
		if (src)
			memcpy(&w[0], &k->addrs.v6addrs.src, 16);
		if (dst)
			memcpy(&w[4], &k->addrs.v6addrs.dst, 16);
		break;
	}
	if (flowkey == FAVOR_FLOWKEY_5TUPLE) {
		w[8] = (__force u32)k->ports.ports;
		w[9] = k->basic.ip_proto;
	}
	w[9] |= (u32)(__force u16)k->basic.n_proto << 16;
	return (u32)siphash(w, sizeof(w), key);
}

#endif /* _FAVORLAB_FLOW_HASH_H */
