// SPDX-License-Identifier: GPL-2.0
/*
 * vbus_blk - a paravirtual disk on the vbus: the guest driver of the
 * host's "vbus-blk" device. Disks appear as /dev/vbdN.
 *
 * Bring-up (docs/devices/vbus_blk.md): DEVOPEN, GETCONFIG
 * (checked here: nothing the host says can make the block layer WARN),
 * NEGOTIATE (features, queues, ring size), one IOQ ring per blk-mq
 * hardware queue (DEVSHM id = queue index), then the gendisk.
 *
 * Removal (driver unbind, module unload, or the host's DEVDROP): the
 * device is marked faulted so new requests fail, the host device is
 * closed (the host lets go of the rings and our pages), the requests
 * still in flight end with an I/O error, and only then is the disk
 * deleted: del_gendisk() waits for every request, and a dropped host
 * would never complete them.
 *
 * A host restart keeps the disk: vbus_blk_link.c.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/ctype.h>
#include <linux/idr.h>
#include <linux/log2.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>

#include "vbus_blk_drv.h"

#define VBUS_BLK_DRV_VERSION	"1"

static unsigned int queue_depth = 128;
module_param(queue_depth, uint, 0444);
MODULE_PARM_DESC(queue_depth,
		 "descriptors per request ring (power of two, 1..1024; capped by the host)");

static unsigned int nr_queues;
module_param(nr_queues, uint, 0444);
MODULE_PARM_DESC(nr_queues,
		 "request rings (0: one per online CPU; capped by the host)");

static unsigned int poll_queues;
module_param(poll_queues, uint, 0444);
MODULE_PARM_DESC(poll_queues,
		 "request rings for polled I/O, no interrupts (0..15; at least one ring stays for the rest)");

static unsigned int max_segments = 128;
module_param(max_segments, uint, 0444);
MODULE_PARM_DESC(max_segments,
		 "segments per request (1..256; capped by the host)");

static int vbus_blk_major;
static DEFINE_IDA(vbus_blk_ida);

static const struct block_device_operations vbus_blk_fops = {
	.owner	= THIS_MODULE,
};

static ssize_t serial_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct vbus_blk *vblk = dev_to_disk(dev)->private_data;

	return sysfs_emit(buf, "%s\n", vblk->serial);
}
static DEVICE_ATTR_RO(serial);

static struct attribute *vbus_blk_attrs[] = {
	&dev_attr_serial.attr,
	NULL,
};
ATTRIBUTE_GROUPS(vbus_blk);

/* The host's serial, up to the first NUL, as printable ASCII. */
static void vbus_blk_set_serial(struct vbus_blk *vblk)
{
	const char *s = vblk->config.serial;
	unsigned int i;

	for (i = 0; i < VBUS_BLK_SERIAL_LEN && s[i]; i++)
		vblk->serial[i] = isprint(s[i]) && s[i] != ' ' ? s[i] : '_';
	vblk->serial[i] = '\0';
}

static int vbus_blk_bad_config(struct vbus_blk *vblk, const char *what,
			       u64 value)
{
	dev_err(&vblk->vdev->dev, "GETCONFIG: bad %s %llu: device refused\n",
		what, value);
	return -EINVAL;
}

/*
 * Check the host's config so that every value handed to the block layer
 * is one it takes without a warning; fix up what has a safe reading
 * (features we do not know, limits of a feature that is off).
 */
