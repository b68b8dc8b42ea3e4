/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: a device's queue thread (threads=N, device.h "Queue
 * threads"): a loop of its own on a thread of its own, started at the
 * device's create and joined at its destroy. It knows nothing of devices
 * or shms: dev.c gives it a deferred hook and keeps its list of shms.
 *
 * Ownership: everything in the struct but @events is the thread's once
 * it started (other threads reach it through hostd_devthread_call, whose
 * lock orders what the caller wrote before against what the thread does,
 * and the thread's writes against what the caller reads after); after
 * hostd_devthread_stop() (pthread_join orders the same way) it is the
 * stopper's again.
 */
#ifndef VBUS_HOSTD_DEVTHREAD_H
#define VBUS_HOSTD_DEVTHREAD_H

#include "list.h"
#include "loop.h"

struct hostd_devthread {
	struct hostd_loop loop;
	unsigned int index;		/* queue q runs here when q % N == index */
	struct hostd_list shms;		/* struct hostd_shm_ent homed here */
	/*
	 * fd events and calls dispatched: the thread adds, `ctl stats`
	 * reads (relaxed atomics: a count, it orders nothing)
	 */
	__u64 events;
	char name[16];			/* its comm: top -H, /proc/PID/task */
};

/* Loop and thread, named @name; @deferred(@arg) is its deferred hook. */
int hostd_devthread_start(struct hostd_devthread *t, unsigned int index,
			  const char *name, void (*deferred)(void *arg),
			  void *arg);
/* Stop and join (a no-op for one never started); its loop stays. */
void hostd_devthread_stop(struct hostd_devthread *t);
/* After stop: the loop and its remaining watches freed. */
void hostd_devthread_fini(struct hostd_devthread *t);
/* The thread calling, when it is one of @n at @t, or NULL. */
struct hostd_devthread *hostd_devthread_current(struct hostd_devthread *t,
						unsigned int n);
/* Count one event (on the thread). */
static inline void hostd_devthread_count(struct hostd_devthread *t)
{
	__atomic_fetch_add(&t->events, 1, __ATOMIC_RELAXED);
}

#endif /* VBUS_HOSTD_DEVTHREAD_H */
