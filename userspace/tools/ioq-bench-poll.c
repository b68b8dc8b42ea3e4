// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ioq-bench --poll: the ring alone, both sides spinning (no sleeps, no
 * doorbells), so the figure is the ring's and compares like for like with
 * DPDK's rte_ring SP/SC bulk measured in the same run.
 *
 * For each mode (thread, process), ring size (256, 1024) and batch (1, 8,
 * 32) it runs, --reps times, alternating: IOQ v6 bulk calls, rte_ring, IOQ
 * v6 through the iterators, IOQ v5 through the iterators (what every
 * caller used before v6), rte_ring with 32-byte elements (what an IOQ
 * descriptor weighs: the payload's share of the gap to rte_ring's 8-byte
 * pointers). Each run moves -n messages; the figure is
 * messages from the first post to the last consume. It prints the median
 * with min..max and the ratios of the medians to rte_ring's.
 *
 * The IOQ loops follow the usage protocol: north posts (post_begin/end or
 * an iterator on ioq_idx_push), south consumes (consume_begin/end or
 * an iterator on valid), and north reaps (inuse) only when the ring says
 * full, as a driver that frees on demand does.
 *
 * Beside the table: a cache-line hand-off probe (two pinned threads
 * bouncing one line), so a reader can tell whether the two CPUs share a
 * core complex (tens of ns) or not (well over 100 ns).
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include "ioq-bench.h"

enum impl {
	IMPL_V6_BULK, IMPL_RTE, IMPL_V6_ITER, IMPL_V5_ITER, IMPL_RTE32, NIMPL
};

static const char *const impl_name[NIMPL] = {
	"ioq-v6-bulk", "rte_ring", "ioq-v6-iter", "ioq-v5-iter",
	"rte_ring-32B",
};

static bool is_rte(enum impl i)
{
	return i == IMPL_RTE || i == IMPL_RTE32;
}

static const unsigned int poll_batches[] = { 1, 8, 32 };
static const unsigned int poll_rings[] = { 256, 1024 };
#define NPB (sizeof(poll_batches) / sizeof(poll_batches[0]))
#define NPR (sizeof(poll_rings) / sizeof(poll_rings[0]))
#define MAX_REPS 99

/* Spin until the peer moves; give up when it failed or died. */
static int spin(struct bench_shared *sh, unsigned long *spins)
{
	bench_relax();
	return !(++*spins & 0xfffff) && bench_peer_gone(sh);
}

/* ---- IOQ, bulk calls ---- */

static int reap_all(struct ioq *q)
{
	__u32 pos;
	int k = ioq_reap_begin(q, ioq_size(q), &pos);

	return k > 0 ? ioq_reap_end(q, (unsigned int)k, 0) : k;
}

static void poll_bulk_north(struct bench_side *side)
{
	struct bench_shared *sh = side->sh;
	struct ioq *q = ioq_channel_ioq(side->ch);
	unsigned int b = sh->batch, i;
	unsigned long sent = 0, spins = 0;
	__u32 pos;
	int k;

	bench_wait_ready(sh);
	sh->t0_ns = bench_now_ns();
	while (sent < sh->n) {
		k = ioq_post_begin(q, b, &pos);
		if (k >= 0 && (unsigned int)k < b) {
			/* full: free what south completed, then look again */
			k = reap_all(q);
			if (k >= 0)
				k = ioq_post_begin(q, b, &pos);
		}
		if (k < 0) {
			bench_fail(sh, k);
			return;
		}
		if ((unsigned int)k < b) {
			if (spin(sh, &spins))
				return;
			continue;
		}
		for (i = 0; i < b; i++) {
			struct ioq_ring_desc *d = ioq_desc(q, pos + i);

			d->cookie = sent + i + 1;
			d->ptr = 0;
			d->len = 64;
		}
		ioq_post_end(q, b, 0);
		sent += b;
	}
}

static void poll_bulk_south(struct bench_side *side)
{
	struct bench_shared *sh = side->sh;
	struct ioq *q = ioq_channel_ioq(side->ch);
	unsigned int b = sh->batch, i;
	unsigned long got = 0, spins = 0;
	__u64 sum = 0;
	__u32 pos;
	int k;

	bench_set_ready(sh);
	while (got < sh->n) {
		k = ioq_consume_begin(q, b, &pos);
		if (k < 0) {
			bench_fail(sh, k);
			return;
		}
		if ((unsigned int)k < b) {
			if (spin(sh, &spins))
				return;
			continue;
		}
		for (i = 0; i < b; i++)
			sum += ioq_desc(q, pos + i)->cookie;
		ioq_consume_end(q, b, 0);
		got += b;
	}
	sh->t1_ns = bench_now_ns();
	sh->sum = sum;
}

