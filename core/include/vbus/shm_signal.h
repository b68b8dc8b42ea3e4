/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * shm-signal: a shared-memory signal with per-side mask (enabled), a
 * "notification in flight" flag (pending) and a "memory changed" flag
 * (dirty), so that a notification crosses the boundary only when the
 * receiver wants one and none is already on its way.
 *
 * Wire ABI: struct shm_signal_desc lives in memory shared by both sides.
 * It is the x86-64 layout of the 2009 series, written out explicitly so it
 * is the same under -m32.
 */
#ifndef VBUS_SHM_SIGNAL_H
#define VBUS_SHM_SIGNAL_H

#include <vbus/platform.h>

#define SHM_SIGNAL_MAGIC 0x58fa39df
#define SHM_SIGNAL_VER   1

/*
 * One per side. irq[locale] is what that side receives: the side itself
 * writes enabled and clears dirty/pending; the peer sets dirty and pending.
 */
struct shm_signal_irq {
	__u8 enabled;
	__u8 pending;
	__u8 dirty;
};

enum shm_signal_locality {
	shm_locality_north,	/* the guest / driver side */
	shm_locality_south,	/* the host / device side */
};

struct shm_signal_desc {
	__u32 magic;
	__u32 ver;
	struct shm_signal_irq irq[2];
	__u8 reserved[2];	/* explicit tail padding, must be 0 */
};

VBUS_STATIC_ASSERT(sizeof(struct shm_signal_irq) == 3, "shm_signal_irq");
VBUS_STATIC_ASSERT(sizeof(struct shm_signal_desc) == 16, "shm_signal_desc");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct shm_signal_desc, irq) == 8,
		   "shm_signal_desc.irq");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct shm_signal_desc, irq[1]) == 11,
		   "shm_signal_desc.irq[1]");

/* --- end of wire ABI --- */

/*
 * Most notifier runs one _shm_signal_wakeup() makes before it yields to the
 * deferred notify, so a peer that keeps signalling cannot hold it forever.
 * Every run counts: the ones a dirty flag the peer keeps setting repeats
 * and the ones a pending flag it keeps setting again starts. (A libioq
 * channel runs one wakeup per ioq_channel_wait().)
 */
#define SHM_SIGNAL_WAKEUP_BUDGET 64

struct shm_signal;

struct shm_signal_notifier {
	void (*signal)(struct shm_signal_notifier *);
};

struct shm_signal_ops {
	/* cross the boundary: hypercall, doorbell, eventfd write, irq ... */
	int (*inject)(struct shm_signal *s);
	/* the channel is broken (peer wrote garbage); optional */
	void (*fault)(struct shm_signal *s, const char *msg);
	/* last reference dropped; optional */
	void (*release)(struct shm_signal *s);
};

struct shm_signal {
	vbus_ref_t ref;
	vbus_lock_t lock;
	enum shm_signal_locality locale;
	/*
	 * Under lock. enabled is this side's own mask: the copy in
	 * desc->irq[locale] is written for the peer and never read back
	 * (the peer can write it). Bits of the one word in_wakeup was, so
	 * the layout stays libioq 1's.
	 */
	unsigned int in_wakeup:1;
	unsigned int enabled:1;
	unsigned int faulted;	/* sticky; read with VBUS_READ */
	const struct shm_signal_ops *ops;
	struct shm_signal_desc *desc;
	struct shm_signal_notifier *notifier;
	vbus_defer_t deferred_notify;
	/* statistics, local only */
	unsigned long injects;	/* times ops->inject ran */
	unsigned long wakeups;	/* times the notifier ran */
};

/*
 * Initialise a local context over @desc. @desc may be memory the peer
 * controls: nothing here trusts it. The north side formats the descriptor
 * with shm_signal_desc_init() first; the south side checks it with
 * shm_signal_desc_check().
 */
void shm_signal_init(struct shm_signal *s, enum shm_signal_locality locale,
		     const struct shm_signal_ops *ops,
		     struct shm_signal_desc *desc);

void shm_signal_desc_init(struct shm_signal_desc *desc);
int shm_signal_desc_check(const struct shm_signal_desc *desc);

static inline struct shm_signal *shm_signal_get(struct shm_signal *s)
{
	vbus_ref_get(&s->ref);
	return s;
}

/*
 * Drop a reference; ops->release runs at zero. Put does not cancel the
 * deferred notify (the last put may run inside it): before its last put
 * the owner masks the signal, stops its transport and calls
 * vbus_defer_cancel(&s->deferred_notify) from a context that may wait.
 */
void shm_signal_put(struct shm_signal *s);

/*
 * The @flags of shm_signal_enable(), shm_signal_disable() and
 * shm_signal_inject() is reserved: pass 0. libioq 1 ignores it, whatever
 * its value; the parameter is removed at libioq.so.2 (docs/libioq.md,
 * "The next SONAME").
 *
 * Unmask local notifications. If the peer signalled while we were masked,
 * the notifier runs soon after through the deferred notify (never inline).
 */
int shm_signal_enable(struct shm_signal *s, int flags);

/* Mask local notifications; the peer's signals only mark us dirty. */
int shm_signal_disable(struct shm_signal *s, int flags);

/*
 * Tell the peer that shared memory changed: marks it dirty and, when it is
 * unmasked and no notification is already pending, crosses the boundary.
 * Returns 0, or -EIO once the channel is faulted.
 */
int shm_signal_inject(struct shm_signal *s, int flags);

/*
 * The receive path: called by the transport when a notification arrives
 * (interrupt handler, eventfd readable) and by the deferred notify. Runs the
 * notifier until dirty stays clear, then acknowledges (clears pending).
 */
void _shm_signal_wakeup(struct shm_signal *s);

/*
 * Mark the channel faulted (sticky) and report: ops->fault if set, else a
 * rate-limited log line. Never panics. @msg is a constant string.
 */
void shm_signal_fault(struct shm_signal *s, const char *msg);
#define SHM_SIGNAL_FAULT(s, msg) shm_signal_fault((s), (msg))

static inline int shm_signal_faulted(const struct shm_signal *s)
{
	return VBUS_READ(s->faulted) != 0;
}

#endif /* VBUS_SHM_SIGNAL_H */
