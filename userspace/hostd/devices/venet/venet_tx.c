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
 * it sent with one ioq_consume_end() (one valid-head store: the tx
 * completions). At the budget we kick ourselves and yield to the loop
 * (other devices, rx) with notifications still masked: under load we
 * poll. A drained ring is polled on (kicks, still masked) until the poll
 * window has passed since the last frame: a guest that posts again within
 * that time rings no doorbell. Then we unmask, then look again (a post
 * between our last look and the unmask raised no doorbell), and only sleep
 * if it is still empty.
 *
 * The window adapts between 0 and tx_poll_us (device.h, struct
 * hostd_poll_window): a streaming guest keeps it open; a request/response
 * guest, whose next frame comes a round trip later, closes it and gets no
 * host spinning on the core it needs to produce that frame.
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
	if (n && venet_q_live(v, &v->txq))
		venet_q_signal(&v->txq, &v->st.tx_notify_out);
}

/* Still within the poll window of the last frame: poll, don't unmask. */
static bool tx_polling(struct venet *v)
{
	return hostd_poll_window_open(&v->tx_window, v->tx_last_ns);
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

/*
 * backend=null: the frame leaves guest memory with one copy into a host
 * buffer, as a userspace switch port or DPDK memif's rx would take it,
 * and goes no further.
 */
static enum tx_verdict tx_sink(struct venet *v, const struct venet_txframe *f)
{
	size_t off = 0;
	int i;

	for (i = 0; i < f->niov; i++) {
		size_t n = f->iov[i].iov_len;

		if (n > VENET_SINK_LEN - off)
			n = VENET_SINK_LEN - off;
		memcpy(v->sink + off, f->iov[i].iov_base, n);
		off += n;
	}
	tx_sent(v, f);
	return TX_SENT;
}

/* One frame to the tap, with one writev (no copy by us). */
static enum tx_verdict tx_write(struct venet *v, const struct venet_txframe *f)
{
	ssize_t w;

	if (v->sink && v->link)
		return tx_sink(v, f);
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

/*
 * One bounded pass over the tx ring: claim up to the budget, send each
 * frame, hand the sent (and dropped) ones back with one ioq_consume_end().
 * A frame the tap cannot take yet (TX_KEEP) ends the pass unpublished (the
 * guest may not reuse its memory before the completion); a bad descriptor
 * on a strict device ends it too, and faults the device only after the
 * good ones before it went back. Returns 1 when it stopped at the budget
 * (more may be there), 0 when the ring is drained, -1 when it must not go
 * on (tap blocked, device or ring faulted).
 */
static int tx_pass(struct venet *v)
{
	struct ioq *ioq = &v->txq.ioq;
	struct venet_txframe f;
	const char *why, *bad = NULL;
	bool is_bad = false, broken = false;
	unsigned int n = 0;
	__u64 bytes = 0;
	__u32 pos;
	int avail;

	/* [A1] inside: the tail before the bodies it covers */
	avail = ioq_consume_begin(ioq, VENET_TX_BUDGET, &pos);
	if (avail < 0)
		return -1;
	while (n < (unsigned int)avail) {
		if (!tx_frame(v, ioq_desc(ioq, pos + n), &f, &why)) {
			enum tx_verdict r = tx_write(v, &f);

			if (r == TX_KEEP)
				break;
			if (r == TX_SENT)
				bytes += f.len;
		} else if (v->strict) {
			is_bad = true;
			bad = why;
			break;
		} else {
			tx_bad(v, why);	/* dropped: completed unsent */
		}
		n++;
	}
	/*
	 * tx completion: the guest may reuse the frames now. [R2] inside:
	 * our reads of the frames (the writev) before valid's head.
	 */
	if (n && ioq_consume_end(ioq, n, 0) < 0) {
		broken = true;	/* faulted, or the guest wrote our head */
		n = 0;
	}
	if (is_bad)
		tx_bad(v, bad);	/* strict: faults the device */
	if (n) {
		hostd_dev_account(v->dev, n, bytes);
		v->tx_last_ns = hostd_now_ns();
		v->tx_unsignalled += n;
		/* a quarter ring done: wake a guest that may be out of room */
		if (v->tx_unsignalled >= (unsigned int)ioq_size(ioq) / 4)
			tx_signal(v);
	} else {
		v->st.tx_polls++;
	}
	if (v->tx_blocked || broken || is_bad || !venet_q_live(v, &v->txq))
		return -1;
	return n == VENET_TX_BUDGET ? 1 : 0;
}

/* The look again after the unmask: one claim of one, published nothing */
static bool tx_pending(struct venet *v)
{
	__u32 pos;

	return ioq_consume_begin(&v->txq.ioq, 1, &pos) > 0;
}

void venet_tx_work(struct venet *v)
{
	struct ioq *ioq = &v->txq.ioq;
	bool slept = v->txq.notify_on;	/* we had unmasked: not a poll */
	__u64 last = v->tx_last_ns;
	int round;

	if (!venet_q_live(v, &v->txq) || v->tx_blocked)
		goto out_signal;

	/* masked while we drain: the guest's posts need no doorbell */
	ioq_notify_disable(ioq, 0);
	v->txq.notify_on = false;

	for (round = 0; round < VENET_TX_ROUNDS; round++) {
		int r = tx_pass(v);

		if (round == 0 && slept && v->tx_last_ns != last)
			hostd_poll_window_adapt(&v->tx_window, v->tx_last_ns - last);
		if (r < 0)
			goto out_signal; /* stays masked: EPOLLOUT or close */
		if (r > 0 || tx_polling(v)) {
			tx_kick(v);	/* poll: come back after the others */
			goto out;
		}
		/* we stop polling: the guest reaps on our signal now */
		tx_signal(v);
		/*
		 * Drained. Unmask, then look again: a post that landed after
		 * our last look but before the unmask rang no doorbell.
		 * shm_signal_enable()'s [B2] orders enabled=1 before this
		 * re-read of the ring (pairs with [B1] in the guest's inject).
		 */
		ioq_notify_enable(ioq, 0);
		v->txq.notify_on = true;
		if (!tx_pending(v))
			goto out;
		ioq_notify_disable(ioq, 0);
		v->txq.notify_on = false;
	}
	tx_kick(v);	/* a guest trickling posts: don't hold the loop */
	goto out;
out_signal:
	tx_signal(v);
out:
	venet_tap_update(v);
}

void venet_tx_notify(struct ioq_notifier *n)
{
	struct venet_q *q = hostd_container_of(n, struct venet_q, notifier);

	q->v->st.tx_notify_in++;
	venet_tx_work(q->v);
}
