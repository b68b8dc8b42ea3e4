// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * venet's doorbell_mask_us (venet_tx_hold.c): a streaming guest's drained
 * tx ring stays masked and a timer brings the host back to look. The
 * device runs backend=null (no tap, no namespace), driven by the fake
 * guest of fg_dev.c, whose loop runs only inside fgd_run_until(): between
 * two runs nothing on the host moves, so a check reads the state a run
 * left. What the guest sees of the host's mask is the south irq's
 * `enabled` in the tx ring's shm-signal (what its inject reads before it
 * rings). One behaviour per check:
 *
 *   one_frame_sleeps        a request/response guest's single frame is
 *                           never held: the drained ring is unmasked
 *   small_frames_sleep      nor are a few small ones (TCP ACKs: holding
 *                           them would slow the peer's sending)
 *   stream_is_held          16 KiB in a burst leave the ring masked; the
 *                           next burst rings no doorbell and is sent by
 *                           the timer
 *   big_frame_is_held       so does one frame of that size (a GSO frame)
 *   hold_ends_unmasked      looks that find nothing end the hold: the
 *                           completions signalled, unmasked, the next
 *                           post rings
 *   mask_zero_never_holds   doorbell_mask_us=0: every drained ring unmasks
 *   close_ends_hold         DEVCLOSE during a hold: no look afterwards
 *   bad_values              doorbell_mask_us= and rx_coalesce_us=
 *                           refusals say why
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <vbus/venet.h>
#include "fg_dev.h"

#define TIMEOUT_MS 10000
#define BURST 4
#define SMALL 100		/* a request, or an ACK */
#define FRAME (4u << 10)	/* BURST of them: VENET_TX_HOLD_BYTES */
#define BIG (16u << 10)		/* VENET_TX_HOLD_BYTES */

struct hfx {
	struct hostd_dev *dev;
	struct fg_ring rx, tx;
	__u64 gpa;
	unsigned int reaped;
	__u64 irqs;
};

static int setup(void **state)
{
	static struct hfx f;

	memset(&f, 0, sizeof(f));
	*state = &f;
	return fgd_init();
}

static int teardown(void **state)
{
	struct hfx *f = *state;

	if (f->dev)
		fgd_dev_destroy(f->dev);
	fgd_fini();
	return 0;
}

/* backend=null with @extra params, open, rings attached, link up */
static void up(struct hfx *f, const char *extra)
{
	char params[128];
	int err;

	snprintf(params, sizeof(params), "backend=null%s%s",
		 extra ? "," : "", extra ? extra : "");
	f->dev = fgd_dev_create(VENET_TYPE, params, &err);
	assert_non_null(f->dev);
	assert_int_equal(fgd_dev_open(f->dev, VENET_VERSION), 0);
	assert_int_equal(fgd_ring_attach(f->dev, VENET_QUEUE_RX, 16, &f->rx),
			 0);
	assert_int_equal(fgd_ring_attach(f->dev, VENET_QUEUE_TX, 64, &f->tx),
			 0);
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_LINKUP, NULL, 0), 0);
	f->gpa = fgd_alloc(FRAME, 64);	/* >= SMALL */
	memset(fgd_ram(f->gpa), 0x5a, FRAME);
}

/* the host's tx mask as the guest reads it before ringing */
static bool host_unmasked(struct hfx *f)
{
	return fgd_host_unmasked(&f->tx);
}

/*
 * @n frames of @len with one tail publication and one signal (if
 * unmasked)
 */
static void burst_of(struct hfx *f, unsigned int n, __u64 len)
{
	struct ioq_ring_desc d[BURST];
	unsigned int i;

	assert_true(n <= BURST);
	for (i = 0; i < n; i++)
		d[i] = (struct ioq_ring_desc){ .cookie = i, .ptr = f->gpa,
					       .len = len };
	assert_int_equal(fg_ring_post_bulk(&f->tx, d, n, true), (int)n);
}

static void burst(struct hfx *f, unsigned int n)
{
	burst_of(f, n, FRAME);
}

struct goal {
	struct hfx *f;
	unsigned int want;
};

static bool reaped(void *arg)
{
	struct goal *g = arg;

	while (g->f->reaped < g->want && fgd_reap(&g->f->tx, NULL, NULL) == 1)
		g->f->reaped++;
	return g->f->reaped >= g->want;
}

/* run the host until the guest reaped @want completions in all */
static void run_reap(struct hfx *f, unsigned int want)
{
	struct goal g = { f, want };

	assert_true(fgd_run_until(reaped, &g, TIMEOUT_MS));
}

static bool unmasked(void *arg)
{
	return host_unmasked(arg);
}

static bool tx_irq(void *arg)
{
	struct hfx *f = arg;

	f->irqs += fgd_irqs(&f->tx);
	return f->irqs > 0;
}

static __u64 doorbells(struct hfx *f)
{
	return fgd_stat(f->dev, "tx_notify_in");
}

