// SPDX-License-Identifier: GPL-2.0
/*
 * vbus_blk across host restarts (docs/transport.md, "Host restarts" and
 * "vbus-blk device"): the disk stays, its requests wait.
 *
 * disconnect: the host went away (or a new one replaced it). The blk-mq
 * queue is quiesced, so new requests wait in blk-mq instead of failing;
 * every request on a ring is taken back onto vblk->parked without
 * reading anything the old host wrote; the rings are freed (the bus
 * guarantees nothing on the host touches them any more). A parked
 * request stays started: its blk-mq timer runs, so a host that never
 * comes back ends it through the timeout handler (the device faults).
 * Requests that arrive meanwhile wait in blk-mq unstarted, with no timer:
 * away_work faults the device when the host has been away as long as a
 * request may wait (io_timeout x (1 + the timeout handler's resets)),
 * which fails them all.
 *
 * reconnect: DEVOPEN, GETCONFIG, NEGOTIATE and DEVSHM as at probe; the
 * new host must offer the same disk (block sizes, serial, features) with
 * at least the limits the gendisk and tag set were made for (a larger
 * capacity is a resize: the disk takes it), else the device faults
 * (parked requests fail, logged) and the bus removes it and probes it
 * anew. Then the parked requests go back to
 * blk-mq and the queue runs again.
 */
#include <linux/blk-mq.h>
#include <linux/delay.h>
#include <linux/moduleparam.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include "vbus_blk_drv.h"

/* How long a host may stay away, in io_timeouts (see vbus_blk_io.c). */
#define VBUS_BLK_AWAY_TIMEOUTS	(VBUS_BLK_TIMEOUT_RESETS + 1)

/*
 * The host stayed away too long: fault (under close_lock, so a reconnect
 * either came first and we see it, or sees the fault and fails).
 */
static void vbus_blk_away_work(struct work_struct *work)
{
	struct vbus_blk *vblk = container_of(to_delayed_work(work),
					     struct vbus_blk, away_work);

	mutex_lock(&vblk->close_lock);
	if (vblk->away)
		vbus_blk_fault(vblk, "host away too long");
	mutex_unlock(&vblk->close_lock);
}

/*
 * Test-only (docs/fault-injection.md, "Guest-side window wideners"): a
 * disconnect sleeps this long between releasing the rings and taking
 * their requests back, so that the hostile suite's short io_timeout
 * lands a blk-mq timeout in that window (issue 20.2) every time instead
 * of once in a blue moon. 0, the default, changes nothing.
 */
static unsigned int test_disconnect_window_ms;
module_param(test_disconnect_window_ms, uint, 0644);
MODULE_PARM_DESC(test_disconnect_window_ms,
		 "test only: ms a disconnect waits between freeing the rings and taking their requests back (0: none)");

static void vbus_blk_test_window(struct vbus_blk *vblk)
{
	unsigned int ms = READ_ONCE(test_disconnect_window_ms);

	if (!ms)
		return;
	dev_info(&vblk->vdev->dev, "test: disconnect window open for %u ms\n",
		 ms);
	msleep(ms);
	dev_info(&vblk->vdev->dev, "test: disconnect window closed\n");
}

void vbus_blk_link_init(struct vbus_blk *vblk)
{
	INIT_DELAYED_WORK(&vblk->away_work, vbus_blk_away_work);
}

/* Remove: the away timer neither runs nor is pending after this. */
void vbus_blk_link_stop(struct vbus_blk *vblk)
{
	cancel_delayed_work_sync(&vblk->away_work);
}

/* What the gendisk and the tag set were made for. */
struct vbus_blk_shape {
	struct vbus_blk_config config;
	char serial[VBUS_BLK_SERIAL_LEN + 1];
	u32 features;
	unsigned int nr_queues;
	unsigned int queue_depth;
	unsigned int max_segs;
	unsigned int max_discard_ranges;
};

static void vbus_blk_shape_save(const struct vbus_blk *vblk,
				struct vbus_blk_shape *s)
{
	s->config = vblk->config;
	memcpy(s->serial, vblk->serial, sizeof(s->serial));
	s->features = vblk->features;
	s->nr_queues = vblk->nr_queues;
	s->queue_depth = vblk->queue_depth;
	s->max_segs = vblk->max_segs;
	s->max_discard_ranges = vblk->max_discard_ranges;
}

static void vbus_blk_shape_restore(struct vbus_blk *vblk,
				   const struct vbus_blk_shape *s)
{
	vblk->config = s->config;
	memcpy(vblk->serial, s->serial, sizeof(vblk->serial));
	vblk->features = s->features;
	vblk->nr_queues = s->nr_queues;
	vblk->queue_depth = s->queue_depth;
	vblk->max_segs = s->max_segs;
	vblk->max_discard_ranges = s->max_discard_ranges;
}

/* The reason the new host's disk is not the one we have, or NULL. */
static const char *vbus_blk_shape_differs(const struct vbus_blk *vblk,
					  const struct vbus_blk_shape *s)
{
	const struct vbus_blk_config *c = &vblk->config, *o = &s->config;

	/*
	 * a larger capacity is a resize (vbus_blk_resize.c); a smaller one
	 * lost the data past its end under whatever is mounted: another disk
	 */
	if (c->capacity < o->capacity)
		return "capacity";
	if (c->logical_block_size != o->logical_block_size ||
	    c->physical_block_size != o->physical_block_size)
		return "block size";
	if (strcmp(vblk->serial, s->serial))
		return "serial";
	if (vblk->features != s->features)
		return "features";
	if (vblk->nr_queues != s->nr_queues ||
	    vblk->queue_depth != s->queue_depth)
		return "queues";
	if (vblk->max_segs != s->max_segs ||
	    c->max_segment_size < o->max_segment_size ||
	    c->max_sectors < o->max_sectors)
		return "request limits";
	if (((s->features & VBUS_BLK_F_DISCARD) &&
	     c->max_discard_sectors < o->max_discard_sectors) ||
	    ((s->features & VBUS_BLK_F_WRITE_ZEROES) &&
	     c->max_write_zeroes_sectors < o->max_write_zeroes_sectors) ||
	    vblk->max_discard_ranges < s->max_discard_ranges)
		return "discard limits";
	return NULL;
}

