// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: shm-signals between the guest and the daemon.
 *
 * Guest -> host: the guest sets bit h of BAR2 sigpending (an atomic
 * set_bit) and rings Doorbell DB_SIGNAL. We take each 64-bit word with an
 * atomic exchange against 0, so a bit the guest sets while we scan is
 * either in the word we took or stays for the next doorbell; none is
 * lost and none is seen twice. Bit 0 is the eventq; other bits are the
 * signal handles DEVSHM handed out. A bit for a handle we don't know
 * (closed, never opened, garbage) is counted and ignored.
 *
 * Host -> guest: a device shm's south signal injects by posting
 * SHMSIGNAL{cookie} on the eventq, whose own signal writes the guest's
 * MSI-X EVENTQ eventfd.
 */
#include <errno.h>
#include <stdlib.h>
#include "hostd.h"

static struct hostd_shm_ent *to_ent(struct shm_signal *s)
{
	return hostd_container_of(s, struct hostd_shm_ent, signal);
}

static int shm_inject(struct shm_signal *s)
{
	struct hostd_shm_ent *e = to_ent(s);
	struct vbus_pci_event ev;

	/* a device that kept a reference past close signals nobody */
	if (e->closed)
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.eventid = VBUS_PCI_EVENT_SHMSIGNAL;
	ev.data.handle.handle = e->cookie;
	e->pub.dev->cnt.notify_out++;
	return hostd_evq_post(e->guest, &ev);
}

static void shm_fault(struct shm_signal *s, const char *msg)
{
	struct hostd_shm_ent *e = to_ent(s);

	if (!e->closed)
		hostd_dev_fault(e->pub.dev, "%s", msg);
}

static void shm_release(struct shm_signal *s)
{
	free(to_ent(s));
}

static const struct shm_signal_ops shm_ops = {
	.inject = shm_inject,
	.fault = shm_fault,
	.release = shm_release,
};

/*
 * Everything runs on the guest's thread, so the deferred notify only has
 * to make the loop come round: hostd_guest_run_deferred() runs it.
 */
static void defer_kick(void *arg)
{
	struct hostd_guest *g = arg;

	g->defer_pending = true;
}

void hostd_shm_ent_signal_init(struct hostd_shm_ent *e,
			       struct shm_signal_desc *desc)
{
	shm_signal_init(&e->signal, shm_locality_south, &shm_ops, desc);
	vbus_defer_set_kick(&e->signal.deferred_notify, defer_kick, e->guest);
	e->pub.signal = &e->signal;
}

int hostd_sig_alloc(struct hostd_guest *g, struct hostd_shm_ent *e)
{
	/*
	 * Lowest free handle. The guest's idea of a handle only matters
	 * while the shm is open; a stale bit for a reused handle costs the
	 * new owner one spurious wakeup, which every receiver tolerates.
	 */
	__u32 h;

	for (h = 1; h < VBUS_PCI_MAX_SIGNALS; h++) {
		if (!g->sigs[h]) {
			g->sigs[h] = e;
			e->handle = h;
			return (int)h;
		}
	}
	return -ENOSPC;
}

void hostd_sig_release_handle(struct hostd_guest *g, struct hostd_shm_ent *e)
{
	if (e->handle && e->handle < VBUS_PCI_MAX_SIGNALS &&
	    g->sigs[e->handle] == e)
		g->sigs[e->handle] = NULL;
	e->handle = 0;
}

static void deliver(struct hostd_guest *g, __u32 h)
{
	struct hostd_shm_ent *e;

	if (h == VBUS_PCI_EVENTQ_HANDLE) {
		if (g->evq.attached)
			_shm_signal_wakeup(&g->evq.signal);
		else
			g->sig_unknown++;
		return;
	}
	e = g->sigs[h];
	if (!e) {
		g->sig_unknown++;
		return;
	}
	e->pub.dev->cnt.notify_in++;
	if (e->pub.dev->faulted)
		return;
	/* the notifier may close the ring: keep the signal alive meanwhile */
	shm_signal_get(&e->signal);
	_shm_signal_wakeup(&e->signal);
	shm_signal_put(&e->signal);
}

void hostd_sig_doorbell(struct hostd_guest *g)
{
	unsigned int w;

	/*
	 * Drain first, scan after: a doorbell that arrives after the drain
	 * makes the eventfd readable again, so a bit set after our scan is
	 * never stranded.
	 */
	if (g->db_fd[VBUS_PCI_DB_SIGNAL] >= 0)
		hostd_eventfd_drain(g->db_fd[VBUS_PCI_DB_SIGNAL]);
	g->doorbells++;
	if (!g->shm)
		return;

	for (w = 0; w < VBUS_PCI_MAX_SIGNALS / 64; w++) {
		/*
		 * Full-barrier exchange: clears the word and orders the
		 * clear before we read the rings the bits stand for. Pairs
		 * with the guest's ring updates -> set_bit (a locked RMW) ->
		 * doorbell.
		 */
		__u64 bits = __atomic_exchange_n(&g->shm->sigpending[w], 0,
						 __ATOMIC_SEQ_CST);

		while (bits) {
			unsigned int b = (unsigned int)__builtin_ctzll(bits);

			bits &= bits - 1;
			if (g->faulted)
				continue;	/* an inert bus: drop them */
			deliver(g, w * 64 + b);
		}
	}
}
