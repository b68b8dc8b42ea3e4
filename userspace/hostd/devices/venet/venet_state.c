// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* venet: the state tx, rx and the ops share (see venet_dev.h). */
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include "venet_dev.h"

/*
 * Bring every tap queue's epoll interest in line with the state: EPOLLIN
 * while its pair can take frames, EPOLLOUT while its pair's tx waits for
 * it to drain.
 */
void venet_tap_update(struct venet *v)
{
	unsigned int i;

	for (i = 0; i < v->queues; i++) {
		struct venet_pair *p = &v->pair[i];
		__u32 ev = 0;

		if (!p->tap_watched)
			continue;
		if (venet_rx_possible(p) && !p->rx_starved)
			ev |= EPOLLIN;
		if (p->tx_blocked && hostd_devq_live(&p->txq))
			ev |= EPOLLOUT;
		if (ev != p->tap_events &&
		    hostd_fd_mod(v->dev, venet_pair_tapfd(p), ev) == 0)
			p->tap_events = ev;
	}
}

/*
 * An invalid descriptor. The contract (docs/devices/venet.md) says drop, count,
 * pop; with strict=1 we fault the device instead, for a guest driver
 * under development that wants the first mistake to stop everything.
 */
void venet_bad_desc(struct venet *v, const char *dir, const char *why)
{
	if (v->strict)
		hostd_dev_fault(v->dev, "venet: bad %s descriptor: %s", dir,
				why ? why : "?");
	else
		hostd_dev_log(v->dev, "venet: bad %s descriptor dropped: %s",
			      dir, why ? why : "?");
}

void venet_tap_unwatch(struct venet_pair *p)
{
	if (p->tap_watched)
		hostd_fd_del(p->v->dev, venet_pair_tapfd(p));
	p->tap_watched = false;
	p->tap_events = 0;
}

void venet_tap_unwatch_all(struct venet *v)
{
	unsigned int i;

	for (i = 0; i < v->queues; i++)
		venet_tap_unwatch(&v->pair[i]);
}

/* The tap went away under us (e.g. `ip link del`): run without backend. */
void venet_backend_lost(struct venet *v, int err)
{
	unsigned int i;

	v->st.backend_lost++;
	snprintf(v->backend_err, sizeof(v->backend_err),
		 "tap %s lost: %s", v->tap.name, strerror(err));
	hostd_dev_log(v->dev, "venet: %s; dropping traffic until the next "
		      "LINKUP", v->backend_err);
	venet_tap_unwatch_all(v);
	tap_close(&v->tap);
	for (i = 0; i < v->queues; i++)
		v->pair[i].tx_blocked = false;
}

/* Tell the guest about @q's completions (suppressed while it masks them). */
void venet_q_signal(struct hostd_devq *q, __u64 *notify_out)
{
	hostd_devq_signal(q);
	(*notify_out)++;
}

/* One batch done on @q: one signal for it, and the counters. */
void venet_q_complete(struct venet *v, struct hostd_devq *q, unsigned int n,
		       __u64 bytes, __u64 *notify_out)
{
	if (!n)
		return;
	venet_q_signal(q, notify_out);
	hostd_dev_account(v->dev, n, bytes);
}
