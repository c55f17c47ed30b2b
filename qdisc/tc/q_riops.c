// SPDX-License-Identifier: GPL-2.0
/*
 * q_riops.c - tc plugin for the "riops" qdisc (sch_riops, RIO-PS: RIO with Preferential treatment to
 * Short flows).
 *
 * Loaded by stock iproute2: `TC_LIB_DIR=/usr/local/lib/favorlab/tc tc qdisc add ... riops ...`
 * dlopens $TC_LIB_DIR/q_riops.so and looks up riops_qdisc_util. tc_iproute2.h declares most of what
 * it uses of tc; the time, rate and float helpers below are exported by tc too (iproute2 6.1 on).
 */
#include <stdlib.h>
#include <string.h>

#include "uapi/riops.h"
#include "tc_iproute2.h"

extern int get_time(unsigned int *time, const char *str);	/* microseconds */
extern int get_rate64(__u64 *rate, const char *str);		/* bytes per second */
extern void print_color_float(enum output_type t, enum color_attr c, const char *key,
			      const char *fmt, double value);

#define RIOPS_MAXLEN 1024

static void explain(void)
{
	fprintf(stderr,
		"Usage: ... riops [ limit PACKETS ] [ buckets NUMBER ] [ lt PACKETS ] [ fixed | adaptive ]\n"
		"                 [ slr NUMBER ] [ tu TIME ] [ tc TIME ] [ ecn | noecn ] [ bandwidth RATE ]\n"
		"                 [ smin F ] [ smax F ] [ spmax F ] [ lmin F ] [ lmax F ] [ lpmax F ]\n"
		"                 [ memory_limit BYTES ]\n"
		"  limit     the buffer B in packets (default: the device's txqueuelen)\n"
		"  buckets   flow table size, a power of two to 65536 (default 1024; at creation only)\n"
		"  lt        L_t: a flow's first lt packets are Short (default 20)\n"
		"  fixed     L_t stays at lt; adaptive (default): L_t moves every tc toward slr\n"
		"  slr       target ratio of active short to long flows (default 3)\n"
		"  tu        a flow unseen this long leaves the flow table (default 1s)\n"
		"  tc        the L_t controller's period, at least 1ms (default 10s)\n"
		"  ecn       mark ECT packets CE instead of an early drop (default); noecn: drop\n"
		"  bandwidth the link rate, for the averages' decay when idle (default 10Mbit)\n"
		"  smin/smax/spmax, lmin/lmax/lpmax  Short and Long RED: min_th and max_th as fractions\n"
		"            of limit, P_max (default 0.15 0.35 0.05, 0.15 0.5 0.1)\n"
		"  memory_limit  bytes of packet memory (skb truesize) queued at most, e.g. 32mb (the default)\n");
}

/* options given once each: their bit in a mask */
enum { O_LIMIT, O_BUCKETS, O_LT, O_FIXED, O_SLR, O_TU, O_TC, O_ECN, O_BW, O_RED };

static const char *const red_names[2][3] = { { "smin", "smax", "spmax" }, { "lmin", "lmax", "lpmax" } };
static const int red_attrs[2][3] = {
	{ TCA_RIOPS_SMIN, TCA_RIOPS_SMAX, TCA_RIOPS_SPMAX },
	{ TCA_RIOPS_LMIN, TCA_RIOPS_LMAX, TCA_RIOPS_LPMAX },
};

/* a fraction 0..1 (0 excluded for a P_max) in parts per million */
static int get_ppm(__u32 *ppm, const char *arg, int pmax)
{
	char *end;
	double f = strtod(arg, &end);

	if (end == arg || *end || !(f >= 0 && f <= 1) || (pmax && f * RIOPS_PPM < 0.5))
		return -1;
	*ppm = (__u32)(f * RIOPS_PPM + 0.5);
	return 0;
}

