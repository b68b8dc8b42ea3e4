/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The pci-to-vbus bridge ABI: hypercalls and events between the guest's
 * vbus_pcibridge driver and the host (vbus-hostd).
 *
 * The hypercall and event structures are the 2009 series' (x86-64 layout,
 * padding written out). The transport is new: the bridge device is QEMU's
 * stock ivshmem-doorbell (1af4:1110) and BAR2 (a small shared region that
 * vbus-hostd hands QEMU) carries struct vbus_pci_shm below.
 *
 * Guest-physical pointers (datap, ring, data, ptr) point into guest RAM.
 * The host trusts none of them: every one is bounds-checked against the
 * guest's memory table and every structure is copied before use.
 */
#ifndef VBUS_VBUS_PCI_H
#define VBUS_VBUS_PCI_H

#include <vbus/platform.h>

#define VBUS_PCI_ABI_MAGIC   0xbf53eef5
#define VBUS_PCI_ABI_VERSION 1
#define VBUS_PCI_HC_VERSION  1

enum {
	VBUS_PCI_HC_NEGOTIATE,
	VBUS_PCI_HC_BUSREG,
	VBUS_PCI_HC_DEVOPEN,
	VBUS_PCI_HC_DEVCLOSE,
	VBUS_PCI_HC_DEVCALL,
	VBUS_PCI_HC_DEVSHM,

	VBUS_PCI_HC_MAX,	/* must be last */
};

struct vbus_pci_negotiate {
	__u32 magic;
	__u32 version;
	__u64 capabilities;	/* guest: offered; host answers: accepted */
};

/*
 * NEGOTIATE capabilities. The guest offers the bits it can use, the host
 * writes back the subset it accepts (an older host writes 0 back; an older
 * guest offers 0). A bit the guest did not offer is ignored.
 *
 * VBUS_PCI_CAP_QVEC: per-queue MSI-X vectors (docs/transport.md,
 * "Per-queue vectors"). DEVSHM's vector field may name a guest MSI-X
 * vector VBUS_PCI_NR_VECTORS .. shm.msix_vectors-1; the host then signals
 * that shm by writing the vector's eventfd instead of posting SHMSIGNAL.
 */
#define VBUS_PCI_CAP_QVEC	(1ULL << 0)

struct vbus_pci_deviceopen {
	__u32 devid;
	__u32 version;	/* device ABI version */
	__u64 handle;	/* return value for devh */
};

struct vbus_pci_devicecall {
	__u64 devh;	/* device-handle (returned from DEVICEOPEN) */
	__u32 func;
	__u32 len;
	__u32 flags;
	__u32 reserved;
	__u64 datap;
};

struct vbus_pci_deviceshm {
	__u64 devh;	/* device-handle (returned from DEVICEOPEN) */
	__u32 id;
	__u32 len;
	__u32 flags;
	/*
	 * With VBUS_PCI_CAP_QVEC accepted: the guest MSI-X vector the host
	 * signals this shm on (VBUS_PCI_NR_VECTORS .. shm.msix_vectors-1),
	 * or 0 for SHMSIGNAL on the eventq. Without it: 0.
	 */
	__u32 vector;
	struct {
		__u32 offset;	/* of the shm_signal_desc in the region, or ~0 */
		__u32 prio;
		__u64 cookie;	/* token passed back in SHMSIGNAL/SHMCLOSE */
	} signal;
	__u64 datap;
};

#define VBUS_PCI_SHM_NO_SIGNAL 0xffffffffu

struct vbus_pci_hypercall {
	__u32 vector;
	__u32 len;
	__u64 datap;
};

struct vbus_pci_eventqreg {
	__u32 count;
	__u32 reserved;
	__u64 ring;	/* gpa of a struct ioq_ring_head with count descs */
	__u64 data;	/* gpa of count struct vbus_pci_event */
};

struct vbus_pci_busreg {
	__u32 count;	/* supporting multiple queues allows for prio, etc */
	__u32 reserved;
	struct vbus_pci_eventqreg eventq[1];
};

enum vbus_pci_eventid {
	VBUS_PCI_EVENT_DEVADD,
	VBUS_PCI_EVENT_DEVDROP,
	VBUS_PCI_EVENT_SHMSIGNAL,
	VBUS_PCI_EVENT_SHMCLOSE,
};

#define VBUS_MAX_DEVTYPE_LEN 128

struct vbus_pci_add_event {
	__u64 id;
	char type[VBUS_MAX_DEVTYPE_LEN];
};

struct vbus_pci_handle_event {
	__u64 handle;
};

struct vbus_pci_event {
	__u32 eventid;
	__u32 reserved;
	union {
		struct vbus_pci_add_event add;
		struct vbus_pci_handle_event handle;
	} data;
};

VBUS_STATIC_ASSERT(sizeof(struct vbus_pci_negotiate) == 16, "negotiate");
VBUS_STATIC_ASSERT(sizeof(struct vbus_pci_deviceopen) == 16, "deviceopen");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_pci_deviceopen, handle) == 8,
		   "deviceopen.handle");
VBUS_STATIC_ASSERT(sizeof(struct vbus_pci_devicecall) == 32, "devicecall");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_pci_devicecall, datap) == 24,
		   "devicecall.datap");
VBUS_STATIC_ASSERT(sizeof(struct vbus_pci_deviceshm) == 48, "deviceshm");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_pci_deviceshm, signal) == 24,
		   "deviceshm.signal");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_pci_deviceshm, signal.cookie)
		   == 32, "deviceshm.signal.cookie");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_pci_deviceshm, datap) == 40,
		   "deviceshm.datap");
