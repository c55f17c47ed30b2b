/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tc_iproute2.h - the iproute2 declarations favorlab's tc plugins (q_favor.c, q_las.c, q_run2c.c, ...) use,
 * and what the plugins do alike with them (xstats, memory_limit).
 *
 * Debian does not package iproute2's private headers (utils.h, tc_util.h, json_print.h), so the few
 * declarations used are written out here. They match iproute2 6.1 (Debian 12) through current
 * releases: struct qdisc_util has kept this field order (newer releases only made the qu argument
 * const, which does not change the ABI), and every function used is exported by the tc binary (check
 * with `nm -D $(which tc)`; tests/test_packaging.py does).
 */
#ifndef _TC_IPROUTE2_H
#define _TC_IPROUTE2_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/pkt_sched.h>

struct qdisc_util {
	struct qdisc_util *next;
	const char *id;
	int (*parse_qopt)(struct qdisc_util *qu, int argc, char **argv, struct nlmsghdr *n,
			  const char *dev);
	int (*print_qopt)(struct qdisc_util *qu, FILE *f, struct rtattr *opt);
	int (*print_xstats)(struct qdisc_util *qu, FILE *f, struct rtattr *xstats);
	int (*parse_copt)(struct qdisc_util *qu, int argc, char **argv, struct nlmsghdr *n,
			  const char *dev);
	int (*print_copt)(struct qdisc_util *qu, FILE *f, struct rtattr *opt);
	int (*has_block)(struct qdisc_util *qu, struct rtattr *opt, __u32 block_idx, bool *p_has);
};

enum output_type { PRINT_FP = 1, PRINT_JSON = 2, PRINT_ANY = 4 };
enum color_attr { COLOR_IFNAME, COLOR_MAC, COLOR_INET, COLOR_INET6, COLOR_OPERSTATE_UP,
		  COLOR_OPERSTATE_DOWN, COLOR_NONE };

/* exported by tc (return types differ across versions: void or int; the value is not used) */
extern void print_color_uint(enum output_type t, enum color_attr c, const char *key,
			     const char *fmt, unsigned int value);
extern void print_color_u64(enum output_type t, enum color_attr c, const char *key,
			    const char *fmt, uint64_t value);
extern void print_color_bool(enum output_type t, enum color_attr c, const char *key,
			     const char *fmt, bool value);
extern void print_color_string(enum output_type t, enum color_attr c, const char *key,
			       const char *fmt, const char *value);
extern void print_nl(void);
extern int get_unsigned(unsigned int *val, const char *arg, int base);
extern int get_size(unsigned int *size, const char *str);
extern int addattr_l(struct nlmsghdr *n, int maxlen, int type, const void *data, int alen);
extern struct rtattr *addattr_nest(struct nlmsghdr *n, int maxlen, int type);
extern int addattr_nest_end(struct nlmsghdr *n, struct rtattr *nest);
extern int parse_rtattr_flags(struct rtattr *tb[], int max, struct rtattr *rta, int len,
			      unsigned short flags);

/*
 * Not iproute2's, but what every favorlab plugin does with its qdisc's xstats: copy them into @st
 * (@size bytes, zeroed by the caller). An older module may send a shorter struct (counters added
 * since come last): the counters it lacks read as 0.
 */
static inline void favorlab_copy_xstats(void *st, size_t size, struct rtattr *xstats)
{
	memcpy(st, RTA_DATA(xstats), RTA_PAYLOAD(xstats) < size ? RTA_PAYLOAD(xstats) : size);
}

/*
 * "memory_limit SIZE", every favorlab qdisc's bound on the skb memory it queues: @arg (NULL when the
 * word is missing) in tc's size units (b, kb, mb, gb: powers of 1024; a bare number is bytes) into
 * *@bytes. -1 after a message naming @kind if it is no size; the kernel checks the range (extack).
 */
static inline int favorlab_parse_memory_limit(const char *kind, const char *arg, unsigned int *bytes)
{
	if (!arg || get_size(bytes, arg) || *bytes == 0) {
		fprintf(stderr, "%s: \"memory_limit\" needs a size in bytes (e.g. 32mb, 65536)\n", kind);
		return -1;
	}
	return 0;
}

/*
 * TCA_<KIND>_MEMORY_LIMIT @a as "memory_limit 32Mb" (units get_size reads back; exact, never rounded)
 * and as the number of bytes in JSON. Written here, not with tc's own size printer, whose name and
 * output changed across iproute2 releases.
 */
static inline void favorlab_print_memory_limit(struct rtattr *a)
{
	char buf[32];
	unsigned int v;

	if (!a || RTA_PAYLOAD(a) < sizeof(__u32))
		return;
	v = *(__u32 *)RTA_DATA(a);
	if (v && v % (1024 * 1024) == 0)
		snprintf(buf, sizeof(buf), "%uMb", v >> 20);
	else if (v && v % 1024 == 0)
		snprintf(buf, sizeof(buf), "%uKb", v >> 10);
	else
		snprintf(buf, sizeof(buf), "%ub", v);
	print_color_uint(PRINT_JSON, COLOR_NONE, "memory_limit", NULL, v);
	print_color_string(PRINT_FP, COLOR_NONE, NULL, "memory_limit %s ", buf);
}

/* the memory counters every favorlab qdisc's xstats end with, on a line of their own */
static inline void favorlab_print_memory_xstats(__u64 drop_memory, __u64 memory_usage)
{
	print_nl();
	print_color_u64(PRINT_ANY, COLOR_NONE, "drop_memory", "  drop_memory %llu", drop_memory);
	print_color_u64(PRINT_ANY, COLOR_NONE, "memory_usage", " memory_usage %llu", memory_usage);
}

#endif /* _TC_IPROUTE2_H */
