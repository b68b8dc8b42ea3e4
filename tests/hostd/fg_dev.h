/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * One device driven the way its guest driver would, for device tests:
 * a fakeguest (the library's in-memory transport) with a bus negotiated
 * and registered, and the device reached through real hypercalls,
 * DEVSHMs, doorbells and eventq events. Nothing of device.h is stood in
 * for: the device runs inside libvbus-hostd.
 *
 * Single-threaded and lazy (fg.lazy): guest signals only ring doorbells;
 * the test alternates "guest does something" and fgd_run_until(), like a
 * vCPU and the daemon's loop taking turns.
 */
#ifndef VBUS_TESTS_FG_DEV_H
#define VBUS_TESTS_FG_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include "fakeguest.h"

#define FGD_RAM_SIZE (32u << 20)	/* guest RAM below 4 GiB */

/* The guest (one per test). */
int fgd_init(void);
void fgd_fini(void);
void *fgd_ram(__u64 gpa);
/* Bump allocator in guest RAM; zeroed; never returns gpa 0. */
__u64 fgd_alloc(size_t len, size_t align);

/*
 * A device of @type with "k=v,..." @params (ctl add), or NULL and *@err;
 * one that is added pending (HOSTD_DEV_PENDING) is waited for, up to
 * FGD_PENDING_MS: returned once ready, NULL when it gave up.
 */
#define FGD_PENDING_MS	60000
struct hostd_dev *fgd_dev_create(const char *type, const char *params,
				 int *err);
/* the same, not waited for: the device may be pending */
struct hostd_dev *fgd_dev_add(const char *type, const char *params, int *err);
bool fgd_dev_pending(struct hostd_dev *dev);
/* the last pending add that gave up, as `ctl stats` shows it (add_error) */
const char *fgd_add_error(void);
/* why the last fgd_dev_create() failed, as `ctl add` prints it */
const char *fgd_last_error(void);
void fgd_dev_destroy(struct hostd_dev *dev);	/* ctl drop */
/* ctl VERB GUEST ID ARG (e.g. resize): 0 or -errno, the answer in @msg */
int fgd_dev_ctl(struct hostd_dev *dev, const char *verb, const char *arg,
		char *msg, size_t len);
int fgd_dev_open(struct hostd_dev *dev, __u32 version);	/* DEVOPEN */
void fgd_dev_close(struct hostd_dev *dev);	/* DEVCLOSE, rings let go */
/* DEVCALL (the hypercall copies the buffer in and out). */
int fgd_call(struct hostd_dev *dev, __u32 func, void *buf, __u32 len);
/* Format a ring of @count in guest RAM and DEVSHM it as @id: 0 or -errno. */
int fgd_ring_attach(struct hostd_dev *dev, __u32 id, __u32 count,
		    struct fg_ring *r);

/* guest side: post a buffer (both push, signals); 0 or -ENOSPC */
int fgd_post(struct fg_ring *r, __u64 ptr, __u64 len, __u64 cookie);
/* guest side: reap one completion: 1 (and len, cookie), 0 if none */
int fgd_reap(struct fg_ring *r, __u64 *len, __u64 *cookie);
/* SHMSIGNALs for @r since the last call; the guest takes them */
__u64 fgd_irqs(struct fg_ring *r);
/*
 * The host's mask of @r as the guest reads it before ringing (the south
 * irq's enabled): false while the host holds the ring masked.
 */
bool fgd_host_unmasked(const struct fg_ring *r);

/* One pass of the host loop (wait up to @timeout_ms, dispatch). */
void fgd_poll(int timeout_ms);
/* Poll until @done(arg) or @timeout_ms passes; returns done's last value. */
bool fgd_run_until(bool (*done)(void *arg), void *arg, int timeout_ms);
/* Poll for @ms regardless (lets the device settle). */
void fgd_run_for(int ms);

/* The daemon is going down: its guest's loop is told to stop. */
void fgd_stopping(void);
/*
 * The host's loop on a thread of its own, as vbus-hostd runs a guest
 * (hostd_guest_start(): "g:fgd"), for benchmarks whose guest is another
 * thread; fgd_stopping() stops and joins it. No hypercall meanwhile
 * (fg_hc() runs the loop on the caller's thread).
 */
int fgd_host_start(void);
/*
 * The guest sleeps until the host's next interrupt (the eventq's MSI-X
 * eventfd) or @timeout_ms: 1 when one came, 0 when not. fgd_irqs() then
 * takes the events.
 */
int fgd_wait_irq(int timeout_ms);

/* The device's state as `ctl stats` shows it. */
bool fgd_dev_faulted(struct hostd_dev *dev);
const char *fgd_dev_last_fault(struct hostd_dev *dev);
/* A counter / string of its stats ("" / ~0 when absent). */
__u64 fgd_stat(struct hostd_dev *dev, const char *key);
const char *fgd_stat_str(struct hostd_dev *dev, const char *key);

#endif /* VBUS_TESTS_FG_DEV_H */
