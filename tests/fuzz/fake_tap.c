// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The fuzz targets' tap (fake_tap.h): tap.h's interface over a socketpair. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_tun.h>
#include "fake_tap.h"
#include "tap.h"

int fake_tap_peer[FAKE_TAPS] = { -1, -1 };
bool fake_tap_refuse;
static int tap_fd[FAKE_TAPS] = { -1, -1 };

int tap_open(struct tap *t, const char *name, char *err, size_t errlen)
{
	int sv[2], i;

	(void)name;
	t->fd = -1;
	t->offload = 0;
	for (i = 0; i < FAKE_TAPS && tap_fd[i] >= 0; i++)
		;
	if (fake_tap_refuse || i == FAKE_TAPS ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       0, sv) < 0) {
		snprintf(err, errlen, "fake tap: refused");
		return -EPERM;
	}
	t->fd = tap_fd[i] = sv[0];
	fake_tap_peer[i] = sv[1];
	snprintf(t->name, sizeof(t->name), "fuzztap%d", i);
	return 0;
}

void tap_close(struct tap *t)
{
	int i;

	for (i = 0; i < FAKE_TAPS; i++) {
		if (t->fd < 0 || tap_fd[i] != t->fd)
			continue;
		if (fake_tap_peer[i] >= 0)
			close(fake_tap_peer[i]);
		fake_tap_peer[i] = tap_fd[i] = -1;
	}
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
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
