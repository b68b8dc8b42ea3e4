// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-blk host path cost, printed (never asserted): 4 KiB random reads
 * at queue depth 1 and 16 through the whole host side (a fakeguest posts
 * on the device's ring, libvbus-hostd's loop runs the device, io_uring
 * reads into guest RAM, the device hands back) against the same reads
 * issued straight to an io_uring on the same file, in the same run,
 * alternating, RUNS runs of a second each: medians with min..max and the
 * ratio. Both read the page cache by default (direct=0), so the figure
 * is the device's own overhead, not a disk's; `direct=1` (argument)
 * measures with O_DIRECT where the file system takes it.
 *
 * Then the wakeups: QD1 with the guest in a thread of its own (it posts,
 * spins until the completion is back, posts the next) and the host loop
 * asleep in epoll between events, against the same with poll_us=50
 * (vbus_blk_poll.c), alternating: microseconds per I/O, the host
 * thread's CPU per I/O and the doorbells per I/O. That is what polling
 * saves and costs on this machine without a guest kernel in the way.
 *
 * Last, queue threads (threads=N, vbus_blk_bench_threads.c): kIOPS and
 * host CPU ns per I/O at QD1 and QD32 for 1 and 2 queues on the guest's
 * thread, 1 queue on a queue thread and 2 queues on 2 queue threads;
 * `threads` (third argument) prints only that table.
 *
 *   build/tests/hostd/devices/vbus_blk/hostd_vbus_blk_bench [direct=0|1] [runs] [threads]
 *
 * The files (64 MiB each) go to $VBUS_BLK_TEST_DIR or the current
 * directory.
 *
 * With nbd=URI instead, the NBD backend (vbus_blk_nbd*.c) against that
 * server (an export of 64 MiB or more, e.g. `qemu-nbd -k SOCK -f qcow2
 * IMG.qcow2` or `nbdkit -U SOCK memory 64M`): 4 KiB random reads at
 * QD32, the guest's interrupt handler run after each loop pass (it takes
 * the signal and re-arms it, as vbus_blk.ko does): IOPS and, per I/O,
 * the hand-backs (publications), the signals injected into the guest and
 * its doorbells, the figures a guest under KVM pays a VM exit or an
 * interrupt for:
 *
 *   hostd_vbus_blk_bench nbd=nbd+unix:///?socket=SOCK [runs]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <liburing.h>
#include <vbus/vbus_blk.h>
#include "fg_dev.h"
#include "vbus_blk_bench.h"

#define FILE_SIZE	BENCH_FILE_SIZE
#define IO		4096u
#define MAXQD		16
#define NBD_QD		32	/* nbd=URI: the queue depth */
#define RUN_NS		1000000000ull

static __u64 rnd_state = 0x9e3779b97f4a7c15ull;

