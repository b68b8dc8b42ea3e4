/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: the south side of a guest's event queue, the bus's one
 * channel to the guest: DEVADD/DEVDROP, SHMSIGNAL (a device signalled one
 * of its rings) and SHMCLOSE. Delivery ends in the guest's MSI-X EVENTQ
 * vector (ivshmem.c).
 *
 * A broken eventq (bad descriptor, impossible indexes) faults its channel;
 * a faulted eventq is what a faulted bus is (hostd_bus_faulted(), bus.c).
 */
#ifndef VBUS_HOSTD_EVQ_H
#define VBUS_HOSTD_EVQ_H

#include <stdbool.h>
#include <vbus/ioq.h>
#include <vbus/shm_signal.h>
#include <vbus/vbus_pci.h>
#include "ivshmem.h"
#include "log.h"
#include "loop.h"
#include "mem.h"

#define HOSTD_EVQ_BACKLOG	256

struct hostd_evq {
	struct hostd_mem *mem;
	struct hostd_ivshmem *iv;
	struct hostd_loop *loop;
	struct hostd_log_limit *log;

	bool attached;
	struct ioq ioq;
	struct shm_signal signal;	/* south, over the ring head's desc */
	struct ioq_notifier notifier;
	bool notify_on;		/* re-post signals unmasked: backlog waits */
	__u32 count;
	/* events the guest had no descriptor for yet, oldest first */
	struct vbus_pci_event *backlog;	/* HOSTD_EVQ_BACKLOG */
	unsigned int bl_head, bl_len;

	__u64 posted, backlogged, dropped, faults;
};

void hostd_evq_init(struct hostd_evq *q, struct hostd_mem *mem,
		    struct hostd_ivshmem *iv, struct hostd_loop *loop,
		    struct hostd_log_limit *log);
void hostd_evq_fini(struct hostd_evq *q);
/* BUSREG: check and bind the guest's ring; 0 or -errno for the guest. */
int hostd_evq_attach(struct hostd_evq *q, const struct vbus_pci_eventqreg *r);
/* Let go of the ring (nothing is written to it afterwards). */
void hostd_evq_detach(struct hostd_evq *q);
/* The channel is attached and not faulted. */
bool hostd_evq_live(const struct hostd_evq *q);
/*
 * Queue one event and try to deliver it (0, or -ENOSPC when the backlog
 * is full). Before BUSREG, or once faulted, events go nowhere (BUSREG
 * announces every device anyway).
 */
int hostd_evq_post(struct hostd_evq *q, const struct vbus_pci_event *ev);
/* The signal's deferred notify (the loop's deferred hook). */
void hostd_evq_run_deferred(struct hostd_evq *q);

#endif /* VBUS_HOSTD_EVQ_H */
