// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The "venet" device type (alias "virtual-ethernet", the 2009 name): the
 * host (south) side of a venet device, backed by a tap interface.
 * Protocol: docs/devices/venet.md; ABI: <vbus/venet.h>.
 *
 * Params: tap=NAME (created when absent, attached when it exists; default
 * a kernel-chosen "vbus%d"; claimed, so no other device of the daemon may
 * name it), mac=xx:xx:xx:xx:xx:xx (default: random, locally
 * administered), strict=0|1 (1: an invalid descriptor faults the device
 * instead of being dropped and counted), tx_poll_us=N (0..10000, default
 * 0: how long the drained tx ring is polled before the guest is asked
 * for doorbells again; venet_tx.c).
 *
 * Everything runs on the guest's loop thread (device.h), so there are no
 * locks. The data path is venet_tx.c and venet_rx.c (each says how its
 * direction polls and when it sleeps); this file holds the ops.
 *
 * No backend. Without /dev/net/tun or CAP_NET_ADMIN the device still
 * exists (the guest binds and sees a link that carries nothing); tx is
 * consumed and dropped (counted), rx never delivers, `ctl stats` says why,
 * and the tap is retried on every open and LINKUP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include "venet_dev.h"

/* ---- helpers ------------------------------------------------------------ */

static void *venet_xlate(void *ctx, __u64 gpa, __u64 len)
{
	return hostd_dev_gpa(ctx, gpa, len);
}

static void *venet_xlate_data(void *ctx, __u64 gpa, __u64 len)
{
	return hostd_dev_data(ctx, gpa, len);
}

/*
 * The tap's offloads follow the rx format: with RXSG the guest takes
 * partial checksums and GSO frames as they are, without it the host
 * kernel must finish both before we read. If the tap refuses, we log it
 * and keep the plain tap: RXSG buffers then just get complete frames.
 */
static void rx_offload_apply(struct venet *v)
{
	unsigned int want = (v->caps & VENET_CAP_RXSG) ? VENET_RXSG_TUN_F : 0;
	int ret;

	if (v->tap.fd < 0 || v->tap.offload == want)
		return;
	ret = tap_set_offload(&v->tap, want);
	if (ret < 0) {
		v->st.rx_offload_errors++;
		hostd_dev_log(v->dev, "venet: tap %s: TUNSETOFFLOAD 0x%x: %s",
			      v->tap.name, want, strerror(-ret));
	}
}

static void tap_watch(struct venet *v);

/* Open the tap if we have none (create, open, LINKUP). */
static void backend_try(struct venet *v)
{
	char err[160];
	int ret;

	if (v->tap.fd >= 0)
		return;
	ret = tap_open(&v->tap, v->tapreq, err, sizeof(err));
	if (ret < 0) {
		/* log only when the reason changes: a LINKUP loop is cheap */
		if (strcmp(err, v->backend_err) != 0)
			hostd_dev_log(v->dev, "venet: no backend: %s", err);
		snprintf(v->backend_err, sizeof(v->backend_err), "%s", err);
		return;
	}
	v->backend_err[0] = '\0';
	rx_offload_apply(v);
	/* link down until the guest's LINKUP: no carrier on the host */
	tap_set_carrier(&v->tap, v->link);
	if (v->open)
		tap_watch(v);
}

/* ---- fds ----------------------------------------------------------------- */

static void tap_cb(struct hostd_dev *dev, int fd, __u32 events, void *arg)
{
	struct venet *v = arg;

	(void)dev;
	(void)fd;
	if (events & (EPOLLERR | EPOLLHUP)) {
		/* level-triggered and unmaskable: must not spin on it */
		venet_backend_lost(v, EIO);
		return;
	}
	if (events & EPOLLOUT) {
		v->tx_blocked = false;
		venet_tx_work(v);
	}
	if (events & EPOLLIN)
		venet_rx_run(v);
}

static void kick_cb(struct hostd_dev *dev, void *arg)
{
	(void)dev;
	venet_tx_work(arg);
}

