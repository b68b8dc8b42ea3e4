// SPDX-License-Identifier: GPL-2.0
/*
 * vbus_blk I/O path: blk-mq requests to ring descriptors and back.
 *
 * One request = one descriptor (docs/devices/vbus_blk.md):
 * desc.ptr is the DMA address of the ring slot's struct vbus_blk_req (in
 * the queue's coherent header array, a copy of the one the pdu keeps),
 * followed by its segments: the bio pages (blk_rq_map_sg), mapped with
 * dma_map_sg on the bridge's PCI device while the host has the request
 * (bounce buffers under swiotlb, physical addresses with dma-direct).
 *
 * queue_rq posts without ringing; the doorbell goes once per batch (the
 * last request of a dispatch, or commit_rqs when blk-mq stops early).
 * Completions: the host writes req.status and pops; the ring's notifier
 * (the bridge's eventq tasklet) reaps the inuse head while it is ours
 * again, finds the request by the ring slot it was posted to, and
 * completes it.
 *
 * A fault (a ring the host corrupted, a status we do not know, a request
 * the host sits on for too long) makes the device unusable: new requests
 * fail at once, the host device is closed (it lets go of the rings and
 * our pages), then every request still in flight ends with BLK_STS_IOERR.
 *
 * A host restart (vbus_blk_link.c) is not a fault: the requests on the
 * rings are taken back and parked, still started, and sent again to the
 * next host; a parked request times out like one on a ring.
 */
#include <linux/blk-mq.h>
#include <linux/io.h>
#include <linux/slab.h>
#include <linux/dma-mapping.h>

#include "vbus_blk_drv.h"

size_t vbus_blk_cmd_size(unsigned int max_segs,
			 unsigned int max_discard_ranges)
{
	return sizeof(struct vbus_blk_cmd) +
	       max_segs * sizeof(struct vbus_blk_seg) +
	       max_segs * sizeof(struct scatterlist) +
	       max_discard_ranges * sizeof(struct vbus_blk_range);
}

static void vbus_blk_fail_work(struct work_struct *work)
{
	vbus_blk_shutdown(container_of(work, struct vbus_blk, fail_work));
}

void vbus_blk_io_init(struct vbus_blk *vblk)
{
	INIT_WORK(&vblk->fail_work, vbus_blk_fail_work);
	mutex_init(&vblk->close_lock);
	spin_lock_init(&vblk->park_lock);
	INIT_LIST_HEAD(&vblk->parked);
}

/*
 * The host is done with @cmd's pages (or never got them): unmap them,
 * which under swiotlb copies a read's data out of the bounce buffers.
 */
static void vbus_blk_unmap(struct vbus_blk *vblk, struct vbus_blk_cmd *cmd)
{
	if (!cmd->nents)
		return;
	dma_unmap_sg(vbus_blk_dma_dev(vblk), cmd->sg, cmd->nents, cmd->dir);
	cmd->nents = 0;
}

/*
 * The host broke the protocol or stopped answering: stop using the
 * device. Any context; the close and the failing of requests in flight
 * happen in process context (fail_work, or the caller's shutdown).
 */
void vbus_blk_fault(struct vbus_blk *vblk, const char *why)
{
	if (test_and_set_bit(0, &vblk->faulted))
		return;
	dev_err_ratelimited(&vblk->vdev->dev,
			    "device fault (%s): failing all I/O until removed\n",
			    why);
	schedule_work(&vblk->fail_work);
}

/* Complete what the reaper or the fault path took off the slots. */
static void vbus_blk_complete_list(struct list_head *done)
{
	struct vbus_blk_cmd *cmd, *next;

	list_for_each_entry_safe(cmd, next, done, node) {
		list_del(&cmd->node);
		blk_mq_complete_request(blk_mq_rq_from_pdu(cmd));
	}
}

/* Every request still in a slot of @vq ends with an I/O error. */
static void vbus_blk_fail_queue(struct vbus_blk_queue *vq)
{
	unsigned int depth = vq->vblk->queue_depth;
	struct vbus_blk_cmd *cmd;
	unsigned long flags;
	LIST_HEAD(done);
	unsigned int i;

	if (!vq->slots)		/* probe failed before this ring */
		return;
	spin_lock_irqsave(&vq->lock, flags);
	for (i = 0; i < depth; i++) {
		if (!vq->slots[i])
			continue;
		cmd = blk_mq_rq_to_pdu(vq->slots[i]);
		vq->slots[i] = NULL;
		cmd->status = BLK_STS_IOERR;
		list_add_tail(&cmd->node, &done);
	}
	spin_unlock_irqrestore(&vq->lock, flags);

	vbus_blk_complete_list(&done);
}

