// SPDX-License-Identifier: GPL-2.0
/*
 * q_qsdrr.c - tc plugin for the "qsdrr" qdisc (sch_qsdrr: DRR with the qsdrr, tdrr or drr discard
 * policy of Kantawala and Turner).
 *
 * Loaded by stock iproute2: `TC_LIB_DIR=/usr/local/lib/favorlab/tc tc qdisc add ... qsdrr ...`
 * dlopens $TC_LIB_DIR/q_qsdrr.so and looks up qsdrr_qdisc_util. tc_iproute2.h declares what it uses
 * of tc.
 */
#include <stdlib.h>
#include <string.h>

#include "uapi/qsdrr.h"
#include "tc_iproute2.h"

#define QSDRR_MAXLEN 1024

static const char *const policy_names[] = {
	[QSDRR_POLICY_QSDRR] = "qsdrr",
	[QSDRR_POLICY_TDRR] = "tdrr",
	[QSDRR_POLICY_DRR] = "drr",
};

static void explain(void)
{
	fprintf(stderr,
		"Usage: ... qsdrr [ limit PACKETS ] [ buckets NUMBER ] [ quantum BYTES ]\n"
		"                 [ policy { qsdrr | tdrr | drr } ] [ tdrr_halflife TIME ] [ memory_limit BYTES ]\n"
		"  limit          buffer size in packets, shared by all queues (default: the device's txqueuelen)\n"
		"  buckets        flow queues, a power of two (default 1024; at creation only)\n"
		"  quantum        DRR quantum, 256 to 1048576 bytes (default: the device's MTU)\n"
		"  policy         which queue loses its front packet when the buffer is full (default qsdrr;\n"
		"                 at creation only)\n"
		"  tdrr_halflife  half-life of TDRR's throughput average, 1ms to 60s, e.g. 500ms\n"
		"                 (default 1s; at creation only)\n"
		"  memory_limit  bytes of packet memory (skb truesize) queued at most, e.g. 32mb (the default)\n");
}

/* TIME: a number with s, ms or us (no unit: us), into microseconds; -1 if invalid or out of range */
static long parse_halflife(const char *arg)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || v <= 0)
		return -1;
	if (strcmp(end, "s") == 0 || strcmp(end, "sec") == 0)
		v *= 1e6;
	else if (strcmp(end, "ms") == 0 || strcmp(end, "msec") == 0)
		v *= 1e3;
	else if (*end && strcmp(end, "us") != 0 && strcmp(end, "usec") != 0)
		return -1;
	if (v < QSDRR_MIN_HALFLIFE || v > QSDRR_MAX_HALFLIFE)
		return -1;
	return (long)(v + 0.5);
}

/* The options that take a count: tc name, attribute, range, power of two only, what it counts. */
static const struct count_option {
	const char *name;
	int attr;
	unsigned int min, max;
	bool pow2;
	const char *what;
} counts[] = {
	{ "limit", TCA_QSDRR_LIMIT, 1, QSDRR_MAX_LIMIT, false, "a number of packets" },
	{ "buckets", TCA_QSDRR_BUCKETS, 1, QSDRR_MAX_BUCKETS, true, "a power of two" },
	{ "quantum", TCA_QSDRR_QUANTUM, QSDRR_MIN_QUANTUM, QSDRR_MAX_QUANTUM, false, "bytes" },
};

/* VALUE of option @name into *out; 0, or -1 after saying what the option needs */
static int parse_value(const char *name, const char *v, unsigned int *out)
{
	unsigned int i;
	long us;

	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		const struct count_option *c = &counts[i];

		if (strcmp(name, c->name) != 0)
			continue;
		if (get_unsigned(out, v, 0) || *out < c->min || *out > c->max ||
		    (c->pow2 && (*out & (*out - 1)))) {
			fprintf(stderr, "qsdrr: \"%s\" needs %s, %u to %u\n", name, c->what, c->min, c->max);
			return -1;
		}
		return 0;
	}
	if (strcmp(name, "policy") == 0) {
		for (*out = 0; *out <= QSDRR_POLICY_MAX; (*out)++)
			if (strcmp(v, policy_names[*out]) == 0)
				return 0;
		fprintf(stderr, "qsdrr: \"policy\" is qsdrr, tdrr or drr, not \"%s\"\n", v);
		return -1;
	}
	if (strcmp(name, "memory_limit") == 0)
		return favorlab_parse_memory_limit("qsdrr", v, out);
	us = parse_halflife(v);
	if (us < 0) {
		fprintf(stderr, "qsdrr: \"tdrr_halflife\" needs a time from 1ms to 60s, e.g. 500ms\n");
		return -1;
	}
	*out = (unsigned int)us;
	return 0;
}

/* the attribute of option @name, or 0 for an unknown option */
static int option_attr(const char *name)
{
	unsigned int i;

	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		if (strcmp(name, counts[i].name) == 0)
			return counts[i].attr;
	if (strcmp(name, "policy") == 0)
		return TCA_QSDRR_POLICY;
	if (strcmp(name, "tdrr_halflife") == 0)
		return TCA_QSDRR_HALFLIFE;
	if (strcmp(name, "memory_limit") == 0)
		return TCA_QSDRR_MEMORY_LIMIT;
	return 0;
}

