// SPDX-License-Identifier: GPL-2.0
/*
 * venet transmit path, including scatter-gather and GSO.
 *
 * The guest posts one frame per descriptor with the pusher's bulk calls:
 * start_xmit fills the descriptor at the pusher's position plus the frames
 * not published yet (tx_unpublished) and publishes the burst with one
 * ioq_post_end() (one tail store) and one doorbell when the stack has no
 * more for us (!netdev_xmit_more()) or the queue stopped. The host sends
 * each frame and hands the descriptor back; that is the tx completion, and
 * the host signals the tx ring after a batch. The guest reaps with
 * ioq_reap_begin()/ioq_reap_end() (start_xmit, NAPI poll, ndo_tx_timeout,
 * stop), one inuse-head store per pass, and frees the skbs; start_xmit frees what the host completed, and so does
 * every NAPI poll. By default the poll unmasks the tx signal when it
 * completes. With tx_complete_irq=0 the signal stays masked unless we wait
 * on completions (docs/devices/venet.md, "Notifications"), as
 * virtio-net once kept its tx interrupts off: it is unmasked only when the
 * queue is stopped (the host's completions restart it) or when a poll
 * finds frames still in flight, and a burst that ends with frames in
 * flight arms tx_timer, a jiffy: a sender that then goes quiet and
 * receives nothing still gets its skbs freed, which matters because a
 * socket blocked on its send buffer (or TCP small queues) waits for
 * exactly that. Flow control is on the inuse index: while every
 * descriptor is in flight the queue is stopped, and the reaper wakes it.
 *
 * Descriptor formats (docs/devices/venet.md, "tx ring"):
 *   plain mode: ptr/len = the linear frame;
 *   SG mode:    ptr/len = a per-slot struct venet_sg + iov[], preallocated
 *               in coherent memory (venet_dma.c), describing the skb's
 *               head and frags.
 * The frame's bytes are mapped DMA_TO_DEVICE on the bridge's PCI device
 * while the host has them (a bounce buffer under swiotlb or an IOMMU
 * address, a physical one otherwise) and unmapped when it hands them back.
 *
 * Per queue pair (struct venet_queue): the stack's tx queue p goes to pair
 * p's tx ring, with its own txlock, tx_timer, counters and BQL state
 * (netdev_tx_sent_queue()/netdev_tx_completed_queue(); reset whenever
 * the ring is set up or torn down). The pair's txlock serialises the
 * xmit path (which writes the tails) with the reaper (which writes the
 * inuse head) and the per-slot state both use.
 */
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/tcp.h>
#include <linux/io.h>
#include <linux/slab.h>
#include <linux/dma-mapping.h>

#include "venet_drv.h"

int venet_tx_setup(struct venet_queue *q)
{
	struct venet_priv *priv = q->priv;
	u32 i;

	q->tx_unpublished = 0;
	/* a new ring: nothing of the stack's bytes is in flight (BQL) */
	netdev_tx_reset_queue(q->txnq);
	q->tx_slots = kvcalloc(priv->tx_count, sizeof(*q->tx_slots),
			       GFP_KERNEL);
	if (!q->tx_slots)
		return -ENOMEM;

	if (!priv->caps.sg)
		return 0;

	if (venet_vsgs_alloc(priv, &q->tx_vsgs, priv->tx_count,
			     VENET_TX_SG_SIZE)) {
		venet_tx_teardown(q);
		return -ENOMEM;
	}
	for (i = 0; i < priv->tx_count; i++)
		q->tx_slots[i].vsg = venet_vsg(&q->tx_vsgs, i,
					       &q->tx_slots[i].vsg_dma);
	return 0;
}

/* The host handed the frame of @slot back (or never got it): unmap it. */
static void venet_tx_unmap(struct venet_queue *q, struct venet_tx_slot *slot)
{
	struct venet_priv *priv = q->priv;

	if (slot->nents)
		dma_unmap_sg(venet_dma_dev(priv), slot->sgl, slot->nents,
			     DMA_TO_DEVICE);
	slot->nents = 0;
	if (slot->dma_len)
		dma_unmap_single(venet_dma_dev(priv), slot->dma, slot->dma_len,
				 DMA_TO_DEVICE);
	slot->dma_len = 0;
}