/*
 * Close the host device once: when the host answers, it no longer
 * touches the rings or the pages our requests point to. Under close_lock;
 * the answer, or 0 when there was nothing to close.
 */
int vbus_blk_close_locked(struct vbus_blk *vblk)
{
	int ret;

	if (vblk->close_state != VBUS_BLK_OPEN)
		return 0;
	ret = vblk->vdev->ops->close(vblk->vdev, 0);
	if (ret < 0)
		dev_warn(&vblk->vdev->dev, "DEVCLOSE failed: %d\n", ret);
	/*
	 * Only a timeout leaves the host possibly still running; any answer
	 * (even -ENODEV after a DEVDROP) means it let go.
	 */
	vblk->close_state = ret == -ETIMEDOUT ? VBUS_BLK_CLOSE_TIMEDOUT :
						VBUS_BLK_CLOSED;
	if (ret == -ETIMEDOUT)
		dev_err(&vblk->vdev->dev,
			"host did not close the device: failing its requests anyway, the host may still write their pages\n");
	return ret;
}

/*
 * Close the host device, then fail every request in flight, on the rings
 * or parked for a host that is away, and let the queue run again so what
 * waited behind the quiesce fails too. Process context. Called with the
 * device faulted, so nothing is posted any more: queue_rq checks the
 * fault under the queue lock.
 */
void vbus_blk_shutdown(struct vbus_blk *vblk)
{
	unsigned int q;

	mutex_lock(&vblk->close_lock);
	vbus_blk_close_locked(vblk);
	for (q = 0; vblk->queues && q < vblk->nr_queues; q++)
		vbus_blk_fail_queue(&vblk->queues[q]);
	vbus_blk_fail_parked(vblk);
	vbus_blk_unquiesce(vblk);
	mutex_unlock(&vblk->close_lock);
}

/* ---- host restarts (vbus_blk_link.c) ---- */

/*
 * The host went away: every request on @vq's ring comes back to us,
 * whatever the ring says. Nothing the old host wrote (its pops, a
 * req.status) is looked at: a request it finished but we had not reaped
 * is sent again, which the protocol allows (a read, a write of the same
 * data, a flush, a discard: each may be done twice). The move is atomic
 * under vq->lock and park_lock, so the timeout handler always finds the
 * request on a slot or parked. Under close_lock, with the notifier gone.
 */
static unsigned int vbus_blk_take_back_queue(struct vbus_blk_queue *vq)
{
	struct vbus_blk *vblk = vq->vblk;
	struct vbus_blk_cmd *cmd;
	unsigned int i, n = 0;
	unsigned long flags;

	if (!vq->slots)
		return 0;
	spin_lock_irqsave(&vq->lock, flags);
	spin_lock(&vblk->park_lock);
	for (i = 0; i < vblk->queue_depth; i++) {
		if (!vq->slots[i])
			continue;
		cmd = blk_mq_rq_to_pdu(vq->slots[i]);
		vq->slots[i] = NULL;
		cmd->parked = true;
		list_add_tail(&cmd->node, &vblk->parked);
		n++;
	}
	spin_unlock(&vblk->park_lock);
	spin_unlock_irqrestore(&vq->lock, flags);
	return n;
}

/* Every request on a ring onto vblk->parked; how many. */
unsigned int vbus_blk_take_back(struct vbus_blk *vblk)
{
	unsigned int q, n = 0;

	for (q = 0; vblk->queues && q < vblk->nr_queues; q++)
		n += vbus_blk_take_back_queue(&vblk->queues[q]);
	return n;
}

/* The parked requests onto @list, no longer parked. */
static void vbus_blk_unpark_all(struct vbus_blk *vblk, struct list_head *list)
{
	struct vbus_blk_cmd *cmd;
	unsigned long flags;

	spin_lock_irqsave(&vblk->park_lock, flags);
	list_for_each_entry(cmd, &vblk->parked, node)
		cmd->parked = false;
	list_splice_init(&vblk->parked, list);
	spin_unlock_irqrestore(&vblk->park_lock, flags);
}

