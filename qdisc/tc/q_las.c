// SPDX-License-Identifier: GPL-2.0
/*
 * q_las.c - tc plugin for the "las" qdisc (sch_las, Least Attained Service).
 *
 * Loaded by stock iproute2: `TC_LIB_DIR=/usr/local/lib/favorlab/tc tc qdisc add ... las ...`
 * dlopens $TC_LIB_DIR/q_las.so and looks up las_qdisc_util. tc_iproute2.h declares what it uses of
 * tc.
 */
#include <stdlib.h>
#include <string.h>

#include "uapi/las.h"
#include "tc_iproute2.h"

#define LAS_MAXLEN 1024

static void explain(void)
{
	fprintf(stderr,
		"Usage: ... las [ limit PACKETS ] [ buckets NUMBER ] [ memory_limit BYTES ]\n"
		"  limit     queue limit in packets (default: the device's txqueuelen)\n"
		"  buckets   flow hash table size, a power of two (default 1024; at creation only)\n"
		"  memory_limit  bytes of packet memory (skb truesize) queued at most, e.g. 32mb (the default)\n");
}

static int las_parse_opt(struct qdisc_util *qu, int argc, char **argv, struct nlmsghdr *n,
			 const char *dev)
{
	unsigned int limit = 0, buckets = 0, memory_limit = 0;
	struct rtattr *tail;

	(void)qu; (void)dev;
	while (argc > 0) {
		if (strcmp(*argv, "limit") == 0) {
			if (--argc == 0 || get_unsigned(&limit, *++argv, 0) || limit == 0) {
				fprintf(stderr, "las: \"limit\" needs a number of packets >= 1\n");
				return -1;
			}
		} else if (strcmp(*argv, "buckets") == 0) {
			if (--argc == 0 || get_unsigned(&buckets, *++argv, 0) || buckets == 0 ||
			    (buckets & (buckets - 1))) {
				fprintf(stderr, "las: \"buckets\" needs a power of two >= 1\n");
				return -1;
			}
		} else if (strcmp(*argv, "memory_limit") == 0) {
			if (favorlab_parse_memory_limit("las", --argc ? *++argv : NULL, &memory_limit))
				return -1;
		} else if (strcmp(*argv, "help") == 0) {
			explain();
			return -1;
		} else {
			fprintf(stderr, "las: unknown option \"%s\"\n", *argv);
			explain();
			return -1;
		}
		argc--;
		argv++;
	}

	tail = addattr_nest(n, LAS_MAXLEN, TCA_OPTIONS | NLA_F_NESTED);
	if (limit)
		addattr_l(n, LAS_MAXLEN, TCA_LAS_LIMIT, &limit, sizeof(limit));
	if (buckets)
		addattr_l(n, LAS_MAXLEN, TCA_LAS_BUCKETS, &buckets, sizeof(buckets));
	if (memory_limit)
		addattr_l(n, LAS_MAXLEN, TCA_LAS_MEMORY_LIMIT, &memory_limit, sizeof(memory_limit));
	addattr_nest_end(n, tail);
	return 0;
}

static int las_print_opt(struct qdisc_util *qu, FILE *f, struct rtattr *opt)
{
	struct rtattr *tb[TCA_LAS_MAX + 1] = {};

	(void)qu; (void)f;
	if (!opt)
		return 0;
	parse_rtattr_flags(tb, TCA_LAS_MAX, RTA_DATA(opt), RTA_PAYLOAD(opt), NLA_F_NESTED);
	if (tb[TCA_LAS_LIMIT] && RTA_PAYLOAD(tb[TCA_LAS_LIMIT]) >= sizeof(__u32))
		print_color_uint(PRINT_ANY, COLOR_NONE, "limit", "limit %up ",
				 *(__u32 *)RTA_DATA(tb[TCA_LAS_LIMIT]));
	if (tb[TCA_LAS_BUCKETS] && RTA_PAYLOAD(tb[TCA_LAS_BUCKETS]) >= sizeof(__u32))
		print_color_uint(PRINT_ANY, COLOR_NONE, "buckets", "buckets %u ",
				 *(__u32 *)RTA_DATA(tb[TCA_LAS_BUCKETS]));
	favorlab_print_memory_limit(tb[TCA_LAS_MEMORY_LIMIT]);
	return 0;
}

static int las_print_xstats(struct qdisc_util *qu, FILE *f, struct rtattr *xstats)
{
	struct tc_las_xstats st = {};

	(void)qu; (void)f;
	if (!xstats)
		return 0;
	favorlab_copy_xstats(&st, sizeof(st), xstats);
	print_color_u64(PRINT_ANY, COLOR_NONE, "enqueued", "  enqueued %llu", st.enqueued);
	print_color_u64(PRINT_ANY, COLOR_NONE, "pushouts", " pushouts %llu", st.pushouts);
	print_color_u64(PRINT_ANY, COLOR_NONE, "drop_arrival", " drop_arrival %llu", st.drop_arrival);
	print_color_u64(PRINT_ANY, COLOR_NONE, "drop_limit", " drop_limit %llu", st.drop_limit);
	print_nl();
	print_color_u64(PRINT_ANY, COLOR_NONE, "flow_resets", "  flow_resets %llu", st.flow_resets);
	print_color_uint(PRINT_ANY, COLOR_NONE, "flows", " flows %u", st.flows);
	favorlab_print_memory_xstats(st.drop_memory, st.memory_usage);
	return 0;
}

struct qdisc_util las_qdisc_util = {
	.id		= "las",
	.parse_qopt	= las_parse_opt,
	.print_qopt	= las_print_opt,
	.print_xstats	= las_print_xstats,
};
