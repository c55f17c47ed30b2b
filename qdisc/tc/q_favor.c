// SPDX-License-Identifier: GPL-2.0
/*
 * q_favor.c - tc plugin for the "favor" qdisc (sch_favor).
 *
 * Loaded by stock iproute2: `TC_LIB_DIR=/usr/local/lib/favorlab/tc tc qdisc add ... favor ...`
 * dlopens $TC_LIB_DIR/q_favor.so and looks up favor_qdisc_util. tc_iproute2.h declares what it
 * uses of tc.
 */
#include <stdlib.h>
#include <string.h>

#include "uapi/favor.h"
#include "tc_iproute2.h"

#define FAVOR_MAXLEN 1024

static const char *const flowkey_names[] = {
	[FAVOR_FLOWKEY_5TUPLE]	= "5tuple",
	[FAVOR_FLOWKEY_ADDRS]	= "addrs",
	[FAVOR_FLOWKEY_DST]	= "dst",
	[FAVOR_FLOWKEY_SRC]	= "src",
};

static void explain(void)
{
	fprintf(stderr,
		"Usage: ... favor [ limit PACKETS ] [ nopushout | pushout ]\n"
		"                 [ flowkey { 5tuple | addrs | dst | src } ] [ buckets NUMBER ]\n"
		"                 [ favored_burst PACKETS ] [ memory_limit BYTES ]\n"
		"  limit     queue limit in packets (default: the device's txqueuelen)\n"
		"  nopushout FavourTail: a favored arrival to a full queue is dropped\n"
		"  pushout   FavorQueue (default): it pushes out the last standard packet\n"
		"  flowkey   what identifies a flow (default 5tuple; set at creation only)\n"
		"  buckets   flow hash table size, a power of two (default 1024; at creation only)\n"
		"  favored_burst  at most this many favored packets served while a standard packet\n"
		"            waits; 0 (default) is off, Algorithm 1 as published\n"
		"  memory_limit  bytes of packet memory (skb truesize) queued at most, e.g. 32mb (the default)\n");
}

static int favor_parse_opt(struct qdisc_util *qu, int argc, char **argv, struct nlmsghdr *n,
			   const char *dev)
{
	unsigned int limit = 0, buckets = 0, burst = 0, memory_limit = 0;
	int nopushout = -1, flowkey = -1, burst_set = 0;
	struct rtattr *tail;
	unsigned int i;

	(void)qu; (void)dev;
	while (argc > 0) {
		if (strcmp(*argv, "limit") == 0) {
			if (--argc == 0 || get_unsigned(&limit, *++argv, 0) || limit == 0) {
				fprintf(stderr, "favor: \"limit\" needs a number of packets >= 1\n");
				return -1;
			}
		} else if (strcmp(*argv, "buckets") == 0) {
			if (--argc == 0 || get_unsigned(&buckets, *++argv, 0) || buckets == 0 ||
			    (buckets & (buckets - 1))) {
				fprintf(stderr, "favor: \"buckets\" needs a power of two >= 1\n");
				return -1;
			}
		} else if (strcmp(*argv, "favored_burst") == 0) {
			if (--argc == 0 || get_unsigned(&burst, *++argv, 0)) {
				fprintf(stderr, "favor: \"favored_burst\" needs a number of packets (0: off)\n");
				return -1;
			}
			burst_set = 1;
		} else if (strcmp(*argv, "memory_limit") == 0) {
			if (favorlab_parse_memory_limit("favor", --argc ? *++argv : NULL, &memory_limit))
				return -1;
		} else if (strcmp(*argv, "nopushout") == 0) {
			nopushout = 1;
		} else if (strcmp(*argv, "pushout") == 0) {
			nopushout = 0;
		} else if (strcmp(*argv, "flowkey") == 0) {
			/* a second flowkey would otherwise keep the first value when its word is unknown */
			if (flowkey >= 0) {
				fprintf(stderr, "favor: \"flowkey\" given twice\n");
				return -1;
			}
			if (--argc == 0) {
				fprintf(stderr, "favor: \"flowkey\" needs one of 5tuple, addrs, dst, src\n");
				return -1;
			}
			argv++;
			for (i = 0; i < sizeof(flowkey_names) / sizeof(flowkey_names[0]); i++)
				if (strcmp(*argv, flowkey_names[i]) == 0)
					flowkey = i;
			if (flowkey < 0) {
				fprintf(stderr, "favor: unknown flowkey \"%s\" (use 5tuple, addrs, dst or src)\n",
					*argv);
				return -1;
			}
		} else if (strcmp(*argv, "help") == 0) {
			explain();
			return -1;
		} else {
			fprintf(stderr, "favor: unknown option \"%s\"\n", *argv);
			explain();
			return -1;
		}
		argc--;
		argv++;
	}

	tail = addattr_nest(n, FAVOR_MAXLEN, TCA_OPTIONS | NLA_F_NESTED);
	if (limit)
		addattr_l(n, FAVOR_MAXLEN, TCA_FAVOR_LIMIT, &limit, sizeof(limit));
	if (buckets)
		addattr_l(n, FAVOR_MAXLEN, TCA_FAVOR_BUCKETS, &buckets, sizeof(buckets));
	if (burst_set)
		addattr_l(n, FAVOR_MAXLEN, TCA_FAVOR_FAVORED_BURST, &burst, sizeof(burst));
	if (memory_limit)
		addattr_l(n, FAVOR_MAXLEN, TCA_FAVOR_MEMORY_LIMIT, &memory_limit, sizeof(memory_limit));
	if (nopushout >= 0) {
		__u8 v = nopushout;

		addattr_l(n, FAVOR_MAXLEN, TCA_FAVOR_NOPUSHOUT, &v, sizeof(v));
	}
	if (flowkey >= 0) {
		__u8 v = flowkey;

		addattr_l(n, FAVOR_MAXLEN, TCA_FAVOR_FLOWKEY, &v, sizeof(v));
	}
	addattr_nest_end(n, tail);
	return 0;
}

