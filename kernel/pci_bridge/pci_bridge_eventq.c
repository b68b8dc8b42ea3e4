// SPDX-License-Identifier: GPL-2.0
/*
 * The host->guest event queue (docs/transport.md, "The event queue").
 *
 * 1024 descriptors, each pointing at its own struct vbus_pci_event; the
 * slot index ties a descriptor to its event buffer (we never read a
 * pointer or index back from the host: desc->cookie is host-writable).
 * All descriptors stay posted. The host fills an event, pops the
 * descriptor (hands it back to us) and signals; MSI-X EVENTQ runs
 * _shm_signal_wakeup() whose notifier schedules the tasklet below. The
 * tasklet reaps the inuse head while it is north-owned, copies the event
 * out, handles it and re-posts the slot at the tail; at most
 * VBUS_PCI_EVENTQ_BUDGET per run, then it reschedules itself.
 *
 * The tasklet is the only reader of the ring on our side (a tasklet never
 * runs concurrently with itself), so the iterators need no lock.
 */
#include <linux/module.h>
#include <linux/gfp.h>
#include <linux/io.h>
#include <linux/dma-mapping.h>
#include "pci_bridge.h"

/* Where the host writes the event of ring slot @slot. */
static u64 eventq_event_dma(struct vbus_pci_bridge *b, u32 slot)
{
	return (u64)b->events_dma + (u64)slot * sizeof(struct vbus_pci_event);
}

/* Fill the descriptor at ring position @pos with its slot's event buffer. */
static void eventq_fill(struct vbus_pci_bridge *b, __u32 pos)
{
	struct ioq *ioq = &b->eventq;
	struct ioq_ring_desc *desc = ioq_desc(ioq, pos);
	u32 slot = pos & ioq->mask;

	/*
	 * Rewrite every field: the host had the descriptor and may have
	 * changed any of them.
	 */
	WRITE_ONCE(desc->cookie, slot);
	WRITE_ONCE(desc->ptr, eventq_event_dma(b, slot));
	WRITE_ONCE(desc->len, sizeof(struct vbus_pci_event));
	WRITE_ONCE(desc->valid, 1);
}

/*
 * Post @n event buffers at the tail as one batch: one publish ([R4] on
 * each sown, then [R1] on the tails: core/ioq_v5.c) and, with
 * IOQ_ITER_AUTOUPDATE in @flags, one signal. 0 or < 0.
 */
static int eventq_post(struct vbus_pci_bridge *b, unsigned int n, int flags)
{
	struct ioq *ioq = &b->eventq;
	unsigned int i;
	__u32 pos;
	int ret;

	ret = ioq_post_begin(ioq, n, &pos);
	if (ret >= 0 && ret != n)
		ret = -ENOSPC;		/* what we reaped is no longer free */
	if (ret < 0)
		return ret;
	for (i = 0; i < n; i++)
		eventq_fill(b, pos + i);
	return ioq_post_end(ioq, n, flags);
}

static void eventq_handle(struct vbus_pci_bridge *b,
			  const struct vbus_pci_event *ev)
{
	vbus_pci_stat_inc(b, events);

	switch (ev->eventid) {
	case VBUS_PCI_EVENT_DEVADD:
		vbus_pci_queue_devadd(b, &ev->data.add);
		break;
	case VBUS_PCI_EVENT_DEVDROP:
		vbus_pci_queue_devdrop(b, ev->data.handle.handle);
		break;
	case VBUS_PCI_EVENT_SHMSIGNAL:
		vbus_pci_event_shmsignal(b, ev->data.handle.handle);
		break;
	case VBUS_PCI_EVENT_SHMCLOSE:
		vbus_pci_event_shmclose(b, ev->data.handle.handle);
		break;
	default:
		vbus_pci_stat_inc(b, ev_bad);
		dev_warn_ratelimited(&b->pdev->dev,
				     "eventq: unknown event id %u ignored\n",
				     ev->eventid);
		break;
	}
}

/*
 * One pass: at most VBUS_PCI_EVENTQ_BUDGET events. True when it stopped on
 * the budget with more waiting (the caller comes back for them).
 *
 * The reaper's bulk calls: ioq_reap_begin() claims what the host handed
 * back (v5: north-owned at inuse's head; carries [A4], which orders it
 * before the event bodies and pairs with the host pop's [R4]; see
 * docs/ring.md), each event is copied once and handled, ioq_reap_end()
 * publishes inuse's head once ([R3]), and eventq_post() re-posts the
 * batch with one publish and one signal (free slots again; the host
 * retries its backlog).
 */
