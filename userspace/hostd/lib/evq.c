// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the south side of a guest's event queue.
 *
 * The guest (north) formats the ring, posts every descriptor on "both"
 * (ptr = gpa of a struct vbus_pci_event, len = 144) and reaps what we hand
 * back on "inuse". We deliver an event by taking the descriptor at our
 * valid head while it is south-owned, writing the event where its ptr
 * points (translated now: the guest may re-post with other values) and
 * popping it. One signal after a batch.
 *
 * A guest that stops servicing the queue (posts no descriptors) gets its
 * events parked in a bounded backlog; past the bound they are dropped and
 * logged. SHMSIGNALs coalesce (one per cookie in the backlog), so a device
 * signalling a stuck guest cannot fill it. Nothing here waits for the guest.
 * A descriptor that points outside RAM or is too short, or an index pair
 * that cannot be right, faults the bus.
 */
#include <errno.h>
#include <stdlib.h>
#include "hostd.h"

static struct hostd_guest *evq_guest(struct shm_signal *s)
{
	return hostd_container_of(s, struct hostd_guest, evq.signal);
}

/* South inject = MSI-X EVENTQ. */
static int evq_inject(struct shm_signal *s)
{
	struct hostd_guest *g = evq_guest(s);

	if (g->msix_fd[VBUS_PCI_MSIX_EVENTQ] >= 0)
		hostd_eventfd_kick(g->msix_fd[VBUS_PCI_MSIX_EVENTQ]);
	return 0;
}

static void evq_fault(struct shm_signal *s, const char *msg)
{
	hostd_bus_fault(evq_guest(s), "eventq: %s", msg);
}

static const struct shm_signal_ops evq_signal_ops = {
	.inject = evq_inject,
	.fault = evq_fault,
};

/* The guest signalled handle 0: it (re)posted descriptors. */
static void evq_notify(struct ioq_notifier *n)
{
	struct hostd_guest *g = hostd_container_of(n, struct hostd_guest,
						   evq.notifier);

	hostd_evq_flush(g);
}

static void defer_kick(void *arg)
{
	struct hostd_guest *g = arg;

	g->defer_pending = true;
}

static bool is_pow2(__u32 n)
{
	return n && !(n & (n - 1));
}

int hostd_evq_attach(struct hostd_guest *g, const struct vbus_pci_eventqreg *r)
{
	struct hostd_eventq *q = &g->evq;
	struct ioq_ring_head *head;
	__u64 ringlen;
	long n;

	hostd_evq_detach(g);

	if (!is_pow2(r->count) || r->count > VBUS_PCI_MAX_SIGNALS)
		return -EINVAL;
	/* the ring has 64-bit fields, accessed in place */
	if (r->ring & 7)
		return -EINVAL;
	ringlen = IOQ_HEAD_DESC_SIZE((__u64)r->count);
	head = hostd_gpa(g, r->ring, ringlen);
	if (!head)
		return -EFAULT;
	n = ioq_ring_check(head, ringlen, r->count);
	if (n < 0)
		return (int)n;
	/* We never use "data" itself (each descriptor says where its event
	 * goes), but the contract says it must be there. */
	if (!hostd_gpa(g, r->data,
		       (__u64)r->count * sizeof(struct vbus_pci_event)))
		return -EFAULT;

	if (!q->backlog) {
		q->backlog = calloc(HOSTD_EVQ_BACKLOG, sizeof(*q->backlog));
		if (!q->backlog)
			return -ENOMEM;
	}
	q->bl_head = q->bl_len = 0;

	shm_signal_init(&q->signal, shm_locality_south, &evq_signal_ops,
			&head->signal);
	vbus_defer_set_kick(&q->signal.deferred_notify, defer_kick, g);
	/* ioq_init takes over the signal's initial reference */
	if (ioq_init(&q->ioq, NULL, ioq_locality_south, head, &q->signal,
		     (__u32)n))
		return -EINVAL;
	q->notifier.signal = evq_notify;
	q->ioq.notifier = &q->notifier;
	q->count = (__u32)n;
	q->attached = true;
	/* hear about re-posted descriptors */
	ioq_notify_enable(&q->ioq, 0);
	return 0;
}