/* Every parked request ends with an I/O error. */
void vbus_blk_fail_parked(struct vbus_blk *vblk)
{
	struct vbus_blk_cmd *cmd;
	LIST_HEAD(done);

	vbus_blk_unpark_all(vblk, &done);
	list_for_each_entry(cmd, &done, node)
		cmd->status = BLK_STS_IOERR;
	vbus_blk_complete_list(&done);
}

/*
 * A new host is in service: the parked requests go back to blk-mq, at
 * the head, and reach queue_rq again once the queue runs, which builds
 * their header afresh (req.status = PENDING) before the push publishes
 * it to the new host. The old host is gone by now (a new one only starts
 * after it exited), so nothing else writes their pdus or pages.
 */
unsigned int vbus_blk_resend_parked(struct vbus_blk *vblk)
{
	struct vbus_blk_cmd *cmd, *next;
	unsigned int n = 0;
	LIST_HEAD(list);

	vbus_blk_unpark_all(vblk, &list);
	list_for_each_entry_safe(cmd, next, &list, node) {
		list_del_init(&cmd->node);
		/* queue_rq maps it again */
		vbus_blk_unmap(vblk, cmd);
		blk_mq_requeue_request(blk_mq_rq_from_pdu(cmd), false);
		n++;
	}
	return n;
}

/* New requests wait in blk-mq (not failed) until vbus_blk_unquiesce(). */
void vbus_blk_quiesce(struct vbus_blk *vblk)
{
	if (vblk->quiesced || !vblk->disk)
		return;
	blk_mq_quiesce_queue(vblk->disk->queue);
	vblk->quiesced = true;
}

/* Run the queue again, requeued requests first. */
void vbus_blk_unquiesce(struct vbus_blk *vblk)
{
	if (!vblk->quiesced)
		return;
	vblk->quiesced = false;
	blk_mq_unquiesce_queue(vblk->disk->queue);
	blk_mq_kick_requeue_list(vblk->disk->queue);
}

/*
 * The data segments of @rq into @cmd, mapped for the host: their count,
 * -ENOMEM when the mapping failed (try later), or -EINVAL.
 */
static int vbus_blk_map_segs(struct vbus_blk *vblk, struct request *rq,
			     struct vbus_blk_cmd *cmd)
{
	unsigned short nr = blk_rq_nr_phys_segments(rq);
	enum dma_data_direction dir;
	struct scatterlist *sg;
	int count, mapped, i;

	if (!nr || nr > vblk->max_segs)
		return -EINVAL;
	sg_init_table(cmd->sg, nr);
	count = blk_rq_map_sg(rq->q, rq, cmd->sg);
	if (count <= 0 || count > nr)
		return -EINVAL;
	dir = rq_data_dir(rq) == WRITE ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	mapped = dma_map_sg(vbus_blk_dma_dev(vblk), cmd->sg, count, dir);
	if (!mapped)
		return -ENOMEM;
	cmd->nents = count;	/* dma_unmap_sg() takes what we passed */
	cmd->dir = dir;

	for_each_sg(cmd->sg, sg, mapped, i) {
		struct vbus_blk_seg *seg = &cmd->req.seg[i];

		seg->addr = (u64)sg_dma_address(sg);
		seg->len = sg_dma_len(sg);
		seg->reserved = 0;
	}
	return mapped;
}

/*
 * A DISCARD: one range per bio (with more than one allowed the block
 * layer merges discards that need not touch, as virtio-blk's
 * virtblk_setup_discard_write_zeroes_erase reads them). One bio: the
 * header's range (0 segments). More: the range list in the pdu, mapped
 * for the host as the request's one segment; 1.
 */
static int vbus_blk_map_ranges(struct vbus_blk *vblk, struct request *rq,
			       struct vbus_blk_cmd *cmd)
{
	struct vbus_blk_req *req = &cmd->req;
	struct vbus_blk_seg *seg = &req->seg[0];
	struct bio *bio;
	u32 n = 0;

