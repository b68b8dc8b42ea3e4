/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * venet device ABI ("venet" on the vbus; the 2009 series called it
 * "virtual-ethernet", which vbus-hostd still accepts as an alias).
 * Shared with the host (vbus-hostd): layouts are explicit and fixed-width.
 */
#ifndef VBUS_VENET_H
#define VBUS_VENET_H

#include <vbus/platform.h>

#define VENET_VERSION 1

#define VENET_TYPE "venet"
/* the seed's type string: vbus-hostd accepts it in --device and ctl add */
#define VENET_TYPE_ALIAS "virtual-ethernet"

#define VENET_QUEUE_RX 0
#define VENET_QUEUE_TX 1

/*
 * Queue pairs (VENET_FUNC_QUEUES): pair p's rx ring is DEVSHM id 2p, its
 * tx ring 2p + 1, so pair 0 keeps the single-queue ids above and a guest
 * or host that never calls QUEUES runs exactly one pair.
 */
#define VENET_MAX_QUEUE_PAIRS 16
#define VENET_QUEUE_RX_ID(p) (2u * (p))
#define VENET_QUEUE_TX_ID(p) (2u * (p) + 1u)

struct venet_queues {
	__u32 pairs;	/* QUEUES: in wanted (>= 1), out granted; SETACTIVE: in */
	__u32 reserved;	/* 0 */
};

struct venet_capabilities {
	__u32 gid;
	__u32 bits;
};

#define VENET_CAP_GROUP_SG 0

/* CAPABILITIES-GROUP SG */
#define VENET_CAP_SG     (1 << 0)
#define VENET_CAP_TSO4   (1 << 1)
#define VENET_CAP_TSO6   (1 << 2)
#define VENET_CAP_ECN    (1 << 3)
#define VENET_CAP_UFO    (1 << 4)
/*
 * rx descriptors carry a struct venet_sg too: the guest posts page iovs,
 * the host fills them and reports checksum/GSO state in the venet_sg
 * (docs/devices/venet.md, "rx ring, RXSG"). Only with SG.
 */
#define VENET_CAP_RXSG   (1 << 5)

/*
 * The seed declared { __u32 len; __u64 ptr; }: 16 bytes with ptr at 8 on
 * x86-64 but 12 bytes with ptr at 4 on i386. The padding is explicit here.
 */
struct venet_iov {
	__u32 len;
	__u32 reserved;
	__u64 ptr;
};

#define VENET_SG_FLAG_NEEDS_CSUM (1 << 0)
#define VENET_SG_FLAG_GSO        (1 << 1)
#define VENET_SG_FLAG_ECN        (1 << 2)
/* rx only (RXSG): the host verified the frame's checksums */
#define VENET_SG_FLAG_DATA_VALID (1 << 3)

#define VENET_GSO_TYPE_TCPV4	0	/* IPv4 TCP (TSO) */
#define VENET_GSO_TYPE_UDP	1	/* IPv4 UDP (UFO) */
#define VENET_GSO_TYPE_TCPV6	2	/* IPv6 TCP */

struct venet_sg {
	__u64 cookie;
	__u32 flags;
	__u32 len;		/* total length of all iovs */
	struct {
		__u16 start;	/* csum starting position */
		__u16 offset;	/* offset to place csum */
	} csum;
	struct {
		__u8 type;
		__u8 reserved;
		__u16 hdrlen;
		__u16 size;
	} gso;
	__u16 reserved;
	__u32 count;		/* nr of iovs */
	struct venet_iov iov[];	/* "count" elements */
};

/* Most iovs a host accepts in one venet_sg (bounds the walk). */
#define VENET_SG_MAX_IOVS 64

VBUS_STATIC_ASSERT(sizeof(struct venet_capabilities) == 8, "venet_caps");
VBUS_STATIC_ASSERT(sizeof(struct venet_iov) == 16, "venet_iov");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct venet_iov, ptr) == 8, "iov.ptr");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct venet_sg, flags) == 8, "sg.flags");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct venet_sg, len) == 12, "sg.len");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct venet_sg, csum) == 16, "sg.csum");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct venet_sg, gso) == 20, "sg.gso");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct venet_sg, gso.hdrlen) == 22,
		   "sg.gso.hdrlen");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct venet_sg, gso.size) == 24,
		   "sg.gso.size");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct venet_sg, count) == 28, "sg.count");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct venet_sg, iov) == 32, "sg.iov");
VBUS_STATIC_ASSERT(sizeof(struct venet_sg) == 32, "venet_sg");
VBUS_STATIC_ASSERT(sizeof(struct venet_queues) == 8, "venet_queues");

#define VENET_FUNC_LINKUP   0
#define VENET_FUNC_LINKDOWN 1
#define VENET_FUNC_MACQUERY 2
#define VENET_FUNC_NEGCAP   3	/* negotiate capabilities */
#define VENET_FUNC_FLUSHRX  4
#define VENET_FUNC_QUEUES   5	/* negotiate queue pairs (struct venet_queues) */
#define VENET_FUNC_SETACTIVE 6	/* pairs the host delivers rx to */

#endif /* VBUS_VENET_H */
