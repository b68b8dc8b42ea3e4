// SPDX-License-Identifier: GPL-2.0
/*
 * vbus_blk - a paravirtual disk on the vbus: the guest driver of the
 * host's "vbus-blk" device. Disks appear as /dev/vbdN.
 *
 * Bring-up (docs/devices/vbus_blk.md): DEVOPEN, GETCONFIG,
 * NEGOTIATE and one IOQ ring per blk-mq hardware queue (the steps a
 * reconnect repeats: vbus_blk_setup.c), then the gendisk.
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
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/hdreg.h>
#include <linux/idr.h>
#include <linux/slab.h>

#include "vbus_blk_drv.h"

#define VBUS_BLK_DRV_VERSION	"1"

static int vbus_blk_major;
static DEFINE_IDA(vbus_blk_ida);

/* No geometry from the host: virtio-blk's default (64 heads, 32 sectors). */
static int vbus_blk_getgeo(struct block_device *bd, struct hd_geometry *geo)
{
	geo->heads = 1 << 6;
	geo->sectors = 1 << 5;
	geo->cylinders = get_capacity(bd->bd_disk) >> 11;
	return 0;
}

static const struct block_device_operations vbus_blk_fops = {
	.owner	= THIS_MODULE,
	.getgeo	= vbus_blk_getgeo,
};

static ssize_t serial_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct vbus_blk *vblk = dev_to_disk(dev)->private_data;

	return sysfs_emit(buf, "%s\n", vblk->serial);
}
static DEVICE_ATTR_RO(serial);

/* as virtio-blk's cache_type: index = write back */
static const char *const vbus_blk_cache_types[] = {
	"write through", "write back"
};

/*
 * The host has a volatile cache (F_FLUSH): "write back" sends flushes,
 * "write through" makes every write FUA instead (so it needs F_FUA; the
 * attribute is read-only without). Without F_FLUSH it is write through.
 */
static void vbus_blk_cache_mode(struct vbus_blk *vblk, bool writeback)
{
	WRITE_ONCE(vblk->write_through, !writeback);
	blk_queue_write_cache(vblk->disk->queue, writeback,
			      writeback && (vblk->features & VBUS_BLK_F_FUA));
}

static ssize_t cache_type_store(struct device *dev,
				struct device_attribute *attr,
				const char *buf, size_t count)
{
	struct vbus_blk *vblk = dev_to_disk(dev)->private_data;
	u32 both = VBUS_BLK_F_FLUSH | VBUS_BLK_F_FUA;
	int i = sysfs_match_string(vbus_blk_cache_types, buf);

	if (i < 0)
		return i;
	/* read-only (0444) then; kernfs refuses the write before this */
	if ((vblk->features & both) != both)
		return -EINVAL;
	vbus_blk_cache_mode(vblk, i);
	return count;
}

static ssize_t cache_type_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	struct gendisk *disk = dev_to_disk(dev);
	bool writeback = test_bit(QUEUE_FLAG_WC, &disk->queue->queue_flags);

	return sysfs_emit(buf, "%s\n", vbus_blk_cache_types[writeback]);
}
static DEVICE_ATTR_RW(cache_type);

static struct attribute *vbus_blk_attrs[] = {
	&dev_attr_serial.attr,
	&dev_attr_cache_type.attr,
	NULL,
};

static umode_t vbus_blk_attrs_are_visible(struct kobject *kobj,
					  struct attribute *a, int n)
{
	struct gendisk *disk = dev_to_disk(kobj_to_dev(kobj));
	struct vbus_blk *vblk = disk->private_data;
	u32 both = VBUS_BLK_F_FLUSH | VBUS_BLK_F_FUA;

	if (a == &dev_attr_cache_type.attr &&
	    (vblk->features & both) != both)
		return 0444;
	return a->mode;
}

static const struct attribute_group vbus_blk_attr_group = {
	.attrs = vbus_blk_attrs,
	.is_visible = vbus_blk_attrs_are_visible,
};

static const struct attribute_group *vbus_blk_groups[] = {
	&vbus_blk_attr_group,
	NULL,
};

/*
 * The request-slot maps and the request headers, one of each per queue:
 * they outlive a host restart (a new host must offer the same
 * max_segments, so the header size stays).
 */
