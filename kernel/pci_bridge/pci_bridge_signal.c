// SPDX-License-Identifier: GPL-2.0
/*
 * Signals across the ivshmem transport (docs/transport.md, "Signals").
 *
 * Guest -> host: set bit <handle> in BAR2 sigpending and ring the DB_SIGNAL
 * doorbell. Host -> guest: for the eventq, MSI-X vector EVENTQ; for device
 * shms, a SHMSIGNAL event carrying the cookie we gave in DEVSHM. Cookies
 * are keys into bridge->signals (an allocating xarray); we never accept a
 * pointer from the host.
 *
 * References on a struct vbus_pci_signal: the caller of the shm op gets one
 * (usually handed to ioq_init), and the cookie table holds one for the host
 * until SHMCLOSE or the device's close, whichever comes first (xa_erase
 * decides which; after SHMCLOSE the close work holds it until it has killed
 * the deferred notify). SHMSIGNAL dispatch runs under rcu_read_lock(); close
 * erases, waits for an RCU grace period, and only then drops the table's
 * reference, so no dispatch can run on a signal whose ring the driver is
 * about to free.
 *
 * The table is also changed from the eventq tasklet (SHMCLOSE), so process
 * context uses the _bh lock variants (XA_FLAGS_LOCK_BH).
 *
 * A signal bound to a queue vector (pci_bridge_qvec.c) is also on that
 * vector's RCU list, walked by the vector's tasklet; it leaves the list
 * when it leaves the table, and the same grace periods cover both.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/io.h>
#include <linux/rcupdate.h>
#include "pci_bridge.h"

/* SHMCLOSE and frees, in process context (tasklet_kill() sleeps). */
static struct workqueue_struct *vbus_pci_free_wq;

/*
 * noinline: every doorbell goes through this one symbol, so a kprobe on it
 * counts them all (bench/blk-vs-virtio.sh counts virtio-blk's the same way,
 * on vp_notify).
 */
noinline void vbus_pci_doorbell(struct vbus_pci_bridge *b, u32 vector)
{
	vbus_pci_stat_inc(b, doorbells);
	/*
	 * An MMIO write: on x86 it is ordered after all earlier stores to
	 * memory (BAR2, the rings), so the host sees them once it sees the
	 * doorbell's eventfd.
	 */
	iowrite32((b->host_peer << 16) | vector,
		  b->regs + VBUS_PCI_REG_DOORBELL);
}

/*
 * Raise @handle in sigpending and ring the doorbell unless the bit was
 * already set: then a doorbell for it is on its way (whoever set it rings
 * after setting) and the host has not yet exchanged that word with 0, so it
 * will see our signal too. test_and_set_bit is fully ordered: the caller's
 * shared-memory updates (shm_signal_inject's wmb already ordered them
 * before this point) are visible before the bit.
 */
static int vbus_pci_signal_handle(struct vbus_pci_bridge *b, u32 handle)
{
	if (handle >= VBUS_PCI_MAX_SIGNALS)
		return -EINVAL;
	if (!test_and_set_bit(handle, (unsigned long *)b->shm->sigpending))
		vbus_pci_doorbell(b, VBUS_PCI_DB_SIGNAL);
	return 0;
}

/* ---- the eventq's own signal (handle 0) ---- */

static int eventq_signal_inject(struct shm_signal *s)
{
	struct vbus_pci_bridge *b = container_of(s, struct vbus_pci_bridge,
						 eventq_signal);

	return vbus_pci_signal_handle(b, VBUS_PCI_EVENTQ_HANDLE);
}

static void eventq_signal_fault(struct shm_signal *s, const char *msg)
{
	struct vbus_pci_bridge *b = container_of(s, struct vbus_pci_bridge,
						 eventq_signal);

	dev_err_ratelimited(&b->pdev->dev,
			    "eventq faulted (%s): host events stop\n", msg);
}

/* No release: the signal is embedded in the bridge and dies with it. */
static const struct shm_signal_ops eventq_signal_ops = {
	.inject = eventq_signal_inject,
	.fault = eventq_signal_fault,
};

void vbus_pci_eventq_signal_init(struct vbus_pci_bridge *b)
{
	shm_signal_init(&b->eventq_signal, shm_locality_north,
			&eventq_signal_ops, &b->eventq_ring->signal);
}

/* ---- device shm signals ---- */

static struct vbus_pci_signal *to_pci_signal(struct shm_signal *s)
{
	return container_of(s, struct vbus_pci_signal, signal);
}