static int qsdrr_parse_opt(struct qdisc_util *qu, int argc, char **argv, struct nlmsghdr *n,
			   const char *dev)
{
	unsigned int val[TCA_QSDRR_MAX + 1] = {};
	bool seen[TCA_QSDRR_MAX + 1] = {};
	struct rtattr *tail;
	int attr;

	(void)qu; (void)dev;
	for (; argc > 0; argc--, argv++) {
		if (strcmp(*argv, "help") == 0) {
			explain();
			return -1;
		}
		attr = option_attr(*argv);
		if (!attr) {
			fprintf(stderr, "qsdrr: unknown option \"%s\"\n", *argv);
			explain();
			return -1;
		}
		if (seen[attr]) {
			fprintf(stderr, "qsdrr: \"%s\" is given twice: keep one\n", *argv);
			return -1;
		}
		if (argc == 1) {
			fprintf(stderr, "qsdrr: \"%s\" needs a value (see \"tc qdisc add qsdrr help\")\n", *argv);
			return -1;
		}
		if (parse_value(argv[0], argv[1], &val[attr]))
			return -1;
		seen[attr] = true;
		argc--;
		argv++;
	}

	tail = addattr_nest(n, QSDRR_MAXLEN, TCA_OPTIONS | NLA_F_NESTED);
	for (attr = 1; attr <= TCA_QSDRR_MAX; attr++)
		if (seen[attr])
			addattr_l(n, QSDRR_MAXLEN, attr, &val[attr], sizeof(val[attr]));
	addattr_nest_end(n, tail);
	return 0;
}

static int get_u32_attr(struct rtattr *tb[], int type, __u32 *v)
{
	if (!tb[type] || RTA_PAYLOAD(tb[type]) < sizeof(__u32))
		return 0;
	*v = *(__u32 *)RTA_DATA(tb[type]);
	return 1;
}

static int qsdrr_print_opt(struct qdisc_util *qu, FILE *f, struct rtattr *opt)
{
	struct rtattr *tb[TCA_QSDRR_MAX + 1] = {};
	__u32 v;

	(void)qu; (void)f;
	if (!opt)
		return 0;
	parse_rtattr_flags(tb, TCA_QSDRR_MAX, RTA_DATA(opt), RTA_PAYLOAD(opt), NLA_F_NESTED);
	if (get_u32_attr(tb, TCA_QSDRR_POLICY, &v))
		print_color_string(PRINT_ANY, COLOR_NONE, "policy", "policy %s ",
				   v <= QSDRR_POLICY_MAX ? policy_names[v] : "unknown");
	if (get_u32_attr(tb, TCA_QSDRR_LIMIT, &v))
		print_color_uint(PRINT_ANY, COLOR_NONE, "limit", "limit %up ", v);
	if (get_u32_attr(tb, TCA_QSDRR_BUCKETS, &v))
		print_color_uint(PRINT_ANY, COLOR_NONE, "buckets", "buckets %u ", v);
	if (get_u32_attr(tb, TCA_QSDRR_QUANTUM, &v))
		print_color_uint(PRINT_ANY, COLOR_NONE, "quantum", "quantum %u ", v);
	if (get_u32_attr(tb, TCA_QSDRR_HALFLIFE, &v))
		print_color_uint(PRINT_ANY, COLOR_NONE, "tdrr_halflife_us", "tdrr_halflife %uus ", v);
	favorlab_print_memory_limit(tb[TCA_QSDRR_MEMORY_LIMIT]);
	return 0;
}

static int qsdrr_print_xstats(struct qdisc_util *qu, FILE *f, struct rtattr *xstats)
{
	struct tc_qsdrr_xstats st = {};

	(void)qu; (void)f;
	if (!xstats)
		return 0;
	favorlab_copy_xstats(&st, sizeof(st), xstats);
	print_color_u64(PRINT_ANY, COLOR_NONE, "enqueued", "  enqueued %llu", st.enqueued);
	print_color_u64(PRINT_ANY, COLOR_NONE, "front_drops", " front_drops %llu", st.front_drops);
	print_color_u64(PRINT_ANY, COLOR_NONE, "drop_own", " drop_own %llu", st.drop_own);
	print_color_u64(PRINT_ANY, COLOR_NONE, "drop_limit", " drop_limit %llu", st.drop_limit);
	print_nl();
	print_color_u64(PRINT_ANY, COLOR_NONE, "new_flows", "  new_flows %llu", st.new_flows);
	print_color_uint(PRINT_ANY, COLOR_NONE, "flows", " flows %u", st.flows);
	print_color_u64(PRINT_ANY, COLOR_NONE, "turns", " turns %llu", st.turns);
	print_nl();
	print_color_u64(PRINT_ANY, COLOR_NONE, "q_set", "  q_set %llu", st.q_set);
	print_color_u64(PRINT_ANY, COLOR_NONE, "q_reselect", " q_reselect %llu", st.q_reselect);
	print_color_u64(PRINT_ANY, COLOR_NONE, "q_kept", " q_kept %llu", st.q_kept);
	print_color_u64(PRINT_ANY, COLOR_NONE, "rescales", " rescales %llu", st.rescales);
	favorlab_print_memory_xstats(st.drop_memory, st.memory_usage);
	return 0;
}

struct qdisc_util qsdrr_qdisc_util = {
	.id		= "qsdrr",
	.parse_qopt	= qsdrr_parse_opt,
	.print_qopt	= qsdrr_print_opt,
	.print_xstats	= qsdrr_print_xstats,
};