/* GETCONFIG and NEGOTIATE again; -EINVAL when the disk is another one. */
static int vbus_blk_check_same_disk(struct vbus_blk *vblk)
{
	struct vbus_blk_shape old;
	const char *why;
	int ret;

	vbus_blk_shape_save(vblk, &old);
	ret = vbus_blk_get_config(vblk);
	if (!ret)
		ret = vbus_blk_negotiate(vblk, old.nr_queues);
	why = ret ? NULL : vbus_blk_shape_differs(vblk, &old);
	if (why) {
		dev_err(&vblk->vdev->dev,
			"%s: the new host offers another disk (%s: capacity %llu, %u-byte blocks, serial %s); failing its requests\n",
			vblk->disk->disk_name, why, vblk->config.capacity,
			vblk->config.logical_block_size, vblk->serial);
		ret = -EINVAL;
	}
	if (ret) {	/* the gendisk still describes the old one */
		vbus_blk_shape_restore(vblk, &old);
	} else {
		/* the pdus hold as many ranges as at probe, no more */
		vblk->max_discard_ranges = old.max_discard_ranges;
		vbus_blk_capacity_apply(vblk, old.config.capacity);
	}
	return ret;
}

/* A new host's device, ready for the parked requests. Under close_lock. */
static int vbus_blk_reopen(struct vbus_blk *vblk)
{
	struct vbus_device_proxy *vdev = vblk->vdev;
	int ret;

	ret = vdev->ops->open(vdev, VBUS_BLK_VERSION, 0);
	if (ret < 0) {
		dev_err(&vdev->dev, "DEVOPEN failed: %d\n", ret);
		return ret;
	}
	vblk->close_state = VBUS_BLK_OPEN;
	ret = vbus_blk_check_same_disk(vblk);
	if (!ret)
		ret = vbus_blk_rings_open(vblk);
	if (ret) {
		/* the host lets go of what it got before we free it */
		vbus_blk_close_locked(vblk);
		vbus_blk_rings_release(vblk);
	}
	return ret;
}

void vbus_blk_disconnect(struct vbus_device_proxy *vdev)
{
	struct vbus_blk *vblk = vdev->priv;
	unsigned int n;

	if (!vblk)
		return;
	mutex_lock(&vblk->close_lock);
	if (vblk->away) {
		mutex_unlock(&vblk->close_lock);
		return;
	}
	vblk->away = true;
	/* no queue_rq runs after this, new requests wait in blk-mq */
	if (!vbus_blk_faulted(vblk))
		vbus_blk_quiesce(vblk);
	/* the host forgot the handle: close() answers at once */
	vbus_blk_close_locked(vblk);
	vblk->close_state = VBUS_BLK_CLOSED;
	/* no reaper runs after this, then what the host had comes back */
	vbus_blk_rings_release(vblk);
	vbus_blk_test_window(vblk);
	n = vbus_blk_take_back(vblk);
	if (vbus_blk_faulted(vblk))
		vbus_blk_fail_parked(vblk);
	else
		schedule_delayed_work(&vblk->away_work,
				      vblk->disk->queue->rq_timeout *
				      VBUS_BLK_AWAY_TIMEOUTS);
	mutex_unlock(&vblk->close_lock);
	dev_info(&vdev->dev, "%s: host gone: %u request(s) in flight wait for it\n",
		 vblk->disk->disk_name, n);
}

/*
 * A failure of ours or the host's moving again leaves everything parked
 * for the next host (or for remove, which fails it); another disk faults.
 */
int vbus_blk_reconnect(struct vbus_device_proxy *vdev)
{
	struct vbus_blk *vblk = vdev->priv;
	unsigned int n = 0;
	int ret;

	if (!vblk)
		return -ENODEV;
	mutex_lock(&vblk->close_lock);
	if (vbus_blk_faulted(vblk))
		ret = -EIO;	/* its requests failed: a new disk, by probe */
	else if (!vblk->away)
		ret = -EINVAL;
	else
		ret = vbus_blk_reopen(vblk);
	if (!ret) {
		/* not _sync: the work takes close_lock; it sees !away */
		cancel_delayed_work(&vblk->away_work);
		vblk->away = false;
		n = vbus_blk_resend_parked(vblk);
		vbus_blk_unquiesce(vblk);
	} else if (ret == -EINVAL && vblk->away) {
		set_bit(0, &vblk->faulted);	/* queue_rq fails from now on */
		vbus_blk_fail_parked(vblk);
		vbus_blk_unquiesce(vblk);
	}
	mutex_unlock(&vblk->close_lock);
	if (ret)
		dev_warn(&vdev->dev, "%s: cannot reconnect to the host: %d\n",
			 vblk->disk->disk_name, ret);
	else
		dev_info(&vdev->dev, "%s: host back: %u request(s) sent again\n",
			 vblk->disk->disk_name, n);
	return ret;
}