static int vbus_blk_queues_alloc(struct vbus_blk *vblk)
{
	unsigned int q;

	vblk->req_stride = ALIGN(VBUS_BLK_REQ_SIZE(vblk->max_segs), 8);
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
		vq->reqs = dma_alloc_coherent(vbus_blk_dma_dev(vblk),
					      vblk->queue_depth *
					      vblk->req_stride,
					      &vq->reqs_dma, GFP_KERNEL);
		if (!vq->reqs)
			return -ENOMEM;
	}
	return 0;
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
	for (q = 0; q < vblk->nr_queues; q++) {
		struct vbus_blk_queue *vq = &vblk->queues[q];

		kfree(vq->slots);
		if (vq->reqs)
			dma_free_coherent(vbus_blk_dma_dev(vblk),
					  vblk->queue_depth * vblk->req_stride,
					  vq->reqs, vq->reqs_dma);
	}
	kfree(vblk->queues);
	vblk->queues = NULL;
}

/* GETTOPOLOGY's hints (all 0 from a host without F_TOPOLOGY) */
static void vbus_blk_set_topology(struct vbus_blk *vblk,
				  struct request_queue *q)
{
	const struct vbus_blk_topology *t = &vblk->topo;

	if (t->alignment_offset)
		blk_queue_alignment_offset(q, t->alignment_offset);
	if (t->io_min)
		blk_queue_io_min(q, t->io_min);
	if (t->io_opt)
		blk_queue_io_opt(q, t->io_opt);
	if (t->flags & VBUS_BLK_TOPO_NONROT)
		blk_queue_flag_set(QUEUE_FLAG_NONROT, q);
}

static void vbus_blk_set_limits(struct vbus_blk *vblk, struct gendisk *disk)
{
	const struct vbus_blk_config *c = &vblk->config;
	struct request_queue *q = disk->queue;
	u32 f = vblk->features;

	blk_queue_logical_block_size(q, c->logical_block_size);
	blk_queue_physical_block_size(q, c->physical_block_size);
	blk_queue_max_segments(q, vblk->max_segs);
	/* a segment is one mapping: swiotlb bounces at most 256 KiB at once */
	blk_queue_max_segment_size(q, min_t(size_t, c->max_segment_size,
				   dma_max_mapping_size(vbus_blk_dma_dev(vblk))));
	blk_queue_max_hw_sectors(q, c->max_sectors);
	blk_queue_write_cache(q, f & VBUS_BLK_F_FLUSH,
			      (f & VBUS_BLK_F_FLUSH) && (f & VBUS_BLK_F_FUA));
	if (f & VBUS_BLK_F_DISCARD) {
		/* a range list (F_DISCARD_RANGES), else the header's one */
		blk_queue_max_discard_segments(q, max(vblk->max_discard_ranges,
						      1u));
		blk_queue_max_discard_sectors(q, c->max_discard_sectors);
		q->limits.discard_granularity = c->discard_granularity;
	}
	if (f & VBUS_BLK_F_WRITE_ZEROES)
		blk_queue_max_write_zeroes_sectors(q,
						   c->max_write_zeroes_sectors);
	vbus_blk_set_topology(vblk, q);
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
	set->cmd_size = vbus_blk_cmd_size(vblk->max_segs,
					  vblk->max_discard_ranges);
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
	vbus_blk_resize_init(vblk);

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
		ret = vbus_blk_get_topology(vblk);
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
		 "%s: %llu sectors (%u-byte blocks), %u queue(s) of %u (%u polled), %u segs,%s%s%s%s%s%s%s serial %s\n",
		 vblk->disk->disk_name, vblk->config.capacity,
		 vblk->config.logical_block_size, vblk->nr_queues,
		 vblk->queue_depth, vblk->nr_poll_queues, vblk->max_segs,
		 vblk->features & VBUS_BLK_F_RO ? " ro" : "",
		 vblk->features & VBUS_BLK_F_FLUSH ? " flush" : "",
		 vblk->features & VBUS_BLK_F_FUA ? " fua" : "",
		 vblk->features & VBUS_BLK_F_DISCARD_RANGES ? " discard-ranges" :
		 vblk->features & VBUS_BLK_F_DISCARD ? " discard" : "",
		 vblk->features & VBUS_BLK_F_WRITE_ZEROES ? " write-zeroes" : "",
		 vblk->config.features & VBUS_BLK_F_TOPOLOGY ? " topology" : "",
		 vblk->evq ? " resize" : "",
		 vblk->serial[0] ? vblk->serial : "(none)");
	return 0;

out_close:
	vbus_blk_stop(vblk);
	cancel_work_sync(&vblk->fail_work);
	vbus_blk_rings_free(vblk);
	vbus_blk_resize_stop(vblk);
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
	vbus_blk_resize_stop(vblk);
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
