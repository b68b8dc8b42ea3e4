// SPDX-License-Identifier: GPL-2.0
/*
 * The devices the host publishes: one vbus_device_proxy per DEVADD, with
 * ops that turn open/close/call/shm into hypercalls.
 *
 * DEVADD and DEVDROP arrive in the eventq tasklet and are carried out on
 * an ordered workqueue (registration sleeps; the order of an add and a
 * drop of the same id must hold). A device is on bridge->devices from its
 * successful registration until its drop; dropping unregisters it (the
 * bound driver's remove runs), closes it if the driver left it open, and
 * puts it; the memory goes in the proxy's release.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/ctype.h>
#include "pci_bridge.h"

struct vbus_pci_event_work {
	struct work_struct work;
	struct vbus_pci_bridge *bridge;
	u64 id;
	char type[VBUS_MAX_DEVTYPE_LEN];
};

static struct vbus_pci_device *to_pci_dev_proxy(struct vbus_device_proxy *v)
{
	return container_of(v, struct vbus_pci_device, vdev);
}

/* ---- vbus_device_proxy ops ---- */

static int vbus_pci_dev_open(struct vbus_device_proxy *vdev, int version,
			     int flags)
{
	struct vbus_pci_device *dev = to_pci_dev_proxy(vdev);
	struct vbus_pci_deviceopen params = {
		.devid = vdev->id,
		.version = version,
	};
	int ret;

	/* transport.md: DEVOPEN carries a 32-bit id */
	if (vdev->id > U32_MAX)
		return -EINVAL;

	mutex_lock(&dev->lock);
	if (dev->handle) {
		ret = -EBUSY;
		goto out;
	}
	ret = vbus_pci_hypercall(dev->bridge, VBUS_PCI_HC_DEVOPEN, &params,
				 sizeof(params), VBUS_PCI_HC_NO_DATAP, NULL, 0);
	if (ret < 0)
		goto out;
	if (!params.handle) {
		dev_err_ratelimited(&vdev->dev, "host opened with handle 0\n");
		ret = -EPROTO;
		goto out;
	}
	dev->handle = params.handle;
	ret = 0;
out:
	mutex_unlock(&dev->lock);
	return ret;
}

/* Under dev->lock. Detaches our signals whatever the host answers. */
static int vbus_pci_dev_close_locked(struct vbus_pci_device *dev)
{
	u64 handle = dev->handle;
	int ret;

	if (!handle)
		return -EINVAL;
	/*
	 * A new host never knew this handle (pci_bridge_epoch.c); a host
	 * that sent DEVDROP closed the device before it did (transport.md,
	 * "The event queue") and would refuse the handle: a DEVCLOSE either
	 * way would only be an error on both sides.
	 */
	if (dev->stale || READ_ONCE(dev->host_dropped)) {
		vbus_pci_signals_detach(dev->bridge, dev);
		dev->handle = 0;
		return 0;
	}

	/* DEVCLOSE closes all the device's shms on the host side */
	ret = vbus_pci_hypercall(dev->bridge, VBUS_PCI_HC_DEVCLOSE, &handle,
				 sizeof(handle), VBUS_PCI_HC_NO_DATAP, NULL, 0);
	if (ret < 0)
		dev_err_ratelimited(&dev->vdev.dev, "close failed: %d\n", ret);

	vbus_pci_signals_detach(dev->bridge, dev);
	dev->handle = 0;
	return ret < 0 ? ret : 0;
}

static int vbus_pci_dev_close(struct vbus_device_proxy *vdev, int flags)
{
	struct vbus_pci_device *dev = to_pci_dev_proxy(vdev);
	int ret;

	mutex_lock(&dev->lock);
	ret = vbus_pci_dev_close_locked(dev);
	mutex_unlock(&dev->lock);
	return ret;
}

static int vbus_pci_dev_shm(struct vbus_device_proxy *vdev, int id, int prio,
			    void *ptr, dma_addr_t dma, size_t len,
			    struct shm_signal_desc *sdesc,
			    struct shm_signal **signal, int flags)
{
	struct vbus_pci_device *dev = to_pci_dev_proxy(vdev);
	struct vbus_pci_signal *sig = NULL;
	struct vbus_pci_deviceshm params = {
		.id = id,
		.len = len,
		.flags = flags,
		.signal.offset = VBUS_PCI_SHM_NO_SIGNAL,
		.signal.prio = prio,
	};
	u32 vector = 0;		/* ours: the host may rewrite params */
	int ret;

