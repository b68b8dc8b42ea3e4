/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-blk device ABI ("vbus-blk" on the vbus; "virtual-block" is accepted
 * as an alias by vbus-hostd): a disk. Shared by the guest driver
 * (kernel/vbus_blk/, vbus_blk.ko) and the host device
 * (userspace/hostd/devices/vbus_blk/); the protocol is
 * docs/devices/vbus_blk.md.
 *
 * Bring-up (guest):
 *   DEVOPEN(VBUS_BLK_TYPE, VBUS_BLK_VERSION)
 *   DEVCALL GETCONFIG          -> struct vbus_blk_config
 *   DEVCALL GETTOPOLOGY        -> struct vbus_blk_topology (F_TOPOLOGY)
 *   DEVCALL NEGOTIATE          <-> struct vbus_blk_negotiate (once per open)
 *   DEVSHM id q, 0 <= q < nr_queues: the request ring of queue q, an IOQ
 *          ring of queue_depth descriptors with its embedded signal
 *   DEVSHM id VBUS_BLK_SHM_EVENTS (F_RESIZE granted): a one-descriptor
 *          IOQ ring used for its signal only: the host signals it when
 *          the capacity changed, the guest then GETCONFIGs again
 *
 * One request = one descriptor, posted north on ioq_idx_push:
 *   desc.ptr    guest-physical address of a struct vbus_blk_req (8-aligned)
 *   desc.len    VBUS_BLK_REQ_SIZE(req.nr_segs)
 *   desc.cookie guest-private (the host never reads it)
 * A DISCARD with F_DISCARD_RANGES granted may instead carry nr_segs 1,
 * nr_ranges 1 .. config.max_discard_ranges, and one segment of exactly
 * nr_ranges struct vbus_blk_range (the header's sector and nr_sectors
 * are then ignored); the host reads that list once too.
 * The host reads the request header and its segment list once, checks
 * them, moves the data between the backing store and the segments, writes
 * req.status, then pops (hands the descriptor back). The guest reaps
 * inuse with IOQ_ITER_REAP and reads req.status only after the
 * reap says the descriptor is its own again.
 */
#ifndef VBUS_VBUS_BLK_H
#define VBUS_VBUS_BLK_H

#include <vbus/platform.h>

#define VBUS_BLK_TYPE		"vbus-blk"
/* the type string the original plan used: vbus-hostd accepts it too */
#define VBUS_BLK_TYPE_ALIAS	"virtual-block"
#define VBUS_BLK_VERSION	1

#define VBUS_BLK_SECTOR_SHIFT	9	/* sector = 512 bytes, always */

/* DEVCALL funcs */
#define VBUS_BLK_FUNC_GETCONFIG	0	/* out: struct vbus_blk_config */
#define VBUS_BLK_FUNC_NEGOTIATE	1	/* in/out: struct vbus_blk_negotiate */
/* out: struct vbus_blk_topology; only while F_TOPOLOGY is offered */
#define VBUS_BLK_FUNC_GETTOPOLOGY	2

/* Feature bits (config.features offered, negotiate.features accepted) */
#define VBUS_BLK_F_RO		(1u << 0)	/* read-only: writes fail */
#define VBUS_BLK_F_FLUSH	(1u << 1)	/* volatile cache: FLUSH works */
#define VBUS_BLK_F_FUA		(1u << 2)	/* VBUS_BLK_REQ_FUA honoured */
#define VBUS_BLK_F_DISCARD	(1u << 3)
#define VBUS_BLK_F_WRITE_ZEROES	(1u << 4)
/*
 * Later features: a host or guest that predates one neither offers nor
 * asks for it, and everything below works without them.
 */
#define VBUS_BLK_F_TOPOLOGY	(1u << 5)	/* GETTOPOLOGY answers */
#define VBUS_BLK_F_RESIZE	(1u << 6)	/* capacity changes: events shm */
/* DISCARD may carry a list of ranges (struct vbus_blk_range) */
#define VBUS_BLK_F_DISCARD_RANGES	(1u << 7)

/* DEVSHM id of the events ring (F_RESIZE); queue rings are 0 .. 15 */
#define VBUS_BLK_SHM_EVENTS	256
#define VBUS_BLK_EVENTS_COUNT	1	/* its descriptors: never posted */

/* Host limits; a peer that asks for more is refused (-EINVAL). */
#define VBUS_BLK_MAX_QUEUES	16
#define VBUS_BLK_MAX_DEPTH	1024	/* descriptors per queue ring */
#define VBUS_BLK_MAX_SEGS	256	/* segments per request */
#define VBUS_BLK_MAX_DISCARD_RANGES	256	/* ranges per DISCARD */

#define VBUS_BLK_SERIAL_LEN	20	/* as virtio-blk's ID string */

struct vbus_blk_config {
	__u64 capacity;			/* in 512-byte sectors */
	__u32 logical_block_size;	/* bytes, power of two, >= 512 */
	__u32 physical_block_size;	/* bytes, power of two, >= logical */
	__u32 max_segments;		/* per request, <= VBUS_BLK_MAX_SEGS */
	__u32 max_segment_size;		/* bytes */
	__u32 max_sectors;		/* per read/write request */
	__u32 max_queues;		/* 1 .. VBUS_BLK_MAX_QUEUES */
	__u32 max_queue_depth;		/* power of two, <= VBUS_BLK_MAX_DEPTH */
	__u32 features;			/* VBUS_BLK_F_* offered */
	__u32 max_discard_sectors;	/* per request; 0 without F_DISCARD */
	__u32 max_write_zeroes_sectors;	/* 0 without F_WRITE_ZEROES */
	__u32 discard_granularity;	/* bytes */
	/* ranges per DISCARD (F_DISCARD_RANGES offered), else 0 */
	__u32 max_discard_ranges;
	char serial[VBUS_BLK_SERIAL_LEN]; /* NUL-padded, not terminated */
	__u8 reserved2[4];
};