void hostd_evq_detach(struct hostd_guest *g)
{
	struct hostd_eventq *q = &g->evq;

	q->bl_head = q->bl_len = 0;
	if (!q->attached)
		return;
	q->attached = false;
	vbus_defer_cancel(&q->signal.deferred_notify);
	/* drops the signal too; neither has a release op (both embedded) */
	ioq_put(&q->ioq);
}

/* 0 delivered, -EAGAIN no descriptor, -EIO the bus faulted */
static int deliver_one(struct hostd_guest *g, const struct vbus_pci_event *ev)
{
	struct hostd_eventq *q = &g->evq;
	struct ioq_iterator it;
	__u64 ptr, len;
	void *dst;

	if (ioq_iter_init(&q->ioq, &it, ioq_idxtype_valid, 0) ||
	    ioq_iter_seek(&it, ioq_seek_head, 0, 0))
		return -EIO;
	if (!ioq_iter_owned(&it))
		return shm_signal_faulted(&q->signal) ? -EIO : -EAGAIN;

	ptr = VBUS_READ(it.desc->ptr);
	len = VBUS_READ(it.desc->len);
	if (len < sizeof(*ev)) {
		hostd_bus_fault(g, "eventq: descriptor len %llu < %zu",
				(unsigned long long)len, sizeof(*ev));
		return -EIO;
	}
	dst = hostd_gpa(g, ptr, sizeof(*ev));
	if (!dst) {
		hostd_bus_fault(g, "eventq: descriptor ptr 0x%llx outside RAM",
				(unsigned long long)ptr);
		return -EIO;
	}
	memcpy(dst, ev, sizeof(*ev));
	/* pop publishes: event body -> wmb -> sown -> wmb -> valid.head */
	if (ioq_iter_pop(&it, 0) < 0) {
		hostd_bus_fault(g, "eventq: pop failed");
		return -EIO;
	}
	q->posted++;
	return 0;
}

void hostd_evq_flush(struct hostd_guest *g)
{
	struct hostd_eventq *q = &g->evq;
	unsigned int delivered = 0;

	while (q->attached && !g->faulted && q->bl_len) {
		if (deliver_one(g, &q->backlog[q->bl_head]))
			break;
		q->bl_head = (q->bl_head + 1) % HOSTD_EVQ_BACKLOG;
		q->bl_len--;
		delivered++;
	}
	if (delivered && q->attached && !g->faulted)
		ioq_signal(&q->ioq, 0);
}

int hostd_evq_post(struct hostd_guest *g, const struct vbus_pci_event *ev)
{
	struct hostd_eventq *q = &g->evq;
	unsigned int i;

	/* before BUSREG nobody listens; BUSREG announces every device */
	if (!q->attached || g->faulted)
		return 0;

	if (ev->eventid == VBUS_PCI_EVENT_SHMSIGNAL) {
		for (i = 0; i < q->bl_len; i++) {
			const struct vbus_pci_event *o =
				&q->backlog[(q->bl_head + i) % HOSTD_EVQ_BACKLOG];

			if (o->eventid == VBUS_PCI_EVENT_SHMSIGNAL &&
			    o->data.handle.handle == ev->data.handle.handle)
				return 0;
		}
	}
	if (q->bl_len == HOSTD_EVQ_BACKLOG) {
		q->dropped++;
		hostd_glog(g, "eventq: guest not servicing its event queue, event %u dropped (%llu so far)",
			   ev->eventid, (unsigned long long)q->dropped);
		return -ENOSPC;
	}
	q->backlog[(q->bl_head + q->bl_len) % HOSTD_EVQ_BACKLOG] = *ev;
	q->bl_len++;
	hostd_evq_flush(g);
	if (q->bl_len)
		q->backlogged++;
	return 0;
}
