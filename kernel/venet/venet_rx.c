// SPDX-License-Identifier: GPL-2.0
/*
 * venet receive path.
 *
 * The guest keeps the rx ring full of empty buffers (posted with a "both"
 * push); the host fills one per frame, writes the frame length into the
 * descriptor and pops it back; the guest reaps the inuse index from its
 * head, passes the frame up and posts a fresh buffer in its place.
 *
 * Two buffer formats, fixed at NEGCAP:
 *  - plain: one skb per slot; the host delivers complete frames with valid
 *    checksums and never GSO frames, so skbs go up CHECKSUM_NONE;
 *  - RXSG: one venet_sg per slot over VENET_RX_PAGES pages; the host
 *    may deliver 64 KiB GSO frames with partial checksums and writes the
 *    checksum/GSO state into the venet_sg. That metadata comes from the
 *    host, so it is read once, checked against what we posted and handed
 *    to virtio_net_hdr_to_skb(), the stack's checker for untrusted
 *    offload headers (tun, packet sockets).
 * A zero-length completion is a buffer handed back without a frame
 * (FLUSHRX, or a buffer the host could not use).
 *
 * The host writes the frames through DMA_FROM_DEVICE mappings on the
 * bridge's PCI device (bounce buffers under swiotlb): a buffer is unmapped
 * before we read it. The venet_sgs are coherent (venet_dma.c). What we
 * post never carries old kernel data: plain skbs are zeroed, RXSG pages
 * come zeroed from the allocator or hold an earlier frame of the host's.
 *
 * Everything here is per queue pair (struct venet_queue) and runs in one
 * context at a time: the pair's NAPI poll, or a caller that has disabled
 * it (probe, MTU change, refill work, remove).
 */
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/dma-mapping.h>
#include <linux/virtio_net.h>

#include "venet_drv.h"

#define VENET_SG_RX_FLAGS (VENET_SG_FLAG_NEEDS_CSUM | VENET_SG_FLAG_GSO | \
			   VENET_SG_FLAG_ECN | VENET_SG_FLAG_DATA_VALID)

static void venet_rx_count(struct venet_queue *q, u64_stats_t *c)
{
	u64_stats_update_begin(&q->rx_stats.syncp);
	u64_stats_inc(c);
	u64_stats_update_end(&q->rx_stats.syncp);
}

int venet_rx_setup(struct venet_queue *q)
{
	struct venet_priv *priv = q->priv;
	u32 i;

	/* a frame never needs more frags than there are pages */
	BUILD_BUG_ON(VENET_RX_PAGES > MAX_SKB_FRAGS);
	BUILD_BUG_ON(VENET_RX_COPY > PAGE_SIZE);
	BUILD_BUG_ON(VENET_RX_PAGES > BITS_PER_LONG);	/* slot->mapped */

	q->rx_slots = kvcalloc(priv->rx_count, sizeof(*q->rx_slots),
				  GFP_KERNEL);
	if (!q->rx_slots)
		return -ENOMEM;
	if (!priv->caps.rxsg)
		return 0;

	/* the caller frees what we got */
	if (venet_vsgs_alloc(priv, &q->rx_vsgs, priv->rx_count,
			     VENET_RX_SG_SIZE))
		return -ENOMEM;
	for (i = 0; i < priv->rx_count; i++)
		q->rx_slots[i].vsg = venet_vsg(&q->rx_vsgs, i,
						  &q->rx_slots[i].vsg_dma);
	return 0;
}

/* RXSG: page @i of @slot for the host to write; 0 or -ENOMEM. */
static int venet_rx_map_page(struct venet_queue *q,
			     struct venet_rx_slot *slot, u32 i)
{
	struct venet_priv *priv = q->priv;
	struct device *dma_dev = venet_dma_dev(priv);
	dma_addr_t dma;

	if (test_bit(i, &slot->mapped))
		return 0;
	dma = dma_map_page(dma_dev, slot->pages[i], 0, PAGE_SIZE,
			   DMA_FROM_DEVICE);
	if (dma_mapping_error(dma_dev, dma))
		return -ENOMEM;
	slot->page_dma[i] = dma;
	__set_bit(i, &slot->mapped);
	return 0;
}

