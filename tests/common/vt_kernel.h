/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vt adaptor for the kernel (see vt.h for the interface): compiles the
 * shared case files into vbus_selftest.ko (kernel/selftest).
 *
 * Maintained with the kernel selftest, which depends on its reporting
 * (vt_kernel_report() turns each case into a PASS/FAIL line that the QEMU
 * harness counts): change it together with kernel/selftest/.
 *
 * Each case file is its own translation unit, so the tracking tables below
 * are per suite, like cmocka's per program. Cases run one at a time, in
 * process context, under the selftest's run lock.
 *
 * Differences from cmocka that a case file must respect (kernel build,
 * W=1, sparse):
 *   - VT_ASSERT* leave the case with `return`: only a case body asserts,
 *     never a helper (vt.h says so too);
 *   - no declarations after statements, no VLAs, no floating point, and
 *     keep stack frames small (-Wframe-larger-than=2048): big state goes in
 *     vt_alloc() memory;
 *   - non-static functions need a prototype (-Wmissing-prototypes), so
 *     helpers are static.
 *
 * The deferred notify is the real one, a tasklet (kernel/platform). A
 * tasklet left alone runs on its own at the next softirq, which would race
 * with a case that asserts what is pending. So vt_track_defer() disables
 * the tasklet: a vbus_defer_schedule() then queues it but it cannot run
 * (the softirq keeps requeueing it) until vt_defer_flush() lets it run once
 * and waits for it, or the teardown cancels it. Cancelling swaps in a no-op
 * before the tasklet is let go, so a leftover notify does not run, as in
 * userspace where cancel just drops it.
 */
#ifndef VT_KERNEL_H
#define VT_KERNEL_H

#include <linux/kernel.h>
#include <linux/interrupt.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/wait_bit.h>
#include <vbus/platform.h>

/* The state of the running case; VT_CASE names it vt_state. */
struct vt_kctx {
	int failed;
	char why[200];
};

/*
 * Reports one case: @why is NULL when it passed. Provided by the module
 * that runs the suites (kernel/selftest/selftest_cases.c).
 */
void vt_kernel_report(const char *suite, const char *name, const char *why);

#define VT_CASE(name) static void vt_case_##name(struct vt_kctx *vt_state)

static inline __printf(4, 5)
void vt_kfail(struct vt_kctx *c, const char *file, int line,
	      const char *fmt, ...)
{
	va_list ap;
	int n;

	if (c->failed++)
		return;	/* the first failure is the interesting one */
	n = scnprintf(c->why, sizeof(c->why), "%s:%d: ", kbasename(file), line);
	va_start(ap, fmt);
	vscnprintf(c->why + n, sizeof(c->why) - n, fmt, ap);
	va_end(ap);
}

