/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vbus_pcibridge.ko internals: the guest side of the ivshmem transport
 * (docs/transport.md), shared by the pci_bridge_*.c files.
 *
 *   pci_bridge_main.c    PCI probe/remove, BAR mapping, MSI-X, stats
 *   pci_bridge_hc.c      hypercalls through the BAR2 mailbox
 *   pci_bridge_signal.c  guest->host signals (sigpending + doorbell) and
 *                        the cookie table for host->guest SHMSIGNAL
 *   pci_bridge_eventq.c  the host->guest event queue
 *   pci_bridge_dev.c     vbus_device_proxy ops, DEVADD/DEVDROP
 *   pci_bridge_epoch.c   host restarts: host_epoch, re-attach; the two
 *                        MSI-X handlers, which check host_epoch
 *   pci_bridge_qvec.c    per-queue MSI-X vectors: allocation, binding
 *                        of device signals, their handlers
 *   pci_bridge_debugfs.c fault injection for the tests
 *
 * Everything in BAR2 and in the eventq is written by the host and is
 * untrusted: read once, check, then use. Nothing the host does may crash
 * or hang the guest; it only costs the host its devices.
 */
#ifndef VBUS_PCI_BRIDGE_H
#define VBUS_PCI_BRIDGE_H

#include <linux/pci.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/interrupt.h>
#include <linux/xarray.h>
#include <linux/atomic.h>
#include <linux/completion.h>
#include <vbus/vbus_pci.h>
#include <vbus/ioq.h>
#include <vbus/vbus_driver.h>

#define VBUS_PCI_DRV_NAME	"vbus-pcibridge"
#define VBUS_PCI_EVENTQ_COUNT	1024	/* transport.md: 1024 entries */
#define VBUS_PCI_EVENTQ_BUDGET	64	/* events per tasklet run */
/*
 * What a host can make one bridge allocate (pci_bridge_dev.c). Below the
 * eventq's size, so that an honest host's DEVADDs of a re-attach fit in
 * the ring at once (pci_bridge_epoch.c drains it before dropping stale).
 */
#define VBUS_PCI_MAX_DEVICES	512
#define VBUS_PCI_MAX_PENDING_EVENTS	(2 * VBUS_PCI_MAX_DEVICES)

struct vbus_pci_stats {
	atomic_long_t hypercalls;
	atomic_long_t hc_timeouts;
	atomic_long_t hc_leaked;	/* buffers of timed-out calls */
	atomic_long_t doorbells;
	atomic_long_t events;
	atomic_long_t ev_bad;		/* unknown id, bad cookie, ... */
	atomic_long_t ev_runs;		/* eventq tasklet runs */
	atomic_long_t ev_budget;	/* runs that hit the budget */
	atomic_long_t devadd;
	atomic_long_t devdrop;
	atomic_long_t shmsignal;
	atomic_long_t shmclose;
	atomic_long_t host_down;	/* odd host_epoch seen */
	atomic_long_t reattach;		/* re-attach runs (new host) */
	atomic_long_t reattach_fail;	/* NEGOTIATE/BUSREG refused */
	atomic_long_t reconnect;	/* devices kept across a re-attach */
	atomic_long_t reprobe;		/* devices removed and added anew */
	atomic_long_t qvec_runs;	/* queue vector tasklet runs */
};

/* One per-queue MSI-X vector (pci_bridge_qvec.c). */
struct vbus_pci_qvec {
	struct vbus_pci_bridge *b;
	unsigned int index;		/* MSI-X vector, >= VBUS_PCI_NR_VECTORS */
	int irq;			/* 0 until requested */
	struct list_head signals;	/* vbus_pci_signal.qvec_node; RCU */
	struct tasklet_struct tasklet;
	char name[32];
};

struct vbus_pci_bridge {
	struct pci_dev *pdev;
	void __iomem *regs;		/* BAR0: IVPosition, Doorbell */
	struct vbus_pci_shm *shm;	/* BAR2, memremap WB */
	u32 host_peer;
	int irq_hc;
	int irq_eventq;

	/* per-queue vectors (pci_bridge_qvec.c); nqvec 0: none */
	struct vbus_pci_qvec *qvecs;
	unsigned int nqvec;
	bool qvec_on;			/* the host accepted VBUS_PCI_CAP_QVEC */
	bool qvec_said;			/* logged the outcome once */
	spinlock_t qvec_lock;		/* writers of the signal lists */
	atomic_t qvec_next;		/* next device's base vector */

