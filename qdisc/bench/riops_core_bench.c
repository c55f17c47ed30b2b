// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace micro-benchmark of the RIO-PS queueing core (riops_core.h, through the same shim as the
 * tests): ns per arrival (and the dequeue that makes room for it, when the previous one was queued)
 * with arrivals cycling over `flows` flows, against a plain FIFO doing a dequeue and an enqueue per
 * packet (pfifo's work). The clock advances 100 ns a packet and T_c is 10 ms, so the
 * controller scans the 1024-bucket table every 100000 packets (included). Two loads:
 *   light:     the queue held at 1 packet (the averages stay below min_th: no RED decision drawn);
 *   congested: the queue held at limit - 1 (averages above max_th: gentle and forced drops, and the
 *              arrivals that are queued keep it there).
 * It excludes the kernel wrapper (flow dissection, hashing, the clock and random draws: here an
 * xorshift). Per-packet work is O(1), flat in limit and flows. Build and run: qdisc/bench/riops_core_bench.sh
 */
#include <stdio.h>
#include "../tests/riops_harness.c"
#include "bench_fifo.h"

#define BENCH_BUCKETS 1024

static u64 clock_ns;
static u32 rng = 2463534242u;

static u32 xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static void arrive(long i, u32 flows)
{
	u32 f = (u32)(i % flows), hash = (f + 1) * 2654435761u;
	struct sk_buff *skb = bench_get(1000);
	enum riops_verdict v;

	clock_ns += 100;
	v = riops_core_enqueue(&core, skb, (u32)(((u64)hash * BENCH_BUCKETS) >> 32), hash, clock_ns,
			       false, xorshift());
	if (v != RIOPS_VERDICT_ENQUEUED && v != RIOPS_VERDICT_MARKED)
		bench_put(skb);
}

static double bench_riops(u32 limit, u32 flows, int congested, long n)
{
	struct sk_buff *pool = bench_pool(limit + 2), *skb;
	u32 hold = congested ? limit - 1 : 1;
	long i;
	double t;

	h_init(limit, BENCH_BUCKETS, 0);
	h_set(20, 0, 3, 1000000000ULL, 10000000ULL, 0, 800000);
	clock_ns = 0;
	for (i = 0; riops_core_qlen(&core) < hold && i < 100 * (long)limit; i++)
		arrive(i, flows);
	t = bench_now();
	for (i = 0; i < n; i++) {
		/* a dequeue when the last arrival was queued, so the queue stays at hold */
		if (riops_core_qlen(&core) >= hold)
			bench_put(riops_core_dequeue(&core));
		arrive(i, flows);
	}
	t = bench_now() - t;
	while ((skb = riops_core_purge_one(&core)))
		;
	return bench_done(pool, t, n);
}

int main(void)
{
	static const u32 limits[] = { 8, 100, 1000 }, nflows[] = { 1, 100, 10000 };
	long n = 2000000;
	unsigned i, j, b;

	printf("| load | limit | flows | fifo ns/pkt | riops core ns/arrival | ratio | arrivals dropped %% |\n"
	       "|---|---:|---:|---:|---:|---:|---:|\n");
	for (b = 0; b < 2; b++)
		for (i = 0; i < 3; i++)
			for (j = 0; j < 3; j++) {
				double f, c, drops;
				u64 arrivals;

				bench_best_of_5(bench_riops, NULL, limits[i], nflows[j], b, n, &f, &c);
				arrivals = core.c.enqueued[0] + core.c.enqueued[1] + core.c.early[0] +
					   core.c.early[1] + core.c.forced[0] + core.c.forced[1] + core.c.drop_limit;
				drops = arrivals ? 100.0 * (arrivals - core.c.enqueued[0] - core.c.enqueued[1]) /
					arrivals : 0;
				printf("| %s | %u | %u | %.1f | %.1f | %.2f | %.1f |\n", b ? "congested" : "light",
				       limits[i], nflows[j], f, c, c / f, drops);
			}
	return 0;
}
