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
		"                 [ policy { qsdrr | tdrr | drr } ] [ tdrr_halflife TIME ]\n"
		"  limit          buffer size in packets, shared by all queues (default: the device's txqueuelen)\n"
		"  buckets        flow queues, a power of two (default 1024; at creation only)\n"
		"  quantum        DRR quantum, 256 to 1048576 bytes (default: the device's MTU)\n"
		"  policy         which queue loses its front packet when the buffer is full (default qsdrr;\n"
		"                 at creation only)\n"
		"  tdrr_halflife  half-life of TDRR's throughput average, 1ms to 60s, e.g. 500ms\n"
		"                 (default 1s; at creation only)\n");
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

/* The value after option *argv, once; prints why not and returns NULL. */
static const char *option_value(int *argc, char ***argv, unsigned int *seen, unsigned int bit)
{
	const char *name = **argv;

	if (*seen & bit) {
		fprintf(stderr, "qsdrr: \"%s\" is given twice: keep one\n", name);
		return NULL;
	}
	*seen |= bit;
	if (--*argc == 0) {
		fprintf(stderr, "qsdrr: \"%s\" needs a value (see \"tc qdisc add qsdrr help\")\n", name);
		return NULL;
	}
	return *++*argv;
}

static int qsdrr_parse_opt(struct qdisc_util *qu, int argc, char **argv, struct nlmsghdr *n,
			   const char *dev)
{
	unsigned int limit = 0, buckets = 0, quantum = 0, policy = 0, halflife = 0, seen = 0;
	struct rtattr *tail;
	const char *v;
	long us;

	(void)qu; (void)dev;
	while (argc > 0) {
		if (strcmp(*argv, "limit") == 0) {
			if (!(v = option_value(&argc, &argv, &seen, 1)))
				return -1;
			if (get_unsigned(&limit, v, 0) || limit == 0 || limit > QSDRR_MAX_LIMIT) {
				fprintf(stderr, "qsdrr: \"limit\" needs a number of packets, 1 to %u\n",
					QSDRR_MAX_LIMIT);
				return -1;
			}
		} else if (strcmp(*argv, "buckets") == 0) {
			if (!(v = option_value(&argc, &argv, &seen, 2)))
				return -1;
			if (get_unsigned(&buckets, v, 0) || buckets == 0 || buckets > QSDRR_MAX_BUCKETS ||
			    (buckets & (buckets - 1))) {
				fprintf(stderr, "qsdrr: \"buckets\" needs a power of two, 1 to %u\n",
					QSDRR_MAX_BUCKETS);
				return -1;
			}
		} else if (strcmp(*argv, "quantum") == 0) {
			if (!(v = option_value(&argc, &argv, &seen, 4)))
				return -1;
			if (get_unsigned(&quantum, v, 0) || quantum < QSDRR_MIN_QUANTUM ||
			    quantum > QSDRR_MAX_QUANTUM) {
				fprintf(stderr, "qsdrr: \"quantum\" needs bytes, %u to %u\n",
					QSDRR_MIN_QUANTUM, QSDRR_MAX_QUANTUM);
				return -1;
			}
		} else if (strcmp(*argv, "policy") == 0) {
			if (!(v = option_value(&argc, &argv, &seen, 8)))
				return -1;
			for (policy = 0; policy <= QSDRR_POLICY_MAX; policy++)
				if (strcmp(v, policy_names[policy]) == 0)
					break;
			if (policy > QSDRR_POLICY_MAX) {
				fprintf(stderr, "qsdrr: \"policy\" is qsdrr, tdrr or drr, not \"%s\"\n", v);
				return -1;
			}
		} else if (strcmp(*argv, "tdrr_halflife") == 0) {
			if (!(v = option_value(&argc, &argv, &seen, 16)))
				return -1;
			us = parse_halflife(v);
			if (us < 0) {
				fprintf(stderr, "qsdrr: \"tdrr_halflife\" needs a time from 1ms to 60s, e.g. 500ms\n");
				return -1;
			}
			halflife = (unsigned int)us;
		} else if (strcmp(*argv, "help") == 0) {
			explain();
			return -1;
		} else {
			fprintf(stderr, "qsdrr: unknown option \"%s\"\n", *argv);
			explain();
			return -1;
		}
		argc--;
		argv++;
	}

	tail = addattr_nest(n, QSDRR_MAXLEN, TCA_OPTIONS);
	if (seen & 1)
		addattr_l(n, QSDRR_MAXLEN, TCA_QSDRR_LIMIT, &limit, sizeof(limit));
	if (seen & 2)
		addattr_l(n, QSDRR_MAXLEN, TCA_QSDRR_BUCKETS, &buckets, sizeof(buckets));
	if (seen & 4)
		addattr_l(n, QSDRR_MAXLEN, TCA_QSDRR_QUANTUM, &quantum, sizeof(quantum));
	if (seen & 8)
		addattr_l(n, QSDRR_MAXLEN, TCA_QSDRR_POLICY, &policy, sizeof(policy));
	if (seen & 16)
		addattr_l(n, QSDRR_MAXLEN, TCA_QSDRR_HALFLIFE, &halflife, sizeof(halflife));
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
	return 0;
}

static int qsdrr_print_xstats(struct qdisc_util *qu, FILE *f, struct rtattr *xstats)
{
	struct tc_qsdrr_xstats st = {};

	(void)qu; (void)f;
	if (!xstats)
		return 0;
	/* an older module may send a shorter struct: missing counters read as 0 */
	memcpy(&st, RTA_DATA(xstats),
	       RTA_PAYLOAD(xstats) < sizeof(st) ? RTA_PAYLOAD(xstats) : sizeof(st));
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
	return 0;
}

struct qdisc_util qsdrr_qdisc_util = {
	.id		= "qsdrr",
	.parse_qopt	= qsdrr_parse_opt,
	.print_qopt	= qsdrr_print_opt,
	.print_xstats	= qsdrr_print_xstats,
};
