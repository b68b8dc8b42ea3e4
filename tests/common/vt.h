/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vt: a thin test layer so that one case file (cases_*.c) runs both under
 * cmocka in userspace (tests/unit) and inside the kernel (the selftest
 * module, kernel/selftest). The case files include only <vbus/ioq.h>,
 * <vbus/shm_signal.h> and this header, and call nothing from libc but
 * memset/memcpy.
 *
 * Every adaptor (vt_cmocka.h, vt_kernel.h) provides:
 *
 *   VT_CASE(name) { ... }       define a case
 *   VT_ASSERT(cond)             fail the case when !cond, and leave it
 *   VT_ASSERT_EQ(a, b)          integers, compared as long long; a failure
 *                               prints both values
 *   VT_ENTRY(name)              one row of a suite table
 *   VT_SUITE(suite, rows...)    defines int vt_suite_<suite>(const char *f):
 *                               runs every case (or only the one named f),
 *                               returns the number failed (-1: no such case)
 *   void *vt_alloc(size_t n)    zeroed, 64-byte aligned, NULL on failure;
 *                               whatever a case has not vt_free()d is freed
 *                               after it, whether it passed or not
 *   void vt_free(void *p)
 *   void vt_track_defer(vbus_defer_t *d)
 *                               cancel @d after the case, before its memory
 *                               is freed (a failed case may leave it queued)
 *   int vt_defer_pending(vbus_defer_t *d)
 *                               1 if @d is scheduled and has not run yet
 *   int vt_defer_flush(vbus_defer_t *d)
 *                               run @d now if it is scheduled; 1 if it ran
 *   void vt_waitq_watch(struct vt_waitq_watch *w, vbus_waitq_t *q)
 *                               count @q's wakeups from now on (@w in
 *                               vt_alloc() memory)
 *   long vt_waitq_woken(struct vt_waitq_watch *w)
 *                               @q's wakeups since vt_waitq_watch()
 *   void vt_waitq_unwatch(struct vt_waitq_watch *w)
 *                               stop counting (before @q is freed)
 *
 * "Leave the case": cmocka longjmps out; the kernel adaptor returns from
 * the case function. So a helper that is not itself a case must not
 * assert: it returns a value and the case asserts on it. (The assertion
 * macros use the case's hidden parameter, so a helper that tries does
 * not compile.)
 *
 * Case state lives in vt_alloc() memory, never on the stack: a deferred
 * notify (a tasklet in the kernel) may still be queued on it when a case
 * fails, and the adaptor cancels it before it frees the memory.
 */
#ifndef VT_H
#define VT_H

#ifdef __KERNEL__
#include "vt_kernel.h"
#else
#include "vt_cmocka.h"
#endif

#include "vt_doubles.h"

#endif /* VT_H */
