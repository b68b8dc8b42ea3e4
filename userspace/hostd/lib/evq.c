// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the south side of a guest's event queue (see evq.h).
 *
 * The guest (north) formats the ring, posts every descriptor on "both"
 * (ptr = gpa of a struct vbus_pci_event, len = 144) and reaps what we hand
 * back on "inuse". We deliver an event by taking the descriptor at our
 * valid head while it is south-owned, writing the event where its ptr
 * points (translated now: the guest may re-post with other values) and
 * popping it. One signal after a batch.
 *
 * The guest signals handle 0 after every run that re-posted descriptors;
 * we only need that while events wait in the backlog, so our side of the
 * ring's signal is masked otherwise (the guest's inject then skips the
 * doorbell: one guest->host notification less per host->guest interrupt).
 *
 * A guest that stops servicing the queue (posts no descriptors) gets its
 * events parked in a bounded backlog; past the bound they are dropped and
 * logged. SHMSIGNALs coalesce (one per cookie in the backlog), so a device
 * signalling a stuck guest cannot fill it. Nothing here waits for the guest.
 * A descriptor that points outside RAM or is too short, or an index pair
 * that cannot be right, faults the channel, and with it the bus.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "evq.h"

static struct hostd_evq *to_evq(struct shm_signal *s)
{
	return hostd_container_of(s, struct hostd_evq, signal);
}

/* Count and log a fault whose flag is set; the loop closes the devices. */
static void evq_vreport(struct hostd_evq *q, const char *fmt, va_list ap)
{
	q->faults++;
	hostd_log_vlimited(q->log, "bus faulted: eventq: ", fmt, ap);
	hostd_loop_defer(q->loop);
}

