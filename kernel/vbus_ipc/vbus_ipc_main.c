// SPDX-License-Identifier: GPL-2.0
/*
 * vbus_ipc.ko, the PCI side: claims an ivshmem-doorbell (1af4:1110) only
 * when its BAR2 carries the vbus-ipc magic, an ABI version we speak and a
 * layout that checks out; any other ivshmem user (the vbus bridge among
 * them) gets -ENODEV and is left alone, as the bridge leaves ours.
 */
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <vbus/vbus_pci.h>
#include "vbus_ipc_drv.h"

static DEFINE_IDA(vbus_ipc_ida);

void vbus_ipc_release(struct kref *ref)
{
	struct vbus_ipc *ipc = container_of(ref, struct vbus_ipc, ref);

	/* the header stays mapped while any file may still look at it */
	if (ipc->shm)
		memunmap(ipc->shm);
	ida_free(&vbus_ipc_ida, ipc->index);
	kfree(ipc);
}

void vbus_ipc_doorbell(struct vbus_ipc *ipc, unsigned int vector)
{
	/*
	 * The header stores before it (guest_open/guest_close) are ordered
	 * before the MMIO write by iowrite32's own barrier: the host reads
	 * them only after the doorbell.
	 */
	iowrite32((ipc->host_peer << 16) | vector,
		  ipc->regs + VBUS_PCI_REG_DOORBELL);
}

static irqreturn_t vbus_ipc_data_irq(int irq, void *arg)
{
	struct vbus_ipc *ipc = arg;

	atomic64_inc(&ipc->irqs);
	wake_up_interruptible(&ipc->wq);
	return IRQ_HANDLED;
}

static irqreturn_t vbus_ipc_ctrl_irq(int irq, void *arg)
{
	struct vbus_ipc *ipc = arg;

	/* the session changed: waiters re-read the header */
	wake_up_interruptible(&ipc->wq);
	return IRQ_HANDLED;
}

/* Read the header once into @ipc and check it; -ENODEV if not ours. */
static int vbus_ipc_check(struct vbus_ipc *ipc)
{
	struct device *d = &ipc->pdev->dev;
	struct vbus_ipc_shm *shm = ipc->shm;
	u64 size;

	if (READ_ONCE(shm->magic) != VBUS_IPC_MAGIC)
		return -ENODEV;	/* another ivshmem user: quietly */
	if (READ_ONCE(shm->version) != VBUS_IPC_ABI_VERSION) {
		dev_info(d, "vbus-ipc ABI version %u, not %u\n",
			 READ_ONCE(shm->version), VBUS_IPC_ABI_VERSION);
		return -ENODEV;
	}
	size = READ_ONCE(shm->size);
	memcpy(&ipc->lay, &shm->layout, sizeof(ipc->lay));
	if (size > ipc->size || vbus_ipc_layout_check(&ipc->lay, size)) {
		dev_warn(d, "vbus-ipc region layout is invalid\n");
		return -ENODEV;
	}
	ipc->size = size;
	ipc->region_id = READ_ONCE(shm->region_id);
	ipc->host_peer = READ_ONCE(shm->host_peer) & 0xffff;
	memcpy(ipc->service, shm->service, sizeof(ipc->service));
	ipc->service[sizeof(ipc->service) - 1] = '\0';
	return 0;
}

/*
 * Which end of the channel this guest is: vbus-hostd, our ivshmem server,
 * told QEMU our peer id (IVPosition). A link's south guest sends on H2G
 * and has session words of its own; anything else is north.
 */
static void vbus_ipc_side(struct vbus_ipc *ipc)
{
	struct vbus_ipc_shm *shm = ipc->shm;

	if (ioread32(ipc->regs + VBUS_PCI_REG_IVPOSITION) ==
	    VBUS_IPC_SOUTH_PEER) {
		ipc->side = VBUS_IPC_SIDE_SOUTH;
		ipc->open_word = &shm->south_open;
		ipc->close_word = &shm->south_close;
		ipc->served_word = &shm->south_session_open;
	} else {
		ipc->side = VBUS_IPC_SIDE_NORTH;
		ipc->open_word = &shm->guest_open;
		ipc->close_word = &shm->guest_close;
		ipc->served_word = &shm->session_open;
	}
}

static int vbus_ipc_map(struct vbus_ipc *ipc)
{
	struct pci_dev *pdev = ipc->pdev;

	ipc->bar2 = pci_resource_start(pdev, 2);
	ipc->size = pci_resource_len(pdev, 2);
	if (!ipc->bar2 || ipc->size < VBUS_IPC_HDR_SIZE)
		return -ENODEV;
	/* only the header page: the rest is never the kernel's business */
	ipc->shm = memremap(ipc->bar2, VBUS_IPC_HDR_SIZE, MEMREMAP_WB);
	if (!ipc->shm)
		return -ENOMEM;
	return vbus_ipc_check(ipc);
}