/*
 * RXSG: the host is done with the first @len bytes of @slot's pages:
 * unmap them (under swiotlb this copies the frame out of the bounce
 * buffers) before we read them. The rest stay mapped for the next post.
 */
static void venet_rx_unmap_pages(struct venet_queue *q,
				 struct venet_rx_slot *slot, u32 len)
{
	struct venet_priv *priv = q->priv;
	u32 i;

	for (i = 0; i < VENET_RX_PAGES && i * PAGE_SIZE < len; i++) {
		if (!__test_and_clear_bit(i, &slot->mapped))
			continue;
		dma_unmap_page(venet_dma_dev(priv), slot->page_dma[i],
			       PAGE_SIZE, DMA_FROM_DEVICE);
	}
}

/*
 * RXSG: give @slot a full set of mapped pages and describe them in its
 * venet_sg. Pages a previous frame did not use are still there (and
 * mapped) and are posted again; new ones come zeroed.
 */
static int venet_rx_prep_sg(struct venet_queue *q,
			    struct venet_rx_slot *slot, gfp_t gfp)
{
	struct venet_sg *vsg = slot->vsg;
	u32 i;

	for (i = 0; i < VENET_RX_PAGES; i++) {
		if (!slot->pages[i])
			slot->pages[i] = alloc_page(gfp | __GFP_NOWARN |
						    __GFP_ZERO);
		if (!slot->pages[i] || venet_rx_map_page(q, slot, i))
			return -ENOMEM;
	}

	/* the host wrote into this on the last completion: start afresh */
	memset(vsg, 0, sizeof(*vsg));
	vsg->count = VENET_RX_PAGES;
	vsg->len = VENET_RX_PAGES * PAGE_SIZE;
	for (i = 0; i < VENET_RX_PAGES; i++) {
		vsg->iov[i].len = PAGE_SIZE;
		vsg->iov[i].reserved = 0;
		vsg->iov[i].ptr = (u64)slot->page_dma[i];
	}
	slot->buflen = VENET_RX_PAGES * PAGE_SIZE;
	return 0;
}

/* How long to wait before retrying an rx refill that ran out of memory. */
#define VENET_REFILL_DELAY	(HZ / 10)

/* RXSG: post the slot's pages behind its venet_sg. 0, -ENOMEM or -EIO. */
static int venet_rx_post_sg(struct venet_queue *q, struct ioq_ring_desc *desc,
			    __u32 at, struct venet_rx_slot *slot, gfp_t gfp)
{
	struct venet_priv *priv = q->priv;

	if (venet_rx_prep_sg(q, slot, gfp)) {
		venet_rx_count(q, &q->rx_stats.alloc_failed);
		return -ENOMEM;
	}
	WRITE_ONCE(desc->cookie, at & (priv->rx_count - 1));
	WRITE_ONCE(desc->ptr, (u64)slot->vsg_dma);
	WRITE_ONCE(desc->len, (u64)VENET_RX_SG_SIZE);
	WRITE_ONCE(desc->valid, 1);
	/* published with the batch: venet_rx_fill()'s ioq_post_end() */
	slot->posted = true;
	return 0;
}

/* Flat: post one skb of @bufsize. 0, -ENOMEM or -EIO. */
static int venet_rx_post_flat(struct venet_queue *q,
			      struct ioq_ring_desc *desc, __u32 at,
			      struct venet_rx_slot *slot, u32 bufsize, gfp_t gfp)
{
	struct venet_priv *priv = q->priv;
	struct device *dma_dev = venet_dma_dev(priv);
	struct sk_buff *skb;
	dma_addr_t dma;

	skb = __netdev_alloc_skb_ip_align(priv->dev, bufsize, gfp);
	if (!skb) {
		u64_stats_update_begin(&q->rx_stats.syncp);
		u64_stats_inc(&q->rx_stats.alloc_failed);
		u64_stats_update_end(&q->rx_stats.syncp);
		return -ENOMEM;
	}
	/* the host may read what it may write: no old kernel data in it */
	memset(skb->data, 0, bufsize);
	dma = dma_map_single(dma_dev, skb->data, bufsize, DMA_FROM_DEVICE);
	if (dma_mapping_error(dma_dev, dma)) {
		kfree_skb(skb);
		venet_rx_count(q, &q->rx_stats.alloc_failed);
		return -ENOMEM;
	}

