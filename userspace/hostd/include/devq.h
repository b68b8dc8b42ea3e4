/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: one device queue (struct hostd_devq), the host side of one
 * IOQ ring a device consumes. A device includes this next to device.h and
 * makes no ring or notification call of its own: everything it does to
 * the ring goes through here, in the order of docs/ring.md's consumer
 * role (docs/adding-a-device.md, "A device queue").
 *
 *   attach     DEVSHM: the ring checked and bound (hostd_shm_ioq), the
 *              guest's signal routed to @on_signal
 *   drain      claim up to a budget of what the guest posted
 *              (ioq_consume_begin), hand each descriptor to a callback,
 *              hand the batch back with one valid-head store
 *              (ioq_consume_end) and, asked to, one signal
 *   claim / hand_back / desc
 *              the same two halves for a device whose descriptors finish
 *              out of order or across loop turns (vbus-blk, venet rx)
 *   mask / unmask
 *              the guest's doorbells off while we drain; on again with
 *              a look at the ring after it, which says "more arrived"
 *              (vhost-user-backend's enable_notification() -> bool): a
 *              post between our last look and the unmask rang no bell
 *   the poll window
 *              how long after its last batch the queue is polled before
 *              it unmasks (device.h, struct hostd_poll_window; KVM's
 *              halt-polling rule); the drain learns from each wakeup;
 *              hostd_devq_polling() spins on the ring while it is open,
 *              yielding to the rest of the loop (its fairness rule)
 *
 * Models: libvhost-user's vu_queue_pop/vu_queue_push/vu_queue_notify and
 * vhost-user-backend's enable_notification(). Everything runs on the
 * thread that attached it: the guest's loop thread (device.h,
 * "Threading"), or with threads=N the queue's thread ("Queue threads");
 * the struct is the device's, embedded where it likes.
 */
#ifndef VBUS_HOSTD_DEVQ_H
#define VBUS_HOSTD_DEVQ_H

#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

struct hostd_devq;

/* The guest signalled the queue (its doorbell, or a post while unmasked). */
typedef void (*hostd_devq_signal_fn)(struct hostd_devq *q);

struct hostd_devq {
	struct hostd_dev *dev;
	struct ioq ioq;			/* valid while attached */
	struct ioq_notifier notifier;	/* -> on_signal */
	hostd_devq_signal_fn on_signal;
	void *owner;			/* the device's, for on_signal */
	bool attached;
	bool unmasked;			/* our side's notifications on */
	bool slept;			/* unmasked and found nothing since */
	unsigned int size;		/* descriptors, fixed at attach */
	/* cap_ns is the device's (0: never poll); last_ns the last batch */
	struct hostd_poll_window window;
	__u64 last_ns;
	__u64 signals_out;		/* hostd_devq_signal()s */
};

/*
 * Bind @q over @shm (hostd_shm_ioq(): ring header checked, @count
 * required unless 0, the shm's signal must be the ring head's). The
 * guest's signals run @on_signal; @q stays masked until the device
 * unmasks it. 0, or -errno for the shm op to return. @q's window and
 * owner are left as the device set them.
 */
int hostd_devq_attach(struct hostd_devq *q, struct hostd_shm *shm,
		      __u32 count, hostd_devq_signal_fn on_signal);

/* close: let go of the ring (never touches guest memory). Idempotent. */
void hostd_devq_detach(struct hostd_devq *q);

/* attached and neither the device nor the channel faulted */
bool hostd_devq_live(const struct hostd_devq *q);

/*
 * Claim up to @n of what the guest posted, from valid's head (which
 * stays put until hand_back: claiming again returns the same *@pos and
 * maybe more). The count (0: none), or -1: the channel faulted.
 */
int hostd_devq_claim(struct hostd_devq *q, unsigned int n, __u32 *pos);

static inline struct ioq_ring_desc *hostd_devq_desc(struct hostd_devq *q,
						    __u32 pos)
{
	return ioq_desc(&q->ioq, pos);
}

/*
 * Hand the first @n claimed descriptors back (one valid-head store; what
 * the device wrote into them and their buffers before it, [R2] in
 * core/ioq.c). 0, or -1 when the channel faulted or the guest wrote our
 * head (the device faults with its own words). No signal.
 */
int hostd_devq_hand_back(struct hostd_devq *q, unsigned int n);

/* Tell the guest (suppressed while it masks or one is pending). */
int hostd_devq_signal(struct hostd_devq *q);

/*
 * What a drain callback did with the descriptor: consumed it (it goes
 * back with the batch), or stopped before it (it stays the guest's
 * posted one and ends the batch: the backend is full, or it is bad and
 * the device faults after the good ones before it went back).
 */
enum hostd_devq_verdict { HOSTD_DEVQ_CONSUMED, HOSTD_DEVQ_STOP };
typedef enum hostd_devq_verdict (*hostd_devq_fn)(struct hostd_devq *q,
						 struct ioq_ring_desc *desc,
						 void *arg);

/* hostd_devq_drain() flag: one signal for a batch that handed back any */
#define HOSTD_DEVQ_SIGNAL	(1u << 0)

/*
 * One batch: claim up to @budget, @fn for each in ring order until it
 * stops, hand back what it consumed with one store (and one signal with
 * HOSTD_DEVQ_SIGNAL). The number handed back (== @budget: more may be
 * there, come back through a kick), or -1: the channel faulted. The
 * first batch after a sleep teaches the poll window how long it slept.
 */
int hostd_devq_drain(struct hostd_devq *q, unsigned int budget,
		     hostd_devq_fn fn, void *arg, unsigned int flags);

/*
 * Doorbells off (no barrier: a guest that still reads them on rings once
 * more, a spurious wakeup and nothing else).
 */
void hostd_devq_mask(struct hostd_devq *q);

/*
 * Doorbells on, then look again: true when more than @held descriptors
 * (what the device claimed and holds) are posted, i.e. more arrived
 * since its last look; it should mask and go on. False: it may sleep,
 * the guest's next post rings. shm_signal_enable()'s [B2] orders the
 * unmask before the look (pairs with [B1] in the guest's inject).
 */
bool hostd_devq_unmask(struct hostd_devq *q, unsigned int held);

/* Posted beyond the @held the device holds: a look, nothing claimed. */
bool hostd_devq_more(struct hostd_devq *q, unsigned int held);

/*
 * The poll window, after a pass that drained the ring (masked, nothing
 * held): true means "keep polling, come back through a kick", false that
 * the window closed since the last batch (unmask and look:
 * hostd_devq_unmask()).
 *
 * Within the window it spins here rather than round the loop (a kick per
 * empty pass was most of a polling host's time): it looks at the ring
 * (a load of the tail, as hostd_devq_more()) and returns true once the
 * guest posted. Fairness: every HOSTD_DEVQ_SPIN_LOOK looks it also asks
 * the loop whether anything else waits on it (hostd_loop_busy(): another
 * ready fd, another device's kick, deferred work, a command, a stop) and
 * then returns true too, so the loop serves the others before this
 * device's kick runs. Nothing on the loop thus waits longer than
 * HOSTD_DEVQ_SPIN_LOOK looks (a few microseconds) plus one device pass.
 */
#define HOSTD_DEVQ_SPIN_LOOK	64
bool hostd_devq_polling(struct hostd_devq *q);

#ifdef __cplusplus
}
#endif

#endif /* VBUS_HOSTD_DEVQ_H */