/* ---- IOQ, the iterator API (the callers' way) ---- */

static int reap_iter(struct ioq *q)
{
	struct ioq_iterator it;
	int err;

	err = ioq_iter_init(q, &it, ioq_idx_reap, IOQ_ITER_REAP);
	if (!err)
		err = ioq_iter_seek(&it, ioq_seek_head, 0, 0);
	while (!err && ioq_iter_owned(&it))
		err = ioq_iter_pop(&it, 0);
	return err;
}

static void poll_iter_north(struct bench_side *side)
{
	struct bench_shared *sh = side->sh;
	struct ioq *q = ioq_channel_ioq(side->ch);
	unsigned long sent = 0, spins = 0;
	struct ioq_iterator it;
	int err, room = 0;

	err = ioq_iter_init(q, &it, ioq_idx_push, 0);
	if (!err)
		err = ioq_iter_seek(&it, ioq_seek_tail, 0, 0);
	bench_wait_ready(sh);
	sh->t0_ns = bench_now_ns();
	while (!err && sent < sh->n) {
		if (!room) {
			/* the slot at the tail is ours only with room on inuse */
			err = reap_iter(q);
			room = err ? err : ioq_remain(q, ioq_idx_reap);
			if (room < 0) {
				err = room;
				break;
			}
			if (!room && spin(sh, &spins))
				return;
			continue;
		}
		it.desc->cookie = sent + 1;
		it.desc->ptr = 0;
		it.desc->len = 64;
		err = ioq_iter_push(&it, 0);
		room--;
		sent++;
	}
	if (err)
		bench_fail(sh, err);
}

static void poll_iter_south(struct bench_side *side)
{
	struct bench_shared *sh = side->sh;
	struct ioq *q = ioq_channel_ioq(side->ch);
	unsigned long got = 0, spins = 0;
	struct ioq_iterator it;
	__u64 sum = 0;
	int err;

	err = ioq_iter_init(q, &it, ioq_idx_consume, 0);
	if (!err)
		err = ioq_iter_seek(&it, ioq_seek_head, 0, 0);
	bench_set_ready(sh);
	while (!err && got < sh->n) {
		if (!ioq_iter_owned(&it)) {
			if (spin(sh, &spins))
				return;
			continue;
		}
		sum += it.desc->cookie;
		err = ioq_iter_pop(&it, 0);
		got++;
	}
	if (err) {
		bench_fail(sh, err);
		return;
	}
	sh->t1_ns = bench_now_ns();
	sh->sum = sum;
}

/* ---- one run, and the repetitions ---- */

