/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-ipc ABI ("vbus-ipc"; "ipc" is accepted as an alias): a shared-memory message channel between a guest
 * process and a host process, libioq on both ends. Shared by the host
 * device (userspace/hostd/devices/vbus_ipc/), the guest driver
 * (kernel/vbus_ipc/vbus_ipc_main.c, /dev/vbus-ipcN) and libioq (userspace/lib/
 * ipc.c); the protocol is docs/devices/vbus_ipc.md.
 *
 * One channel = one region: a memfd vbus-hostd creates and hands to a
 * second ivshmem-doorbell device of the guest (its BAR2) and, once a
 * session starts, to the host process. Nothing else of the guest is ever
 * given to the host process. The region holds struct vbus_ipc_shm (page
 * 0), two IOQ v5 rings and two buffer areas:
 *
 *   ring[VBUS_IPC_G2H]  guest -> host: the guest process is north
 *   ring[VBUS_IPC_H2G]  host -> guest: the host process is north
 *   area[d]             message buffers of direction d, written by its
 *                       north (sender) only
 *
 * A descriptor's ptr is an OFFSET into its direction's area, never an
 * address; len is the message length. The receiver (south) checks
 * len <= buf_size and ptr + len <= area_len before it reads a byte.
 */
#ifndef VBUS_VBUS_IPC_H
#define VBUS_VBUS_IPC_H

#include <vbus/platform.h>
#include <vbus/ioq.h>
#include <linux/ioctl.h>

#define VBUS_IPC_TYPE		"vbus-ipc"	/* the vbus device type string */
#define VBUS_IPC_TYPE_ALIAS	"ipc"		/* its name before the rename */
#define VBUS_IPC_VERSION	1	/* DEVOPEN version */

#define VBUS_IPC_MAGIC		0x43504956u	/* "VIPC" */
#define VBUS_IPC_ABI_VERSION	1
#define VBUS_IPC_HDR_SIZE	4096	/* page 0: struct vbus_ipc_shm */
#define VBUS_IPC_SERVICE_LEN	64	/* NUL-terminated within */

/* limits vbus-hostd enforces at create and every reader re-checks */
#define VBUS_IPC_MAX_COUNT	1024	/* descriptors per ring */
#define VBUS_IPC_MIN_BUF	64	/* bytes per message buffer */
#define VBUS_IPC_MAX_BUF	(1u << 20)
#define VBUS_IPC_MAX_SIZE	(1ull << 30)	/* whole region */

/* directions: index of ring[] and area[] */
#define VBUS_IPC_G2H		0
#define VBUS_IPC_H2G		1

/*
 * Vectors of the ipc ivshmem-doorbell (vectors=2). Guest -> host:
 * Doorbell = host_peer << 16 | vector. Host -> guest: MSI-X vector.
 *   DATA  a ring's shm-signal (the receiver runs the wakeup of both its
 *         signals: the doorbell says "look", the rings say what)
 *   CTRL  guest -> host: guest_open/guest_close changed;
 *         host -> guest: state/session changed
 */
#define VBUS_IPC_VEC_DATA	0
#define VBUS_IPC_VEC_CTRL	1
#define VBUS_IPC_NR_VECTORS	2

/*
 * A link (docs/devices/vbus_ipc.md "Links"): two guests share one region.
 * vbus-hostd gives each guest's QEMU its own ivshmem peer id, which the
 * guest driver reads from IVPosition: the north guest is the client (it
 * sends on G2H, as a guest process of a guest <-> host channel does), the
 * south guest the server (it sends on H2G, the host process's part). A
 * guest <-> host channel's guest is always north.
 */
#define VBUS_IPC_NORTH_PEER	1	/* IVPosition of the north guest */
#define VBUS_IPC_SOUTH_PEER	2	/* IVPosition of a link's south guest */
#define VBUS_IPC_SIDE_NORTH	0	/* vbus_ipc_info.side */
#define VBUS_IPC_SIDE_SOUTH	1

