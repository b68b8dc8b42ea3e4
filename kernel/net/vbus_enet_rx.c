// SPDX-License-Identifier: GPL-2.0
/*
 * vbus_enet receive path.
 *
 * The guest keeps the rx ring full of empty buffers (posted with a "both"
 * push); the host fills one per frame, writes the frame length into the
 * descriptor and pops it back; the guest reaps the inuse index from its
 * head, passes the frame up and posts a fresh buffer in its place.
 *
 * rx carries plain buffers (no venet_sg): the host delivers complete frames
 * with valid checksums and never GSO frames, so skbs go up CHECKSUM_NONE.
 * That keeps the host side a plain copy into one buffer and the guest free
 * of any parsing of host metadata; rx offload can come later as a new
 * capability. A zero-length completion is a buffer handed back without a
 * frame (FLUSHRX, or a buffer the host could not use).
 *
 * Everything here runs in one context at a time: the NAPI poll, or a
 * caller that has disabled NAPI (probe, MTU change, refill work, remove).
 */
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <linux/io.h>

#include "vbus_enet.h"

/* How long to wait before retrying an rx refill that ran out of memory. */
#define VBUS_ENET_REFILL_DELAY	(HZ / 10)

/*
 * Post empty buffers at the tail until the ring is full. Returns the number
 * posted, -ENOMEM when an allocation failed first (the caller schedules the
 * refill work), or -EIO when the ring is broken.
 */
int vbus_enet_rx_fill(struct vbus_enet_priv *priv, gfp_t gfp)
{
	struct ioq *ioq = priv->rxq;
	struct ioq_iterator iter;
	u32 bufsize = priv->rx_bufsize;
	int posted = 0;
	int ret;

	if (test_bit(0, &priv->faulted))
		return -EIO;

	ret = ioq_iter_init(ioq, &iter, ioq_idxtype_both, 0);
	if (!ret)
		ret = ioq_iter_seek(&iter, ioq_seek_tail, 0, 0);
	if (ret) {
		vbus_enet_fault(priv, "rx ring iterator");
		return -EIO;
	}

	for (;;) {
		struct vbus_enet_rx_slot *slot;
		struct ioq_ring_desc *desc = iter.desc;
		struct sk_buff *skb;

		ret = ioq_full(ioq, ioq_idxtype_inuse);
		if (ret) {
			if (ret < 0)
				vbus_enet_fault(priv, "rx ring index");
			ret = ret < 0 ? -EIO : 0;
			break;
		}

		slot = &priv->rx_slots[iter.pos & (priv->rx_count - 1)];
		if (WARN_ON_ONCE(slot->skb)) {
			/* our own bookkeeping, not host input */
			ret = -EIO;
			break;
		}

		skb = __netdev_alloc_skb_ip_align(priv->dev, bufsize, gfp);
		if (!skb) {
			u64_stats_update_begin(&priv->rx_stats.syncp);
			u64_stats_inc(&priv->rx_stats.alloc_failed);
			u64_stats_update_end(&priv->rx_stats.syncp);
			ret = -ENOMEM;
			break;
		}

		slot->skb = skb;
		slot->buflen = bufsize;

		/*
		 * skb->data is kmalloc or page-fragment memory: physically
		 * contiguous over bufsize bytes. The cookie is informational
		 * only (see vbus_enet.h): we never read it back.
		 */
		WRITE_ONCE(desc->cookie, iter.pos & (priv->rx_count - 1));
		WRITE_ONCE(desc->ptr, (u64)virt_to_phys(skb->data));
		WRITE_ONCE(desc->len, (u64)bufsize);
		WRITE_ONCE(desc->valid, 1);

		/* the push's wmb publishes the body before sown and index */
		ret = ioq_iter_push(&iter, 0);
		if (ret) {
			slot->skb = NULL;
			kfree_skb(skb);
			vbus_enet_fault(priv, "rx ring push");
			ret = -EIO;
			break;
		}
		posted++;
	}

	/* a host that ran out of buffers waits for this */
	if (posted)
		ioq_signal(ioq, 0);

	return ret < 0 ? ret : posted;
}

/*
 * Account for one completed rx buffer and hand its frame up (or drop it).
 * @len is what the host wrote; @buflen what we posted.
 */
static void vbus_enet_rx_complete(struct vbus_enet_priv *priv,
				  struct sk_buff *skb, u32 buflen, u64 len,
				  bool napi)
{
	struct vbus_enet_rx_stats *st = &priv->rx_stats;
	struct net_device *dev = priv->dev;

	if (!len) {
		u64_stats_update_begin(&st->syncp);
		u64_stats_inc(&st->flushed);
		u64_stats_update_end(&st->syncp);
		consume_skb(skb);
		return;
	}

	if (len < ETH_HLEN || len > buflen) {
		u64_stats_update_begin(&st->syncp);
		u64_stats_inc(&st->length_errors);
		u64_stats_update_end(&st->syncp);
		if (net_ratelimit())
			netdev_warn(dev, "host returned a bad rx length %llu (buffer %u)\n",
				    len, buflen);
		kfree_skb(skb);
		return;
	}

	skb_put(skb, (unsigned int)len);
	skb->protocol = eth_type_trans(skb, dev);

	u64_stats_update_begin(&st->syncp);
	u64_stats_inc(&st->packets);
	u64_stats_add(&st->bytes, len);
	u64_stats_update_end(&st->syncp);

	if (napi)
		napi_gro_receive(&priv->napi, skb);
	else
		netif_rx(skb);
}