static void tap_watch(struct venet *v)
{
	if (v->tap_watched || v->tap.fd < 0)
		return;
	/* events 0: venet_tap_update() turns EPOLLIN/EPOLLOUT on as needed */
	if (hostd_fd_add(v->dev, v->tap.fd, 0, tap_cb, v) == 0) {
		v->tap_watched = true;
		v->tap_events = 0;
	}
	venet_tap_update(v);
}

/* ---- params ---------------------------------------------------------------- */

static int parse_mac(const char *s, __u8 mac[6])
{
	unsigned int b[6];
	char tail;
	int i;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3],
		   &b[4], &b[5], &tail) != 6)
		return -EINVAL;
	for (i = 0; i < 6; i++)
		mac[i] = (__u8)b[i];
	/* a station address: unicast, not all zero */
	if (mac[0] & 1)
		return -EINVAL;
	if (!(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
		return -EINVAL;
	return 0;
}

static void random_mac(__u8 mac[6])
{
	if (getrandom(mac, 6, GRND_NONBLOCK) != 6) {
		struct timespec ts;
		__u64 x;
		int i;

		clock_gettime(CLOCK_REALTIME, &ts);
		x = (__u64)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^
		    (__u64)getpid() << 32 ^ (__u64)ts.tv_sec;
		for (i = 0; i < 6; i++, x >>= 8)
			mac[i] = (__u8)x;
	}
	mac[0] = (__u8)((mac[0] & 0xfc) | 0x02);	/* local, unicast */
}

/* tx_poll_us=: a number of microseconds, 0 .. VENET_TX_POLL_US_MAX. */
static int venet_param_poll(struct venet *v, const char *s)
{
	unsigned long us = VENET_TX_POLL_US;
	char *end;

	if (s) {
		errno = 0;
		us = strtoul(s, &end, 10);
		if (!*s || *end || errno || *s == '-' ||
		    us > VENET_TX_POLL_US_MAX)
			return hostd_dev_fail(v->dev, -EINVAL,
					      "tx_poll_us=%s: want 0..%d (microseconds)",
					      s, VENET_TX_POLL_US_MAX);
	}
	v->txq.window.cap_ns = (__u64)us * 1000;
	return 0;
}

/* tap=, mac=, strict=, tx_poll_us= into @v; every refusal says why. */
static int venet_params(struct venet *v, const struct hostd_params *p)
{
	static const char *const known[] = { "tap", "mac", "strict",
					     "tx_poll_us", NULL };
	struct hostd_dev *dev = v->dev;
	const char *s;
	int ret;

	ret = hostd_params_check(dev, p, known);
	if (ret < 0)
		return ret;
	s = hostd_param_get(p, "tap");
	if (s && strlen(s) >= IFNAMSIZ)
		return hostd_dev_fail(dev, -EINVAL,
				      "tap name \"%s\" is longer than %d characters",
				      s, IFNAMSIZ - 1);
	snprintf(v->tapreq, sizeof(v->tapreq), "%s", s ? s : "");
	/* a tap serves one device: two would split its traffic */
	if (s && *s && (ret = hostd_dev_claim(dev, "tap", s)) < 0)
		return ret;
	s = hostd_param_get(p, "mac");
	if (s && parse_mac(s, v->mac))
		return hostd_dev_fail(dev, -EINVAL,
				      "bad mac \"%s\" (want a unicast xx:xx:xx:xx:xx:xx)",
				      s);
	if (!s)
		random_mac(v->mac);
	s = hostd_param_get(p, "strict");
	if (s && strcmp(s, "0") && strcmp(s, "1"))
		return hostd_dev_fail(dev, -EINVAL, "strict=%s: want 0 or 1", s);
	v->strict = s && !strcmp(s, "1");
	return venet_param_poll(v, hostd_param_get(p, "tx_poll_us"));
}

/* ---- ops ----------------------------------------------------------------- */

static int venet_create(struct hostd_dev *dev, const struct hostd_params *p)
{
	struct venet *v = calloc(1, sizeof(*v));
	int ret;

	if (!v)
		return -ENOMEM;
	v->dev = dev;
	v->mem.xlate = venet_xlate;
	v->mem.data = venet_xlate_data;
	v->mem.ctx = dev;
	v->tap.fd = -1;
	v->rxq.owner = v;
	v->txq.owner = v;
	ret = venet_params(v, p);
	if (!ret)
		ret = hostd_kick_init(dev, &v->kick, kick_cb, v);
	if (ret < 0) {
		free(v);
		return ret;
	}
	/* a missing tap is not fatal: see "No backend" at the top */
	backend_try(v);
	hostd_dev_set_priv(dev, v);
	return 0;
}

static void venet_destroy(struct hostd_dev *dev)
{
	struct venet *v = hostd_dev_priv(dev);

	venet_tap_unwatch(v);
	tap_close(&v->tap);
	hostd_kick_fini(&v->kick);
	free(v);
	hostd_dev_set_priv(dev, NULL);
}

static int venet_open(struct hostd_dev *dev, __u32 version)
{
	struct venet *v = hostd_dev_priv(dev);

	if (version != VENET_VERSION)
		return -EPROTO;

	v->open = true;
	v->link = false;	/* down until the first LINKUP */
	v->caps = 0;
	v->rx_starved = false;
	v->tx_blocked = false;

	backend_try(v);
	rx_offload_apply(v);	/* caps 0 until NEGCAP: plain frames */
	if (v->tap.fd >= 0) {
		tap_set_carrier(&v->tap, 0);
		tap_watch(v);
	}
	return 0;
}

static void venet_close(struct hostd_dev *dev)
{
	struct venet *v = hostd_dev_priv(dev);

	v->open = false;
	v->link = false;
	if (v->tap.fd >= 0)
		tap_set_carrier(&v->tap, 0);
	venet_tap_unwatch(v);
	/* a kick still pending must not outlive this session */
	hostd_kick_cancel(&v->kick);
	v->tx_blocked = false;

	/* no pointer into guest memory survives close */
	hostd_devq_detach(&v->rxq);
	hostd_devq_detach(&v->txq);
	v->caps = 0;
	/* the next guest may not take offloaded frames */
	rx_offload_apply(v);
}

static int call_link(struct venet *v, bool up)
{
	if (up)
		backend_try(v);
	v->link = up;
	if (v->tap.fd >= 0)
		tap_set_carrier(&v->tap, up);
	if (up) {
		venet_rx_run(v);
	} else {
		/* posted rx buffers stay posted; tx still drains (dropping) */
		venet_tap_update(v);
		venet_tx_work(v);
	}
	return 0;
}

static int call_negcap(struct venet *v, void *buf)
{
	struct venet_capabilities caps;

	memcpy(&caps, buf, sizeof(caps));
	/*
	 * The tx and rx descriptor formats follow the answer: once a ring is
	 * there it cannot change under descriptors in flight.
	 */
	if (v->txq.attached || v->rxq.attached)
		return -EBUSY;
	if (caps.gid == VENET_CAP_GROUP_SG) {
		caps.bits &= VENET_CAPS_SUPPORTED;
		/* the offloads ride on the venet_sg format */
		if (!(caps.bits & VENET_CAP_SG))
			caps.bits = 0;
		v->caps = caps.bits;
		rx_offload_apply(v);
	} else {
		caps.bits = 0;
	}
	memcpy(buf, &caps, sizeof(caps));
	return 0;
}

static int venet_call(struct hostd_dev *dev, __u32 func, void *buf,
		      __u32 len)
{
	struct venet *v = hostd_dev_priv(dev);

	switch (func) {
	case VENET_FUNC_LINKUP:
	case VENET_FUNC_LINKDOWN:
		return len ? -EINVAL : call_link(v, func == VENET_FUNC_LINKUP);
	case VENET_FUNC_MACQUERY:
		if (len != sizeof(v->mac))
			return -EINVAL;
		memcpy(buf, v->mac, sizeof(v->mac));
		return 0;
	case VENET_FUNC_NEGCAP:
		if (len != sizeof(struct venet_capabilities))
			return -EINVAL;
		return call_negcap(v, buf);
	case VENET_FUNC_FLUSHRX:
		return len ? -EINVAL : venet_rx_flush(v);
	default:
		return -EINVAL;
	}
}

static int venet_shm(struct hostd_dev *dev, struct hostd_shm *shm)
{
	struct venet *v = hostd_dev_priv(dev);
	struct hostd_devq *q;
	int ret;

	if (shm->id == VENET_QUEUE_RX)
		q = &v->rxq;
	else if (shm->id == VENET_QUEUE_TX)
		q = &v->txq;
	else
		return -EINVAL;
	if (q->attached)
		return -EBUSY;
	if (!shm->signal)
		return -EINVAL;	/* a ring without a doorbell is useless */

	ret = hostd_devq_attach(q, shm, 0, q == &v->rxq ? venet_rx_signal :
						     venet_tx_signal);
	if (ret)
		return ret;
	shm->priv = q;

	/* start listening; pick up anything posted before we listened */
	hostd_devq_unmask(q, 0);
	if (q == &v->rxq)
		venet_rx_run(v);
	else
		venet_tx_work(v);
	return 0;
}

/* Injects of @q's signal that reached the guest's side (not suppressed). */
static __u64 q_injects(const struct hostd_devq *q)
{
	if (!q->attached || !q->ioq.signal)
		return 0;
	return __atomic_load_n(&q->ioq.signal->injects, __ATOMIC_RELAXED);
}

static void venet_stats(struct hostd_dev *dev, struct hostd_stats_out *out)
{
	struct venet *v = hostd_dev_priv(dev);
	const struct venet_stats *s = &v->st;
	char buf[64];

	if (v->tap.fd >= 0) {
		hostd_stat_str(out, "backend", v->tap.name);
	} else {
		hostd_stat_str(out, "backend", "none");
		hostd_stat_str(out, "backend_error", v->backend_err);
	}
	snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x",
		 v->mac[0], v->mac[1], v->mac[2], v->mac[3], v->mac[4],
		 v->mac[5]);
	hostd_stat_str(out, "mac", buf);
	hostd_stat_str(out, "link", v->link ? "up" : "down");
	hostd_stat_u64(out, "caps", v->caps);
	hostd_stat_u64(out, "tx_poll_us", v->txq.window.cap_ns / 1000);
	hostd_stat_u64(out, "tx_window_us", v->txq.window.ns / 1000);
	hostd_stat_u64(out, "tx_window_grows", v->txq.window.grows);
	hostd_stat_u64(out, "tx_window_shrinks", v->txq.window.shrinks);

#define S(name) hostd_stat_u64(out, #name, s->name)
	S(rx_packets); S(rx_bytes); S(tx_packets); S(tx_bytes);
	S(rx_notify_in); S(tx_notify_in); S(rx_notify_out); S(tx_notify_out);
	S(tx_gso); S(tx_csum); S(tx_bad); S(tx_errors); S(tx_dropped);
	S(tx_blocked); S(rx_bad); S(rx_too_big); S(rx_offload_dropped);
	S(rx_csum_fixed); S(rx_gso); S(rx_csum); S(rx_offload_errors);
	S(rx_starved); S(rx_flushed); S(kicks); S(tx_polls);
	S(backend_lost);
#undef S
	/* what crossed to the guest: the signals it had not masked */
	hostd_stat_u64(out, "rx_signals_sent", q_injects(&v->rxq));
	hostd_stat_u64(out, "tx_signals_sent", q_injects(&v->txq));
}

static const struct hostd_dev_type venet_type = {
	.name = VENET_TYPE,
	.alias = VENET_TYPE_ALIAS,
	.create = venet_create,
	.destroy = venet_destroy,
	.open = venet_open,
	.close = venet_close,
	.call = venet_call,
	.shm = venet_shm,
	.stats = venet_stats,
};

HOSTD_DEV_TYPE(venet_type);