	if (!ptr || !len || len > U32_MAX)
		return -EINVAL;
	/* the driver's coherent allocation on our PCI device (vdev.dma_dev) */
	params.datap = dma;

	if (signal) {
		/* the descriptor must sit inside the region, formatted */
		if (!sdesc || (void *)sdesc < ptr ||
		    (void *)sdesc + sizeof(*sdesc) > ptr + len)
			return -EINVAL;
		if (shm_signal_desc_check(sdesc))
			return -EINVAL;
		sig = vbus_pci_signal_alloc(dev, sdesc);
		if (!sig)
			return -ENOMEM;
		ret = vbus_pci_signal_reserve(sig);
		if (ret) {
			shm_signal_put(&sig->signal);
			return ret;
		}
		params.signal.offset = (void *)sdesc - ptr;
		params.signal.cookie = sig->cookie;
		vector = vbus_pci_qvec_pick(dev, id);
		params.vector = vector;
	}

	mutex_lock(&dev->lock);
	if (!dev->handle) {
		ret = -EINVAL;
		goto err;
	}
	params.devh = dev->handle;
	ret = vbus_pci_hypercall(dev->bridge, VBUS_PCI_HC_DEVSHM, &params,
				 sizeof(params), VBUS_PCI_HC_NO_DATAP, NULL, 0);
	if (ret < 0)
		goto err;
	if (sig && (ret < 1 || ret >= VBUS_PCI_MAX_SIGNALS)) {
		dev_err_ratelimited(&vdev->dev,
				    "shm %d: host gave signal handle %d\n",
				    id, ret);
		ret = -EPROTO;
		goto err;
	}
	if (sig) {
		vbus_pci_signal_publish(sig, ret, vector);
		*signal = &sig->signal;	/* the caller's reference */
	}
	mutex_unlock(&dev->lock);
	return 0;

err:
	mutex_unlock(&dev->lock);
	if (sig) {
		vbus_pci_signal_unreserve(sig);
		shm_signal_put(&sig->signal);
	}
	return ret;
}

static int vbus_pci_dev_call(struct vbus_device_proxy *vdev, u32 func,
			     void *data, size_t len, int flags)
{
	struct vbus_pci_device *dev = to_pci_dev_proxy(vdev);
	struct vbus_pci_devicecall params = {
		.func = func,
		.flags = flags,
	};
	int ret;

	if (len > U32_MAX || (len && !data))
		return -EINVAL;
	params.len = data ? len : 0;

	mutex_lock(&dev->lock);
	if (!dev->handle) {
		ret = -EINVAL;
		goto out;
	}
	if (READ_ONCE(dev->host_dropped)) {
		/* the host closed the device and forgot its handle */
		ret = -ENODEV;
		goto out;
	}
	params.devh = dev->handle;
	/* the data goes through the hypercall's bounce buffer */
	ret = vbus_pci_hypercall(dev->bridge, VBUS_PCI_HC_DEVCALL, &params,
				 sizeof(params),
				 offsetof(struct vbus_pci_devicecall, datap),
				 data, params.len);
out:
	mutex_unlock(&dev->lock);
	return ret;
}

static void vbus_pci_dev_release(struct vbus_device_proxy *vdev)
{
	struct vbus_pci_device *dev = to_pci_dev_proxy(vdev);
	struct vbus_pci_bridge *b = dev->bridge;

	kfree(dev);
	/*
	 * The bridge waits for this before it frees itself. complete() is
	 * done with @b when the waiter can return (it takes the wait lock).
	 */
	if (atomic_dec_and_test(&b->ndevs))
		complete(&b->devs_gone);
}

static const struct cpumask *
vbus_pci_dev_queue_affinity(struct vbus_device_proxy *vdev, int id)
{
	return vbus_pci_qvec_affinity(to_pci_dev_proxy(vdev), id);
}

static struct vbus_device_proxy_ops vbus_pci_dev_ops = {
	.open = vbus_pci_dev_open,
	.close = vbus_pci_dev_close,
	.shm = vbus_pci_dev_shm,
	.call = vbus_pci_dev_call,
	.queue_affinity = vbus_pci_dev_queue_affinity,
	.release = vbus_pci_dev_release,
};

