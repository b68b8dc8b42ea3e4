// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * venet, tap -> guest (see venet_dev.h).
 *
 * rx (shm VENET_QUEUE_RX_ID(pair), one per pair, each fed by its own
 * tap queue; everything below is per pair). Wakeups: the tap readable (level-triggered EPOLLIN), the rx
 * ring's signal. While the guest has posted buffers we read frames from
 * the tap straight into them (readv: header to a local, payload to guest
 * memory), set len, and hand the batch back with one hostd_devq_hand_back()
 * (one valid-head store) and one signal; rx notifications stay
 * masked (the guest re-posting buffers needs no doorbell while we still
 * have some). Out of buffers we unmask and look again (hostd_devq_unmask),
 * and if still none we
 * stop polling the tap (no EPOLLIN: frames wait in the tap's queue, and
 * the host kernel drops at its queue limit, not us in a loop) until the
 * guest's next rx signal. A stream's batches may wait for their signal
 * (rx_coalesce_us: venet_rx_coalesce.c decides).
 */
#include <errno.h>
#include "venet_dev.h"

enum rx_head { RX_BUF, RX_AGAIN, RX_STOP };

/*
 * The guest buffers this pass claimed (hostd_devq_claim() from valid's
 * head, which stays put until we publish): [pos, pos + avail) is ours to
 * fill, the first @used of them are filled and not published yet.
 */
struct rx_batch {
	__u32 pos;
	unsigned int avail, used;
	unsigned int popped;	/* published this pass */
};

/* Hand the filled buffers back: one valid-head store. 0, or -1 (faulted). */
static int rx_publish(struct venet_pair *p, struct rx_batch *b)
{
	/* [R2] inside: len and the frames' bytes before valid's head */
	if (hostd_devq_hand_back(&p->rxq, b->used) < 0)
		return -1;
	b->pos += b->used;
	b->avail -= b->used;
	b->popped += b->used;
	b->used = 0;
	return 0;
}

/* Claim more of what the guest posted: true when a buffer is ours. */
static bool rx_claim(struct venet_pair *p, struct rx_batch *b)
{
	__u32 pos;
	int k;

	if (b->used < b->avail)
		return true;
	k = hostd_devq_claim(&p->rxq, b->used + VENET_RX_BUDGET, &pos);
	if (k <= 0)
		return false;	/* none, or the channel faulted */
	b->pos = pos;
	b->avail = (unsigned int)k;
	return b->used < b->avail;
}

/*
 * Is there a guest buffer at the head? Out of buffers we ask the guest
 * to tell us when it posts more, then look once more beyond the @used
 * we hold (hostd_devq_unmask: its [B2] orders the two, pairing with [B1]
 * in the guest's inject); more arrived: claim them; still none: stop
 * reading the tap until a signal.
 */
static enum rx_head rx_head(struct venet_pair *p, struct rx_batch *b)
{
	if (!rx_claim(p, b)) {
		if (!hostd_devq_live(&p->rxq))
			return RX_STOP;
		if (!p->rxq.unmasked && hostd_devq_unmask(&p->rxq, b->used))
			return RX_AGAIN;
		p->rx_starved = true;
		p->v->st.rx_starved++;
		return RX_STOP;
	}
	/* we have buffers: re-posts need no doorbell */
	if (p->rxq.unmasked)
		hostd_devq_mask(&p->rxq);
	return RX_BUF;
}

/*
 * An unusable buffer goes back empty (the contract's len = 0): 1, or -1.
 * On a strict device the good ones before it go back first, then it
 * faults.
 */
static int rx_bad_buffer(struct venet_pair *p, struct rx_batch *b,
			 struct ioq_ring_desc *desc, const char *why)
{
	struct venet *v = p->v;

	v->st.rx_bad++;
	p->st.rx_dropped++;
	if (v->strict) {
		rx_publish(p, b);
		venet_bad_desc(v, "rx", why);
		return -1;
	}
	venet_bad_desc(v, "rx", why);
	VBUS_WRITE(desc->len, 0);
	b->used++;
	return 1;
}

/* The frame's offload state for the guest: 0, or -1 (dropped, counted). */
static int rx_finish(struct venet_pair *p, struct venet_rxbuf *rb,
		     const struct virtio_net_hdr *vh, __u32 n)
{
	struct venet *v = p->v;
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
	p->st.rx_dropped++;
	hostd_dev_log(v->dev, "venet: rx frame dropped: %s", why);
	return -1;
}

/*
 * One frame from the tap into the next claimed guest buffer. 1: filled
 * (*@bytes grew), 0: a frame consumed but the buffer kept for the next
 * one, -1: stop (tap drained or gone, device faulted).
 */
