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

/* TUNSETIFF: @fd becomes tap @n (created or attached); 0 or -errno. */
static int tap_attach(int fd, const char *n, struct ifreq *ifr, char *err,
		      size_t errlen)
{
	int e;

	memset(ifr, 0, sizeof(*ifr));
	ifr->ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	snprintf(ifr->ifr_name, IFNAMSIZ, "%s", n);
	if (ioctl(fd, TUNSETIFF, ifr) == 0)
		return 0;
	e = errno;
	if (e == EPERM || e == EACCES)
		return fail(err, errlen, e,
			    "tap %s: needs CAP_NET_ADMIN (or a persistent tap "
			    "owned by this user): %s", n);
	if (e == EBUSY)
		return fail(err, errlen, e,
			    "tap %s: in use by another process, or not a tap: %s",
			    n);
	if (e == EINVAL)
		return fail(err, errlen, e,
			    "tap %s: exists but is not a single-queue tap (tun "
			    "or multi-queue?): %s", n);
	return fail(err, errlen, e, "tap %s: TUNSETIFF: %s", n);
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

int tap_open(struct tap *t, const char *name, char *err, size_t errlen)
{
	const char *n = (name && *name) ? name : "vbus%d";
	struct ifreq ifr;
	int fd, ret;

	t->fd = -1;
	t->name[0] = '\0';
	t->offload = 0;
	if (err && errlen)
		err[0] = '\0';
	if (strlen(n) >= IFNAMSIZ)
		return fail(err, errlen, EINVAL,
			    "tap name \"%s\" is too long: %s", n);
	fd = tun_open(err, errlen);
	if (fd < 0)
		return fd;
	ret = tap_attach(fd, n, &ifr, err, errlen);
	if (!ret)
		ret = tap_reset(fd, ifr.ifr_name, err, errlen);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	t->fd = fd;
	memcpy(t->name, ifr.ifr_name, IFNAMSIZ);
	t->name[IFNAMSIZ - 1] = '\0';
	return 0;
}

void tap_close(struct tap *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
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
