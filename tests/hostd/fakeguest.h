/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A synthetic guest for the host-side tests, the library's in-memory
 * transport: a memfd as guest RAM (with a small below-4G block and an
 * above-4G block, so the hole is cheap to test), the BAR2 and
 * doorbell/MSI-X eventfds of a real hostd_guest opened without QEMU
 * (hostd_ivshmem_open), and the north side of the eventq and of device
 * rings built on core/ (the same code the guest bridge runs). No threads:
 * fg_pump() runs the guest's loop until it is idle.
 */
#ifndef VBUS_TESTS_FAKEGUEST_H
#define VBUS_TESTS_FAKEGUEST_H

#include <vbus/vbus_test.h>
#include "daemon.h"

#define FG_LOW		(1u << 20)	/* below-4G block */
#define FG_HIGH		(256u << 10)	/* above-4G block */
#define FG_HIGH_GPA	(4ull << 30)

struct fg;

struct fg_ring {
	struct fg *fg;
	__u64 gpa;
	__u32 count;
	struct ioq ioq;
	struct shm_signal sig;
	__u32 handle;		/* host's signal handle (DEVSHM result) */
	__u64 cookie;		/* ours, in the host's SHMSIGNAL events */
	__u64 irqs;		/* SHMSIGNALs for it counted by fg_dev.c */
	bool live;
};

/*
 * Ring version the fake guest formats (default 5: these suites poke v5's
 * index offsets to play a hostile guest; that also keeps a v5 north
 * against the v6-capable vbus-hostd covered). A test may set 6.
 */
extern unsigned int fg_ring_ver;

struct fg {
	struct hostd_guest g;
	/*
	 * false: a guest signal runs the host's loop at once (fg_pump);
	 * true: it only rings the doorbell, the test runs the loop itself
	 */
	bool lazy;
	__u32 seq;
	__u64 low;		/* bytes below 4 GiB */
	__u64 brk;		/* bump allocator in the low block */
	__u64 scratch;		/* gpa of the hypercall argument buffer */
	/* north eventq */
	bool evq_live;
	__u64 evq_gpa, evq_data;
	__u32 evq_count;
	struct ioq evq;
	struct shm_signal evq_sig;
	unsigned int events_seen;
};

void fg_init(struct fg *f, const char *name);
/* With @low bytes below 4 GiB and @high above. */
void fg_init_ram(struct fg *f, const char *name, __u64 low, __u64 high);
/* fg_init() of a guest configured with vectors=@vectors (0: default). */
void fg_init_vectors(struct fg *f, const char *name, unsigned int vectors);
void fg_fini(struct fg *f);
/*
 * The daemon restarted under a fg_init_vectors() guest: a new hostd side
 * (vectors=@vectors) takes over the connection as a descriptor store
 * hands it over, with the first @nr_msix of its vectors (an older
 * daemon's store: 2). The guest starts over as a re-attaching bridge
 * (RAM, eventq and hypercall sequence anew; BAR2 and the eventfds
 * kept). *@conn_peer: the stand-in QEMU's end of the socket, to close.
 */
void fg_restart(struct fg *f, unsigned int vectors, unsigned int nr_msix,
		int *conn_peer);
void *fg_ptr(struct fg *f, __u64 gpa, __u64 len);
/* Zeroed, 64-byte aligned, in the low block; never gpa 0. */
__u64 fg_alloc(struct fg *f, __u64 size);
__u64 fg_alloc_align(struct fg *f, __u64 size, __u64 align);
/* ctl add: "type=...,id=N,..." through the daemon's parser and the bus. */
int fg_add_dev(struct fg *f, const char *spec, char *err, size_t errlen);
/* Run the guest's loop until nothing is left to do. */
void fg_pump(struct fg *f);

/* A hypercall with @len bytes of @data (copied back afterwards). */
int fg_hc(struct fg *f, __u32 vector, void *data, __u32 len);
/* A hypercall with a raw mailbox. */
int fg_hc_raw(struct fg *f, __u32 vector, __u32 len, __u64 datap);
/* Set sigpending bit @h, ring DB_SIGNAL, pump. */
void fg_signal(struct fg *f, __u32 h);

int fg_negotiate(struct fg *f);
/* Post event buffers 0 .. @n-1 with one tail publication (no signal). */
int fg_evq_post(struct fg *f, __u32 n);
/* Format and post an eventq of @count events, BUSREG it. */
int fg_busreg(struct fg *f, __u32 count, __u32 posted);
/* Reap events (north, like the bridge), re-post their descriptors. */
unsigned int fg_events(struct fg *f, struct vbus_pci_event *out,
		       unsigned int max, bool repost);

__u64 fg_devopen(struct fg *f, __u32 id, __u32 version, int *ret);
int fg_devcall(struct fg *f, __u64 h, __u32 func, void *buf, __u32 len);
/* Format a ring of @count and register it as shm @id with its signal. */
int fg_ring_open(struct fg *f, struct fg_ring *r, __u64 h, __u32 id,
		 __u32 count, __u64 cookie);
/* The same with DEVSHM's vector field set to @vector. */
int fg_ring_open_vector(struct fg *f, struct fg_ring *r, __u64 h, __u32 id,
			__u32 count, __u64 cookie, __u32 vector);
void fg_ring_close(struct fg_ring *r);
/*
 * The guest drivers' role calls (docs/ring.md, "Bulk calls"):
 * fg_ring_post_bulk() posts up to @n of @d (cookie, ptr, len) with one
 * ioq_post_begin/end, one tail publication and, with @sig, one signal
 * (which crosses only when the host has not masked it); returns how many
 * fit (0 .. n) or -errno. fg_ring_reap_bulk() reaps up to @max
 * completions with one ioq_reap_begin/end, one inuse-head publication,
 * copying each (cookie, ptr, len) to @out unless NULL; returns how many
 * or -errno.
 */
int fg_ring_post_bulk(struct fg_ring *r, const struct ioq_ring_desc *d,
		      unsigned int n, bool sig);
int fg_ring_reap_bulk(struct fg_ring *r, struct ioq_ring_desc *out,
		      unsigned int max);
/* North posts a buffer of @len at @gpa: 0, -ENOSPC or -errno. */
int fg_ring_post(struct fg_ring *r, __u64 gpa, __u64 len, bool sig);
/* North reaps every completion; returns how many. */
unsigned int fg_ring_reap(struct fg_ring *r);

/* eventfd value (0 when nothing) */
__u64 fg_msix(struct fg *f, unsigned int vector);

#endif /* VBUS_TESTS_FAKEGUEST_H */
