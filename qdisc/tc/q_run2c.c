// SPDX-License-Identifier: GPL-2.0
/*
 * q_run2c.c - tc plugin for the "run2c" qdisc (sch_run2c).
 *
 * Loaded by stock iproute2: `TC_LIB_DIR=/usr/local/lib/favorlab/tc tc qdisc add ... run2c ...`
 * dlopens $TC_LIB_DIR/q_run2c.so and looks up run2c_qdisc_util. tc_iproute2.h declares what it
 * uses of tc.
 */
#include <stdlib.h>
#include <string.h>

#include "uapi/run2c.h"
#include "tc_iproute2.h"

#define RUN2C_MAXLEN 1024

static void explain(void)
{
	fprintf(stderr,
		"Usage: ... run2c [ limit PACKETS ] [ threshold PACKETS ] [ mss BYTES ] [ buckets NUMBER ]\n"
		"                 [ memory_limit BYTES ]\n"
		"  limit      queue limit in packets (default: the device's txqueuelen)\n"
		"  threshold  packets of every TCP flow served in the high class (default 20)\n"
		"  mss        bytes per packet of the threshold (default 1448)\n"
		"  buckets    ISN table size, a power of two (default 1024; at creation only)\n"
		"  memory_limit  bytes of packet memory (skb truesize) queued at most, e.g. 32mb (the default)\n");
}

/* "NAME VALUE" with lo <= VALUE <= hi; on error says which option and what it needs */
static int get_ranged(unsigned int *val, int *argc, char ***argv, unsigned int lo, unsigned int hi,
		      const char *name, const char *unit)
{
	if (--*argc == 0 || get_unsigned(val, *++*argv, 0) || *val < lo || *val > hi) {
		fprintf(stderr, "run2c: \"%s\" needs %s from %u to %u\n", name, unit, lo, hi);
		return -1;
	}
	return 0;
}

static int run2c_parse_opt(struct qdisc_util *qu, int argc, char **argv, struct nlmsghdr *n,
			   const char *dev)
{
	unsigned int limit = 0, threshold = 0, mss = 0, buckets = 0, memory_limit = 0;
	struct rtattr *tail;

	(void)qu; (void)dev;
	while (argc > 0) {
		if (strcmp(*argv, "limit") == 0) {
			if (get_ranged(&limit, &argc, &argv, 1, RUN2C_MAX_LIMIT, "limit", "a number of packets"))
				return -1;
		} else if (strcmp(*argv, "threshold") == 0) {
			if (get_ranged(&threshold, &argc, &argv, 1, 65535, "threshold", "a number of packets"))
				return -1;
		} else if (strcmp(*argv, "mss") == 0) {
			if (get_ranged(&mss, &argc, &argv, 1, 65535, "mss", "a number of bytes"))
				return -1;
		} else if (strcmp(*argv, "buckets") == 0) {
			if (get_ranged(&buckets, &argc, &argv, 1, RUN2C_MAX_BUCKETS, "buckets", "a power of two"))
				return -1;
			if (buckets & (buckets - 1)) {
				fprintf(stderr, "run2c: \"buckets\" needs a power of two\n");
				return -1;
			}
		} else if (strcmp(*argv, "memory_limit") == 0) {
			if (favorlab_parse_memory_limit("run2c", --argc ? *++argv : NULL, &memory_limit))
				return -1;
		} else if (strcmp(*argv, "help") == 0) {
			explain();
			return -1;
		} else {
			fprintf(stderr, "run2c: unknown option \"%s\"\n", *argv);
			explain();
			return -1;
		}
		argc--;
		argv++;
	}

	tail = addattr_nest(n, RUN2C_MAXLEN, TCA_OPTIONS | NLA_F_NESTED);
	if (limit)
		addattr_l(n, RUN2C_MAXLEN, TCA_RUN2C_LIMIT, &limit, sizeof(limit));
	if (threshold)
		addattr_l(n, RUN2C_MAXLEN, TCA_RUN2C_THRESHOLD, &threshold, sizeof(threshold));
	if (mss)
		addattr_l(n, RUN2C_MAXLEN, TCA_RUN2C_MSS, &mss, sizeof(mss));
	if (buckets)
		addattr_l(n, RUN2C_MAXLEN, TCA_RUN2C_BUCKETS, &buckets, sizeof(buckets));
	if (memory_limit)
		addattr_l(n, RUN2C_MAXLEN, TCA_RUN2C_MEMORY_LIMIT, &memory_limit, sizeof(memory_limit));
	addattr_nest_end(n, tail);
	return 0;
}

