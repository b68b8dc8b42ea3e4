/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vbus_blk: private definitions shared by the driver's files.
 *
 * The wire contract with the host is docs/devices/vbus_blk.md; the ABI structures are in <vbus/vbus_blk.h>.
 */
#ifndef VBUS_BLK_DRV_H
#define VBUS_BLK_DRV_H

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/workqueue.h>
#include <linux/scatterlist.h>
#include <linux/dma-mapping.h>
#include <linux/spinlock.h>
#include <vbus/ioq.h>
#include <vbus/vbus_blk.h>
#include <vbus/vbus_driver.h>

#define VBUS_BLK_DRV_NAME	"vbus_blk"
#define VBUS_BLK_DISK_NAME	"vbd"
#define VBUS_BLK_MINORS		16	/* per disk: the disk + 15 partitions */
/* Timer resets (of blk-mq's timeout) a request gets before the fault. */
#define VBUS_BLK_TIMEOUT_RESETS	4

/*
 * One request ring (DEVSHM id = index). @lock serialises the pusher (the
 * tail), the reaper (inuse's head), @unpublished and @slots, which maps a
 * ring slot (position & mask) to the request posted there: completions are
 * found by the slot we posted to, never by the host-writable cookie.
 */
struct vbus_blk_queue {
	struct vbus_blk *vblk;
	struct ioq *ioq;
	struct ioq_notifier notifier;
	spinlock_t lock;
	struct request **slots;	/* queue_depth entries */
	/*
	 * Posted into the ring, not published yet: blk-mq's batch ends
	 * (bd->last, ->commit_rqs) publish them with one tail store.
	 */
	u32 unpublished;
	/*
	 * The request headers the host reads (and writes req.status of),
	 * one per ring slot, vblk->req_stride apart: coherent memory on
	 * the bridge's PCI device that holds nothing else (no kernel
	 * pointer, no private state). desc.ptr is reqs_dma + the offset.
	 */
	void *reqs;
	dma_addr_t reqs_dma;
	unsigned int index;
	/*
	 * A poll queue (HCTX_TYPE_POLL: REQ_POLLED I/O, e.g. io_uring with
	 * IORING_SETUP_IOPOLL): its ring's notifications stay disabled, so
	 * the host's completions raise no interrupt; blk-mq's ->poll reaps.
	 */
	bool poll;
};

/*
 * Per-request driver data (the request's pdu, tag_set.cmd_size), private:
 * the host never sees it. @req and its segments are our copy of the
 * header, built here and copied to the ring slot's header in vq->reqs at
 * the post. The data pages are mapped through @sg (dma_map_sg on the
 * bridge's PCI device) while the request is on a ring.
 */
struct vbus_blk_cmd {
	struct list_head node;	/* on a completion list or vblk->parked */
	bool parked;		/* on vblk->parked; vblk->park_lock */
	blk_status_t status;	/* decided by the reaper or the fault path */
	unsigned int timeouts;	/* timer resets so far */
	u32 slot;		/* ring slot it was posted to */
	u32 nr_segs;		/* our copy of req.nr_segs */
	int nents;		/* sg entries mapped (dma_map_sg); 0 = none */
	enum dma_data_direction dir;	/* of the mapping */
	struct scatterlist *sg;	/* max_segments entries, after req */
	/* a DISCARD's range list (max_discard_ranges), after sg[] */
	struct vbus_blk_range *ranges;
	/*
	 * last: followed by max_segments struct vbus_blk_seg, then sg[],
	 * then max_discard_ranges struct vbus_blk_range
	 */
	struct vbus_blk_req req __aligned(8);
};

struct vbus_blk {
	struct vbus_device_proxy *vdev;
	struct gendisk *disk;
	struct blk_mq_tag_set tag_set;
	struct vbus_blk_queue *queues;
	unsigned int nr_queues;
	unsigned int nr_poll_queues;	/* the last ones of @queues */
	unsigned int queue_depth;
	unsigned int max_segs;	/* segments per request we use */
	/* ranges per DISCARD we use (F_DISCARD_RANGES granted), else 0 */
	unsigned int max_discard_ranges;
	size_t req_stride;	/* bytes per header in a queue's reqs */
	int index;		/* the N of vbdN */

	struct vbus_blk_config config;	/* checked copy of the host's */
	/* checked copy of GETTOPOLOGY's (F_TOPOLOGY offered), else zeroes */
	struct vbus_blk_topology topo;
	u32 features;		/* VBUS_BLK_F_* granted */
	/*
	 * cache_type "write through" chosen in sysfs while the host has a
	 * volatile cache (F_FLUSH): every write goes with FUA instead.
	 */
	bool write_through;

