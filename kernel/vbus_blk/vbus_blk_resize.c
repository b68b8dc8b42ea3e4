// SPDX-License-Identifier: GPL-2.0
/*
 * vbus_blk online resize (docs/devices/vbus_blk.md, "Resize"): the host
 * signals the events ring (F_RESIZE) when the disk's capacity changed;
 * config_work reads GETCONFIG again and hands the new capacity to the
 * block layer (set_capacity_and_notify: a uevent, and the file system
 * can be grown, e.g. resize2fs). A reconnect whose host offers a larger
 * capacity is the same: a resize, not another disk (vbus_blk_link.c; a
 * smaller one is another disk there).
 *
 * Only the capacity is taken from the new config: everything else the
 * gendisk was made for stays (a host that changes it is ignored here and
 * refused at the next reconnect).
 *
 * Called by vbus_blk_main.c and vbus_blk_link.c; calls vbus_blk_setup.c.
 */
#include <linux/blkdev.h>
#include <linux/workqueue.h>

#include "vbus_blk_drv.h"

/* vblk->config.capacity is the new one: tell the block layer. */
void vbus_blk_capacity_apply(struct vbus_blk *vblk, u64 old)
{
	u64 now = vblk->config.capacity;

	if (now == old || !vblk->disk)
		return;
	dev_info(&vblk->vdev->dev, "%s: capacity %llu -> %llu sectors\n",
		 vblk->disk->disk_name, old, now);
	set_capacity_and_notify(vblk->disk, now);
}

static void vbus_blk_config_work(struct work_struct *work)
{
	struct vbus_blk *vblk = container_of(work, struct vbus_blk,
					     config_work);
	struct vbus_blk_config c;
	u64 old;

	mutex_lock(&vblk->close_lock);
	/* away or closed: the reconnect reads the config anyway */
	if (vblk->away || vbus_blk_faulted(vblk) ||
	    vblk->close_state != VBUS_BLK_OPEN || !vblk->disk)
		goto out;
	if (vbus_blk_read_config(vblk, &c))
		goto out;
	if (c.logical_block_size != vblk->config.logical_block_size) {
		dev_warn_ratelimited(&vblk->vdev->dev,
				     "%s: the host changed the block size: capacity change ignored\n",
				     vblk->disk->disk_name);
		goto out;
	}
	old = vblk->config.capacity;
	vblk->config.capacity = c.capacity;
	vbus_blk_capacity_apply(vblk, old);
out:
	mutex_unlock(&vblk->close_lock);
}

void vbus_blk_resize_init(struct vbus_blk *vblk)
{
	INIT_WORK(&vblk->config_work, vbus_blk_config_work);
}

/* Remove: after the rings are released, no new work is scheduled. */
void vbus_blk_resize_stop(struct vbus_blk *vblk)
{
	cancel_work_sync(&vblk->config_work);
}
