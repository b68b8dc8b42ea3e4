// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: a device's self-wakeup (device.h, struct hostd_kick): soon
 * work on the guest's loop (loop.h, hostd_loop_soon), so a kicked device
 * runs again after the fds that were already ready, never before them,
 * and arming or firing it costs no system call (it used to be an eventfd:
 * a write, an epoll_wait and a read per kick).
 */
#include <errno.h>
#include <stdlib.h>
#include "dev.h"

static void kick_fire(void *arg)
{
	struct hostd_kick *k = arg;

	if (!k->pending)
		return;		/* cancelled meanwhile */
	k->pending = false;
	k->fn(k->dev, k->arg);
}

int hostd_kick_init(struct hostd_dev *dev, struct hostd_kick *k,
		    void (*fn)(struct hostd_dev *dev, void *arg), void *arg)
{
	/* the initing thread's loop: a queue thread's kick stays on it */
	*k = (struct hostd_kick){ .dev = dev, .loop = hostd_dev_loop(dev),
				  .fn = fn, .arg = arg };
	k->soon = calloc(1, sizeof(*k->soon));
	if (!k->soon)
		return -ENOMEM;
	k->soon->fn = kick_fire;
	k->soon->arg = k;
	return 0;
}

bool hostd_kick(struct hostd_kick *k)
{
	if (k->pending || !k->soon)
		return false;
	k->pending = true;
	hostd_loop_soon(k->loop, k->soon);
	return true;
}

void hostd_kick_cancel(struct hostd_kick *k)
{
	if (k->soon)
		hostd_loop_soon_cancel(k->soon);
	k->pending = false;
}

void hostd_kick_fini(struct hostd_kick *k)
{
	if (!k->soon)
		return;
	hostd_kick_cancel(k);
	free(k->soon);
	k->soon = NULL;
}
