// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tap helper: see tap.h. Nothing here touches any interface other than the
 * one named by the caller.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/if_tun.h>

#include "tap.h"

#define TUN_DEV "/dev/net/tun"

static int fail(char *err, size_t errlen, int e, const char *fmt,
		const char *arg)
{
	if (err && errlen)
		snprintf(err, errlen, fmt, arg, strerror(e));
	return -e;
}

/* /dev/net/tun, non-blocking: the fd, or -errno with the reason. */
static int tun_open(char *err, size_t errlen)
{
	unsigned int features = 0;
	int fd, e;

	fd = open(TUN_DEV, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		if (e == ENOENT || e == ENODEV || e == ENXIO)
			return fail(err, errlen, e,
				    "%s is missing (no tun driver here): %s",
				    TUN_DEV);
		if (e == EACCES || e == EPERM)
			return fail(err, errlen, e,
				    "cannot open %s (permission): %s", TUN_DEV);
		return fail(err, errlen, e, "open %s: %s", TUN_DEV);
	}
	/*
	 * Without IFF_VNET_HDR we could neither pass the guest's checksum
	 * and GSO requests on nor receive offloaded frames: refuse rather
	 * than silently run a slower, different protocol.
	 */
	if (ioctl(fd, TUNGETFEATURES, &features) == 0 &&
	    !(features & IFF_VNET_HDR)) {
		close(fd);
		return fail(err, errlen, EOPNOTSUPP,
			    "%s lacks IFF_VNET_HDR: %s", TUN_DEV);
	}
	return fd;
}

/* TUNSETIFF: @fd becomes a queue of tap @n (created or attached); 0 or -errno. */
static int tap_attach(int fd, const char *n, short flags, struct ifreq *ifr)
{
	memset(ifr, 0, sizeof(*ifr));
	ifr->ifr_flags = (short)(IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | flags);
	snprintf(ifr->ifr_name, IFNAMSIZ, "%s", n);
	return ioctl(fd, TUNSETIFF, ifr) == 0 ? 0 : -errno;
}

/* Why TUNSETIFF refused tap @n (-@e), for one of @queues queues. */
static int attach_fail(int e, const char *n, unsigned int queues, char *err,
		       size_t errlen)
{
	if (e == EPERM || e == EACCES)
		return fail(err, errlen, e,
			    "tap %s: needs CAP_NET_ADMIN (or a persistent tap "
			    "owned by this user): %s", n);
	if (e == EBUSY)
		return fail(err, errlen, e,
			    "tap %s: in use by another process, or not a tap: %s",
			    n);
	if (e == EINVAL && queues > 1) {
		if (err && errlen)
			snprintf(err, errlen, "tap %s: exists but is not a "
				 "multi-queue tap, which queues=%u needs (make "
				 "it with: ip tuntap add dev %s mode tap "
				 "vnet_hdr multi_queue): %s", n, queues, n,
				 strerror(e));
		return -e;
	}
	if (e == EINVAL)
		return fail(err, errlen, e,
			    "tap %s: exists but is not a tap: %s", n);
	return fail(err, errlen, e, "tap %s: TUNSETIFF: %s", n);
}

/*
 * Queue 0 of tap @n on @fd. One queue: a plain tap, or, when the tap
 * that exists is a multi-queue one (the kernel refuses the plain open
 * with EINVAL), one queue of it. More: IFF_MULTI_QUEUE.
 */
static int tap_attach_first(struct tap *t, int fd, const char *n,
			    unsigned int queues, struct ifreq *ifr)
{
	int ret;

	if (queues > 1) {
		t->mq = true;
		return tap_attach(fd, n, IFF_MULTI_QUEUE, ifr);
	}
	t->mq = false;
	ret = tap_attach(fd, n, 0, ifr);
	if (ret == -EINVAL && tap_attach(fd, n, IFF_MULTI_QUEUE, ifr) == 0) {
		t->mq = true;
		ret = 0;
	}
	return ret;
}

/*
 * The vnet header size, and no offloads: an existing tap keeps what its
 * previous user set, and we must never get a frame the guest did not
 * agree to.
 */
static int tap_reset(int fd, const char *n, char *err, size_t errlen)
{
	int hdrsz = TAP_VNET_HDR_LEN;

	if (ioctl(fd, TUNSETVNETHDRSZ, &hdrsz) < 0)
		return fail(err, errlen, errno, "tap %s: TUNSETVNETHDRSZ: %s", n);
	if (ioctl(fd, TUNSETOFFLOAD, 0UL) < 0)
		return fail(err, errlen, errno, "tap %s: TUNSETOFFLOAD: %s", n);
	return 0;
}

