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
 *   build/tests/hostd/hostd_vbus_blk_bench [direct=0|1] [runs]
 *
 * The file (64 MiB) goes to $VBUS_BLK_TEST_DIR or the current directory.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <liburing.h>
#include <vbus/vbus_blk.h>
#include "fg_dev.h"

#define FILE_SIZE	(64u << 20)
#define IO		4096u
#define MAXQD		16
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
	__u64 req[MAXQD], buf[MAXQD];
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

static void dev_setup(struct dev_side *d, const char *path, int direct)
{
	struct vbus_blk_negotiate neg = { 0, 1, MAXQD * 2, 0 };
	char params[600];
	unsigned int i;
	int err;

	if (fgd_init())
		die("fgd_init");
	snprintf(params, sizeof(params), "file=%s,direct=%d,queues=1", path,
		 direct);
	d->dev = fgd_dev_create("vbus-blk", params, &err);
	if (!d->dev || fgd_dev_open(d->dev, VBUS_BLK_VERSION) ||
	    fgd_call(d->dev, VBUS_BLK_FUNC_NEGOTIATE, &neg, sizeof(neg)) ||
	    fgd_ring_attach(d->dev, 0, MAXQD * 2, &d->ring))
		die("device");
	for (i = 0; i < MAXQD; i++) {
		d->req[i] = fgd_alloc(VBUS_BLK_REQ_SIZE(1), 64);
		d->buf[i] = fgd_alloc(IO, 4096);
	}
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
	static const unsigned int qds[] = { 1, MAXQD };
	struct dev_side d = { 0 };
	struct raw_side r = { 0 };
	char path[512];
	unsigned int q;
	int i;

	if (runs < 1 || runs > 99)
		runs = 5;
	snprintf(path, sizeof(path), "%s/vbus-blk-bench-%d.img",
		 dir ? dir : ".", (int)getpid());
	make_file(path);
	dev_setup(&d, path, direct);
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
	fgd_fini();
	unlink(path);
	return 0;
}