	slot->skb = skb;
	slot->dma = dma;
	slot->buflen = bufsize;

	/*
	 * The cookie is informational only (see venet_drv.h): we never
	 * read it back.
	 */
	WRITE_ONCE(desc->cookie, at & (priv->rx_count - 1));
	WRITE_ONCE(desc->ptr, (u64)dma);
	WRITE_ONCE(desc->len, (u64)bufsize);
	WRITE_ONCE(desc->valid, 1);
	/* published with the batch: venet_rx_fill()'s ioq_post_end() */
	return 0;
}

/*
 * Post empty buffers at the tail until the ring is full, as one batch:
 * ioq_post_begin() gives the free slots (from the pusher's shadows on v6),
 * we fill as many as we can allocate, and ioq_post_end() publishes them
 * with one tail store ([R1]; v5: [R4] too; core/ioq.c) and one doorbell
 * (a host that ran out of buffers waits for it). Returns the number
 * posted, -ENOMEM when an allocation failed first (the caller schedules the
 * refill work; what was filled before it is posted), or -EIO when the
 * ring is broken. A slot that failed to fill keeps nothing: the helpers
 * leave it empty on -ENOMEM.
 */
int venet_rx_fill(struct venet_queue *q, gfp_t gfp)
{
	struct venet_priv *priv = q->priv;
	struct ioq *ioq = q->rxq;
	u32 bufsize = priv->rx_bufsize;
	int room, posted = 0;
	int ret = 0;
	__u32 pos;

	if (venet_faulted(priv))
		return -EIO;

	room = ioq_post_begin(ioq, priv->rx_count, &pos);
	if (room < 0) {
		venet_fault(priv, "rx ring index");
		return -EIO;
	}
	while (posted < room) {
		__u32 at = pos + posted;
		struct ioq_ring_desc *desc = ioq_desc(ioq, at);
		struct venet_rx_slot *slot;

		slot = &q->rx_slots[at & (priv->rx_count - 1)];
		if (slot->skb || slot->posted) {
			/* room, yet the tail slot is posted: see venet_tx_tail() */
			venet_fault(priv, "rx tail slot still posted");
			ret = -EIO;
			break;
		}
		if (priv->caps.rxsg)
			ret = venet_rx_post_sg(q, desc, at, slot, gfp);
		else
			ret = venet_rx_post_flat(q, desc, at, slot, bufsize,
						 gfp);
		if (ret)
			break;
		posted++;
	}
	if (!posted || venet_faulted(priv))
		return ret < 0 ? ret : posted;

	/* the filled slots stay posted: venet_rx_free_all() takes them */
	if (ioq_post_end(ioq, posted, IOQ_ITER_AUTOUPDATE)) {
		venet_fault(priv, "rx ring publish");
		return -EIO;
	}
	venet_rx_count(q, &q->rx_stats.refill_doorbells);
	return ret < 0 ? ret : posted;
}

/*
 * Account for one completed rx buffer and hand its frame up (or drop it).
 * @len is what the host wrote; @buflen what we posted.
 */
static void venet_rx_complete(struct venet_queue *q,
			      struct sk_buff *skb, u32 buflen, u64 len,
			      bool napi)
{
	struct venet_priv *priv = q->priv;
	struct venet_rx_stats *st = &q->rx_stats;
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

	/* rx queues are every granted pair (venet_mq.c): a valid index */
	skb_record_rx_queue(skb, q->index);
	if (napi)
		napi_gro_receive(&q->napi, skb);
	else
		netif_rx(skb);
}

/* What the host wrote into a completed RXSG buffer's venet_sg, read once. */
struct venet_rx_meta {
	u32 flags;
	u32 len;
	u16 csum_start;
	u16 csum_offset;
	u8 gso_type;
	u16 gso_hdrlen;
	u16 gso_size;
};

