// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: a device's self-wakeup (device.h, struct hostd_kick): an
 * eventfd in the guest's loop, so a kicked device runs again after the
 * fds that were already ready, never before them.
 */
#include <sys/epoll.h>
#include <unistd.h>
#include "device.h"

static void kick_fire(struct hostd_dev *dev, int fd, __u32 events, void *arg)
{
	struct hostd_kick *k = arg;

	(void)events;
	hostd_eventfd_drain(fd);
	if (!k->pending)
		return;		/* cancelled meanwhile */
	k->pending = false;
	k->fn(dev, k->arg);
}

int hostd_kick_init(struct hostd_dev *dev, struct hostd_kick *k,
		    void (*fn)(struct hostd_dev *dev, void *arg), void *arg)
{
	int ret;

	*k = (struct hostd_kick){ .dev = dev, .fn = fn, .arg = arg };
	k->fd = hostd_eventfd_new();
	if (k->fd < 0)
		return k->fd;
	ret = hostd_fd_add(dev, k->fd, EPOLLIN, kick_fire, k);
	if (ret < 0) {
		close(k->fd);
		k->fd = -1;
	}
	return ret;
}

bool hostd_kick(struct hostd_kick *k)
{
	if (k->pending || k->fd < 0)
		return false;
	k->pending = true;
	hostd_eventfd_write(k->fd);
	return true;
}

void hostd_kick_cancel(struct hostd_kick *k)
{
	if (k->fd >= 0)
		hostd_eventfd_drain(k->fd);
	k->pending = false;
}

void hostd_kick_fini(struct hostd_kick *k)
{
	if (k->fd < 0)
		return;
	hostd_fd_del(k->dev, k->fd);
	close(k->fd);
	k->fd = -1;
	k->pending = false;
}