	req->nr_sectors = blk_rq_sectors(rq);
	if (!vblk->max_discard_ranges || rq->bio == rq->biotail)
		return 0;
	__rq_for_each_bio(bio, rq) {
		if (n == vblk->max_discard_ranges)
			return -EINVAL;
		cmd->ranges[n].sector = bio->bi_iter.bi_sector;
		cmd->ranges[n].nr_sectors =
			bio->bi_iter.bi_size >> VBUS_BLK_SECTOR_SHIFT;
		cmd->ranges[n].flags = 0;
		n++;
	}
	sg_init_one(cmd->sg, cmd->ranges, n * sizeof(*cmd->ranges));
	if (!dma_map_sg(vbus_blk_dma_dev(vblk), cmd->sg, 1, DMA_TO_DEVICE))
		return -ENOMEM;
	cmd->nents = 1;
	cmd->dir = DMA_TO_DEVICE;
	seg->addr = (u64)sg_dma_address(cmd->sg);
	seg->len = sg_dma_len(cmd->sg);
	seg->reserved = 0;
	req->sector = 0;
	req->nr_sectors = 0;
	req->nr_ranges = n;
	return 1;
}

/* Fill the request header (and segments) for @rq. */
static blk_status_t vbus_blk_setup_cmd(struct vbus_blk *vblk,
				       struct request *rq,
				       struct vbus_blk_cmd *cmd)
{
	struct vbus_blk_req *req = &cmd->req;
	int count = 0;

	memset(req, 0, sizeof(*req));
	req->sector = blk_rq_pos(rq);
	req->status = VBUS_BLK_S_PENDING;
	cmd->timeouts = 0;

	switch (req_op(rq)) {
	case REQ_OP_READ:
		req->op = VBUS_BLK_OP_READ;
		count = vbus_blk_map_segs(vblk, rq, cmd);
		break;
	case REQ_OP_WRITE:
		req->op = VBUS_BLK_OP_WRITE;
		/* cache_type "write through": every write durable */
		if (((rq->cmd_flags & REQ_FUA) || READ_ONCE(vblk->write_through)) &&
		    (vblk->features & VBUS_BLK_F_FUA))
			req->flags = VBUS_BLK_REQ_FUA;
		count = vbus_blk_map_segs(vblk, rq, cmd);
		break;
	case REQ_OP_FLUSH:
		req->op = VBUS_BLK_OP_FLUSH;
		req->sector = 0;
		break;
	case REQ_OP_DISCARD:
		req->op = VBUS_BLK_OP_DISCARD;
		count = vbus_blk_map_ranges(vblk, rq, cmd);
		break;
	case REQ_OP_WRITE_ZEROES:
		req->op = VBUS_BLK_OP_WRITE_ZEROES;
		req->nr_sectors = blk_rq_sectors(rq);
		if (!(rq->cmd_flags & REQ_NOUNMAP))
			req->flags = VBUS_BLK_REQ_UNMAP;
		break;
	default:
		return BLK_STS_NOTSUPP;
	}
	if (count == -ENOMEM)	/* no mapping now: blk-mq retries */
		return BLK_STS_RESOURCE;
	if (count < 0) {
		/* our own limits produced it: a driver bug, not host input */
		dev_err_ratelimited(&vblk->vdev->dev,
				    "request with %u segments not mapped\n",
				    blk_rq_nr_phys_segments(rq));
		return BLK_STS_IOERR;
	}
	req->nr_segs = count;
	cmd->nr_segs = count;
	return BLK_STS_OK;
}

/*
 * Publish what vbus_blk_post() filled since the last publish, under
 * vq->lock: one tail store, whose [R1] (v5: [R4] too; core/ioq.c)
 * publishes the descriptors, the request headers and their segments to
 * the host's consumer ([A1]). True when there was something: the caller
 * signals the host. A failed publish faults the device; the requests stay
 * on their slots, which the fault's take-back ends.
 */
static bool vbus_blk_publish(struct vbus_blk_queue *vq)
{
	u32 n = vq->unpublished;

	if (!n || !vq->ioq)
		return false;
	vq->unpublished = 0;
	if (ioq_post_end(vq->ioq, n, 0)) {
		vbus_blk_fault(vq->vblk, "ring publish");
		return false;
	}
	return true;
}

/*
 * Fill @rq into the descriptor after the ones not published yet. Under
 * vq->lock. -ENOSPC: the ring is full (try later); -EIO: the device is
 * faulted (or just became so).
 */
