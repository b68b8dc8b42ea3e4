// SPDX-License-Identifier: GPL-2.0
/*
 * vbus_pcibridge.ko: the guest side of the vbus transport over QEMU's stock
 * ivshmem-doorbell device (1af4:1110), see docs/transport.md.
 *
 * Probe claims the device only if BAR2 carries the vbus magic and an ABI
 * version we speak; any other ivshmem user gets -ENODEV and is left alone.
 * Then: bus master (TCG drops MSI-X without it), two MSI-X vectors
 * (hypercall completion, eventq) and the per-queue ones the host offers
 * (pci_bridge_qvec.c), NEGOTIATE, the eventq, BUSREG. The host
 * answers BUSREG with a DEVADD per device of this guest's bus.
 *
 * Remove undoes it in the order that keeps the host away from freed
 * memory: devices go first (each closed: DEVCLOSE), then the eventq is
 * detached (BUSREG count 0) while events still flow, then interrupts and
 * work stop, and memory is freed last, unless the host may still write it.
 * Shutdown (reboot, kexec) closes and detaches the same way but frees
 * nothing.
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/dma-mapping.h>
#include <linux/swiotlb.h>
#include <linux/io.h>
#include <linux/slab.h>
#include "pci_bridge.h"

static ssize_t vbus_stats_show(struct device *d, struct device_attribute *attr,
			       char *buf)
{
	struct vbus_pci_bridge *b = dev_get_drvdata(d);
	struct vbus_pci_stats *s = &b->stats;

	return sysfs_emit(buf,
			  "hypercalls %ld\nhc_timeouts %ld\nhc_leaked %ld\n"
			  "doorbells %ld\nevents %ld\nev_bad %ld\nev_runs %ld\n"
			  "ev_budget %ld\ndevadd %ld\ndevdrop %ld\n"
			  "shmsignal %ld\nshmclose %ld\nhost_peer %u\n"
			  "host_epoch %u\nhost_down %ld\nreattach %ld\n"
			  "reattach_fail %ld\nreconnect %ld\nreprobe %ld\n"
			  "hc_leaked_bytes %zu\nqvecs %u\nqvec_on %d\n"
			  "qvec_runs %ld\n",
			  atomic_long_read(&s->hypercalls),
			  atomic_long_read(&s->hc_timeouts),
			  atomic_long_read(&s->hc_leaked),
			  atomic_long_read(&s->doorbells),
			  atomic_long_read(&s->events),
			  atomic_long_read(&s->ev_bad),
			  atomic_long_read(&s->ev_runs),
			  atomic_long_read(&s->ev_budget),
			  atomic_long_read(&s->devadd),
			  atomic_long_read(&s->devdrop),
			  atomic_long_read(&s->shmsignal),
			  atomic_long_read(&s->shmclose),
			  b->host_peer, READ_ONCE(b->epoch),
			  atomic_long_read(&s->host_down),
			  atomic_long_read(&s->reattach),
			  atomic_long_read(&s->reattach_fail),
			  atomic_long_read(&s->reconnect),
			  atomic_long_read(&s->reprobe),
			  READ_ONCE(b->hc_leaked_bytes), b->nqvec,
			  READ_ONCE(b->qvec_on),
			  atomic_long_read(&s->qvec_runs));
}
static DEVICE_ATTR_RO(vbus_stats);

static struct attribute *vbus_pci_attrs[] = {
	&dev_attr_vbus_stats.attr,
	NULL,
};
ATTRIBUTE_GROUPS(vbus_pci);

static int vbus_pci_negotiate(struct vbus_pci_bridge *b)
{
	struct vbus_pci_negotiate params = {
		.magic = VBUS_PCI_ABI_MAGIC,
		.version = VBUS_PCI_HC_VERSION,
		.capabilities = vbus_pci_qvec_offer(b),
	};
	int ret;

	ret = vbus_pci_hypercall(b, VBUS_PCI_HC_NEGOTIATE, &params,
				 sizeof(params), VBUS_PCI_HC_NO_DATAP, NULL, 0);
	if (!ret)
		vbus_pci_qvec_negotiated(b, params.capabilities);
	return ret;
}

/* Is BAR2 ours? Read each host-written field once. */
static int vbus_pci_check_shm(struct vbus_pci_bridge *b, resource_size_t len)
{
	struct pci_dev *pdev = b->pdev;
	u32 magic = READ_ONCE(b->shm->magic);
	u32 version = READ_ONCE(b->shm->version);
	u32 size = READ_ONCE(b->shm->size);
	u32 peer = READ_ONCE(b->shm->host_peer);

	if (magic != VBUS_PCI_ABI_MAGIC) {
		dev_info(&pdev->dev, "not a vbus bridge (BAR2 magic %#x)\n",
			 magic);
		return -ENODEV;
	}
	if (version != VBUS_PCI_ABI_VERSION) {
		dev_info(&pdev->dev, "vbus ABI version %u, we speak %u\n",
			 version, VBUS_PCI_ABI_VERSION);
		return -ENODEV;
	}
	if (size < sizeof(struct vbus_pci_shm) || size > len) {
		dev_err(&pdev->dev, "vbus BAR2 size %u bad (BAR is %llu)\n",
			size, (unsigned long long)len);
		return -ENODEV;
	}
	if (peer > 0xffff) {
		dev_err(&pdev->dev, "vbus host peer %u out of range\n", peer);
		return -ENODEV;
	}
	b->host_peer = peer;
	/*
	 * Continue from the last answer an earlier instance of the bridge
	 * got (transport.md): the host ignores a seq equal to the last one
	 * it answered, so a reloaded bridge must not start again at 1.
	 */
	b->hc_seq = READ_ONCE(b->shm->hc_done);
	/* the host we attach to now; a later change means a new one */
	b->epoch = READ_ONCE(b->shm->host_epoch);
	return 0;
}

