// SPDX-License-Identifier: GPL-2.0
/*
 * venet transmit path, including scatter-gather and GSO.
 *
 * The guest posts one frame per descriptor (a "both" push), the host sends
 * it and pops the descriptor back; popping is the tx completion, and the
 * host signals the tx ring after a batch of pops. The guest reaps the inuse
 * index from its head (NAPI poll, ndo_tx_timeout, stop) and frees the skbs.
 * Flow control is on the inuse index: while every descriptor is in flight
 * the queue is stopped, and the reaper wakes it.
 *
 * Descriptor formats (docs/transport.md, "tx ring"):
 *   plain mode: ptr/len = the linear frame;
 *   SG mode:    ptr/len = a per-slot struct venet_sg + iov[], preallocated
 *               in kmalloc memory, describing the skb's head and frags.
 *
 * txlock serialises the xmit path (which writes the tails) with the reaper
 * (which writes the inuse head) and the per-slot state both use.
 */
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/tcp.h>
#include <linux/io.h>
#include <linux/slab.h>

#include "venet_drv.h"

int venet_tx_setup(struct venet_priv *priv)
{
	u32 i;

	priv->tx_slots = kcalloc(priv->tx_count, sizeof(*priv->tx_slots),
				 GFP_KERNEL);
	if (!priv->tx_slots)
		return -ENOMEM;

	if (!priv->caps.sg)
		return 0;

	for (i = 0; i < priv->tx_count; i++) {
		/* kmalloc: physically contiguous, so one guest-physical ptr */
		priv->tx_slots[i].vsg = kzalloc(VENET_TX_SG_SIZE,
						GFP_KERNEL);
		if (!priv->tx_slots[i].vsg) {
			venet_tx_teardown(priv);
			return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Free every skb still on the ring and the SG buffers. Only after DEVCLOSE
 * (the host no longer reads them) or before the ring was ever used.
 */
void venet_tx_teardown(struct venet_priv *priv)
{
	u32 i;

	if (!priv->tx_slots)
		return;

	for (i = 0; i < priv->tx_count; i++) {
		dev_kfree_skb_any(priv->tx_slots[i].skb);
		kfree(priv->tx_slots[i].vsg);
	}
	kfree(priv->tx_slots);
	priv->tx_slots = NULL;
}

static void venet_tx_bad(struct venet_priv *priv,
			 struct sk_buff *skb, const char *why)
{
	if (net_ratelimit())
		netdev_warn(priv->dev, "tx dropped: %s (gso_type 0x%x)\n", why,
			    skb_shinfo(skb)->gso_type);
}

/*
 * Describe @skb in @vsg: checksum offload, GSO and one iov per piece.
 * Returns 0, or -errno when the skb cannot be expressed (dropped, counted
 * as a tx error by the caller).
 */
static int venet_tx_build_sg(struct venet_priv *priv,
			     struct sk_buff *skb, struct venet_sg *vsg)
{
	struct scatterlist *sgl = priv->tx_sgl;
	struct scatterlist *sg;
	u32 flags = 0;
	int count;
	int i;

	memset(vsg, 0, sizeof(*vsg));

	if (skb->ip_summed == CHECKSUM_PARTIAL) {
		int start = skb_checksum_start_offset(skb);

		/* csum_offset is a u16 already; the start is an int */
		if (start < 0 || start > U16_MAX) {
			venet_tx_bad(priv, skb, "checksum offset");
			return -EINVAL;
		}
		flags |= VENET_SG_FLAG_NEEDS_CSUM;
		vsg->csum.start = (u16)start;
		vsg->csum.offset = skb->csum_offset;
	}

	if (skb_is_gso(skb)) {
		struct skb_shared_info *sinfo = skb_shinfo(skb);
		int hdrlen;

		/*
		 * Only what was negotiated is advertised, so anything else
		 * is a stack surprise: drop it rather than mislabel it.
		 */
		if ((sinfo->gso_type & SKB_GSO_TCPV4) && priv->caps.tso4) {
			vsg->gso.type = VENET_GSO_TYPE_TCPV4;
		} else if ((sinfo->gso_type & SKB_GSO_TCPV6) &&
			   priv->caps.tso6) {
			vsg->gso.type = VENET_GSO_TYPE_TCPV6;
		} else {
			venet_tx_bad(priv, skb, "unsupported GSO type");
			return -EPROTONOSUPPORT;
		}

		if (sinfo->gso_type & SKB_GSO_TCP_ECN) {
			if (!priv->caps.ecn) {
				venet_tx_bad(priv, skb, "GSO ECN");
				return -EPROTONOSUPPORT;
			}
			flags |= VENET_SG_FLAG_ECN;
		}

		if (!(flags & VENET_SG_FLAG_NEEDS_CSUM)) {
			venet_tx_bad(priv, skb, "GSO without CHECKSUM_PARTIAL");
			return -EINVAL;
		}

		/* all headers, L2+L3+L4: virtio_net_hdr.hdr_len semantics */
		hdrlen = skb_tcp_all_headers(skb);
		if (hdrlen <= 0 || hdrlen > U16_MAX || !sinfo->gso_size) {
			venet_tx_bad(priv, skb, "GSO header");
			return -EINVAL;
		}
		flags |= VENET_SG_FLAG_GSO;
		vsg->gso.hdrlen = (u16)hdrlen;
		vsg->gso.size = sinfo->gso_size;
	}

	sg_init_table(sgl, VENET_TX_MAX_IOVS);
	count = skb_to_sgvec(skb, sgl, 0, skb->len);
	if (count <= 0) {
		venet_tx_bad(priv, skb, "skb_to_sgvec");
		return count ? count : -EINVAL;
	}

	for_each_sg(sgl, sg, count, i) {
		struct venet_iov *iov = &vsg->iov[i];

		iov->len = sg->length;
		iov->reserved = 0;
		iov->ptr = (u64)sg_phys(sg);
	}

	vsg->cookie = 0;	/* guest-private, unused */
	vsg->flags = flags;
	vsg->len = skb->len;
	vsg->count = count;
	return 0;
}

static void venet_tx_count_drop(struct venet_priv *priv, bool error)
{
	struct venet_tx_stats *st = &priv->tx_stats;

	u64_stats_update_begin(&st->syncp);
	if (error)
		u64_stats_inc(&st->errors);
	else
		u64_stats_inc(&st->dropped);
	u64_stats_update_end(&st->syncp);
}

netdev_tx_t venet_start_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct venet_priv *priv = netdev_priv(dev);
	struct venet_tx_stats *st = &priv->tx_stats;
	struct ioq *ioq = priv->txq;
	struct venet_tx_slot *slot;
	struct ioq_ring_desc *desc;
	struct ioq_iterator iter;
	bool kick;
	int ret;

	spin_lock_bh(&priv->txlock);

	if (test_bit(0, &priv->faulted))
		goto drop;

	ret = ioq_full(ioq, ioq_idxtype_inuse);
	if (ret < 0) {
		venet_fault(priv, "tx ring index");
		goto drop;
	}
	if (ret) {
		/*
		 * We stop the queue when the last descriptor is used, so
		 * this only happens if the stack raced a wake; let it retry
		 * once the reaper frees a slot.
		 */
		netif_stop_queue(dev);
		u64_stats_update_begin(&st->syncp);
		u64_stats_inc(&st->busy);
		u64_stats_update_end(&st->syncp);
		spin_unlock_bh(&priv->txlock);
		return NETDEV_TX_BUSY;
	}

	ret = ioq_iter_init(ioq, &iter, ioq_idxtype_both, 0);
	if (!ret)
		ret = ioq_iter_seek(&iter, ioq_seek_tail, 0, 0);
	if (ret) {
		venet_fault(priv, "tx ring iterator");
		goto drop;
	}

	slot = &priv->tx_slots[iter.pos & (priv->tx_count - 1)];
	if (WARN_ON_ONCE(slot->skb))	/* our bookkeeping, not host input */
		goto drop;
	desc = iter.desc;

	if (priv->caps.sg) {
		if (venet_tx_build_sg(priv, skb, slot->vsg)) {
			venet_tx_count_drop(priv, true);
			goto free;
		}
		WRITE_ONCE(desc->ptr, (u64)virt_to_phys(slot->vsg));
		WRITE_ONCE(desc->len, (u64)VENET_TX_SG_SIZE);
	} else {
		/* plain mode: the host reads one contiguous frame */
		if (skb_linearize(skb))
			goto drop;
		WRITE_ONCE(desc->ptr, (u64)virt_to_phys(skb->data));
		WRITE_ONCE(desc->len, (u64)skb->len);
	}
	WRITE_ONCE(desc->cookie, iter.pos & (priv->tx_count - 1));
	WRITE_ONCE(desc->valid, 1);

	slot->skb = skb;
	skb_tx_timestamp(skb);

	u64_stats_update_begin(&st->syncp);
	u64_stats_inc(&st->packets);
	u64_stats_add(&st->bytes, skb->len);
	if (skb_is_gso(skb))
		u64_stats_inc(&st->gso_packets);
	if (skb->ip_summed == CHECKSUM_PARTIAL)
		u64_stats_inc(&st->csum_partial);
	u64_stats_update_end(&st->syncp);

	/* the push's wmb publishes the descriptor and venet_sg before sown */
	ret = ioq_iter_push(&iter, 0);
	if (ret) {
		slot->skb = NULL;
		venet_fault(priv, "tx ring push");
		goto drop;
	}

	if (ioq_full(ioq, ioq_idxtype_inuse)) {
		netif_stop_queue(dev);
		netif_trans_update(dev);
	}

	/* batch the doorbell while the stack has more for us */
	kick = !netdev_xmit_more() || netif_queue_stopped(dev);
	spin_unlock_bh(&priv->txlock);

	if (kick)
		ioq_signal(ioq, 0);

	return NETDEV_TX_OK;

drop:
	venet_tx_count_drop(priv, false);
free:
	spin_unlock_bh(&priv->txlock);
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

/* Free the skbs of every descriptor the host has handed back. */
void venet_tx_reap(struct venet_priv *priv)
{
	struct venet_tx_stats *st = &priv->tx_stats;
	struct ioq *ioq = priv->txq;
	struct ioq_iterator iter;
	unsigned int done = 0;
	int ret;

	spin_lock_bh(&priv->txlock);

	if (test_bit(0, &priv->faulted))
		goto out;

	ret = ioq_iter_init(ioq, &iter, ioq_idxtype_inuse,
			    IOQ_ITER_NOFLIPOWNER);
	if (!ret)
		ret = ioq_iter_seek(&iter, ioq_seek_head, 0, 0);
	if (ret) {
		venet_fault(priv, "tx ring iterator");
		goto out;
	}

	/* at most one pass over the ring: the inuse count bounds it too */
	while (done < priv->tx_count && venet_head_completed(ioq, &iter)) {
		struct venet_tx_slot *slot;
		struct sk_buff *skb;

		slot = &priv->tx_slots[iter.pos & (priv->tx_count - 1)];
		skb = slot->skb;
		slot->skb = NULL;

		ret = ioq_iter_pop(&iter, 0);
		if (ret) {
			slot->skb = skb;	/* freed at teardown */
			venet_fault(priv, "tx ring pop");
			break;
		}
		done++;
		WARN_ON_ONCE(!skb);	/* our bookkeeping, not host input */
		dev_consume_skb_any(skb);
	}

	if (done) {
		u64_stats_update_begin(&st->syncp);
		u64_stats_add(&st->completed, done);
		u64_stats_update_end(&st->syncp);
	}

	if (netif_queue_stopped(priv->dev) && netif_running(priv->dev) &&
	    !test_bit(0, &priv->faulted) &&
	    ioq_full(ioq, ioq_idxtype_inuse) == 0)
		netif_wake_queue(priv->dev);
out:
	spin_unlock_bh(&priv->txlock);
}

/* True when the host has completed the tx descriptor at the inuse head. */
bool venet_tx_pending(struct venet_priv *priv)
{
	struct ioq_iterator iter;

	if (test_bit(0, &priv->faulted))
		return false;
	if (ioq_iter_init(priv->txq, &iter, ioq_idxtype_inuse,
			  IOQ_ITER_NOFLIPOWNER) ||
	    ioq_iter_seek(&iter, ioq_seek_head, 0, 0))
		return false;
	return venet_head_completed(priv->txq, &iter);
}

void venet_tx_timeout(struct net_device *dev, unsigned int txqueue)
{
	struct venet_priv *priv = netdev_priv(dev);
	int inflight = ioq_count(priv->txq, ioq_idxtype_inuse);

	netdev_warn(dev, "tx timeout on queue %u: %d descriptors in flight\n",
		    txqueue, inflight);

	spin_lock_bh(&priv->txlock);
	u64_stats_update_begin(&priv->tx_stats.syncp);
	u64_stats_inc(&priv->tx_stats.timeouts);
	u64_stats_update_end(&priv->tx_stats.syncp);
	spin_unlock_bh(&priv->txlock);

	venet_tx_reap(priv);
	/* in case the host missed a doorbell: tell it again */
	ioq_signal(priv->txq, 0);
	netif_trans_update(dev);
}
