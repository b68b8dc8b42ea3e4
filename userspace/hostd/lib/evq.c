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

/* The guest buffer a descriptor names for one event, or NULL (bad). */
static void *event_dst(struct hostd_evq *q, const struct ioq_ring_desc *desc,
		       __u64 *ptr, __u64 *len)
{
	/* ptr and len once each: the guest may rewrite them meanwhile */
	*ptr = VBUS_READ(desc->ptr);
	*len = VBUS_READ(desc->len);
	if (*len < sizeof(struct vbus_pci_event))
		return NULL;
	return hostd_mem_gpa(q->mem, *ptr, sizeof(struct vbus_pci_event));
}

/* The fault for a descriptor event_dst() refused */
static void fault_bad(struct hostd_evq *q, __u64 ptr, __u64 len)
{
	if (len < sizeof(struct vbus_pci_event))
		evq_fault(q, "descriptor len %llu < %zu",
			  (unsigned long long)len,
			  sizeof(struct vbus_pci_event));
	else
		evq_fault(q, "descriptor ptr 0x%llx outside RAM",
			  (unsigned long long)ptr);
}

/*
 * Deliver from the backlog into what the guest posted: one claim, one
 * publication of valid's head for the batch. A bad descriptor ends the
 * batch: the events before it go out, then the eventq faults. Returns
 * how many went out.
 */
static unsigned int evq_deliver(struct hostd_evq *q)
{
	unsigned int done = 0;
	__u64 ptr = 0, len = 0;
	bool bad = false;
	__u32 pos;
	int k;

	if (!hostd_evq_live(q) || !q->bl_len)
		return 0;
	/* [A1] (v5: [A4]) inside: the tail before the bodies it covers */
	k = ioq_consume_begin(&q->ioq, q->bl_len, &pos);
	if (k <= 0)
		return 0;	/* none posted, or the channel faulted */
	for (; done < (unsigned int)k; done++) {
		void *dst = event_dst(q, ioq_desc(&q->ioq, pos + done),
				      &ptr, &len);

		if (!dst) {
			bad = true;
			break;
		}
		memcpy(dst, &q->backlog[(q->bl_head + done) % HOSTD_EVQ_BACKLOG],
		       sizeof(struct vbus_pci_event));
	}
	/* publishes the event bodies: [R2] (v5: then [R4]), docs/ring.md */
	if (done && ioq_consume_end(&q->ioq, done, 0) < 0) {
		evq_fault(q, "pop failed");
		return 0;
	}
	q->bl_head = (q->bl_head + done) % HOSTD_EVQ_BACKLOG;
	q->bl_len -= done;
	q->posted += done;
	if (bad)
		fault_bad(q, ptr, len);
	return done;
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
