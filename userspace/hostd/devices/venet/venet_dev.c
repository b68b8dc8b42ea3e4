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
 * for doorbells again; venet_tx.c), backend=tap|null (default tap; null,
 * for benchmarks and tests, takes no tap: tx frames are copied once into
 * a host buffer and dropped, rx never delivers; docs/devices/venet.md),
 * queues=N (1..16, default 1: the queue pairs a guest may get with
 * QUEUES; more than 1 opens the tap IFF_MULTI_QUEUE, one queue per pair:
 * venet_pairs.c), doorbell_mask_us=N (0..10000, default 500: how long a
 * streaming guest's drained tx ring stays masked before we look again;
 * 0: never; venet_tx_hold.c), rx_coalesce_us=N (0..10000, default 500:
 * how long a stream's rx batches may wait for their interrupt; 0: never;
 * venet_rx_coalesce.c).
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

/* Open the tap if we have none (create, open, LINKUP). */
static void backend_try(struct venet *v)
{
	char err[160];
	int ret;

	if (v->tap.fd >= 0 || v->null_backend)
		return;
	ret = tap_open(&v->tap, v->tapreq, v->queues, err, sizeof(err));
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
	/* the queues of the pairs not active leave; the rest are watched */
	venet_pairs_apply(v);
}

/* ---- fds ----------------------------------------------------------------- */

static void kick_cb(struct hostd_dev *dev, void *arg)
{
	(void)dev;
	venet_tx_work(arg);
}

/* a held tx ring's period is over: look at it (venet_tx_hold.c) */
static void hold_cb(struct hostd_dev *dev, void *arg)
{
	struct venet_pair *p = arg;

	(void)dev;
	p->v->st.tx_holds++;
	venet_tx_work(p);
}

