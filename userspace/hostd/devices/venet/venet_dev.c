// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The "venet" device type (alias "virtual-ethernet", the 2009 name): the
 * host (south) side of a venet device, backed by a tap interface.
 * Protocol: the venet section of docs/transport.md; ABI: <vbus/venet.h>.
 *
 * Params: tap=NAME (created when absent, attached when it exists; default
 * a kernel-chosen "vbus%d"; claimed, so no other device of the daemon may
 * name it), mac=xx:xx:xx:xx:xx:xx (default: random,
 * locally administered), strict=0|1 (1: an invalid descriptor faults the
 * device instead of being dropped and counted).
 *
 * Everything runs on the guest's loop thread (device.h), so there are no
 * locks. The data path:
 *
 * tx (shm 1). Wakeups: the tx ring's signal (guest posted), our kick
 * (hostd_kick: we stopped at the budget), the tap turning writable (we got
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
	struct hostd_kick kick;		/* "run tx again" */
	bool tap_watched;
	__u32 tap_events;		/* what the tap fd is watched for */
	bool rx_starved;		/* no guest buffer: tap not polled */
	bool tx_blocked;		/* tap said EAGAIN: wait for EPOLLOUT */

	struct venet_stats st;
};

/* ---- helpers ------------------------------------------------------------ */

static void *venet_xlate(void *ctx, __u64 gpa, __u64 len)
{
	return hostd_dev_gpa(ctx, gpa, len);
}

/*
 * The queue can be used: attached, and the device not faulted (a ring
 * whose channel faults takes its device with it, so this is the only
 * fault check venet needs).
 */
static bool q_live(const struct venet *v, const struct venet_q *q)
{
	return q->attached && !hostd_dev_faulted(v->dev);
}

/* rx can run: the guest is up, the rx ring is there, a tap is there */
static bool rx_possible(const struct venet *v)
{
	return v->open && v->link && v->tap.fd >= 0 && q_live(v, &v->rxq);
}

/* Bring the tap fd's epoll interest in line with the state. */
static void tap_update(struct venet *v)
{
	__u32 ev = 0;

	if (!v->tap_watched)
		return;
	if (rx_possible(v) && !v->rx_starved)
		ev |= EPOLLIN;
	if (v->tx_blocked && q_live(v, &v->txq))
		ev |= EPOLLOUT;
	if (ev != v->tap_events && hostd_fd_mod(v->dev, v->tap.fd, ev) == 0)
		v->tap_events = ev;
}