/*
 * Free every skb still on the ring and the SG buffers. Only after DEVCLOSE
 * (the host no longer reads them) or before the ring was ever used.
 */
void venet_tx_teardown(struct venet_queue *q)
{
	struct venet_priv *priv = q->priv;
	u32 i;

	if (!q->tx_slots)
		return;

	for (i = 0; i < priv->tx_count; i++) {
		venet_tx_unmap(q, &q->tx_slots[i]);
		dev_kfree_skb_any(q->tx_slots[i].skb);
	}
	venet_vsgs_free(priv, &q->tx_vsgs);
	kvfree(q->tx_slots);
	q->tx_slots = NULL;
	/* freed, never completed: BQL forgets them */
	netdev_tx_reset_queue(q->txnq);
}

static void venet_tx_bad(struct venet_queue *q,
			 struct sk_buff *skb, const char *why)
{
	struct venet_priv *priv = q->priv;

	if (net_ratelimit())
		netdev_warn(priv->dev, "tx dropped: %s (gso_type 0x%x)\n", why,
			    skb_shinfo(skb)->gso_type);
}

/* The checksum request of @skb; 0 or -errno. */
static int venet_tx_sg_csum(struct venet_queue *q, struct sk_buff *skb,
			    struct venet_sg *vsg, u32 *flags)
{
	int start;

	if (skb->ip_summed != CHECKSUM_PARTIAL)
		return 0;
	start = skb_checksum_start_offset(skb);
	/* csum_offset is a u16 already; the start is an int */
	if (start < 0 || start > U16_MAX) {
		venet_tx_bad(q, skb, "checksum offset");
		return -EINVAL;
	}
	*flags |= VENET_SG_FLAG_NEEDS_CSUM;
	vsg->csum.start = (u16)start;
	vsg->csum.offset = skb->csum_offset;
	return 0;
}

/* The GSO request of @skb, as negotiated; 0 or -errno. */
static int venet_tx_sg_gso(struct venet_queue *q, struct sk_buff *skb,
			   struct venet_sg *vsg, u32 *flags)
{
	struct venet_priv *priv = q->priv;
	struct skb_shared_info *sinfo = skb_shinfo(skb);
	int hdrlen;

	if (!skb_is_gso(skb))
		return 0;
	/*
	 * Only what was negotiated is advertised, so anything else
	 * is a stack surprise: drop it rather than mislabel it.
	 */
	if ((sinfo->gso_type & SKB_GSO_TCPV4) && priv->caps.tso4) {
		vsg->gso.type = VENET_GSO_TYPE_TCPV4;
	} else if ((sinfo->gso_type & SKB_GSO_TCPV6) && priv->caps.tso6) {
		vsg->gso.type = VENET_GSO_TYPE_TCPV6;
	} else {
		venet_tx_bad(q, skb, "unsupported GSO type");
		return -EPROTONOSUPPORT;
	}

	if (sinfo->gso_type & SKB_GSO_TCP_ECN) {
		if (!priv->caps.ecn) {
			venet_tx_bad(q, skb, "GSO ECN");
			return -EPROTONOSUPPORT;
		}
		*flags |= VENET_SG_FLAG_ECN;
	}

	if (!(*flags & VENET_SG_FLAG_NEEDS_CSUM)) {
		venet_tx_bad(q, skb, "GSO without CHECKSUM_PARTIAL");
		return -EINVAL;
	}

	/* all headers, L2+L3+L4: virtio_net_hdr.hdr_len semantics */
	hdrlen = skb_tcp_all_headers(skb);
	if (hdrlen <= 0 || hdrlen > U16_MAX || !sinfo->gso_size) {
		venet_tx_bad(q, skb, "GSO header");
		return -EINVAL;
	}
	*flags |= VENET_SG_FLAG_GSO;
	vsg->gso.hdrlen = (u16)hdrlen;
	vsg->gso.size = sinfo->gso_size;
	return 0;
}

