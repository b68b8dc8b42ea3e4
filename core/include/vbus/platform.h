/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The one place that picks kernel or userspace primitives for core/.
 *
 * The core .c files and the public vbus headers only use the vocabulary below; each
 * build (Kbuild for the modules, CMake for libioq) puts the directory that
 * holds its own <vbus/platform_impl.h> on the include path:
 *
 *   kernel:    kernel/platform/include/vbus/platform_impl.h
 *   userspace: userspace/lib/include/vbus/platform_impl.h
 *
 * Vocabulary (every implementation must provide all of it):
 *
 *   Fixed-width types      __u8 __u16 __u32 __u64 (from <linux/types.h>)
 *
 *   Shared memory (memory the other side of the boundary also touches):
 *     VBUS_READ(x)         one single-copy load of a shared field
 *     VBUS_WRITE(x, v)     one single-copy store of a shared field
 *     vbus_mb()            full barrier: orders earlier loads AND stores
 *                          against later loads and stores (a store->load
 *                          fence is needed by the shm-signal Dekker pattern)
 *     vbus_wmb()           orders earlier stores before later stores
 *     vbus_rmb()           orders earlier loads before later loads
 *     VBUS_LOAD_ACQUIRE(x) load; no later access moves before it
 *     VBUS_STORE_RELEASE(x, v)  store; no earlier access moves after it
 *
 *   Local (never shared) state:
 *     vbus_lock_t          lock; vbus_lock_init/vbus_lock/vbus_unlock with an
 *                          unsigned long flags word (irqsave in the kernel)
 *     vbus_ref_t           reference count; vbus_ref_init (to 1),
 *                          vbus_ref_get, vbus_ref_put (true when it hit 0)
 *     vbus_defer_t         deferred notify: vbus_defer_init(d, fn, arg),
 *                          vbus_defer_schedule(d) runs fn(arg) later, in
 *                          another context, never from inside the caller
 *     vbus_waitq_t         vbus_waitq_init/vbus_waitq_wake for sleepers
 *     vbus_defer_cancel(d) forget a scheduled run (kernel: waits for a
 *                          running one; never call it from inside fn)
 *     vbus_stat_inc(p)     bump a statistic touched by several contexts
 *     vbus_xchg(p, v)      atomic exchange (sticky flags)
 *     vbus_log_fault(...)  rate-limited error log (printf format)
 *     VBUS_EXPORT(sym)     export a core symbol to other modules (or nothing)
 *     VBUS_EINVAL etc.     come from the usual errno headers on both sides
 */
#ifndef VBUS_PLATFORM_H
#define VBUS_PLATFORM_H

#include <vbus/platform_impl.h>

#endif /* VBUS_PLATFORM_H */