/* ---- DEVADD / DEVDROP ---- */

static struct vbus_pci_device *find_locked(struct vbus_pci_bridge *b, u64 id)
{
	struct vbus_pci_device *dev;

	lockdep_assert_held(&b->dev_lock);
	list_for_each_entry(dev, &b->devices, node)
		if (dev->vdev.id == id)
			return dev;
	return NULL;
}

/* Unregister (driver remove runs), close what the driver left open, put. */
static void vbus_pci_device_drop(struct vbus_pci_device *dev)
{
	get_device(&dev->vdev.dev);
	vbus_device_proxy_unregister(&dev->vdev);

	mutex_lock(&dev->lock);
	if (dev->handle)
		vbus_pci_dev_close_locked(dev);
	mutex_unlock(&dev->lock);

	put_device(&dev->vdev.dev);
}

static bool type_ok(const char *type)
{
	const char *p;

	if (!*type)
		return false;
	for (p = type; *p; p++)
		if (!isgraph(*p))
			return false;
	return true;
}

/* ---- host restarts (docs/transport.md, "Host restarts") ---- */

static struct vbus_driver *bound_driver(struct vbus_pci_device *dev)
{
	struct device_driver *drv = dev->vdev.dev.driver;

	return drv ? to_vbus_driver(drv) : NULL;
}

/*
 * Tell the bound driver, once per outage, that its rings are going: it
 * takes back what it posted (its disconnect op).
 */
static void vbus_pci_dev_tell_driver(struct vbus_pci_device *dev)
{
	struct vbus_driver *drv;

	if (dev->disconnected)
		return;
	dev->disconnected = true;
	device_lock(&dev->vdev.dev);
	drv = bound_driver(dev);
	if (drv && drv->ops->disconnect)
		drv->ops->disconnect(&dev->vdev);
	device_unlock(&dev->vdev.dev);
}

/*
 * The host forgot everything of @dev: its driver lets go of the shms
 * (once per outage), then the handle and signals are forgotten without
 * asking the host.
 */
static void vbus_pci_dev_disconnect(struct vbus_pci_device *dev)
{
	mutex_lock(&dev->lock);
	WRITE_ONCE(dev->stale, true);
	mutex_unlock(&dev->lock);

	vbus_pci_dev_tell_driver(dev);

	mutex_lock(&dev->lock);
	if (dev->handle) {
		vbus_pci_signals_detach(dev->bridge, dev);
		dev->handle = 0;
	}
	mutex_unlock(&dev->lock);
}

void vbus_pci_devices_disconnect(struct vbus_pci_bridge *b)
{
	struct vbus_pci_device *dev;

	mutex_lock(&b->dev_lock);
	if (!b->dying)
		list_for_each_entry(dev, &b->devices, node) {
			dev->announced = false;
			vbus_pci_dev_disconnect(dev);
		}
	mutex_unlock(&b->dev_lock);
}

/*
 * The driver's reconnect op: 0 kept, else remove + probe. A device whose
 * probe failed earlier (no driver) gets another probe.
 */
static int vbus_pci_dev_reconnect(struct vbus_pci_device *dev)
{
	struct vbus_driver *drv;
	int ret = 0;

	device_lock(&dev->vdev.dev);
	drv = bound_driver(dev);
	if (drv)
		ret = drv->ops->reconnect ? drv->ops->reconnect(&dev->vdev) :
		      -EOPNOTSUPP;
	device_unlock(&dev->vdev.dev);
	if (!drv && device_attach(&dev->vdev.dev) < 0)
		dev_warn_ratelimited(&dev->vdev.dev, "no driver could bind\n");
	return ret;
}

/*
 * A failure that is the host's, not the device's: it went away or was
 * replaced again while we reconnected. The next epoch tries again.
 */
static bool host_moved(struct vbus_pci_bridge *b, int ret)
{
	return ret == -ENOTCONN || ret == -ETIMEDOUT ||
	       READ_ONCE(b->host_down) ||
	       READ_ONCE(b->shm->host_epoch) != READ_ONCE(b->epoch);
}

