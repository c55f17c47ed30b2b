// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace micro-benchmark of the LAS queueing core (las_core.h, through the same shim as the tests):
 * ns per packet with arrivals cycling over `flows` flows of 1000-byte packets, against a plain FIFO
 * doing the same list operations (pfifo's work). Two loads:
 *   through:    the queue held at limit - 1 after each dequeue, so every arrival is queued;
 *   backlogged: the queue full at `limit` before each arrival, so arrivals are dropped or push out.
 * It excludes the kernel wrapper (flow dissection, hashing, stats). Per-packet work is O(log F), F the
 * flows with packets queued (at most min(flows, limit)). Build and run: qdisc/bench/las_core_bench.sh
 */
#include <stdio.h>
#include <time.h>
#include "../tests/las_harness.c"

#define BENCH_BUCKETS (1u << 16)

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static struct sk_buff *free_list;

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
	u32 f = (u32)(i % flows), bucket = f * 2654435761u % BENCH_BUCKETS;
	struct sk_buff *skb = get(), *v;

	if (las_core_enqueue(&core, skb, bucket, f + 1, &v) == LAS_VERDICT_DROP_ARRIVAL)
		put(skb);
	put(v);
}

/* backlogged: arrive at a full queue, then dequeue one; through: dequeue one, then arrive */
static double bench_las(u32 limit, u32 flows, int backlogged, long n)
{
	struct sk_buff *pool = calloc(limit + 2, sizeof(*pool)), *skb;
	long i;
	double t;

	h_init(limit, BENCH_BUCKETS);
	free_list = NULL;
	for (i = 0; i < limit + 2; i++)
		put(&pool[i]);
	for (i = 0; i < limit; i++)
		arrive(i, flows);
	t = now();
	for (i = limit; i < n + limit; i++) {
		if (backlogged)
			arrive(i, flows);
		put(las_core_dequeue(&core));
		if (!backlogged)
			arrive(i, flows);
	}
	t = now() - t;
	while ((skb = las_core_purge_one(&core)))
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
	t = now();
	for (i = 0; i < n; i++) {
		skb = __skb_dequeue(&q);
		if (skb_queue_len(&q) < limit)
			__skb_queue_tail(&q, skb);
	}
	t = now() - t;
	free(pool);
	return t * 1e9 / n;
}

int main(void)
{
	static const u32 limits[] = { 8, 100, 1000 }, nflows[] = { 1, 100, 10000 };
	long n = 2000000;
	unsigned i, j, b;

	printf("| load | limit | flows | fifo ns/pkt | las core ns/pkt | ratio |\n"
	       "|---|---:|---:|---:|---:|---:|\n");
	for (b = 0; b < 2; b++)
		for (i = 0; i < 3; i++)
			for (j = 0; j < 3; j++) {
				double f = 1e9, c = 1e9;
				int r;

				for (r = 0; r < 5; r++) {	/* best of 5: the host is shared */
					double x = bench_fifo(limits[i], n);
					double y = bench_las(limits[i], nflows[j], b, n);

					f = x < f ? x : f;
					c = y < c ? y : c;
				}
				printf("| %s | %u | %u | %.1f | %.1f | %.2f |\n", b ? "backlogged" : "through",
				       limits[i], nflows[j], f, c, c / f);
			}
	return 0;
}
