// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* vbus-hostd: a device's queue thread (see devthread.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "devthread.h"

int hostd_devthread_start(struct hostd_devthread *t, unsigned int index,
			  const char *name, void (*deferred)(void *arg),
			  void *arg)
{
	int ret;

	memset(t, 0, sizeof(*t));
	t->index = index;
	hostd_list_init(&t->shms);
	snprintf(t->name, sizeof(t->name), "%s", name);
	ret = hostd_loop_init(&t->loop);
	if (ret < 0)
		return ret;
	hostd_loop_set_deferred(&t->loop, deferred, arg);
	ret = hostd_loop_start(&t->loop, t->name);
	if (ret < 0)
		hostd_loop_fini(&t->loop);
	return ret;
}

void hostd_devthread_stop(struct hostd_devthread *t)
{
	if (t->loop.live)
		hostd_loop_stop(&t->loop);
}

void hostd_devthread_fini(struct hostd_devthread *t)
{
	hostd_loop_fini(&t->loop);	/* stops and joins if still running */
}

struct hostd_devthread *hostd_devthread_current(struct hostd_devthread *t,
						unsigned int n)
{
	struct hostd_loop *l = hostd_loop_current();
	unsigned int i;

	for (i = 0; l && i < n; i++)
		if (&t[i].loop == l)
			return &t[i];
	return NULL;
}