VBUS_STATIC_ASSERT(sizeof(struct vbus_pci_hypercall) == 16, "hypercall");
VBUS_STATIC_ASSERT(sizeof(struct vbus_pci_eventqreg) == 24, "eventqreg");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_pci_eventqreg, ring) == 8,
		   "eventqreg.ring");
VBUS_STATIC_ASSERT(sizeof(struct vbus_pci_busreg) == 32, "busreg");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_pci_busreg, eventq) == 8,
		   "busreg.eventq");
VBUS_STATIC_ASSERT(sizeof(struct vbus_pci_add_event) == 136, "add_event");
VBUS_STATIC_ASSERT(sizeof(struct vbus_pci_event) == 144, "event");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_pci_event, data) == 8,
		   "event.data");

/*
 * ---- The ivshmem transport ----
 *
 * BAR0: ivshmem registers (IVPosition at 8, Doorbell at 12).
 * BAR1: MSI-X. Vector VBUS_PCI_MSIX_HC: a hypercall completed;
 *       vector VBUS_PCI_MSIX_EVENTQ: the host signalled the eventq;
 *       vectors 2..shm.msix_vectors-1 (VBUS_PCI_CAP_QVEC): device shms
 *       bound to them at DEVSHM.
 * BAR2: struct vbus_pci_shm, written by vbus-hostd before QEMU starts.
 *
 * Doorbell writes go to the host's peer id (shm.host_peer):
 *   (host_peer << 16) | VBUS_PCI_DB_HC      a hypercall is in the mailbox
 *   (host_peer << 16) | VBUS_PCI_DB_SIGNAL  a bit is set in sigpending
 */
#define VBUS_PCI_IVSHMEM_VENDOR	0x1af4
#define VBUS_PCI_IVSHMEM_DEVICE	0x1110
#define VBUS_PCI_REG_IVPOSITION	8
#define VBUS_PCI_REG_DOORBELL	12

#define VBUS_PCI_DB_HC		0
#define VBUS_PCI_DB_SIGNAL	1
#define VBUS_PCI_MSIX_HC	0
#define VBUS_PCI_MSIX_EVENTQ	1
#define VBUS_PCI_NR_VECTORS	2	/* HC and EVENTQ: always wired */
/* guest MSI-X vectors a host wires at most (shm.msix_vectors) */
#define VBUS_PCI_MAX_VECTORS	64

/* Signal handles the host hands out (DEVSHM result) are 1 .. MAX-1;
 * handle 0 is the eventq (as in the 2009 series). */
#define VBUS_PCI_MAX_SIGNALS	1024
#define VBUS_PCI_EVENTQ_HANDLE	0

#define VBUS_PCI_SHM_SIZE	4096	/* BAR2: power of two, >= 4 KiB */

struct vbus_pci_shm {
	/* line 0: the host writes it (host_epoch later too); guest reads */
	__u32 magic;		/* VBUS_PCI_ABI_MAGIC */
	__u32 version;		/* VBUS_PCI_ABI_VERSION */
	__u32 size;		/* bytes of BAR2 */
	__u32 host_peer;	/* ivshmem peer id the doorbell targets */
	__u64 features;		/* reserved, 0 */
	/*
	 * The host's generation (docs/transport.md, "Host restarts"): even =
	 * a host serves this BAR2, odd = it went away on purpose. A change
	 * to a new even value asks the guest to re-attach (NEGOTIATE, BUSREG,
	 * devices re-announced). The only field of line 0 that changes after
	 * QEMU started.
	 */
	__u32 host_epoch;
	/*
	 * Guest MSI-X vectors the host wired (its vectors= option; one
	 * eventfd each in the ivshmem handshake): 0 (an older host) or 2
	 * mean HC and EVENTQ only. Vectors past VBUS_PCI_NR_VECTORS are
	 * per-queue vectors (VBUS_PCI_CAP_QVEC). Untrusted: the guest
	 * clamps it to the device's MSI-X table and VBUS_PCI_MAX_VECTORS.
	 */
	__u32 msix_vectors;
	__u8 pad0[32];

	/* line 1: the hypercall mailbox, written by the guest */
	struct vbus_pci_hypercall hc;
	__u32 hc_seq;		/* request number, bumped after hc is written */
	__u8 pad1[44];

	/* line 2: the hypercall answer, written by the host */
	__u32 hc_done;		/* = hc_seq of the request answered */
	__s32 hc_result;	/* >= 0 success, -errno */
	__u8 pad2[56];

	/* lines 3-4: guest->host signals; guest sets bits, host clears */
	__u64 sigpending[VBUS_PCI_MAX_SIGNALS / 64];
};

VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_pci_shm, host_epoch) == 24,
		   "shm.host_epoch");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_pci_shm, msix_vectors) == 28,
		   "shm.msix_vectors");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_pci_shm, hc) == 64, "shm.hc");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_pci_shm, hc_seq) == 80,
		   "shm.hc_seq");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_pci_shm, hc_done) == 128,
		   "shm.hc_done");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_pci_shm, sigpending) == 192,
		   "shm.sigpending");
VBUS_STATIC_ASSERT(sizeof(struct vbus_pci_shm) == 320, "vbus_pci_shm");

#endif /* VBUS_VBUS_PCI_H */