/* an rx coalescing period is over (venet_rx_coalesce.c) */
static void rxc_cb(struct hostd_dev *dev, void *arg)
{
	(void)dev;
	venet_rx_coalesced(arg);
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

/* A decimal number in [min, max] into *@out: 0, or -EINVAL. */
static int param_uint(const char *s, unsigned long min, unsigned long max,
		      unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	if (!*s || *end || errno || *s == '-' || *out < min || *out > max)
		return -EINVAL;
	return 0;
}

/*
 * A time key (tx_poll_us=, doorbell_mask_us=, rx_coalesce_us=): @key's
 * microseconds, 0 .. @max, default @def, into *@ns.
 */
static int venet_param_us(struct venet *v, const struct hostd_params *p,
			  const char *key, unsigned long def, unsigned long max,
			  __u64 *ns)
{
	const char *s = hostd_param_get(p, key);
	unsigned long us = def;

	if (s && param_uint(s, 0, max, &us))
		return hostd_dev_fail(v->dev, -EINVAL,
				      "%s=%s: want 0..%lu (microseconds)",
				      key, s, max);
	*ns = (__u64)us * 1000;
	return 0;
}

/* queues=: the queue pairs a guest may get, 1 .. VENET_MAX_QUEUE_PAIRS. */
static int venet_param_queues(struct venet *v, const char *s)
{
	unsigned long n = VENET_QUEUES_DEFAULT;

	if (s && param_uint(s, 1, VENET_MAX_QUEUE_PAIRS, &n))
		return hostd_dev_fail(v->dev, -EINVAL,
				      "queues=%s: want 1..%d (queue pairs)",
				      s, VENET_MAX_QUEUE_PAIRS);
	v->queues = (unsigned int)n;
	return 0;
}

/* backend=tap|null; null takes no tap= (its pairs get sink buffers). */
static int venet_param_backend(struct venet *v, const struct hostd_params *p)
{
	const char *s = hostd_param_get(p, "backend");

	if (!s || !strcmp(s, "tap"))
		return 0;
	if (strcmp(s, "null"))
		return hostd_dev_fail(v->dev, -EINVAL,
				      "backend=%s: want tap or null", s);
	if (hostd_param_get(p, "tap"))
		return hostd_dev_fail(v->dev, -EINVAL,
				      "backend=null takes no tap=");
	v->null_backend = true;
	return 0;
}

/*
 * tap=, mac=, strict=, tx_poll_us= (into *@poll_ns), backend=, queues=,
 * doorbell_mask_us=, rx_coalesce_us=
 * into @v; every refusal says why.
 */
static int venet_params(struct venet *v, const struct hostd_params *p,
			__u64 *poll_ns)
{
	static const char *const known[] = { "tap", "mac", "strict",
					     "tx_poll_us", "backend",
					     "queues", "doorbell_mask_us",
					     "rx_coalesce_us", NULL };
	struct hostd_dev *dev = v->dev;
	const char *s;
	int ret;

	ret = hostd_params_check(dev, p, known);
	if (ret < 0)
		return ret;
	ret = venet_param_backend(v, p);
	if (!ret)
		ret = venet_param_queues(v, hostd_param_get(p, "queues"));
	if (!ret)
		ret = venet_param_us(v, p, "doorbell_mask_us",
				     VENET_DOORBELL_MASK_US,
				     VENET_DOORBELL_MASK_US_MAX, &v->mask_ns);
	if (!ret)
		ret = venet_param_us(v, p, "rx_coalesce_us",
				     VENET_RX_COALESCE_US,
				     VENET_RX_COALESCE_US_MAX, &v->rx_coalesce_ns);
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
	return venet_param_us(v, p, "tx_poll_us", VENET_TX_POLL_US,
			      VENET_TX_POLL_US_MAX, poll_ns);
}

/* ---- ops ----------------------------------------------------------------- */

/* Pair @i of @v: its queues, kick, timers and sink. 0 or -errno. */
static int pair_init(struct venet *v, unsigned int i, __u64 poll_ns)
{
	struct venet_pair *p = &v->pair[i];
	int ret;

	p->v = v;
	p->idx = i;
	/* pairs_fini() may see them before their init */
	p->hold.fd = -1;
	p->rxc.fd = -1;
	p->rxq.owner = p;
	p->txq.owner = p;
	p->txq.window.cap_ns = poll_ns;
	if (v->null_backend && !(p->sink = malloc(VENET_SINK_LEN)))
		return -ENOMEM;
	/* doorbell_mask_us=0 never holds, rx_coalesce_us=0 never waits */
	ret = v->mask_ns ? hostd_timer_init(v->dev, &p->hold, hold_cb, p) : 0;
	if (!ret && v->rx_coalesce_ns)
		ret = hostd_timer_init(v->dev, &p->rxc, rxc_cb, p);
	if (!ret)
		ret = hostd_kick_init(v->dev, &p->kick, kick_cb, p);
	return ret;
}

/* Undo pair_init() of pairs [0, @n): kicks, timers and sinks. */
static void pairs_fini(struct venet *v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct venet_pair *p = &v->pair[i];

		if (p->kick.dev)
			hostd_kick_fini(&p->kick);
		if (p->v) {
			hostd_timer_fini(&p->hold);
			hostd_timer_fini(&p->rxc);
		}
		free(p->sink);
		p->sink = NULL;
	}
}

