// SPDX-License-Identifier: GPL-2.0
/*
 * vbus-proxy: the guest's bus for the devices a host publishes.
 *
 * A bridge (vbus_pcibridge.ko) registers one vbus_device_proxy per device
 * the host announces (DEVADD) and unregisters it on DEVDROP; drivers bind
 * by type string. The bus knows nothing about the transport: every verb
 * goes through the device's ops, which the bridge provides.
 *
 * Differences from the 2009 series: bus registration errors are returned
 * instead of BUG(), the root device is a real (released) root device,
 * the bus remove callback runs the driver's remove op (the seed never
 * called it), uevents carry the type, and "type"/"id" are sysfs
 * attributes so userspace can see what the host published.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/log2.h>
#include <linux/device.h>
#include <linux/dma-mapping.h>
#include <vbus/vbus_driver.h>

#define VBUS_PROXY_NAME "vbus-proxy"

static struct device *vbus_proxy_root;

static struct vbus_driver *to_vbus_drv(struct device_driver *drv)
{
	return container_of(drv, struct vbus_driver, drv);
}

static int vbus_proxy_match(struct device *dev, struct device_driver *drv)
{
	struct vbus_device_proxy *vdev = to_vbus_device_proxy(dev);
	struct vbus_driver *vdrv = to_vbus_drv(drv);

	return vdev->type && vdrv->type && !strcmp(vdev->type, vdrv->type);
}

static int vbus_proxy_probe(struct device *dev)
{
	struct vbus_driver *vdrv = to_vbus_drv(dev->driver);

	if (!vdrv->ops || !vdrv->ops->probe)
		return -ENODEV;
	return vdrv->ops->probe(to_vbus_device_proxy(dev));
}

static void vbus_proxy_remove(struct device *dev)
{
	struct vbus_driver *vdrv = to_vbus_drv(dev->driver);
	int ret;

	if (!vdrv->ops || !vdrv->ops->remove)
		return;
	/* The device goes either way; an error is only worth a line. */
	ret = vdrv->ops->remove(to_vbus_device_proxy(dev));
	if (ret)
		dev_warn(dev, "driver %s remove failed: %d\n", vdrv->type, ret);
}

static int vbus_proxy_uevent(struct device *dev, struct kobj_uevent_env *env)
{
	struct vbus_device_proxy *vdev = to_vbus_device_proxy(dev);
	int ret;

	ret = add_uevent_var(env, "VBUS_TYPE=%s", vdev->type ?: "");
	if (ret)
		return ret;
	ret = add_uevent_var(env, "VBUS_ID=%llu", vdev->id);
	if (ret)
		return ret;
	/* Lets udev/modprobe load a driver with MODULE_ALIAS("vbus:TYPE"). */
	return add_uevent_var(env, "MODALIAS=vbus:%s", vdev->type ?: "");
}

static ssize_t type_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%s\n", to_vbus_device_proxy(dev)->type ?: "");
}
static DEVICE_ATTR_RO(type);

static ssize_t id_show(struct device *dev, struct device_attribute *attr,
		       char *buf)
{
	return sysfs_emit(buf, "%llu\n", to_vbus_device_proxy(dev)->id);
}
static DEVICE_ATTR_RO(id);

static ssize_t modalias_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "vbus:%s\n",
			  to_vbus_device_proxy(dev)->type ?: "");
}
static DEVICE_ATTR_RO(modalias);

static struct attribute *vbus_proxy_dev_attrs[] = {
	&dev_attr_type.attr,
	&dev_attr_id.attr,
	&dev_attr_modalias.attr,
	NULL,
};
ATTRIBUTE_GROUPS(vbus_proxy_dev);

static struct bus_type vbus_proxy_bus = {
	.name = VBUS_PROXY_NAME,
	.match = vbus_proxy_match,
	.probe = vbus_proxy_probe,
	.remove = vbus_proxy_remove,
	.uevent = vbus_proxy_uevent,
	.dev_groups = vbus_proxy_dev_groups,
};