static int vbus_blk_check_config(struct vbus_blk *vblk)
{
	struct vbus_blk_config *c = &vblk->config;
	const u32 known = VBUS_BLK_F_RO | VBUS_BLK_F_FLUSH | VBUS_BLK_F_FUA |
			  VBUS_BLK_F_DISCARD | VBUS_BLK_F_WRITE_ZEROES;

	if (!is_power_of_2(c->logical_block_size) ||
	    c->logical_block_size < 512 || c->logical_block_size > PAGE_SIZE)
		return vbus_blk_bad_config(vblk, "logical_block_size",
					   c->logical_block_size);
	if (!is_power_of_2(c->physical_block_size) ||
	    c->physical_block_size < c->logical_block_size)
		c->physical_block_size = c->logical_block_size;
	if (!c->max_segments || c->max_segments > VBUS_BLK_MAX_SEGS)
		return vbus_blk_bad_config(vblk, "max_segments",
					   c->max_segments);
	if (c->max_segment_size < PAGE_SIZE)
		return vbus_blk_bad_config(vblk, "max_segment_size",
					   c->max_segment_size);
	if (c->max_sectors < (PAGE_SIZE >> VBUS_BLK_SECTOR_SHIFT))
		return vbus_blk_bad_config(vblk, "max_sectors",
					   c->max_sectors);
	if (!c->max_queues || c->max_queues > VBUS_BLK_MAX_QUEUES)
		return vbus_blk_bad_config(vblk, "max_queues", c->max_queues);
	if (!is_power_of_2(c->max_queue_depth) ||
	    c->max_queue_depth > VBUS_BLK_MAX_DEPTH)
		return vbus_blk_bad_config(vblk, "max_queue_depth",
					   c->max_queue_depth);

	c->features &= known;
	if (!c->max_discard_sectors)
		c->features &= ~VBUS_BLK_F_DISCARD;
	if (!c->max_write_zeroes_sectors)
		c->features &= ~VBUS_BLK_F_WRITE_ZEROES;
	if (!is_power_of_2(c->discard_granularity) ||
	    c->discard_granularity < c->logical_block_size)
		c->discard_granularity = c->logical_block_size;
	/* whole logical blocks only */
	c->capacity &= ~(u64)((c->logical_block_size >>
			       VBUS_BLK_SECTOR_SHIFT) - 1);
	vbus_blk_set_serial(vblk);
	return 0;
}

int vbus_blk_get_config(struct vbus_blk *vblk)
{
	struct vbus_device_proxy *vdev = vblk->vdev;
	struct vbus_blk_config *c;
	int ret;

	/* the bus hands the buffer to the host by physical address */
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	ret = vdev->ops->call(vdev, VBUS_BLK_FUNC_GETCONFIG, c, sizeof(*c), 0);
	if (ret < 0)
		dev_err(&vdev->dev, "GETCONFIG failed: %d\n", ret);
	else
		memcpy(&vblk->config, c, sizeof(*c));	/* read once */
	kfree(c);
	return ret < 0 ? ret : vbus_blk_check_config(vblk);
}

/*
 * The queues probe asks for: the parameter, or one per online CPU, plus
 * the poll queues.
 */
static u32 vbus_blk_want_queues(const struct vbus_blk_config *c)
{
	u32 want = (nr_queues ? nr_queues : num_online_cpus()) + poll_queues;

	return min3(want, c->max_queues, (u32)VBUS_BLK_MAX_QUEUES);
}

/*
 * NEGOTIATE: features, @want_queues request rings, their depth. Sets
 * what was granted in @vblk; a reconnect compares it with what the disk
 * was made for.
 */
int vbus_blk_negotiate(struct vbus_blk *vblk, u32 want_queues)
{
	struct vbus_device_proxy *vdev = vblk->vdev;
	const struct vbus_blk_config *c = &vblk->config;
	struct vbus_blk_negotiate *n;
	u32 depth;
	int ret;

	depth = min(queue_depth, c->max_queue_depth);

	n = kzalloc(sizeof(*n), GFP_KERNEL);
	if (!n)
		return -ENOMEM;
	n->features = c->features;
	n->nr_queues = want_queues;
	n->queue_depth = depth;
	ret = vdev->ops->call(vdev, VBUS_BLK_FUNC_NEGOTIATE, n, sizeof(*n), 0);
	if (ret < 0) {
		dev_err(&vdev->dev, "NEGOTIATE failed: %d\n", ret);
		goto out;
	}
	/* never more than asked; a read-only offer stays read-only */
	vblk->features = (READ_ONCE(n->features) & c->features) |
			 (c->features & VBUS_BLK_F_RO);
	vblk->nr_queues = READ_ONCE(n->nr_queues);
	if (!vblk->nr_queues || vblk->nr_queues > want_queues) {
		dev_err(&vdev->dev, "NEGOTIATE: host granted %u queues of %u\n",
			vblk->nr_queues, want_queues);
		ret = -EINVAL;
		goto out;
	}
	vblk->queue_depth = depth;
	vblk->max_segs = min(max_segments, c->max_segments);
	/* polled I/O gets what is left once one ring serves the rest */
	vblk->nr_poll_queues = min(poll_queues, vblk->nr_queues - 1);
	ret = 0;
out:
	kfree(n);
	return ret;
}