static int dev_signal_inject(struct shm_signal *s)
{
	struct vbus_pci_signal *sig = to_pci_signal(s);

	/* after close the host may have given the handle to another shm */
	if (READ_ONCE(sig->detached))
		return -ENODEV;
	return vbus_pci_signal_handle(sig->bridge, sig->handle);
}

static void dev_signal_fault(struct shm_signal *s, const char *msg)
{
	struct vbus_pci_signal *sig = to_pci_signal(s);

	dev_err_ratelimited(&sig->dev->vdev.dev, "shm signal %u faulted: %s\n",
			    sig->handle, msg);
}

/*
 * The host closed the shm (SHMCLOSE; the signal is out of the cookie
 * table, so no dispatch reaches it any more). A host that still holds
 * dirty=1 would keep the deferred notify rescheduling itself on the ring
 * for as long as the driver keeps it: stop it now. The driver may enable
 * the signal again, which can schedule it once more; the ring's release
 * (bus_proxy.c) kills it for good before the ring memory is freed.
 */
static void dev_signal_close(struct work_struct *work)
{
	struct vbus_pci_signal *sig = container_of(work, struct vbus_pci_signal,
						   close_work);

	vbus_defer_cancel(&sig->signal.deferred_notify);
	shm_signal_put(&sig->signal);
}

static void dev_signal_free(struct work_struct *work)
{
	struct vbus_pci_signal *sig = container_of(work, struct vbus_pci_signal,
						   free_work);

	/* a deferred notify scheduled by a last enable must not run later */
	vbus_defer_cancel(&sig->signal.deferred_notify);
	/* a queue vector's tasklet that walked past it before unbind is done */
	if (sig->qvec)
		synchronize_rcu();
	kfree(sig);
}

/*
 * Last reference gone. It may be dropped in the eventq tasklet (SHMCLOSE),
 * where tasklet_kill() cannot be called: free from a workqueue.
 */
static void dev_signal_release(struct shm_signal *s)
{
	struct vbus_pci_signal *sig = to_pci_signal(s);

	INIT_WORK(&sig->free_work, dev_signal_free);
	queue_work(vbus_pci_free_wq, &sig->free_work);
}

static const struct shm_signal_ops dev_signal_ops = {
	.inject = dev_signal_inject,
	.fault = dev_signal_fault,
	.release = dev_signal_release,
};

struct vbus_pci_signal *vbus_pci_signal_alloc(struct vbus_pci_device *dev,
					      struct shm_signal_desc *desc)
{
	struct vbus_pci_signal *sig;

	sig = kzalloc(sizeof(*sig), GFP_KERNEL);
	if (!sig)
		return NULL;
	shm_signal_init(&sig->signal, shm_locality_north, &dev_signal_ops,
			desc);
	sig->bridge = dev->bridge;
	sig->dev = dev;
	INIT_WORK(&sig->close_work, dev_signal_close);
	return sig;
}

/*
 * Allocate a cookie: a reserved (NULL) slot, so a SHMSIGNAL that names it
 * before DEVSHM has answered finds nothing. Cyclic, so that a late
 * SHMCLOSE for a closed shm does not hit a new shm that reused its cookie.
 */
int vbus_pci_signal_reserve(struct vbus_pci_signal *sig)
{
	struct vbus_pci_bridge *b = sig->bridge;
	u32 id;
	int ret;

	ret = xa_alloc_cyclic_bh(&b->signals, &id, NULL, XA_LIMIT(1, U32_MAX),
				 &b->sig_next, GFP_KERNEL);
	if (ret < 0)
		return ret;
	sig->cookie = id;
	return 0;
}

/* DEVSHM succeeded: the table takes the host's reference. */
void vbus_pci_signal_publish(struct vbus_pci_signal *sig, u32 handle,
			     u32 vector)
{
	struct vbus_pci_bridge *b = sig->bridge;
	void *old;

	sig->handle = handle;
	shm_signal_get(&sig->signal);
	/* before the table: a SHMSIGNAL dispatch must see it bound */
	vbus_pci_qvec_bind(sig, vector);
	/*
	 * Storing into a reserved slot allocates nothing. xa_store orders
	 * the initialisation of *sig before the entry becomes visible to
	 * the RCU reader in vbus_pci_event_shmsignal().
	 */
	old = xa_store_bh(&b->signals, sig->cookie, sig, GFP_KERNEL);
	if (xa_is_err(old)) {
		dev_err_ratelimited(&sig->dev->vdev.dev,
				    "cannot publish cookie %u: %d\n",
				    sig->cookie, xa_err(old));
		/* never in the table: no close finds it; free waits (RCU) */
		vbus_pci_qvec_unbind(sig);
		shm_signal_put(&sig->signal);
	}
}

