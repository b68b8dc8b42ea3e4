// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: a device's one-shot timer (device.h, struct hostd_timer): a
 * timerfd watched on the loop of the thread that inited it, so the
 * callback runs where the device's other callbacks for that queue run.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include "dev.h"

static void timer_fire(struct hostd_dev *dev, int fd, __u32 events,
		       void *arg)
{
	struct hostd_timer *t = arg;

	(void)dev;
	(void)events;
	/* a cancel after expiry leaves a count: nothing to run then */
	if (!hostd_eventfd_drain(fd) || !t->armed)
		return;
	t->armed = false;
	t->fn(t->dev, t->arg);
}

int hostd_timer_init(struct hostd_dev *dev, struct hostd_timer *t,
		     void (*fn)(struct hostd_dev *dev, void *arg), void *arg)
{
	int ret;

	*t = (struct hostd_timer){ .dev = dev, .fd = -1, .fn = fn,
				   .arg = arg };
	t->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (t->fd < 0)
		return -errno;
	ret = hostd_fd_add(dev, t->fd, EPOLLIN, timer_fire, t);
	if (ret < 0) {
		close(t->fd);
		t->fd = -1;
	}
	return ret;
}

static int timer_set(struct hostd_timer *t, __u64 ns)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = (time_t)(ns / 1000000000u);
	its.it_value.tv_nsec = (long)(ns % 1000000000u);
	return timerfd_settime(t->fd, 0, &its, NULL);
}

bool hostd_timer_arm(struct hostd_timer *t, __u64 ns)
{
	if (t->armed || t->fd < 0)
		return false;
	/* 0 would disarm: the soonest a timerfd can fire instead */
	if (timer_set(t, ns ? ns : 1) < 0)
		return false;	/* EINVAL only: a bad fd or value */
	t->armed = true;
	return true;
}

void hostd_timer_cancel(struct hostd_timer *t)
{
	if (t->fd >= 0 && t->armed)
		(void)timer_set(t, 0);
	t->armed = false;
}

void hostd_timer_fini(struct hostd_timer *t)
{
	if (t->fd < 0)
		return;
	hostd_fd_del(t->dev, t->fd);
	close(t->fd);
	t->fd = -1;
	t->armed = false;
}