/* Everything probe may have set up, in reverse; safe on partial setup. */
static void vbus_pci_teardown(struct vbus_pci_bridge *b)
{
	struct pci_dev *pdev = b->pdev;

	vbus_pci_debugfs_remove(b);
	vbus_pci_epoch_stop(b);
	if (b->irq_eventq > 0)
		free_irq(b->irq_eventq, b);
	vbus_pci_qvec_stop(b);
	vbus_pci_eventq_stop(b);
	if (b->wq)
		destroy_workqueue(b->wq);	/* drains queued DEVADD/DROP */
	/* host references of signals whose device never closed */
	vbus_pci_signals_detach(b, NULL);
	xa_destroy(&b->signals);
	if (b->irq_hc > 0)
		free_irq(b->irq_hc, b);
	/* an interrupt between the first stop and free_irq may have queued it */
	cancel_delayed_work_sync(&b->reattach);
	pci_free_irq_vectors(pdev);
	vbus_pci_qvec_free(b);
	vbus_pci_eventq_free(b);
	if (b->regs)
		pci_iounmap(pdev, b->regs);
	if (b->shm)
		memunmap(b->shm);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
	vbus_pci_hc_forget_leaks(b);
	kfree(b);
}

static struct vbus_pci_bridge *vbus_pci_alloc(struct pci_dev *pdev)
{
	struct vbus_pci_bridge *b;

	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return NULL;
	b->pdev = pdev;
	mutex_init(&b->hc_lock);
	INIT_LIST_HEAD(&b->hc_leaks);
	init_waitqueue_head(&b->hc_wq);
	mutex_init(&b->dev_lock);
	INIT_LIST_HEAD(&b->devices);
	/* the bridge's own count: dropped in remove, see devices_remove_all */
	atomic_set(&b->ndevs, 1);
	init_completion(&b->devs_gone);
	xa_init_flags(&b->signals, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_BH);
	spin_lock_init(&b->qvec_lock);
	b->sig_next = 1;
	spin_lock_init(&b->inject_lock);
	vbus_pci_epoch_init(b);
	return b;
}

/*
 * Every streaming mapping of ours bounces (swiotlb=force, a confidential
 * guest): say so, and where the bounce buffers are, so that the host's
 * view can be checked against it (the QEMU suites' --swiotlb). The kernel
 * prints its own "mapped [mem ...]" line only when it needs bounce
 * buffers for addressing, not when forced.
 */