/* Take @dev off the bridge's list and drop it, as a DEVDROP would. */
static void vbus_pci_dev_unlist_drop(struct vbus_pci_bridge *b,
				     struct vbus_pci_device *dev)
{
	mutex_lock(&b->dev_lock);
	list_del_init(&dev->node);
	mutex_unlock(&b->dev_lock);
	vbus_pci_device_drop(dev);
}

/*
 * A new host announces @dev again (the caller marked it announced and
 * holds a reference). Same type: keep the proxy and let its
 * driver reconnect; true when that worked, or when the host moved again
 * (the device waits for the next one, still stale). Otherwise the old
 * device is dropped and the caller adds the announced one anew (its
 * driver probes).
 */
static bool vbus_pci_dev_readd(struct vbus_pci_bridge *b,
			       struct vbus_pci_device *dev, const char *type)
{
	int ret = -ENODEV;

	if (!strcmp(dev->type, type)) {
		mutex_lock(&dev->lock);
		WRITE_ONCE(dev->stale, false);
		mutex_unlock(&dev->lock);
		ret = vbus_pci_dev_reconnect(dev);
	}
	if (!ret) {
		mutex_lock(&b->dev_lock);
		dev->disconnected = false;
		mutex_unlock(&b->dev_lock);
		vbus_pci_stat_inc(b, reconnect);
		dev_info(&b->pdev->dev, "device %llu (%s) reconnected\n",
			 dev->vdev.id, dev->type);
		return true;
	}
	/* the driver's remove must not ask the host about the old handle */
	mutex_lock(&dev->lock);
	WRITE_ONCE(dev->stale, true);
	mutex_unlock(&dev->lock);
	if (ret != -ENODEV && host_moved(b, ret)) {
		dev_info_ratelimited(&b->pdev->dev,
				     "device %llu (%s): the host went again (%d); waiting\n",
				     dev->vdev.id, dev->type, ret);
		return true;
	}
	vbus_pci_stat_inc(b, reprobe);
	dev_info(&b->pdev->dev, "device %llu (%s): removed and added anew (%d)\n",
		 dev->vdev.id, dev->type, ret);
	vbus_pci_dev_unlist_drop(b, dev);
	return false;
}

/* After a re-attach: what the new host did not announce is gone. */
void vbus_pci_devices_drop_stale(struct vbus_pci_bridge *b)
{
	struct vbus_pci_device *dev, *tmp;
	LIST_HEAD(list);

	mutex_lock(&b->dev_lock);
	list_for_each_entry_safe(dev, tmp, &b->devices, node)
		if (!b->dying && READ_ONCE(dev->stale) && !dev->announced)
			list_move_tail(&dev->node, &list);
	mutex_unlock(&b->dev_lock);

	list_for_each_entry_safe(dev, tmp, &list, node) {
		list_del_init(&dev->node);
		dev_info(&b->pdev->dev, "device %llu not announced again: dropped\n",
			 dev->vdev.id);
		vbus_pci_device_drop(dev);
	}
}

/* The work item is done: one fewer pending (event_work_alloc()). */
static void event_work_free(struct vbus_pci_event_work *ew)
{
	atomic_dec(&ew->bridge->ev_pending);
	kfree(ew);
}