static int riops_parse_opt(struct qdisc_util *qu, int argc, char **argv, struct nlmsghdr *n,
			   const char *dev)
{
	unsigned int limit = 0, buckets = 0, lt = 0, slr = 0, tu = 0, tc = 0, seen = 0, memory_limit = 0;
	__u32 red[2][3];
	__u8 fixed = 0, ecn = 0;
	__u64 bw = 0;
	struct rtattr *tail;
	int i, j;

	(void)qu; (void)dev;
	for (; argc > 0; argc--, argv++) {
		const char *o = *argv;
		int bit = -1, bad = 0;

		if (strcmp(o, "help") == 0) {
			explain();
			return -1;
		}
		if (strcmp(o, "memory_limit") == 0) {
			if (memory_limit) {
				fprintf(stderr, "riops: \"memory_limit\" given twice: keep one\n");
				return -1;
			}
			if (favorlab_parse_memory_limit("riops", argc > 1 ? argv[1] : NULL, &memory_limit))
				return -1;
			argc--;
			argv++;
			continue;
		}
		if (strcmp(o, "fixed") == 0 || strcmp(o, "adaptive") == 0) {
			bit = O_FIXED;
			fixed = o[0] == 'f';
		} else if (strcmp(o, "ecn") == 0 || strcmp(o, "noecn") == 0) {
			bit = O_ECN;
			ecn = o[0] == 'e';
		} else {
			for (i = 0; i < 2; i++)
				for (j = 0; j < 3; j++)
					if (strcmp(o, red_names[i][j]) == 0)
						bit = O_RED + 3 * i + j;
			if (strcmp(o, "limit") == 0)
				bit = O_LIMIT;
			else if (strcmp(o, "buckets") == 0)
				bit = O_BUCKETS;
			else if (strcmp(o, "lt") == 0)
				bit = O_LT;
			else if (strcmp(o, "slr") == 0)
				bit = O_SLR;
			else if (strcmp(o, "tu") == 0)
				bit = O_TU;
			else if (strcmp(o, "tc") == 0)
				bit = O_TC;
			else if (strcmp(o, "bandwidth") == 0)
				bit = O_BW;
			if (bit < 0) {
				fprintf(stderr, "riops: unknown option \"%s\"\n", o);
				explain();
				return -1;
			}
			if (argc < 2) {
				fprintf(stderr, "riops: \"%s\" needs a value (see: tc qdisc add riops help)\n", o);
				return -1;
			}
			argc--;
			argv++;
		}
		if (seen & (1u << bit)) {
			fprintf(stderr, "riops: \"%s\" given twice: keep one\n", o);
			return -1;
		}
		seen |= 1u << bit;
		switch (bit) {
		case O_LIMIT:
			bad = get_unsigned(&limit, *argv, 0) || limit < 1 || limit > RIOPS_MAX_LIMIT;
			break;
		case O_BUCKETS:
			bad = get_unsigned(&buckets, *argv, 0) || buckets < 1 ||
			      buckets > RIOPS_MAX_BUCKETS || (buckets & (buckets - 1));
			break;
		case O_LT:
			bad = get_unsigned(&lt, *argv, 0) || lt < 1 || lt > RIOPS_MAX_LT;
			break;
		case O_SLR:
			bad = get_unsigned(&slr, *argv, 0) || slr < 1 || slr > RIOPS_MAX_SLR;
			break;
		case O_TU:
			bad = get_time(&tu, *argv) || tu < 1;
			break;
		case O_TC:
			bad = get_time(&tc, *argv) || tc < 1000;
			break;
		case O_BW:
			bad = get_rate64(&bw, *argv) || bw < 1000;
			break;
		case O_FIXED:
		case O_ECN:
			break;
		default:
			i = (bit - O_RED) / 3;
			j = (bit - O_RED) % 3;
			bad = get_ppm(&red[i][j], *argv, j == 2);
		}
		if (bad) {
			static const char *const need[] = {
				"a number of packets from 1 to 1048576", "a power of two from 1 to 65536",
				"a number of packets from 1 to 65535", "", "a number from 1 to 1000",
				"a time of at least 1us (e.g. 1s, 500ms)", "a time of at least 1ms (e.g. 10s)",
				"", "a rate of at least 8kbit (e.g. 100mbit)",
			};

			fprintf(stderr, "riops: \"%s\" needs %s\n", o, bit < O_RED ? need[bit] :
				(bit - O_RED) % 3 == 2 ? "a probability above 0, at most 1 (e.g. 0.05)" :
				"a fraction of limit from 0 to 1 (e.g. 0.15)");
			return -1;
		}
	}

	tail = addattr_nest(n, RIOPS_MAXLEN, TCA_OPTIONS | NLA_F_NESTED);
	if (seen & (1u << O_LIMIT))
		addattr_l(n, RIOPS_MAXLEN, TCA_RIOPS_LIMIT, &limit, sizeof(limit));
	if (seen & (1u << O_BUCKETS))
		addattr_l(n, RIOPS_MAXLEN, TCA_RIOPS_BUCKETS, &buckets, sizeof(buckets));
	if (seen & (1u << O_LT))
		addattr_l(n, RIOPS_MAXLEN, TCA_RIOPS_LT, &lt, sizeof(lt));
	if (seen & (1u << O_FIXED))
		addattr_l(n, RIOPS_MAXLEN, TCA_RIOPS_FIXED, &fixed, sizeof(fixed));
	if (seen & (1u << O_SLR))
		addattr_l(n, RIOPS_MAXLEN, TCA_RIOPS_SLR, &slr, sizeof(slr));
	if (seen & (1u << O_TU))
		addattr_l(n, RIOPS_MAXLEN, TCA_RIOPS_TU, &tu, sizeof(tu));
	if (seen & (1u << O_TC))
		addattr_l(n, RIOPS_MAXLEN, TCA_RIOPS_TC, &tc, sizeof(tc));
	if (seen & (1u << O_ECN))
		addattr_l(n, RIOPS_MAXLEN, TCA_RIOPS_ECN, &ecn, sizeof(ecn));
	if (seen & (1u << O_BW))
		addattr_l(n, RIOPS_MAXLEN, TCA_RIOPS_BANDWIDTH, &bw, sizeof(bw));
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++)
			if (seen & (1u << (O_RED + 3 * i + j)))
				addattr_l(n, RIOPS_MAXLEN, red_attrs[i][j], &red[i][j], sizeof(__u32));
	if (memory_limit)
		addattr_l(n, RIOPS_MAXLEN, TCA_RIOPS_MEMORY_LIMIT, &memory_limit, sizeof(memory_limit));
	addattr_nest_end(n, tail);
	return 0;
}