static int venet_create(struct hostd_dev *dev, const struct hostd_params *p)
{
	struct venet *v = calloc(1, sizeof(*v));
	__u64 poll_ns = 0;
	unsigned int i;
	int ret;

	if (!v)
		return -ENOMEM;
	v->dev = dev;
	v->mem.xlate = venet_xlate;
	v->mem.data = venet_xlate_data;
	v->mem.ctx = dev;
	v->tap.fd = -1;
	v->qsync.fd = -1;
	venet_pairs_reset(v);
	ret = venet_params(v, p, &poll_ns);
	for (i = 0; !ret && i < v->queues; i++)
		ret = pair_init(v, i, poll_ns);
	if (!ret && v->queues > 1)
		ret = venet_qsync_init(v);
	if (ret < 0) {
		venet_qsync_fini(v);
		pairs_fini(v, v->queues);
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

	venet_tap_unwatch_all(v);
	tap_close(&v->tap);
	venet_qsync_fini(v);
	pairs_fini(v, v->queues);
	free(v);
	hostd_dev_set_priv(dev, NULL);
}

static int venet_open(struct hostd_dev *dev, __u32 version)
{
	struct venet *v = hostd_dev_priv(dev);
	unsigned int i;

	if (version != VENET_VERSION)
		return -EPROTO;

	v->open = true;
	v->link = false;	/* down until the first LINKUP */
	v->caps = 0;
	venet_pairs_reset(v);	/* one pair until QUEUES */
	for (i = 0; i < v->queues; i++) {
		v->pair[i].rx_starved = false;
		v->pair[i].tx_blocked = false;
	}

	backend_try(v);
	rx_offload_apply(v);	/* caps 0 until NEGCAP: plain frames */
	if (v->tap.fd >= 0) {
		tap_set_carrier(&v->tap, 0);
		venet_pairs_apply(v);
	}
	return 0;
}

static void venet_close(struct hostd_dev *dev)
{
	struct venet *v = hostd_dev_priv(dev);
	unsigned int i;

	v->open = false;
	v->link = false;
	if (v->tap.fd >= 0)
		tap_set_carrier(&v->tap, 0);
	venet_tap_unwatch_all(v);
	for (i = 0; i < v->queues; i++) {
		struct venet_pair *p = &v->pair[i];

		/* a kick still pending must not outlive this session */
		hostd_kick_cancel(&p->kick);
		venet_tx_hold_stop(p);
		venet_rx_coalesce_stop(p);
		p->tx_blocked = false;
		p->tx_unsignalled = 0;
		/* no pointer into guest memory survives close */
		hostd_devq_detach(&p->rxq);
		hostd_devq_detach(&p->txq);
	}
	v->caps = 0;
	/* the next guest may not take offloaded frames */
	rx_offload_apply(v);
	/* nor ask for pairs: queue 0 takes every flow until it does */
	venet_pairs_reset(v);
	venet_pairs_apply(v);
}

static int call_link(struct venet *v, bool up)
{
	unsigned int i;

	if (up)
		backend_try(v);
	v->link = up;
	if (v->tap.fd >= 0)
		tap_set_carrier(&v->tap, up);
	if (!up)	/* posted rx buffers stay posted */
		venet_tap_update(v);
	for (i = 0; i < v->queues; i++) {
		if (up)
			venet_rx_run(&v->pair[i]);
		else	/* tx still drains (dropping) */
			venet_tx_work(&v->pair[i]);
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
	if (venet_rings_registered(v))
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
	case VENET_FUNC_QUEUES:
		if (len != sizeof(struct venet_queues))
			return -EINVAL;
		return venet_call_queues(v, buf);
	case VENET_FUNC_SETACTIVE:
		if (len != sizeof(struct venet_queues))
			return -EINVAL;
		return venet_call_setactive(v, buf);
	default:
		return -EINVAL;
	}
}

static int venet_shm(struct hostd_dev *dev, struct hostd_shm *shm)
{
	struct venet *v = hostd_dev_priv(dev);
	struct venet_pair *p;
	struct hostd_devq *q;
	bool rx = (shm->id % 2) == VENET_QUEUE_RX;
	int ret;

	/* pair id/2: rx 2p, tx 2p + 1; only pairs granted by QUEUES */
	if (shm->id / 2 >= v->granted)
		return -EINVAL;
	p = &v->pair[shm->id / 2];
	q = rx ? &p->rxq : &p->txq;
	if (q->attached)
		return -EBUSY;
	if (!shm->signal)
		return -EINVAL;	/* a ring without a doorbell is useless */

	ret = hostd_devq_attach(q, shm, 0, rx ? venet_rx_signal :
						venet_tx_signal);
	if (ret)
		return ret;
	shm->priv = q;

	/* start listening; pick up anything posted before we listened */
	hostd_devq_unmask(q, 0);
	if (rx)
		venet_rx_run(p);
	else
		venet_tx_work(p);
	return 0;
}

/* Injects of @q's signal that reached the guest's side (not suppressed). */
static __u64 q_injects(const struct hostd_devq *q)
{
	if (!q->attached || !q->ioq.signal)
		return 0;
	return __atomic_load_n(&q->ioq.signal->injects, __ATOMIC_RELAXED);
}

/* Pair @p's counters: qP_rx_packets, ... (qP_ + the name). */
static void pair_stats(struct venet_pair *p, struct hostd_stats_out *out)
{
	const struct venet_pair_stats *s = &p->st;
	char key[32];

#define S(name)								\
	do {								\
		snprintf(key, sizeof(key), "q%u_" #name, p->idx);	\
		hostd_stat_u64(out, key, s->name);			\
	} while (0)
	S(rx_packets); S(rx_bytes); S(rx_dropped);
	S(tx_packets); S(tx_bytes); S(tx_dropped);
#undef S
}

static void venet_stats(struct hostd_dev *dev, struct hostd_stats_out *out)
{
	struct venet *v = hostd_dev_priv(dev);
	const struct venet_stats *s = &v->st;
	const struct venet_pair *p0 = &v->pair[0];
	__u64 rxs = 0, txs = 0;
	unsigned int i;
	char buf[64];

	if (v->null_backend) {
		hostd_stat_str(out, "backend", "null");
	} else if (v->tap.fd >= 0) {
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
	hostd_stat_u64(out, "queues", v->queues);
	hostd_stat_u64(out, "queues_granted", v->granted);
	hostd_stat_u64(out, "queues_active", v->active);
	hostd_stat_u64(out, "tap_queues_attached",
		       (__u64)__builtin_popcount(v->tap.attached));
	hostd_stat_u64(out, "tap_queue_syncs", v->qsyncs);
	hostd_stat_u64(out, "tx_poll_us", p0->txq.window.cap_ns / 1000);
	hostd_stat_u64(out, "doorbell_mask_us", v->mask_ns / 1000);
	hostd_stat_u64(out, "rx_coalesce_us", v->rx_coalesce_ns / 1000);
	/* pair 0's window, as before pairs */
	hostd_stat_u64(out, "tx_window_us", p0->txq.window.ns / 1000);
	hostd_stat_u64(out, "tx_window_grows", p0->txq.window.grows);
	hostd_stat_u64(out, "tx_window_shrinks", p0->txq.window.shrinks);

#define S(name) hostd_stat_u64(out, #name, s->name)
	S(rx_packets); S(rx_bytes); S(tx_packets); S(tx_bytes);
	S(rx_notify_in); S(tx_notify_in); S(rx_notify_out); S(tx_notify_out);
	S(tx_gso); S(tx_csum); S(tx_bad); S(tx_errors); S(tx_dropped);
	S(tx_blocked); S(rx_bad); S(rx_too_big); S(rx_offload_dropped);
	S(rx_csum_fixed); S(rx_gso); S(rx_csum); S(rx_offload_errors);
	S(rx_starved); S(rx_flushed); S(kicks); S(tx_polls); S(tx_holds);
	S(rx_coalesced);
	S(backend_lost);
#undef S
	/* what crossed to the guest: the signals it had not masked */
	for (i = 0; i < v->queues; i++) {
		rxs += q_injects(&v->pair[i].rxq);
		txs += q_injects(&v->pair[i].txq);
	}
	hostd_stat_u64(out, "rx_signals_sent", rxs);
	hostd_stat_u64(out, "tx_signals_sent", txs);
	for (i = 0; i < v->queues; i++)
		pair_stats(&v->pair[i], out);
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
