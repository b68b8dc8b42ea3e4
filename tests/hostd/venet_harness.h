/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A stand-alone host for one device-type plugin, for the venet tests: it
 * implements the device.h API (guest memory over a memfd, an epoll loop,
 * shm signals over eventfds) without the daemon, and plays the guest
 * (north) side of the rings in the same thread. The guest's doorbells are
 * eventfds the loop watches; the host's injects go to eventfds the test
 * may look at.
 *
 * Single-threaded by design: the test alternates "guest does something"
 * and vh_run_until(), like a vCPU and the daemon's loop taking turns.
 */
#ifndef VENET_HARNESS_H
#define VENET_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <vbus/ioq.h>
#include "device.h"

#define VH_RAM_SIZE (32u << 20)

/* Guest RAM (one block at gpa 0). */
int vh_init(void);
void vh_fini(void);
void *vh_ram(__u64 gpa);
/* Bump allocator in guest RAM; never returns gpa 0. */
__u64 vh_alloc(size_t len, size_t align);

/* A guest-formatted ring, registered with the device. */
struct vh_ring {
	struct ioq ioq;			/* north */
	struct shm_signal nsig;		/* north side of the ring's signal */
	struct shm_signal *ssig;	/* south side, handed to the device */
	struct hostd_shm shm;
	__u64 gpa;
	__u32 count;
	int db_fd;			/* guest -> host doorbell */
	int irq_fd;			/* host -> guest "interrupt" */
	bool attached;
};

struct hostd_dev *vh_dev_create(const char *type, const char *params,
				int *err);
void vh_dev_destroy(struct hostd_dev *dev);
int vh_dev_open(struct hostd_dev *dev, __u32 version);
void vh_dev_close(struct hostd_dev *dev);
/* DEVCALL, with hostd's copy semantics (buffer copied in and out). */
int vh_call(struct hostd_dev *dev, __u32 func, void *buf, __u32 len);
/* Format a ring of @count in guest RAM and DEVSHM it as @id. */
int vh_ring_attach(struct hostd_dev *dev, __u32 id, __u32 count,
		   struct vh_ring *r);

/* guest side: post a buffer (both push, signals); 0 or -ENOSPC */
int vh_post(struct vh_ring *r, __u64 ptr, __u64 len, __u64 cookie);
/* guest side: reap one completion: 1 (and len, cookie), 0 if none */
int vh_reap(struct vh_ring *r, __u64 *len, __u64 *cookie);
/* host->guest interrupts seen on @r since the last call */
__u64 vh_irqs(struct vh_ring *r);

/* One pass of the host loop (epoll wait up to @timeout_ms, dispatch). */
void vh_poll(int timeout_ms);
/* Poll until @done(arg) or @timeout_ms passes; returns done's last value. */
bool vh_run_until(bool (*done)(void *arg), void *arg, int timeout_ms);
/* Poll for @ms regardless (lets the device settle). */
void vh_run_for(int ms);

/* The device's state as the harness sees it. */
bool vh_dev_faulted(struct hostd_dev *dev);
const char *vh_dev_last_fault(struct hostd_dev *dev);
/* epoll events the device registered for @fd, or -1 if not watched */
long vh_fd_events(int fd);
/* The fds @dev has registered (up to @max); returns how many. */
int vh_dev_fds(struct hostd_dev *dev, int *fds, int max);
/* A counter / string from the device's stats op ("" / ~0 when absent). */
__u64 vh_stat(struct hostd_dev *dev, const char *key);
const char *vh_stat_str(struct hostd_dev *dev, const char *key);
/* Log lines the device emitted through hostd_dev_log / fault. */
unsigned long vh_log_lines(void);

#endif /* VENET_HARNESS_H */
