// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The "virtual-ethernet" device type: the host (south) side of a venet
 * device, backed by a tap interface. Protocol: the venet section of
 * docs/transport.md; ABI: <vbus/venet.h>.
 *
 * Params: tap=NAME (created when absent, attached when it exists; default
 * a kernel-chosen "vbus%d"), mac=xx:xx:xx:xx:xx:xx (default: random,
 * locally administered), strict=0|1 (1: an invalid descriptor faults the
 * device instead of being dropped and counted).
 *
 * Everything runs on the guest's loop thread (device.h), so there are no
 * locks. The data path:
 *
 * tx (shm 1). Wakeups: the tx ring's signal (guest posted), our kick
 * eventfd (we stopped at the budget), the tap turning writable (we got
 * EAGAIN). While draining, tx notifications are masked, so a guest
 * posting at full speed costs no doorbells: each descriptor is copied
 * once, turned into a virtio_net_hdr + iovecs into guest RAM and written
 * to the tap with one writev (no copy by us), then popped (the tx
 * completion); one signal per batch. At the budget we kick ourselves and
 * yield to the loop (other devices, rx) with notifications still masked:
 * under load we poll. When the ring is empty we unmask, then look again
 * (a post between our last look and the unmask raised no doorbell),
 * and only sleep if it is still empty.
 *
 * rx (shm 0). Wakeups: the tap readable (level-triggered EPOLLIN), the rx
 * ring's signal. While the guest has posted buffers we read frames from
 * the tap straight into them (readv: header to a local, payload to guest
 * memory), set len, pop, and signal once per batch; rx notifications stay
 * masked (the guest re-posting buffers needs no doorbell while we still
 * have some). Out of buffers we unmask, look again, and if still none we
 * stop polling the tap (no EPOLLIN: frames wait in the tap's queue, and
 * the host kernel drops at its queue limit, not us in a loop) until the
 * guest's next rx signal.
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
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <linux/if_tun.h>

#include <vbus/venet.h>

#include "device.h"
#include "tap.h"
#include "venet_frame.h"

/* Descriptors per pass before we yield to the loop. */
#define VENET_RX_BUDGET 64
#define VENET_TX_BUDGET 64
/* unmask/re-check rounds in one tx pass before we kick ourselves */
#define VENET_TX_ROUNDS 4

#define VENET_CAPS_SUPPORTED (VENET_CAP_SG | VENET_CAP_TSO4 | \
			      VENET_CAP_TSO6 | VENET_CAP_ECN | VENET_CAP_RXSG)

/* What the tap may hand us when the guest takes RXSG frames. */
#define VENET_RXSG_TUN_F (TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | \
			  TUN_F_TSO_ECN)

struct venet;

struct venet_q {
	struct ioq ioq;
	struct ioq_notifier notifier;
	struct venet *v;
	bool attached;
	bool notify_on;		/* our side's notifications unmasked */
};

struct venet_stats {
	__u64 rx_packets, rx_bytes;
	__u64 tx_packets, tx_bytes;
	__u64 rx_notify_in, tx_notify_in;	/* guest signals that ran us */
	__u64 rx_notify_out, tx_notify_out;	/* ioq_signal() towards it */
	__u64 tx_gso, tx_csum;		/* frames with GSO / partial csum */
	__u64 tx_bad;			/* invalid descriptors, dropped */
	__u64 tx_errors;		/* the tap refused the frame */
	__u64 tx_dropped;		/* link down or no backend */
	__u64 tx_blocked;		/* tap write EAGAIN */
	__u64 rx_bad;			/* untranslatable buffers: len 0 */
	__u64 rx_too_big;		/* frame longer than the buffer */
	__u64 rx_offload_dropped;	/* GSO frame with offloads off */
	__u64 rx_csum_fixed;		/* partial csum completed by us */
	__u64 rx_gso, rx_csum;		/* RXSG: GSO / partial csum frames */
	__u64 rx_offload_errors;	/* RXSG: tap offload failed, plain rx */
	__u64 rx_starved;		/* ran out of guest buffers */
	__u64 rx_flushed;		/* buffers returned by FLUSHRX */
	__u64 kicks;			/* self-scheduled tx passes */
	__u64 backend_lost;
};