/*
 * One iov per mapped piece of @skb (mapped DMA_TO_DEVICE through
 * @slot->sgl): their count, or -errno.
 */
static int venet_tx_sg_iovs(struct venet_queue *q, struct sk_buff *skb,
			    struct venet_tx_slot *slot)
{
	struct venet_priv *priv = q->priv;
	struct scatterlist *sgl = slot->sgl;
	struct venet_sg *vsg = slot->vsg;
	struct scatterlist *sg;
	int count, mapped;
	int i;

	sg_init_table(sgl, VENET_TX_MAX_IOVS);
	count = skb_to_sgvec(skb, sgl, 0, skb->len);
	if (count <= 0) {
		venet_tx_bad(q, skb, "skb_to_sgvec");
		return count ? count : -EINVAL;
	}
	mapped = dma_map_sg(venet_dma_dev(priv), sgl, count, DMA_TO_DEVICE);
	if (!mapped) {
		venet_tx_bad(q, skb, "DMA mapping failed");
		return -ENOMEM;
	}
	slot->nents = count;	/* dma_unmap_sg() takes what we passed */

	for_each_sg(sgl, sg, mapped, i) {
		struct venet_iov *iov = &vsg->iov[i];

		iov->len = sg_dma_len(sg);
		iov->reserved = 0;
		iov->ptr = (u64)sg_dma_address(sg);
	}
	return mapped;
}

/*
 * Describe @skb in @slot's venet_sg: checksum offload, GSO and one iov per
 * piece. Returns 0, or -errno when the skb cannot be expressed or mapped
 * (dropped, counted as a tx error by the caller).
 */
static int venet_tx_build_sg(struct venet_queue *q,
			     struct sk_buff *skb, struct venet_tx_slot *slot)
{
	struct venet_sg *vsg = slot->vsg;
	u32 flags = 0;
	int count;

	/* the iovs too: no stale entry of an earlier frame reaches the host */
	memset(vsg, 0, VENET_TX_SG_SIZE);
	count = venet_tx_sg_csum(q, skb, vsg, &flags);
	if (!count)
		count = venet_tx_sg_gso(q, skb, vsg, &flags);
	if (!count)
		count = venet_tx_sg_iovs(q, skb, slot);
	if (count < 0)
		return count;

	vsg->cookie = 0;	/* guest-private, unused */
	vsg->flags = flags;
	vsg->len = skb->len;
	vsg->count = count;
	return 0;
}

static void venet_tx_count_drop(struct venet_queue *q, bool error)
{
	struct venet_tx_stats *st = &q->tx_stats;

	u64_stats_update_begin(&st->syncp);
	if (error)
		u64_stats_inc(&st->errors);
	else
		u64_stats_inc(&st->dropped);
	u64_stats_update_end(&st->syncp);
}

/*
 * What became of a frame: on its way, the ring is full (the stack retries),
 * or dropped (DROP: still to be counted; DROPPED: counted already).
 */
enum venet_tx_verdict {
	VENET_TX_OK,
	VENET_TX_BUSY,
	VENET_TX_DROP,
	VENET_TX_DROPPED,
};

/*
 * True when the host has completed the tx descriptor at the inuse head.
 * Under txlock: looking runs the reaper's reload of the host's index
 * (core/ioq.c), and a reap on another CPU must not move our inuse head
 * between its loads (that reads as the host's corruption and faults).
 */
static bool __venet_tx_pending(struct venet_queue *q)
{
	struct venet_priv *priv = q->priv;
	__u32 pos;

	if (venet_faulted(priv))
		return false;
	/* [A2] in ioq_reap_begin(); a fault reads as "nothing" (< 0) */
	return ioq_reap_begin(q->txq, 1, &pos) > 0;
}

bool venet_tx_pending(struct venet_queue *q)
{
	bool ret;

	spin_lock_bh(&q->txlock);
	ret = __venet_tx_pending(q);
	spin_unlock_bh(&q->txlock);
	return ret;
}