/* The request-slot maps, one per queue: they outlive a host restart. */
static int vbus_blk_queues_alloc(struct vbus_blk *vblk)
{
	unsigned int q;

	vblk->queues = kcalloc(vblk->nr_queues, sizeof(*vblk->queues),
			       GFP_KERNEL);
	if (!vblk->queues)
		return -ENOMEM;

	for (q = 0; q < vblk->nr_queues; q++) {
		struct vbus_blk_queue *vq = &vblk->queues[q];

		vq->vblk = vblk;
		vq->index = q;
		vq->poll = q >= vblk->nr_queues - vblk->nr_poll_queues;
		spin_lock_init(&vq->lock);
		vq->slots = kcalloc(vblk->queue_depth, sizeof(*vq->slots),
				    GFP_KERNEL);
		if (!vq->slots)
			return -ENOMEM;
	}
	return 0;
}

/*
 * One request ring per queue, registered as DEVSHM id = queue index
 * (probe, and again for each new host). The device must be open.
 */
int vbus_blk_rings_open(struct vbus_blk *vblk)
{
	struct ioq *ioq;
	unsigned int q;
	unsigned long flags;
	int ret;

	for (q = 0; q < vblk->nr_queues; q++) {
		struct vbus_blk_queue *vq = &vblk->queues[q];

		ret = vbus_driver_ioq_alloc(vblk->vdev, q, 0,
					    vblk->queue_depth, &ioq);
		if (ret < 0) {
			dev_err(&vblk->vdev->dev, "ring %u: DEVSHM failed: %d\n",
				q, ret);
			return ret;
		}
		vq->notifier.signal = vbus_blk_notify;
		ioq->notifier = &vq->notifier;
		spin_lock_irqsave(&vq->lock, flags);
		vq->ioq = ioq;
		spin_unlock_irqrestore(&vq->lock, flags);
		/* a poll queue's completions are looked for: no interrupts */
		if (vq->poll)
			ioq_notify_disable(ioq, 0);
		else
			ioq_notify_enable(ioq, 0);
	}
	return 0;
}

/*
 * Let go of the rings (the slot maps stay). They are freed only when the
 * host answered DEVCLOSE or forgot the device (close_state CLOSED);
 * otherwise it may still use them and they are leaked.
 */
void vbus_blk_rings_release(struct vbus_blk *vblk)
{
	struct ioq *ioq;
	unsigned long flags;
	unsigned int q;

	if (!vblk->queues)
		return;
	for (q = 0; q < vblk->nr_queues; q++)
		if (vblk->queues[q].ioq)
			WRITE_ONCE(vblk->queues[q].ioq->notifier, NULL);
	/* a notifier already running (eventq tasklet) finishes first */
	synchronize_rcu();

	for (q = 0; q < vblk->nr_queues; q++) {
		struct vbus_blk_queue *vq = &vblk->queues[q];

		/* under vq->lock: the timeout handler and commit_rqs look */
		spin_lock_irqsave(&vq->lock, flags);
		ioq = vq->ioq;
		vq->ioq = NULL;
		spin_unlock_irqrestore(&vq->lock, flags);
		if (ioq && vblk->close_state == VBUS_BLK_CLOSED)
			ioq_put(ioq);
	}
}

/* Undo the ring side and the slot maps; see vbus_blk_rings_release(). */
static void vbus_blk_rings_free(struct vbus_blk *vblk)
{
	unsigned int q;

	if (!vblk->queues)
		return;
	vbus_blk_rings_release(vblk);
	if (vblk->close_state != VBUS_BLK_CLOSED) {
		dev_err(&vblk->vdev->dev,
			"host did not close the device: leaking its rings\n");
		return;
	}
	for (q = 0; q < vblk->nr_queues; q++)
		kfree(vblk->queues[q].slots);
	kfree(vblk->queues);
	vblk->queues = NULL;
}

static void vbus_blk_set_limits(struct vbus_blk *vblk, struct gendisk *disk)
{
	const struct vbus_blk_config *c = &vblk->config;
	struct request_queue *q = disk->queue;
	u32 f = vblk->features;

	blk_queue_logical_block_size(q, c->logical_block_size);
	blk_queue_physical_block_size(q, c->physical_block_size);
	blk_queue_max_segments(q, vblk->max_segs);
	blk_queue_max_segment_size(q, c->max_segment_size);
	blk_queue_max_hw_sectors(q, c->max_sectors);
	blk_queue_write_cache(q, f & VBUS_BLK_F_FLUSH,
			      (f & VBUS_BLK_F_FLUSH) && (f & VBUS_BLK_F_FUA));
	if (f & VBUS_BLK_F_DISCARD) {
		/* one range per request: the wire has one sector/count pair */
		blk_queue_max_discard_segments(q, 1);
		blk_queue_max_discard_sectors(q, c->max_discard_sectors);
		q->limits.discard_granularity = c->discard_granularity;
	}
	if (f & VBUS_BLK_F_WRITE_ZEROES)
		blk_queue_max_write_zeroes_sectors(q,
						   c->max_write_zeroes_sectors);
	set_capacity(disk, c->capacity);
	set_disk_ro(disk, f & VBUS_BLK_F_RO);
}