static int vbus_blk_post(struct vbus_blk_queue *vq, struct request *rq,
			 struct vbus_blk_cmd *cmd)
{
	struct vbus_blk *vblk = vq->vblk;
	struct ioq_ring_desc *desc;
	size_t off;
	__u32 pos;
	u32 slot;
	int ret;

	if (vbus_blk_faulted(vblk))
		return -EIO;
	if (!vq->ioq)		/* away: the queue is quiesced, try later */
		return -EAGAIN;
	/* room for one more after the batch so far (v6: our own shadows) */
	ret = ioq_post_begin(vq->ioq, vq->unpublished + 1, &pos);
	if (ret < 0) {
		vbus_blk_fault(vblk, "ring index");
		return -EIO;
	}
	if ((u32)ret <= vq->unpublished)
		return -ENOSPC;
	pos += vq->unpublished;

	slot = pos & (vblk->queue_depth - 1);
	/*
	 * inuse has room, so the tail slot is free. v6 counts room with our
	 * own shadows; a v5 ring re-reads counters the host writes: fault,
	 * never WARN.
	 */
	if (vq->slots[slot]) {
		vbus_blk_fault(vblk, "ring tail slot still in flight");
		return -EIO;
	}

	/* the slot's header: a copy of ours, which stays private */
	off = slot * vblk->req_stride;
	memcpy(vq->reqs + off, &cmd->req, VBUS_BLK_REQ_SIZE(cmd->nr_segs));
	desc = ioq_desc(vq->ioq, pos);
	WRITE_ONCE(desc->ptr, (u64)(vq->reqs_dma + off));
	WRITE_ONCE(desc->len, (u64)VBUS_BLK_REQ_SIZE(cmd->nr_segs));
	WRITE_ONCE(desc->cookie, (u64)slot);	/* the host never reads it */
	WRITE_ONCE(desc->valid, 1);
	vq->slots[slot] = rq;
	cmd->slot = slot;
	/* published with the batch: vbus_blk_publish() */
	vq->unpublished++;
	return 0;
}

static blk_status_t vbus_blk_queue_rq(struct blk_mq_hw_ctx *hctx,
				      const struct blk_mq_queue_data *bd)
{
	struct vbus_blk_queue *vq = hctx->driver_data;
	struct vbus_blk *vblk = vq->vblk;
	struct request *rq = bd->rq;
	struct vbus_blk_cmd *cmd = blk_mq_rq_to_pdu(rq);
	unsigned long flags;
	blk_status_t status;
	bool doorbell;
	int ret;

	if (vbus_blk_faulted(vblk))
		return BLK_STS_IOERR;

	status = vbus_blk_setup_cmd(vblk, rq, cmd);
	if (status)
		return status;

	blk_mq_start_request(rq);

	spin_lock_irqsave(&vq->lock, flags);
	ret = vbus_blk_post(vq, rq, cmd);
	/*
	 * The batch ends here (the last request, or a full ring: blk-mq
	 * does not call ->commit_rqs for a DEV_RESOURCE): one tail store,
	 * one signal. A failed request must not strand the ones before it.
	 */
	doorbell = (bd->last || ret) && vbus_blk_publish(vq);
	/* a full ring: the host may be waiting for our signal to consume */
	if (ret == -ENOSPC && vq->ioq && !vbus_blk_faulted(vblk))
		doorbell = true;
	if (doorbell)
		ioq_signal(vq->ioq, 0);
	spin_unlock_irqrestore(&vq->lock, flags);
	/* not posted: blk-mq retries (mapping again) or ends the request */
	if (ret)
		vbus_blk_unmap(vblk, cmd);

	if (ret == -ENOSPC)	/* a reaped slot frees a tag: blk-mq reruns us */
		return BLK_STS_DEV_RESOURCE;
	if (ret == -EAGAIN)	/* unquiesce at reconnect reruns us */
		return BLK_STS_RESOURCE;
	if (ret)
		return BLK_STS_IOERR;
	return BLK_STS_OK;
}