/*
 * On by default: in the TCG bench, masking them doubled the doorbells per
 * guest->host frame and the interrupts per host->guest frame went from
 * 0.01 to 0.3 (docs/devices/venet.md, "Notifications").
 */
static bool tx_complete_irq = true;
module_param(tx_complete_irq, bool, 0644);
MODULE_PARM_DESC(tx_complete_irq,
		 "0: tx completions interrupt only when we wait on them; start_xmit, rx polls and a timer reap");

/*
 * tx_complete_irq=0 unmasked the tx signal because we wait on the host:
 * each tx completion interrupt in that mode answers one of these (the
 * QEMU venet suite checks it), under txlock like the xmit path's stats.
 */
static void venet_tx_count_irq_wait(struct venet_queue *q)
{
	u64_stats_update_begin(&q->tx_stats.syncp);
	u64_stats_inc(&q->tx_stats.irq_waits);
	u64_stats_update_end(&q->tx_stats.syncp);
}

/*
 * Should tx completions interrupt us? With tx_complete_irq, always. Else
 * when the queue waits on them, or frames are still in flight after a
 * reap (the host has not completed them yet; nothing else may come to
 * reap them).
 */
bool venet_tx_wants_signal(struct venet_queue *q)
{
	bool ret;

	if (READ_ONCE(tx_complete_irq))
		return true;

	spin_lock_bh(&q->txlock);
	/* stopped by us (ring full) or by BQL: completions restart it */
	ret = netif_xmit_stopped(q->txnq) ||
	      ioq_count(q->txq, ioq_idx_reap) != 0;
	if (ret)
		venet_tx_count_irq_wait(q);
	spin_unlock_bh(&q->txlock);
	return ret;
}

/*
 * The queue just stopped, under txlock: unmask the tx signal so the
 * host's completions wake it, then look again. shm_signal_enable()'s full
 * barrier after enabled=1 ([B2]) orders it before the ring load in
 * __venet_tx_pending(); pairs with [B1] after dirty=1 in the host's inject:
 * either the host signals or we see its pop and poll for it ourselves.
 */
static void venet_tx_wait_room(struct venet_queue *q)
{
	if (!READ_ONCE(tx_complete_irq))
		venet_tx_count_irq_wait(q);
	ioq_notify_enable(q->txq, 0);
	if (__venet_tx_pending(q))
		venet_kick(q);
}

/* A jiffy after a burst left frames in flight: poll, which reaps. */
void venet_tx_timer(struct timer_list *t)
{
	struct venet_queue *q = from_timer(q, t, tx_timer);

	venet_kick(q);	/* a no-op while NAPI is disabled */
}

/*
 * Room for @n frames after the ones not published yet? 1: yes, with the
 * pusher's position in *@pos (the burst's first descriptor); 0: no;
 * < 0: the ring faulted. Under txlock.
 */
static int venet_tx_has_room(struct venet_queue *q, u32 n, __u32 *pos)
{
	struct venet_priv *priv = q->priv;
	u32 want = q->tx_unpublished + n;
	int ret;

	ret = ioq_post_begin(q->txq, want, pos);
	if (ret < 0) {
		venet_fault(priv, "tx ring index");
		return ret;
	}
	return ret == want;
}

/* Room for one more frame? */
static enum venet_tx_verdict venet_tx_room(struct venet_queue *q,
					   __u32 *pos)
{
	struct venet_priv *priv = q->priv;
	struct venet_tx_stats *st = &q->tx_stats;
	int ret;

	/* detached: no tx ring (a qdisc bypass can still get here) */
	if (venet_faulted(priv) || READ_ONCE(priv->detached))
		return VENET_TX_DROP;
	ret = venet_tx_has_room(q, 1, pos);
	if (ret < 0)
		return VENET_TX_DROP;
	if (ret)
		return VENET_TX_OK;
	/*
	 * We stop the queue when the last descriptor is used, so
	 * this only happens if the stack raced a wake; let it retry
	 * once the reaper frees a slot.
	 */
	netif_tx_stop_queue(q->txnq);
	venet_tx_wait_room(q);
	u64_stats_update_begin(&st->syncp);
	u64_stats_inc(&st->busy);
	u64_stats_update_end(&st->syncp);
	return VENET_TX_BUSY;
}

