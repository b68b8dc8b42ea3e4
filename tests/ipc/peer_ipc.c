// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ipc-peer's vbus-ipc link: peer_link calls onto libioq's ioq_ipc_*.
 * "guest-poll"/"host-poll" wait in a poll loop of ours instead of
 * ioq_ipc_wait's (ioq_ipc_arm + ioq_ipc_pollfd), as an application with
 * its own event loop does.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vbus/ioq_channel.h>
#include "peer_link.h"

struct ipc_link {
	struct peer_link link;
	struct ioq_ipc *ipc;
	int own_loop;
};

static struct ioq_ipc *chan(struct peer_link *l)
{
	return ((struct ipc_link *)l)->ipc;
}

static long ipc_send(struct peer_link *l, const void *buf, size_t len,
		     int flags)
{
	return ioq_ipc_send(chan(l), buf, len,
			    (flags & PEER_MORE) ? IOQ_IPC_MORE : 0);
}

static long ipc_flush(struct peer_link *l)
{
	return ioq_ipc_flush(chan(l));
}

static long ipc_recv(struct peer_link *l, void *buf, size_t max)
{
	return ioq_ipc_recv(chan(l), buf, max);
}

/*
 * Our own loop's sleep: arm, poll the one descriptor, let libioq handle
 * it. ioq_ipc_wait(.., 0) answers 0 for a doorbell that brought nothing
 * we wait for (one for the other direction, or a late one that crossed
 * our mask: ioq_ipc.3): arm and sleep again until the time is up.
 */
static long own_wait(struct ioq_ipc *ipc, int events, int timeout_ms)
{
	struct pollfd p = { .fd = ioq_ipc_pollfd(ipc), .events = POLLIN };
	struct timespec t0, t1;
	int n, left = timeout_ms;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ioq_ipc_arm(ipc, events);
		if (n)
			return n;	/* ready, or the session is over */
		do {
			n = poll(&p, 1, left);
		} while (n < 0 && errno == EINTR);
		if (n <= 0)
			return n < 0 ? -errno : 0;
		n = ioq_ipc_wait(ipc, events, 0);
		if (n)
			return n;
		if (timeout_ms < 0)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = timeout_ms - (int)((t1.tv_sec - t0.tv_sec) * 1000 +
					  (t1.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			return 0;
	}
}

static long ipc_wait(struct peer_link *l, enum peer_wait what, int timeout_ms)
{
	int events = what == PEER_WAIT_TX ? IOQ_IPC_WAIT_TX : IOQ_IPC_WAIT_RX;

	if (((struct ipc_link *)l)->own_loop)
		return own_wait(chan(l), events, timeout_ms);
	return ioq_ipc_wait(chan(l), events, timeout_ms);
}

static size_t ipc_max_msg(struct peer_link *l)
{
	return ioq_ipc_max_msg(chan(l));
}

static void ipc_stats(struct peer_link *l, struct peer_stats *st)
{
	struct ioq_ipc_stats s;

	ioq_ipc_stats(chan(l), &s);
	*st = (struct peer_stats){ .sent = s.sent, .received = s.received,
				   .kicks = s.kicks, .wakeups = s.wakeups,
				   .sleeps = s.sleeps, .faults = s.faults };
}

static void ipc_close(struct peer_link *l)
{
	ioq_ipc_close(chan(l));
	free(l);
}

static const struct peer_link_ops ipc_ops = {
	.send = ipc_send, .flush = ipc_flush, .recv = ipc_recv,
	.wait = ipc_wait, .max_msg = ipc_max_msg, .stats = ipc_stats,
	.close = ipc_close,
};

int peer_ipc_attach(struct peer_link **l, const char *side, const char *where,
		    int timeout_ms)
{
	struct ipc_link *il = calloc(1, sizeof(*il));
	int err;

	if (!il)
		return -ENOMEM;
	il->own_loop = !strcmp(side, "guest-poll") || !strcmp(side, "host-poll");
	if (!strncmp(side, "guest", 5))
		err = ioq_ipc_attach_dev(&il->ipc, where, timeout_ms);
	else
		err = ioq_ipc_attach_host(&il->ipc, where, timeout_ms);
	if (err) {
		free(il);
		return err;
	}
	il->link = (struct peer_link){ .ops = &ipc_ops, .name = "ipc" };
	*l = &il->link;
	return 0;
}

struct ioq_ipc *peer_ipc_channel(struct peer_link *l)
{
	return l->ops == &ipc_ops ? chan(l) : NULL;
}