#define VT_ASSERT(cond)							\
	do {								\
		if (!(cond)) {						\
			vt_kfail(vt_state, __FILE__, __LINE__,		\
				 "VT_ASSERT(%s)", #cond);		\
			return;						\
		}							\
	} while (0)

#define VT_ASSERT_EQ(a, b)						\
	do {								\
		long long vt_a_ = (long long)(a);			\
		long long vt_b_ = (long long)(b);			\
									\
		if (vt_a_ != vt_b_) {					\
			vt_kfail(vt_state, __FILE__, __LINE__,		\
				 "VT_ASSERT_EQ(%s, %s): %lld != %lld",	\
				 #a, #b, vt_a_, vt_b_);			\
			return;						\
		}							\
	} while (0)

/* ---- per-case resources, released by vt_kteardown() ---- */

#define VT_MAX_TRACKED 64

static void *vt_allocs[VT_MAX_TRACKED];
static size_t vt_alloc_len[VT_MAX_TRACKED];
static vbus_defer_t *vt_defers[VT_MAX_TRACKED];
static const char *vt_kerror;	/* a tracking failure outside any case */

static inline void vt_defer_noop(void *arg)
{
}

/*
 * Zeroed and 64-byte aligned: a power-of-two kmalloc is naturally aligned,
 * also with slub_debug red zones. __GFP_NOWARN: a case that asks for too
 * much gets NULL, not a WARN splat that fails the whole guest run.
 */
static inline void *vt_alloc(size_t n)
{
	size_t len = roundup_pow_of_two(max_t(size_t, n, 64));
	void *p;
	int i;

	for (i = 0; i < VT_MAX_TRACKED; i++) {
		if (vt_allocs[i])
			continue;
		p = kzalloc(len, GFP_KERNEL | __GFP_NOWARN);
		if (p) {
			vt_allocs[i] = p;
			vt_alloc_len[i] = len;
		}
		return p;
	}
	vt_kerror = "vt: too many vt_alloc() blocks in one case";
	return NULL;
}

static inline int vt_defer_slot(vbus_defer_t *d)
{
	int i;

	for (i = 0; i < VT_MAX_TRACKED; i++)
		if (vt_defers[i] == d)
			return i;
	return -1;
}

static inline void vt_track_defer(vbus_defer_t *d)
{
	int i = vt_defer_slot(NULL);

	if (i < 0) {
		vt_kerror = "vt: too many tracked deferred notifies";
		return;
	}
	/* waits for a run in progress; from now on it only queues */
	tasklet_disable(&d->tasklet);
	vt_defers[i] = d;
}

/* Drop a tracked notify without running it, and forget it. */
static inline void vt_defer_untrack(int i)
{
	vbus_defer_t *d = vt_defers[i];

	/* disabled, so not running: the tasklet reads fn only when it runs */
	d->fn = vt_defer_noop;
	/* a case that re-initialised it (tasklet_setup) reset the count */
	if (atomic_read(&d->tasklet.count) > 0)
		tasklet_enable(&d->tasklet);
	vbus_defer_cancel(d);	/* tasklet_kill: waits out a queued no-op */
	vt_defers[i] = NULL;
}

static inline void vt_free(void *p)
{
	int i, j;

	for (i = 0; p && i < VT_MAX_TRACKED; i++) {
		if (vt_allocs[i] != p)
			continue;
		/* a tracked notify inside the block must not outlive it */
		for (j = 0; j < VT_MAX_TRACKED; j++) {
			if (vt_defers[j] && (char *)vt_defers[j] >= (char *)p &&
			    (char *)vt_defers[j] < (char *)p + vt_alloc_len[i])
				vt_defer_untrack(j);
		}
		vt_allocs[i] = NULL;
		kfree(p);
		return;
	}
}

/* Only meaningful for a tracked notify: an untracked one runs any time. */
static inline int vt_defer_pending(vbus_defer_t *d)
{
	return test_bit(TASKLET_STATE_SCHED, &d->tasklet.state);
}

static inline int vt_defer_flush(vbus_defer_t *d)
{
	struct tasklet_struct *t = &d->tasklet;
	int tracked = vt_defer_slot(d) >= 0;

	if (!test_bit(TASKLET_STATE_SCHED, &t->state))
		return 0;
	if (tracked)
		tasklet_enable(t);
	/*
	 * Queued and raised already (a disabled tasklet is requeued with
	 * its softirq raised), so it runs at once: SCHED clears as it
	 * starts, RUN when it is done. It may queue itself again; then it
	 * stays pending, as in userspace.
	 */
	wait_var_event(&t->state, !test_bit(TASKLET_STATE_SCHED, &t->state));
	tasklet_unlock_wait(t);
	if (tracked)
		tasklet_disable(t);
	return 1;
}

static inline void vt_kteardown(struct vt_kctx *c)
{
	int i;

	/* deferred notifies first: they point into the memory freed next */
	for (i = 0; i < VT_MAX_TRACKED; i++)
		if (vt_defers[i])
			vt_defer_untrack(i);
	for (i = 0; i < VT_MAX_TRACKED; i++) {
		kfree(vt_allocs[i]);
		vt_allocs[i] = NULL;
	}
	if (vt_kerror && !c->failed) {
		c->failed = 1;
		strscpy(c->why, vt_kerror, sizeof(c->why));
	}
	vt_kerror = NULL;
}

/* ---- suites ---- */

struct vt_kentry {
	const char *name;
	void (*fn)(struct vt_kctx *vt_state);
};

#define VT_ENTRY(name) { #name, vt_case_##name }

static inline int vt_krun(const char *suite, const struct vt_kentry *tests,
			  size_t n, const char *filter)
{
	struct vt_kctx *c;
	int failed = 0, found = 0;
	size_t i;

	c = kmalloc(sizeof(*c), GFP_KERNEL);
	if (!c) {
		vt_kernel_report(suite, "setup", "out of memory");
		return 1;
	}
	for (i = 0; i < n; i++) {
		if (filter && strcmp(tests[i].name, filter))
			continue;
		found = 1;
		memset(c, 0, sizeof(*c));
		tests[i].fn(c);
		vt_kteardown(c);
		vt_kernel_report(suite, tests[i].name,
				 c->failed ? c->why : NULL);
		failed += !!c->failed;
		cond_resched();
	}
	kfree(c);
	if (filter && !found) {
		pr_err("vt: suite %s has no case %s\n", suite, filter);
		return -1;
	}
	return failed;
}

#define VT_SUITE(suite, ...)						\
	int vt_suite_##suite(const char *filter);			\
	int vt_suite_##suite(const char *filter)			\
	{								\
		static const struct vt_kentry vt_tests_[] = {		\
			__VA_ARGS__					\
		};							\
		return vt_krun(#suite, vt_tests_,			\
			       ARRAY_SIZE(vt_tests_), filter);		\
	}

/* A wait queue entry that counts the wake_up()s of its queue. */
struct vt_waitq_watch {
	struct wait_queue_entry e;
	wait_queue_head_t *q;
	atomic_t woken;
};

static inline int vt_waitq_watch_fn(struct wait_queue_entry *e,
				    unsigned int mode, int flags, void *key)
{
	struct vt_waitq_watch *w = container_of(e, struct vt_waitq_watch, e);

	atomic_inc(&w->woken);
	return 0;
}

static inline void vt_waitq_watch(struct vt_waitq_watch *w,
				  wait_queue_head_t *q)
{
	atomic_set(&w->woken, 0);
	init_waitqueue_func_entry(&w->e, vt_waitq_watch_fn);
	w->q = q;
	add_wait_queue(q, &w->e);
}

static inline long vt_waitq_woken(struct vt_waitq_watch *w)
{
	return atomic_read(&w->woken);
}

static inline void vt_waitq_unwatch(struct vt_waitq_watch *w)
{
	if (w->q)
		remove_wait_queue(w->q, &w->e);
	w->q = NULL;
}

#endif /* VT_KERNEL_H */