static __u64 rnd_offset(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (rnd_state % (FILE_SIZE / IO)) * IO;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "vbus_blk_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* ---- through the device ------------------------------------------------------ */

struct dev_side {
	struct hostd_dev *dev;
	struct fg_ring ring;
	__u64 req[NBD_QD], buf[NBD_QD];
};

static void dev_post(struct dev_side *d, unsigned int i)
{
	struct vbus_blk_req *r = fgd_ram(d->req[i]);

	r->op = VBUS_BLK_OP_READ;
	r->sector = rnd_offset() / 512;
	r->nr_segs = 1;
	r->status = VBUS_BLK_S_PENDING;
	r->seg[0].addr = d->buf[i];
	r->seg[0].len = IO;
	if (fgd_post(&d->ring, d->req[i], VBUS_BLK_REQ_SIZE(1), i))
		die("post");
}

/* IOPS through the device for one run at depth @qd */
static double dev_run(struct dev_side *d, unsigned int qd)
{
	__u64 t0 = now_ns(), n = 0, cookie, t;
	unsigned int i;

	for (i = 0; i < qd; i++)
		dev_post(d, i);
	while ((t = now_ns()) - t0 < RUN_NS) {
		fgd_poll(1);
		while (fgd_reap(&d->ring, NULL, &cookie) == 1) {
			struct vbus_blk_req *r = fgd_ram(d->req[cookie]);

			if (r->status != VBUS_BLK_S_OK)
				die("status");
			n++;
			dev_post(d, (unsigned int)cookie);
		}
	}
	/* let the last ones land before the next run */
	for (i = 0; i < qd;) {
		fgd_poll(1);
		while (fgd_reap(&d->ring, NULL, &cookie) == 1)
			i++;
	}
	return (double)n * 1e9 / (double)(t - t0);
}

/* the device with @params, one queue of NBD_QD * 2 */
static void dev_open(struct dev_side *d, const char *params)
{
	struct vbus_blk_negotiate neg = { 0, 1, NBD_QD * 2, 0 };
	unsigned int i;
	int err;

	d->dev = fgd_dev_create("vbus-blk", params, &err);
	if (!d->dev || fgd_dev_open(d->dev, VBUS_BLK_VERSION) ||
	    fgd_call(d->dev, VBUS_BLK_FUNC_NEGOTIATE, &neg, sizeof(neg)) ||
	    fgd_ring_attach(d->dev, 0, NBD_QD * 2, &d->ring))
		die(d->dev ? "device" : fgd_last_error());
	for (i = 0; i < NBD_QD; i++) {
		d->req[i] = fgd_alloc(VBUS_BLK_REQ_SIZE(1), 64);
		d->buf[i] = fgd_alloc(IO, 4096);
	}
}

static void dev_setup(struct dev_side *d, const char *path, int direct,
		      const char *extra)
{
	char params[600];

	snprintf(params, sizeof(params), "file=%s,direct=%d,queues=1%s", path,
		 direct, extra);
	dev_open(d, params);
}

/* ---- QD1, the guest in a thread of its own -------------------------------------- */

struct qd1_guest {
	struct dev_side *d;
	int stop;		/* atomic: main asks the thread to end */
	int done;		/* atomic: the thread ended */
	__u64 n;
};

static void *qd1_guest_thread(void *arg)
{
	struct qd1_guest *g = arg;
	__u64 cookie;

	while (!__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE)) {
		dev_post(g->d, 0);
		while (fgd_reap(&g->d->ring, NULL, &cookie) != 1)
			;
		if (((struct vbus_blk_req *)fgd_ram(g->d->req[0]))->status !=
		    VBUS_BLK_S_OK)
			die("status");
		g->n++;
	}
	__atomic_store_n(&g->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static __u64 thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* one run: us per I/O, host loop CPU us per I/O, doorbells per I/O */
static void qd1_run(struct dev_side *d, double *us, double *cpu, double *db)
{
	struct qd1_guest g = { .d = d };
	__u64 t0, c0, b0, t;
	pthread_t th;

	b0 = fgd_stat(d->dev, "notify_in");
	c0 = thread_cpu_ns();
	t0 = now_ns();
	if (pthread_create(&th, NULL, qd1_guest_thread, &g))
		die("pthread_create");
	while (now_ns() - t0 < RUN_NS)
		fgd_poll(10);
	__atomic_store_n(&g.stop, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&g.done, __ATOMIC_ACQUIRE))
		fgd_poll(1);	/* its last request may still be ours */
	t = now_ns();
	pthread_join(th, NULL);
	if (!g.n)
		die("no I/O");
	*us = (double)(t - t0) / 1000.0 / (double)g.n;
	*cpu = (double)(thread_cpu_ns() - c0) / 1000.0 / (double)g.n;
	*db = (double)(fgd_stat(d->dev, "notify_in") - b0) / (double)g.n;
}

/* ---- straight to io_uring ------------------------------------------------------ */

struct raw_side {
	struct io_uring ring;
	int fd;
	void *buf[MAXQD];
};

static void raw_post(struct raw_side *r, unsigned int i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);

	io_uring_prep_read(sqe, r->fd, r->buf[i], IO, rnd_offset());
	io_uring_sqe_set_data64(sqe, i);
}

