// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The test-only dma_window= of a device (lib/dma_window.c), one test per
 * rule: without the key every buffer is admitted and nothing counted; a
 * buffer wholly inside [START, END) is admitted and counted in, one that
 * starts before, ends after or lies past it is refused and counted out;
 * a value that is not START-END with START < END is refused.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "dma_window.h"

static int setup_with(struct hostd_dma_window *w, const char *value)
{
	const struct hostd_param kv[] = {
		{ .key = "strict", .value = "1" },
		{ .key = "dma_window", .value = value },
	};
	const struct hostd_params p = { .count = 2, .v = kv };
	const char *v;

	return hostd_dma_window_setup(w, &p, &v);
}

static void without_the_key_everything_is_admitted(void **state)
{
	const struct hostd_param kv[] = { { .key = "strict", .value = "1" } };
	const struct hostd_params p = { .count = 1, .v = kv };
	struct hostd_dma_window w;
	const char *v;

	(void)state;
	assert_int_equal(hostd_dma_window_setup(&w, &p, &v), 0);
	assert_null(v);
	assert_true(hostd_dma_window_admits(&w, 0x1000, 4096));
	assert_int_equal(w.in + w.out, 0);
}

static void inside_is_admitted_and_counted(void **state)
{
	struct hostd_dma_window w;

	(void)state;
	assert_int_equal(setup_with(&w, "0x34500000-0x3c500000"), 0);
	assert_true(hostd_dma_window_admits(&w, 0x34500000, 4096));
	assert_true(hostd_dma_window_admits(&w, 0x3c500000 - 90, 90));
	assert_int_equal(w.in, 2);
	assert_int_equal(w.out, 0);
}

static void outside_is_refused_and_counted(void **state)
{
	struct hostd_dma_window w;

	(void)state;
	assert_int_equal(setup_with(&w, "0x34500000-0x3c500000"), 0);
	assert_false(hostd_dma_window_admits(&w, 0x8080802, 90));
	assert_false(hostd_dma_window_admits(&w, 0x34500000 - 1, 2));
	assert_false(hostd_dma_window_admits(&w, 0x3c500000 - 1, 2));
	assert_false(hostd_dma_window_admits(&w, 0x3c500000, 1));
	assert_false(hostd_dma_window_admits(&w, UINT64_MAX, 1));
	assert_int_equal(w.in, 0);
	assert_int_equal(w.out, 5);
}

static void a_bad_value_is_refused(void **state)
{
	static const char *const bad[] = {
		"", "0x1000", "0x2000-0x1000", "0x1000-0x1000", "x-0x1000",
		"0x1000-", "0x1000-0x2000z", "-0x2000",
	};
	struct hostd_dma_window w;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(setup_with(&w, bad[i]), -EINVAL);
	assert_int_equal(setup_with(&w, "4096-8192"), 0);	/* decimal too */
	assert_true(w.on);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(without_the_key_everything_is_admitted),
		cmocka_unit_test(inside_is_admitted_and_counted),
		cmocka_unit_test(outside_is_refused_and_counted),
		cmocka_unit_test(a_bad_value_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