	/* hypercalls: one at a time */
	struct mutex hc_lock;
	wait_queue_head_t hc_wq;	/* woken by MSI-X vector HC */
	u32 hc_seq;			/* under hc_lock */
	bool hc_unanswered;		/* under hc_lock: said so, once */
	struct list_head hc_leaks;	/* under hc_lock: unanswered buffers */
	size_t hc_leaked_bytes;		/* under hc_lock (READ_ONCE outside) */

	/* eventq (north side); its signal is ours, never freed by a put */
	struct ioq eventq;
	struct shm_signal eventq_signal;
	struct ioq_notifier eventq_notifier;
	struct ioq_ring_head *eventq_ring;	/* coherent, at eventq_ring_dma */
	dma_addr_t eventq_ring_dma;
	size_t eventq_ring_len;
	struct vbus_pci_event *events;	/* events[slot] for ring slot */
	dma_addr_t events_dma;
	size_t events_len;
	struct tasklet_struct eventq_tasklet;
	bool eventq_ready;		/* ioq_init done */
	bool eventq_stop;		/* teardown: tasklet does nothing */
	bool eventq_leak;		/* host may still write: never free */

	/* devices */
	struct workqueue_struct *wq;	/* ordered: DEVADD/DEVDROP in order */
	struct mutex dev_lock;		/* devices, dying */
	struct list_head devices;
	bool dying;
	atomic_t ndevs;			/* 1 + proxies not yet released */
	atomic_t ev_pending;		/* DEVADD/DEVDROP works queued */
	struct completion devs_gone;	/* ndevs reached 0 */

	/* host restarts (pci_bridge_epoch.c) */
	u32 epoch;			/* host_epoch last acted on; reattach work */
	bool host_down;			/* hypercalls fail at once: -ENOTCONN */
	bool reattach_off;		/* remove: no more re-attach work */
	unsigned long reattach_next;	/* jiffies: at most one run a second */
	struct delayed_work reattach;

	/* cookie -> struct vbus_pci_signal; an entry owns a reference */
	struct xarray signals;
	u32 sig_next;

	struct vbus_pci_stats stats;

	/* test fault injection (pci_bridge_debugfs.c) */
	struct dentry *debugfs;
	spinlock_t inject_lock;
	unsigned int ninject;
	struct vbus_pci_event inject[8];
};

struct vbus_pci_device {
	struct vbus_device_proxy vdev;
	struct vbus_pci_bridge *bridge;
	struct list_head node;		/* bridge->devices, under dev_lock */
	struct mutex lock;		/* handle and the ops */
	u64 handle;			/* host's devh; 0 = closed */
	bool host_dropped;		/* DEVDROP: the host closed it itself */
	/*
	 * A new host has not (yet) announced the device again: it knows no
	 * handle or shm of it, so close() does not ask it. Written under
	 * dev->lock; read under it or (READ_ONCE) under bridge->dev_lock.
	 */
	bool stale;
	bool disconnected;	/* driver's disconnect ran; bridge->dev_lock */
	bool announced;		/* DEVADD of this host seen; bridge->dev_lock */
	unsigned int qvec_base;	/* its shm 0's queue vector (qvec.c) */
	char type[VBUS_MAX_DEVTYPE_LEN];
};

struct vbus_pci_signal {
	struct shm_signal signal;
	struct vbus_pci_bridge *bridge;
	struct vbus_pci_device *dev;
	u32 handle;			/* host's signal handle, 1..1023 */
	u32 cookie;			/* our key in bridge->signals */
	bool detached;			/* device closed: inject is a no-op */
	/* its queue vector (set at bind, stays), NULL: the eventq's */
	struct vbus_pci_qvec *qvec;
	bool qvec_bound;		/* on qvec->signals; under qvec_lock */
	struct list_head qvec_node;
	struct list_head detach_node;	/* local list in signals_detach */
	struct work_struct close_work;	/* SHMCLOSE: kill, drop the table's */
	struct work_struct free_work;
};

#define vbus_pci_stat_inc(b, f) atomic_long_inc(&(b)->stats.f)

/* pci_bridge_hc.c */
#define VBUS_PCI_HC_NO_DATAP ((size_t)-1)
void vbus_pci_hc_forget_leaks(struct vbus_pci_bridge *b);
int vbus_pci_hypercall(struct vbus_pci_bridge *b, u32 vector,
		       void *req, u32 reqlen, size_t datap_off,
		       void *data, u32 datalen);
void vbus_pci_hc_wake(struct vbus_pci_bridge *b);

