// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace micro-benchmark of the LAS queueing core (las_core.h, through the same shim as the tests):
 * ns per arrival with arrivals cycling over `flows` flows of 1000-byte packets, against a plain FIFO
 * doing one dequeue and one enqueue per packet (pfifo's work) in the same run. Two loads:
 *   through:    a dequeue, then an arrival: the queue is at limit - 1 at every arrival, which is queued;
 *   backlogged: an arrival to the full queue, no dequeue: every arrival is dropped or pushes a packet
 *               out, as in bench.py's backlogged mode (htb drains the queue far slower than pktgen fills
 *               it). A departure would leave room for the next arrival, so a load with departures
 *               cannot send every arrival down the full-queue branch. With no service the flows' p
 *               even out and the arrival loses (drop_arrival); the table prints both shares.
 * It excludes the kernel wrapper (flow dissection, hashing, stats). Per-packet work is O(log F), F the
 * flows with packets queued (at most min(flows, limit)). Build and run: qdisc/bench/las_core_bench.sh
 */
#include <stdio.h>
#include "../tests/las_harness.c"
#include "bench_fifo.h"

#define BENCH_BUCKETS (1u << 16)

static void arrive(long i, u32 flows)
{
	u32 f = (u32)(i % flows), bucket = f * 2654435761u % BENCH_BUCKETS;
	struct sk_buff *skb = bench_get(1000), *v;

	if (las_core_enqueue(&core, skb, bucket, f + 1, &v) == LAS_VERDICT_DROP_ARRIVAL)
		bench_put(skb);
	bench_put(v);
}

static double bench_las(u32 limit, u32 flows, int backlogged, long n)
{
	struct sk_buff *pool = bench_pool(limit + 2), *skb;
	long i;
	double t;

	h_init(limit, BENCH_BUCKETS);
	for (i = 0; i < limit; i++)
		arrive(i, flows);
	t = bench_now();
	for (i = limit; i < n + limit; i++) {
		if (!backlogged)
			bench_put(las_core_dequeue(&core));
		arrive(i, flows);
	}
	t = bench_now() - t;
	while ((skb = las_core_purge_one(&core)))
		;
	return bench_done(pool, t, n);
}

int main(void)
{
	static const u32 limits[] = { 8, 100, 1000 }, nflows[] = { 1, 100, 10000 };
	long n = 2000000;
	unsigned i, j, b;

	printf("| load | limit | flows | fifo ns/pkt | las core ns/arrival | ratio | arrivals dropped %% |"
	       " push-outs per arrival %% |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
	for (b = 0; b < 2; b++)
		for (i = 0; i < 3; i++)
			for (j = 0; j < 3; j++) {
				double f, c;

				/* the counters are the last run's: the fill before the clock drops nothing */
				bench_best_of_5(bench_las, NULL, limits[i], nflows[j], b, n, &f, &c);
				printf("| %s | %u | %u | %.1f | %.1f | %.2f | %.1f | %.1f |\n",
				       b ? "backlogged" : "through", limits[i], nflows[j], f, c, c / f,
				       100.0 * core.c.drop_arrival / n, 100.0 * core.c.pushouts / n);
			}
	return 0;
}