struct vbus_blk_negotiate {
	__u32 features;		/* in: wanted (subset of offered); out: granted */
	__u32 nr_queues;	/* in: wanted (>= 1); out: granted (<= wanted) */
	__u32 queue_depth;	/* in: ring size per queue; must be accepted */
	__u32 reserved;		/* 0 */
};

/* topology.flags */
#define VBUS_BLK_TOPO_NONROT	(1u << 0)	/* no seek penalty (SSD, RAM) */

/*
 * Hints about the backing store's layout (none changes what a request
 * may be): a guest that gets nonsense ignores the field.
 */
struct vbus_blk_topology {
	__u32 alignment_offset;	/* bytes: first aligned physical block */
	__u32 io_min;		/* bytes: smallest I/O without read-modify-write */
	__u32 io_opt;		/* bytes: optimal I/O size, 0 = none */
	__u32 flags;		/* VBUS_BLK_TOPO_* */
	__u32 reserved[4];	/* 0 */
};

/* req.op */
#define VBUS_BLK_OP_READ		0
#define VBUS_BLK_OP_WRITE		1
#define VBUS_BLK_OP_FLUSH		2
#define VBUS_BLK_OP_DISCARD		3
#define VBUS_BLK_OP_WRITE_ZEROES	4
#define VBUS_BLK_OP_GET_ID		5	/* serial into one segment */

/* req.flags */
#define VBUS_BLK_REQ_FUA	(1u << 0)	/* WRITE: durable on completion */
#define VBUS_BLK_REQ_UNMAP	(1u << 1)	/* WRITE_ZEROES: may deallocate */

/* req.status, written by the host before the hand-back */
#define VBUS_BLK_S_OK		0
#define VBUS_BLK_S_IOERR	1	/* the backing store failed */
#define VBUS_BLK_S_UNSUPP	2	/* op or flag not negotiated */
#define VBUS_BLK_S_BADREQ	3	/* out of range, malformed */
#define VBUS_BLK_S_PENDING	0xff	/* guest's value before posting */

struct vbus_blk_seg {
	__u64 addr;		/* guest-physical */
	__u32 len;		/* bytes, a multiple of 512, > 0 */
	__u32 reserved;
};

struct vbus_blk_req {
	__u64 sector;		/* first 512-byte sector */
	__u32 nr_sectors;	/* DISCARD / WRITE_ZEROES only; else 0 */
	__u8 op;		/* VBUS_BLK_OP_* */
	__u8 status;		/* VBUS_BLK_S_*: host writes */
	__u16 flags;		/* VBUS_BLK_REQ_* */
	__u32 nr_segs;		/* READ/WRITE/GET_ID: 1 .. max_segments */
	/* a DISCARD with F_DISCARD_RANGES and nr_segs 1: its ranges */
	__u32 nr_ranges;
	__u32 reserved[2];
	struct vbus_blk_seg seg[];	/* "nr_segs" elements */
};

/*
 * One range of a DISCARD's range list (F_DISCARD_RANGES): the request's
 * one segment holds nr_ranges of them, as virtio-blk's
 * struct virtio_blk_discard_write_zeroes.
 */
struct vbus_blk_range {
	__u64 sector;		/* first 512-byte sector */
	__u32 nr_sectors;	/* > 0 */
	__u32 flags;		/* 0 */
};

#define VBUS_BLK_REQ_SIZE(nr_segs) \
	(sizeof(struct vbus_blk_req) + \
	 sizeof(struct vbus_blk_seg) * (__u64)(nr_segs))

VBUS_STATIC_ASSERT(sizeof(struct vbus_blk_config) == 80, "vbus_blk_config");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_blk_config, logical_block_size)
		   == 8, "config.lbs");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_blk_config, features) == 36,
		   "config.features");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_blk_config, serial) == 56,
		   "config.serial");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_blk_config, max_discard_ranges)
		   == 52, "config.max_discard_ranges");
VBUS_STATIC_ASSERT(sizeof(struct vbus_blk_topology) == 32,
		   "vbus_blk_topology");
VBUS_STATIC_ASSERT(sizeof(struct vbus_blk_negotiate) == 16,
		   "vbus_blk_negotiate");
VBUS_STATIC_ASSERT(sizeof(struct vbus_blk_seg) == 16, "vbus_blk_seg");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_blk_seg, len) == 8, "seg.len");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_blk_req, nr_sectors) == 8,
		   "req.nr_sectors");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_blk_req, op) == 12, "req.op");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_blk_req, status) == 13,
		   "req.status");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_blk_req, flags) == 14,
		   "req.flags");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_blk_req, nr_segs) == 16,
		   "req.nr_segs");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_blk_req, nr_ranges) == 20,
		   "req.nr_ranges");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct vbus_blk_req, seg) == 32, "req.seg");
VBUS_STATIC_ASSERT(sizeof(struct vbus_blk_range) == 16, "vbus_blk_range");
VBUS_STATIC_ASSERT(sizeof(struct vbus_blk_req) == 32, "vbus_blk_req");

#endif /* VBUS_VBUS_BLK_H */
