// SPDX-License-Identifier: GPL-2.0
/*
 * Host restarts (docs/transport.md, "Host restarts").
 *
 * vbus-hostd may go away and come back on the same QEMU connection; a new
 * daemon knows nothing of our bus. BAR2's host_epoch says so: odd = the
 * host went away on purpose, a new even value = a new host serves us. The
 * handlers of both MSI-X vectors are here: after the vector's own work
 * (pci_bridge_hc.c, pci_bridge_eventq.c) they compare it with the value
 * we last acted on and schedule the re-attach work: the device drivers
 * let go of their shms (disconnect), the eventq is formatted afresh,
 * NEGOTIATE, BUSREG; the host's DEVADDs then reconnect the devices we
 * still have (pci_bridge_dev.c) and whatever it no longer announces is
 * dropped. Calls go one way: this file calls the hypercall, eventq and
 * device layers; none of them calls it.
 *
 * host_epoch is the host's to write and may flap: the work runs at most
 * once a second and always acts on the latest value, so a hostile host
 * costs us a re-attach a second and its own devices, never a loop.
 */
#include <linux/module.h>
#include <linux/jiffies.h>
#include "pci_bridge.h"

#define VBUS_PCI_REATTACH_INTERVAL	HZ

/*
 * Test-only (docs/fault-injection.md, "Guest-side window wideners"): a
 * re-attach holds the eventq tasklet off from before it handles BUSREG's
 * events until after it dropped the devices not announced, as a tasklet
 * starved by a busy guest would be. A re-attach that counted on the
 * tasklet for what one pass left (issue 20.6) then drops live devices
 * every time, not once in a few runs. false, the default, changes
 * nothing.
 */
static bool test_reattach_hold_tasklet;
module_param(test_reattach_hold_tasklet, bool, 0644);
MODULE_PARM_DESC(test_reattach_hold_tasklet,
		 "test only: a re-attach holds the eventq tasklet off until it dropped the devices not announced");

static bool vbus_pci_test_hold_begin(struct vbus_pci_bridge *b)
{
	if (!READ_ONCE(test_reattach_hold_tasklet))
		return false;
	tasklet_disable(&b->eventq_tasklet);
	return true;
}

static void vbus_pci_test_hold_end(struct vbus_pci_bridge *b, bool held)
{
	if (held)
		tasklet_enable(&b->eventq_tasklet);
}

static void vbus_pci_epoch_check(struct vbus_pci_bridge *b);

/* Hypercalls fail at once from here on (pci_bridge_hc.c). */
static void vbus_pci_host_down(struct vbus_pci_bridge *b)
{
	if (READ_ONCE(b->host_down))
		return;
	WRITE_ONCE(b->host_down, true);
	/* a caller waiting for an answer gives up now */
	wake_up(&b->hc_wq);
}

static int vbus_pci_reattach_bus(struct vbus_pci_bridge *b)
{
	struct vbus_pci_negotiate neg = {
		.magic = VBUS_PCI_ABI_MAGIC,
		.version = VBUS_PCI_HC_VERSION,
		.capabilities = vbus_pci_qvec_offer(b),
	};
	int ret;

	ret = vbus_pci_eventq_reset(b);
	if (!ret)
		ret = vbus_pci_hypercall(b, VBUS_PCI_HC_NEGOTIATE, &neg,
					 sizeof(neg), VBUS_PCI_HC_NO_DATAP,
					 NULL, 0);
	/* the new host may offer per-queue vectors or not */
	if (!ret)
		vbus_pci_qvec_negotiated(b, neg.capabilities);
	if (!ret)
		ret = vbus_pci_eventq_register(b);
	return ret > 0 ? -EPROTO : ret;
}

/* A new host: everything it needs from us, from the start. */
static void vbus_pci_reattach(struct vbus_pci_bridge *b, u32 epoch)
{
	bool held;
	int ret;

	vbus_pci_stat_inc(b, reattach);
	WRITE_ONCE(b->host_down, false);
	vbus_pci_devices_disconnect(b);
	ret = vbus_pci_reattach_bus(b);
	if (ret) {
		vbus_pci_stat_inc(b, reattach_fail);
		dev_err_ratelimited(&b->pdev->dev,
				    "host epoch %u: re-attach failed (%d); waiting for the next host\n",
				    epoch, ret);
		return;
	}
	/*
	 * BUSREG's answer comes after the host posted every DEVADD: handle
	 * them all here (the whole ring, not one tasklet budget) and let the
	 * ordered workqueue carry them out, then whatever is still stale is
	 * not the new host's. A host that keeps the ring full does not get
	 * live devices dropped by it: what it did not announce yet stays,
	 * disconnected, until a later re-attach or the bridge's removal.
	 */
	held = vbus_pci_test_hold_begin(b);
	if (!vbus_pci_eventq_run_now(b)) {
		vbus_pci_test_hold_end(b, held);
		dev_warn_ratelimited(&b->pdev->dev,
				     "host epoch %u: the host keeps the eventq full; not dropping devices it did not announce yet\n",
				     epoch);
		return;
	}
	flush_workqueue(b->wq);
	vbus_pci_devices_drop_stale(b);
	vbus_pci_test_hold_end(b, held);
	dev_info(&b->pdev->dev, "host epoch %u: bus re-attached\n", epoch);
}