static double raw_run(struct raw_side *r, unsigned int qd)
{
	__u64 t0 = now_ns(), n = 0, t;
	struct io_uring_cqe *cqe;
	unsigned int i;

	for (i = 0; i < qd; i++)
		raw_post(r, i);
	io_uring_submit(&r->ring);
	while ((t = now_ns()) - t0 < RUN_NS) {
		/* every completion there is, then one submit: batched */
		if (io_uring_wait_cqe(&r->ring, &cqe))
			die("wait");
		do {
			if (cqe->res != (int)IO)
				die("read");
			i = (unsigned int)cqe->user_data;
			io_uring_cqe_seen(&r->ring, cqe);
			n++;
			raw_post(r, i);
		} while (io_uring_peek_cqe(&r->ring, &cqe) == 0);
		io_uring_submit(&r->ring);
	}
	for (i = 0; i < qd; i++) {
		if (io_uring_wait_cqe(&r->ring, &cqe))
			die("wait");
		io_uring_cqe_seen(&r->ring, cqe);
	}
	return (double)n * 1e9 / (double)(t - t0);
}

static void raw_setup(struct raw_side *r, const char *path, int direct)
{
	unsigned int i;

	r->fd = open(path, O_RDONLY | (direct ? O_DIRECT : 0));
	if (r->fd < 0 || io_uring_queue_init(64, &r->ring, 0))
		die("raw io_uring");
	for (i = 0; i < MAXQD; i++)
		if (posix_memalign(&r->buf[i], 4096, IO))
			die("memalign");
}

/* ---- nbd=URI: the NBD backend at QD32 ---------------------------------------------- */

struct nbd_fig {
	double iops, handbacks, signals, doorbells;	/* the last three per I/O */
};

static __u64 stat_of(struct dev_side *d, const char *key)
{
	return fgd_stat(d->dev, key);
}

static void nbd_run(struct dev_side *d, struct nbd_fig *f)
{
	__u64 b0 = stat_of(d, "batches"), o0 = stat_of(d, "notify_out");
	__u64 i0 = stat_of(d, "notify_in"), n = 0, cookie, t0, t;
	unsigned int i;

	fgd_irqs(&d->ring);
	t0 = now_ns();
	for (i = 0; i < NBD_QD; i++)
		dev_post(d, i);
	while ((t = now_ns()) - t0 < RUN_NS) {
		fgd_poll(1);
		fgd_irqs(&d->ring);	/* the guest's interrupt handler */
		while (fgd_reap(&d->ring, NULL, &cookie) == 1) {
			if (((struct vbus_blk_req *)fgd_ram(d->req[cookie]))->status !=
			    VBUS_BLK_S_OK)
				die("status");
			n++;
			dev_post(d, (unsigned int)cookie);
		}
	}
	if (!n)
		die("no I/O");
	f->iops = (double)n * 1e9 / (double)(t - t0);
	f->handbacks = (double)(stat_of(d, "batches") - b0) / (double)n;
	f->signals = (double)(stat_of(d, "notify_out") - o0) / (double)n;
	f->doorbells = (double)(stat_of(d, "notify_in") - i0) / (double)n;
	for (i = 0; i < NBD_QD;) {	/* the last ones land before the next run */
		fgd_poll(1);
		fgd_irqs(&d->ring);
		while (fgd_reap(&d->ring, NULL, &cookie) == 1)
			i++;
	}
}

static int cmp_fig(const void *a, const void *b, size_t off)
{
	double x = *(const double *)((const char *)a + off);
	double y = *(const double *)((const char *)b + off);

	return x < y ? -1 : x > y;
}

#define FIG_SORT(name)							\
	static int cmp_##name(const void *a, const void *b)		\
	{								\
		return cmp_fig(a, b, offsetof(struct nbd_fig, name));	\
	}
FIG_SORT(iops)
FIG_SORT(handbacks)
FIG_SORT(signals)
FIG_SORT(doorbells)

