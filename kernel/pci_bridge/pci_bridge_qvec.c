// SPDX-License-Identifier: GPL-2.0
/*
 * Per-queue MSI-X vectors (docs/transport.md, "Per-queue vectors").
 *
 * Vectors HC and EVENTQ are always there. When the host wired more
 * (BAR2 msix_vectors, its vectors=) and the device's MSI-X table has
 * them, the rest become queue vectors: allocated with managed affinity
 * (spread over the CPUs by the kernel, as virtio_pci does), offered in
 * NEGOTIATE as VBUS_PCI_CAP_QVEC and used only when the host accepts.
 * Then every device shm with a signal is bound to one queue vector at
 * DEVSHM (device's base + its queue, modulo the count: the queue is the
 * shm id, or id / shms_per_queue for a driver whose queue is several
 * shms, as venet's rx+tx pair; a device's queues land on different
 * vectors, different devices start at different ones)
 * and the host signals it on that vector instead of with a SHMSIGNAL
 * event. The eventq keeps the control events (DEVADD, DEVDROP, SHMCLOSE)
 * and every shm of a host that declined.
 *
 * A queue vector's hard irq schedules its own tasklet, which runs on the
 * CPU the interrupt arrived on: the signals' notifiers keep running in
 * softirq context as they do from the eventq tasklet (drivers rely on
 * that), but each vector's completions run on their own CPU, no longer
 * all behind one tasklet. The tasklet walks the vector's signals under
 * RCU; _shm_signal_wakeup() runs a notifier only for a signal the host
 * actually raised (pending/dirty in its descriptor).
 *
 * Everything the host says is checked: msix_vectors is clamped to the
 * table and VBUS_PCI_MAX_VECTORS, a capability we did not offer is
 * ignored, a vector with no signal bound fires into an empty list, and a
 * SHMSIGNAL event for a signal bound to a vector is refused (counted:
 * it would run the notifier from two CPUs at once).
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/interrupt.h>
#include <linux/rculist.h>
#include "pci_bridge.h"

static bool qvec_enable = true;
module_param_named(queue_vectors, qvec_enable, bool, 0444);
MODULE_PARM_DESC(queue_vectors,
		 "use per-queue MSI-X vectors when the host offers them (default on)");

/* How many queue vectors to ask for: 0 when the host or QEMU has none. */
static unsigned int qvec_wanted(struct vbus_pci_bridge *b)
{
	struct pci_dev *pdev = b->pdev;
	u32 host = READ_ONCE(b->shm->msix_vectors);	/* read once */
	int table = pci_msix_vec_count(pdev);
	unsigned int n;

	if (!qvec_enable || host <= VBUS_PCI_NR_VECTORS)
		return 0;
	if (table < 0 || table <= VBUS_PCI_NR_VECTORS) {
		dev_info(&pdev->dev,
			 "host wired %u MSI-X vectors, the device has %d: no per-queue vectors (QEMU's vectors= must match the host's)\n",
			 host, table);
		return 0;
	}
	n = min3(host, (u32)table, (u32)VBUS_PCI_MAX_VECTORS);
	if (n != host)
		dev_info(&pdev->dev,
			 "host wired %u MSI-X vectors, using %u (device table %d, at most %u)\n",
			 host, n, table, VBUS_PCI_MAX_VECTORS);
	/* more than one per CPU buys nothing */
	return min(n - VBUS_PCI_NR_VECTORS, num_possible_cpus());
}

/*
 * Allocate the bridge's MSI-X vectors: HC, EVENTQ and, when the host has
 * them, up to qvec_wanted() queue vectors with managed affinity. Fewer
 * than asked (the kernel's limits) is fine; none falls back to the two.
 */