static int vbus_blk_disk_setup(struct vbus_blk *vblk)
{
	struct blk_mq_tag_set *set = &vblk->tag_set;
	struct gendisk *disk;
	int ret;

	set->ops = &vbus_blk_mq_ops;
	set->nr_hw_queues = vblk->nr_queues;
	/* default, read (none: shares default), poll (vbus_blk_map_queues) */
	set->nr_maps = vblk->nr_poll_queues ? HCTX_MAX_TYPES : 1;
	set->queue_depth = vblk->queue_depth;
	set->numa_node = NUMA_NO_NODE;
	set->flags = BLK_MQ_F_SHOULD_MERGE;
	set->cmd_size = vbus_blk_cmd_size(vblk->max_segs);
	set->driver_data = vblk;
	ret = blk_mq_alloc_tag_set(set);
	if (ret)
		return ret;

	disk = blk_mq_alloc_disk(set, vblk);
	if (IS_ERR(disk)) {
		blk_mq_free_tag_set(set);
		return PTR_ERR(disk);
	}
	disk->major = vbus_blk_major;
	disk->first_minor = vblk->index * VBUS_BLK_MINORS;
	disk->minors = VBUS_BLK_MINORS;
	disk->fops = &vbus_blk_fops;
	disk->private_data = vblk;
	snprintf(disk->disk_name, DISK_NAME_LEN, VBUS_BLK_DISK_NAME "%d",
		 vblk->index);
	vbus_blk_set_limits(vblk, disk);

	ret = device_add_disk(&vblk->vdev->dev, disk, vbus_blk_groups);
	if (ret) {
		put_disk(disk);
		blk_mq_free_tag_set(set);
		return ret;
	}
	vblk->disk = disk;
	return 0;
}

/* Stop the device: new requests fail, close it, fail what is in flight. */
static void vbus_blk_stop(struct vbus_blk *vblk)
{
	set_bit(0, &vblk->faulted);	/* queue_rq fails from now on */
	vbus_blk_shutdown(vblk);
}

static int vbus_blk_probe(struct vbus_device_proxy *vdev)
{
	struct vbus_blk *vblk;
	int ret;

	vblk = kzalloc(sizeof(*vblk), GFP_KERNEL);
	if (!vblk)
		return -ENOMEM;
	vblk->vdev = vdev;
	vbus_blk_io_init(vblk);
	vbus_blk_link_init(vblk);

	vblk->index = ida_alloc_max(&vbus_blk_ida,
				    (1 << MINORBITS) / VBUS_BLK_MINORS - 1,
				    GFP_KERNEL);
	if (vblk->index < 0) {
		ret = vblk->index;
		goto out_free;
	}

	ret = vdev->ops->open(vdev, VBUS_BLK_VERSION, 0);
	if (ret < 0) {
		dev_err(&vdev->dev, "DEVOPEN failed: %d\n", ret);
		goto out_ida;
	}

	ret = vbus_blk_get_config(vblk);
	if (!ret)
		ret = vbus_blk_negotiate(vblk,
					 vbus_blk_want_queues(&vblk->config));
	if (!ret)
		ret = vbus_blk_queues_alloc(vblk);
	if (!ret)
		ret = vbus_blk_rings_open(vblk);
	if (!ret)
		ret = vbus_blk_disk_setup(vblk);
	if (ret)
		goto out_close;

	vdev->priv = vblk;
	dev_info(&vdev->dev,
		 "%s: %llu sectors (%u-byte blocks), %u queue(s) of %u (%u polled), %u segs,%s%s%s%s%s serial %s\n",
		 vblk->disk->disk_name, vblk->config.capacity,
		 vblk->config.logical_block_size, vblk->nr_queues,
		 vblk->queue_depth, vblk->nr_poll_queues, vblk->max_segs,
		 vblk->features & VBUS_BLK_F_RO ? " ro" : "",
		 vblk->features & VBUS_BLK_F_FLUSH ? " flush" : "",
		 vblk->features & VBUS_BLK_F_FUA ? " fua" : "",
		 vblk->features & VBUS_BLK_F_DISCARD ? " discard" : "",
		 vblk->features & VBUS_BLK_F_WRITE_ZEROES ? " write-zeroes" : "",
		 vblk->serial[0] ? vblk->serial : "(none)");
	return 0;

out_close:
	vbus_blk_stop(vblk);
	cancel_work_sync(&vblk->fail_work);
	vbus_blk_rings_free(vblk);
	if (vblk->close_state != VBUS_BLK_CLOSED)
		return ret;	/* vblk stays: the host may still use it */
out_ida:
	ida_free(&vbus_blk_ida, vblk->index);
out_free:
	kfree(vblk);
	return ret;
}