static bool vbus_pci_eventq_pass(struct vbus_pci_bridge *b)
{
	struct ioq *ioq = &b->eventq;
	struct vbus_pci_event ev;
	bool more = false;
	int i, n, ret;
	__u32 pos;

	if (READ_ONCE(b->eventq_stop))
		return false;
	vbus_pci_inject_drain(b, eventq_handle);
	if (shm_signal_faulted(ioq->signal))
		return false;
	vbus_pci_stat_inc(b, ev_runs);

	n = ioq_reap_begin(ioq, VBUS_PCI_EVENTQ_BUDGET, &pos);
	if (n <= 0)
		return false;
	for (i = 0; i < n; i++) {
		/* one copy; the host can rewrite the buffer at any time */
		memcpy(&ev, &b->events[(pos + i) & ioq->mask], sizeof(ev));
		eventq_handle(b, &ev);
	}
	ret = ioq_reap_end(ioq, n, 0);
	if (!ret)
		ret = eventq_post(b, n, IOQ_ITER_AUTOUPDATE);
	if (ret) {
		dev_err_ratelimited(&b->pdev->dev,
				    "eventq: reap or re-post of %d failed: %d (host broke the ring)\n",
				    n, ret);
		return false;
	}
	/* more waiting past the budget: let others run, come back */
	if (n == VBUS_PCI_EVENTQ_BUDGET && ioq_reap_begin(ioq, 1, &pos) > 0) {
		vbus_pci_stat_inc(b, ev_budget);
		more = true;
	}
	return more;
}

static void vbus_pci_eventq_tasklet(struct tasklet_struct *t)
{
	struct vbus_pci_bridge *b = from_tasklet(b, t, eventq_tasklet);

	if (vbus_pci_eventq_pass(b))
		tasklet_schedule(&b->eventq_tasklet);
}

/* ioq notifier, from _shm_signal_wakeup() of the eventq signal. */
static void vbus_pci_eventq_notify(struct ioq_notifier *n)
{
	struct vbus_pci_bridge *b = container_of(n, struct vbus_pci_bridge,
						 eventq_notifier);

	if (!READ_ONCE(b->eventq_stop))
		tasklet_schedule(&b->eventq_tasklet);
}

/* MSI-X vector EVENTQ (its handler is in pci_bridge_epoch.c). */
void vbus_pci_eventq_wake(struct vbus_pci_bridge *b)
{
	/* set once setup has bound the ioq; the irq is requested after */
	if (READ_ONCE(b->eventq_ready))
		_shm_signal_wakeup(&b->eventq_signal);
}

/* Post every slot of a freshly formatted ring (setup, reset). */
static int eventq_post_all(struct vbus_pci_bridge *b)
{
	return eventq_post(b, VBUS_PCI_EVENTQ_COUNT, 0);
}

/*
 * v5 on purpose: a handful of events, a host of any version reads it
 * (BUSREG has no retry), and every boot keeps v5 exercised. Setup and a
 * host restart's reset both format it here: b->eventq stays bound to v5
 * for the bridge's life, so the ring must never come back another
 * version.
 */
static int eventq_format(struct vbus_pci_bridge *b)
{
	return ioq_ring_format_ver(b->eventq_ring, VBUS_PCI_EVENTQ_COUNT,
				   IOQ_RING_VER_V5);
}

/*
 * Allocate and format the ring and event array (dma_alloc_coherent() on
 * the PCI device: zeroed, whole pages), bind the north ioq and post every descriptor. The host sees
 * none of it until BUSREG.
 */
int vbus_pci_eventq_setup(struct vbus_pci_bridge *b)
{
	int ret;

	b->eventq_ring_len = IOQ_HEAD_DESC_SIZE(VBUS_PCI_EVENTQ_COUNT);
	b->events_len = sizeof(struct vbus_pci_event) * VBUS_PCI_EVENTQ_COUNT;

	b->eventq_ring = dma_alloc_coherent(&b->pdev->dev, b->eventq_ring_len,
					    &b->eventq_ring_dma, GFP_KERNEL);
	b->events = dma_alloc_coherent(&b->pdev->dev, b->events_len,
				       &b->events_dma, GFP_KERNEL);
	if (!b->eventq_ring || !b->events)
		return -ENOMEM;

	ret = eventq_format(b);
	if (ret)
		return ret;

	vbus_pci_eventq_signal_init(b);
	/*
	 * takes over the signal's initial reference (never released); the
	 * version we formatted, not one read back from the ring
	 */
	ret = ioq_init_ver(&b->eventq, NULL, ioq_locality_north,
			   b->eventq_ring, &b->eventq_signal,
			   VBUS_PCI_EVENTQ_COUNT, IOQ_RING_VER_V5);
	if (ret)
		return ret;
	b->eventq_notifier.signal = vbus_pci_eventq_notify;
	b->eventq.notifier = &b->eventq_notifier;
	tasklet_setup(&b->eventq_tasklet, vbus_pci_eventq_tasklet);

	ret = eventq_post_all(b);
	if (ret)
		return ret;

	/* the irq handler may now run the wakeup */
	WRITE_ONCE(b->eventq_ready, true);
	return ioq_notify_enable(&b->eventq, 0);
}