static void venet_rx_read_meta(const struct venet_sg *vsg,
			       struct venet_rx_meta *m)
{
	m->flags = READ_ONCE(vsg->flags);
	m->len = READ_ONCE(vsg->len);
	m->csum_start = READ_ONCE(vsg->csum.start);
	m->csum_offset = READ_ONCE(vsg->csum.offset);
	m->gso_type = READ_ONCE(vsg->gso.type);
	m->gso_hdrlen = READ_ONCE(vsg->gso.hdrlen);
	m->gso_size = READ_ONCE(vsg->gso.size);
}

/*
 * The venet rules for host-written rx metadata (docs/devices/venet.md), then the
 * same as a virtio_net_hdr for virtio_net_hdr_to_skb(). Returns false
 * when the metadata is not acceptable.
 */
static bool venet_rx_meta_to_vnet(const struct venet_rx_meta *m,
				  u32 len, struct virtio_net_hdr *hdr)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->gso_type = VIRTIO_NET_HDR_GSO_NONE;

	if (m->flags & ~VENET_SG_RX_FLAGS)
		return false;
	if (m->flags & VENET_SG_FLAG_NEEDS_CSUM) {
		/* u32: two u16 plus 2 cannot wrap */
		if ((u32)m->csum_start + m->csum_offset + 2 > len)
			return false;
		hdr->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		hdr->csum_start = __cpu_to_virtio16(true, m->csum_start);
		hdr->csum_offset = __cpu_to_virtio16(true, m->csum_offset);
	}
	if (!(m->flags & VENET_SG_FLAG_GSO))
		return true;

	/* a GSO frame's segments need a checksum state to start from */
	if (!(m->flags & (VENET_SG_FLAG_NEEDS_CSUM | VENET_SG_FLAG_DATA_VALID)))
		return false;
	switch (m->gso_type) {
	case VENET_GSO_TYPE_TCPV4:
		hdr->gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
		break;
	case VENET_GSO_TYPE_TCPV6:
		hdr->gso_type = VIRTIO_NET_HDR_GSO_TCPV6;
		break;
	default:	/* UDP was never negotiated on rx */
		return false;
	}
	if (m->flags & VENET_SG_FLAG_ECN)
		hdr->gso_type |= VIRTIO_NET_HDR_GSO_ECN;
	if (!m->gso_size || m->gso_hdrlen > len)
		return false;
	hdr->gso_size = __cpu_to_virtio16(true, m->gso_size);
	hdr->hdr_len = __cpu_to_virtio16(true, m->gso_hdrlen);
	return true;
}

/*
 * RXSG: turn the first @len bytes of @slot's pages into an skb. The head
 * gets a copy of the first bytes (headers); the used pages move to the skb
 * as frags and leave the slot (refill replaces them). NULL when no skb
 * could be allocated: the pages then stay with the slot.
 */
static struct sk_buff *venet_rx_build_sg(struct venet_queue *q,
					 struct venet_rx_slot *slot,
					 u32 len, bool napi)
{
	struct venet_priv *priv = q->priv;
	u32 copy = min_t(u32, len, VENET_RX_COPY);
	struct sk_buff *skb;
	u32 pos;

	if (napi)
		skb = napi_alloc_skb(&q->napi, VENET_RX_COPY);
	else
		skb = netdev_alloc_skb_ip_align(priv->dev, VENET_RX_COPY);
	if (!skb)
		return NULL;

	skb_put_data(skb, page_address(slot->pages[0]), copy);

	/* len <= VENET_RX_PAGES * PAGE_SIZE: checked by the caller */
	for (pos = copy; pos < len; ) {
		u32 i = pos / PAGE_SIZE;
		u32 off = pos % PAGE_SIZE;
		u32 chunk = min_t(u32, len - pos, PAGE_SIZE - off);

		skb_add_rx_frag(skb, skb_shinfo(skb)->nr_frags,
				slot->pages[i], off, chunk, PAGE_SIZE);
		slot->pages[i] = NULL;
		pos += chunk;
	}
	return skb;
}

