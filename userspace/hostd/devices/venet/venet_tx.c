// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * venet, guest -> tap (see venet_dev.h).
 *
 * tx (shm VENET_QUEUE_TX_ID(pair), one per pair, each with its own kick,
 * poll window and signal, writing to its own tap queue; everything below
 * is per pair). Wakeups: the
 * tx ring's signal (guest posted), our kick
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
 * if it is still empty (hostd_devq_unmask). Before that, a stream's
 * drained ring may stay masked for doorbell_mask_us while a timer brings
 * us back to look (venet_tx_hold.c decides; no spinning).
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
static void tx_kick(struct venet_pair *p)
{
	if (hostd_kick(&p->kick))
		p->v->st.kicks++;
}

/* The completions so far to the guest (suppressed while it masks them). */
static void tx_signal(struct venet_pair *p)
{
	unsigned int n = p->tx_unsignalled;

	p->tx_unsignalled = 0;
	/* a ring that went away takes its completions' news with it */
	if (n && hostd_devq_live(&p->txq))
		venet_q_signal(&p->txq, &p->v->st.tx_notify_out);
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
static void tx_bad(struct venet_pair *p, const char *why)
{
	p->v->st.tx_bad++;
	p->st.tx_dropped++;
	venet_bad_desc(p->v, "tx", why);
}

static void tx_sent(struct venet_pair *p, const struct venet_txframe *f)
{
	struct venet *v = p->v;

	p->st.tx_packets++;
	p->st.tx_bytes += f->len;
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
static enum tx_verdict tx_sink(struct venet_pair *p,
			       const struct venet_txframe *f)
{
	size_t off = 0;
	int i;

	for (i = 0; i < f->niov; i++) {
		size_t n = f->iov[i].iov_len;

		if (n > VENET_SINK_LEN - off)
			n = VENET_SINK_LEN - off;
		memcpy(p->sink + off, f->iov[i].iov_base, n);
		off += n;
	}
	tx_sent(p, f);
	return TX_SENT;
}

/* One frame to the tap, with one writev (no copy by us). */
static enum tx_verdict tx_write(struct venet_pair *p,
				const struct venet_txframe *f)
{
	struct venet *v = p->v;
	int fd = venet_pair_tapfd(p);
	ssize_t w;

	if (p->sink && v->link)
		return tx_sink(p, f);
	if (!v->link || fd < 0) {
		v->st.tx_dropped++;
		p->st.tx_dropped++;
		return TX_POP;
	}
	do {
		w = writev(fd, f->iov, f->niov);
	} while (w < 0 && errno == EINTR);
	if (w < 0 && (errno == EAGAIN || errno == ENOBUFS)) {
		/*
		 * Keep the descriptor (the guest may not reuse the memory
		 * before the pop) and wait for the tap queue to drain.
		 */
		v->st.tx_blocked++;
		p->tx_blocked = true;
		return TX_KEEP;
	}
	if (w < 0 && (errno == EBADFD || errno == EBADF)) {
		venet_backend_lost(v, errno);
		v->st.tx_dropped++;
		p->st.tx_dropped++;
	} else if (w < 0) {
		/* e.g. the kernel refused the vnet header */
		v->st.tx_errors++;
		p->st.tx_dropped++;
		hostd_dev_log(v->dev, "venet: tap write: %s", strerror(errno));
	} else {
		tx_sent(p, f);
		return TX_SENT;
	}
	return TX_POP;
}

/* One pass's state: what it sent, and the bad descriptor that ended it */
struct tx_batch {
	struct venet_pair *p;
	__u64 bytes;
	const char *bad;	/* strict: why the descriptor that ended it is */
};

/* One descriptor: sent or dropped (consumed), or kept (ends the batch). */
static enum hostd_devq_verdict tx_one(struct hostd_devq *q,
				      struct ioq_ring_desc *desc, void *arg)
{
	struct tx_batch *tb = arg;
	struct venet_pair *p = tb->p;
	struct venet *v = p->v;
	struct venet_txframe f;
	const char *why;

	(void)q;
	if (!tx_frame(v, desc, &f, &why)) {
		enum tx_verdict r = tx_write(p, &f);

		if (r == TX_KEEP)
			return HOSTD_DEVQ_STOP;
		if (r == TX_SENT)
			tb->bytes += f.len;
	} else if (v->strict) {
		tb->bad = why ? why : "?";
		return HOSTD_DEVQ_STOP;
	} else {
		tx_bad(p, why);	/* dropped: completed unsent */
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
static int tx_pass(struct venet_pair *p)
{
	struct venet *v = p->v;
	struct tx_batch tb = { .p = p };
	bool broken = false;
	int n;

	n = hostd_devq_drain(&p->txq, VENET_TX_BUDGET, tx_one, &tb, 0);
	if (n < 0) {
		broken = true;	/* faulted, or the guest wrote our head */
		n = 0;
	}
	if (tb.bad)
		tx_bad(p, tb.bad);	/* strict: faults the device */
	if (n) {
		hostd_dev_account(v->dev, (__u64)n, tb.bytes);
		p->tx_unsignalled += (unsigned int)n;
		p->tx_run += (unsigned int)n;
		p->tx_run_bytes += tb.bytes;
		/* a quarter ring done: wake a guest that may be out of room */
		if (p->tx_unsignalled >= p->txq.size / 4)
			tx_signal(p);
	} else {
		v->st.tx_polls++;
	}
	if (p->tx_blocked || broken || tb.bad || !hostd_devq_live(&p->txq))
		return -1;
	return n == VENET_TX_BUDGET ? 1 : 0;
}

void venet_tx_work(struct venet_pair *p)
{
	enum venet_tx_held held;
	int round;

	if (!hostd_devq_live(&p->txq) || p->tx_blocked)
		goto out_signal;

	/* masked while we drain: the guest's posts need no doorbell */
	hostd_devq_mask(&p->txq);

	for (round = 0; round < VENET_TX_ROUNDS; round++) {
		int r = tx_pass(p);

		if (r < 0)
			goto out_signal; /* stays masked: EPOLLOUT or close */
		if (r > 0 || hostd_devq_polling(&p->txq)) {
			tx_kick(p);	/* poll: come back after the others */
			goto out;
		}
		/* a stream: stay masked, its timer brings us back */
		held = venet_tx_hold(p);
		if (held == VENET_TX_HELD_SIGNAL)
			tx_signal(p);
		if (held != VENET_TX_UNHELD)
			goto out;
		/* we stop polling: the guest reaps on our signal now */
		tx_signal(p);
		/*
		 * Drained. Unmask, then look again: a post that landed after
		 * our last look but before the unmask rang no doorbell.
		 */
		if (!hostd_devq_unmask(&p->txq, 0))
			goto out;
		hostd_devq_mask(&p->txq);
	}
	tx_kick(p);	/* a guest trickling posts: don't hold the loop */
	goto out;
out_signal:
	tx_signal(p);
out:
	venet_tap_update(p->v);
}

void venet_tx_signal(struct hostd_devq *q)
{
	struct venet_pair *p = q->owner;

	p->v->st.tx_notify_in++;
	venet_tx_work(p);
}