static int rx_one(struct venet_pair *p, struct rx_batch *b, __u64 *bytes)
{
	struct venet *v = p->v;
	struct ioq_ring_desc *desc = hostd_devq_desc(&p->rxq, b->pos + b->used);
	__u64 ptr = VBUS_READ(desc->ptr);
	__u64 len = VBUS_READ(desc->len);
	const char *why = NULL;
	struct virtio_net_hdr vh;
	struct venet_rxbuf rb;
	ssize_t n;

	if ((v->caps & VENET_CAP_RXSG) ?
	    venet_rx_sg(&v->mem, ptr, len, &rb, &why) :
	    venet_rx_flat(&v->mem, ptr, len, &rb, &why))
		return rx_bad_buffer(p, b, desc, why);
	n = venet_rx_read(venet_pair_tapfd(p), &rb, &vh);
	if (n == -EAGAIN)
		return -1;	/* tap drained: EPOLLIN wakes us */
	if (n == -EMSGSIZE) {
		/* the tap consumed it; the buffer is still ours */
		v->st.rx_too_big++;
		p->st.rx_dropped++;
		return 0;
	}
	if (n < 0) {
		venet_backend_lost(v, (int)-n);
		return -1;
	}
	if (rx_finish(p, &rb, &vh, (__u32)n))
		return 0;
	/* len before the publication: its [R2] publishes it (docs/ring.md) */
	VBUS_WRITE(desc->len, (__u64)n);
	b->used++;
	v->st.rx_packets++;
	v->st.rx_bytes += (__u64)n;
	p->st.rx_packets++;
	p->st.rx_bytes += (__u64)n;
	*bytes += (__u64)n;
	return 1;
}

void venet_rx_run(struct venet_pair *p)
{
	struct venet *v = p->v;
	struct rx_batch b = { 0 };
	unsigned int done = 0;
	__u64 bytes = 0;

	p->rx_starved = false;
	if (!venet_rx_possible(p))
		goto out;
	while (done < VENET_RX_BUDGET && venet_pair_tapfd(p) >= 0) {
		enum rx_head h = rx_head(p, &b);

		if (h == RX_AGAIN)
			continue;
		if (h == RX_STOP)
			break;
		if (rx_one(p, &b, &bytes) < 0)
			break;
		done++;
	}
	/* one publication and one signal for the batch (or its period's) */
	rx_publish(p, &b);
	if (venet_rx_coalesce(p, b.popped, bytes)) {
		v->st.rx_coalesced++;
		hostd_dev_account(v->dev, b.popped, bytes);
	} else {
		venet_q_complete(v, &p->rxq, b.popped, bytes,
				 &v->st.rx_notify_out);
	}
out:
	/* budget hit with data left: level-triggered EPOLLIN brings us back */
	venet_tap_update(v);
}

void venet_rx_coalesced(struct venet_pair *p)
{
	if (venet_rx_coalesce_end(p) && hostd_devq_live(&p->rxq))
		venet_q_signal(&p->rxq, &p->v->st.rx_notify_out);
}

void venet_rx_signal(struct hostd_devq *q)
{
	struct venet_pair *p = q->owner;

	p->v->st.rx_notify_in++;
	venet_rx_run(p);
}

/* FLUSHRX's buffer: back empty (len before the hand-back's [R2]) */
static enum hostd_devq_verdict rx_flush_one(struct hostd_devq *q,
					    struct ioq_ring_desc *desc,
					    void *arg)
{
	(void)q;
	(void)arg;
	VBUS_WRITE(desc->len, 0);
	return HOSTD_DEVQ_CONSUMED;
}

/* FLUSHRX on one pair: 0, or -EIO (its ring faulted). */
static int rx_flush_pair(struct venet_pair *p)
{
	struct venet *v = p->v;
	int n;

	if (!hostd_devq_live(&p->rxq))
		return 0;	/* nothing held */
	/* bounded by the ring even if the guest keeps posting meanwhile */
	n = hostd_devq_drain(&p->rxq, p->rxq.size, rx_flush_one, NULL,
			     HOSTD_DEVQ_SIGNAL);
	if (n < 0)
		return -EIO;
	v->st.rx_flushed += (unsigned int)n;
	if (n)
		v->st.rx_notify_out++;
	/* we hold nothing now: unmask, so the guest's re-posts wake us */
	venet_rx_run(p);
	return 0;
}

/* FLUSHRX: every buffer we hold, on every pair, goes back with len 0. */
int venet_rx_flush(struct venet *v)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < v->queues; i++)
		if (rx_flush_pair(&v->pair[i]) < 0)
			ret = -EIO;
	return ret;
}