static int favor_print_opt(struct qdisc_util *qu, FILE *f, struct rtattr *opt)
{
	struct rtattr *tb[TCA_FAVOR_MAX + 1] = {};

	(void)qu; (void)f;
	if (!opt)
		return 0;
	parse_rtattr_flags(tb, TCA_FAVOR_MAX, RTA_DATA(opt), RTA_PAYLOAD(opt), NLA_F_NESTED);
	if (tb[TCA_FAVOR_LIMIT] && RTA_PAYLOAD(tb[TCA_FAVOR_LIMIT]) >= sizeof(__u32))
		print_color_uint(PRINT_ANY, COLOR_NONE, "limit", "limit %up ",
				 *(__u32 *)RTA_DATA(tb[TCA_FAVOR_LIMIT]));
	if (tb[TCA_FAVOR_NOPUSHOUT] && RTA_PAYLOAD(tb[TCA_FAVOR_NOPUSHOUT]) >= 1) {
		bool nopushout = *(__u8 *)RTA_DATA(tb[TCA_FAVOR_NOPUSHOUT]);

		print_color_bool(PRINT_JSON, COLOR_NONE, "nopushout", NULL, nopushout);
		print_color_string(PRINT_FP, COLOR_NONE, NULL, "%s ", nopushout ? "nopushout" : "pushout");
	}
	if (tb[TCA_FAVOR_FLOWKEY] && RTA_PAYLOAD(tb[TCA_FAVOR_FLOWKEY]) >= 1) {
		__u8 k = *(__u8 *)RTA_DATA(tb[TCA_FAVOR_FLOWKEY]);

		print_color_string(PRINT_ANY, COLOR_NONE, "flowkey", "flowkey %s ",
				   k <= FAVOR_FLOWKEY_MAX ? flowkey_names[k] : "unknown");
	}
	if (tb[TCA_FAVOR_BUCKETS] && RTA_PAYLOAD(tb[TCA_FAVOR_BUCKETS]) >= sizeof(__u32))
		print_color_uint(PRINT_ANY, COLOR_NONE, "buckets", "buckets %u ",
				 *(__u32 *)RTA_DATA(tb[TCA_FAVOR_BUCKETS]));
	if (tb[TCA_FAVOR_FAVORED_BURST] && RTA_PAYLOAD(tb[TCA_FAVOR_FAVORED_BURST]) >= sizeof(__u32))
		print_color_uint(PRINT_ANY, COLOR_NONE, "favored_burst", "favored_burst %u ",
				 *(__u32 *)RTA_DATA(tb[TCA_FAVOR_FAVORED_BURST]));
	favorlab_print_memory_limit(tb[TCA_FAVOR_MEMORY_LIMIT]);
	return 0;
}

static int favor_print_xstats(struct qdisc_util *qu, FILE *f, struct rtattr *xstats)
{
	struct tc_favor_xstats st = {};

	(void)qu; (void)f;
	if (!xstats)
		return 0;
	favorlab_copy_xstats(&st, sizeof(st), xstats);
	print_color_u64(PRINT_ANY, COLOR_NONE, "favored", "  favored %llu", st.favored);
	print_color_u64(PRINT_ANY, COLOR_NONE, "standard", " standard %llu", st.standard);
	print_color_u64(PRINT_ANY, COLOR_NONE, "pushouts", " pushouts %llu", st.pushouts);
	print_nl();
	print_color_u64(PRINT_ANY, COLOR_NONE, "drop_favored", "  drop_favored %llu", st.drop_favored);
	print_color_u64(PRINT_ANY, COLOR_NONE, "drop_standard", " drop_standard %llu", st.drop_standard);
	print_color_u64(PRINT_ANY, COLOR_NONE, "drop_limit", " drop_limit %llu", st.drop_limit);
	print_nl();
	print_color_uint(PRINT_ANY, COLOR_NONE, "flows", "  flows %u", st.flows);
	print_color_uint(PRINT_ANY, COLOR_NONE, "favored_qlen", " favored_qlen %u", st.favored_qlen);
	print_color_u64(PRINT_ANY, COLOR_NONE, "demoted", " demoted %llu", st.demoted);
	favorlab_print_memory_xstats(st.drop_memory, st.memory_usage);
	return 0;
}

struct qdisc_util favor_qdisc_util = {
	.id		= "favor",
	.parse_qopt	= favor_parse_opt,
	.print_qopt	= favor_print_opt,
	.print_xstats	= favor_print_xstats,
};
