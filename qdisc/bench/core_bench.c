// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace micro-benchmark of the queueing core (favor_core.h, through the same shim as the tests):
 * ns per packet (one enqueue + one dequeue) with the queue held at `limit` packets and arrivals
 * cycling over `flows` flows, against a plain FIFO with the same list operations (pfifo's work).
 * It excludes the kernel wrapper (flow dissection, hashing, stats): bench.py measures those in the
 * kernel. Build and run: qdisc/bench/core_bench.sh
 */
#include <stdio.h>
#include "../tests/core_harness.c"
#include "bench_fifo.h"

#define BENCH_BUCKETS (1u << 16)

static void arrive(long i, u32 flows)
{
	struct sk_buff *skb = bench_get(0), *v;

	if (favor_core_enqueue(&core, skb, (u32)(i % flows) * 2654435761u % BENCH_BUCKETS, &v) >
	    FAVOR_VERDICT_STANDARD)
		bench_put(skb);
	bench_put(v);
}

/* one dequeue, then one arrival, the queue held at limit (a single load: @load is not read) */
static double bench_favor(u32 limit, u32 flows, int load, long n)
{
	struct sk_buff *pool = bench_pool(limit + 2);
	long i;
	double t;

	h_init(limit, 0, BENCH_BUCKETS);
	for (i = 0; i < limit; i++)
		arrive(i, flows);
	t = bench_now();
	for (i = limit; i < n + limit; i++) {
		bench_put(favor_core_dequeue(&core));
		arrive(i, flows);
	}
	t = bench_now() - t;
	while (favor_core_dequeue(&core))
		;
	return bench_done(pool, t, n);
}

int main(void)
{
	static const u32 limits[] = { 8, 100, 1000, 10000 }, nflows[] = { 1, 100, 10000 };
	long n = 4000000;
	unsigned i, j;

	printf("| limit | flows | fifo ns/pkt | favor core ns/pkt | ratio |\n|---:|---:|---:|---:|---:|\n");
	for (i = 0; i < 4; i++)
		for (j = 0; j < 3; j++) {
			double f, c;

			bench_best_of_5(bench_favor, NULL, limits[i], nflows[j], 0, n, &f, &c);
			printf("| %u | %u | %.1f | %.1f | %.2f |\n", limits[i], nflows[j], f, c, c / f);
		}
	return 0;
}