static void vbus_device_proxy_release(struct device *dev)
{
	struct vbus_device_proxy *vdev = to_vbus_device_proxy(dev);

	/* The bridge owns the memory (it embeds the proxy). */
	if (vdev->ops && vdev->ops->release)
		vdev->ops->release(vdev);
}

int vbus_device_proxy_register(struct vbus_device_proxy *vdev)
{
	struct device *dev = &vdev->dev;
	int ret;

	device_initialize(dev);
	if (!dev->parent)
		dev->parent = vbus_proxy_root;
	dev->bus = &vbus_proxy_bus;
	dev->release = vbus_device_proxy_release;

	if (!dev_name(dev)) {
		ret = dev_set_name(dev, "%llu", vdev->id);
		if (ret)
			return ret;
	}
	return device_add(dev);
}
EXPORT_SYMBOL_GPL(vbus_device_proxy_register);

void vbus_device_proxy_unregister(struct vbus_device_proxy *vdev)
{
	device_unregister(&vdev->dev);
}
EXPORT_SYMBOL_GPL(vbus_device_proxy_unregister);

int vbus_driver_register(struct vbus_driver *vdrv)
{
	if (!vdrv->type || !vdrv->ops)
		return -EINVAL;

	vdrv->drv.bus = &vbus_proxy_bus;
	vdrv->drv.name = vdrv->type;
	vdrv->drv.owner = vdrv->owner;

	return driver_register(&vdrv->drv);
}
EXPORT_SYMBOL_GPL(vbus_driver_register);

void vbus_driver_unregister(struct vbus_driver *vdrv)
{
	driver_unregister(&vdrv->drv);
}
EXPORT_SYMBOL_GPL(vbus_driver_unregister);

/*
 * ---- driver-side IOQ helper (seed 006) ----
 *
 * The ring lives in one dma_alloc_coherent() allocation on the proxy's
 * dma_dev (whole pages: nothing private shares them; the host reaches the
 * ring at its DMA address); the ioq context is a separate allocation.
 * The ioq's single reference owns both; ioq_put() drops the signal
 * reference first (core/ioq.c) and then calls the release below.
 *
 * @signal is a reference of our own on the ring's signal, so that the
 * release can still reach the signal's deferred-notify tasklet after
 * ioq_put() dropped the ioq's (the bridge's SHMCLOSE may have dropped the
 * cookie table's before: then ours is the last one).
 */
struct vbus_driver_ioq {
	struct ioq ioq;
	struct ioq_ring_head *head;
	struct device *dma_dev;
	dma_addr_t dma;
	size_t len;
	struct shm_signal *signal;
};

/*
 * Process context: tasklet_kill() sleeps. The signal's descriptor lives in
 * the ring (head->signal), and its deferred notify (a tasklet) reads it and
 * calls the notifier in @ioq. A host that holds dirty=1 keeps that tasklet
 * rescheduling itself (the wakeup budget in core/shm_signal.c), also after
 * SHMCLOSE, so it is killed (and waited for, if running) before the ring
 * and the ioq go back to the allocator. Nothing schedules it again: the
 * driver closed the device first, so the bridge took the signal out of its
 * cookie table (no SHMSIGNAL dispatch reaches it), and the driver no longer
 * enables it. The bridge's free kills it once more before the signal goes.
 */
static void vbus_driver_ioq_release(struct ioq *ioq)
{
	struct vbus_driver_ioq *dioq = container_of(ioq, struct vbus_driver_ioq,
						    ioq);
	struct shm_signal *signal = dioq->signal;

	might_sleep();
	vbus_defer_cancel(&signal->deferred_notify);
	dma_free_coherent(dioq->dma_dev, dioq->len, dioq->head, dioq->dma);
	kfree(dioq);
	shm_signal_put(signal);
}

static const struct ioq_ops vbus_driver_ioq_ops = {
	.release = vbus_driver_ioq_release,
};