static void tap_reset_struct(struct tap *t)
{
	unsigned int q;

	t->fd = -1;
	for (q = 0; q < TAP_MAX_QUEUES; q++)
		t->qfd[q] = -1;
	t->queues = 0;
	t->mq = false;
	t->attached = 0;
	t->offload = 0;
}

/* Queue @q (>= 1) of the tap queue 0 made: 0 or -errno (@err says why). */
static int tap_open_queue(struct tap *t, unsigned int q, unsigned int queues,
			  char *err, size_t errlen)
{
	struct ifreq ifr;
	int fd, ret;

	fd = tun_open(err, errlen);
	if (fd < 0)
		return fd;
	ret = tap_attach(fd, t->name, IFF_MULTI_QUEUE, &ifr);
	if (ret < 0) {
		close(fd);
		return attach_fail(-ret, t->name, queues, err, errlen);
	}
	t->qfd[q] = fd;
	t->queues = q + 1;
	t->attached |= 1u << q;
	return 0;
}

int tap_open(struct tap *t, const char *name, unsigned int queues, char *err,
	     size_t errlen)
{
	const char *n = (name && *name) ? name : "vbus%d";
	struct ifreq ifr;
	unsigned int q;
	int fd, ret;

	tap_reset_struct(t);
	t->name[0] = '\0';
	if (err && errlen)
		err[0] = '\0';
	if (queues < 1 || queues > TAP_MAX_QUEUES)
		return fail(err, errlen, EINVAL, "tap %s: bad queue count: %s",
			    n);
	if (strlen(n) >= IFNAMSIZ)
		return fail(err, errlen, EINVAL,
			    "tap name \"%s\" is too long: %s", n);
	fd = tun_open(err, errlen);
	if (fd < 0)
		return fd;
	ret = tap_attach_first(t, fd, n, queues, &ifr);
	if (ret < 0)
		ret = attach_fail(-ret, n, queues, err, errlen);
	if (!ret)
		ret = tap_reset(fd, ifr.ifr_name, err, errlen);
	if (ret < 0) {
		close(fd);
		t->mq = false;
		return ret;
	}
	t->fd = t->qfd[0] = fd;
	t->queues = 1;
	t->attached = 1;
	memcpy(t->name, ifr.ifr_name, IFNAMSIZ);
	t->name[IFNAMSIZ - 1] = '\0';
	/* the rest by the kernel's name: a "vbus%d" is resolved now */
	for (q = 1; q < queues; q++) {
		ret = tap_open_queue(t, q, queues, err, errlen);
		if (ret < 0) {
			tap_close(t);
			return ret;
		}
	}
	return 0;
}

void tap_close(struct tap *t)
{
	unsigned int q;

	/* only the fds it opened: a zeroed struct tap holds none */
	for (q = 0; q < t->queues; q++) {
		if (t->qfd[q] >= 0)
			close(t->qfd[q]);
		t->qfd[q] = -1;
	}
	t->fd = -1;
	t->queues = 0;
	t->attached = 0;
}

int tap_set_queue(struct tap *t, unsigned int q, bool on)
{
	struct ifreq ifr;

	if (q == 0 || q >= t->queues || t->qfd[q] < 0)
		return -EINVAL;
	if (!!(t->attached & (1u << q)) == on)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = on ? IFF_ATTACH_QUEUE : IFF_DETACH_QUEUE;
	if (ioctl(t->qfd[q], TUNSETQUEUE, &ifr) < 0)
		return -errno;
	if (on)
		t->attached |= 1u << q;
	else
		t->attached &= ~(1u << q);
	return 0;
}

int tap_set_offload(struct tap *t, unsigned int tun_flags)
{
	unsigned long arg;

	if (t->fd < 0)
		return -EBADF;
	tun_flags &= TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
	/* GSO frames always carry a partial checksum: no TSO without CSUM */
	if (!(tun_flags & TUN_F_CSUM))
		tun_flags = 0;
	/* ECN only qualifies TSO */
	if (!(tun_flags & (TUN_F_TSO4 | TUN_F_TSO6)))
		tun_flags &= ~TUN_F_TSO_ECN;

	arg = tun_flags;
	if (ioctl(t->fd, TUNSETOFFLOAD, arg) < 0)
		return -errno;
	t->offload = tun_flags;
	return 0;
}

int tap_set_carrier(struct tap *t, int on)
{
	int arg = !!on;

	if (t->fd < 0)
		return -EBADF;
	if (ioctl(t->fd, TUNSETCARRIER, &arg) < 0)
		return -errno;
	return 0;
}
