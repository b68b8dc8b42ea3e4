// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The fuzz targets' tap (fake_tap.h): tap.h's interface over socketpairs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_tun.h>
#include "fake_tap.h"
#include "tap.h"

int fake_tap_peer[FAKE_TAP_FDS] = { -1, -1, -1, -1, -1, -1, -1, -1 };
bool fake_tap_refuse;
static int tap_fd[FAKE_TAP_FDS] = { -1, -1, -1, -1, -1, -1, -1, -1 };
static unsigned int taps;	/* names: fuzztapN */

/* A free slot's socketpair: its index, or -1. */
static int slot_open(void)
{
	int sv[2], i;

	for (i = 0; i < FAKE_TAP_FDS && tap_fd[i] >= 0; i++)
		;
	if (i == FAKE_TAP_FDS ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       0, sv) < 0)
		return -1;
	tap_fd[i] = sv[0];
	fake_tap_peer[i] = sv[1];
	return i;
}

static void slot_close(int fd)
{
	int i;

	for (i = 0; i < FAKE_TAP_FDS; i++) {
		if (fd < 0 || tap_fd[i] != fd)
			continue;
		if (fake_tap_peer[i] >= 0)
			close(fake_tap_peer[i]);
		fake_tap_peer[i] = tap_fd[i] = -1;
	}
	if (fd >= 0)
		close(fd);
}

int tap_open(struct tap *t, const char *name, unsigned int queues, char *err,
	     size_t errlen)
{
	unsigned int q;
	int i;

	(void)name;
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	for (q = 0; q < TAP_MAX_QUEUES; q++)
		t->qfd[q] = -1;
	for (q = 0; !fake_tap_refuse && q < queues; q++) {
		i = slot_open();
		if (i < 0)
			break;
		t->qfd[q] = tap_fd[i];
		t->queues = q + 1;
		t->attached |= 1u << q;
	}
	if (!queues || q < queues) {
		tap_close(t);
		snprintf(err, errlen, "fake tap: refused");
		return -EPERM;
	}
	t->fd = t->qfd[0];
	t->mq = queues > 1;
	snprintf(t->name, sizeof(t->name), "fuzztap%u", taps++ % 100);
	return 0;
}

void tap_close(struct tap *t)
{
	unsigned int q;

	for (q = 0; q < t->queues; q++) {
		slot_close(t->qfd[q]);
		t->qfd[q] = -1;
	}
	t->fd = -1;
	t->queues = 0;
	t->attached = 0;
}

/* tap.c's rules, without the ioctl */
int tap_set_queue(struct tap *t, unsigned int q, bool on)
{
	if (q == 0 || q >= t->queues || t->qfd[q] < 0)
		return -EINVAL;
	if (fake_tap_refuse)
		return -EPERM;
	if (on)
		t->attached |= 1u << q;
	else
		t->attached &= ~(1u << q);
	return 0;
}

/* tap.c's rules for the flags, without the ioctl */
int tap_set_offload(struct tap *t, unsigned int tun_flags)
{
	if (t->fd < 0)
		return -EBADF;
	if (fake_tap_refuse)
		return -EINVAL;
	tun_flags &= TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
	if (!(tun_flags & TUN_F_CSUM))
		tun_flags = 0;
	if (!(tun_flags & (TUN_F_TSO4 | TUN_F_TSO6)))
		tun_flags &= ~TUN_F_TSO_ECN;
	t->offload = tun_flags;
	return 0;
}

int tap_set_carrier(struct tap *t, int on)
{
	(void)on;
	return t->fd < 0 ? -EBADF : 0;
}