/* Come back after the loop's other fds (tx: budget or trickle). */
static void tx_kick(struct venet *v)
{
	if (hostd_kick(&v->kick))
		v->st.kicks++;
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

/* One batch done on @q: one doorbell for it, and the counters. */
static void q_complete(struct venet *v, struct venet_q *q, unsigned int n,
		       __u64 bytes, __u64 *notify_out)
{
	if (!n)
		return;
	ioq_signal(&q->ioq, 0);
	(*notify_out)++;
	hostd_dev_account(v->dev, n, bytes);
}

/* ---- tx ---------------------------------------------------------------- */

/* What became of a frame: sent, or popped unsent, or kept for later. */
enum tx_verdict { TX_SENT, TX_POP, TX_KEEP };

/* The descriptor's frame: 0, or -1 when it is invalid (counted). */
static int tx_frame(struct venet *v, struct ioq_iterator *iter,
		    struct venet_txframe *f)
{
	/* each field of the descriptor read once */
	__u64 ptr = VBUS_READ(iter->desc->ptr);
	__u64 len = VBUS_READ(iter->desc->len);
	const char *why = NULL;
	int ret;

	if (v->caps & VENET_CAP_SG)
		ret = venet_tx_sg(&v->mem, v->caps, ptr, len, f, &why);
	else
		ret = venet_tx_flat(&v->mem, ptr, len, f, &why);
	if (!ret)
		return 0;
	v->st.tx_bad++;
	bad_desc(v, "tx", why);
	return -1;
}

static void tx_sent(struct venet *v, const struct venet_txframe *f)
{
	v->st.tx_packets++;
	v->st.tx_bytes += f->len;
	if (f->gso)
		v->st.tx_gso++;
	if (f->vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)
		v->st.tx_csum++;
}

/* One frame to the tap, with one writev (no copy by us). */
static enum tx_verdict tx_write(struct venet *v, const struct venet_txframe *f)
{
	ssize_t w;

	if (!v->link || v->tap.fd < 0) {
		v->st.tx_dropped++;
		return TX_POP;
	}
	do {
		w = writev(v->tap.fd, f->iov, f->niov);
	} while (w < 0 && errno == EINTR);
	if (w < 0 && (errno == EAGAIN || errno == ENOBUFS)) {
		/*
		 * Keep the descriptor (the guest may not reuse the memory
		 * before the pop) and wait for the tap to drain.
		 */
		v->st.tx_blocked++;
		v->tx_blocked = true;
		return TX_KEEP;
	}
	if (w < 0 && (errno == EBADFD || errno == EBADF)) {
		backend_lost(v, errno);
		v->st.tx_dropped++;
	} else if (w < 0) {
		/* e.g. the kernel refused the vnet header */
		v->st.tx_errors++;
		hostd_dev_log(v->dev, "venet: tap write: %s", strerror(errno));
	} else {
		tx_sent(v, f);
		return TX_SENT;
	}
	return TX_POP;
}

/*
 * One bounded pass over the tx ring. Returns 1 when it stopped at the
 * budget (more may be there), 0 when the ring is drained, -1 when it
 * must not go on (tap blocked, device or ring faulted).
 */
static int tx_pass(struct venet *v)
{
	struct ioq_iterator iter;
	struct venet_txframe f;
	__u64 bytes = 0;
	unsigned int n = 0;
	bool broken = false;

	if (ioq_iter_init(&v->txq.ioq, &iter, ioq_idxtype_valid, 0) ||
	    ioq_iter_seek(&iter, ioq_seek_head, 0, 0))
		return -1;
	while (n < VENET_TX_BUDGET && ioq_iter_owned(&iter)) {
		if (!tx_frame(v, &iter, &f)) {
			enum tx_verdict r = tx_write(v, &f);

			if (r == TX_KEEP)
				break;
			if (r == TX_SENT)
				bytes += f.len;
		}
		/* a strict device faulted on a bad descriptor: stop here */
		if (hostd_dev_faulted(v->dev))
			break;
		/* tx completion: the guest may reuse the frame now */
		if (ioq_iter_pop(&iter, 0) < 0) {
			/* faulted, or the guest moved its indexes under us */
			broken = true;
			break;
		}
		n++;
	}
	q_complete(v, &v->txq, n, bytes, &v->st.tx_notify_out);
	if (v->tx_blocked || broken || !q_live(v, &v->txq))
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

	if (!q_live(v, &v->txq) || v->tx_blocked)
		goto out;

	/* masked while we drain: the guest's posts need no doorbell */
	ioq_notify_disable(ioq, 0);
	v->txq.notify_on = false;

	for (round = 0; round < VENET_TX_ROUNDS; round++) {
		int r = tx_pass(v);

		if (r < 0)
			goto out;	/* stays masked: EPOLLOUT or close */
		if (r > 0) {
			tx_kick(v);	/* poll: come back after the others */
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
	tx_kick(v);	/* a guest trickling posts: don't hold the loop */
out:
	tap_update(v);
}

static void tx_notify(struct ioq_notifier *n)
{
	struct venet_q *q = hostd_container_of(n, struct venet_q, notifier);

	q->v->st.tx_notify_in++;
	tx_work(q->v);
}

/* ---- rx ---------------------------------------------------------------- */

enum rx_head { RX_BUF, RX_AGAIN, RX_STOP };

/*
 * Is there a guest buffer at the head? Out of buffers we ask the guest
 * to tell us when it posts more, then look once more (enable's barrier
 * orders the two); still none: stop reading the tap until a signal.
 */
static enum rx_head rx_head(struct venet *v, struct ioq_iterator *iter)
{
	struct ioq *ioq = &v->rxq.ioq;

	if (!ioq_iter_owned(iter)) {
		if (!q_live(v, &v->rxq))
			return RX_STOP;
		if (!v->rxq.notify_on) {
			ioq_notify_enable(ioq, 0);
			v->rxq.notify_on = true;
			return RX_AGAIN;
		}
		v->rx_starved = true;
		v->st.rx_starved++;
		return RX_STOP;
	}
	if (v->rxq.notify_on) {
		/* we have buffers: re-posts need no doorbell */
		ioq_notify_disable(ioq, 0);
		v->rxq.notify_on = false;
	}
	return RX_BUF;
}

/* An unusable buffer goes back empty (the contract's len = 0): 1, or -1. */
static int rx_bad_buffer(struct venet *v, struct ioq_iterator *iter,
			 const char *why)
{
	v->st.rx_bad++;
	bad_desc(v, "rx", why);
	if (hostd_dev_faulted(v->dev))
		return -1;
	VBUS_WRITE(iter->desc->len, 0);
	return ioq_iter_pop(iter, 0) < 0 ? -1 : 1;
}

/* The frame's offload state for the guest: 0, or -1 (dropped, counted). */
static int rx_finish(struct venet *v, struct venet_rxbuf *rb,
		     const struct virtio_net_hdr *vh, __u32 n)
{
	const char *why = NULL;
	struct venet_sg out;

	if (!(v->caps & VENET_CAP_RXSG)) {
		if (venet_rx_finish_flat(rb, vh, n, &why))
			goto out_drop;
		if (vh->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)
			v->st.rx_csum_fixed++;
		return 0;
	}
	if (venet_vnet_to_rx_sg(vh, n, &out, &why))
		goto out_drop;
	venet_rx_sg_publish(rb, &out);
	if (out.flags & VENET_SG_FLAG_GSO)
		v->st.rx_gso++;
	if (out.flags & VENET_SG_FLAG_NEEDS_CSUM)
		v->st.rx_csum++;
	return 0;

out_drop:
	v->st.rx_offload_dropped++;
	hostd_dev_log(v->dev, "venet: rx frame dropped: %s", why);
	return -1;
}

/*
 * One frame from the tap into the guest buffer at the head. 1: popped
 * (*@bytes grew), 0: a frame consumed but the buffer kept for the next
 * one, -1: stop (tap drained or gone, ring faulted).
 */
static int rx_one(struct venet *v, struct ioq_iterator *iter, __u64 *bytes)
{
	__u64 ptr = VBUS_READ(iter->desc->ptr);
	__u64 len = VBUS_READ(iter->desc->len);
	const char *why = NULL;
	struct virtio_net_hdr vh;
	struct venet_rxbuf rb;
	ssize_t n;

	if ((v->caps & VENET_CAP_RXSG) ?
	    venet_rx_sg(&v->mem, ptr, len, &rb, &why) :
	    venet_rx_flat(&v->mem, ptr, len, &rb, &why))
		return rx_bad_buffer(v, iter, why);
	n = venet_rx_read(v->tap.fd, &rb, &vh);
	if (n == -EAGAIN)
		return -1;	/* tap drained: EPOLLIN wakes us */
	if (n == -EMSGSIZE) {
		/* the tap consumed it; the buffer is still ours */
		v->st.rx_too_big++;
		return 0;
	}
	if (n < 0) {
		backend_lost(v, (int)-n);
		return -1;
	}
	if (rx_finish(v, &rb, &vh, (__u32)n))
		return 0;
	/* len before the pop: publish() orders it before sown */
	VBUS_WRITE(iter->desc->len, (__u64)n);
	if (ioq_iter_pop(iter, 0) < 0)
		return -1;
	v->st.rx_packets++;
	v->st.rx_bytes += (__u64)n;
	*bytes += (__u64)n;
	return 1;
}

static void rx_run(struct venet *v)
{
	struct ioq_iterator iter;
	unsigned int done = 0, popped = 0;
	__u64 bytes = 0;

	v->rx_starved = false;
	if (!rx_possible(v) ||
	    ioq_iter_init(&v->rxq.ioq, &iter, ioq_idxtype_valid, 0) ||
	    ioq_iter_seek(&iter, ioq_seek_head, 0, 0))
		goto out;
	while (done < VENET_RX_BUDGET && v->tap.fd >= 0) {
		enum rx_head h = rx_head(v, &iter);
		int r;

		if (h == RX_AGAIN)
			continue;
		if (h == RX_STOP)
			break;
		r = rx_one(v, &iter, &bytes);
		if (r < 0)
			break;
		popped += (unsigned int)r;
		done++;
	}
	q_complete(v, &v->rxq, popped, bytes, &v->st.rx_notify_out);
out:
	/* budget hit with data left: level-triggered EPOLLIN brings us back */
	tap_update(v);
}

static void rx_notify(struct ioq_notifier *n)
{
	struct venet_q *q = hostd_container_of(n, struct venet_q, notifier);

	q->v->st.rx_notify_in++;
	rx_run(q->v);
}

/* FLUSHRX: every buffer we hold goes back with len 0. */
static int rx_flush(struct venet *v)
{
	struct ioq *ioq = &v->rxq.ioq;
	struct ioq_iterator iter;
	unsigned int n = 0, max;

	if (!q_live(v, &v->rxq))
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

static void kick_cb(struct hostd_dev *dev, void *arg)
{
	(void)dev;
	tx_work(arg);
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

/* tap=, mac=, strict= into @v; every refusal says why (hostd_dev_fail). */
static int venet_params(struct venet *v, const struct hostd_params *p)
{
	static const char *const known[] = { "tap", "mac", "strict", NULL };
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
	return 0;
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
	v->mem.ctx = dev;
	v->tap.fd = -1;
	v->rxq.v = v;
	v->txq.v = v;
	v->rxq.notifier.signal = rx_notify;
	v->txq.notifier.signal = tx_notify;
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

	tap_unwatch(v);
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
	tap_unwatch(v);
	/* a kick still pending must not outlive this session */
	hostd_kick_cancel(&v->kick);
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

static int call_link(struct venet *v, bool up)
{
	if (up)
		backend_try(v);
	v->link = up;
	if (v->tap.fd >= 0)
		tap_set_carrier(&v->tap, up);
	if (up) {
		rx_run(v);
	} else {
		/* posted rx buffers stay posted; tx still drains (dropping) */
		tap_update(v);
		tx_work(v);
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
		return len ? -EINVAL : rx_flush(v);
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
		hostd_stat_str(out, "backend", "none");
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