static void print_u32_attr(struct rtattr **tb, int attr, const char *key, const char *fmt)
{
	if (tb[attr] && RTA_PAYLOAD(tb[attr]) >= sizeof(__u32))
		print_color_uint(PRINT_ANY, COLOR_NONE, key, fmt, *(__u32 *)RTA_DATA(tb[attr]));
}

static int run2c_print_opt(struct qdisc_util *qu, FILE *f, struct rtattr *opt)
{
	struct rtattr *tb[TCA_RUN2C_MAX + 1] = {};

	(void)qu; (void)f;
	if (!opt)
		return 0;
	parse_rtattr_flags(tb, TCA_RUN2C_MAX, RTA_DATA(opt), RTA_PAYLOAD(opt), NLA_F_NESTED);
	print_u32_attr(tb, TCA_RUN2C_LIMIT, "limit", "limit %up ");
	print_u32_attr(tb, TCA_RUN2C_THRESHOLD, "threshold", "threshold %up ");
	print_u32_attr(tb, TCA_RUN2C_MSS, "mss", "mss %ub ");
	print_u32_attr(tb, TCA_RUN2C_BUCKETS, "buckets", "buckets %u ");
	favorlab_print_memory_limit(tb[TCA_RUN2C_MEMORY_LIMIT]);
	return 0;
}

static int run2c_print_xstats(struct qdisc_util *qu, FILE *f, struct rtattr *xstats)
{
	struct tc_run2c_xstats st = {};

	(void)qu; (void)f;
	if (!xstats)
		return 0;
	favorlab_copy_xstats(&st, sizeof(st), xstats);
	print_color_u64(PRINT_ANY, COLOR_NONE, "high", "  high %llu", st.high);
	print_color_u64(PRINT_ANY, COLOR_NONE, "low", " low %llu", st.low);
	print_color_u64(PRINT_ANY, COLOR_NONE, "pushouts", " pushouts %llu", st.pushouts);
	print_nl();
	print_color_u64(PRINT_ANY, COLOR_NONE, "drop_high", "  drop_high %llu", st.drop_high);
	print_color_u64(PRINT_ANY, COLOR_NONE, "drop_low", " drop_low %llu", st.drop_low);
	print_color_u64(PRINT_ANY, COLOR_NONE, "drop_limit", " drop_limit %llu", st.drop_limit);
	print_nl();
	print_color_u64(PRINT_ANY, COLOR_NONE, "syns", "  syns %llu", st.syns);
	print_color_u64(PRINT_ANY, COLOR_NONE, "takeovers", " takeovers %llu", st.takeovers);
	print_color_u64(PRINT_ANY, COLOR_NONE, "unknown_flow", " unknown_flow %llu", st.unknown_flow);
	print_color_u64(PRINT_ANY, COLOR_NONE, "no_tcp", " no_tcp %llu", st.no_tcp);
	print_nl();
	print_color_uint(PRINT_ANY, COLOR_NONE, "high_qlen", "  high_qlen %u", st.high_qlen);
	print_color_uint(PRINT_ANY, COLOR_NONE, "low_qlen", " low_qlen %u", st.low_qlen);
	favorlab_print_memory_xstats(st.drop_memory, st.memory_usage);
	return 0;
}

struct qdisc_util run2c_qdisc_util = {
	.id		= "run2c",
	.parse_qopt	= run2c_parse_opt,
	.print_qopt	= run2c_print_opt,
	.print_xstats	= run2c_print_xstats,
};
