/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vbus-proxy: the guest's bus type for devices the host publishes.
 *
 * A bridge (vbus_pcibridge.ko) registers one vbus_device_proxy per device
 * the host announces; drivers register a vbus_driver and bind by type
 * string. The ops are the two verbs of the original design, call() and
 * shm(), plus open/close of the host-side device.
 */
#ifndef VBUS_VBUS_DRIVER_H
#define VBUS_VBUS_DRIVER_H

#include <linux/device.h>
#include <vbus/shm_signal.h>
#include <vbus/ioq.h>

struct vbus_device_proxy;
struct vbus_driver;

struct vbus_device_proxy_ops {
	int (*open)(struct vbus_device_proxy *dev, int version, int flags);
	int (*close)(struct vbus_device_proxy *dev, int flags);
	/*
	 * Register @len bytes at @ptr as shm @id with the host, which
	 * reaches them at @dma: memory from dma_alloc_coherent() on the
	 * proxy's dma_dev (vbus_driver_ioq_alloc() does this for rings).
	 * With @signal non-NULL, @sigdesc must lie
	 * inside the region; *@signal gets a north-side shm_signal whose
	 * inject notifies the host (caller owns one reference).
	 */
	int (*shm)(struct vbus_device_proxy *dev, int id, int prio,
		   void *ptr, dma_addr_t dma, size_t len,
		   struct shm_signal_desc *sigdesc, struct shm_signal **signal,
		   int flags);
	/* Synchronous call; @data (kmalloc'ed, may be NULL) is in/out. */
	int (*call)(struct vbus_device_proxy *dev, u32 func,
		    void *data, size_t len, int flags);
	/*
	 * Optional (NULL: no such information). The CPUs whose interrupt
	 * completes shm @id's signal (its per-queue MSI-X vector's managed
	 * affinity, docs/transport.md "Per-queue vectors"), or NULL when it
	 * is signalled through the bridge's shared event queue. For a
	 * multi-queue driver's CPU -> queue map (vbus-blk's map_queues).
	 */
	const struct cpumask *(*queue_affinity)(struct vbus_device_proxy *dev,
						int id);
	void (*release)(struct vbus_device_proxy *dev);
};

struct vbus_device_proxy {
	char *type;
	u64 id;
	void *priv;	/* used by drivers */
	/*
	 * What the host's accesses go through (the bridge's PCI device):
	 * every buffer the host reads or writes is allocated
	 * (dma_alloc_coherent) or mapped (dma_map_*) on it, never handed
	 * over by physical address. Set by the bridge before register.
	 */
	struct device *dma_dev;
	struct vbus_device_proxy_ops *ops;
	struct device dev;
};

#define to_vbus_device_proxy(d) container_of(d, struct vbus_device_proxy, dev)

/*
 * For bridges. Register: @dev->type, ->id and ->ops set by the caller; the
 * device is named after its id unless the caller named it, and sits under
 * /sys/devices/vbus-proxy unless the caller set dev.parent. As with
 * device_register(), on failure the caller drops the device with
 * put_device(&dev->dev), which ends in ops->release().
 * Unregister runs the bound driver's remove op first.
 */
int vbus_device_proxy_register(struct vbus_device_proxy *dev);
void vbus_device_proxy_unregister(struct vbus_device_proxy *dev);

/*
 * probe/remove run in process context. remove must leave nothing behind
 * that the host can still reach: close() the device (the host stops using
 * its shms when it answers DEVCLOSE) before ioq_put() of its rings.
 */
struct vbus_driver_ops {
	int (*probe)(struct vbus_device_proxy *dev);
	int (*remove)(struct vbus_device_proxy *dev);
	/*
	 * Optional: the host restarted under us (docs/transport.md, "Host
	 * restarts"; docs/adding-a-device.md). Both run in process context
	 * with the device lock held, like probe and remove.
	 *
	 * disconnect: the host went away or forgot the device. Stop using
	 * its shms and free them (nothing on the host touches them any
	 * more; close() answers 0 without asking it); keep whatever the
	 * guest sees (a netdev, a disk) and fail or queue new requests.
	 * Runs once per outage, before reconnect or remove.
	 *
	 * reconnect: the host announced the device again. open() it and
	 * register new shms as probe would; 0 when it is in service again.
	 * Without the op, or when it fails, the bus removes the device
	 * (remove runs) and adds it anew (probe runs).
	 */
	void (*disconnect)(struct vbus_device_proxy *dev);
	int (*reconnect)(struct vbus_device_proxy *dev);
};

struct vbus_driver {
	char *type;
	struct module *owner;
	struct vbus_driver_ops *ops;
	/*
	 * Optional: how many consecutive shm ids make one queue (venet: 2,
	 * a pair's rx and tx ring). The bridge binds a queue's shms to the
	 * same per-queue vector, so one queue completes on one CPU and the
	 * next queue lands on the next vector. 0 means 1.
	 */
	unsigned int shms_per_queue;
	struct device_driver drv;
};

#define to_vbus_driver(d) container_of(d, struct vbus_driver, drv)

int vbus_driver_register(struct vbus_driver *drv);
void vbus_driver_unregister(struct vbus_driver *drv);

/*
 * Allocate and register an IOQ of @ringsize descriptors (power of two) as
 * shm @id of @dev, north side, with its signal. On success *@ioq holds one
 * reference (ioq_put() to free: the ring memory and signal go with it;
 * the last ioq_put() sleeps, process context only). The device must be
 * open. Call close() before the last ioq_put(): the
 * host may use the ring until it has answered DEVCLOSE. On error nothing
 * is left allocated, except after -ETIMEDOUT (the host may have kept the
 * ring) or a failure after the bridge registered it, when the ring memory
 * is deliberately leaked. The ring's version is the one this call laid
 * out, never read back from the ring (the host can write it once
 * registered).
 */
int vbus_driver_ioq_alloc(struct vbus_device_proxy *dev, int id, int prio,
			  size_t ringsize, struct ioq **ioq);

#endif /* VBUS_VBUS_DRIVER_H */