static void vbus_pci_dma_info(struct pci_dev *pdev)
{
#ifdef CONFIG_SWIOTLB
	struct io_tlb_mem *mem = pdev->dev.dma_io_tlb_mem;

	if (is_swiotlb_force_bounce(&pdev->dev))
		dev_info(&pdev->dev, "DMA bounces through swiotlb [mem %pa-%pa)\n",
			 &mem->start, &mem->end);
#endif
}

/* The PCI device and its regions; undoes itself on failure. */
static int vbus_pci_enable(struct pci_dev *pdev)
{
	int ret;

	ret = pci_enable_device(pdev);
	if (ret)
		return ret;
	/*
	 * The host reaches any guest address: no bouncing below 4 GiB (the
	 * PCI default). Every buffer it sees is allocated or mapped on
	 * this device (docs/transport.md, "Addresses").
	 */
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (!ret)
		ret = pci_request_regions(pdev, VBUS_PCI_DRV_NAME);
	if (ret)
		pci_disable_device(pdev);
	return ret;
}

/* BAR2 (checked) and BAR0; from here on vbus_pci_teardown() undoes. */
static int vbus_pci_map(struct vbus_pci_bridge *b)
{
	struct pci_dev *pdev = b->pdev;
	resource_size_t start, len;
	int ret;

	start = pci_resource_start(pdev, 2);
	len = pci_resource_len(pdev, 2);
	if (!start || len < sizeof(struct vbus_pci_shm))
		return -ENODEV;
	/* ordinary cacheable shared memory (a file the host maps) */
	b->shm = memremap(start, len, MEMREMAP_WB);
	if (!b->shm)
		return -ENOMEM;
	ret = vbus_pci_check_shm(b, len);
	if (ret)
		return ret;
	b->regs = pci_iomap(pdev, 0, 0);
	if (!b->regs)
		return -ENOMEM;
	pci_set_master(pdev);
	return 0;
}

/* MSI-X, the hypercall vector, then NEGOTIATE over it. */
static int vbus_pci_start_hc(struct vbus_pci_bridge *b)
{
	struct pci_dev *pdev = b->pdev;
	int ret;

	ret = vbus_pci_qvec_alloc_vectors(b);
	if (ret < 0) {
		dev_err(&pdev->dev, "no MSI-X (%d)\n", ret);
		return ret;
	}
	ret = vbus_pci_qvec_start(b);
	if (ret)
		return ret;
	ret = request_irq(pci_irq_vector(pdev, VBUS_PCI_MSIX_HC),
			  vbus_pci_hc_irq, 0, "vbus-hc", b);
	if (ret)
		return ret;
	b->irq_hc = pci_irq_vector(pdev, VBUS_PCI_MSIX_HC);

	ret = vbus_pci_negotiate(b);
	if (ret) {
		dev_err(&pdev->dev, "NEGOTIATE failed: %d\n", ret);
		if (ret > 0)
			ret = -EPROTO;
	}
	return ret;
}

/* The workqueue, the eventq ring and its vector (not yet registered). */
static int vbus_pci_start_eventq(struct vbus_pci_bridge *b)
{
	struct pci_dev *pdev = b->pdev;
	int ret;

	b->wq = alloc_ordered_workqueue("vbus-pci-%s", 0, pci_name(pdev));
	if (!b->wq)
		return -ENOMEM;
	ret = vbus_pci_eventq_setup(b);
	if (ret)
		return ret;
	ret = request_irq(pci_irq_vector(pdev, VBUS_PCI_MSIX_EVENTQ),
			  vbus_pci_eventq_irq, 0, "vbus-eventq", b);
	if (ret)
		return ret;
	b->irq_eventq = pci_irq_vector(pdev, VBUS_PCI_MSIX_EVENTQ);
	vbus_pci_debugfs_add(b);
	return 0;
}