/* blk-mq stopped a batch before its last request: ring for what we posted. */
static void vbus_blk_commit_rqs(struct blk_mq_hw_ctx *hctx)
{
	struct vbus_blk_queue *vq = hctx->driver_data;
	unsigned long flags;

	/* blk-mq may call this outside the quiesce: the ring may be gone */
	spin_lock_irqsave(&vq->lock, flags);
	if (vbus_blk_publish(vq))
		ioq_signal(vq->ioq, 0);
	spin_unlock_irqrestore(&vq->lock, flags);
}

/* Our status for the host's; false for one the protocol does not have. */
static bool vbus_blk_status(u8 wire, blk_status_t *status)
{
	switch (wire) {
	case VBUS_BLK_S_OK:
		*status = BLK_STS_OK;
		return true;
	case VBUS_BLK_S_IOERR:
	case VBUS_BLK_S_BADREQ:
		*status = BLK_STS_IOERR;
		return true;
	case VBUS_BLK_S_UNSUPP:
		*status = BLK_STS_NOTSUPP;
		return true;
	default:	/* includes PENDING: popped without an answer */
		*status = BLK_STS_IOERR;
		return false;
	}
}

/*
 * Take the completion at @pos off its slot: its request onto @done.
 * 1: taken; 0: taken, and the device faulted (a status the protocol does
 * not have); -EIO: not taken, the device faulted. The reaper stops at a
 * fault. Under vq->lock.
 */
static int vbus_blk_reap_one(struct vbus_blk_queue *vq, __u32 pos,
			      struct list_head *done)
{
	struct vbus_blk *vblk = vq->vblk;
	struct vbus_blk_req *hdr;
	struct vbus_blk_cmd *cmd;
	struct request *rq;
	u32 slot;
	u8 wire;

	slot = pos & (vblk->queue_depth - 1);
	rq = vq->slots[slot];
	if (!rq) {
		vbus_blk_fault(vblk, "completion for a slot not in flight");
		return -EIO;
	}
	vq->slots[slot] = NULL;

	cmd = blk_mq_rq_to_pdu(rq);
	hdr = vq->reqs + slot * vblk->req_stride;
	wire = READ_ONCE(hdr->status);
	if (wire == VBUS_BLK_S_BADREQ)
		dev_err_ratelimited(&vblk->vdev->dev,
				    "host rejected request (op %u sector %llu)\n",
				    cmd->req.op, cmd->req.sector);
	list_add_tail(&cmd->node, done);
	if (!vbus_blk_status(wire, &cmd->status)) {
		vbus_blk_fault(vblk, "unknown request status");
		return 0;
	}
	return 1;
}

/*
 * Reap every descriptor the host has handed back onto @done, at most one
 * pass over the ring; returns how many. ioq_reap_begin()'s [A2] orders
 * valid's head before the req.status loads (pairs with the host's [R2],
 * after its status stores); ioq_reap_end() publishes inuse's head once
 * ([R3]). Completions come back in order: the position, not the
 * host-written cookie, names the slot. Under vq->lock.
 */
static unsigned int vbus_blk_reap(struct vbus_blk_queue *vq,
				  struct list_head *done)
{
	unsigned int n = 0;
	__u32 pos;
	int avail;

	avail = ioq_reap_begin(vq->ioq, vq->vblk->queue_depth, &pos);
	if (avail < 0) {
		vbus_blk_fault(vq->vblk, "ring index");
		return 0;
	}
	while (n < (unsigned int)avail) {
		int r = vbus_blk_reap_one(vq, pos + n, done);

		if (r < 0)
			break;
		n++;		/* taken off its slot: it is on @done */
		if (!r)
			break;
	}
	if (n && ioq_reap_end(vq->ioq, n, 0))
		vbus_blk_fault(vq->vblk, "ring reap");
	return n;
}

/*
 * The host signalled the ring: from the bridge's eventq tasklet or, with
 * per-queue vectors, the tasklet of the ring's own vector (via
 * _shm_signal_wakeup, which loops while the host keeps signalling, so a
 * completion that races the end of this reap brings us back).
 */
