// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * shm-signal: portable core, compiled into the kernel modules and libioq.
 *
 * Protocol. Each side has an irq record in shared memory; irq[L] is what
 * side L receives:
 *   enabled  written by L: L wants to be notified (unmasked)
 *   dirty    set by the peer on every inject, cleared by L before it looks
 *   pending  set by the peer when it crossed the boundary, cleared by L
 *            once it has seen everything; while set, the peer does not
 *            cross again (spurious notification suppression)
 *
 * The 2009 code ordered these with wmb() only, which loses wakeups: inject
 * (store dirty, load enabled/pending) and enable (store enabled, load
 * dirty/pending) are a store-buffer pattern, and so are the wakeup's
 * (store pending=0, reload dirty) and (store dirty=0, notifier reads the
 * ring). Each of the four needs a full barrier; they are marked [B1]..[B4]
 * below. tests/model/shm_signal.pml checks the protocol with all four and
 * finds the lost wakeup with any one removed. [B0] is inject's write
 * barrier (the caller's ring updates before dirty=1), which [B4] pairs with.
 * The ring's own labels ([R1]..[A4]) are in core/ioq.c and docs/ring.md.
 */
#include <vbus/platform.h>
#include <vbus/shm_signal.h>

void shm_signal_desc_init(struct shm_signal_desc *desc)
{
	memset(desc, 0, sizeof(*desc));
	desc->magic = SHM_SIGNAL_MAGIC;
	desc->ver = SHM_SIGNAL_VER;
}
VBUS_EXPORT(shm_signal_desc_init);

int shm_signal_desc_check(const struct shm_signal_desc *desc)
{
	if (VBUS_READ(desc->magic) != SHM_SIGNAL_MAGIC)
		return -EINVAL;
	if (VBUS_READ(desc->ver) != SHM_SIGNAL_VER)
		return -EPROTO;
	return 0;
}
VBUS_EXPORT(shm_signal_desc_check);

static void deferred_notify(void *arg)
{
	_shm_signal_wakeup(arg);
}

void shm_signal_init(struct shm_signal *s, enum shm_signal_locality locale,
		     const struct shm_signal_ops *ops,
		     struct shm_signal_desc *desc)
{
	memset(s, 0, sizeof(*s));
	vbus_ref_init(&s->ref);
	vbus_lock_init(&s->lock);
	vbus_defer_init(&s->deferred_notify, deferred_notify, s);
	s->locale = locale;
	s->ops = ops;
	s->desc = desc;
}
VBUS_EXPORT(shm_signal_init);

void shm_signal_put(struct shm_signal *s)
{
	if (vbus_ref_put(&s->ref) && s->ops && s->ops->release)
		s->ops->release(s);
}
VBUS_EXPORT(shm_signal_put);

void shm_signal_fault(struct shm_signal *s, const char *msg)
{
	/* report once: a corrupted index would re-fault on every query */
	if (vbus_xchg(&s->faulted, 1))
		return;
	if (s->ops && s->ops->fault)
		s->ops->fault(s, msg);
	else
		vbus_log_fault("shm-signal fault: %s\n", msg);
}
VBUS_EXPORT(shm_signal_fault);

int shm_signal_enable(struct shm_signal *s, int flags)
{
	struct shm_signal_irq *irq = &s->desc->irq[s->locale];
	unsigned long iflags = 0;
	int kick;

	(void)flags;
	vbus_lock(&s->lock, iflags);

	s->enabled = 1;
	VBUS_WRITE(irq->enabled, 1);
	/*
	 * [B2] Order enabled=1 before the loads of dirty/pending. Pairs with
	 * [B1] in the peer's inject: either the peer sees enabled=1 and
	 * crosses the boundary, or we see its dirty=1 here and notify
	 * ourselves. Without it both sides can read the old values.
	 */
	vbus_mb();

	kick = (VBUS_READ(irq->dirty) || VBUS_READ(irq->pending)) &&
	       !s->in_wakeup;

	vbus_unlock(&s->lock, iflags);

	/* A wakeup in progress re-checks enabled/dirty before it returns. */
	if (kick)
		vbus_defer_schedule(&s->deferred_notify);

	return 0;
}
VBUS_EXPORT(shm_signal_enable);

int shm_signal_disable(struct shm_signal *s, int flags)
{
	struct shm_signal_irq *irq = &s->desc->irq[s->locale];
	unsigned long iflags = 0;

	(void)flags;
	/*
	 * No barrier: masking late only costs a spurious notification, which
	 * every receiver tolerates. The lock is for the shadow (a bit in the
	 * word in_wakeup shares).
	 */
	vbus_lock(&s->lock, iflags);
	s->enabled = 0;
	VBUS_WRITE(irq->enabled, 0);
	vbus_unlock(&s->lock, iflags);

	return 0;
}
VBUS_EXPORT(shm_signal_disable);

int shm_signal_inject(struct shm_signal *s, int flags)
{
	/* the irq record of the other side: the one we notify */
	struct shm_signal_irq *irq = &s->desc->irq[!s->locale];

	(void)flags;
	if (shm_signal_faulted(s))
		return -EIO;

	/*
	 * [B0] Order the caller's shared-memory updates (ring indexes,
	 * ownership bits: [R1]..[R4] in core/ioq.c) before dirty=1. Pairs
	 * with [B4] in the peer's wakeup: a receiver whose exchange reads
	 * this dirty=1 then sees those updates.
	 */
	vbus_wmb();
	VBUS_WRITE(irq->dirty, 1);
	/*
	 * [B1] Order dirty=1 before the loads of enabled/pending. Pairs with
	 * [B2] (peer's enable) and [B3] (peer's pending=0 in its wakeup).
	 */
	vbus_mb();

	if (VBUS_READ(irq->enabled) && !VBUS_READ(irq->pending)) {
		/*
		 * Two injectors on this side may both get here; that only
		 * costs one spurious notification.
		 */
		VBUS_WRITE(irq->pending, 1);
		/*
		 * pending=1 before the boundary crossing: the peer must not
		 * see the notification and then our old pending=0.
		 */
		vbus_wmb();
		vbus_stat_inc(&s->injects);
		return s->ops->inject(s);
	}

	return 0;
}
VBUS_EXPORT(shm_signal_inject);

void _shm_signal_wakeup(struct shm_signal *s)
{
	struct shm_signal_irq *irq = &s->desc->irq[s->locale];
	unsigned long iflags = 0;
	unsigned int budget = SHM_SIGNAL_WAKEUP_BUDGET;
	struct shm_signal_notifier *notifier;
	int dirty;

	vbus_lock(&s->lock, iflags);
	s->in_wakeup = 1;

	/*
	 * The outer loop closes the race between clearing pending and a
	 * peer that set dirty just before (it saw pending=1 and did not
	 * cross the boundary). enabled is our shadow, not irq->enabled: a
	 * peer that wrote our mask would run a masked side's notifier.
	 */
	while (s->enabled &&
	       (VBUS_READ(irq->dirty) || VBUS_READ(irq->pending))) {
		/*
		 * Run the notifier until dirty stays clear. pending stays set
		 * meanwhile, so the peer knows no new notification is needed.
		 */
		do {
			/*
			 * Every notifier run counts against the budget, the
			 * ones the outer loop starts for pending as well as
			 * the ones dirty repeats: a peer that keeps setting
			 * either must not keep this context forever. We only
			 * get here with work left (enabled, and dirty or
			 * pending): leave pending as it is (set, the peer
			 * does not cross again) and come back through the
			 * deferred notify.
			 */
			if (!budget) {
				s->in_wakeup = 0;
				vbus_unlock(&s->lock, iflags);
				vbus_defer_schedule(&s->deferred_notify);
				return;
			}
			budget--;
			/*
			 * [B4] dirty=0 before the notifier reads the shared
			 * memory. Pairs with [B0] and [B1] in the peer's
			 * inject: a dirty=1 stored after ours is seen by the
			 * reload below; one stored before ours published its
			 * updates before it, and the notifier sees them.
			 *
			 * An exchange, not a plain store + mb: against the
			 * peer's "ring stores; wmb [B0]; dirty=1" a plain
			 * "dirty=0; mb; read ring" is the R litmus shape.
			 * x86-TSO, ARMv8 and POWER forbid the bad outcome
			 * (our dirty=0 last in coherence order AND the
			 * notifier reading the old ring), but neither C11
			 * (the TSan build's release stores and fences) nor
			 * the LKMM promises it. The exchange is a
			 * read-modify-write: it reads the latest dirty, so a
			 * dirty=1 before it is read by it (and acquire after
			 * [B0]'s release makes the ring updates visible), and
			 * one after it is seen by the reload below.
			 */
			(void)vbus_xchg(&irq->dirty, 0);
			vbus_mb();
			vbus_unlock(&s->lock, iflags);

			notifier = VBUS_READ(s->notifier);
			if (notifier)
				notifier->signal(notifier);
			vbus_stat_inc(&s->wakeups);

			vbus_lock(&s->lock, iflags);
			dirty = VBUS_READ(irq->dirty);
		} while (s->enabled && dirty &&
			 !shm_signal_faulted(s));

		if (shm_signal_faulted(s))
			break;

		/*
		 * Acknowledge: everything dirty has been processed. Races
		 * with a new inject are handled by the outer loop.
		 */
		VBUS_WRITE(irq->pending, 0);
		/*
		 * [B3] pending=0 before reloading dirty/enabled in the loop
		 * condition. Pairs with [B1]: either the peer sees pending=0
		 * and crosses the boundary, or we see its dirty=1 here.
		 */
		vbus_mb();
	}

	s->in_wakeup = 0;
	vbus_unlock(&s->lock, iflags);
}
VBUS_EXPORT(_shm_signal_wakeup);
