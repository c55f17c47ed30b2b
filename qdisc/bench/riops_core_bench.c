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
#include <time.h>
#include "../tests/riops_harness.c"

#define BENCH_BUCKETS 1024

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static struct sk_buff *free_list;
static u64 clock_ns;
static u32 rng = 2463534242u;

static u32 xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static struct sk_buff *get(void)
{
	struct sk_buff *skb = free_list;

	free_list = skb->next;
	skb->len = 1000;
	return skb;
}

static void put(struct sk_buff *skb)
{
	if (skb) {
		skb->next = free_list;
		free_list = skb;
	}
}

static void arrive(long i, u32 flows)
{
	u32 f = (u32)(i % flows), hash = (f + 1) * 2654435761u;
	struct sk_buff *skb = get();
	enum riops_verdict v;

	clock_ns += 100;
	v = riops_core_enqueue(&core, skb, (u32)(((u64)hash * BENCH_BUCKETS) >> 32), hash, clock_ns,
			       false, xorshift());
	if (v != RIOPS_VERDICT_ENQUEUED && v != RIOPS_VERDICT_MARKED)
		put(skb);
}

static double bench_riops(u32 limit, u32 flows, int congested, long n)
{
	struct sk_buff *pool = calloc(limit + 2, sizeof(*pool)), *skb;
	u32 hold = congested ? limit - 1 : 1;
	long i;
	double t;

	h_init(limit, BENCH_BUCKETS, 0);
	h_set(20, 0, 3, 1000000000ULL, 10000000ULL, 0, 800000);
	clock_ns = 0;
	free_list = NULL;
	for (i = 0; i < limit + 2; i++)
		put(&pool[i]);
	for (i = 0; riops_core_qlen(&core) < hold && i < 100 * (long)limit; i++)
		arrive(i, flows);
	t = now_s();
	for (i = 0; i < n; i++) {
		/* a dequeue when the last arrival was queued, so the queue stays at hold */
		if (riops_core_qlen(&core) >= hold)
			put(riops_core_dequeue(&core));
		arrive(i, flows);
	}
	t = now_s() - t;
	while ((skb = riops_core_purge_one(&core)))
		;
	free(pool);
	return t * 1e9 / n;
}

static double bench_fifo(u32 limit, long n)
{
	struct sk_buff_head q;
	struct sk_buff *pool = calloc(limit + 1, sizeof(*pool)), *skb;
	long i;
	double t;

	__skb_queue_head_init(&q);
	for (i = 0; i < limit; i++)
		__skb_queue_tail(&q, &pool[i]);
	t = now_s();
	for (i = 0; i < n; i++) {
		skb = __skb_dequeue(&q);
		if (skb_queue_len(&q) < limit)
			__skb_queue_tail(&q, skb);
	}
	t = now_s() - t;
	free(pool);
	return t * 1e9 / n;
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
				double f = 1e9, c = 1e9, drops;
				u64 arrivals;
				int r;

				for (r = 0; r < 5; r++) {	/* best of 5: the host is shared */
					double x = bench_fifo(limits[i], n);
					double y = bench_riops(limits[i], nflows[j], b, n);

					f = x < f ? x : f;
					c = y < c ? y : c;
				}
				arrivals = core.c.enqueued[0] + core.c.enqueued[1] + core.c.early[0] +
					   core.c.early[1] + core.c.forced[0] + core.c.forced[1] + core.c.drop_limit;
				drops = arrivals ? 100.0 * (arrivals - core.c.enqueued[0] - core.c.enqueued[1]) /
					arrivals : 0;
				printf("| %s | %u | %u | %.1f | %.1f | %.2f | %.1f |\n", b ? "congested" : "light",
				       limits[i], nflows[j], f, c, c / f, drops);
			}
	return 0;
}