static int get_attr_u32(struct rtattr **tb, int attr, __u32 *v)
{
	if (!tb[attr] || RTA_PAYLOAD(tb[attr]) < sizeof(__u32))
		return 0;
	memcpy(v, RTA_DATA(tb[attr]), sizeof(*v));
	return 1;
}

/* a time in microseconds: JSON key <name>_us; text in s, ms or us, whichever is exact */
static void print_us(const char *name, __u32 us)
{
	char key[8], fmt[16];

	snprintf(key, sizeof(key), "%s_us", name);
	print_color_uint(PRINT_JSON, COLOR_NONE, key, NULL, us);
	snprintf(fmt, sizeof(fmt), "%s %%u%s ", name,
		 us % 1000000 == 0 ? "s" : us % 1000 == 0 ? "ms" : "us");
	print_color_uint(PRINT_FP, COLOR_NONE, NULL, fmt,
			 us % 1000000 == 0 ? us / 1000000 : us % 1000 == 0 ? us / 1000 : us);
}

static int riops_print_opt(struct qdisc_util *qu, FILE *f, struct rtattr *opt)
{
	struct rtattr *tb[TCA_RIOPS_MAX + 1] = {};
	__u64 bw;
	__u32 v;
	int i, j;

	(void)qu; (void)f;
	if (!opt)
		return 0;
	parse_rtattr_flags(tb, TCA_RIOPS_MAX, RTA_DATA(opt), RTA_PAYLOAD(opt), NLA_F_NESTED);
	if (get_attr_u32(tb, TCA_RIOPS_LIMIT, &v))
		print_color_uint(PRINT_ANY, COLOR_NONE, "limit", "limit %up ", v);
	if (get_attr_u32(tb, TCA_RIOPS_BUCKETS, &v))
		print_color_uint(PRINT_ANY, COLOR_NONE, "buckets", "buckets %u ", v);
	if (get_attr_u32(tb, TCA_RIOPS_LT, &v))
		print_color_uint(PRINT_ANY, COLOR_NONE, "lt", "lt %u ", v);
	if (tb[TCA_RIOPS_FIXED] && RTA_PAYLOAD(tb[TCA_RIOPS_FIXED]) >= 1)
		print_color_bool(PRINT_ANY, COLOR_NONE, "fixed",
				 *(__u8 *)RTA_DATA(tb[TCA_RIOPS_FIXED]) ? "fixed " : "adaptive ",
				 *(__u8 *)RTA_DATA(tb[TCA_RIOPS_FIXED]));
	if (get_attr_u32(tb, TCA_RIOPS_SLR, &v))
		print_color_uint(PRINT_ANY, COLOR_NONE, "slr", "slr %u ", v);
	if (get_attr_u32(tb, TCA_RIOPS_TU, &v))
		print_us("tu", v);
	if (get_attr_u32(tb, TCA_RIOPS_TC, &v))
		print_us("tc", v);
	if (tb[TCA_RIOPS_ECN] && RTA_PAYLOAD(tb[TCA_RIOPS_ECN]) >= 1)
		print_color_bool(PRINT_ANY, COLOR_NONE, "ecn",
				 *(__u8 *)RTA_DATA(tb[TCA_RIOPS_ECN]) ? "ecn " : "noecn ",
				 *(__u8 *)RTA_DATA(tb[TCA_RIOPS_ECN]));
	if (tb[TCA_RIOPS_BANDWIDTH] && RTA_PAYLOAD(tb[TCA_RIOPS_BANDWIDTH]) >= sizeof(bw)) {
		memcpy(&bw, RTA_DATA(tb[TCA_RIOPS_BANDWIDTH]), sizeof(bw));
		print_color_u64(PRINT_ANY, COLOR_NONE, "bandwidth", "bandwidth %lluBps ", bw);
	}
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++)
			if (get_attr_u32(tb, red_attrs[i][j], &v)) {
				char fmt[16];

				snprintf(fmt, sizeof(fmt), "%s %%g ", red_names[i][j]);
				print_color_float(PRINT_ANY, COLOR_NONE, red_names[i][j], fmt,
						  (double)v / RIOPS_PPM);
			}
	favorlab_print_memory_limit(tb[TCA_RIOPS_MEMORY_LIMIT]);
	return 0;
}