struct venet {
	struct hostd_dev *dev;
	struct venet_mem mem;
	struct tap tap;
	char tapreq[IFNAMSIZ];		/* tap= as given ("" = kernel's) */
	char backend_err[192];		/* why there is no tap */
	__u8 mac[6];
	bool strict;

	bool open;
	bool link;			/* LINKUP .. LINKDOWN */
	__u32 caps;			/* negotiated, group SG */

	struct venet_q rxq, txq;
	int kick_fd;			/* eventfd: "run tx again" */
	bool kick_watched, tap_watched;
	__u32 tap_events;		/* what the tap fd is watched for */
	bool rx_starved;		/* no guest buffer: tap not polled */
	bool tx_blocked;		/* tap said EAGAIN: wait for EPOLLOUT */
	bool tx_kicked;			/* a kick is outstanding */

	struct venet_stats st;
};

/* ---- helpers ------------------------------------------------------------ */

static void *venet_xlate(void *ctx, __u64 gpa, __u64 len)
{
	return hostd_gpa(ctx, gpa, len);
}

static bool q_dead(const struct venet *v, const struct venet_q *q)
{
	return !q->attached || hostd_dev_faulted(v->dev) ||
	       shm_signal_faulted(q->ioq.signal);
}

/* rx can run: the guest is up, the rx ring is there, a tap is there */
static bool rx_possible(const struct venet *v)
{
	return v->open && v->link && v->tap.fd >= 0 &&
	       !q_dead(v, &v->rxq);
}

/* Bring the tap fd's epoll interest in line with the state. */
static void tap_update(struct venet *v)
{
	__u32 ev = 0;

	if (!v->tap_watched)
		return;
	if (rx_possible(v) && !v->rx_starved)
		ev |= EPOLLIN;
	if (v->tx_blocked && !q_dead(v, &v->txq))
		ev |= EPOLLOUT;
	if (ev != v->tap_events && hostd_fd_mod(v->dev, v->tap.fd, ev) == 0)
		v->tap_events = ev;
}

static void kick(struct venet *v)
{
	__u64 one = 1;

	if (v->tx_kicked)
		return;
	v->tx_kicked = true;
	v->st.kicks++;
	/*
	 * An eventfd write only fails (EAGAIN) when the counter is already
	 * huge, i.e. readable: the kick is pending either way.
	 */
	if (write(v->kick_fd, &one, sizeof(one)) < 0)
		return;
}

static void kick_drain(struct venet *v)
{
	__u64 cnt;

	/* EAGAIN: nothing pending, which is all we wanted to know */
	if (read(v->kick_fd, &cnt, sizeof(cnt)) < 0)
		return;
}

/*
 * An invalid descriptor. The contract (transport.md) says drop, count,
 * pop; with strict=1 we fault the device instead, for a guest driver
 * under development that wants the first mistake to stop everything.
 */
static void bad_desc(struct venet *v, const char *dir, const char *why)
{
	if (v->strict)
		hostd_dev_fault(v->dev, "venet: bad %s descriptor: %s", dir,
				why ? why : "?");
	else
		hostd_dev_log(v->dev, "venet: bad %s descriptor dropped: %s",
			      dir, why ? why : "?");
}

static void tap_unwatch(struct venet *v)
{
	if (v->tap_watched)
		hostd_fd_del(v->dev, v->tap.fd);
	v->tap_watched = false;
	v->tap_events = 0;
}

static void tap_watch(struct venet *v);