/*
 * The slot of the frame's descriptor, @at (the pusher's position plus the
 * frames not published yet); false when we cannot use it.
 */
static bool venet_tx_tail(struct venet_queue *q, __u32 at,
			  struct venet_tx_slot **slot)
{
	struct venet_priv *priv = q->priv;

	*slot = &q->tx_slots[at & (priv->tx_count - 1)];
	/*
	 * The ring had room, so the slot at the tail was reaped. On v6 the
	 * room comes from our own shadows; a v5 ring re-reads its counters
	 * from memory the host writes: fault, never WARN.
	 */
	if ((*slot)->skb) {
		venet_fault(priv, "tx tail slot still in flight");
		return false;
	}
	return true;
}

/* The frame into the descriptor: the slot's venet_sg, or flat. */
static enum venet_tx_verdict venet_tx_fill(struct venet_queue *q,
					   struct sk_buff *skb, __u32 at,
					   struct venet_tx_slot *slot)
{
	struct venet_priv *priv = q->priv;
	struct ioq_ring_desc *desc = ioq_desc(q->txq, at);

	if (priv->caps.sg) {
		if (venet_tx_build_sg(q, skb, slot)) {
			venet_tx_count_drop(q, true);
			return VENET_TX_DROPPED;
		}
		WRITE_ONCE(desc->ptr, (u64)slot->vsg_dma);
		WRITE_ONCE(desc->len, (u64)VENET_TX_SG_SIZE);
	} else {
		struct device *dma_dev = venet_dma_dev(priv);

		/* plain mode: the host reads one contiguous frame */
		if (skb_linearize(skb))
			return VENET_TX_DROP;
		slot->dma = dma_map_single(dma_dev, skb->data, skb->len,
					   DMA_TO_DEVICE);
		if (dma_mapping_error(dma_dev, slot->dma))
			return VENET_TX_DROP;
		slot->dma_len = skb->len;
		WRITE_ONCE(desc->ptr, (u64)slot->dma);
		WRITE_ONCE(desc->len, (u64)skb->len);
	}
	WRITE_ONCE(desc->cookie, at & (priv->tx_count - 1));
	WRITE_ONCE(desc->valid, 1);
	return VENET_TX_OK;
}

static void venet_tx_account(struct venet_tx_stats *st, struct sk_buff *skb)
{
	u64_stats_update_begin(&st->syncp);
	u64_stats_inc(&st->packets);
	u64_stats_add(&st->bytes, skb->len);
	if (skb_is_gso(skb))
		u64_stats_inc(&st->gso_packets);
	if (skb->ip_summed == CHECKSUM_PARTIAL)
		u64_stats_inc(&st->csum_partial);
	u64_stats_update_end(&st->syncp);
}

/*
 * The filled descriptor joins the burst that venet_tx_flush() publishes;
 * its bytes go to BQL. True when the burst must end here: the stack has no
 * more for us, or the queue is stopped (__netdev_tx_sent_queue()).
 */
static bool venet_tx_queue(struct venet_queue *q, struct sk_buff *skb,
			   struct venet_tx_slot *slot)
{
	slot->skb = skb;
	skb_tx_timestamp(skb);
	venet_tx_account(&q->tx_stats, skb);
	q->tx_unpublished++;
	return __netdev_tx_sent_queue(q->txnq, skb->len, netdev_xmit_more());
}

/*
 * Publish the burst, under txlock: one tail store, whose [R1] (v5: [R4]
 * too; core/ioq.c) publishes the descriptors and their venet_sgs. The
 * caller rings the doorbell (ioq_signal()) after dropping txlock. Returns
 * true when there was something to publish. A failed publish faults the
 * device; the burst's skbs stay in their slots for venet_tx_teardown().
 */