static void venet_rx_complete_sg(struct venet_queue *q,
				 struct venet_rx_slot *slot, u64 len,
				 const struct venet_rx_meta *m,
				 bool napi)
{
	struct venet_priv *priv = q->priv;
	struct venet_rx_stats *st = &q->rx_stats;
	struct net_device *dev = priv->dev;
	struct virtio_net_hdr hdr;
	struct sk_buff *skb;

	if (!len) {
		/* the pages stay with the slot for the next post */
		venet_rx_count(q, &st->flushed);
		return;
	}

	/* our own record of the capacity decides, not the venet_sg */
	if (len < ETH_HLEN || len > slot->buflen || m->len != len) {
		venet_rx_count(q, &st->length_errors);
		if (net_ratelimit())
			netdev_warn(dev, "host returned a bad rx length %llu/%u (buffer %u)\n",
				    len, m->len, slot->buflen);
		return;
	}

	if (!venet_rx_meta_to_vnet(m, (u32)len, &hdr)) {
		venet_rx_count(q, &st->bad_offload);
		if (net_ratelimit())
			netdev_warn(dev, "host returned bad rx offload state (flags 0x%x gso %u)\n",
				    m->flags, m->gso_type);
		return;
	}

	venet_rx_unmap_pages(q, slot, (u32)len);
	skb = venet_rx_build_sg(q, slot, (u32)len, napi);
	if (!skb) {
		venet_rx_count(q, &st->alloc_failed);
		return;
	}

	/* offsets are from the Ethernet header: before eth_type_trans() */
	if (virtio_net_hdr_to_skb(skb, &hdr, true)) {
		venet_rx_count(q, &st->bad_offload);
		if (net_ratelimit())
			netdev_warn(dev, "host returned rx offload state the stack refused\n");
		kfree_skb(skb);
		return;
	}
	if (skb->ip_summed != CHECKSUM_PARTIAL &&
	    (m->flags & VENET_SG_FLAG_DATA_VALID))
		skb->ip_summed = CHECKSUM_UNNECESSARY;

	skb->protocol = eth_type_trans(skb, dev);

	u64_stats_update_begin(&st->syncp);
	u64_stats_inc(&st->packets);
	u64_stats_add(&st->bytes, len);
	if (skb_is_gso(skb))
		u64_stats_inc(&st->gso_packets);
	if (skb->ip_summed == CHECKSUM_PARTIAL)
		u64_stats_inc(&st->csum_partial);
	else if (skb->ip_summed == CHECKSUM_UNNECESSARY)
		u64_stats_inc(&st->csum_valid);
	u64_stats_update_end(&st->syncp);

	/* rx queues are every granted pair (venet_mq.c): a valid index */
	skb_record_rx_queue(skb, q->index);
	if (napi)
		napi_gro_receive(&q->napi, skb);
	else
		netif_rx(skb);
}

/*
 * Reap up to @budget completed rx descriptors. Returns how many were
 * reaped (-EIO when the ring is broken counts as 0).
 */
static int venet_rx_reap(struct venet_queue *q, int budget,
			 bool napi)
{
	struct venet_priv *priv = q->priv;
	struct ioq *ioq = q->rxq;
	int avail, done = 0;
	__u32 pos;

	/*
	 * ioq_reap_begin()'s [A2] orders valid's head before the loads of
	 * the completions below and of the venet_sgs the host wrote before
	 * its consume publish ([R2]). Completions come back in order: the
	 * position, not the host-written cookie, names the slot.
	 */
	avail = ioq_reap_begin(ioq, budget, &pos);
	if (avail < 0) {
		venet_fault(priv, "rx ring index");
		return 0;
	}
	while (done < avail) {
		struct venet_rx_slot *slot;
		struct sk_buff *skb;
		u32 buflen;
		u64 len;

		slot = &q->rx_slots[(pos + done) & (priv->rx_count - 1)];
		len = READ_ONCE(ioq_desc(ioq, pos + done)->len);

		if (priv->caps.rxsg) {
			struct venet_rx_meta m;

			if (!slot->posted) {	/* completed twice (v5) */
				venet_fault(priv, "rx completion of a slot not posted");
				break;
			}
			venet_rx_read_meta(slot->vsg, &m);
			slot->posted = false;
			done++;
			venet_rx_complete_sg(q, slot, len, &m, napi);
			continue;
		}

		skb = slot->skb;
		if (!skb) {	/* completed twice (v5) */
			venet_fault(priv, "rx completion of a slot not posted");
			break;
		}
		buflen = slot->buflen;
		slot->skb = NULL;
		/* the host is done with it (or gone): ours to read */
		dma_unmap_single(venet_dma_dev(priv), slot->dma, buflen,
				 DMA_FROM_DEVICE);
		done++;
		venet_rx_complete(q, skb, buflen, len, napi);
	}
	/* one inuse-head store for the batch: [R3] */
	if (done && ioq_reap_end(ioq, done, 0))
		venet_fault(priv, "rx ring reap");
	return done;
}