void vbus_blk_notify(struct ioq_notifier *n)
{
	struct vbus_blk_queue *vq =
		container_of(n, struct vbus_blk_queue, notifier);
	struct vbus_blk *vblk = vq->vblk;
	unsigned long flags;
	LIST_HEAD(done);

	/*
	 * A poll queue's requests are REQ_POLLED: they complete in the
	 * poller's task (->poll), never here in the tasklet (their bios come
	 * from a per-CPU cache that bio_put() WARNs about outside a task).
	 * Its signal is disabled, so a signal here is the host's own doing.
	 */
	if (vbus_blk_faulted(vblk) || vq->poll)
		return;
	/* the ring layer faults a signal whose indexes the host corrupted */
	if (shm_signal_faulted(vq->ioq->signal)) {
		vbus_blk_fault(vblk, "ring index out of range");
		return;
	}

	spin_lock_irqsave(&vq->lock, flags);
	vbus_blk_reap(vq, &done);
	spin_unlock_irqrestore(&vq->lock, flags);

	vbus_blk_complete_list(&done);
}

/*
 * blk-mq polls a poll queue (REQ_POLLED I/O waiting for its completion):
 * the notifier's reap, in the poller's task (the notifier leaves poll
 * queues alone). Returns how many requests it completed. vq->lock keeps
 * it apart from posting, the timeout handler and a disconnect.
 */
static int vbus_blk_poll(struct blk_mq_hw_ctx *hctx, struct io_comp_batch *iob)
{
	struct vbus_blk_queue *vq = hctx->driver_data;
	struct vbus_blk *vblk = vq->vblk;
	unsigned long flags;
	LIST_HEAD(done);
	unsigned int found = 0;

	if (vbus_blk_faulted(vblk))
		return 0;
	spin_lock_irqsave(&vq->lock, flags);
	if (vq->ioq && shm_signal_faulted(vq->ioq->signal))
		vbus_blk_fault(vblk, "ring index out of range");
	else if (vq->ioq)
		found = vbus_blk_reap(vq, &done);
	spin_unlock_irqrestore(&vq->lock, flags);

	vbus_blk_complete_list(&done);
	return found;
}

/*
 * A queue whose ring the bridge signals on a per-queue MSI-X vector
 * (docs/transport.md, "Per-queue vectors") serves the CPUs that vector's
 * interrupt is affine to, so a request completes on the CPU that issued
 * it (as blk_mq_pci_map_queues() does for virtio-blk). The generic map
 * first: a CPU outside every vector's mask (or a bridge without vectors)
 * keeps it. Ring q is DEVSHM id q.
 */
static void vbus_blk_map_affinity(struct vbus_blk *vblk,
				  struct blk_mq_queue_map *map)
{
	struct vbus_device_proxy *vdev = vblk->vdev;
	const struct cpumask *mask;
	unsigned int q, cpu;

	blk_mq_map_queues(map);
	if (!vdev->ops->queue_affinity)
		return;
	for (q = 0; q < map->nr_queues; q++) {
		mask = vdev->ops->queue_affinity(vdev, map->queue_offset + q);
		if (!mask)
			continue;
		for_each_cpu(cpu, mask)
			map->mq_map[cpu] = map->queue_offset + q;
	}
}

/*
 * Hardware queues by type: the default ones first, then the poll ones
 * (vblk->nr_poll_queues, the last rings); reads share the default map.
 */
static void vbus_blk_map_queues(struct blk_mq_tag_set *set)
{
	struct vbus_blk *vblk = set->driver_data;
	unsigned int i, off = 0;

	for (i = 0; i < set->nr_maps; i++) {
		struct blk_mq_queue_map *map = &set->map[i];

		if (i == HCTX_TYPE_DEFAULT)
			map->nr_queues = vblk->nr_queues - vblk->nr_poll_queues;
		else if (i == HCTX_TYPE_POLL)
			map->nr_queues = vblk->nr_poll_queues;
		else
			map->nr_queues = 0;
		map->queue_offset = off;
		off += map->nr_queues;
		if (map->nr_queues && i == HCTX_TYPE_DEFAULT)
			vbus_blk_map_affinity(vblk, map);
		else if (map->nr_queues)
			blk_mq_map_queues(map);
	}
}

static void vbus_blk_complete_rq(struct request *rq)
{
	struct vbus_blk_cmd *cmd = blk_mq_rq_to_pdu(rq);
	struct vbus_blk_queue *vq = rq->mq_hctx->driver_data;

	vbus_blk_unmap(vq->vblk, cmd);
	blk_mq_end_request(rq, cmd->status);
}

