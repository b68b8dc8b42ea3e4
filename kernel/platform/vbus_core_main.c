// SPDX-License-Identifier: GPL-2.0
/*
 * vbus_core.ko: shm-signal and IOQ from core/, plus the kernel half of the
 * platform vocabulary.
 *
 * One module holds both: IOQ cannot work without shm-signal, and one
 * module means one load-order step and one symbol set to version.
 */
#include <linux/module.h>
#include <vbus/platform.h>

static void vbus_defer_tasklet(struct tasklet_struct *t)
{
	vbus_defer_t *d = from_tasklet(d, t, tasklet);

	d->fn(d->arg);
}

void vbus_defer_init(vbus_defer_t *d, void (*fn)(void *), void *arg)
{
	d->fn = fn;
	d->arg = arg;
	tasklet_setup(&d->tasklet, vbus_defer_tasklet);
}
EXPORT_SYMBOL_GPL(vbus_defer_init);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vbus core: shared-memory signals and IOQ rings");
MODULE_AUTHOR("vbus developers");