static void vbus_pci_devadd_work(struct work_struct *work)
{
	struct vbus_pci_event_work *ew = container_of(work,
						struct vbus_pci_event_work,
						work);
	struct vbus_pci_bridge *b = ew->bridge;
	struct vbus_pci_device *dev;
	int ret;

	mutex_lock(&b->dev_lock);
	if (b->dying)
		goto out_unlock;
	dev = find_locked(b, ew->id);
	if (dev && !READ_ONCE(dev->stale)) {
		dev_warn_ratelimited(&b->pdev->dev,
				     "DEVADD of id %llu twice ignored\n",
				     ew->id);
		goto out_unlock;
	}
	if (dev) {
		/*
		 * Past dev_lock the device is not ours to use without a
		 * reference: a re-attach's drop_stale (the reattach work, not
		 * this ordered queue) may drop it meanwhile. announced, set
		 * under the same hold, keeps drop_stale off it from here on.
		 */
		dev->announced = true;
		get_device(&dev->vdev.dev);
	}
	mutex_unlock(&b->dev_lock);
	if (dev) {
		bool kept = vbus_pci_dev_readd(b, dev, ew->type);

		put_device(&dev->vdev.dev);
		if (kept)
			goto out;
	}

	if (!type_ok(ew->type)) {
		vbus_pci_stat_inc(b, ev_bad);
		dev_warn_ratelimited(&b->pdev->dev,
				     "DEVADD of id %llu with a bad type ignored\n",
				     ew->id);
		goto out;
	}
	/* ndevs: the bridge's own count + proxies not yet released */
	if (atomic_read(&b->ndevs) > VBUS_PCI_MAX_DEVICES) {
		vbus_pci_stat_inc(b, ev_bad);
		dev_err_ratelimited(&b->pdev->dev,
				    "DEVADD of id %llu ignored: the bridge has %u devices already\n",
				    ew->id, VBUS_PCI_MAX_DEVICES);
		goto out;
	}

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev) {
		dev_err_ratelimited(&b->pdev->dev,
				    "DEVADD %llu: out of memory\n", ew->id);
		goto out;
	}
	dev->bridge = b;
	vbus_pci_qvec_dev_init(dev);
	mutex_init(&dev->lock);
	INIT_LIST_HEAD(&dev->node);
	strscpy(dev->type, ew->type, sizeof(dev->type));
	dev->vdev.type = dev->type;
	dev->vdev.id = ew->id;
	dev->vdev.ops = &vbus_pci_dev_ops;
	dev->vdev.dma_dev = &b->pdev->dev;
	atomic_inc(&b->ndevs);

	/* the bound driver's probe runs in here */
	ret = vbus_device_proxy_register(&dev->vdev);
	if (ret) {
		dev_err_ratelimited(&b->pdev->dev,
				    "cannot register device %llu (%s): %d\n",
				    ew->id, dev->type, ret);
		/* ends in vbus_pci_dev_release() */
		put_device(&dev->vdev.dev);
		goto out;
	}
	dev_info(&b->pdev->dev, "device %llu (%s) added\n", ew->id, dev->type);

	mutex_lock(&b->dev_lock);
	list_add_tail(&dev->node, &b->devices);
out_unlock:
	mutex_unlock(&b->dev_lock);
out:
	event_work_free(ew);
}

static void vbus_pci_devdrop_work(struct work_struct *work)
{
	struct vbus_pci_event_work *ew = container_of(work,
						struct vbus_pci_event_work,
						work);
	struct vbus_pci_bridge *b = ew->bridge;
	struct vbus_pci_device *dev;
	bool dying;

	mutex_lock(&b->dev_lock);
	dying = b->dying;
	dev = dying ? NULL : find_locked(b, ew->id);
	if (dev)
		list_del_init(&dev->node);
	mutex_unlock(&b->dev_lock);

	if (dev) {
		WRITE_ONCE(dev->host_dropped, true);
		vbus_pci_device_drop(dev);
		dev_info(&b->pdev->dev, "device %llu dropped\n", ew->id);
	} else if (!dying) {
		vbus_pci_stat_inc(b, ev_bad);
		dev_warn_ratelimited(&b->pdev->dev,
				     "DEVDROP of unknown id %llu ignored\n",
				     ew->id);
	}
	event_work_free(ew);
}

/*
 * From the eventq tasklet: no sleeping. Each DEVADD/DEVDROP costs a work
 * item until the ordered queue gets to it (registration is slow): a host
 * that floods them gets at most VBUS_PCI_MAX_PENDING_EVENTS queued, the
 * rest is dropped, counted and logged. An honest host never comes near:
 * a re-attach announces at most VBUS_PCI_MAX_DEVICES devices.
 */
static struct vbus_pci_event_work *event_work_alloc(struct vbus_pci_bridge *b,
						    u64 id, work_func_t fn)
{
	struct vbus_pci_event_work *ew;

	if (atomic_inc_return(&b->ev_pending) > VBUS_PCI_MAX_PENDING_EVENTS) {
		atomic_dec(&b->ev_pending);
		vbus_pci_stat_inc(b, ev_bad);
		dev_err_ratelimited(&b->pdev->dev,
				    "event for device %llu dropped: %u device events wait already\n",
				    id, VBUS_PCI_MAX_PENDING_EVENTS);
		return NULL;
	}
	ew = kzalloc(sizeof(*ew), GFP_ATOMIC);
	if (!ew) {
		atomic_dec(&b->ev_pending);
		dev_err_ratelimited(&b->pdev->dev,
				    "event for device %llu lost: out of memory\n",
				    id);
		return NULL;
	}
	INIT_WORK(&ew->work, fn);
	ew->bridge = b;
	ew->id = id;
	return ew;
}