/* one figure of the runs: median (min..max), sorted by it */
static void nbd_print(struct nbd_fig *f, int runs, const char *what,
		      int (*cmp)(const void *, const void *), size_t off,
		      int prec)
{
	qsort(f, (size_t)runs, sizeof(*f), cmp);
#define V(i) (*(double *)((char *)&f[i] + off))
	printf("  %-14s %.*f (%.*f..%.*f)\n", what, prec, V(runs / 2), prec,
	       V(0), prec, V(runs - 1));
#undef V
}

static int nbd_main(const char *uri, int runs)
{
	struct nbd_fig f[99];
	struct dev_side d = { 0 };
	char params[600];
	int i;

	if (fgd_init())
		die("fgd_init");
	snprintf(params, sizeof(params), "%s,queues=1,nbd_conns=1", uri);
	dev_open(&d, params);
	if (fgd_stat(d.dev, "capacity") * 512 < FILE_SIZE) {
		fprintf(stderr, "vbus_blk_bench: %s: the export is smaller than "
			"%u MiB\n", uri, FILE_SIZE >> 20);
		return 1;
	}
	for (i = 0; i < runs; i++)
		nbd_run(&d, &f[i]);
	printf("vbus-blk nbd backend (%s), 4 KiB random reads at QD%u, %d "
	       "runs of 1 s: median (min..max)\n", uri, NBD_QD, runs);
	for (i = 0; i < runs; i++)
		f[i].iops /= 1000;
	nbd_print(f, runs, "kIOPS", cmp_iops, offsetof(struct nbd_fig, iops), 2);
	nbd_print(f, runs, "hand-backs/IO", cmp_handbacks,
		  offsetof(struct nbd_fig, handbacks), 3);
	nbd_print(f, runs, "signals/IO", cmp_signals,
		  offsetof(struct nbd_fig, signals), 3);
	nbd_print(f, runs, "doorbells/IO", cmp_doorbells,
		  offsetof(struct nbd_fig, doorbells), 3);
	printf("device: reads=%llu io_errors=%llu faulted=%d\n",
	       (unsigned long long)fgd_stat(d.dev, "reads"),
	       (unsigned long long)fgd_stat(d.dev, "io_errors"),
	       fgd_dev_faulted(d.dev));
	fgd_dev_destroy(d.dev);
	fgd_fini();
	return 0;
}