static bool venet_tx_flush(struct venet_queue *q)
{
	struct venet_priv *priv = q->priv;
	u32 n = q->tx_unpublished;

	if (!n)
		return false;
	q->tx_unpublished = 0;
	/* detached: the ring is gone; venet_tx_teardown() frees the skbs */
	if (READ_ONCE(priv->detached) || !q->txq)
		return false;
	if (ioq_post_end(q->txq, n, 0)) {
		venet_fault(priv, "tx ring publish");
		return false;
	}
	return true;
}

/*
 * Free the skbs of every descriptor the host has handed back; under
 * txlock. Returns how many.
 */
static unsigned int __venet_tx_reap(struct venet_queue *q)
{
	struct venet_priv *priv = q->priv;
	struct venet_tx_stats *st = &q->tx_stats;
	struct ioq *ioq = q->txq;
	unsigned int done = 0, bytes = 0;
	__u32 pos;
	int ret;

	if (venet_faulted(priv))
		return 0;

	/*
	 * At most one pass over the ring. ioq_reap_begin()'s [A2] orders
	 * valid's head before we take the completions (pairs with the
	 * host's [R2]); they come back in order, so the position, not the
	 * host-written cookie, names the slot.
	 */
	ret = ioq_reap_begin(ioq, priv->tx_count, &pos);
	if (ret < 0) {
		venet_fault(priv, "tx ring index");
		return 0;
	}
	while (done < (unsigned int)ret) {
		struct venet_tx_slot *slot;
		struct sk_buff *skb;

		slot = &q->tx_slots[(pos + done) & (priv->tx_count - 1)];
		skb = slot->skb;
		if (!skb) {	/* the host completed a slot twice (v5) */
			venet_fault(priv, "tx completion of an empty slot");
			break;
		}
		slot->skb = NULL;
		done++;
		bytes += skb->len;	/* what venet_tx_queue() told BQL */
		venet_tx_unmap(q, slot);
		dev_consume_skb_any(skb);
	}
	/* one inuse-head store for the pass: [R3] */
	if (done && ioq_reap_end(ioq, done, 0))
		venet_fault(priv, "tx ring reap");

	if (done) {
		/* may restart a queue BQL stopped */
		netdev_tx_completed_queue(q->txnq, done, bytes);
		u64_stats_update_begin(&st->syncp);
		u64_stats_add(&st->completed, done);
		u64_stats_update_end(&st->syncp);
	}
	return done;
}

/* Reap, and wake the queue if that made room. */
void venet_tx_reap(struct venet_queue *q)
{
	struct venet_priv *priv = q->priv;
	__u32 pos;

	spin_lock_bh(&q->txlock);
	__venet_tx_reap(q);
	if (netif_tx_queue_stopped(q->txnq) && netif_running(priv->dev) &&
	    !venet_faulted(priv) && venet_tx_has_room(q, 1, &pos) > 0)
		netif_tx_wake_queue(q->txnq);
	spin_unlock_bh(&q->txlock);
}

/* Ring the doorbell after a publish, or a burst's end with nothing to publish. */
static void venet_tx_doorbell(struct venet_queue *q, struct ioq *ioq)
{
	u64_stats_update_begin(&q->tx_stats.syncp);
	u64_stats_inc(&q->tx_stats.doorbells);
	u64_stats_update_end(&q->tx_stats.syncp);
	/*
	 * The burst's end: nobody may come to reap it but the timer.
	 * Armed, not pushed back: moving its expiry on every burst
	 * reprograms the guest's clock event at each idle entry.
	 */
	if (!READ_ONCE(tx_complete_irq) && !timer_pending(&q->tx_timer))
		mod_timer(&q->tx_timer, jiffies + 1);
}

/*
 * The frame into the burst, under txlock; what became of it. *@end: the
 * burst must end with this frame (venet_tx_queue()).
 */
static enum venet_tx_verdict venet_tx_one(struct venet_queue *q,
					  struct sk_buff *skb, bool *end)
{
	struct venet_priv *priv = q->priv;
	struct venet_tx_slot *slot;
	enum venet_tx_verdict v;
	__u32 pos, at;