static void one_frame_sleeps(void **state)
{
	struct hfx *f = *state;

	up(f, NULL);
	burst_of(f, 1, SMALL);
	run_reap(f, 1);
	assert_true(host_unmasked(f));
	assert_int_equal(fgd_stat(f->dev, "tx_holds"), 0);
	assert_int_equal(doorbells(f), 1);
}

static void small_frames_sleep(void **state)
{
	struct hfx *f = *state;

	up(f, NULL);
	burst_of(f, BURST, SMALL);
	run_reap(f, BURST);
	assert_true(host_unmasked(f));
	burst_of(f, BURST, SMALL);
	run_reap(f, 2 * BURST);
	assert_int_equal(doorbells(f), 2);
	assert_int_equal(fgd_stat(f->dev, "tx_holds"), 0);
}

static void stream_is_held(void **state)
{
	struct hfx *f = *state;

	up(f, NULL);
	assert_int_equal(fgd_stat(f->dev, "doorbell_mask_us"), 500);
	burst(f, BURST);
	run_reap(f, BURST);
	/* drained, and still masked: the guest's next burst rings nothing */
	assert_false(host_unmasked(f));
	burst(f, BURST);
	run_reap(f, 2 * BURST);
	assert_int_equal(doorbells(f), 1);
	assert_true(fgd_stat(f->dev, "tx_holds") >= 1);
	assert_int_equal(fgd_stat(f->dev, "tx_packets"), 2 * BURST);
}

static void big_frame_is_held(void **state)
{
	struct hfx *f = *state;
	__u64 gpa;

	up(f, NULL);
	gpa = fgd_alloc(BIG, 64);
	memset(fgd_ram(gpa), 0x5a, BIG);
	assert_int_equal(fgd_post(&f->tx, gpa, BIG, 0), 0);
	run_reap(f, 1);
	assert_false(host_unmasked(f));
	assert_int_equal(fgd_stat(f->dev, "tx_bytes"), BIG);
}

static void hold_ends_unmasked(void **state)
{
	struct hfx *f = *state;

	up(f, NULL);
	burst(f, BURST);
	run_reap(f, BURST);
	assert_false(host_unmasked(f));
	assert_true(fgd_run_until(unmasked, f, TIMEOUT_MS));
	assert_true(fgd_stat(f->dev, "tx_holds") >= 1);
	/* the completions reach a guest that waits for them */
	assert_true(fgd_run_until(tx_irq, f, TIMEOUT_MS));
	burst(f, 1);
	run_reap(f, BURST + 1);
	assert_int_equal(doorbells(f), 2);
}

static void mask_zero_never_holds(void **state)
{
	struct hfx *f = *state;

	up(f, "doorbell_mask_us=0");
	assert_int_equal(fgd_stat(f->dev, "doorbell_mask_us"), 0);
	burst(f, BURST);
	run_reap(f, BURST);
	assert_true(host_unmasked(f));
	burst(f, BURST);
	run_reap(f, 2 * BURST);
	assert_int_equal(doorbells(f), 2);
	assert_int_equal(fgd_stat(f->dev, "tx_holds"), 0);
}

static void close_ends_hold(void **state)
{
	struct hfx *f = *state;

	up(f, "doorbell_mask_us=1000");
	burst(f, BURST);
	run_reap(f, BURST);
	assert_false(host_unmasked(f));
	fgd_dev_close(f->dev);
	/* past the period: a look would now count, and touch no ring */
	fgd_run_for(20);
	assert_int_equal(fgd_stat(f->dev, "tx_holds"), 0);
	assert_false(fgd_dev_faulted(f->dev));
}

static void refused(const char *params, const char *why)
{
	int err;

	assert_null(fgd_dev_create(VENET_TYPE, params, &err));
	assert_int_equal(err, -EINVAL);
	assert_non_null(strstr(fgd_last_error(), why));
}

static void bad_values(void **state)
{
	(void)state;
	refused("backend=null,doorbell_mask_us=10001",
		"doorbell_mask_us=10001: want 0..10000 (microseconds)");
	refused("backend=null,doorbell_mask_us=-1",
		"doorbell_mask_us=-1: want 0..10000 (microseconds)");
	refused("backend=null,doorbell_mask_us=1ms",
		"doorbell_mask_us=1ms: want 0..10000 (microseconds)");
	refused("backend=null,rx_coalesce_us=10001",
		"rx_coalesce_us=10001: want 0..10000 (microseconds)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(one_frame_sleeps, setup,
						teardown),
		cmocka_unit_test_setup_teardown(small_frames_sleep, setup,
						teardown),
		cmocka_unit_test_setup_teardown(stream_is_held, setup,
						teardown),
		cmocka_unit_test_setup_teardown(big_frame_is_held, setup,
						teardown),
		cmocka_unit_test_setup_teardown(hold_ends_unmasked, setup,
						teardown),
		cmocka_unit_test_setup_teardown(mask_zero_never_holds, setup,
						teardown),
		cmocka_unit_test_setup_teardown(close_ends_hold, setup,
						teardown),
		cmocka_unit_test_setup_teardown(bad_values, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
