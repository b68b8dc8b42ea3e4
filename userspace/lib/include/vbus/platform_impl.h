/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Userspace primitives for core/ (libioq). See <vbus/platform.h> for the
 * vocabulary.
 *
 * Two mappings of the shared-memory words, chosen per translation unit:
 *
 * - libioq's own .c files are built with -DVBUS_PLATFORM_URCU: liburcu's
 *   CMM_LOAD_SHARED/CMM_STORE_SHARED (single-copy volatile accesses) and
 *   cmm_smp_{mb,wmb,rmb} (on x86: mfence / compiler barrier / compiler
 *   barrier).
 * - Everything else (a program that includes the installed headers, the
 *   TSan build, which also defines VBUS_PLATFORM_C11_ATOMICS) gets GCC/C11
 *   atomics: acquire loads, release stores, and fences where vbus_mb() is
 *   seq_cst, a full fence (mfence or a locked op on x86). That is at least
 *   as strong as the liburcu mapping, TSan can see it, and a consumer needs
 *   no liburcu headers.
 *
 * Both work on the same memory at once (a consumer's inline
 * shm_signal_faulted() reads what the library wrote): each is a
 * single-copy access of a naturally aligned field, only ordering differs.
 */
#ifndef VBUS_PLATFORM_IMPL_USER_H
#define VBUS_PLATFORM_IMPL_USER_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <linux/types.h>

#define VBUS_STATIC_ASSERT(expr, msg) _Static_assert(expr, msg)
#define VBUS_OFFSETOF(type, member) offsetof(type, member)

/*
 * Acquire loads and release stores of ring ownership bytes and indexes.
 * GCC builtins on plain fields: on x86 both are plain moves (TSO), but they
 * also order the compiler and say what they pair with to TSan.
 */
#define VBUS_LOAD_ACQUIRE(x)      __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define VBUS_STORE_RELEASE(x, v)  __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

/* Statistics and sticky flags touched from more than one context. */
#define vbus_stat_inc(p)      __atomic_fetch_add((p), 1, __ATOMIC_RELAXED)
#define vbus_xchg(p, v)       __atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)

#if defined(VBUS_PLATFORM_URCU) && !defined(VBUS_PLATFORM_C11_ATOMICS)
#include <urcu/arch.h>
#include <urcu/system.h>
#define VBUS_READ(x)      CMM_LOAD_SHARED(x)
#define VBUS_WRITE(x, v)  CMM_STORE_SHARED(x, v)
#define vbus_mb()         cmm_smp_mb()
#define vbus_wmb()        cmm_smp_wmb()
#define vbus_rmb()        cmm_smp_rmb()
#else
#define VBUS_READ(x)      __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define VBUS_WRITE(x, v)  __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define vbus_mb()         __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define vbus_wmb()        __atomic_thread_fence(__ATOMIC_RELEASE)
#define vbus_rmb()        __atomic_thread_fence(__ATOMIC_ACQUIRE)
#endif

/* Local lock: a mutex (the core never holds it across a blocking call). */
typedef pthread_mutex_t vbus_lock_t;
#define vbus_lock_init(l)        pthread_mutex_init((l), NULL)
#define vbus_lock(l, flags)      ((void)(flags), pthread_mutex_lock(l))
#define vbus_unlock(l, flags)    ((void)(flags), pthread_mutex_unlock(l))

/* Reference count. */
typedef struct { unsigned int count; } vbus_ref_t;
static inline void vbus_ref_init(vbus_ref_t *r)
{
	__atomic_store_n(&r->count, 1, __ATOMIC_RELAXED);
}
static inline void vbus_ref_get(vbus_ref_t *r)
{
	__atomic_add_fetch(&r->count, 1, __ATOMIC_RELAXED);
}
/* true when this dropped the last reference */
static inline bool vbus_ref_put(vbus_ref_t *r)
{
	return __atomic_sub_fetch(&r->count, 1, __ATOMIC_ACQ_REL) == 0;
}
static inline unsigned int vbus_ref_read(const vbus_ref_t *r)
{
	return __atomic_load_n(&r->count, __ATOMIC_RELAXED);
}

/*
 * Deferred notify. The kernel uses a tasklet; here the owner of the event
 * loop provides a kick (e.g. a write to its own eventfd) and calls
 * vbus_defer_run() from that loop. Without a kick the request just stays
 * pending until the next vbus_defer_run().
 */
typedef struct vbus_defer {
	void (*fn)(void *arg);
	void *arg;
	void (*kick)(void *kick_arg);
	void *kick_arg;
	unsigned int scheduled;
} vbus_defer_t;

static inline void vbus_defer_init(vbus_defer_t *d, void (*fn)(void *),
				   void *arg)
{
	d->fn = fn;
	d->arg = arg;
	d->kick = NULL;
	d->kick_arg = NULL;
	__atomic_store_n(&d->scheduled, 0, __ATOMIC_RELAXED);
}

static inline void vbus_defer_set_kick(vbus_defer_t *d,
				       void (*kick)(void *), void *kick_arg)
{
	d->kick = kick;
	d->kick_arg = kick_arg;
}

static inline void vbus_defer_schedule(vbus_defer_t *d)
{
	if (!__atomic_exchange_n(&d->scheduled, 1, __ATOMIC_ACQ_REL) &&
	    d->kick)
		d->kick(d->kick_arg);
}

static inline bool vbus_defer_pending(vbus_defer_t *d)
{
	return __atomic_load_n(&d->scheduled, __ATOMIC_ACQUIRE) != 0;
}

/* Run the deferred function if it was scheduled; true if it ran. */
static inline bool vbus_defer_run(vbus_defer_t *d)
{
	if (!__atomic_exchange_n(&d->scheduled, 0, __ATOMIC_ACQ_REL))
		return false;
	d->fn(d->arg);
	return true;
}

static inline void vbus_defer_cancel(vbus_defer_t *d)
{
	__atomic_store_n(&d->scheduled, 0, __ATOMIC_RELEASE);
}

/* Wait queue: userspace sleepers block on eventfds, so this only counts. */
typedef struct { unsigned long wakeups; } vbus_waitq_t;
#define vbus_waitq_init(w)  ((w)->wakeups = 0)
#define vbus_waitq_wake(w)  __atomic_add_fetch(&(w)->wakeups, 1, __ATOMIC_RELAXED)

/* Rate-limited: at most 10 lines per second per call site group. */
void vbus_log_fault(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

#define VBUS_EXPORT(sym)

#endif /* VBUS_PLATFORM_IMPL_USER_H */