/* session state, written by vbus-hostd */
#define VBUS_IPC_STATE_IDLE	0	/* no session yet */
#define VBUS_IPC_STATE_ACTIVE	1	/* both ends attached */
#define VBUS_IPC_STATE_ENDED	2	/* one end left: both must reopen */

/* Fixed by vbus-hostd at create; every offset is from the region start. */
struct vbus_ipc_layout {
	__u32 count;		/* descriptors per ring, a power of two */
	__u32 buf_size;		/* bytes per message buffer */
	__u64 ring_off[2];	/* struct ioq_ring_head, 8-byte aligned */
	__u64 area_off[2];	/* page aligned */
	__u64 area_len;		/* count * buf_size, each direction */
};

struct vbus_ipc_shm {
	/* written by vbus-hostd before QEMU starts, never again */
	__u32 magic;
	__u32 version;
	__u64 size;		/* bytes of the region (BAR2) */
	__u64 region_id;	/* also answered by the ipc device's GETCONFIG */
	__u32 host_peer;	/* ivshmem peer id of the host */
	__u32 reserved0;
	struct vbus_ipc_layout layout;
	char service[VBUS_IPC_SERVICE_LEN];
	/* written by the (north) guest driver only */
	__u32 guest_open;	/* +1 at each open of /dev/vbus-ipcN */
	__u32 guest_close;	/* = guest_open at its release */
	/* written by vbus-hostd only */
	__u32 session;		/* +1 at each session start */
	__u32 state;		/* VBUS_IPC_STATE_* */
	__u32 session_open;	/* the guest_open this session serves */
	__u32 reserved1;
	/* a link's south guest driver only: as guest_open/guest_close */
	__u32 south_open;
	__u32 south_close;
	/* vbus-hostd only: the south_open this session serves */
	__u32 south_session_open;
	__u32 reserved2;
};

VBUS_STATIC_ASSERT(sizeof(struct vbus_ipc_layout) == 48, "vbus_ipc_layout");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_ipc_shm, layout) == 32,
		   "vbus_ipc_shm.layout");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_ipc_shm, guest_open) == 144,
		   "vbus_ipc_shm.guest_open");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_ipc_shm, south_open) == 168,
		   "vbus_ipc_shm.south_open");
VBUS_STATIC_ASSERT(sizeof(struct vbus_ipc_shm) == 184, "vbus_ipc_shm");

/* [a, a + alen) and [b, b + blen) overlap */
static inline int vbus_ipc_overlap(__u64 a, __u64 alen, __u64 b, __u64 blen)
{
	return a < b + blen && b < a + alen;
}

/*
 * Check a layout (a local copy: read once from the region) against the
 * region's @size. Every side calls it before it uses an offset: vbus-hostd
 * at create, the guest driver at probe, libioq at attach. 0 or -EINVAL.
 */
static inline int vbus_ipc_layout_check(const struct vbus_ipc_layout *l,
					__u64 size)
{
	__u64 ring_len, off[4], len[4];
	int i, j;

	if (size > VBUS_IPC_MAX_SIZE || size < VBUS_IPC_HDR_SIZE)
		return -EINVAL;
	if (!l->count || (l->count & (l->count - 1)) ||
	    l->count > VBUS_IPC_MAX_COUNT)
		return -EINVAL;
	if (l->buf_size < VBUS_IPC_MIN_BUF || l->buf_size > VBUS_IPC_MAX_BUF ||
	    (l->buf_size & 7))
		return -EINVAL;
	if (l->area_len != (__u64)l->count * l->buf_size)
		return -EINVAL;
	ring_len = IOQ_HEAD_DESC_SIZE(l->count);
	for (i = 0; i < 2; i++) {
		off[i] = l->ring_off[i];
		len[i] = ring_len;
		off[2 + i] = l->area_off[i];
		len[2 + i] = l->area_len;
		if ((off[i] & 7) || (off[2 + i] & (VBUS_IPC_HDR_SIZE - 1)))
			return -EINVAL;
	}
	for (i = 0; i < 4; i++) {
		if (off[i] < VBUS_IPC_HDR_SIZE || off[i] > size ||
		    len[i] > size - off[i])
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (vbus_ipc_overlap(off[i], len[i], off[j], len[j]))
				return -EINVAL;
	}
	return 0;
}