	/*
	 * detached first: venet_detach() freed the tx ring (q->txq is
	 * NULL), and the reap below reads it. venet_tx_room() checks again
	 * after the reap, which may have faulted the ring.
	 */
	if (READ_ONCE(priv->detached))
		return VENET_TX_DROP;
	/* what the host completed meanwhile: no interrupt needed */
	__venet_tx_reap(q);
	v = venet_tx_room(q, &pos);
	if (v != VENET_TX_OK)
		return v;
	at = pos + q->tx_unpublished;
	if (!venet_tx_tail(q, at, &slot))
		return VENET_TX_DROP;
	v = venet_tx_fill(q, skb, at, slot);
	if (v == VENET_TX_OK)
		*end = venet_tx_queue(q, skb, slot);
	return v;
}

netdev_tx_t venet_start_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct venet_priv *priv = netdev_priv(dev);
	u16 qi = skb_get_queue_mapping(skb);
	enum venet_tx_verdict v;
	struct venet_queue *q;
	struct ioq *ioq = NULL;
	bool doorbell = false, end = false;
	__u32 pos;

	/* the stack picks below real_num_tx_queues <= pairs; checked anyway */
	if (unlikely(qi >= READ_ONCE(priv->pairs))) {
		dev_kfree_skb_any(skb);
		return NETDEV_TX_OK;
	}
	q = &priv->queues[qi];

	spin_lock_bh(&q->txlock);
	v = venet_tx_one(q, skb, &end);
	if (v == VENET_TX_DROP)
		venet_tx_count_drop(q, false);

	/* the last descriptor is used: stop until the reaper frees one */
	if (v == VENET_TX_OK && !venet_faulted(priv) &&
	    !venet_tx_has_room(q, 1, &pos)) {
		netif_tx_stop_queue(q->txnq);
		txq_trans_cond_update(q->txnq);
	}
	/*
	 * Publish the burst while the stack has no more for us (or BQL or
	 * the ring stopped the queue), whatever became of this frame (a
	 * dropped last frame must not strand the ones before it): one tail
	 * store and one doorbell per burst.
	 */
	if ((v == VENET_TX_OK ? end : !netdev_xmit_more()) ||
	    netif_xmit_stopped(q->txnq)) {
		ioq = q->txq;
		doorbell = venet_tx_flush(q);
		if (doorbell)
			venet_tx_doorbell(q, ioq);
	}
	/* stopped: unmask, then look again, after the burst is out */
	if (v == VENET_TX_OK && netif_tx_queue_stopped(q->txnq) &&
	    !venet_faulted(priv))
		venet_tx_wait_room(q);
	spin_unlock_bh(&q->txlock);

	if (doorbell)
		ioq_signal(ioq, 0);
	if (v == VENET_TX_BUSY)
		return NETDEV_TX_BUSY;
	if (v != VENET_TX_OK)
		dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

/* The watchdog saw tx queue @txqueue stopped too long; under its lock. */
void venet_tx_timeout(struct net_device *dev, unsigned int txqueue)
{
	struct venet_priv *priv = netdev_priv(dev);
	struct venet_queue *q;
	int inflight;

	if (txqueue >= priv->pairs || READ_ONCE(priv->detached))
		return;
	q = &priv->queues[txqueue];
	inflight = ioq_count(q->txq, ioq_idx_reap);
	netdev_warn(dev, "tx timeout on queue %u: %d descriptors in flight\n",
		    txqueue, inflight);

	spin_lock_bh(&q->txlock);
	u64_stats_update_begin(&q->tx_stats.syncp);
	u64_stats_inc(&q->tx_stats.timeouts);
	u64_stats_update_end(&q->tx_stats.syncp);
	venet_tx_flush(q);	/* a burst the stack never ended */
	spin_unlock_bh(&q->txlock);
	venet_tx_reap(q);
	/* in case the host missed a doorbell: tell it again */
	ioq_signal(q->txq, 0);
	txq_trans_cond_update(q->txnq);
}
