// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * hostd_vbus_blk_bench's queue-threads table (threads=N, printed, never
 * asserted): 4 KiB random reads through the whole host side at QD1 and
 * QD32 per queue, for 1 queue on the guest's thread (threads=0, the
 * baseline), 1 queue on 1 queue thread, 2 queues on the guest's thread
 * and 2 queues on 2 queue threads (the last two tell the queues' gain
 * from the threads').
 * The host runs as vbus-hostd does (the guest's loop on its thread,
 * fgd_host_start); the guest is this thread, posting on every queue and
 * spinning on the rings for completions. Per configuration: kIOPS and
 * host CPU ns per I/O (the process's CPU time less this thread's: the
 * guest's loop, the queue threads and io_uring's workers), median
 * (min..max) over the runs, the configurations alternating within each
 * run, and the ratio of each median to the baseline's.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vbus/vbus_blk.h>
#include "fg_dev.h"
#include "vbus_blk_bench.h"

#define TQD		32		/* the deeper queue depth, per queue */
#define TIO		4096u
#define TRUN_NS		1000000000ull
#define NCONF		BENCH_FILES

struct tside {
	const char *name;
	struct hostd_dev *dev;
	unsigned int nq;
	struct fg_ring ring[2];
	__u64 req[2][TQD], buf[2][TQD];
};

static __u64 trnd = 0x2545f4914f6cdd1dull;

static __u64 tnow(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static void tdie(const char *what)
{
	fprintf(stderr, "vbus_blk_bench threads: %s: %s\n", what,
		strerror(errno));
	exit(1);
}

static void tpost(struct tside *s, unsigned int q, unsigned int i)
{
	struct vbus_blk_req *r = fgd_ram(s->req[q][i]);

	trnd ^= trnd << 13;
	trnd ^= trnd >> 7;
	trnd ^= trnd << 17;
	r->op = VBUS_BLK_OP_READ;
	r->sector = (trnd % (BENCH_FILE_SIZE / TIO)) * (TIO / 512);
	r->nr_segs = 1;
	r->status = VBUS_BLK_S_PENDING;
	r->seg[0].addr = s->buf[q][i];
	r->seg[0].len = TIO;
	if (fgd_post(&s->ring[q], s->req[q][i], VBUS_BLK_REQ_SIZE(1), i))
		tdie("post");
}

static void tsetup(struct tside *s, const char *name, const char *path,
		   int direct, unsigned int nq, unsigned int threads)
{
	struct vbus_blk_negotiate neg = { 0, nq, 2 * TQD, 0 };
	char params[700];
	unsigned int q, i;
	int err;

	s->name = name;
	s->nq = nq;
	snprintf(params, sizeof(params),
		 "file=%s,direct=%d,queues=%u,threads=%u", path, direct, nq,
		 threads);
	s->dev = fgd_dev_create("vbus-blk", params, &err);
	if (!s->dev || fgd_dev_open(s->dev, VBUS_BLK_VERSION) ||
	    fgd_call(s->dev, VBUS_BLK_FUNC_NEGOTIATE, &neg, sizeof(neg)) ||
	    neg.nr_queues != nq)
		tdie("device");
	for (q = 0; q < nq; q++) {
		if (fgd_ring_attach(s->dev, q, 2 * TQD, &s->ring[q]))
			tdie("ring");
		for (i = 0; i < TQD; i++) {
			s->req[q][i] = fgd_alloc(VBUS_BLK_REQ_SIZE(1), 64);
			s->buf[q][i] = fgd_alloc(TIO, 4096);
		}
	}
}

/* one run at @qd per queue: kIOPS, and host CPU ns per I/O */
static void trun(struct tside *s, unsigned int qd, double *kiops,
		 double *host_ns)
{
	__u64 t0, p0, g0, n = 0, cookie, t;
	unsigned int q, i, left;

	p0 = tnow(CLOCK_PROCESS_CPUTIME_ID);
	g0 = tnow(CLOCK_THREAD_CPUTIME_ID);
	t0 = tnow(CLOCK_MONOTONIC);
	for (q = 0; q < s->nq; q++)
		for (i = 0; i < qd; i++)
			tpost(s, q, i);
	while ((t = tnow(CLOCK_MONOTONIC)) - t0 < TRUN_NS) {
		for (q = 0; q < s->nq; q++) {
			while (fgd_reap(&s->ring[q], NULL, &cookie) == 1) {
				struct vbus_blk_req *r =
					fgd_ram(s->req[q][cookie]);

				if (r->status != VBUS_BLK_S_OK)
					tdie("status");
				n++;
				tpost(s, q, (unsigned int)cookie);
			}
		}
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	}
	/* the last ones land before the next configuration runs */
	for (left = s->nq * qd; left;)
		for (q = 0; q < s->nq; q++)
			while (fgd_reap(&s->ring[q], NULL, &cookie) == 1)
				left--;
	*kiops = (double)n * 1e6 / (double)(t - t0);
	*host_ns = (double)((tnow(CLOCK_PROCESS_CPUTIME_ID) - p0) -
			    (tnow(CLOCK_THREAD_CPUTIME_ID) - g0)) / (double)n;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void tprint(const char *name, unsigned int qd, double *k, double *h,
		   int runs, double kbase, double hbase)
{
	qsort(k, (size_t)runs, sizeof(double), cmpd);
	qsort(h, (size_t)runs, sizeof(double), cmpd);
	printf("  QD%-2u %-22s %8.1f (%.1f..%.1f) kIOPS  x%.2f   host %7.0f "
	       "(%.0f..%.0f) ns/IO  x%.2f\n", qd, name, k[runs / 2], k[0],
	       k[runs - 1], k[runs / 2] / kbase, h[runs / 2], h[0],
	       h[runs - 1], h[runs / 2] / hbase);
}

void bench_threads(const char *const paths[BENCH_FILES], int direct,
		   int runs)
{
	static const unsigned int qds[] = { 1, TQD };
	static struct tside s[NCONF];
	unsigned int c, k;
	int i;

	tsetup(&s[0], "1 queue, threads=0", paths[0], direct, 1, 0);
	tsetup(&s[1], "1 queue, threads=1", paths[1], direct, 1, 1);
	tsetup(&s[2], "2 queues, threads=0", paths[2], direct, 2, 0);
	tsetup(&s[3], "2 queues, threads=2", paths[3], direct, 2, 2);
	if (fgd_host_start())
		tdie("host thread");
	printf("queue threads: 4 KiB random reads, %s, QD per queue, guest "
	       "spinning in this thread, host as vbus-hostd runs it; %d runs "
	       "of 1 s, configurations alternating: median (min..max), x = "
	       "median / threads=0's\n",
	       fgd_stat(s[0].dev, "direct") ? "O_DIRECT" : "page cache", runs);
	for (k = 0; k < sizeof(qds) / sizeof(qds[0]); k++) {
		double kv[NCONF][99], hv[NCONF][99], kb, hb;

		for (i = 0; i < runs; i++)
			for (c = 0; c < NCONF; c++)
				trun(&s[c], qds[k], &kv[c][i], &hv[c][i]);
		qsort(kv[0], (size_t)runs, sizeof(double), cmpd);
		qsort(hv[0], (size_t)runs, sizeof(double), cmpd);
		kb = kv[0][runs / 2];
		hb = hv[0][runs / 2];
		for (c = 0; c < NCONF; c++)
			tprint(s[c].name, qds[k], kv[c], hv[c], runs, kb, hb);
	}
	fgd_stopping();
	for (c = 0; c < NCONF; c++) {
		printf("  %s: reads=%llu batches=%llu notify_in=%llu "
		       "faulted=%d", s[c].name,
		       (unsigned long long)fgd_stat(s[c].dev, "reads"),
		       (unsigned long long)fgd_stat(s[c].dev, "batches"),
		       (unsigned long long)fgd_stat(s[c].dev, "notify_in"),
		       fgd_dev_faulted(s[c].dev));
		/* which thread handed back how much (threads=N only) */
		for (k = 0; k < 2; k++) {
			char key[32];
			__u64 v;

			snprintf(key, sizeof(key), "thread%u_batches", k);
			v = fgd_stat(s[c].dev, key);
			if (v != ~0ull)
				printf(" %s=%llu", key, (unsigned long long)v);
		}
		printf("\n");
		fgd_dev_destroy(s[c].dev);
	}
}