static int vbus_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct vbus_pci_bridge *b;
	int ret;

	b = vbus_pci_alloc(pdev);
	if (!b)
		return -ENOMEM;
	ret = vbus_pci_enable(pdev);
	if (ret) {
		kfree(b);
		return ret;
	}
	vbus_pci_dma_info(pdev);
	ret = vbus_pci_map(b);
	if (!ret)
		ret = vbus_pci_start_hc(b);
	if (!ret)
		ret = vbus_pci_start_eventq(b);
	if (ret)
		goto err;

	pci_set_drvdata(pdev, b);
	ret = vbus_pci_eventq_register(b);
	if (ret) {
		dev_err(&pdev->dev, "BUSREG failed: %d\n", ret);
		if (ret > 0)
			ret = -EPROTO;
		goto err_drvdata;
	}

	dev_info(&pdev->dev,
		 "vbus bridge: ABI %u, host peer %u, eventq %u entries\n",
		 VBUS_PCI_ABI_VERSION, b->host_peer, VBUS_PCI_EVENTQ_COUNT);
	return 0;

err_drvdata:
	/* DEVADDs may have been queued: discard them */
	vbus_pci_devices_remove_all(b);
	pci_set_drvdata(pdev, NULL);
err:
	vbus_pci_teardown(b);
	return ret;
}

static void vbus_pci_remove(struct pci_dev *pdev)
{
	struct vbus_pci_bridge *b = pci_get_drvdata(pdev);

	/* no re-attach under our feet (it would add devices back) */
	vbus_pci_epoch_stop(b);
	/* drivers' remove, DEVCLOSE; events (SHMSIGNAL) still flow */
	vbus_pci_devices_remove_all(b);
	/* the host stops writing the eventq before we free it */
	vbus_pci_eventq_detach(b);
	vbus_pci_teardown(b);
	pci_set_drvdata(pdev, NULL);
	dev_info(&pdev->dev, "vbus bridge removed\n");
}

/*
 * Reboot, poweroff, kexec (device_shutdown()): the host must stop writing
 * our memory (rx buffers posted on venet rings, block reads, the eventq)
 * before the firmware or the next kernel owns it. Nothing is freed or
 * unregistered: the machine is going down, and the drivers' remove would
 * tear down disks that may still be mounted read-only. Every device is
 * closed (DEVCLOSE), then the eventq is detached (BUSREG count 0) while
 * events still flow, then the device stops interrupting (TCG drops MSI-X
 * from a device that is not bus master; the next kernel sets it again).
 * A host that does not answer gets what remove gives it: the hypercall
 * times out and is logged.
 */
static void vbus_pci_shutdown(struct pci_dev *pdev)
{
	struct vbus_pci_bridge *b = pci_get_drvdata(pdev);

	if (!b)
		return;
	/* no re-attach under our feet (it would open devices again) */
	vbus_pci_epoch_stop(b);
	vbus_pci_devices_quiesce(b);
	vbus_pci_eventq_detach(b);
	pci_clear_master(pdev);
	dev_info(&pdev->dev, "vbus bridge quiesced for shutdown\n");
}

static const struct pci_device_id vbus_pci_tbl[] = {
	{ PCI_DEVICE(VBUS_PCI_IVSHMEM_VENDOR, VBUS_PCI_IVSHMEM_DEVICE) },
	{ 0 },
};
MODULE_DEVICE_TABLE(pci, vbus_pci_tbl);

static struct pci_driver vbus_pci_driver = {
	.name = VBUS_PCI_DRV_NAME,
	.id_table = vbus_pci_tbl,
	.probe = vbus_pci_probe,
	.remove = vbus_pci_remove,
	.shutdown = vbus_pci_shutdown,
	.driver.pm = pm_sleep_ptr(&vbus_pci_pm_ops),
	.dev_groups = vbus_pci_groups,
};

static int __init vbus_pci_init(void)
{
	int ret;

	ret = vbus_pci_signal_module_init();
	if (ret)
		return ret;
	vbus_pci_debugfs_init();
	ret = pci_register_driver(&vbus_pci_driver);
	if (ret) {
		vbus_pci_debugfs_exit();
		vbus_pci_signal_module_exit();
	}
	return ret;
}

static void __exit vbus_pci_exit(void)
{
	pci_unregister_driver(&vbus_pci_driver);
	vbus_pci_debugfs_exit();
	vbus_pci_signal_module_exit();
}

module_init(vbus_pci_init);
module_exit(vbus_pci_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vbus: pci-to-vbus bridge over ivshmem-doorbell");
MODULE_AUTHOR("vbus developers");