/* ---- main ----------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void make_file(const char *path)
{
	static char chunk[1 << 20];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	unsigned int i;

	if (fd < 0)
		die(path);
	memset(chunk, 0x5a, sizeof(chunk));
	for (i = 0; i < FILE_SIZE / sizeof(chunk); i++)
		if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
			die("write");
	fsync(fd);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *dir = getenv("VBUS_BLK_TEST_DIR");
	int direct = argc > 1 && !strcmp(argv[1], "direct=1");
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	bool threads_only = argc > 3 && !strcmp(argv[3], "threads");
	static const unsigned int qds[] = { 1, MAXQD };
	struct dev_side d = { 0 }, dp = { 0 };
	struct raw_side r = { 0 };
	char path[512], path2[512], path3[512], path4[512];
	const char *paths[BENCH_FILES] = { path, path2, path3, path4 };
	unsigned int q;
	int i;

	if (runs < 1 || runs > 99)
		runs = 5;
	if (argc > 1 && !strncmp(argv[1], "nbd=", 4))
		return nbd_main(argv[1], runs);
	if (threads_only) {
		for (i = 0; i < BENCH_FILES; i++) {
			snprintf((char *)paths[i], 512,
				 "%s/vbus-blk-bench-%d-t%d.img",
				 dir ? dir : ".", (int)getpid(), i);
			make_file(paths[i]);
		}
		if (fgd_init())
			die("fgd_init");
		bench_threads(paths, direct, runs);
		fgd_fini();
		for (i = 0; i < BENCH_FILES; i++)
			unlink(paths[i]);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/vbus-blk-bench-%d.img",
		 dir ? dir : ".", (int)getpid());
	snprintf(path2, sizeof(path2), "%s/vbus-blk-bench-%d-2.img",
		 dir ? dir : ".", (int)getpid());
	make_file(path);
	make_file(path2);
	if (fgd_init())
		die("fgd_init");
	dev_setup(&d, path, direct, "");
	dev_setup(&dp, path2, direct, ",poll_us=50");
	raw_setup(&r, path, direct);
	printf("vbus-blk host path, 4 KiB random reads, %s, %d runs of 1 s "
	       "(alternating): median (min..max) kIOPS\n",
	       fgd_stat(d.dev, "direct") ? "O_DIRECT" : "page cache", runs);
	for (q = 0; q < sizeof(qds) / sizeof(qds[0]); q++) {
		double dv[99], rv[99];

		for (i = 0; i < runs; i++) {
			dv[i] = dev_run(&d, qds[q]) / 1000;
			rv[i] = raw_run(&r, qds[q]) / 1000;
		}
		qsort(dv, (size_t)runs, sizeof(double), cmp_double);
		qsort(rv, (size_t)runs, sizeof(double), cmp_double);
		printf("QD%-2u  vbus-blk %7.1f (%.1f..%.1f)   io_uring alone "
		       "%7.1f (%.1f..%.1f)   ratio %.2f\n", qds[q],
		       dv[runs / 2], dv[0], dv[runs - 1], rv[runs / 2], rv[0],
		       rv[runs - 1], dv[runs / 2] / rv[runs / 2]);
	}
	{
		double u[2][99], c[2][99], b[2][99];
		struct dev_side *sd[2] = { &d, &dp };
		static const char *const name[2] = { "poll_us=0 ", "poll_us=50" };
		unsigned int k;

		printf("QD1, guest in its own thread (spinning for the completion), "
		       "host loop in epoll; %d runs of 1 s each, alternating: "
		       "median (min..max)\n", runs);
		for (i = 0; i < runs; i++)
			for (k = 0; k < 2; k++)
				qd1_run(sd[k], &u[k][i], &c[k][i], &b[k][i]);
		for (k = 0; k < 2; k++) {
			qsort(u[k], (size_t)runs, sizeof(double), cmp_double);
			qsort(c[k], (size_t)runs, sizeof(double), cmp_double);
			qsort(b[k], (size_t)runs, sizeof(double), cmp_double);
			printf("  %s  %6.1f (%.1f..%.1f) us/IO   host CPU %6.1f "
			       "(%.1f..%.1f) us/IO   doorbells %.3f (%.3f..%.3f)/IO\n",
			       name[k], u[k][runs / 2], u[k][0], u[k][runs - 1],
			       c[k][runs / 2], c[k][0], c[k][runs - 1],
			       b[k][runs / 2], b[k][0], b[k][runs - 1]);
		}
		printf("  ratio poll_us=50 / poll_us=0: %.2f us/IO, %.2f host "
		       "CPU/IO\n", u[1][runs / 2] / u[0][runs / 2],
		       c[1][runs / 2] / c[0][runs / 2]);
	}
	printf("device: reads=%llu batches=%llu notify_in=%llu bad=%llu "
	       "faulted=%d\n",
	       (unsigned long long)fgd_stat(d.dev, "reads"),
	       (unsigned long long)fgd_stat(d.dev, "batches"),
	       (unsigned long long)fgd_stat(d.dev, "notify_in"),
	       (unsigned long long)fgd_stat(d.dev, "bad_requests"),
	       fgd_dev_faulted(d.dev));
	io_uring_queue_exit(&r.ring);
	close(r.fd);
	fgd_dev_destroy(d.dev);
	fgd_dev_destroy(dp.dev);
	/* the files again: the devices let go of them */
	snprintf(path3, sizeof(path3), "%s/vbus-blk-bench-%d-3.img",
		 dir ? dir : ".", (int)getpid());
	make_file(path3);
	snprintf(path4, sizeof(path4), "%s/vbus-blk-bench-%d-4.img",
		 dir ? dir : ".", (int)getpid());
	make_file(path4);
	bench_threads(paths, direct, runs);
	fgd_fini();
	for (i = 0; i < BENCH_FILES; i++)
		unlink(paths[i]);
	return 0;
}