int vbus_driver_ioq_alloc(struct vbus_device_proxy *dev, int id, int prio,
			  size_t count, struct ioq **ioqp)
{
	struct vbus_driver_ioq *dioq;
	struct ioq_ring_head *head;
	struct shm_signal *signal = NULL;
	u32 ver = IOQ_RING_VER;
	dma_addr_t dma;
	size_t len;
	int ret;

	if (!dev->ops || !dev->ops->shm || !dev->dma_dev)
		return -EINVAL;
	if (!count || !is_power_of_2(count) || count > IOQ_RING_MAX_COUNT)
		return -EINVAL;

	len = IOQ_HEAD_DESC_SIZE(count);

	dioq = kzalloc(sizeof(*dioq), GFP_KERNEL);
	if (!dioq)
		return -ENOMEM;

	/* one DMA range; coherent: no syncs around the host's accesses */
	head = dma_alloc_coherent(dev->dma_dev, len, &dma, GFP_KERNEL);
	if (!head) {
		ret = -ENOMEM;
		goto err_head;
	}
	ret = ioq_ring_format(head, count);
	if (ret)
		goto err_format;

	ret = dev->ops->shm(dev, id, prio, head, dma, len, &head->signal,
			    &signal, 0);
	if (ret == -EPROTO) {
		/*
		 * A host that reads only ring v5 refused v6 (its ring check
		 * answered -EPROTO): lay the ring out again as v5 and offer
		 * that (docs/transport.md, "ring version").
		 */
		ver = IOQ_RING_VER_V5;
		ret = ioq_ring_format_ver(head, count, ver);
		if (ret)
			goto err_format;
		ret = dev->ops->shm(dev, id, prio, head, dma, len,
				    &head->signal, &signal, 0);
	}
	if (ret < 0)
		goto err_shm;
	if (!signal) {
		/* a bridge that succeeded without a signal broke the contract */
		ret = -EIO;
		goto err_format;
	}

	/*
	 * ioq_init_ver() takes over our reference on @signal. The version
	 * is the one we formatted, never head->ver: the host can write the
	 * ring now, and the bridge's cookie table holds the signal, whose
	 * descriptor is in @head, until the device closes.
	 */
	ret = ioq_init_ver(&dioq->ioq, &vbus_driver_ioq_ops,
			   ioq_locality_north, head, signal, count, ver);
	if (ret) {
		/*
		 * Not reachable (count and ver were checked above); were it
		 * so, the ring stays published: leak it rather than free
		 * memory the host and the cookie table still reach.
		 */
		shm_signal_put(signal);
		dev_err_ratelimited(&dev->dev,
				    "shm %d: ring init failed (%d), leaking its %zu-byte ring\n",
				    id, ret, len);
		kfree(dioq);
		return ret;
	}
	dioq->head = head;
	dioq->dma_dev = dev->dma_dev;
	dioq->dma = dma;
	dioq->len = len;
	dioq->signal = shm_signal_get(signal);
	*ioqp = &dioq->ioq;
	return 0;

err_shm:
	if (ret == -ETIMEDOUT) {
		/*
		 * The host never answered: it may have registered the ring
		 * and may still write it. Memory the host can write is never
		 * handed back to the allocator; leak it (rare, logged).
		 */
		dev_err_ratelimited(&dev->dev,
				    "shm %d: no answer, leaking its %zu-byte ring\n",
				    id, len);
		kfree(dioq);
		return ret;
	}
err_format:
	dma_free_coherent(dev->dma_dev, len, head, dma);
err_head:
	kfree(dioq);
	return ret;
}
EXPORT_SYMBOL_GPL(vbus_driver_ioq_alloc);

static int __init vbus_proxy_init(void)
{
	int ret;

	ret = bus_register(&vbus_proxy_bus);
	if (ret)
		return ret;

	vbus_proxy_root = root_device_register(VBUS_PROXY_NAME);
	if (IS_ERR(vbus_proxy_root)) {
		ret = PTR_ERR(vbus_proxy_root);
		bus_unregister(&vbus_proxy_bus);
		return ret;
	}
	return 0;
}

static void __exit vbus_proxy_exit(void)
{
	/* Bridges and drivers depend on us: none is left at this point. */
	root_device_unregister(vbus_proxy_root);
	bus_unregister(&vbus_proxy_bus);
}

module_init(vbus_proxy_init);
module_exit(vbus_proxy_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vbus-proxy: bus for host-published virtual devices");
MODULE_AUTHOR("vbus developers");
