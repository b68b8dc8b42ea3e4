/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vbus_ipc.ko: the guest side of vbus-ipc (core/include/vbus/vbus_ipc.h,
 * docs/devices/vbus_ipc.md). A PCI driver for the ipc channel's own
 * ivshmem-doorbell (vbus_ipc_main.c) and a character device per channel,
 * /dev/vbus-ipcN (vbus_ipc_fops.c), through which one process maps the
 * channel's region and rings/awaits its doorbells.
 *
 * The kernel never reads a message or a descriptor: it touches only the
 * region's header (struct vbus_ipc_shm), whose layout it copies and checks
 * once at probe. Everything else in BAR2 belongs to the two processes.
 */
#ifndef VBUS_KERNEL_IPC_H
#define VBUS_KERNEL_IPC_H

#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/wait.h>
#include <vbus/vbus_ipc.h>

#define VBUS_IPC_DRV_NAME "vbus_ipc"

struct vbus_ipc {
	struct kref ref;		/* probe's + one per open file */
	struct pci_dev *pdev;
	void __iomem *regs;		/* BAR0: Doorbell */
	struct vbus_ipc_shm *shm;	/* BAR2 header, memremap WB */
	phys_addr_t bar2;
	resource_size_t size;
	struct vbus_ipc_layout lay;	/* checked copy, never re-read */
	u64 region_id;
	u32 host_peer;
	/*
	 * VBUS_IPC_SIDE_*, from IVPosition at probe: a link's south guest
	 * keeps its session words apart from the north guest's (the region
	 * is both guests'); the words this side writes and the one it reads.
	 */
	u32 side;
	u32 *open_word, *close_word, *served_word;
	char service[VBUS_IPC_SERVICE_LEN];
	int index;			/* N of /dev/vbus-ipcN */
	char name[24];
	struct miscdevice misc;
	bool misc_registered;
	int irq[VBUS_IPC_NR_VECTORS];

	wait_queue_head_t wq;		/* DATA and CTRL interrupts */
	atomic64_t irqs;		/* DATA interrupts not yet read */

	struct mutex lock;		/* the fields below */
	bool removed;			/* the PCI device is gone */
	bool busy;			/* one opener at a time */
	struct address_space *mapping;	/* of the open file: zapped at remove */
	u32 my_open;			/* guest_open of the current open */
	bool served;			/* its session was seen up */
	u32 session;			/* which one */
};

enum vbus_ipc_sess { VBUS_IPC_WAITING, VBUS_IPC_UP, VBUS_IPC_ENDED };

/* vbus_ipc_fops.c */
int vbus_ipc_chardev_add(struct vbus_ipc *ipc);
void vbus_ipc_chardev_quiesce(struct vbus_ipc *ipc);
void vbus_ipc_chardev_remove(struct vbus_ipc *ipc);
/* vbus_ipc_main.c */
void vbus_ipc_release(struct kref *ref);
void vbus_ipc_doorbell(struct vbus_ipc *ipc, unsigned int vector);

#endif /* VBUS_KERNEL_IPC_H */