/*
 * A new host (docs/transport.md, "Host restarts"): the old one is gone
 * and the new one has not seen the ring yet, so it is ours to format
 * again, with the tasklet held off. A fault the old host caused goes
 * with its ring.
 */
int vbus_pci_eventq_reset(struct vbus_pci_bridge *b)
{
	int ret;

	if (!b->eventq_ready)
		return -ENODEV;
	tasklet_disable(&b->eventq_tasklet);
	ret = eventq_format(b);
	if (!ret) {
		WRITE_ONCE(b->eventq_signal.faulted, 0);
		ret = eventq_post_all(b);
	}
	if (!ret)
		ret = ioq_notify_enable(&b->eventq, 0);
	tasklet_enable(&b->eventq_tasklet);
	return ret;
}

/*
 * A re-attach must see every DEVADD the new host posted before it drops
 * the devices not announced, so it drains the ring, not one budget's
 * worth: with more than VBUS_PCI_EVENTQ_BUDGET devices, one pass left
 * live devices "stale". A full ring is VBUS_PCI_EVENTQ_COUNT events; the
 * bound only stops a host that keeps refilling it.
 */
#define VBUS_PCI_EVENTQ_DRAIN_PASSES \
	(2 * VBUS_PCI_EVENTQ_COUNT / VBUS_PCI_EVENTQ_BUDGET)
static_assert(VBUS_PCI_MAX_DEVICES < VBUS_PCI_EVENTQ_COUNT);

/*
 * Handle what the host posted, now, in the caller's (process) context,
 * until the ring is empty: the tasklet held off so it never runs twice at
 * once, BHs off per pass as in a tasklet (the signal table's lock is taken
 * _bh elsewhere). False when the host kept the ring from draining.
 */
bool vbus_pci_eventq_run_now(struct vbus_pci_bridge *b)
{
	bool more = true;
	int pass;

	tasklet_disable(&b->eventq_tasklet);
	for (pass = 0; more && pass < VBUS_PCI_EVENTQ_DRAIN_PASSES; pass++) {
		local_bh_disable();
		more = vbus_pci_eventq_pass(b);
		local_bh_enable();
		cond_resched();
	}
	tasklet_enable(&b->eventq_tasklet);
	/* what came after the last pass waits for the interrupt's tasklet */
	if (more)
		tasklet_schedule(&b->eventq_tasklet);
	return !more;
}

int vbus_pci_eventq_register(struct vbus_pci_bridge *b)
{
	struct vbus_pci_busreg params = {
		.count = 1,
		.eventq = {
			{
				.count = VBUS_PCI_EVENTQ_COUNT,
				.ring = b->eventq_ring_dma,
				.data = b->events_dma,
			},
		},
	};
	int ret;

	ret = vbus_pci_hypercall(b, VBUS_PCI_HC_BUSREG, &params, sizeof(params),
				 VBUS_PCI_HC_NO_DATAP, NULL, 0);
	if (ret == -ETIMEDOUT)
		WRITE_ONCE(b->eventq_leak, true);	/* it may have attached */
	return ret;
}

/*
 * BUSREG with count 0: the host stops writing the eventq. Only after it
 * says so may the memory go back to the allocator.
 */
void vbus_pci_eventq_detach(struct vbus_pci_bridge *b)
{
	struct vbus_pci_busreg params = { .count = 0 };
	int ret;

	ret = vbus_pci_hypercall(b, VBUS_PCI_HC_BUSREG, &params, sizeof(params),
				 VBUS_PCI_HC_NO_DATAP, NULL, 0);
	if (ret) {
		WRITE_ONCE(b->eventq_leak, true);
		dev_warn(&b->pdev->dev,
			 "host did not detach the eventq (%d): leaking its %zu bytes\n",
			 ret, b->eventq_ring_len + b->events_len);
	}
}

/*
 * Stop event processing for good. The eventq irq must be freed first, so
 * nothing but the signal's deferred notify can schedule the tasklet.
 */
void vbus_pci_eventq_stop(struct vbus_pci_bridge *b)
{
	if (!b->eventq_ready)
		return;
	WRITE_ONCE(b->eventq_stop, true);
	tasklet_kill(&b->eventq_tasklet);
	vbus_defer_cancel(&b->eventq_signal.deferred_notify);
	/* a deferred notify that ran before the cancel saw eventq_stop */
	tasklet_kill(&b->eventq_tasklet);
	ioq_put(&b->eventq);
	b->eventq_ready = false;
}

void vbus_pci_eventq_free(struct vbus_pci_bridge *b)
{
	if (READ_ONCE(b->eventq_leak))
		return;
	if (b->eventq_ring)
		dma_free_coherent(&b->pdev->dev, b->eventq_ring_len,
				  b->eventq_ring, b->eventq_ring_dma);
	if (b->events)
		dma_free_coherent(&b->pdev->dev, b->events_len, b->events,
				  b->events_dma);
	b->eventq_ring = NULL;
	b->events = NULL;
}