/* The tap went away under us (e.g. `ip link del`): run without backend. */
static void backend_lost(struct venet *v, int err)
{
	v->st.backend_lost++;
	snprintf(v->backend_err, sizeof(v->backend_err),
		 "tap %s lost: %s", v->tap.name, strerror(err));
	hostd_dev_log(v->dev, "venet: %s; dropping traffic until the next "
		      "LINKUP", v->backend_err);
	tap_unwatch(v);
	tap_close(&v->tap);
	v->tx_blocked = false;
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

/* ---- tx ---------------------------------------------------------------- */

/*
 * One bounded pass over the tx ring. Returns 1 when it stopped at the
 * budget (more may be there), 0 when the ring is drained, -1 when it
 * must not go on (tap blocked, device or ring faulted).
 */
static int tx_pass(struct venet *v)
{
	struct ioq *ioq = &v->txq.ioq;
	struct ioq_iterator iter;
	struct venet_txframe f;
	__u64 bytes = 0;
	unsigned int n = 0;
	bool broken = false;

	if (ioq_iter_init(ioq, &iter, ioq_idxtype_valid, 0) ||
	    ioq_iter_seek(&iter, ioq_seek_head, 0, 0))
		return -1;

	while (n < VENET_TX_BUDGET && ioq_iter_owned(&iter)) {
		/* each field of the descriptor read once */
		__u64 ptr = VBUS_READ(iter.desc->ptr);
		__u64 len = VBUS_READ(iter.desc->len);
		const char *why = NULL;
		int ret;

		if (v->caps & VENET_CAP_SG)
			ret = venet_tx_sg(&v->mem, v->caps, ptr, len, &f, &why);
		else
			ret = venet_tx_flat(&v->mem, ptr, len, &f, &why);

		if (ret) {
			v->st.tx_bad++;
			bad_desc(v, "tx", why);
			if (hostd_dev_faulted(v->dev))
				break;
		} else if (!v->link || v->tap.fd < 0) {
			v->st.tx_dropped++;
		} else {
			ssize_t w;

			do {
				w = writev(v->tap.fd, f.iov, f.niov);
			} while (w < 0 && errno == EINTR);
			if (w < 0 && (errno == EAGAIN || errno == ENOBUFS)) {
				/*
				 * Keep the descriptor (the guest may not
				 * reuse the memory before the pop) and wait
				 * for the tap to drain.
				 */
				v->st.tx_blocked++;
				v->tx_blocked = true;
				break;
			}
			if (w < 0 && (errno == EBADFD || errno == EBADF)) {
				backend_lost(v, errno);
				v->st.tx_dropped++;
			} else if (w < 0) {
				/* e.g. the kernel refused the vnet header */
				v->st.tx_errors++;
				hostd_dev_log(v->dev, "venet: tap write: %s",
					      strerror(errno));
			} else {
				v->st.tx_packets++;
				v->st.tx_bytes += f.len;
				bytes += f.len;
				if (f.gso)
					v->st.tx_gso++;
				if (f.vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)
					v->st.tx_csum++;
			}
		}

		/* tx completion: the guest may reuse the frame now */
		if (ioq_iter_pop(&iter, 0) < 0) {
			broken = true;	/* the ring faulted its channel */
			break;
		}
		n++;
	}

	if (n) {
		/* one doorbell for the batch */
		ioq_signal(ioq, 0);
		v->st.tx_notify_out++;
		hostd_dev_account(v->dev, n, bytes);
	}
	if (v->tx_blocked || hostd_dev_faulted(v->dev) ||
	    shm_signal_faulted(ioq->signal) || broken)
		return -1;
	return n == VENET_TX_BUDGET ? 1 : 0;
}

static bool tx_pending(struct venet *v)
{
	struct ioq_iterator iter;

	if (ioq_iter_init(&v->txq.ioq, &iter, ioq_idxtype_valid, 0) ||
	    ioq_iter_seek(&iter, ioq_seek_head, 0, 0))
		return false;
	return ioq_iter_owned(&iter);
}

static void tx_work(struct venet *v)
{
	struct ioq *ioq = &v->txq.ioq;
	int round;

	if (q_dead(v, &v->txq) || v->tx_blocked)
		goto out;

	/* masked while we drain: the guest's posts need no doorbell */
	ioq_notify_disable(ioq, 0);
	v->txq.notify_on = false;

	for (round = 0; round < VENET_TX_ROUNDS; round++) {
		int r = tx_pass(v);

		if (r < 0)
			goto out;	/* stays masked: EPOLLOUT or close */
		if (r > 0) {
			kick(v);	/* poll: come back after the others */
			goto out;
		}
		/*
		 * Drained. Unmask, then look again: a post that landed after
		 * our last look but before the unmask rang no doorbell.
		 * shm_signal_enable()'s full barrier orders enabled=1 before
		 * this re-read of the ring.
		 */
		ioq_notify_enable(ioq, 0);
		v->txq.notify_on = true;
		if (!tx_pending(v))
			goto out;
		ioq_notify_disable(ioq, 0);
		v->txq.notify_on = false;
	}
	kick(v);	/* a guest trickling posts: don't hold the loop */
out:
	tap_update(v);
}

static void tx_notify(struct ioq_notifier *n)
{
	struct venet_q *q = (struct venet_q *)((char *)n -
				offsetof(struct venet_q, notifier));

	q->v->st.tx_notify_in++;
	tx_work(q->v);
}

/* ---- rx ---------------------------------------------------------------- */

static void rx_run(struct venet *v)
{
	struct ioq *ioq = &v->rxq.ioq;
	struct ioq_iterator iter;
	struct venet_rxbuf rb;
	struct virtio_net_hdr vh;
	__u64 bytes = 0;
	unsigned int done = 0, popped = 0;
	bool rxsg = v->caps & VENET_CAP_RXSG;

	v->rx_starved = false;
	if (!rx_possible(v))
		goto out;
	if (ioq_iter_init(ioq, &iter, ioq_idxtype_valid, 0) ||
	    ioq_iter_seek(&iter, ioq_seek_head, 0, 0))
		goto out;

	while (done < VENET_RX_BUDGET && v->tap.fd >= 0) {
		const char *why = NULL;
		__u64 ptr, len;
		ssize_t n;

		if (!ioq_iter_owned(&iter)) {
			if (q_dead(v, &v->rxq))
				break;
			if (!v->rxq.notify_on) {
				/*
				 * Out of buffers: ask the guest to tell us
				 * when it posts more, then look once more
				 * (enable's barrier orders the two).
				 */
				ioq_notify_enable(ioq, 0);
				v->rxq.notify_on = true;
				continue;
			}
			/* still none: stop reading the tap until a signal */
			v->rx_starved = true;
			v->st.rx_starved++;
			break;
		}
		if (v->rxq.notify_on) {
			/* we have buffers: re-posts need no doorbell */
			ioq_notify_disable(ioq, 0);
			v->rxq.notify_on = false;
		}

		ptr = VBUS_READ(iter.desc->ptr);
		len = VBUS_READ(iter.desc->len);
		if (rxsg ? venet_rx_sg(&v->mem, ptr, len, &rb, &why) :
			   venet_rx_flat(&v->mem, ptr, len, &rb, &why)) {
			/* hand it back empty (the contract's len = 0) */
			v->st.rx_bad++;
			bad_desc(v, "rx", why);
			if (hostd_dev_faulted(v->dev))
				break;
			VBUS_WRITE(iter.desc->len, 0);
			if (ioq_iter_pop(&iter, 0) < 0)
				break;
			popped++;
			done++;
			continue;
		}

		n = venet_rx_read(v->tap.fd, &rb, &vh);
		if (n == -EAGAIN)
			break;		/* tap drained: EPOLLIN wakes us */
		done++;
		if (n == -EMSGSIZE) {
			/* the tap consumed it; the buffer is still ours */
			v->st.rx_too_big++;
			continue;
		}
		if (n < 0) {
			backend_lost(v, (int)-n);
			break;
		}
		if (rxsg) {
			struct venet_sg out;

			if (venet_vnet_to_rx_sg(&vh, (__u32)n, &out, &why)) {
				v->st.rx_offload_dropped++;
				hostd_dev_log(v->dev,
					      "venet: rx frame dropped: %s",
					      why);
				continue;
			}
			venet_rx_sg_publish(&rb, &out);
			if (out.flags & VENET_SG_FLAG_GSO)
				v->st.rx_gso++;
			if (out.flags & VENET_SG_FLAG_NEEDS_CSUM)
				v->st.rx_csum++;
		} else {
			if (venet_rx_finish_flat(&rb, &vh, (__u32)n, &why)) {
				v->st.rx_offload_dropped++;
				hostd_dev_log(v->dev,
					      "venet: rx frame dropped: %s",
					      why);
				continue;
			}
			if (vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)
				v->st.rx_csum_fixed++;
		}

		/* len before the pop: publish() orders it before sown */
		VBUS_WRITE(iter.desc->len, (__u64)n);
		if (ioq_iter_pop(&iter, 0) < 0)
			break;
		popped++;
		v->st.rx_packets++;
		v->st.rx_bytes += (__u64)n;
		bytes += (__u64)n;
	}

	if (popped) {
		ioq_signal(ioq, 0);
		v->st.rx_notify_out++;
		hostd_dev_account(v->dev, popped, bytes);
	}
out:
	/* budget hit with data left: level-triggered EPOLLIN brings us back */
	tap_update(v);
}

static void rx_notify(struct ioq_notifier *n)
{
	struct venet_q *q = (struct venet_q *)((char *)n -
				offsetof(struct venet_q, notifier));

	q->v->st.rx_notify_in++;
	rx_run(q->v);
}

/* FLUSHRX: every buffer we hold goes back with len 0. */
static int rx_flush(struct venet *v)
{
	struct ioq *ioq = &v->rxq.ioq;
	struct ioq_iterator iter;
	unsigned int n = 0, max;

	if (q_dead(v, &v->rxq))
		return 0;	/* nothing held */
	if (ioq_iter_init(ioq, &iter, ioq_idxtype_valid, 0) ||
	    ioq_iter_seek(&iter, ioq_seek_head, 0, 0))
		return -EIO;
	/* bounded by the ring even if the guest keeps posting meanwhile */
	max = (unsigned int)ioq_size(ioq);
	while (n < max && ioq_iter_owned(&iter)) {
		VBUS_WRITE(iter.desc->len, 0);
		if (ioq_iter_pop(&iter, 0) < 0)
			return -EIO;
		n++;
	}
	v->st.rx_flushed += n;
	if (n) {
		ioq_signal(ioq, 0);
		v->st.rx_notify_out++;
	}
	/* we hold nothing now: unmask, so the guest's re-posts wake us */
	rx_run(v);
	return 0;
}

/* ---- fds ----------------------------------------------------------------- */

static void tap_cb(struct hostd_dev *dev, int fd, __u32 events, void *arg)
{
	struct venet *v = arg;

	(void)dev;
	(void)fd;
	if (events & (EPOLLERR | EPOLLHUP)) {
		/* level-triggered and unmaskable: must not spin on it */
		backend_lost(v, EIO);
		return;
	}
	if (events & EPOLLOUT) {
		v->tx_blocked = false;
		tx_work(v);
	}
	if (events & EPOLLIN)
		rx_run(v);
}

static void kick_cb(struct hostd_dev *dev, int fd, __u32 events, void *arg)
{
	struct venet *v = arg;

	(void)dev;
	(void)fd;
	(void)events;
	kick_drain(v);
	if (v->tx_kicked) {
		v->tx_kicked = false;
		tx_work(v);
	}
}

static void tap_watch(struct venet *v)
{
	if (v->tap_watched || v->tap.fd < 0)
		return;
	/* events 0: tap_update() turns EPOLLIN/EPOLLOUT on as needed */
	if (hostd_fd_add(v->dev, v->tap.fd, 0, tap_cb, v) == 0) {
		v->tap_watched = true;
		v->tap_events = 0;
	}
	tap_update(v);
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

/* ---- ops ----------------------------------------------------------------- */

static int venet_create(struct hostd_dev *dev, const struct hostd_params *p)
{
	struct venet *v;
	unsigned int i;

	for (i = 0; i < p->count; i++) {
		const char *k = p->v[i].key;

		if (strcmp(k, "tap") && strcmp(k, "mac") && strcmp(k, "strict")) {
			hostd_dev_log(dev, "venet: unknown parameter \"%s\" "
				      "(tap=, mac=, strict=)", k);
			return -EINVAL;
		}
	}

	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->dev = dev;
	v->mem.xlate = venet_xlate;
	v->mem.ctx = hostd_dev_guest(dev);
	v->tap.fd = -1;
	v->kick_fd = -1;
	v->rxq.v = v;
	v->txq.v = v;
	v->rxq.notifier.signal = rx_notify;
	v->txq.notifier.signal = tx_notify;

	{
		const char *s = hostd_param_get(p, "tap");

		if (s && strlen(s) >= IFNAMSIZ) {
			hostd_dev_log(dev, "venet: tap name \"%s\" longer "
				      "than %d", s, IFNAMSIZ - 1);
			goto inval;
		}
		snprintf(v->tapreq, sizeof(v->tapreq), "%s", s ? s : "");

		s = hostd_param_get(p, "mac");
		if (s && parse_mac(s, v->mac)) {
			hostd_dev_log(dev, "venet: bad mac \"%s\" (want a "
				      "unicast xx:xx:xx:xx:xx:xx)", s);
			goto inval;
		}
		if (!s)
			random_mac(v->mac);

		s = hostd_param_get(p, "strict");
		if (s && strcmp(s, "0") && strcmp(s, "1")) {
			hostd_dev_log(dev, "venet: strict=%s: want 0 or 1", s);
			goto inval;
		}
		v->strict = s && !strcmp(s, "1");
	}

	v->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (v->kick_fd < 0) {
		int e = errno;

		free(v);
		return -e;
	}

	/* a missing tap is not fatal: see "No backend" at the top */
	backend_try(v);
	hostd_dev_set_priv(dev, v);
	return 0;

inval:
	free(v);
	return -EINVAL;
}

static void venet_destroy(struct hostd_dev *dev)
{
	struct venet *v = hostd_dev_priv(dev);

	if (!v)
		return;
	tap_unwatch(v);
	tap_close(&v->tap);
	if (v->kick_fd >= 0)
		close(v->kick_fd);
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
	v->tx_kicked = false;

	if (!v->kick_watched &&
	    hostd_fd_add(dev, v->kick_fd, EPOLLIN, kick_cb, v) == 0)
		v->kick_watched = true;
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
	tap_unwatch(v);
	if (v->kick_watched)
		hostd_fd_del(dev, v->kick_fd);
	v->kick_watched = false;
	/* a kick still in the eventfd must not outlive this session */
	kick_drain(v);
	v->tx_kicked = false;
	v->tx_blocked = false;

	/* no pointer into guest memory survives close */
	if (v->rxq.attached)
		ioq_put(&v->rxq.ioq);
	if (v->txq.attached)
		ioq_put(&v->txq.ioq);
	v->rxq.attached = v->txq.attached = false;
	v->rxq.notify_on = v->txq.notify_on = false;
	v->caps = 0;
	/* the next guest may not take offloaded frames */
	rx_offload_apply(v);
}

static int venet_call(struct hostd_dev *dev, __u32 func, void *buf,
		      __u32 len)
{
	struct venet *v = hostd_dev_priv(dev);

	switch (func) {
	case VENET_FUNC_LINKUP:
		if (len)
			return -EINVAL;
		backend_try(v);
		v->link = true;
		if (v->tap.fd >= 0)
			tap_set_carrier(&v->tap, 1);
		rx_run(v);
		return 0;

	case VENET_FUNC_LINKDOWN:
		if (len)
			return -EINVAL;
		v->link = false;
		if (v->tap.fd >= 0)
			tap_set_carrier(&v->tap, 0);
		/* posted rx buffers stay posted; tx still drains (dropping) */
		tap_update(v);
		tx_work(v);
		return 0;

	case VENET_FUNC_MACQUERY:
		if (len != sizeof(v->mac))
			return -EINVAL;
		memcpy(buf, v->mac, sizeof(v->mac));
		return 0;

	case VENET_FUNC_NEGCAP: {
		struct venet_capabilities caps;

		if (len != sizeof(caps))
			return -EINVAL;
		memcpy(&caps, buf, sizeof(caps));
		/*
		 * The tx and rx descriptor formats follow the answer: once
		 * a ring is there it cannot change under descriptors in
		 * flight.
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

	case VENET_FUNC_FLUSHRX:
		if (len)
			return -EINVAL;
		return rx_flush(v);

	default:
		return -EINVAL;
	}
}

static int venet_shm(struct hostd_dev *dev, struct hostd_shm *shm)
{
	struct venet *v = hostd_dev_priv(dev);
	struct venet_q *q;
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

	ret = hostd_shm_ioq(shm, &q->ioq, NULL, 0);
	if (ret)
		return ret;
	q->ioq.notifier = &q->notifier;
	q->attached = true;
	shm->priv = q;

	/* start listening; pick up anything posted before we listened */
	ioq_notify_enable(&q->ioq, 0);
	q->notify_on = true;
	if (q == &v->rxq)
		rx_run(v);
	else
		tx_work(v);
	return 0;
}

static void venet_stats(struct hostd_dev *dev, struct hostd_stats_out *out)
{
	struct venet *v = hostd_dev_priv(dev);
	const struct venet_stats *s = &v->st;
	char buf[64];

	if (v->tap.fd >= 0) {
		hostd_stat_str(out, "backend", v->tap.name);
	} else {
		snprintf(buf, sizeof(buf), "none");
		hostd_stat_str(out, "backend", buf);
		hostd_stat_str(out, "backend_error", v->backend_err);
	}
	snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x",
		 v->mac[0], v->mac[1], v->mac[2], v->mac[3], v->mac[4],
		 v->mac[5]);
	hostd_stat_str(out, "mac", buf);
	hostd_stat_str(out, "link", v->link ? "up" : "down");
	hostd_stat_u64(out, "caps", v->caps);

#define S(name) hostd_stat_u64(out, #name, s->name)
	S(rx_packets); S(rx_bytes); S(tx_packets); S(tx_bytes);
	S(rx_notify_in); S(tx_notify_in); S(rx_notify_out); S(tx_notify_out);
	S(tx_gso); S(tx_csum); S(tx_bad); S(tx_errors); S(tx_dropped);
	S(tx_blocked); S(rx_bad); S(rx_too_big); S(rx_offload_dropped);
	S(rx_csum_fixed); S(rx_gso); S(rx_csum); S(rx_offload_errors);
	S(rx_starved); S(rx_flushed); S(kicks);
	S(backend_lost);
#undef S
}

static const struct hostd_dev_type venet_type = {
	.name = VENET_TYPE,
	.create = venet_create,
	.destroy = venet_destroy,
	.open = venet_open,
	.close = venet_close,
	.call = venet_call,
	.shm = venet_shm,
	.stats = venet_stats,
};

HOSTD_DEV_TYPE(venet_type);
