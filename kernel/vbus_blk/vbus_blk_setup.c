// SPDX-License-Identifier: GPL-2.0
/*
 * vbus_blk bring-up steps that probe runs once and a reconnect repeats
 * (docs/devices/vbus_blk.md): GETCONFIG (checked here: nothing
 * the host says can make the block layer WARN), NEGOTIATE (features,
 * queues, ring size), one IOQ ring per blk-mq hardware queue (DEVSHM id =
 * queue index); with the module parameters that shape them.
 *
 * Called by vbus_blk_main.c (probe, remove) and vbus_blk_link.c
 * (reconnect); calls only down, into vbus_blk_io.c.
 */
#include <linux/moduleparam.h>
#include <linux/ctype.h>
#include <linux/log2.h>
#include <linux/rcupdate.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include "vbus_blk_drv.h"

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
static int vbus_blk_check_config(struct vbus_blk *vblk,
				 struct vbus_blk_config *c)
{
	const u32 known = VBUS_BLK_F_RO | VBUS_BLK_F_FLUSH | VBUS_BLK_F_FUA |
			  VBUS_BLK_F_DISCARD | VBUS_BLK_F_WRITE_ZEROES |
			  VBUS_BLK_F_TOPOLOGY | VBUS_BLK_F_RESIZE |
			  VBUS_BLK_F_DISCARD_RANGES;

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
	/* a list of one range is the header's; none, or no DISCARD: off */
	if (!(c->features & VBUS_BLK_F_DISCARD) || c->max_discard_ranges < 2)
		c->features &= ~VBUS_BLK_F_DISCARD_RANGES;
	if (!is_power_of_2(c->discard_granularity) ||
	    c->discard_granularity < c->logical_block_size)
		c->discard_granularity = c->logical_block_size;
	/* whole logical blocks only */
	c->capacity &= ~(u64)((c->logical_block_size >>
			       VBUS_BLK_SECTOR_SHIFT) - 1);
	return 0;
}

/* GETCONFIG into @out, checked (vblk->config untouched) */
int vbus_blk_read_config(struct vbus_blk *vblk, struct vbus_blk_config *out)
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
		memcpy(out, c, sizeof(*c));	/* read once */
	kfree(c);
	return ret < 0 ? ret : vbus_blk_check_config(vblk, out);
}

int vbus_blk_get_config(struct vbus_blk *vblk)
{
	int ret = vbus_blk_read_config(vblk, &vblk->config);

	if (!ret)
		vbus_blk_set_serial(vblk);
	return ret;
}

/* A size in bytes the block layer takes as io_min: 0 when it is not one. */
static u32 vbus_blk_topo_size(const struct vbus_blk *vblk, u32 v, bool pow2)
{
	if (v % vblk->config.logical_block_size || v > SZ_1G ||
	    (pow2 && !is_power_of_2(v)))
		return 0;
	return v;
}

/*
 * GETTOPOLOGY (only a host that offers F_TOPOLOGY has it; an older one
 * answers -EINVAL): hints, so a value that makes no sense is dropped,
 * and a failed call leaves them all 0 (the block layer's defaults).
 */
int vbus_blk_get_topology(struct vbus_blk *vblk)
{
	struct vbus_device_proxy *vdev = vblk->vdev;
	struct vbus_blk_topology *t, *o = &vblk->topo;
	int ret;

	memset(o, 0, sizeof(*o));
	if (!(vblk->config.features & VBUS_BLK_F_TOPOLOGY))
		return 0;
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	ret = vdev->ops->call(vdev, VBUS_BLK_FUNC_GETTOPOLOGY, t, sizeof(*t),
			      0);
	if (ret < 0)
		dev_warn(&vdev->dev, "GETTOPOLOGY failed: %d\n", ret);
	else
		memcpy(o, t, sizeof(*t));	/* read once */
	kfree(t);
	o->io_min = vbus_blk_topo_size(vblk, o->io_min, true);
	o->io_opt = vbus_blk_topo_size(vblk, o->io_opt, false);
	if (o->alignment_offset >= vblk->config.physical_block_size ||
	    o->alignment_offset % vblk->config.logical_block_size)
		o->alignment_offset = 0;
	o->flags &= VBUS_BLK_TOPO_NONROT;
	return 0;
}

/*
 * The queues probe asks for: the parameter, or one per online CPU, plus
 * the poll queues.
 */
u32 vbus_blk_want_queues(const struct vbus_blk_config *c)
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
	vblk->max_discard_ranges =
		vblk->features & VBUS_BLK_F_DISCARD_RANGES ?
		min_t(u32, c->max_discard_ranges, VBUS_BLK_DISCARD_RANGES) : 0;
	/* polled I/O gets what is left once one ring serves the rest */
	vblk->nr_poll_queues = min(poll_queues, vblk->nr_queues - 1);
	ret = 0;
out:
	kfree(n);
	return ret;
}

/* The events ring's signal: the host changed the capacity. */
static void vbus_blk_events_notify(struct ioq_notifier *n)
{
	struct vbus_blk *vblk = container_of(n, struct vbus_blk,
					     evq_notifier);

	/* process context reads it (a hypercall); a storm coalesces */
	schedule_work(&vblk->config_work);
}

/*
 * F_RESIZE granted: the events ring. Without it (a failure here) the
 * disk works on and sees a new size only at a reconnect: not fatal.
 */
static void vbus_blk_events_open(struct vbus_blk *vblk)
{
	struct ioq *ioq;
	int ret;

	if (!(vblk->features & VBUS_BLK_F_RESIZE))
		return;
	ret = vbus_driver_ioq_alloc(vblk->vdev, VBUS_BLK_SHM_EVENTS, 0,
				    VBUS_BLK_EVENTS_COUNT, &ioq);
	if (ret < 0) {
		dev_warn(&vblk->vdev->dev,
			 "events ring: DEVSHM failed: %d; resizes are seen at the next reconnect\n",
			 ret);
		return;
	}
	vblk->evq_notifier.signal = vbus_blk_events_notify;
	ioq->notifier = &vblk->evq_notifier;
	vblk->evq = ioq;
	ioq_notify_enable(ioq, 0);
}

/*
 * One request ring per queue, registered as DEVSHM id = queue index
 * (probe, and again for each new host), and the events ring. The device
 * must be open.
 */
int vbus_blk_rings_open(struct vbus_blk *vblk)
{
	struct ioq *ioq;
	unsigned int q;
	unsigned long flags;
	int ret;

	vbus_blk_events_open(vblk);
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
		vq->unpublished = 0;
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

	if (vblk->evq)
		WRITE_ONCE(vblk->evq->notifier, NULL);
	if (vblk->queues)
		for (q = 0; q < vblk->nr_queues; q++)
			if (vblk->queues[q].ioq)
				WRITE_ONCE(vblk->queues[q].ioq->notifier, NULL);
	/* a notifier already running (eventq tasklet) finishes first */
	synchronize_rcu();
	ioq = vblk->evq;
	vblk->evq = NULL;
	if (ioq && vblk->close_state == VBUS_BLK_CLOSED)
		ioq_put(ioq);
	if (!vblk->queues)
		return;

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

/* The module parameters above, checked once at module load. */
bool vbus_blk_params_ok(void)
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