int vbus_pci_qvec_alloc_vectors(struct vbus_pci_bridge *b)
{
	struct irq_affinity desc = { .pre_vectors = VBUS_PCI_NR_VECTORS };
	struct pci_dev *pdev = b->pdev;
	unsigned int want = qvec_wanted(b);
	int ret;

	if (want) {
		ret = pci_alloc_irq_vectors_affinity(pdev,
						     VBUS_PCI_NR_VECTORS + 1,
						     VBUS_PCI_NR_VECTORS + want,
						     PCI_IRQ_MSIX |
						     PCI_IRQ_AFFINITY, &desc);
		if (ret > VBUS_PCI_NR_VECTORS) {
			b->nqvec = ret - VBUS_PCI_NR_VECTORS;
			return 0;
		}
		dev_info(&pdev->dev,
			 "no per-queue vectors (%d): all signals through the eventq\n",
			 ret);
	}
	ret = pci_alloc_irq_vectors(pdev, VBUS_PCI_NR_VECTORS,
				    VBUS_PCI_NR_VECTORS, PCI_IRQ_MSIX);
	return ret < 0 ? ret : 0;
}

static irqreturn_t vbus_pci_qvec_irq(int irq, void *arg)
{
	struct vbus_pci_qvec *qv = arg;

	tasklet_schedule(&qv->tasklet);
	return IRQ_HANDLED;
}

static void vbus_pci_qvec_tasklet(struct tasklet_struct *t)
{
	struct vbus_pci_qvec *qv = from_tasklet(qv, t, tasklet);
	struct vbus_pci_signal *sig;

	vbus_pci_stat_inc(qv->b, qvec_runs);
	/* pairs with list_del_rcu + synchronize_rcu in unbind's callers */
	rcu_read_lock();
	list_for_each_entry_rcu(sig, &qv->signals, qvec_node)
		_shm_signal_wakeup(&sig->signal);
	rcu_read_unlock();
}

/* Request the queue vectors' irqs; undone by vbus_pci_qvec_stop(). */
int vbus_pci_qvec_start(struct vbus_pci_bridge *b)
{
	struct pci_dev *pdev = b->pdev;
	unsigned int i;
	int ret;

	if (!b->nqvec)
		return 0;
	b->qvecs = kcalloc(b->nqvec, sizeof(*b->qvecs), GFP_KERNEL);
	if (!b->qvecs)
		return -ENOMEM;
	for (i = 0; i < b->nqvec; i++) {
		struct vbus_pci_qvec *qv = &b->qvecs[i];

		qv->b = b;
		qv->index = VBUS_PCI_NR_VECTORS + i;
		INIT_LIST_HEAD(&qv->signals);
		tasklet_setup(&qv->tasklet, vbus_pci_qvec_tasklet);
		snprintf(qv->name, sizeof(qv->name), "vbus-q%u@%s", i,
			 pci_name(pdev));
		ret = request_irq(pci_irq_vector(pdev, qv->index),
				  vbus_pci_qvec_irq, 0, qv->name, qv);
		if (ret)
			return ret;
		qv->irq = pci_irq_vector(pdev, qv->index);
	}
	return 0;
}

/* No queue vector fires or runs after this. */
void vbus_pci_qvec_stop(struct vbus_pci_bridge *b)
{
	unsigned int i;

	WRITE_ONCE(b->qvec_on, false);
	for (i = 0; b->qvecs && i < b->nqvec; i++) {
		struct vbus_pci_qvec *qv = &b->qvecs[i];

		if (qv->irq > 0)
			free_irq(qv->irq, qv);
		qv->irq = 0;
		if (qv->tasklet.callback)
			tasklet_kill(&qv->tasklet);
	}
}

/* After vbus_pci_qvec_stop() and once no signal is bound any more. */
void vbus_pci_qvec_free(struct vbus_pci_bridge *b)
{
	kfree(b->qvecs);
	b->qvecs = NULL;
}

/* NEGOTIATE: what we offer. */
u64 vbus_pci_qvec_offer(struct vbus_pci_bridge *b)
{
	return b->qvecs ? VBUS_PCI_CAP_QVEC : 0;
}

/*
 * NEGOTIATE answered 0 with @caps (host-written: only the bits we offered
 * count). Devices register their shms after this, at probe or re-attach.
 */