/* The rx half of the NAPI poll. */
int venet_rx_poll(struct venet_queue *q, int budget)
{
	struct venet_priv *priv = q->priv;
	int done;

	if (venet_faulted(priv))
		return 0;

	venet_rx_count(q, &q->rx_stats.polls);
	done = venet_rx_reap(q, budget, true);

	if (venet_rx_fill(q, GFP_ATOMIC) == -ENOMEM)
		schedule_delayed_work(&priv->refill, VENET_REFILL_DELAY);

	return done;
}

/*
 * Reap everything the host has completed, with NAPI disabled (MTU change
 * after FLUSHRX). Frames that were filled before the flush still go up.
 * napi_disable() does not wait for a poll's look-again after
 * napi_complete_done(); that one is ioq_reap_poll(), which writes no ring
 * state, so it cannot race this reaper.
 */
void venet_rx_drain(struct venet_queue *q)
{
	struct venet_priv *priv = q->priv;

	if (venet_faulted(priv))
		return;
	venet_rx_reap(q, priv->rx_count, false);
}

/*
 * Free every buffer still posted. Only after DEVCLOSE: the host no longer
 * writes into them.
 */
void venet_rx_free_all(struct venet_queue *q)
{
	struct venet_priv *priv = q->priv;
	u32 i;

	for (i = 0; i < priv->rx_count; i++) {
		struct venet_rx_slot *slot = &q->rx_slots[i];
		u32 p;

		if (slot->skb)
			dma_unmap_single(venet_dma_dev(priv), slot->dma,
					 slot->buflen, DMA_FROM_DEVICE);
		kfree_skb(slot->skb);
		slot->skb = NULL;
		venet_rx_unmap_pages(q, slot, VENET_RX_PAGES * PAGE_SIZE);
		for (p = 0; p < VENET_RX_PAGES; p++) {
			if (slot->pages[p])
				put_page(slot->pages[p]);
			slot->pages[p] = NULL;
		}
		slot->vsg = NULL;
		slot->posted = false;
	}
	venet_vsgs_free(priv, &q->rx_vsgs);
}

/*
 * Retry an rx refill that failed for lack of memory, on every pair (one
 * work for the device). RTNL serialises it with open/stop/MTU change and
 * reconnect, which also toggle NAPI and change the pairs; a pair's NAPI
 * is disabled while its ring is filled so that only one context posts.
 */
void venet_refill_work(struct work_struct *work)
{
	struct venet_priv *priv =
		container_of(to_delayed_work(work), struct venet_priv,
			     refill);
	struct venet_queue *q;
	bool running, again = false;

	rtnl_lock();
	if (priv->dev->reg_state != NETREG_REGISTERED || priv->detached) {
		rtnl_unlock();
		return;
	}

	running = netif_running(priv->dev);
	venet_for_each_pair(priv, q) {
		if (running)
			napi_disable(&q->napi);
		if (venet_rx_fill(q, GFP_KERNEL) == -ENOMEM)
			again = true;
		if (running) {
			napi_enable(&q->napi);
			venet_kick(q);
		}
	}
	rtnl_unlock();

	if (again)
		schedule_delayed_work(&priv->refill, VENET_REFILL_DELAY);
}