/* pci_bridge_signal.c */
void vbus_pci_doorbell(struct vbus_pci_bridge *b, u32 vector);
void vbus_pci_eventq_signal_init(struct vbus_pci_bridge *b);
struct vbus_pci_signal *vbus_pci_signal_alloc(struct vbus_pci_device *dev,
					      struct shm_signal_desc *desc);
int vbus_pci_signal_reserve(struct vbus_pci_signal *sig);
void vbus_pci_signal_publish(struct vbus_pci_signal *sig, u32 handle,
			     u32 vector);
void vbus_pci_signal_unreserve(struct vbus_pci_signal *sig);
void vbus_pci_signals_detach(struct vbus_pci_bridge *b,
			     struct vbus_pci_device *dev);
void vbus_pci_event_shmsignal(struct vbus_pci_bridge *b, u64 cookie);
void vbus_pci_event_shmclose(struct vbus_pci_bridge *b, u64 cookie);
int vbus_pci_signal_module_init(void);
void vbus_pci_signal_module_exit(void);

/* pci_bridge_eventq.c */
int vbus_pci_eventq_setup(struct vbus_pci_bridge *b);
int vbus_pci_eventq_register(struct vbus_pci_bridge *b);
void vbus_pci_eventq_detach(struct vbus_pci_bridge *b);
void vbus_pci_eventq_stop(struct vbus_pci_bridge *b);
void vbus_pci_eventq_free(struct vbus_pci_bridge *b);
void vbus_pci_eventq_wake(struct vbus_pci_bridge *b);

int vbus_pci_eventq_reset(struct vbus_pci_bridge *b);
bool vbus_pci_eventq_run_now(struct vbus_pci_bridge *b);

/* pci_bridge_epoch.c: calls hc, eventq and dev; none of them calls it */
void vbus_pci_epoch_init(struct vbus_pci_bridge *b);
void vbus_pci_epoch_stop(struct vbus_pci_bridge *b);
void vbus_pci_epoch_wake(struct vbus_pci_bridge *b);

/* pci_bridge_pm.c */
extern const struct dev_pm_ops vbus_pci_pm_ops;
irqreturn_t vbus_pci_hc_irq(int irq, void *arg);
irqreturn_t vbus_pci_eventq_irq(int irq, void *arg);

/* pci_bridge_qvec.c */
int vbus_pci_qvec_alloc_vectors(struct vbus_pci_bridge *b);
int vbus_pci_qvec_start(struct vbus_pci_bridge *b);
void vbus_pci_qvec_stop(struct vbus_pci_bridge *b);
void vbus_pci_qvec_free(struct vbus_pci_bridge *b);
u64 vbus_pci_qvec_offer(struct vbus_pci_bridge *b);
void vbus_pci_qvec_negotiated(struct vbus_pci_bridge *b, u64 caps);
void vbus_pci_qvec_dev_init(struct vbus_pci_device *dev);
u32 vbus_pci_qvec_pick(struct vbus_pci_device *dev, int id);
const struct cpumask *vbus_pci_qvec_affinity(struct vbus_pci_device *dev,
					     int id);
void vbus_pci_qvec_bind(struct vbus_pci_signal *sig, u32 vector);
bool vbus_pci_qvec_unbind(struct vbus_pci_signal *sig);

/* pci_bridge_debugfs.c */
void vbus_pci_inject_drain(struct vbus_pci_bridge *b,
			   void (*handle)(struct vbus_pci_bridge *,
					  const struct vbus_pci_event *));
void vbus_pci_debugfs_add(struct vbus_pci_bridge *b);
void vbus_pci_debugfs_remove(struct vbus_pci_bridge *b);
void vbus_pci_debugfs_init(void);
void vbus_pci_debugfs_exit(void);

/* pci_bridge_dev.c */
void vbus_pci_queue_devadd(struct vbus_pci_bridge *b,
			   const struct vbus_pci_add_event *ev);
void vbus_pci_queue_devdrop(struct vbus_pci_bridge *b, u64 id);
void vbus_pci_devices_quiesce(struct vbus_pci_bridge *b);
void vbus_pci_devices_sleep(struct vbus_pci_bridge *b);
void vbus_pci_devices_remove_all(struct vbus_pci_bridge *b);
void vbus_pci_devices_disconnect(struct vbus_pci_bridge *b);
void vbus_pci_devices_drop_stale(struct vbus_pci_bridge *b);

#endif /* VBUS_PCI_BRIDGE_H */
