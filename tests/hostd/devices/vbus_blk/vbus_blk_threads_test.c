// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-blk with threads=2 (queue threads, device.h and
 * vbus_blk_thread.c): its two queues served by two host threads of the
 * device's while the guest's thread (this one, as in vbus-hostd) answers
 * `ctl stats`, DEVCLOSE, `ctl resize` and `ctl drop` with I/O in flight.
 * Built with -DVBUS_TSAN=ON it is the thread sanitizer's stress of the
 * threading (label tsan: scripts/test.sh's tsan stage runs it), and every
 * check below also stands alone.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <vbus/vbus_blk.h>
#include "blk_fx.h"

#define DISK_SIZE	(4u << 20)
#define QD		8		/* per queue */
#define ROUNDS		150
#define IO		4096u

static int setup(void **state)
{
	return blk_fx_setup_file(state, "thr", DISK_SIZE, 0x33);
}

static int teardown(void **state)
{
	return blk_fx_teardown_file(state);
}

/* queues=2,threads=2 up: two queues of 16, each on its thread */
static void up2(struct fx *f, const char *extra)
{
	char params[128];

	snprintf(params, sizeof(params), "queues=2,threads=2%s", extra);
	blk_up(f, params);
	assert_int_equal(f->neg.nr_queues, 2);
}

struct batch {
	__u64 req[2][QD], buf[2][QD];
};

/* guest RAM for one batch on each queue */
static void batch_new(struct batch *b)
{
	unsigned int q, i;

	for (q = 0; q < 2; q++)
		for (i = 0; i < QD; i++)
			b->buf[q][i] = buf_new(IO, 0);
}

/* request @i of queue @q: its own 4 KiB of the disk */
static __u64 sector_of(unsigned int round, unsigned int q, unsigned int i)
{
	return ((round % 32) * 2 * QD + q * QD + i) * (IO / SEC);
}

/* post QD of @op on both queues (writes carry a pattern of @round) */
static void batch_post(struct fx *f, struct batch *b, __u8 op,
		       unsigned int round)
{
	unsigned int q, i;

	for (q = 0; q < 2; q++) {
		for (i = 0; i < QD; i++) {
			__u32 len = IO;

			if (op == VBUS_BLK_OP_WRITE)
				memset(fgd_ram(b->buf[q][i]),
				       (int)(round * 7 + q * 3 + i) & 0xff, IO);
			else
				memset(fgd_ram(b->buf[q][i]), 0, IO);
			b->req[q][i] = req_new(op, 0, sector_of(round, q, i), 0,
					       1, &b->buf[q][i], &len);
			assert_int_equal(fgd_post(&f->r[q], b->req[q][i],
						  VBUS_BLK_REQ_SIZE(1),
						  ++f->cookie), 0);
		}
	}
}

static void batch_reap(struct fx *f, struct batch *b)
{
	unsigned int q, i;

	for (q = 0; q < 2; q++) {
		reap_n(&f->r[q], QD, NULL);
		for (i = 0; i < QD; i++)
			assert_int_equal(req_status(b->req[q][i]),
					 VBUS_BLK_S_OK);
	}
}

static void batch_check(struct batch *b, unsigned int round)
{
	unsigned int q, i, k;

	for (q = 0; q < 2; q++)
		for (i = 0; i < QD; i++) {
			const __u8 *p = fgd_ram(b->buf[q][i]);

			for (k = 0; k < IO; k++)
				if (p[k] != ((round * 7 + q * 3 + i) & 0xff))
					fail_msg("round %u queue %u req %u: byte %u is %u",
						 round, q, i, k, p[k]);
		}
}

/*
 * Writes then reads on both queues, round after round, with `ctl stats`
 * (which copies each thread's counters on that thread) while they are in
 * flight; the data comes back, and each thread served its queue.
 */
static void io_two_threads(void **state)
{
	struct fx *f = *state;
	struct batch b;
	unsigned int r;
	__u64 reads;

	up2(f, "");
	batch_new(&b);
	for (r = 0; r < ROUNDS; r++) {
		batch_post(f, &b, VBUS_BLK_OP_WRITE, r);
		(void)fgd_stat(f->dev, "reads");	/* in flight */
		batch_reap(f, &b);
		batch_post(f, &b, VBUS_BLK_OP_READ, r);
		reads = fgd_stat(f->dev, "reads");
		assert_true(reads >= (__u64)r * 2 * QD);
		batch_reap(f, &b);
		batch_check(&b, r);
	}
	assert_false(fgd_dev_faulted(f->dev));
	assert_int_equal(fgd_stat(f->dev, "threads"), 2);
	assert_int_equal(fgd_stat(f->dev, "reads"), ROUNDS * 2 * QD);
	assert_int_equal(fgd_stat(f->dev, "writes"), ROUNDS * 2 * QD);
	assert_true(fgd_stat(f->dev, "thread0_batches") > 0);
	assert_true(fgd_stat(f->dev, "thread1_batches") > 0);
	assert_int_equal(fgd_stat(f->dev, "thread0_batches") +
			 fgd_stat(f->dev, "thread1_batches"),
			 fgd_stat(f->dev, "batches"));
}

/*
 * DEVCLOSE with both queues' requests in flight on their threads: the
 * threads let go (drained, detached) before close returns; a new session
 * on the same device works, and a `ctl drop` with I/O in flight too.
 */
static void close_and_drop_in_flight(void **state)
{
	struct fx *f = *state;
	struct batch b;
	unsigned int r;

	up2(f, "");
	batch_new(&b);
	for (r = 0; r < 20; r++) {
		batch_post(f, &b, VBUS_BLK_OP_WRITE, r);
		fgd_poll(0);	/* the doorbells to the threads */
		fgd_dev_close(f->dev);
		assert_int_equal(fgd_dev_open(f->dev, VBUS_BLK_VERSION), 0);
		blk_negotiate(f, f->cfg.features, 2, 16);
	}
	batch_post(f, &b, VBUS_BLK_OP_WRITE, 0);
	batch_reap(f, &b);
	batch_post(f, &b, VBUS_BLK_OP_READ, 0);
	batch_reap(f, &b);
	batch_check(&b, 0);
	assert_false(fgd_dev_faulted(f->dev));
	batch_post(f, &b, VBUS_BLK_OP_WRITE, 1);
	fgd_poll(0);
	fgd_dev_destroy(f->dev);	/* ctl drop: close, destroy, join */
	f->dev = NULL;
}

/*
 * A request a queue thread cannot answer faults the device from that
 * thread; `ctl stats` on the guest's thread says why; the other queue's
 * thread stops too; a new open starts clean.
 */
static void fault_on_a_thread(void **state)
{
	struct fx *f = *state;
	struct batch b;

	up2(f, "");
	batch_new(&b);
	/* not 8-byte aligned: no header to answer in (vbus_blk_queue.c) */
	assert_int_equal(fgd_post(&f->r[1], 0x1003, VBUS_BLK_REQ_SIZE(1), 1),
			 0);
	while (!fgd_dev_faulted(f->dev))
		fgd_poll(10);
	assert_non_null(strstr(fgd_stat_str(f->dev, "fault"),
			       "not an aligned request"));
	assert_int_equal(fgd_stat(f->dev, "faults"), 1);
	fgd_dev_close(f->dev);
	assert_int_equal(fgd_dev_open(f->dev, VBUS_BLK_VERSION), 0);
	assert_false(fgd_dev_faulted(f->dev));
	blk_negotiate(f, f->cfg.features, 2, 16);
	batch_post(f, &b, VBUS_BLK_OP_WRITE, 3);
	batch_reap(f, &b);
}

/*
 * `ctl resize` on the guest's thread reaches the queue threads: a read
 * past the old end, on either queue, is in range once the disk grew.
 */
static void resize_reaches_threads(void **state)
{
	struct fx *f = *state;
	__u64 buf = buf_new(IO, 0);
	__u32 len = IO;
	char msg[256];
	unsigned int q;

	up2(f, "");
	for (q = 0; q < 2; q++)
		assert_int_equal(submit(f, q, req_new(VBUS_BLK_OP_READ, 0,
						      DISK_SIZE / SEC, 0, 1,
						      &buf, &len),
					VBUS_BLK_REQ_SIZE(1)),
				 VBUS_BLK_S_BADREQ);
	assert_int_equal(fgd_dev_ctl(f->dev, "resize", "8M", msg,
				     sizeof(msg)), 0);
	for (q = 0; q < 2; q++)
		assert_int_equal(submit(f, q, req_new(VBUS_BLK_OP_READ, 0,
						      DISK_SIZE / SEC, 0, 1,
						      &buf, &len),
					VBUS_BLK_REQ_SIZE(1)),
				 VBUS_BLK_S_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(io_two_threads, setup,
						teardown),
		cmocka_unit_test_setup_teardown(close_and_drop_in_flight,
						setup, teardown),
		cmocka_unit_test_setup_teardown(fault_on_a_thread, setup,
						teardown),
		cmocka_unit_test_setup_teardown(resize_reaches_threads, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