void vbus_pci_qvec_negotiated(struct vbus_pci_bridge *b, u64 caps)
{
	bool on = (caps & vbus_pci_qvec_offer(b)) & VBUS_PCI_CAP_QVEC;

	if (on != READ_ONCE(b->qvec_on) || !b->qvec_said) {
		if (on)
			dev_info(&b->pdev->dev, "per-queue MSI-X vectors: %u\n",
				 b->nqvec);
		else if (b->qvecs)
			dev_info(&b->pdev->dev,
				 "host declined per-queue vectors: device signals through the eventq\n");
		b->qvec_said = true;
	}
	WRITE_ONCE(b->qvec_on, on);
}

/* The next device's first vector: devices start on different ones. */
void vbus_pci_qvec_dev_init(struct vbus_pci_device *dev)
{
	struct vbus_pci_bridge *b = dev->bridge;

	dev->qvec_base = b->nqvec ?
		(unsigned int)atomic_inc_return(&b->qvec_next) % b->nqvec : 0;
}

/*
 * The driver's queue of shm @id: the bound driver's shms_per_queue
 * consecutive ids share one queue (and so one vector). Only called while
 * a driver is bound (its DEVSHM, its queue_affinity).
 */
static unsigned int qvec_queue_of(struct vbus_pci_device *dev, int id)
{
	struct device_driver *drv = dev->vdev.dev.driver;
	unsigned int per = drv ? to_vbus_driver(drv)->shms_per_queue : 0;

	return (unsigned int)id / (per ? per : 1);
}

/* The queue vector of shm @id of @dev, or NULL (through the eventq). */
static struct vbus_pci_qvec *qvec_of(struct vbus_pci_device *dev, int id)
{
	struct vbus_pci_bridge *b = dev->bridge;

	if (!READ_ONCE(b->qvec_on) || !b->qvecs || id < 0)
		return NULL;
	return &b->qvecs[(dev->qvec_base + qvec_queue_of(dev, id)) %
			 b->nqvec];
}

/* DEVSHM's vector field for shm @id of @dev: 0 = the eventq. */
u32 vbus_pci_qvec_pick(struct vbus_pci_device *dev, int id)
{
	struct vbus_pci_qvec *qv = qvec_of(dev, id);

	return qv ? qv->index : 0;
}

/* The CPUs whose interrupts complete shm @id of @dev, or NULL. */
const struct cpumask *vbus_pci_qvec_affinity(struct vbus_pci_device *dev,
					     int id)
{
	struct vbus_pci_qvec *qv = qvec_of(dev, id);

	return qv ? pci_irq_get_affinity(dev->bridge->pdev, qv->index) : NULL;
}

/*
 * DEVSHM bound @sig to MSI-X vector @vector (what vbus_pci_qvec_pick()
 * gave): from now on its interrupts run its wakeup. Before the signal is
 * in the cookie table, so a SHMSIGNAL dispatch already sees it bound.
 */
void vbus_pci_qvec_bind(struct vbus_pci_signal *sig, u32 vector)
{
	struct vbus_pci_bridge *b = sig->bridge;
	struct vbus_pci_qvec *qv;

	if (!vector || !b->qvecs || vector < VBUS_PCI_NR_VECTORS ||
	    vector >= VBUS_PCI_NR_VECTORS + b->nqvec)
		return;
	qv = &b->qvecs[vector - VBUS_PCI_NR_VECTORS];
	spin_lock_bh(&b->qvec_lock);
	WRITE_ONCE(sig->qvec, qv);	/* stays set: "was bound", for free */
	sig->qvec_bound = true;
	list_add_tail_rcu(&sig->qvec_node, &qv->signals);
	spin_unlock_bh(&b->qvec_lock);
}

/*
 * Take @sig off its vector. A tasklet may still be walking past it: the
 * caller waits for an RCU grace period before the signal can be freed.
 * True when it was bound.
 */
bool vbus_pci_qvec_unbind(struct vbus_pci_signal *sig)
{
	struct vbus_pci_bridge *b = sig->bridge;
	bool was;

	spin_lock_bh(&b->qvec_lock);
	was = sig->qvec_bound;
	if (was)
		list_del_rcu(&sig->qvec_node);
	sig->qvec_bound = false;
	spin_unlock_bh(&b->qvec_lock);
	return was;
}