static int riops_print_xstats(struct qdisc_util *qu, FILE *f, struct rtattr *xstats)
{
	struct tc_riops_xstats st = {};

	(void)qu; (void)f;
	if (!xstats)
		return 0;
	favorlab_copy_xstats(&st, sizeof(st), xstats);
	print_color_u64(PRINT_ANY, COLOR_NONE, "enqueued_short", "  enqueued_short %llu", st.enqueued_short);
	print_color_u64(PRINT_ANY, COLOR_NONE, "enqueued_long", " enqueued_long %llu", st.enqueued_long);
	print_color_u64(PRINT_ANY, COLOR_NONE, "drop_limit", " drop_limit %llu", st.drop_limit);
	print_color_u64(PRINT_ANY, COLOR_NONE, "drop_trim", " drop_trim %llu", st.drop_trim);
	print_nl();
	print_color_u64(PRINT_ANY, COLOR_NONE, "early_short", "  early_short %llu", st.early_short);
	print_color_u64(PRINT_ANY, COLOR_NONE, "early_long", " early_long %llu", st.early_long);
	print_color_u64(PRINT_ANY, COLOR_NONE, "marked_short", " marked_short %llu", st.marked_short);
	print_color_u64(PRINT_ANY, COLOR_NONE, "marked_long", " marked_long %llu", st.marked_long);
	print_color_u64(PRINT_ANY, COLOR_NONE, "forced_short", " forced_short %llu", st.forced_short);
	print_color_u64(PRINT_ANY, COLOR_NONE, "forced_long", " forced_long %llu", st.forced_long);
	print_nl();
	print_color_uint(PRINT_ANY, COLOR_NONE, "lt_now", "  lt_now %u", st.lt);
	print_color_uint(PRINT_ANY, COLOR_NONE, "active_short", " active_short %u", st.active_short);
	print_color_uint(PRINT_ANY, COLOR_NONE, "active_long", " active_long %u", st.active_long);
	print_color_u64(PRINT_ANY, COLOR_NONE, "flows_seen", " flows_seen %llu", st.flows_seen);
	print_color_u64(PRINT_ANY, COLOR_NONE, "collisions", " collisions %llu", st.collisions);
	print_nl();
	print_color_uint(PRINT_ANY, COLOR_NONE, "qlen_short", "  qlen_short %u", st.qlen_short);
	print_color_float(PRINT_ANY, COLOR_NONE, "qavg_short", " qavg_short %.2f",
			  (double)st.qavg_short / 65536);
	print_color_float(PRINT_ANY, COLOR_NONE, "qavg_total", " qavg_total %.2f",
			  (double)st.qavg_total / 65536);
	favorlab_print_memory_xstats(st.drop_memory, st.memory_usage);
	return 0;
}

struct qdisc_util riops_qdisc_util = {
	.id		= "riops",
	.parse_qopt	= riops_parse_opt,
	.print_qopt	= riops_print_opt,
	.print_xstats	= riops_print_xstats,
};