static void vbus_pci_reattach_work(struct work_struct *work)
{
	struct vbus_pci_bridge *b = container_of(to_delayed_work(work),
						 struct vbus_pci_bridge,
						 reattach);
	u32 epoch;

	if (READ_ONCE(b->reattach_off))
		return;
	epoch = READ_ONCE(b->shm->host_epoch);
	/*
	 * The epoch before what the host wrote ahead of it (its answer to
	 * a pending hypercall): pairs with the host's wmb before it stores
	 * host_epoch (ivshmem.c, epoch_set).
	 */
	virt_rmb();
	if (epoch == b->epoch)
		return;
	WRITE_ONCE(b->epoch, epoch);

	/*
	 * Only a re-attach counts against the rate limit: going down is
	 * cheap (drivers disconnect once per outage) and must not delay
	 * the re-attach of a graceful restart.
	 */
	if (epoch & 1) {
		vbus_pci_stat_inc(b, host_down);
		vbus_pci_host_down(b);
		vbus_pci_devices_disconnect(b);
		dev_info(&b->pdev->dev,
			 "host epoch %u: the host went away; devices wait for it\n",
			 epoch);
		return;
	}
	WRITE_ONCE(b->reattach_next, jiffies + VBUS_PCI_REATTACH_INTERVAL);
	vbus_pci_reattach(b, epoch);
	/* changed while we worked: its interrupt may have come and gone */
	if (READ_ONCE(b->shm->host_epoch) != epoch)
		vbus_pci_epoch_check(b);
}

/* From either MSI-X vector: has the host changed? */
static void vbus_pci_epoch_check(struct vbus_pci_bridge *b)
{
	u32 epoch = READ_ONCE(b->shm->host_epoch);
	unsigned long delay = 0;

	if (epoch == READ_ONCE(b->epoch) || READ_ONCE(b->reattach_off))
		return;
	/* fail fast at once; the work does the rest, rate-limited */
	if (epoch & 1)
		vbus_pci_host_down(b);
	if (time_before(jiffies, READ_ONCE(b->reattach_next)))
		delay = READ_ONCE(b->reattach_next) - jiffies;
	schedule_delayed_work(&b->reattach, delay);
}

irqreturn_t vbus_pci_hc_irq(int irq, void *arg)
{
	struct vbus_pci_bridge *b = arg;

	vbus_pci_hc_wake(b);
	vbus_pci_epoch_check(b);
	return IRQ_HANDLED;
}

irqreturn_t vbus_pci_eventq_irq(int irq, void *arg)
{
	struct vbus_pci_bridge *b = arg;

	vbus_pci_eventq_wake(b);
	vbus_pci_epoch_check(b);
	return IRQ_HANDLED;
}

void vbus_pci_epoch_init(struct vbus_pci_bridge *b)
{
	INIT_DELAYED_WORK(&b->reattach, vbus_pci_reattach_work);
	b->reattach_next = jiffies;
}

/*
 * System sleep (pci_bridge_pm.c) stops the work with vbus_pci_epoch_stop();
 * waking up re-attaches to the host there is now, as the work would.
 */
void vbus_pci_epoch_wake(struct vbus_pci_bridge *b)
{
	u32 epoch = READ_ONCE(b->shm->host_epoch);

	/* as in the work: pairs with the host's wmb before host_epoch */
	virt_rmb();
	WRITE_ONCE(b->epoch, epoch);
	WRITE_ONCE(b->reattach_off, false);
	if (epoch & 1) {
		/* away: the devices wait, its next epoch's interrupt re-attaches */
		vbus_pci_host_down(b);
		return;
	}
	WRITE_ONCE(b->reattach_next, jiffies + VBUS_PCI_REATTACH_INTERVAL);
	vbus_pci_reattach(b, epoch);
	if (READ_ONCE(b->shm->host_epoch) != epoch)
		vbus_pci_epoch_check(b);
}

/* Remove: no re-attach may start or still run after this. */
void vbus_pci_epoch_stop(struct vbus_pci_bridge *b)
{
	WRITE_ONCE(b->reattach_off, true);
	cancel_delayed_work_sync(&b->reattach);
}