/* messages/s of one run, or 0 with *@err set */
static double run_one(struct bench_shared *sh, enum impl impl, int process,
		      unsigned int ring, unsigned int batch, unsigned long n,
		      int *err)
{
	static const bench_fn north[NIMPL] = {
		poll_bulk_north, bench_rte_north, poll_iter_north,
		poll_iter_north, bench_rte_north,
	};
	static const bench_fn south[NIMPL] = {
		poll_bulk_south, bench_rte_south, poll_iter_south,
		poll_iter_south, bench_rte_south,
	};
	unsigned int esize = impl == IMPL_RTE32 ? 32 : 8;
	__u64 want = (__u64)n * (n + 1) / 2;

	memset(sh, 0, sizeof(*sh));
	sh->n = n;
	sh->batch = batch;
	sh->ring = ring;
	sh->ver = impl == IMPL_V5_ITER ? IOQ_RING_VER_V5 : IOQ_RING_VER_V6;
	sh->esize = esize;
	if (is_rte(impl)) {
		sh->rte = bench_rte_new(ring, esize);
		if (!sh->rte) {
			*err = -ENOMEM;
			return 0;
		}
	}
	*err = bench_pair(process, north[impl], south[impl], sh);
	if (is_rte(impl))
		bench_rte_free(sh->rte, ring, esize);
	/* the consumer must have read exactly what was posted */
	if (!*err && sh->sum != want)
		*err = -EBADMSG;
	if (*err || sh->t1_ns <= sh->t0_ns)
		return 0;
	return (double)n / ((double)(sh->t1_ns - sh->t0_ns) / 1e9);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct stat3 {
	double med, min, max;
	int ok;
};

static struct stat3 stat_of(double *v, unsigned int n)
{
	struct stat3 s = { 0, 0, 0, 0 };

	if (!n)
		return s;
	qsort(v, n, sizeof(*v), cmp_double);
	s.min = v[0];
	s.max = v[n - 1];
	s.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	s.ok = 1;
	return s;
}

/* ---- the cache-line hand-off probe ---- */

struct handoff {
	/* the bounced line, alone on its 128 bytes */
	unsigned long line __attribute__((aligned(128)));
	char pad[128 - sizeof(unsigned long)];
	unsigned long iters;
	int cpu;
};

static void pin_self(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *handoff_peer(void *p)
{
	struct handoff *h = p;
	unsigned long i;

	pin_self(h->cpu);
	for (i = 0; i < h->iters; i++) {
		while (__atomic_load_n(&h->line, __ATOMIC_ACQUIRE) != 2 * i + 1)
			bench_relax();
		__atomic_store_n(&h->line, 2 * i + 2, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* ns per one-way hand-off of a cache line, or 0 */
static double handoff_ns(unsigned long iters)
{
	static struct handoff h;
	int ncpu_n, ncpu_s, online, usable;
	cpu_set_t all;
	pthread_t t;
	unsigned long i;
	__u64 t0, t1;

	bench_cpus(&ncpu_n, &ncpu_s, &online, &usable);
	if (ncpu_n < 0)
		return 0;
	sched_getaffinity(0, sizeof(all), &all);
	__atomic_store_n(&h.line, 0, __ATOMIC_RELAXED);
	h.iters = iters;
	h.cpu = ncpu_s;
	if (pthread_create(&t, NULL, handoff_peer, &h))
		return 0;
	pin_self(ncpu_n);
	t0 = bench_now_ns();
	for (i = 0; i < iters; i++) {
		__atomic_store_n(&h.line, 2 * i + 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&h.line, __ATOMIC_ACQUIRE) != 2 * i + 2)
			bench_relax();
	}
	t1 = bench_now_ns();
	pthread_join(t, NULL);
	sched_setaffinity(0, sizeof(all), &all);
	return (double)(t1 - t0) / (2.0 * (double)iters);
}

/* ---- the table ---- */

struct poll_row {
	int process;
	unsigned int ring, batch;
	struct stat3 s[NIMPL];
	int err[NIMPL];
};

/* @i's median over @base's */
static void print_ratio(FILE *f, const struct poll_row *r, enum impl i,
			enum impl base, int json)
{
	int ok = r->s[i].ok && r->s[base].ok && r->s[base].med > 0;
	double v = ok ? r->s[i].med / r->s[base].med : 0;

	if (json)
		fprintf(f, ok ? "%.3f" : "null", v);
	else if (ok)
		fprintf(f, " %7.2f", v);
	else
		fprintf(f, " %7s", "-");
}

static void print_poll_text(const struct poll_row *rows, int nrows,
			    unsigned long n, unsigned int reps,
			    struct stat3 ho, int pinned)
{
	int i, j;

	printf("ioq-bench --poll: ring throughput, both sides spinning; "
	       "%lu messages a run, median [min..max] of %u runs, M msgs/s\n",
	       n, reps);
	printf("  sides %s\n", pinned ? "pinned to two CPUs" :
	       "NOT pinned (fewer than 2 usable CPUs)");
	if (ho.ok)
		printf("  cache-line hand-off: %.0f ns [%.0f..%.0f] (one core "
		       "complex: ~30-40 ns; across complexes or sockets: "
		       "~100-200 ns)\n", ho.med, ho.min, ho.max);
	if (!bench_rte_available())
		printf("  rte_ring, rte_ring-32B: skipped (built without "
		       "libdpdk-dev)\n");
	printf("\n  %-7s %4s %5s", "mode", "ring", "batch");
	for (j = 0; j < NIMPL; j++)
		printf(" %22s", impl_name[j]);
	printf(" %7s %7s %7s %9s\n", "v6b/rte", "v6i/rte", "v5i/rte",
	       "v6b/rte32");
	for (i = 0; i < nrows; i++) {
		const struct poll_row *r = &rows[i];

		printf("  %-7s %4u %5u", r->process ? "process" : "thread",
		       r->ring, r->batch);
		for (j = 0; j < NIMPL; j++) {
			char cell[64];

			if (r->s[j].ok)
				snprintf(cell, sizeof(cell), "%.1f [%.1f..%.1f]",
					 r->s[j].med / 1e6, r->s[j].min / 1e6,
					 r->s[j].max / 1e6);
			else
				snprintf(cell, sizeof(cell), "%s",
					 r->err[j] == -ENOSYS ? "skipped" :
					 r->err[j] ? strerror(-r->err[j]) : "-");
			printf(" %22s", cell);
		}
		print_ratio(stdout, r, IMPL_V6_BULK, IMPL_RTE, 0);
		print_ratio(stdout, r, IMPL_V6_ITER, IMPL_RTE, 0);
		print_ratio(stdout, r, IMPL_V5_ITER, IMPL_RTE, 0);
		printf("  ");
		print_ratio(stdout, r, IMPL_V6_BULK, IMPL_RTE32, 0);
		printf("\n");
	}
}

static void print_poll_json(const struct poll_row *rows, int nrows,
			    unsigned long n, unsigned int reps,
			    struct stat3 ho, int pinned, int quick)
{
	int i, j;

	printf("{\"tool\": \"ioq-bench\", \"mode\": \"poll\", \"quick\": %s, "
	       "\"messages\": %lu, \"reps\": %u, \"pinned\": %s, "
	       "\"rte_ring\": %s, \"handoff_ns\": ",
	       quick ? "true" : "false", n, reps, pinned ? "true" : "false",
	       bench_rte_available() ? "true" : "false");
	if (ho.ok)
		printf("{\"median\": %.1f, \"min\": %.1f, \"max\": %.1f}",
		       ho.med, ho.min, ho.max);
	else
		printf("null");
	printf(",\n \"rows\": [");
	for (i = 0; i < nrows; i++) {
		const struct poll_row *r = &rows[i];

		printf("%s\n  {\"mode\": \"%s\", \"ring\": %u, \"batch\": %u",
		       i ? "," : "", r->process ? "process" : "thread",
		       r->ring, r->batch);
		for (j = 0; j < NIMPL; j++) {
			printf(", \"%s\": ", impl_name[j]);
			if (r->s[j].ok)
				printf("{\"median_msgs_per_s\": %.0f, "
				       "\"min\": %.0f, \"max\": %.0f}",
				       r->s[j].med, r->s[j].min, r->s[j].max);
			else
				printf("null");
		}
		printf(", \"ratio_v6_bulk_to_rte\": ");
		print_ratio(stdout, r, IMPL_V6_BULK, IMPL_RTE, 1);
		printf(", \"ratio_v6_iter_to_rte\": ");
		print_ratio(stdout, r, IMPL_V6_ITER, IMPL_RTE, 1);
		printf(", \"ratio_v5_iter_to_rte\": ");
		print_ratio(stdout, r, IMPL_V5_ITER, IMPL_RTE, 1);
		printf(", \"ratio_v6_bulk_to_rte32\": ");
		print_ratio(stdout, r, IMPL_V6_BULK, IMPL_RTE32, 1);
		printf("}");
	}
	printf("]}\n");
}

int bench_poll_main(int json, int quick, unsigned long n, unsigned int reps)
{
	struct poll_row rows[2 * NPR * NPB];
	static double v[NIMPL][MAX_REPS], hv[MAX_REPS];
	int ncpu_n, ncpu_s, online, usable, nrows = 0, failed = 0;
	unsigned int p, ri, bi, k, j, nv[NIMPL];
	struct bench_shared *sh;
	struct stat3 ho;

	if (reps > MAX_REPS)
		reps = MAX_REPS;
	n -= n % 32;	/* whole batches of every size */
	if (!n)
		n = 32;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("ioq-bench: mmap");
		return 1;
	}
	fflush(NULL);	/* nothing buffered may be duplicated by fork() */

	for (k = 0; k < reps; k++)
		hv[k] = handoff_ns(quick ? 2000 : 200000);
	ho = stat_of(hv, reps);
	ho.ok = ho.ok && ho.med > 0;

	for (p = 0; p < 2; p++)
		for (ri = 0; ri < NPR; ri++)
			for (bi = 0; bi < NPB; bi++) {
				struct poll_row *r = &rows[nrows++];

				memset(r, 0, sizeof(*r));
				memset(nv, 0, sizeof(nv));
				r->process = (int)p;
				r->ring = poll_rings[ri];
				r->batch = poll_batches[bi];
				/* alternate: one run of each, reps times */
				for (k = 0; k < reps; k++)
					for (j = 0; j < NIMPL; j++) {
						int err;
						double x;

						if (is_rte((enum impl)j) &&
						    !bench_rte_available()) {
							r->err[j] = -ENOSYS;
							continue;
						}
						x = run_one(sh, (enum impl)j,
							    (int)p, r->ring,
							    r->batch, n, &err);
						if (err) {
							r->err[j] = err;
							failed = 1;
							continue;
						}
						v[j][nv[j]++] = x;
					}
				for (j = 0; j < NIMPL; j++)
					if (!r->err[j])
						r->s[j] = stat_of(v[j], nv[j]);
			}

	bench_cpus(&ncpu_n, &ncpu_s, &online, &usable);
	if (json)
		print_poll_json(rows, nrows, n, reps, ho, ncpu_n >= 0, quick);
	else
		print_poll_text(rows, nrows, n, reps, ho, ncpu_n >= 0);
	munmap(sh, sizeof(*sh));
	return failed ? 1 : 0;
}