	/*
	 * F_RESIZE: the events ring (DEVSHM VBUS_BLK_SHM_EVENTS), only its
	 * signal is used; its notifier schedules @config_work, which reads
	 * the capacity again (vbus_blk_resize.c).
	 */
	struct ioq *evq;
	struct ioq_notifier evq_notifier;
	struct work_struct config_work;
	char serial[VBUS_BLK_SERIAL_LEN + 1];	/* printable, terminated */

	unsigned long faulted;	/* bit 0: the device is unusable */
	struct work_struct fail_work;	/* shutdown after a fault */
	/*
	 * close_state, away, quiesced, and moving requests off @parked in
	 * bulk (shutdown, reconnect): a host restart and a fault are
	 * handled one after the other.
	 */
	struct mutex close_lock;
	enum {
		VBUS_BLK_OPEN,
		VBUS_BLK_CLOSED,	/* the host answered DEVCLOSE, or forgot us */
		VBUS_BLK_CLOSE_TIMEDOUT,	/* it may still use our memory */
	} close_state;

	/*
	 * Host restarts (vbus_blk_link.c): between disconnect and reconnect
	 * the device is @away: no rings, the blk-mq queue @quiesced, and the
	 * requests the old host had are on @parked, still started (their
	 * blk-mq timer runs), until a new host takes them again.
	 */
	bool away;
	bool quiesced;
	/* faults the device when the host stays away too long */
	struct delayed_work away_work;
	spinlock_t park_lock;	/* @parked and cmd->parked */
	struct list_head parked;
};

/* The one check of vbus_blk_fault()'s verdict. */
static inline bool vbus_blk_faulted(struct vbus_blk *vblk)
{
	return test_bit(0, &vblk->faulted);
}

/* io */
extern const struct blk_mq_ops vbus_blk_mq_ops;
/* ranges per DISCARD the driver takes at most (its pdu holds them) */
#define VBUS_BLK_DISCARD_RANGES	64
size_t vbus_blk_cmd_size(unsigned int max_segs,
			 unsigned int max_discard_ranges);
void vbus_blk_io_init(struct vbus_blk *vblk);
void vbus_blk_fault(struct vbus_blk *vblk, const char *why);
int vbus_blk_close_locked(struct vbus_blk *vblk);
void vbus_blk_shutdown(struct vbus_blk *vblk);
void vbus_blk_notify(struct ioq_notifier *n);

/* What the host's accesses go through: every mapping is on it. */
static inline struct device *vbus_blk_dma_dev(struct vbus_blk *vblk)
{
	return vblk->vdev->dma_dev;
}

/* io: requests across a host restart (close_lock held) */
unsigned int vbus_blk_take_back(struct vbus_blk *vblk);
void vbus_blk_fail_parked(struct vbus_blk *vblk);
unsigned int vbus_blk_resend_parked(struct vbus_blk *vblk);
void vbus_blk_quiesce(struct vbus_blk *vblk);
void vbus_blk_unquiesce(struct vbus_blk *vblk);

/*
 * setup: bring-up steps a reconnect repeats, the module parameters. The
 * files call down only: main -> link -> resize -> setup -> io (main also
 * calls resize, setup and io, link setup and io).
 */
bool vbus_blk_params_ok(void);
u32 vbus_blk_want_queues(const struct vbus_blk_config *c);
int vbus_blk_get_config(struct vbus_blk *vblk);
int vbus_blk_read_config(struct vbus_blk *vblk, struct vbus_blk_config *c);
int vbus_blk_get_topology(struct vbus_blk *vblk);
int vbus_blk_negotiate(struct vbus_blk *vblk, u32 want_queues);
int vbus_blk_rings_open(struct vbus_blk *vblk);
void vbus_blk_rings_release(struct vbus_blk *vblk);

/* resize: capacity changes (close_lock held for _apply) */
void vbus_blk_resize_init(struct vbus_blk *vblk);
void vbus_blk_resize_stop(struct vbus_blk *vblk);
void vbus_blk_capacity_apply(struct vbus_blk *vblk, u64 old);

/* link: host restarts (struct vbus_driver_ops) */
void vbus_blk_link_init(struct vbus_blk *vblk);
void vbus_blk_link_stop(struct vbus_blk *vblk);
void vbus_blk_disconnect(struct vbus_device_proxy *vdev);
int vbus_blk_reconnect(struct vbus_device_proxy *vdev);

#endif /* VBUS_BLK_DRV_H */
