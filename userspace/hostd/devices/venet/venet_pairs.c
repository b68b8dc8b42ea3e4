// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * venet, queue pairs (see venet_dev.h; docs/devices/venet.md, "Queue
 * pairs"). The guest asks for pairs with QUEUES (granted: at most
 * queues=) before its first ring and picks how many of them take rx with
 * SETACTIVE. A guest that never asks runs pair 0 alone, exactly the
 * single-queue device.
 *
 * Pair P reads tap queue P. With a multi-queue tap the queues of the
 * pairs that are not active (not granted, or above SETACTIVE's count)
 * are detached (TUNSETQUEUE), so the host kernel's flow steering moves
 * their flows to the active ones instead of queueing frames nobody
 * reads; a detached queue polls EPOLLERR, so it leaves the loop first.
 * Every pair's tx ring is still drained: an inactive pair writes to
 * queue 0.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include "venet_dev.h"

bool venet_rings_registered(const struct venet *v)
{
	unsigned int i;

	for (i = 0; i < v->queues; i++)
		if (v->pair[i].rxq.attached || v->pair[i].txq.attached)
			return true;
	return false;
}

/* Tap queue @p->idx: readable, writable, gone. */
static void tap_cb(struct hostd_dev *dev, int fd, __u32 events, void *arg)
{
	struct venet_pair *p = arg;
	struct venet *v = p->v;
	unsigned int i;

	(void)dev;
	(void)fd;
	if (events & (EPOLLERR | EPOLLHUP)) {
		/* level-triggered and unmaskable: must not spin on it */
		venet_backend_lost(v, EIO);
		return;
	}
	if (events & EPOLLOUT) {
		/* every pair whose tx waits for this queue */
		for (i = 0; i < v->queues; i++) {
			struct venet_pair *r = &v->pair[i];

			if (r->tx_blocked && r->tx_blocked_on == p->idx) {
				r->tx_blocked = false;
				venet_tx_work(r);
			}
		}
	}
	if (events & EPOLLIN)
		venet_rx_run(p);
}

/* Into the loop, while the device is open and the queue attached. */
void venet_tap_watch(struct venet_pair *p)
{
	int fd = venet_pair_tapfd(p);

	if (p->tap_watched || fd < 0 || !p->v->open ||
	    !(p->v->tap.attached & (1u << p->idx)))
		return;
	/* events 0: venet_tap_update() turns EPOLLIN/EPOLLOUT on as needed */
	if (hostd_fd_add(p->v->dev, fd, 0, tap_cb, p) == 0) {
		p->tap_watched = true;
		p->tap_events = 0;
	}
}

/*
 * Tap queue @q attached or not, as its pair's activity says; a failure is
 * logged and leaves the queue as it was (its pair then gets no rx, or the
 * kernel keeps steering flows to a queue we do not read: both counted
 * nowhere but the log).
 */
static void tap_queue_set(struct venet *v, unsigned int q, bool on)
{
	int ret;

	if (!on)
		venet_tap_unwatch(&v->pair[q]);
	ret = tap_set_queue(&v->tap, q, on);
	if (ret < 0)
		hostd_dev_log(v->dev, "venet: tap %s: %s queue %u: %s",
			      v->tap.name, on ? "attaching" : "detaching", q,
			      strerror(-ret));
	if (on)
		venet_tap_watch(&v->pair[q]);
}

/*
 * The tap's queues follow v->active: attached and watched below it,
 * detached above. A pair whose tx waited for a queue now detached tries
 * again (it writes to queue 0 now); the pairs that became active look at
 * their queue.
 */
void venet_pairs_apply(struct venet *v)
{
	unsigned int i;

	for (i = 0; v->tap.mq && i < v->tap.queues; i++)
		if (i)
			tap_queue_set(v, i, i < v->active);
	if (v->tap.queues)
		venet_tap_watch(&v->pair[0]);
	for (i = 0; i < v->queues; i++) {
		struct venet_pair *p = &v->pair[i];

		if (p->tx_blocked &&
		    !(v->tap.attached & (1u << p->tx_blocked_on))) {
			p->tx_blocked = false;
			if (hostd_kick(&p->kick))
				v->st.kicks++;
		}
	}
	venet_tap_update(v);
	for (i = 0; v->open && i < v->active; i++)
		venet_rx_run(&v->pair[i]);
}

/* DEVOPEN and close: one pair granted, and it takes the rx. */
void venet_pairs_reset(struct venet *v)
{
	v->granted = 1;
	v->active = 1;
}

/* QUEUES: how many pairs the guest wants; it gets at most queues=. */
int venet_call_queues(struct venet *v, void *buf)
{
	struct venet_queues q;

	memcpy(&q, buf, sizeof(q));
	if (q.reserved || q.pairs < 1 || q.pairs > VENET_MAX_QUEUE_PAIRS)
		return -EINVAL;
	/* the ring ids are laid out by the grant: fixed once one is there */
	if (venet_rings_registered(v))
		return -EBUSY;
	v->granted = q.pairs < v->queues ? q.pairs : v->queues;
	v->active = v->granted;
	venet_pairs_apply(v);
	q.pairs = v->granted;
	memcpy(buf, &q, sizeof(q));
	return 0;
}

/* SETACTIVE: rx goes to pairs 0 .. pairs-1 of those granted. */
int venet_call_setactive(struct venet *v, void *buf)
{
	struct venet_queues q;

	memcpy(&q, buf, sizeof(q));
	if (q.reserved || q.pairs < 1 || q.pairs > v->granted)
		return -EINVAL;
	v->active = q.pairs;
	venet_pairs_apply(v);
	return 0;
}
