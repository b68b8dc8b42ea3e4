// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ipc-peer's vchan link: peer_link calls onto libioq's vchan-style API
 * (ioq_vchan(3)), packets (send/recv) in non-blocking mode, sleeping on
 * the select descriptor as a libxenvchan program does: "vchan-client" or
 * "vchan-server" NAME (a service name or a path).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <vbus/ioq_channel.h>
#include "peer_link.h"

struct vchan_link {
	struct peer_link link;
	struct ioq_vchan *v;
	size_t max;
	unsigned long sent, received, sleeps;
};

static struct vchan_link *vl(struct peer_link *l)
{
	return (struct vchan_link *)l;
}

static long vc_send(struct peer_link *l, const void *buf, size_t len,
		    int flags)
{
	long r = ioq_vchan_send(vl(l)->v, buf, len);

	(void)flags;	/* every packet is signalled */
	if (r > 0)
		vl(l)->sent++;
	return r == 0 ? -EAGAIN : r < 0 ? r : 0;
}

static long vc_flush(struct peer_link *l)
{
	(void)l;
	return 0;
}

static long vc_recv(struct peer_link *l, void *buf, size_t max)
{
	long r;

	/* 0 means "nothing now": the test messages are never empty */
	if (!ioq_vchan_data_ready(vl(l)->v) && ioq_vchan_is_open(vl(l)->v))
		return -EAGAIN;
	r = ioq_vchan_recv(vl(l)->v, buf, max);
	if (r > 0)
		vl(l)->received++;
	return r == 0 ? -EAGAIN : r;
}

static long vc_wait(struct peer_link *l, enum peer_wait what, int timeout_ms)
{
	struct pollfd p = { .fd = ioq_vchan_fd_for_select(vl(l)->v),
			    .events = POLLIN };
	int n;

	(void)what;
	vl(l)->sleeps++;
	do {
		n = poll(&p, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n < 0 ? -errno : 0;
	n = ioq_vchan_wait(vl(l)->v);
	return n < 0 ? n : 1;
}

static size_t vc_max_msg(struct peer_link *l)
{
	return vl(l)->max;
}

static void vc_stats(struct peer_link *l, struct peer_stats *st)
{
	*st = (struct peer_stats){ .sent = vl(l)->sent,
				   .received = vl(l)->received,
				   .sleeps = vl(l)->sleeps };
}

static void vc_close(struct peer_link *l)
{
	ioq_vchan_close(vl(l)->v);
	free(l);
}

static const struct peer_link_ops vchan_ops = {
	.send = vc_send, .flush = vc_flush, .recv = vc_recv,
	.wait = vc_wait, .max_msg = vc_max_msg, .stats = vc_stats,
	.close = vc_close,
};

int peer_vchan_attach(struct peer_link **l, const char *side,
		      const char *name, int timeout_ms)
{
	struct vchan_link *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	if (!strcmp(side, "vchan-server"))
		err = ioq_vchan_server_init(&c->v, name, timeout_ms);
	else
		err = ioq_vchan_client_init(&c->v, name, timeout_ms);
	if (err) {
		free(c);
		return err;
	}
	ioq_vchan_set_blocking(c->v, 0);
	c->max = ioq_vchan_max_packet(c->v);
	c->link = (struct peer_link){ .ops = &vchan_ops, .name = "vchan" };
	*l = &c->link;
	return 0;
}
