// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: one device queue (devq.h): the consumer role of docs/ring.md
 * over one guest ring, its signal and its poll window, in one place so a
 * device makes no ring or notification call of its own.
 */
#include <errno.h>
#include "dev.h"
#include "devq.h"

static void devq_notify(struct ioq_notifier *n)
{
	struct hostd_devq *q = hostd_container_of(n, struct hostd_devq,
						  notifier);

	if (q->attached && q->on_signal)
		q->on_signal(q);
}

int hostd_devq_attach(struct hostd_devq *q, struct hostd_shm *shm,
		      __u32 count, hostd_devq_signal_fn on_signal)
{
	int ret;

	if (q->attached)
		return -EBUSY;
	ret = hostd_shm_ioq(shm, &q->ioq, NULL, count);
	if (ret)
		return ret;
	/* on a queue thread (threads=): its doorbells come here (dev.c) */
	ret = hostd_shm_home(shm);
	if (ret) {
		ioq_put(&q->ioq);
		return ret;
	}
	q->dev = shm->dev;
	q->on_signal = on_signal;
	q->notifier.signal = devq_notify;
	q->ioq.notifier = &q->notifier;
	q->size = (unsigned int)ioq_size(&q->ioq);
	q->unmasked = false;
	q->slept = false;
	q->attached = true;
	return 0;
}

void hostd_devq_detach(struct hostd_devq *q)
{
	if (!q->attached)
		return;
	q->attached = false;
	q->unmasked = false;
	q->slept = false;
	q->ioq.notifier = NULL;
	hostd_signal_unhome(q->ioq.signal);
	ioq_put(&q->ioq);
}

bool hostd_devq_live(const struct hostd_devq *q)
{
	return q->attached && !hostd_dev_faulted(q->dev) &&
	       !shm_signal_faulted(q->ioq.signal);
}

int hostd_devq_claim(struct hostd_devq *q, unsigned int n, __u32 *pos)
{
	int k;

	if (!q->attached)
		return 0;
	/* [A1] inside: the tail before the bodies it covers */
	k = ioq_consume_begin(&q->ioq, n, pos);
	return k < 0 ? -1 : k;
}

int hostd_devq_hand_back(struct hostd_devq *q, unsigned int n)
{
	if (!n)
		return 0;
	/* [R2] inside: the device's writes before valid's head */
	if (!q->attached || ioq_consume_end(&q->ioq, n, 0) < 0)
		return -1;
	if (q->window.cap_ns)
		q->last_ns = hostd_now_ns();
	return 0;
}

int hostd_devq_signal(struct hostd_devq *q)
{
	if (!q->attached)
		return -ENOENT;
	q->signals_out++;
	return ioq_signal(&q->ioq, 0);
}

/*
 * KVM's rule (poll_window.c): the gap from the last batch before the
 * sleep to the one that ended it. Only the first batch after the wakeup
 * says how long the sleep was.
 */
static void learn(struct hostd_devq *q, bool woke, __u64 before)
{
	if (woke && q->window.cap_ns && q->last_ns != before)
		hostd_poll_window_adapt(&q->window, q->last_ns - before);
}

int hostd_devq_drain(struct hostd_devq *q, unsigned int budget,
		     hostd_devq_fn fn, void *arg, unsigned int flags)
{
	bool woke = q->slept;
	__u64 before = q->last_ns;
	unsigned int n = 0;
	__u32 pos;
	int k;

	q->slept = false;
	k = hostd_devq_claim(q, budget, &pos);
	if (k < 0)
		return -1;
	while (n < (unsigned int)k &&
	       fn(q, hostd_devq_desc(q, pos + n), arg) == HOSTD_DEVQ_CONSUMED)
		n++;
	if (hostd_devq_hand_back(q, n) < 0)
		return -1;
	learn(q, woke, before);
	if (n && (flags & HOSTD_DEVQ_SIGNAL))
		hostd_devq_signal(q);
	return (int)n;
}

void hostd_devq_mask(struct hostd_devq *q)
{
	if (!q->attached)
		return;
	ioq_notify_disable(&q->ioq, 0);
	q->unmasked = false;
}

bool hostd_devq_more(struct hostd_devq *q, unsigned int held)
{
	__u32 pos;

	/* a claim that publishes nothing: the consumer's look at the tail */
	return hostd_devq_claim(q, held + 1, &pos) > (int)held;
}

bool hostd_devq_unmask(struct hostd_devq *q, unsigned int held)
{
	bool more;

	if (!q->attached)
		return false;
	/*
	 * [B2] in shm_signal_enable() orders enabled=1 before the look
	 * below (pairs with [B1] in the guest's inject): a post the look
	 * misses saw enabled=1 and rings. tests/model/shm_signal.pml's
	 * unmask_look checks it.
	 */
	ioq_notify_enable(&q->ioq, 0);
	q->unmasked = true;
	more = hostd_devq_more(q, held);
	q->slept = !more;
	return more;
}

/* The loop that runs @q (the guest's): the one its spin must not starve. */
static struct hostd_loop *devq_loop(const struct hostd_devq *q)
{
	return hostd_dev_loop(q->dev);	/* a queue thread's, or the guest's */
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/*
 * The spin stays masked throughout: it only reads the tail ([A1] in the
 * claim, as any look) and so changes nothing of unmask-then-look, which
 * runs when it returns false (tests/model/shm_signal.pml -DUNMASK_LOOK:
 * the masked drains repeat any number of times before the unmask).
 * The clock and the loop are read every HOSTD_DEVQ_SPIN_LOOK looks, not
 * at each: either costs far more than a look at the tail.
 */
bool hostd_devq_polling(struct hostd_devq *q)
{
	unsigned int spins;

	for (spins = 0;; spins++) {
		if (!(spins % HOSTD_DEVQ_SPIN_LOOK)) {
			if (!hostd_devq_live(q) ||
			    !hostd_poll_window_open(&q->window, q->last_ns))
				return false;
			/* not before the first look: a busy ring needs none */
			if (spins && hostd_loop_busy(devq_loop(q)))
				return true;
		}
		if (hostd_devq_more(q, 0))
			return true;
		cpu_relax();
	}
}
