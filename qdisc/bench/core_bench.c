// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace micro-benchmark of the queueing core (favor_core.h, through the same shim as the tests):
 * ns per packet (one enqueue + one dequeue) with the queue held at `limit` packets and arrivals
 * cycling over `flows` flows, against a plain FIFO with the same list operations (pfifo's work).
 * It excludes the kernel wrapper (flow dissection, hashing, stats): bench.py measures those in the
 * kernel. Build and run: qdisc/bench/core_bench.sh
 */
#include <stdio.h>
#include <time.h>
#include "../tests/core_harness.c"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static double bench_favor(u32 limit, u32 flows, long n)
{
	u32 buckets = 1 << 16;
	struct sk_buff *pool = calloc(limit + 2, sizeof(*pool)), *free_list = NULL, *skb, *v;
	long i;
	double t;

	h_init(limit, 0, buckets);
	for (i = 0; i < limit + 2; i++) {
		pool[i].next = free_list;
		free_list = &pool[i];
	}
	for (i = 0; i < limit; i++) {
		skb = free_list; free_list = skb->next;
		favor_core_enqueue(&core, skb, (u32)(i % flows) * 2654435761u % buckets, &v);
	}
	t = now();
	for (i = limit; i < n + limit; i++) {
		skb = favor_core_dequeue(&core);
		skb->next = free_list; free_list = skb;
		skb = free_list; free_list = skb->next;
		if (favor_core_enqueue(&core, skb, (u32)(i % flows) * 2654435761u % buckets, &v) > FAVOR_VERDICT_STANDARD) {
			skb->next = free_list; free_list = skb;
		}
		if (v) { v->next = free_list; free_list = v; }
	}
	t = now() - t;
	while ((skb = favor_core_dequeue(&core)))
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
	static const u32 limits[] = { 8, 100, 1000, 10000 }, nflows[] = { 1, 100, 10000 };
	long n = 4000000;
	unsigned i, j;

	printf("| limit | flows | fifo ns/pkt | favor core ns/pkt | ratio |\n|---:|---:|---:|---:|---:|\n");
	for (i = 0; i < 4; i++)
		for (j = 0; j < 3; j++) {
			double f = 1e9, c = 1e9;
			int r;

			for (r = 0; r < 5; r++) {	/* best of 5: the host is shared */
				double x = bench_fifo(limits[i], n), y = bench_favor(limits[i], nflows[j], n);

				f = x < f ? x : f;
				c = y < c ? y : c;
			}

			printf("| %u | %u | %.1f | %.1f | %.2f |\n", limits[i], nflows[j], f, c, c / f);
		}
	return 0;
}
