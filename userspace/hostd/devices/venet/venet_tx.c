// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * venet, guest -> tap (see venet_dev.h).
 *
 * tx (shm 1). Wakeups: the tx ring's signal (guest posted), our kick
 * (hostd_kick: we stopped at the budget), the tap turning writable (we got
 * EAGAIN). While draining, tx notifications are masked, so a guest
 * posting at full speed costs no doorbells: each descriptor is copied
 * once, turned into a virtio_net_hdr + iovecs into guest RAM and written
 * to the tap with one writev (no copy by us); the pass hands back what
 * it sent with one hostd_devq_drain() (one valid-head store: the tx
 * completions). At the budget we kick ourselves and yield to the loop
 * (other devices, rx) with notifications still masked: under load we
 * poll. A drained ring is polled on (kicks, still masked) until the poll
 * window has passed since the last frame: a guest that posts again within
 * that time rings no doorbell. Then we unmask, then look again (a post
 * between our last look and the unmask raised no doorbell), and only sleep
 * if it is still empty (hostd_devq_unmask).
 *
 * The window (txq.window) adapts between 0 and tx_poll_us (device.h,
 * struct hostd_poll_window; the drain after a sleep teaches it): a
 * streaming guest keeps it open; a request/response guest, whose next
 * frame comes a round trip later, closes it and gets no host spinning on
 * the core it needs to produce that frame.
 *
 * Completions are signalled when we stop polling (and every quarter ring
 * while we poll, so a guest whose ring is full is woken early): while we
 * poll the guest reaps them itself as it transmits, so they need no
 * interrupt. A guest that waits on them waits at most tx_poll_us longer.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include "venet_dev.h"

/* Come back after the loop's other fds (tx: budget or trickle). */
static void tx_kick(struct venet *v)
{
	if (hostd_kick(&v->kick))
		v->st.kicks++;
}

/* The completions so far to the guest (suppressed while it masks them). */
static void tx_signal(struct venet *v)
{
	unsigned int n = v->tx_unsignalled;

	v->tx_unsignalled = 0;
	/* a ring that went away takes its completions' news with it */
	if (n && hostd_devq_live(&v->txq))
		venet_q_signal(&v->txq, &v->st.tx_notify_out);
}

/* What became of a frame: sent, or popped unsent, or kept for later. */
enum tx_verdict { TX_SENT, TX_POP, TX_KEEP };

/*
 * The descriptor's frame: 0, or -1 when it is invalid (*@why says how;
 * the caller counts and reports it).
 */
static int tx_frame(struct venet *v, const struct ioq_ring_desc *desc,
		    struct venet_txframe *f, const char **why)
{
	/* each field of the descriptor read once */
	__u64 ptr = VBUS_READ(desc->ptr);
	__u64 len = VBUS_READ(desc->len);

	*why = NULL;
	if (v->caps & VENET_CAP_SG)
		return venet_tx_sg(&v->mem, v->caps, ptr, len, f, why);
	return venet_tx_flat(&v->mem, ptr, len, f, why);
}

/* A bad tx descriptor: counted, logged, and with strict the device faults. */
static void tx_bad(struct venet *v, const char *why)
{
	v->st.tx_bad++;
	venet_bad_desc(v, "tx", why);
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
		venet_backend_lost(v, errno);
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

/* One pass's state: what it sent, and the bad descriptor that ended it */
struct tx_batch {
	struct venet *v;
	__u64 bytes;
	const char *bad;	/* strict: why the descriptor that ended it is */
};

/* One descriptor: sent or dropped (consumed), or kept (ends the batch). */
static enum hostd_devq_verdict tx_one(struct hostd_devq *q,
				      struct ioq_ring_desc *desc, void *arg)
{
	struct tx_batch *tb = arg;
	struct venet *v = tb->v;
	struct venet_txframe f;
	const char *why;

	(void)q;
	if (!tx_frame(v, desc, &f, &why)) {
		enum tx_verdict r = tx_write(v, &f);

		if (r == TX_KEEP)
			return HOSTD_DEVQ_STOP;
		if (r == TX_SENT)
			tb->bytes += f.len;
	} else if (v->strict) {
		tb->bad = why ? why : "?";
		return HOSTD_DEVQ_STOP;
	} else {
		tx_bad(v, why);	/* dropped: completed unsent */
	}
	return HOSTD_DEVQ_CONSUMED;
}

/*
 * One bounded pass over the tx ring: claim up to the budget, send each
 * frame, hand the sent (and dropped) ones back with one store
 * (hostd_devq_drain; [R2] inside: our reads of the frames, the writev,
 * before valid's head: the guest may reuse them now). A frame the tap
 * cannot take yet (TX_KEEP) ends the pass unpublished (the guest may not
 * reuse its memory before the completion); a bad descriptor on a strict
 * device ends it too, and faults the device only after the good ones
 * before it went back. Returns 1 when it stopped at the budget (more may
 * be there), 0 when the ring is drained, -1 when it must not go on (tap
 * blocked, device or ring faulted).
 */
static int tx_pass(struct venet *v)
{
	struct tx_batch tb = { .v = v };
	bool broken = false;
	int n;

	n = hostd_devq_drain(&v->txq, VENET_TX_BUDGET, tx_one, &tb, 0);
	if (n < 0) {
		broken = true;	/* faulted, or the guest wrote our head */
		n = 0;
	}
	if (tb.bad)
		tx_bad(v, tb.bad);	/* strict: faults the device */
	if (n) {
		hostd_dev_account(v->dev, (__u64)n, tb.bytes);
		v->tx_unsignalled += (unsigned int)n;
		/* a quarter ring done: wake a guest that may be out of room */
		if (v->tx_unsignalled >= v->txq.size / 4)
			tx_signal(v);
	} else {
		v->st.tx_polls++;
	}
	if (v->tx_blocked || broken || tb.bad || !hostd_devq_live(&v->txq))
		return -1;
	return n == VENET_TX_BUDGET ? 1 : 0;
}

void venet_tx_work(struct venet *v)
{
	int round;

	if (!hostd_devq_live(&v->txq) || v->tx_blocked)
		goto out_signal;

	/* masked while we drain: the guest's posts need no doorbell */
	hostd_devq_mask(&v->txq);

	for (round = 0; round < VENET_TX_ROUNDS; round++) {
		int r = tx_pass(v);

		if (r < 0)
			goto out_signal; /* stays masked: EPOLLOUT or close */
		if (r > 0 || hostd_devq_polling(&v->txq)) {
			tx_kick(v);	/* poll: come back after the others */
			goto out;
		}
		/* we stop polling: the guest reaps on our signal now */
		tx_signal(v);
		/*
		 * Drained. Unmask, then look again: a post that landed after
		 * our last look but before the unmask rang no doorbell.
		 */
		if (!hostd_devq_unmask(&v->txq, 0))
			goto out;
		hostd_devq_mask(&v->txq);
	}
	tx_kick(v);	/* a guest trickling posts: don't hold the loop */
	goto out;
out_signal:
	tx_signal(v);
out:
	venet_tap_update(v);
}

void venet_tx_signal(struct hostd_devq *q)
{
	struct venet *v = q->owner;

	v->st.tx_notify_in++;
	venet_tx_work(v);
}