static int vbus_ipc_irqs(struct vbus_ipc *ipc)
{
	struct pci_dev *pdev = ipc->pdev;
	int ret;

	ret = pci_alloc_irq_vectors(pdev, VBUS_IPC_NR_VECTORS,
				    VBUS_IPC_NR_VECTORS, PCI_IRQ_MSIX);
	if (ret < 0)
		return ret;
	ret = request_irq(pci_irq_vector(pdev, VBUS_IPC_VEC_DATA),
			  vbus_ipc_data_irq, 0, "vbus-ipc-data", ipc);
	if (ret)
		return ret;
	ipc->irq[VBUS_IPC_VEC_DATA] = pci_irq_vector(pdev, VBUS_IPC_VEC_DATA);
	ret = request_irq(pci_irq_vector(pdev, VBUS_IPC_VEC_CTRL),
			  vbus_ipc_ctrl_irq, 0, "vbus-ipc-ctrl", ipc);
	if (ret)
		return ret;
	ipc->irq[VBUS_IPC_VEC_CTRL] = pci_irq_vector(pdev, VBUS_IPC_VEC_CTRL);
	return 0;
}

/* Everything probe may have set up, in reverse; safe on partial setup. */
static void vbus_ipc_teardown(struct vbus_ipc *ipc)
{
	struct pci_dev *pdev = ipc->pdev;
	int i;

	for (i = VBUS_IPC_NR_VECTORS - 1; i >= 0; i--)
		if (ipc->irq[i] > 0)
			free_irq(ipc->irq[i], ipc);
	pci_free_irq_vectors(pdev);
	if (ipc->regs)
		pci_iounmap(pdev, ipc->regs);
	ipc->regs = NULL;
	pci_release_regions(pdev);
	pci_disable_device(pdev);
}

static int vbus_ipc_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct vbus_ipc *ipc;
	int ret;

	ipc = kzalloc(sizeof(*ipc), GFP_KERNEL);
	if (!ipc)
		return -ENOMEM;
	ret = ida_alloc(&vbus_ipc_ida, GFP_KERNEL);
	if (ret < 0) {
		kfree(ipc);
		return ret;
	}
	ipc->index = ret;
	kref_init(&ipc->ref);
	mutex_init(&ipc->lock);
	init_waitqueue_head(&ipc->wq);
	ipc->pdev = pdev;

	ret = pci_enable_device(pdev);
	if (ret)
		goto fail_free;
	ret = pci_request_regions(pdev, VBUS_IPC_DRV_NAME);
	if (ret) {
		pci_disable_device(pdev);
		goto fail_free;
	}
	ret = vbus_ipc_map(ipc);
	if (!ret) {
		ipc->regs = pci_iomap(pdev, 0, 0);
		ret = ipc->regs ? 0 : -ENOMEM;
	}
	if (ret)
		goto fail;
	vbus_ipc_side(ipc);
	/* TCG drops MSI-X from a device that is not bus master */
	pci_set_master(pdev);
	ret = vbus_ipc_irqs(ipc);
	if (ret)
		goto fail;
	pci_set_drvdata(pdev, ipc);
	ret = vbus_ipc_chardev_add(ipc);
	if (ret)
		goto fail;
	dev_info(&pdev->dev, "vbus-ipc service \"%s\": /dev/%s, %u x %u bytes each way%s\n",
		 ipc->service, ipc->name, ipc->lay.count, ipc->lay.buf_size,
		 ipc->side == VBUS_IPC_SIDE_SOUTH ? ", south end of a link" : "");
	return 0;
fail:
	vbus_ipc_teardown(ipc);
fail_free:
	kref_put(&ipc->ref, vbus_ipc_release);
	return ret;
}

static void vbus_ipc_remove(struct pci_dev *pdev)
{
	struct vbus_ipc *ipc = pci_get_drvdata(pdev);

	/* no new opens; an open file sees -ENODEV and loses its mapping */
	vbus_ipc_chardev_remove(ipc);
	vbus_ipc_teardown(ipc);
	kref_put(&ipc->ref, vbus_ipc_release);
}

/*
 * Reboot, poweroff, kexec: the host never writes guest RAM for vbus-ipc
 * (the region is BAR2, the host's memory), so there is nothing to detach;
 * but an open session ends as a release would end it (the host process
 * must not wait for a guest that is gone), and the device stops
 * interrupting (TCG drops MSI-X from a device that is not bus master; the
 * next kernel sets it again). Nothing is freed.
 */
static void vbus_ipc_shutdown(struct pci_dev *pdev)
{
	struct vbus_ipc *ipc = pci_get_drvdata(pdev);

	if (!ipc)
		return;
	vbus_ipc_chardev_quiesce(ipc);
	pci_clear_master(pdev);
}

static const struct pci_device_id vbus_ipc_ids[] = {
	{ PCI_DEVICE(0x1af4, 0x1110) },	/* ivshmem; BAR2 decides */
	{ }
};
MODULE_DEVICE_TABLE(pci, vbus_ipc_ids);

static struct pci_driver vbus_ipc_driver = {
	.name = VBUS_IPC_DRV_NAME,
	.id_table = vbus_ipc_ids,
	.probe = vbus_ipc_probe,
	.remove = vbus_ipc_remove,
	.shutdown = vbus_ipc_shutdown,
};
module_pci_driver(vbus_ipc_driver);

MODULE_DESCRIPTION("vbus-ipc: guest process <-> host process channels");
MODULE_LICENSE("GPL");