/*
 * Is @rq still ours to time out: on a ring slot (remind the host, under
 * vq->lock: the ring may go at a disconnect) or parked for a host that is
 * away? take_back moves a request from one to the other atomically.
 *
 * A slot can be taken while vq->ioq is NULL: a disconnect releases the
 * rings (vbus_blk_rings_release() clears vq->ioq under vq->lock) before
 * vbus_blk_take_back() empties the slots, and takes vq->lock in between.
 * A timeout in that window finds the request on its slot with no ring to
 * signal: it is still ours (parked a moment later), there is just nobody
 * to remind.
 */
static bool vbus_blk_waiting(struct vbus_blk_queue *vq, struct request *rq,
			     bool *parked)
{
	struct vbus_blk_cmd *cmd = blk_mq_rq_to_pdu(rq);
	unsigned long flags;
	bool on_ring;

	spin_lock_irqsave(&vq->lock, flags);
	on_ring = vq->slots[cmd->slot] == rq;
	vbus_blk_publish(vq);	/* a batch blk-mq never ended */
	if (on_ring && vq->ioq)
		ioq_signal(vq->ioq, 0);
	spin_unlock_irqrestore(&vq->lock, flags);

	spin_lock_irqsave(&vq->vblk->park_lock, flags);
	*parked = cmd->parked;
	spin_unlock_irqrestore(&vq->vblk->park_lock, flags);
	return on_ring || *parked;
}

/*
 * blk-mq's timer ran out on @rq (process context, the timeout work). The
 * host may be slow (TCG, a busy backing store) or restarting: wait, a
 * bounded number of times; then give up on the device. A host that never
 * comes back after a disconnect ends here too.
 */
static enum blk_eh_timer_return vbus_blk_timeout(struct request *rq)
{
	struct vbus_blk_cmd *cmd = blk_mq_rq_to_pdu(rq);
	struct vbus_blk_queue *vq = rq->mq_hctx->driver_data;
	struct vbus_blk *vblk = vq->vblk;
	bool parked;

	if (!vbus_blk_faulted(vblk)) {
		if (!vbus_blk_waiting(vq, rq, &parked))
			return BLK_EH_DONE;	/* being completed or requeued */

		if (++cmd->timeouts <= VBUS_BLK_TIMEOUT_RESETS) {
			dev_warn_ratelimited(&vblk->vdev->dev,
					     "request timed out (%u of %u), queue %u: %s\n",
					     cmd->timeouts,
					     VBUS_BLK_TIMEOUT_RESETS, vq->index,
					     parked ? "the host is away, still waiting for it" :
						      "still waiting");
			return BLK_EH_RESET_TIMER;
		}
		vbus_blk_fault(vblk, parked ? "request timed out, host away" :
					      "request timed out");
	}
	/* fails this request too (it is still in its slot or parked, or done) */
	vbus_blk_shutdown(vblk);
	return BLK_EH_DONE;
}

static int vbus_blk_init_hctx(struct blk_mq_hw_ctx *hctx, void *data,
			      unsigned int hctx_idx)
{
	struct vbus_blk *vblk = data;

	hctx->driver_data = &vblk->queues[hctx_idx];
	return 0;
}

static int vbus_blk_init_request(struct blk_mq_tag_set *set,
				 struct request *rq, unsigned int hctx_idx,
				 unsigned int numa_node)
{
	struct vbus_blk *vblk = set->driver_data;
	struct vbus_blk_cmd *cmd = blk_mq_rq_to_pdu(rq);

	cmd->sg = (struct scatterlist *)&cmd->req.seg[vblk->max_segs];
	cmd->ranges = (struct vbus_blk_range *)&cmd->sg[vblk->max_segs];
	INIT_LIST_HEAD(&cmd->node);
	cmd->parked = false;
	cmd->nents = 0;
	cmd->slot = 0;		/* the timeout handler looks before a post */
	return 0;
}

const struct blk_mq_ops vbus_blk_mq_ops = {
	.queue_rq	= vbus_blk_queue_rq,
	.commit_rqs	= vbus_blk_commit_rqs,
	.complete	= vbus_blk_complete_rq,
	.timeout	= vbus_blk_timeout,
	.init_hctx	= vbus_blk_init_hctx,
	.init_request	= vbus_blk_init_request,
	.map_queues	= vbus_blk_map_queues,
	.poll		= vbus_blk_poll,
};
