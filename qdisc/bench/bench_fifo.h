/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bench_fifo.h - what the userspace core benchmarks (core_bench.c, las_core_bench.c,
 * riops_core_bench.c, qsdrr_core_bench.c) share: the clock, a free list of preallocated packets, the
 * baseline every core is measured against, a plain FIFO doing one dequeue and one enqueue per packet
 * on the shim's lists (pfifo's work), and the best-of-5 comparison. Include it after the harness (the
 * shim's sk_buff).
 */
#ifndef _BENCH_FIFO_H
#define _BENCH_FIFO_H

#include <time.h>

static double bench_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static struct sk_buff *bench_free_list;

/* a packet of @len bytes from the free list (never empty: the pool holds limit + 2) */
static struct sk_buff *bench_get(unsigned int len)
{
	struct sk_buff *skb = bench_free_list;

	bench_free_list = skb->next;
	skb->len = len;
	return skb;
}

static void bench_put(struct sk_buff *skb)
{
	if (skb) {
		skb->next = bench_free_list;
		bench_free_list = skb;
	}
}

/* a pool of @n packets, all on the free list; free() it after */
static struct sk_buff *bench_pool(long n)
{
	struct sk_buff *pool = calloc(n, sizeof(*pool));
	long i;

	bench_free_list = NULL;
	for (i = 0; i < n; i++)
		bench_put(&pool[i]);
	return pool;
}

/* frees a run's pool (its core purged) and returns ns per packet: @t seconds for @n packets */
static double bench_done(struct sk_buff *pool, double t, long n)
{
	free(pool);
	return t * 1e9 / n;
}

/* ns per packet of a FIFO held at @limit packets */
static double bench_fifo(u32 limit, long n)
{
	struct sk_buff_head q;
	struct sk_buff *pool = calloc(limit + 1, sizeof(*pool)), *skb;
	long i;
	double t;

	__skb_queue_head_init(&q);
	for (i = 0; i < limit; i++)
		__skb_queue_tail(&q, &pool[i]);
	t = bench_now();
	for (i = 0; i < n; i++) {
		skb = __skb_dequeue(&q);
		if (skb_queue_len(&q) < limit)
			__skb_queue_tail(&q, skb);
	}
	return bench_done(pool, bench_now() - t, n);
}

/*
 * The fastest of 5 alternate runs of a FIFO and of @core_run(limit, flows, load, n), a core's
 * benchmark (ns per packet): the host is shared, the fastest run is the least disturbed. The FIFO is
 * @fifo_run(limit, load, n) when a core's loads need their own baseline, bench_fifo() when NULL.
 */
static void bench_best_of_5(double (*core_run)(u32 limit, u32 flows, int load, long n),
			    double (*fifo_run)(u32 limit, int load, long n), u32 limit, u32 flows,
			    int load, long n, double *fifo, double *core_ns)
{
	int r;

	*fifo = *core_ns = 1e9;
	for (r = 0; r < 5; r++) {
		double x = fifo_run ? fifo_run(limit, load, n) : bench_fifo(limit, n);
		double y = core_run(limit, flows, load, n);

		*fifo = x < *fifo ? x : *fifo;
		*core_ns = y < *core_ns ? y : *core_ns;
	}
}

#endif /* _BENCH_FIFO_H */
