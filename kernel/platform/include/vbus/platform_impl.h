/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel primitives for core/. See <vbus/platform.h> for the vocabulary.
 *
 * The peer is another machine (a hypervisor or a guest), not another CPU of
 * this kernel, so shared memory uses the virt_* barriers: they stay real SMP
 * barriers even in a CONFIG_SMP=n guest.
 */
#ifndef VBUS_PLATFORM_IMPL_KERNEL_H
#define VBUS_PLATFORM_IMPL_KERNEL_H

#include <linux/types.h>
#include <linux/stddef.h>
#include <linux/build_bug.h>
#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/spinlock.h>
#include <linux/refcount.h>
#include <linux/interrupt.h>
#include <linux/wait.h>
#include <linux/printk.h>
#include <linux/export.h>
#include <linux/string.h>
#include <asm/barrier.h>

#define VBUS_STATIC_ASSERT(expr, msg) static_assert(expr, msg)
#define VBUS_OFFSETOF(type, member) offsetof(type, member)

#define VBUS_READ(x)      READ_ONCE(x)
#define VBUS_WRITE(x, v)  WRITE_ONCE(x, v)
#define vbus_mb()         virt_mb()
#define vbus_wmb()        virt_wmb()
#define vbus_rmb()        virt_rmb()
#define VBUS_LOAD_ACQUIRE(x)      virt_load_acquire(&(x))
#define VBUS_STORE_RELEASE(x, v)  virt_store_release(&(x), (v))

/* A statistic may be bumped from two contexts; a lost count is harmless. */
#define vbus_stat_inc(p)      WRITE_ONCE(*(p), READ_ONCE(*(p)) + 1)
#define vbus_xchg(p, v)       xchg((p), (v))

typedef spinlock_t vbus_lock_t;
#define vbus_lock_init(l)        spin_lock_init(l)
#define vbus_lock(l, flags)      spin_lock_irqsave((l), (flags))
#define vbus_unlock(l, flags)    spin_unlock_irqrestore((l), (flags))

typedef refcount_t vbus_ref_t;
#define vbus_ref_init(r)  refcount_set((r), 1)
#define vbus_ref_get(r)   refcount_inc(r)
#define vbus_ref_put(r)   refcount_dec_and_test(r)
#define vbus_ref_read(r)  refcount_read(r)

/* Deferred notify: a tasklet, so the notifier never runs inline in enable. */
typedef struct vbus_defer {
	struct tasklet_struct tasklet;
	void (*fn)(void *arg);
	void *arg;
} vbus_defer_t;

void vbus_defer_init(vbus_defer_t *d, void (*fn)(void *), void *arg);
#define vbus_defer_schedule(d)  tasklet_schedule(&(d)->tasklet)
#define vbus_defer_cancel(d)    tasklet_kill(&(d)->tasklet)

typedef wait_queue_head_t vbus_waitq_t;
#define vbus_waitq_init(w)  init_waitqueue_head(w)
#define vbus_waitq_wake(w)  wake_up(w)

#define vbus_log_fault(fmt, ...) pr_err_ratelimited("vbus: " fmt, ##__VA_ARGS__)

#define VBUS_EXPORT(sym) EXPORT_SYMBOL_GPL(sym)

#endif /* VBUS_PLATFORM_IMPL_KERNEL_H */