static int vbus_blk_remove(struct vbus_device_proxy *vdev)
{
	struct vbus_blk *vblk = vdev->priv;

	if (!vblk)
		return 0;

	vbus_blk_stop(vblk);
	vbus_blk_link_stop(vblk);
	/* whatever reaches queue_rq now fails at once; nothing is in flight */
	del_gendisk(vblk->disk);
	cancel_work_sync(&vblk->fail_work);
	vbus_blk_rings_free(vblk);
	vdev->priv = NULL;
	if (vblk->close_state != VBUS_BLK_CLOSED)
		return 0;	/* pdus and rings stay: the host may use them */

	blk_mq_free_tag_set(&vblk->tag_set);
	put_disk(vblk->disk);
	ida_free(&vbus_blk_ida, vblk->index);
	kfree(vblk);
	return 0;
}

static struct vbus_driver_ops vbus_blk_driver_ops = {
	.probe		= vbus_blk_probe,
	.remove		= vbus_blk_remove,
	.disconnect	= vbus_blk_disconnect,
	.reconnect	= vbus_blk_reconnect,
};

static struct vbus_driver vbus_blk_driver = {
	.type	= VBUS_BLK_TYPE,
	.owner	= THIS_MODULE,
	.ops	= &vbus_blk_driver_ops,
};

static bool vbus_blk_params_ok(void)
{
	if (!queue_depth || queue_depth > VBUS_BLK_MAX_DEPTH ||
	    !is_power_of_2(queue_depth)) {
		pr_err(VBUS_BLK_DRV_NAME ": queue_depth=%u: must be a power of two, 1..%u\n",
		       queue_depth, VBUS_BLK_MAX_DEPTH);
		return false;
	}
	if (nr_queues > VBUS_BLK_MAX_QUEUES) {
		pr_err(VBUS_BLK_DRV_NAME ": nr_queues=%u: must be 0..%u\n",
		       nr_queues, VBUS_BLK_MAX_QUEUES);
		return false;
	}
	if (poll_queues >= VBUS_BLK_MAX_QUEUES) {
		pr_err(VBUS_BLK_DRV_NAME ": poll_queues=%u: must be 0..%u\n",
		       poll_queues, VBUS_BLK_MAX_QUEUES - 1);
		return false;
	}
	if (!max_segments || max_segments > VBUS_BLK_MAX_SEGS) {
		pr_err(VBUS_BLK_DRV_NAME ": max_segments=%u: must be 1..%u\n",
		       max_segments, VBUS_BLK_MAX_SEGS);
		return false;
	}
	return true;
}

static int __init vbus_blk_init(void)
{
	int ret;

	if (!vbus_blk_params_ok())
		return -EINVAL;

	vbus_blk_major = register_blkdev(0, VBUS_BLK_DISK_NAME);
	if (vbus_blk_major < 0)
		return vbus_blk_major;

	ret = vbus_driver_register(&vbus_blk_driver);
	if (ret)
		unregister_blkdev(vbus_blk_major, VBUS_BLK_DISK_NAME);
	return ret;
}

static void __exit vbus_blk_exit(void)
{
	vbus_driver_unregister(&vbus_blk_driver);
	unregister_blkdev(vbus_blk_major, VBUS_BLK_DISK_NAME);
	ida_destroy(&vbus_blk_ida);
}

module_init(vbus_blk_init);
module_exit(vbus_blk_exit);

MODULE_DESCRIPTION("vbus-blk paravirtual disk driver");
MODULE_LICENSE("GPL");
MODULE_VERSION(VBUS_BLK_DRV_VERSION);
/* the bus's uevent sets MODALIAS=vbus:<type> */
MODULE_ALIAS("vbus:" VBUS_BLK_TYPE);