/*
 * Reap up to @budget completed rx descriptors. Returns how many were
 * reaped (-EIO when the ring is broken counts as 0).
 */
static int vbus_enet_rx_reap(struct vbus_enet_priv *priv, int budget,
			     bool napi)
{
	struct ioq *ioq = priv->rxq;
	struct ioq_iterator iter;
	int done = 0;
	int ret;

	ret = ioq_iter_init(ioq, &iter, ioq_idxtype_inuse,
			    IOQ_ITER_NOFLIPOWNER);
	if (!ret)
		ret = ioq_iter_seek(&iter, ioq_seek_head, 0, 0);
	if (ret) {
		vbus_enet_fault(priv, "rx ring iterator");
		return 0;
	}

	while (done < budget && vbus_enet_head_completed(ioq, &iter)) {
		struct vbus_enet_rx_slot *slot;
		struct sk_buff *skb;
		u32 buflen;
		u64 len;

		slot = &priv->rx_slots[iter.pos & (priv->rx_count - 1)];
		/* after ioq_iter_owned(): its rmb orders this load */
		len = READ_ONCE(iter.desc->len);
		skb = slot->skb;
		buflen = slot->buflen;
		slot->skb = NULL;

		ret = ioq_iter_pop(&iter, 0);
		if (ret) {
			kfree_skb(skb);
			vbus_enet_fault(priv, "rx ring pop");
			break;
		}
		done++;

		if (WARN_ON_ONCE(!skb))
			continue;	/* our bookkeeping, not host input */

		vbus_enet_rx_complete(priv, skb, buflen, len, napi);
	}

	return done;
}

/* The rx half of the NAPI poll. */
int vbus_enet_rx_poll(struct vbus_enet_priv *priv, int budget)
{
	int done;

	if (test_bit(0, &priv->faulted))
		return 0;

	done = vbus_enet_rx_reap(priv, budget, true);

	if (vbus_enet_rx_fill(priv, GFP_ATOMIC) == -ENOMEM)
		schedule_delayed_work(&priv->refill, VBUS_ENET_REFILL_DELAY);

	return done;
}

/* True when the host has completed the rx descriptor at the inuse head. */
bool vbus_enet_rx_pending(struct vbus_enet_priv *priv)
{
	struct ioq_iterator iter;

	if (test_bit(0, &priv->faulted))
		return false;
	if (ioq_iter_init(priv->rxq, &iter, ioq_idxtype_inuse,
			  IOQ_ITER_NOFLIPOWNER) ||
	    ioq_iter_seek(&iter, ioq_seek_head, 0, 0))
		return false;
	return vbus_enet_head_completed(priv->rxq, &iter);
}

/*
 * Reap everything the host has completed, with NAPI disabled (MTU change
 * after FLUSHRX). Frames that were filled before the flush still go up.
 */
void vbus_enet_rx_drain(struct vbus_enet_priv *priv)
{
	if (test_bit(0, &priv->faulted))
		return;
	vbus_enet_rx_reap(priv, priv->rx_count, false);
}

/*
 * Free every buffer still posted. Only after DEVCLOSE: the host no longer
 * writes into them.
 */
void vbus_enet_rx_free_all(struct vbus_enet_priv *priv)
{
	u32 i;

	for (i = 0; i < priv->rx_count; i++) {
		struct sk_buff *skb = priv->rx_slots[i].skb;

		priv->rx_slots[i].skb = NULL;
		kfree_skb(skb);
	}
}

/*
 * Retry an rx refill that failed for lack of memory. RTNL serialises it
 * with open/stop/MTU change, which also toggle NAPI; NAPI is disabled
 * while the ring is filled so that only one context posts.
 */
void vbus_enet_refill_work(struct work_struct *work)
{
	struct vbus_enet_priv *priv =
		container_of(to_delayed_work(work), struct vbus_enet_priv,
			     refill);
	bool running;
	int ret;

	rtnl_lock();
	if (priv->dev->reg_state != NETREG_REGISTERED) {
		rtnl_unlock();
		return;
	}

	running = netif_running(priv->dev);
	if (running)
		napi_disable(&priv->napi);

	ret = vbus_enet_rx_fill(priv, GFP_KERNEL);

	if (running) {
		napi_enable(&priv->napi);
		local_bh_disable();
		napi_schedule(&priv->napi);
		local_bh_enable();
	}
	rtnl_unlock();

	if (ret == -ENOMEM)
		schedule_delayed_work(&priv->refill, VBUS_ENET_REFILL_DELAY);
}
