// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace micro-benchmark of the DRR/TDRR/QSDRR queueing core (qsdrr_core.h, through the same shim
 * as the tests): ns per packet with arrivals cycling over `flows` flows, against a plain FIFO doing
 * the same list operations (pfifo's work) in the same run. Packet lengths cycle through 64, 576, 1000
 * and 1500 bytes (DRR passes over queues whose front packet does not fit); quantum 1514. The buffer
 * starts full; per packet served (the figures are ns per departure):
 *   through:    a dequeue, then an arrival that refills the buffer: no drops;
 *   backlogged: an arrival to the full buffer (the core drops a front packet, the FIFO the arrival),
 *               a dequeue, an arrival that refills it: two arrivals and a drop per departure.
 * TDRR's clock advances 1200 ns per packet (1500 bytes at 10 Gb/s) with a 1 ms half-life, so its
 * O(active queues) rescale runs every ~13,000 packets and its cost is in the figures (at the default
 * 1 s it would run every ~13 million). A second table times one rescale alone against the number of
 * active queues and of buckets.
 * It excludes the kernel wrapper (flow dissection, hashing, stats). Build and run:
 * qdisc/bench/qsdrr_core_bench.sh
 */
#include <stdio.h>
#include "../tests/qsdrr_harness.c"
#include "bench_fifo.h"

#define BENCH_BUCKETS	(1u << 16)
#define TICK_NS		1200
#define HALFLIFE_NS	1000000

static const unsigned int lengths[] = { 64, 576, 1000, 1500 };
static u32 policy;	/* the policy run_core() benchmarks */

/* one arrival of packet number i: flows take turns, each in its own (scattered) bucket */
static void arrival(long i, u32 flows)
{
	u32 bucket = (u32)(i % flows) * 2654435761u % BENCH_BUCKETS;

	bench_put(qsdrr_core_enqueue(&core, bench_get(lengths[i & 3]), bucket));
}

static double run_core(u32 limit, u32 flows, int backlogged, long n)
{
	struct sk_buff *pool = bench_pool(limit + 2);
	u64 clock = 0;
	double t;
	long i;

	h_init(limit, BENCH_BUCKETS, 1514, policy, HALFLIFE_NS);
	for (i = 0; i < (long)limit; i++)
		arrival(i, flows);
	t = bench_now();
	for (; i < n + limit; i++) {
		clock += TICK_NS;
		if (backlogged)
			arrival(i + n, flows);
		bench_put(qsdrr_core_dequeue(&core, clock));
		arrival(i, flows);
	}
	t = bench_now() - t;
	while (qsdrr_core_purge_one(&core))
		;
	return bench_done(pool, t, n);
}

/*
 * pfifo: the same arrivals and departure per packet on one list, the tail dropped when full (its own
 * baseline: bench_fifo() has no arrival to a full queue)
 */
static void fifo_arrival(struct sk_buff_head *fifo, long i, u32 limit)
{
	struct sk_buff *skb = bench_get(lengths[i & 3]);

	if (skb_queue_len(fifo) >= limit)
		bench_put(skb);
	else
		__skb_queue_tail(fifo, skb);
}

static double run_fifo(u32 limit, int backlogged, long n)
{
	struct sk_buff *pool = bench_pool(limit + 2);
	struct sk_buff_head fifo;
	double t;
	long i;

	__skb_queue_head_init(&fifo);
	for (i = 0; i < (long)limit; i++)
		fifo_arrival(&fifo, i, limit);
	t = bench_now();
	for (; i < n + limit; i++) {
		if (backlogged)
			fifo_arrival(&fifo, i, limit);
		bench_put(__skb_dequeue(&fifo));
		fifo_arrival(&fifo, i, limit);
	}
	t = bench_now() - t;
	return bench_done(pool, t, n);
}

/* one rescale with `active` queues of the given table size, in microseconds (best of 5) */
static double run_rescale(u32 buckets, u32 active)
{
	struct sk_buff *pool = bench_pool(active + 1);
	double best = 1e30;
	int r;
	u32 i;

	for (r = 0; r < 5; r++) {
		double t0;

		h_init(active, buckets, 1514, QSDRR_POLICY_TDRR, HALFLIFE_NS);
		for (i = 0; i < active; i++)
			qsdrr_core_enqueue(&core, bench_get(lengths[i & 3]), i * (buckets / active));
		for (i = 0; i < buckets; i++)
			tab[i].thr = (u64)i * 40503u << 14;
		t0 = bench_now();
		qsdrr_rescale(&core, core.base + QSDRR_RESCALE_EPOCHS);
		t0 = bench_now() - t0;
		best = t0 < best ? t0 : best;
		while (core.active)
			bench_put(qsdrr_core_purge_one(&core));
	}
	free(pool);
	return best * 1e6;
}

int main(void)
{
	static const char *const names[] = { "qsdrr", "tdrr", "drr" };
	static const u32 limits[] = { 8, 100, 1000 }, nflows[] = { 1, 100, 10000 };
	static const u32 tables[] = { 1024, 1u << 20 }, actives[] = { 1, 1000, 100000 };
	const long n = 1000000;
	unsigned int b, i, j, pol;

	printf("| load | policy | limit | flows | fifo ns/departure | core ns/departure | ratio |\n"
	       "|---|---|---:|---:|---:|---:|---:|\n");
	for (b = 0; b < 2; b++)
		for (pol = 0; pol < 3; pol++)
			for (i = 0; i < 3; i++)
				for (j = 0; j < 3; j++) {
					double f, c;

					policy = pol;
					bench_best_of_5(run_core, run_fifo, limits[i], nflows[j], b, n, &f, &c);
					printf("| %s | %s | %u | %u | %.1f | %.1f | %.2f |\n",
					       b ? "backlogged" : "through", names[pol], limits[i], nflows[j],
					       f, c, c / f);
				}
	printf("\n| tdrr rescale | buckets | active queues | us per rescale |\n|---|---:|---:|---:|\n");
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++)
			if (actives[j] <= tables[i])
				printf("| | %u | %u | %.1f |\n", tables[i], actives[j],
				       run_rescale(tables[i], actives[j]));
	return 0;
}