void vbus_pci_queue_devadd(struct vbus_pci_bridge *b,
			   const struct vbus_pci_add_event *ev)
{
	struct vbus_pci_event_work *ew;

	vbus_pci_stat_inc(b, devadd);
	ew = event_work_alloc(b, ev->id, vbus_pci_devadd_work);
	if (!ew)
		return;
	/* the host need not terminate it: we do, at 127 bytes */
	memcpy(ew->type, ev->type, sizeof(ew->type));
	ew->type[sizeof(ew->type) - 1] = '\0';
	queue_work(b->wq, &ew->work);
}

void vbus_pci_queue_devdrop(struct vbus_pci_bridge *b, u64 id)
{
	struct vbus_pci_event_work *ew;

	vbus_pci_stat_inc(b, devdrop);
	ew = event_work_alloc(b, id, vbus_pci_devdrop_work);
	if (ew)
		queue_work(b->wq, &ew->work);
}

/* No device is added or dropped after this (remove, shutdown). */
static void vbus_pci_devices_freeze(struct vbus_pci_bridge *b)
{
	mutex_lock(&b->dev_lock);
	b->dying = true;
	mutex_unlock(&b->dev_lock);
	/* a DEVADD already past its dying check finishes and lists itself */
	flush_workqueue(b->wq);
}

/*
 * Shutdown (reboot, poweroff, kexec): close every device, so the host lets
 * go of its shms and of every buffer posted on them (DEVCLOSE), without
 * unregistering anything: the drivers' remove would tear down disks the
 * system may still have mounted read-only. A driver that still posts
 * finds its signals detached (inject is a no-op) and its calls refused
 * (no handle). Lock order: dev_lock, then dev->lock (as in disconnect).
 */
void vbus_pci_devices_quiesce(struct vbus_pci_bridge *b)
{
	struct vbus_pci_device *dev;

	vbus_pci_devices_freeze(b);
	mutex_lock(&b->dev_lock);
	list_for_each_entry(dev, &b->devices, node) {
		mutex_lock(&dev->lock);
		if (dev->handle)
			vbus_pci_dev_close_locked(dev);
		mutex_unlock(&dev->lock);
	}
	mutex_unlock(&b->dev_lock);
}

/*
 * System sleep (pci_bridge_pm.c): each device as if its host went away,
 * but this host stays and must let go first: the driver's disconnect op
 * closes the device with it (not stale yet: a real DEVCLOSE) and frees
 * its rings; a device with no driver, or one without the op, is closed
 * here. Then it is stale until the re-attach at wake-up announces it.
 */
void vbus_pci_devices_sleep(struct vbus_pci_bridge *b)
{
	struct vbus_pci_device *dev;

	mutex_lock(&b->dev_lock);
	list_for_each_entry(dev, &b->devices, node) {
		dev->announced = false;
		vbus_pci_dev_tell_driver(dev);
		mutex_lock(&dev->lock);
		if (dev->handle)
			vbus_pci_dev_close_locked(dev);
		WRITE_ONCE(dev->stale, true);
		mutex_unlock(&dev->lock);
	}
	mutex_unlock(&b->dev_lock);
}

/*
 * Bridge teardown: no new devices from here on, drop every device and
 * wait until the last proxy is released (its release is our code).
 */
void vbus_pci_devices_remove_all(struct vbus_pci_bridge *b)
{
	struct vbus_pci_device *dev, *tmp;
	LIST_HEAD(list);

	vbus_pci_devices_freeze(b);

	mutex_lock(&b->dev_lock);
	list_splice_init(&b->devices, &list);
	mutex_unlock(&b->dev_lock);

	list_for_each_entry_safe(dev, tmp, &list, node) {
		list_del_init(&dev->node);
		vbus_pci_device_drop(dev);
	}

	/* drop the bridge's own count; the last release completes */
	if (atomic_dec_and_test(&b->ndevs))
		return;
	while (!wait_for_completion_timeout(&b->devs_gone, 30 * HZ))
		dev_warn(&b->pdev->dev,
			 "waiting for %d device(s) still referenced\n",
			 atomic_read(&b->ndevs));
}