static void evq_report(struct hostd_evq *q, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void evq_report(struct hostd_evq *q, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	evq_vreport(q, fmt, ap);
	va_end(ap);
}

static void evq_fault(struct hostd_evq *q, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* We found the ring broken: fault the channel (the first reason counts). */
static void evq_fault(struct hostd_evq *q, const char *fmt, ...)
{
	va_list ap;

	if (shm_signal_faulted(&q->signal))
		return;
	VBUS_WRITE(q->signal.faulted, 1);
	va_start(ap, fmt);
	evq_vreport(q, fmt, ap);
	va_end(ap);
}

/* South inject = MSI-X EVENTQ. */
static int evq_inject(struct shm_signal *s)
{
	hostd_ivshmem_irq(to_evq(s)->iv, VBUS_PCI_MSIX_EVENTQ);
	return 0;
}

/* core found the ring broken; it has set the flag already */
static void evq_signal_fault(struct shm_signal *s, const char *msg)
{
	evq_report(to_evq(s), "%s", msg);
}

static const struct shm_signal_ops evq_signal_ops = {
	.inject = evq_inject,
	.fault = evq_signal_fault,
};

/* Deliver the backlog into the descriptors the guest posted. */
static void hostd_evq_flush(struct hostd_evq *q);

/* The guest signalled handle 0: it (re)posted descriptors. */
static void evq_notify(struct ioq_notifier *n)
{
	hostd_evq_flush(hostd_container_of(n, struct hostd_evq, notifier));
}

bool hostd_evq_live(const struct hostd_evq *q)
{
	return q->attached && !shm_signal_faulted(&q->signal);
}

/* The guest's ring, checked: its head, or NULL with -errno in *@ret. */
static struct ioq_ring_head *evq_ring(struct hostd_evq *q,
				      const struct vbus_pci_eventqreg *r,
				      long *ret, __u32 *ver)
{
	__u64 ringlen = IOQ_HEAD_DESC_SIZE((__u64)r->count);
	struct ioq_ring_head *head;

	*ret = -EINVAL;
	/* ioq_ring_check wants a power of two; the ring has 64-bit fields */
	if (!r->count || r->count > VBUS_PCI_MAX_SIGNALS || (r->ring & 7))
		return NULL;
	*ret = -EFAULT;
	head = hostd_mem_gpa(q->mem, r->ring, ringlen);
	if (!head)
		return NULL;
	*ret = ioq_ring_check_ver(head, ringlen, r->count, ver);
	if (*ret < 0)
		return NULL;
	/*
	 * We never use "data" itself (each descriptor says where its event
	 * goes), but the contract says it must be there.
	 */
	if (!hostd_mem_gpa(q->mem, r->data,
			   (__u64)r->count * sizeof(struct vbus_pci_event))) {
		*ret = -EFAULT;
		return NULL;
	}
	return head;
}

int hostd_evq_attach(struct hostd_evq *q, const struct vbus_pci_eventqreg *r)
{
	struct ioq_ring_head *head;
	__u32 ver = 0;
	long n;

	hostd_evq_detach(q);
	head = evq_ring(q, r, &n, &ver);
	if (!head)
		return (int)n;
	if (!q->backlog) {
		q->backlog = calloc(HOSTD_EVQ_BACKLOG, sizeof(*q->backlog));
		if (!q->backlog)
			return -ENOMEM;
	}
	q->bl_head = q->bl_len = 0;

	shm_signal_init(&q->signal, shm_locality_south, &evq_signal_ops,
			&head->signal);
	vbus_defer_set_kick(&q->signal.deferred_notify, hostd_loop_defer_kick,
			    q->loop);
	/* ioq_init takes over the signal's initial reference */
	if (ioq_init_ver(&q->ioq, NULL, ioq_locality_south, head, &q->signal,
			 (__u32)n, ver))
		return -EINVAL;
	q->notifier.signal = evq_notify;
	q->ioq.notifier = &q->notifier;
	q->count = (__u32)n;
	q->attached = true;
	/* re-posts matter only with a backlog (hostd_evq_flush) */
	ioq_notify_disable(&q->ioq, 0);
	q->notify_on = false;
	return 0;
}

void hostd_evq_detach(struct hostd_evq *q)
{
	q->bl_head = q->bl_len = 0;
	if (!q->attached)
		return;
	q->attached = false;
	vbus_defer_cancel(&q->signal.deferred_notify);
	/* drops the signal too; neither has a release op (both embedded) */
	ioq_put(&q->ioq);
}

/* 0 delivered, -EAGAIN no descriptor, -EIO the channel faulted */
static int deliver_one(struct hostd_evq *q, const struct vbus_pci_event *ev)
{
	struct ioq_iterator it;
	__u64 ptr, len;
	void *dst;

	if (ioq_iter_init(&q->ioq, &it, ioq_idx_consume, 0) ||
	    ioq_iter_seek(&it, ioq_seek_head, 0, 0))
		return -EIO;
	if (!ioq_iter_owned(&it))
		return shm_signal_faulted(&q->signal) ? -EIO : -EAGAIN;

	ptr = VBUS_READ(it.desc->ptr);
	len = VBUS_READ(it.desc->len);
	if (len < sizeof(*ev)) {
		evq_fault(q, "descriptor len %llu < %zu",
			  (unsigned long long)len, sizeof(*ev));
		return -EIO;
	}
	dst = hostd_mem_gpa(q->mem, ptr, sizeof(*ev));
	if (!dst) {
		evq_fault(q, "descriptor ptr 0x%llx outside RAM",
			  (unsigned long long)ptr);
		return -EIO;
	}
	memcpy(dst, ev, sizeof(*ev));
	/* the pop publishes the event body: [R2] (v5: then [R4]), docs/ring.md */
	if (ioq_iter_pop(&it, 0) < 0) {
		evq_fault(q, "pop failed");
		return -EIO;
	}
	q->posted++;
	return 0;
}

/* Deliver from the backlog while the guest has descriptors posted. */
static unsigned int evq_deliver(struct hostd_evq *q)
{
	unsigned int delivered = 0;

	while (hostd_evq_live(q) && q->bl_len) {
		if (deliver_one(q, &q->backlog[q->bl_head]))
			break;
		q->bl_head = (q->bl_head + 1) % HOSTD_EVQ_BACKLOG;
		q->bl_len--;
		delivered++;
	}
	return delivered;
}

static void hostd_evq_flush(struct hostd_evq *q)
{
	unsigned int delivered = evq_deliver(q);

	if (q->bl_len && !q->notify_on && hostd_evq_live(q)) {
		/*
		 * Out of descriptors with events waiting: unmask, then look
		 * again. shm_signal_enable()'s full barrier ([B2]) orders
		 * enabled=1 before the re-read of the ring in evq_deliver();
		 * it pairs with [B1] in the guest's inject after its re-post:
		 * either it sees enabled=1 and rings, or we see its posts.
		 */
		ioq_notify_enable(&q->ioq, 0);
		q->notify_on = true;
		delivered += evq_deliver(q);
	}
	if (!q->bl_len && q->notify_on && hostd_evq_live(q)) {
		/* nothing waits: the guest's re-posts need no doorbell */
		ioq_notify_disable(&q->ioq, 0);
		q->notify_on = false;
	}
	if (delivered && hostd_evq_live(q))
		ioq_signal(&q->ioq, 0);
}

/* A SHMSIGNAL for a cookie already waiting in the backlog adds nothing. */
static bool backlog_has_signal(const struct hostd_evq *q, __u64 cookie)
{
	unsigned int i;

	for (i = 0; i < q->bl_len; i++) {
		const struct vbus_pci_event *o =
			&q->backlog[(q->bl_head + i) % HOSTD_EVQ_BACKLOG];

		if (o->eventid == VBUS_PCI_EVENT_SHMSIGNAL &&
		    o->data.handle.handle == cookie)
			return true;
	}
	return false;
}

int hostd_evq_post(struct hostd_evq *q, const struct vbus_pci_event *ev)
{
	if (!hostd_evq_live(q))
		return 0;
	if (ev->eventid == VBUS_PCI_EVENT_SHMSIGNAL &&
	    backlog_has_signal(q, ev->data.handle.handle))
		return 0;
	if (q->bl_len == HOSTD_EVQ_BACKLOG) {
		q->dropped++;
		hostd_log_limited(q->log, "eventq: guest not servicing its event queue, event %u dropped (%llu so far)",
				  ev->eventid, (unsigned long long)q->dropped);
		return -ENOSPC;
	}
	q->backlog[(q->bl_head + q->bl_len) % HOSTD_EVQ_BACKLOG] = *ev;
	q->bl_len++;
	hostd_evq_flush(q);
	if (q->bl_len)
		q->backlogged++;
	return 0;
}

void hostd_evq_run_deferred(struct hostd_evq *q)
{
	if (q->attached)
		vbus_defer_run(&q->signal.deferred_notify);
}

void hostd_evq_init(struct hostd_evq *q, struct hostd_mem *mem,
		    struct hostd_ivshmem *iv, struct hostd_loop *loop,
		    struct hostd_log_limit *log)
{
	memset(q, 0, sizeof(*q));
	q->mem = mem;
	q->iv = iv;
	q->loop = loop;
	q->log = log;
}

void hostd_evq_fini(struct hostd_evq *q)
{
	hostd_evq_detach(q);
	free(q->backlog);
	q->backlog = NULL;
}