/*
 * A received descriptor's message, checked against the receiver's own
 * copy of the layout: 0 when [ptr, ptr + len) lies in the area and len is
 * at most one buffer, else -EINVAL (the receiver faults the channel).
 */
static inline int vbus_ipc_msg_check(const struct vbus_ipc_layout *l,
				     __u64 ptr, __u64 len)
{
	if (len > l->buf_size || ptr > l->area_len || len > l->area_len - ptr)
		return -EINVAL;
	return 0;
}

/*
 * The attach message vbus-hostd sends the host process on the service
 * socket when a session starts, with SCM_RIGHTS fds in this order:
 * the region (memfd), the DATA eventfd the host waits on (the guest's
 * doorbell), the DATA eventfd that interrupts the guest. The socket stays
 * open for the session: EOF on it means the session ended.
 */
#define VBUS_IPC_ATTACH_MAGIC	0x49504341u
#define VBUS_IPC_ATTACH_NFDS	3
struct vbus_ipc_attach {
	__u32 magic;
	__u32 version;		/* VBUS_IPC_ABI_VERSION */
	__u32 session;
	__u32 reserved;
};

/* DEVCALL funcs of the vbus device "vbus-ipc" */
#define VBUS_IPC_FUNC_GETCONFIG	0	/* out: struct vbus_ipc_config */
struct vbus_ipc_config {
	__u64 region_id;	/* matches vbus_ipc_shm.region_id */
	char service[VBUS_IPC_SERVICE_LEN];
};

/*
 * /dev/vbus-ipcN (guest). One opener at a time (-EBUSY). mmap of the
 * whole region (offset 0, at most vbus_ipc_info.size) gives the rings and
 * areas; read(8 bytes) waits for a DATA interrupt and returns the count
 * since the last read (O_NONBLOCK: -EAGAIN); write(8 bytes) rings the DATA
 * doorbell (a link: the peer guest's DATA vector); poll: POLLIN on a pending interrupt, POLLERR once the session
 * this open was served has ended (read/write then fail with -EPIPE).
 */
struct vbus_ipc_info {
	__u64 size;		/* bytes to mmap */
	__u64 region_id;
	struct vbus_ipc_layout layout;	/* checked by the driver at probe */
	__u32 session;		/* after WAIT_SESSION: this open's session */
	__u32 side;		/* VBUS_IPC_SIDE_*: which ring this end sends on */
	char service[VBUS_IPC_SERVICE_LEN];
};
VBUS_STATIC_ASSERT(sizeof(struct vbus_ipc_attach) == 16, "vbus_ipc_attach");
VBUS_STATIC_ASSERT(sizeof(struct vbus_ipc_config) == 72, "vbus_ipc_config");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_ipc_info, session) == 64,
		   "vbus_ipc_info.session");
VBUS_STATIC_ASSERT(sizeof(struct vbus_ipc_info) == 136, "vbus_ipc_info");

#define VBUS_IPC_IOC_MAGIC	0xb5
#define VBUS_IPC_IOC_INFO	_IOR(VBUS_IPC_IOC_MAGIC, 0, struct vbus_ipc_info)
/* arg: timeout in ms (__u32, by value); 0 when the session is up,
 * -ETIMEDOUT, -EPIPE (it ended before this open was served) */
#define VBUS_IPC_IOC_WAIT_SESSION _IO(VBUS_IPC_IOC_MAGIC, 1)

#endif /* VBUS_VBUS_IPC_H */
