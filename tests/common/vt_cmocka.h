/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vt adaptor for userspace: cmocka (see vt.h for the interface).
 * Included by exactly one translation unit per test program (the case
 * file), so the tracking tables below are that program's.
 */
#ifndef VT_CMOCKA_H
#define VT_CMOCKA_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <vbus/platform.h>

#define VT_CASE(name) static void vt_case_##name(void **vt_state)

/*
 * The failure path, declared noreturn. cmocka's _fail() longjmps back to
 * the runner (or exits), but its prototype does not say so; without this
 * the optimiser follows a failed VT_ASSERT(p) into the code after it, sees
 * p == NULL there and (GCC 12, -O2) warns about the "writes" through it
 * (-Wstringop-overflow on an inlined atomic).
 */
static inline __attribute__((noreturn, format(printf, 3, 4)))
void vt_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprint_error(fmt, ap);
	va_end(ap);
	print_error("\n");
	_fail(file, line);
	abort();	/* not reached: _fail() does not return */
}

#define VT_ASSERT(cond)							\
	do {								\
		(void)vt_state;						\
		if (!(cond))						\
			vt_fail(__FILE__, __LINE__, "%s:%d: VT_ASSERT(%s)", \
				__FILE__, __LINE__, #cond);		\
	} while (0)

#define VT_ASSERT_EQ(a, b)						\
	do {								\
		long long vt_a_ = (long long)(a);			\
		long long vt_b_ = (long long)(b);			\
		(void)vt_state;						\
		if (vt_a_ != vt_b_)					\
			vt_fail(__FILE__, __LINE__,			\
				"%s:%d: VT_ASSERT_EQ(%s, %s): %lld != %lld", \
				__FILE__, __LINE__, #a, #b, vt_a_, vt_b_); \
	} while (0)

/* ---- per-case resources, released by vt_teardown() ---- */

#define VT_MAX_TRACKED 64

static void *vt_allocs[VT_MAX_TRACKED];
static vbus_defer_t *vt_defers[VT_MAX_TRACKED];

static inline void *vt_alloc(size_t n)
{
	size_t len = (n + 63) & ~(size_t)63;
	void *p;

	for (int i = 0; i < VT_MAX_TRACKED; i++) {
		if (vt_allocs[i])
			continue;
		p = aligned_alloc(64, len ? len : 64);
		if (p) {
			memset(p, 0, len ? len : 64);
			vt_allocs[i] = p;
		}
		return p;
	}
	return NULL;
}

static inline void vt_free(void *p)
{
	for (int i = 0; i < VT_MAX_TRACKED; i++) {
		if (p && vt_allocs[i] == p) {
			vt_allocs[i] = NULL;
			free(p);
			return;
		}
	}
}

static inline void vt_track_defer(vbus_defer_t *d)
{
	for (int i = 0; i < VT_MAX_TRACKED; i++) {
		if (!vt_defers[i]) {
			vt_defers[i] = d;
			return;
		}
	}
	fail_msg("vt: too many tracked deferred notifies");
}

static inline int vt_defer_pending(vbus_defer_t *d)
{
	return vbus_defer_pending(d);
}

static inline int vt_defer_flush(vbus_defer_t *d)
{
	return vbus_defer_run(d);
}

/* vbus_waitq_t is a wakeup counter here: remember where it stood */
struct vt_waitq_watch {
	vbus_waitq_t *q;
	unsigned long base;
};

static inline void vt_waitq_watch(struct vt_waitq_watch *w, vbus_waitq_t *q)
{
	w->q = q;
	w->base = __atomic_load_n(&q->wakeups, __ATOMIC_RELAXED);
}

static inline long vt_waitq_woken(struct vt_waitq_watch *w)
{
	return (long)(__atomic_load_n(&w->q->wakeups, __ATOMIC_RELAXED) -
		      w->base);
}

static inline void vt_waitq_unwatch(struct vt_waitq_watch *w)
{
	w->q = NULL;
}

static inline int vt_teardown(void **state)
{
	(void)state;
	/* deferred notifies first: they point into the memory freed next */
	for (int i = 0; i < VT_MAX_TRACKED; i++) {
		if (vt_defers[i])
			vbus_defer_cancel(vt_defers[i]);
		vt_defers[i] = NULL;
	}
	for (int i = 0; i < VT_MAX_TRACKED; i++) {
		free(vt_allocs[i]);
		vt_allocs[i] = NULL;
	}
	return 0;
}

/* ---- suites ---- */

#define VT_ENTRY(name) \
	{ #name, vt_case_##name, NULL, vt_teardown, NULL }

static inline int vt_cmocka_run(const char *suite,
				const struct CMUnitTest *tests, size_t n,
				const char *filter)
{
	if (!filter)
		return _cmocka_run_group_tests(suite, tests, n, NULL, NULL);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(tests[i].name, filter))
			return _cmocka_run_group_tests(suite, &tests[i], 1,
						       NULL, NULL);
	}
	fprintf(stderr, "vt: suite %s has no case %s\n", suite, filter);
	return -1;
}

#define VT_SUITE(suite, ...)						\
	int vt_suite_##suite(const char *filter);			\
	int vt_suite_##suite(const char *filter)			\
	{								\
		static const struct CMUnitTest vt_tests_[] = {		\
			__VA_ARGS__					\
		};							\
		return vt_cmocka_run(#suite, vt_tests_,			\
				     sizeof(vt_tests_) / sizeof(vt_tests_[0]), \
				     filter);				\
	}

#endif /* VT_CMOCKA_H */
