// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * venet, queue pairs (see venet_dev.h; docs/devices/venet.md, "Queue
 * pairs"). The guest asks for pairs with QUEUES (granted: at most
 * queues=) before its first ring and picks how many of them take rx with
 * SETACTIVE. A guest that never asks runs pair 0 alone, exactly the
 * single-queue device.
 *
 * Pair P reads and writes tap queue P. With a multi-queue tap the queues
 * of the pairs that are not active (not granted, or above SETACTIVE's
 * count) are detached (TUNSETQUEUE), so the host kernel's flow steering
 * moves their flows to the active ones instead of queueing frames nobody
 * reads (it drops what a queue held when it detaches it). A detached
 * queue's fd still writes and polls as before (the kernel keeps it bound
 * to the tap, only out of the steering), so every pair's tx ring is
 * still drained into its own queue and waits for its own EPOLLOUT; only
 * EPOLLIN is left off for a pair that is not active.
 *
 * The rx side follows SETACTIVE at once (a pair that is not active is not
 * read). The tap's queues follow it at most every VENET_QSYNC_GAP_NS (a
 * timer, hostd_timer, runs a sync that came too soon): TUNSETQUEUE takes
 * the host's rtnl lock and an RCU grace period, the guest must not be
 * able to make the host do that in a loop. Meanwhile the kernel may still steer a
 * flow to a queue whose pair is not active: its frames wait there, and
 * go when the queue is detached (what the kernel does to what a
 * detached queue held).
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

	(void)dev;
	(void)fd;
	if (events & (EPOLLERR | EPOLLHUP)) {
		/* level-triggered and unmaskable: must not spin on it */
		venet_backend_lost(p->v, EIO);
		return;
	}
	if (events & EPOLLOUT) {
		p->tx_blocked = false;
		venet_tx_work(p);
	}
	if (events & EPOLLIN)
		venet_rx_run(p);
}

/* Into the loop, while the device is open (events: venet_tap_update). */
void venet_tap_watch(struct venet_pair *p)
{
	int fd = venet_pair_tapfd(p);

	if (p->tap_watched || fd < 0 || !p->v->open)
		return;
	if (hostd_fd_add(p->v->dev, fd, 0, tap_cb, p) == 0) {
		p->tap_watched = true;
		p->tap_events = 0;
	}
}

/* The tap's queues differ from what v->active wants. */
static bool qsync_needed(const struct venet *v)
{
	unsigned int i;

	for (i = 1; v->tap.mq && i < v->tap.queues; i++)
		if (!!(v->tap.attached & (1u << i)) != (i < v->active))
			return true;
	return false;
}

/*
 * The tap's queues follow v->active now: attached below it, detached
 * above (a failure is logged and leaves the queue as it was: its pair
 * then gets no rx, or the kernel keeps steering some flows to a queue
 * whose pair is not active, where they wait, as for a guest out of
 * buffers).
 */
static void qsync_now(struct venet *v)
{
	unsigned int i;
	int ret;

	v->qsync_last_ns = hostd_now_ns();
	v->qsyncs++;
	for (i = 1; v->tap.mq && i < v->tap.queues; i++) {
		ret = tap_set_queue(&v->tap, i, i < v->active);
		if (ret < 0)
			hostd_dev_log(v->dev, "venet: tap %s: %s queue %u: %s",
				      v->tap.name, i < v->active ?
				      "attaching" : "detaching", i,
				      strerror(-ret));
	}
}

/* A sync now, or when the last one is VENET_QSYNC_GAP_NS old. */
static void qsync(struct venet *v)
{
	__u64 now = hostd_now_ns(), due = v->qsync_last_ns + VENET_QSYNC_GAP_NS;

	if (v->qsync.armed || !qsync_needed(v))
		return;
	if (!v->qsyncs || now >= due || v->qsync.fd < 0 ||
	    !hostd_timer_arm(&v->qsync, due - now))
		qsync_now(v);	/* no timer: rather too often than never */
}

static void qsync_cb(struct hostd_dev *dev, void *arg)
{
	struct venet *v = arg;

	(void)dev;
	if (qsync_needed(v))
		qsync_now(v);
}

int venet_qsync_init(struct venet *v)
{
	return hostd_timer_init(v->dev, &v->qsync, qsync_cb, v);
}

void venet_qsync_fini(struct venet *v)
{
	hostd_timer_fini(&v->qsync);
}

/*
 * v->active changed (or the tap came): the tap's queues follow (qsync),
 * every queue is watched while the device is open, and the pairs that
 * are active look at theirs.
 */
void venet_pairs_apply(struct venet *v)
{
	unsigned int i;

	qsync(v);
	for (i = 0; i < v->tap.queues && i < v->queues; i++)
		venet_tap_watch(&v->pair[i]);
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
