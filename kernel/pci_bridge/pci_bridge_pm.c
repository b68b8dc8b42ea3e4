// SPDX-License-Identifier: GPL-2.0
/*
 * System sleep: suspend to idle or RAM, and hibernation's freeze, thaw,
 * poweroff and restore (docs/transport.md, "Host restarts"; issue 20.7).
 *
 * While the guest sleeps vbus-hostd must not write its memory: a
 * hibernation image is being made of it, or, after restore, another
 * kernel's memory layout owns it. Going to sleep is a host leaving, done
 * by us: no re-attach work runs; each device's driver lets go of its
 * rings through its disconnect op (venet: carrier off, vbus-blk: its
 * requests parked), closing the device with the host first (DEVCLOSE:
 * it lets go of its shms and every buffer posted on them); then the
 * eventq is detached (BUSREG of none). Waking up is the re-attach after a
 * host restart (pci_bridge_epoch.c): the eventq formatted afresh,
 * NEGOTIATE, BUSREG, and the host's DEVADDs reconnect the devices. A
 * host that restarted meanwhile is just that host.
 */
#include <linux/pci.h>
#include <linux/pm.h>
#include "pci_bridge.h"

static int vbus_pci_pm_sleep(struct device *d)
{
	struct vbus_pci_bridge *b = dev_get_drvdata(d);

	if (!b)
		return 0;
	vbus_pci_epoch_stop(b);
	vbus_pci_devices_sleep(b);
	vbus_pci_eventq_detach(b);
	dev_info(d, "vbus bridge asleep: devices closed, eventq detached\n");
	return 0;
}

static int vbus_pci_pm_wake(struct device *d)
{
	struct vbus_pci_bridge *b = dev_get_drvdata(d);

	if (!b)
		return 0;
	vbus_pci_epoch_wake(b);
	return 0;
}

const struct dev_pm_ops vbus_pci_pm_ops = {
	SYSTEM_SLEEP_PM_OPS(vbus_pci_pm_sleep, vbus_pci_pm_wake)
};