void vbus_pci_signal_unreserve(struct vbus_pci_signal *sig)
{
	xa_erase_bh(&sig->bridge->signals, sig->cookie);
}

/*
 * The device is closed (or gone): the host no longer uses its shms. Take
 * every signal of @dev out of the table, wait until no SHMSIGNAL dispatch
 * can still be running on them, then drop the host's references. A late
 * SHMCLOSE for them finds nothing and is ignored.
 */
void vbus_pci_signals_detach(struct vbus_pci_bridge *b,
			     struct vbus_pci_device *dev)
{
	struct vbus_pci_signal *sig, *tmp;
	unsigned long idx;
	LIST_HEAD(gone);

	xa_lock_bh(&b->signals);
	xa_for_each(&b->signals, idx, sig) {
		if (dev && sig->dev != dev)
			continue;
		__xa_erase(&b->signals, idx);
		WRITE_ONCE(sig->detached, true);
		vbus_pci_qvec_unbind(sig);
		list_add_tail(&sig->detach_node, &gone);
	}
	xa_unlock_bh(&b->signals);

	/*
	 * A signal that a SHMCLOSE took out of the table left its queue
	 * vector's list then, from the eventq tasklet, with no grace
	 * period: the driver frees its ring after this returns, so wait
	 * for one here too when queue vectors are in use.
	 */
	if (list_empty(&gone) && !b->qvecs)
		return;

	/* pairs with rcu_read_lock() around the dispatch and the vectors' walk */
	synchronize_rcu();

	list_for_each_entry_safe(sig, tmp, &gone, detach_node) {
		list_del(&sig->detach_node);
		/*
		 * A deferred notify scheduled by an earlier enable would read
		 * the descriptor, which lives in the ring the driver frees
		 * right after close: run it out now.
		 */
		vbus_defer_cancel(&sig->signal.deferred_notify);
		shm_signal_put(&sig->signal);
	}
}

void vbus_pci_event_shmsignal(struct vbus_pci_bridge *b, u64 cookie)
{
	struct vbus_pci_signal *sig = NULL;

	vbus_pci_stat_inc(b, shmsignal);
	rcu_read_lock();
	if (cookie && cookie <= U32_MAX)
		sig = xa_load(&b->signals, cookie);
	/*
	 * Bound to a queue vector: its wakeups run there, and running it
	 * from here too would run its notifier on two CPUs at once.
	 */
	if (sig && READ_ONCE(sig->qvec)) {
		vbus_pci_stat_inc(b, ev_bad);
		dev_dbg_ratelimited(&b->pdev->dev,
				    "SHMSIGNAL for cookie %llu, which has a queue vector: ignored\n",
				    cookie);
		rcu_read_unlock();
		return;
	}
	if (sig)
		_shm_signal_wakeup(&sig->signal);
	rcu_read_unlock();

	if (!sig) {
		vbus_pci_stat_inc(b, ev_bad);
		dev_dbg_ratelimited(&b->pdev->dev,
				    "SHMSIGNAL for unknown cookie %llu\n",
				    cookie);
	}
}

void vbus_pci_event_shmclose(struct vbus_pci_bridge *b, u64 cookie)
{
	struct vbus_pci_signal *sig = NULL;

	vbus_pci_stat_inc(b, shmclose);
	if (cookie && cookie <= U32_MAX)
		sig = xa_erase(&b->signals, cookie);
	if (!sig) {
		/* normal after our own close detached it first */
		dev_dbg_ratelimited(&b->pdev->dev,
				    "SHMCLOSE for unknown cookie %llu\n", cookie);
		return;
	}
	WRITE_ONCE(sig->detached, true);
	vbus_pci_qvec_unbind(sig);
	/*
	 * SHMSIGNAL dispatch runs only in the eventq tasklet, which is
	 * where we are: no such reader can hold @sig. A queue vector's
	 * tasklet may (another CPU): its free waits for a grace period
	 * (dev_signal_free), and so does the device's close before the
	 * driver frees the ring (vbus_pci_signals_detach). The table's
	 * reference goes to the close work, which kills the deferred notify
	 * first (tasklet_kill() sleeps: not here).
	 */
	queue_work(vbus_pci_free_wq, &sig->close_work);
}

int vbus_pci_signal_module_init(void)
{
	vbus_pci_free_wq = alloc_workqueue("vbus_pci_free", 0, 0);
	return vbus_pci_free_wq ? 0 : -ENOMEM;
}

void vbus_pci_signal_module_exit(void)
{
	/* drains: every queued free has run before the module goes */
	destroy_workqueue(vbus_pci_free_wq);
}
