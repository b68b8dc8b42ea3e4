/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: one device instance, the library's side of device.h. The
 * bus (bus.c) decides when things happen (create on DEVADD config, open on
 * DEVOPEN, ...); this file does them to one device and its shms.
 */
#ifndef VBUS_HOSTD_DEV_H
#define VBUS_HOSTD_DEV_H

#include <pthread.h>
#include <stdbool.h>
#include <vbus/vbus_pci.h>
#include "device.h"
#include "devthread.h"
#include "dma_window.h"
#include "evq.h"
#include "list.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "stat.h"

/* threads= (device.h, "Queue threads"): at most this many per device */
#define HOSTD_DEV_MAX_THREADS	16

/* Any thread of the device adds (relaxed atomics); `ctl stats` reads. */
struct hostd_counters {
	__u64 calls;		/* DEVCALLs answered */
	__u64 descs;		/* descriptors consumed (device-reported) */
	__u64 bytes;		/* payload bytes moved (device-reported) */
	__u64 notify_in;	/* guest doorbells delivered to a signal */
	__u64 notify_out;	/* injects towards the guest */
	__u64 faults;
};

/* What a device lives in: its guest's parts (all outlive the device). */
struct hostd_dev_env {
	const char *guest;		/* the guest's name */
	struct hostd_log_limit *log;
	struct hostd_mem *mem;
	struct hostd_loop *loop;
	struct hostd_evq *evq;
	const struct hostd_peer_rule *qemu;	/* who may be QEMU */
	unsigned int threads;		/* the guest's threads=: a default */
};

/* One DEVSHM registration (the public part is struct hostd_shm). */
struct hostd_shm_ent {
	struct hostd_shm pub;
	struct hostd_list node;		/* in dev->shms */
	struct hostd_evq *evq;
	struct shm_signal signal;	/* valid when pub.signal != NULL */
	__u64 cookie;			/* the guest's, for SHMSIGNAL/SHMCLOSE */
	__u32 handle;			/* 1..VBUS_PCI_MAX_SIGNALS-1, or 0 */
	__u32 vector;			/* guest MSI-X queue vector, or 0 */
	int closed;			/* device closed: injects go nowhere
					 * (__atomic: a queue thread reads it) */
	/*
	 * A queue thread's shm (hostd_shm_home, dev.c): the guest's
	 * doorbells for it go to @thr through @db_fd, its SHMSIGNALs come
	 * back through @post_pending and the device's post_fd.
	 */
	struct hostd_devthread *thr;	/* NULL: the guest's thread's */
	int db_fd;			/* eventfd, -1 without @thr */
	int post_pending;		/* __atomic */
	struct hostd_list tnode;	/* in thr->shms (the thread's) */
};

struct hostd_dev {
	struct hostd_list node;		/* in bus->devs */
	struct hostd_dev_env env;
	/*
	 * Taken by any thread of the device for: faulted/fault/cnt.faults
	 * (hostd_dev_fault), and changes to shms and watches, which the
	 * guest's thread makes and a queue thread's fault or fd_add reads
	 * or makes. Never held across a call into a device or a wait.
	 */
	pthread_mutex_t lock;
	const struct hostd_dev_type *type;
	__u32 id;
	char name[48];			/* "device 3 (venet)", for messages */
	void *priv;
	bool created;
	bool hot;			/* hostd_dev_hot() */
	bool pending;			/* HOSTD_DEV_PENDING, not ready yet */
	bool announce;			/* ready: DEVADD in the deferred pass */
	bool doomed;			/* gave up: dropped in the deferred pass */
	char why[256];			/* a pending device's hostd_dev_fail() */
	bool open;
	bool faulted;			/* __atomic (any thread reads) */
	char fault[160];		/* the first reason, until reopened */
	__u64 handle;			/* nonzero while open */
	struct hostd_list shms;		/* struct hostd_shm_ent */
	struct hostd_list watches;	/* struct hostd_dev_watch */
	struct hostd_counters cnt;
	struct hostd_dma_window dma;	/* test-only dma_window= */
	/* threads= (device.h): queue threads, started by create */
	unsigned int nthreads;
	struct hostd_devthread *threads;
	int post_fd;			/* eventfd: their SHMSIGNALs to post */
	/* params: our copy of the caller's */
	struct hostd_params params;
	struct hostd_param *pv;
	char *strbuf;
	/* create's or the ctl op's "why" (hostd_dev_fail) */
	char *err;
	size_t errlen;
};

/* A device with a copy of @p, not created yet; NULL when out of memory. */
struct hostd_dev *hostd_dev_new(const struct hostd_dev_env *env,
				const struct hostd_dev_type *t, __u32 id,
				const struct hostd_params *p);
/* The type's create; on error the reason is in @err. */
int hostd_dev_create(struct hostd_dev *dev, char *err, size_t errlen);
/* Remaining watches removed, destroy op, claims released, freed. */
void hostd_dev_destroy(struct hostd_dev *dev);

/* The guest's verbs on one device (the bus checked handle and op). */
int hostd_dev_open(struct hostd_dev *dev, __u32 version);
/* The close op (the bus releases the shms afterwards). */
void hostd_dev_close(struct hostd_dev *dev);
int hostd_dev_call(struct hostd_dev *dev, __u32 func, void *buf, __u32 len);
/*
 * A control verb (the type's ctl op): 0 with what was done in @msg, or
 * -errno with why in @msg.
 */
int hostd_dev_ctl(struct hostd_dev *dev, const char *verb, const char *arg,
		  char *msg, size_t len);

/* A DEVSHM entry for @dev over [ptr, ptr+len) at @gpa, not yet added. */
struct hostd_shm_ent *hostd_shm_ent_new(struct hostd_dev *dev,
					const struct vbus_pci_deviceshm *s,
					void *ptr);
/* Give it the south signal over @desc, at the offset DEVSHM named. */
void hostd_shm_ent_signal(struct hostd_shm_ent *e,
			  struct shm_signal_desc *desc);
/* Hand it to the device's shm op; on success it joins dev->shms. */
int hostd_shm_ent_add(struct hostd_shm_ent *e);
/* The device closed: SHMCLOSE to the guest, then our last put. */
void hostd_shm_ent_close(struct hostd_shm_ent *e);
/* The device refused it: the guest holds nothing, just our put. */
void hostd_shm_ent_drop(struct hostd_shm_ent *e);
/*
 * Home @shm on the calling queue thread (hostd_devq_attach runs it on
 * the thread serving the queue): its doorbells and deferred notifies
 * run there from now on. 0 (also on the guest's thread: nothing to do)
 * or -errno. Unhome (on the same thread) when the queue detaches.
 */
int hostd_shm_home(struct hostd_shm *shm);
void hostd_signal_unhome(struct shm_signal *s);
/*
 * The loop @dev's work runs on from the calling thread: the queue
 * thread's own when a queue thread of @dev calls, else the guest's.
 * Whatever a device arms from a thread (a watch, a kick, a poll that
 * yields) goes to this loop, never to another thread's.
 */
struct hostd_loop *hostd_dev_loop(struct hostd_dev *dev);
/* Guest doorbell for its handle: run the device's notifier. */
void hostd_shm_ent_wakeup(struct hostd_shm_ent *e);

/* `ctl list` / `ctl stats` object for the device */
void hostd_dev_stats(struct hostd_dev *dev, struct hostd_stats_out *out,
		     bool counters);
/* The events the device watches @fd for, or -1 (diagnostics, tests). */
long hostd_dev_fd_events(struct hostd_dev *dev, int fd);

#endif /* VBUS_HOSTD_DEV_H */
