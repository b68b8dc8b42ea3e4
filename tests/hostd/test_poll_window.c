// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The adaptive poll window (device.h, struct hostd_poll_window), one test
 * per rule: it opens and doubles while the guest's next work comes within
 * the cap, never past the cap; work past the cap closes it; work the
 * window caught leaves it be; a cap of 0 never opens it; open() is a
 * question about the clock.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "device.h"

#define US 1000ULL

static void opens_and_doubles_to_the_cap(void **state)
{
	struct hostd_poll_window w = { .cap_ns = 50 * US };

	(void)state;
	hostd_poll_window_adapt(&w, 30 * US);
	assert_int_equal(w.ns, HOSTD_POLL_WINDOW_START_NS);
	hostd_poll_window_adapt(&w, 30 * US);
	assert_int_equal(w.ns, 2 * HOSTD_POLL_WINDOW_START_NS);
	hostd_poll_window_adapt(&w, 30 * US);
	assert_int_equal(w.ns, 40 * US);
	hostd_poll_window_adapt(&w, 45 * US);
	assert_int_equal(w.ns, 50 * US);	/* 80 capped */
	hostd_poll_window_adapt(&w, 50 * US);	/* caught: no change */
	assert_int_equal(w.ns, 50 * US);
	assert_int_equal(w.grows, 4);
	assert_int_equal(w.shrinks, 0);
}

static void work_past_the_cap_closes_it(void **state)
{
	struct hostd_poll_window w = { .cap_ns = 50 * US, .ns = 40 * US };

	(void)state;
	hostd_poll_window_adapt(&w, 50 * US + 1);
	assert_int_equal(w.ns, 0);
	assert_int_equal(w.shrinks, 1);
	/* closed stays closed for a request/response guest */
	hostd_poll_window_adapt(&w, 300 * US);
	assert_int_equal(w.ns, 0);
	assert_int_equal(w.shrinks, 1);	/* counted once: it was shut */
	assert_int_equal(w.grows, 0);
}

static void caught_work_leaves_it(void **state)
{
	struct hostd_poll_window w = { .cap_ns = 50 * US, .ns = 20 * US };

	(void)state;
	hostd_poll_window_adapt(&w, 5 * US);
	hostd_poll_window_adapt(&w, 20 * US);
	assert_int_equal(w.ns, 20 * US);
	assert_int_equal(w.grows + w.shrinks, 0);
}

static void cap_zero_never_opens(void **state)
{
	struct hostd_poll_window w = { 0 };

	(void)state;
	hostd_poll_window_adapt(&w, 1);
	hostd_poll_window_adapt(&w, 0);
	assert_int_equal(w.ns, 0);
	assert_false(hostd_poll_window_open(&w, hostd_now_ns()));
	assert_int_equal(w.grows + w.shrinks, 0);
}

static void open_follows_the_clock(void **state)
{
	struct hostd_poll_window w = { .cap_ns = 1000000 * US, .ns = 1000000 * US };
	__u64 now = hostd_now_ns();

	(void)state;
	assert_true(hostd_poll_window_open(&w, now));		/* 1 s left */
	assert_false(hostd_poll_window_open(&w, now - 2000000 * US));
	w.ns = 0;
	assert_false(hostd_poll_window_open(&w, now));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(opens_and_doubles_to_the_cap),
		cmocka_unit_test(work_past_the_cap_closes_it),
		cmocka_unit_test(caught_work_leaves_it),
		cmocka_unit_test(cap_zero_never_opens),
		cmocka_unit_test(open_follows_the_clock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
