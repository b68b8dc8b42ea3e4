/* SPDX-License-Identifier: GPL-2.0 */
/*
 * venet: private definitions shared by the driver's files.
 *
 * The wire contract with the host is docs/devices/venet.md;
 * the ABI structures are in <vbus/venet.h>.
 */
#ifndef VENET_DRV_H
#define VENET_DRV_H

#include <linux/netdevice.h>
#include <linux/if_vlan.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/scatterlist.h>
#include <linux/dma-mapping.h>
#include <linux/u64_stats_sync.h>
#include <linux/workqueue.h>
#include <vbus/ioq.h>
#include <vbus/venet.h>
#include <vbus/vbus_driver.h>

#define VENET_DRV_NAME	"venet"
#define VENET_DRV_VERSION	"1"

#define VENET_MAX_MTU	9000
/* One iov for the linear part, one per page fragment (no frag_list). */
#define VENET_TX_MAX_IOVS	(MAX_SKB_FRAGS + 1)
#define VENET_TX_SG_SIZE	(sizeof(struct venet_sg) + \
				 VENET_TX_MAX_IOVS * sizeof(struct venet_iov))

/*
 * RXSG (docs/devices/venet.md, "rx ring, RXSG"): every rx buffer is a
 * venet_sg over whole pages, big enough for the largest frame the host
 * may send (a 64 KiB GSO frame plus Ethernet and VLAN headers). The first
 * VENET_RX_COPY bytes are copied into the skb head (the stack wants
 * the headers linear); the rest of the used pages become frags, and only
 * those are replaced at refill. Like virtio-net's "big packets" mode.
 */
#define VENET_RX_FRAME_MAX	(65535 + ETH_HLEN + VLAN_HLEN)
#define VENET_RX_PAGES	DIV_ROUND_UP(VENET_RX_FRAME_MAX, PAGE_SIZE)
#define VENET_RX_SG_SIZE	(sizeof(struct venet_sg) + \
				 VENET_RX_PAGES * sizeof(struct venet_iov))
#define VENET_RX_COPY	128

/*
 * Per-slot state the guest keeps for itself. The descriptor's cookie lives
 * in memory the host can write, so it is never used to find an skb: the
 * slot index (ring position & mask) is.
 */
struct venet_rx_slot {
	struct sk_buff *skb;	/* plain mode: the posted buffer */
	dma_addr_t dma;		/* plain mode: skb->data mapped, buflen */
	u32 buflen;		/* bytes posted: the most the host may fill */
	bool posted;		/* RXSG: the descriptor is the host's */
	struct venet_sg *vsg;	/* RXSG: in q->rx_vsgs, VENET_RX_SG_SIZE */
	dma_addr_t vsg_dma;
	struct page *pages[VENET_RX_PAGES];	/* RXSG; NULL once consumed */
	/* RXSG: pages[i] is mapped (DMA_FROM_DEVICE) at page_dma[i] */
	dma_addr_t page_dma[VENET_RX_PAGES];
	unsigned long mapped;	/* bit i: page_dma[i] valid */
};

/*
 * tx: while the host has the frame, its mappings (DMA_TO_DEVICE). Our
 * copy: the venet_sg the host can write is never read back.
 */
struct venet_tx_slot {
	struct sk_buff *skb;
	struct venet_sg *vsg;	/* SG: in q->tx_vsgs, VENET_TX_SG_SIZE */
	dma_addr_t vsg_dma;
	int nents;		/* SG mode: sgl entries mapped; 0 = none */
	dma_addr_t dma;		/* plain mode: the linear frame */
	u32 dma_len;		/* plain mode; 0 = not mapped */
	struct scatterlist sgl[VENET_TX_MAX_IOVS];	/* SG mode */
};

/* One ring's venet_sgs in one coherent area (venet_dma.c). */
struct venet_vsgs {
	void *va;
	dma_addr_t dma;
	size_t len;
	size_t stride;
};

/* Per pair: written only by its NAPI poll (or with NAPI disabled). */
struct venet_rx_stats {
	struct u64_stats_sync syncp;
	u64_stats_t packets;
	u64_stats_t bytes;
	u64_stats_t length_errors;	/* host wrote a bad length */
	u64_stats_t dropped;		/* frames dropped while flushing */
	u64_stats_t flushed;		/* zero-length completions */
	u64_stats_t alloc_failed;
	u64_stats_t bad_offload;	/* RXSG: host wrote bad csum/GSO */
	u64_stats_t gso_packets;	/* RXSG: GSO frames received */
	u64_stats_t csum_partial;	/* RXSG: CHECKSUM_PARTIAL frames */
	u64_stats_t csum_valid;		/* RXSG: CHECKSUM_UNNECESSARY frames */
	u64_stats_t polls;		/* NAPI poll runs */
	u64_stats_t refill_doorbells; /* rx re-posts that called ioq_signal */
};

/* Per pair: written only under its txlock. */
struct venet_tx_stats {
	struct u64_stats_sync syncp;
	u64_stats_t packets;
	u64_stats_t bytes;
	u64_stats_t errors;		/* bad GSO type, sgvec failure */
	u64_stats_t dropped;		/* linearize failure, faulted ring */
	u64_stats_t gso_packets;
	u64_stats_t csum_partial;
	u64_stats_t busy;		/* NETDEV_TX_BUSY returned */
	u64_stats_t completed;
	u64_stats_t timeouts;
	u64_stats_t doorbells;	/* xmits that called ioq_signal */
	u64_stats_t irq_waits;		/* tx_complete_irq=0: tx unmasked */
};

/*
 * One queue pair (docs/devices/venet.md, "Queue pairs"): rx ring DEVSHM id
 * 2p, tx ring 2p + 1, one NAPI context for both, netdev tx queue p. Every
 * rule of the single-queue driver holds per pair: the rings' state is the
 * pair's own, and one pair's corrupted ring faults the whole device.
 */
struct venet_queue {
	struct venet_priv *priv;
	u32 index;		/* p */
	struct napi_struct napi;
	struct netdev_queue *txnq;	/* stack's tx queue p: BQL, stop/wake */

	struct ioq *rxq;
	struct ioq_notifier rx_notifier;
	struct venet_rx_slot *rx_slots;
	struct venet_vsgs rx_vsgs;	/* RXSG */

	struct ioq *txq;
	struct ioq_notifier tx_notifier;
	struct venet_tx_slot *tx_slots;
	struct venet_vsgs tx_vsgs;	/* SG mode */
	u32 tx_unpublished;	/* filled, not published yet (txlock) */
	spinlock_t txlock;	/* tx ring tail/head, tx_slots, tx stats */
	struct timer_list tx_timer;	/* reaps what a burst left in flight */

	struct venet_rx_stats rx_stats;
	struct venet_tx_stats tx_stats;
};

struct venet_priv {
	struct net_device *dev;
	struct vbus_device_proxy *vdev;

	u32 rx_count;
	u32 rx_bufsize;		/* size of buffers posted from now on */
	struct delayed_work refill;	/* every pair's rx refill */
	u32 tx_count;

	struct {
		bool sg;
		bool tso4;
		bool tso6;
		bool ecn;
		bool rxsg;	/* rx descriptors carry a venet_sg */
	} caps;

	/*
	 * Queue pairs: max_pairs structs in queues[] (the netdev's tx/rx
	 * queues, what we ask QUEUES for); the first @pairs have rings (the
	 * host's grant at the last DEVOPEN; changes only while detached, all
	 * NAPIs disabled); the first @active are the stack's real queues
	 * and get rx from the host (SETACTIVE, ethtool -L). Under RTNL.
	 */
	u32 max_pairs;
	u32 pairs;
	u32 active;

	bool link_up;		/* LINKUP answered; under RTNL */
	/*
	 * The host restarted and forgot the device: no rings, NAPI off,
	 * carrier off until reconnect (venet_main.c). Under RTNL.
	 */
	bool detached;
	unsigned long faulted;	/* bit 0: ring corrupted, device unusable */

	struct venet_queue queues[];	/* max_pairs */
};

/* The pairs with rings. */
#define venet_for_each_pair(priv, q) \
	for ((q) = (priv)->queues; (q) < (priv)->queues + (priv)->pairs; (q)++)

static inline u32 venet_rx_bufsize(unsigned int mtu)
{
	/* Ethernet header plus one VLAN tag: docs/devices/venet.md, "rx ring". */
	return mtu + ETH_HLEN + VLAN_HLEN;
}

/* main */
void venet_fault(struct venet_priv *priv, const char *why);

/* What the host's accesses go through: every mapping is on it. */
static inline struct device *venet_dma_dev(struct venet_priv *priv)
{
	return priv->vdev->dma_dev;
}

/* dma: the venet_sg arrays */
int venet_vsgs_alloc(struct venet_priv *priv, struct venet_vsgs *a,
		     u32 count, size_t size);
void venet_vsgs_free(struct venet_priv *priv, struct venet_vsgs *a);

static inline struct venet_sg *venet_vsg(struct venet_vsgs *a, u32 i,
					 dma_addr_t *dma)
{
	*dma = a->dma + (dma_addr_t)i * a->stride;
	return a->va + (size_t)i * a->stride;
}

/* The one check of venet_fault()'s verdict (a ring is unusable). */
static inline bool venet_faulted(struct venet_priv *priv)
{
	return test_bit(0, &priv->faulted);
}

/* rx */
int venet_rx_fill(struct venet_queue *q, gfp_t gfp);
int venet_rx_poll(struct venet_queue *q, int budget);
void venet_rx_drain(struct venet_queue *q);
void venet_rx_free_all(struct venet_queue *q);
int venet_rx_setup(struct venet_queue *q);
void venet_refill_work(struct work_struct *work);

/* tx */
int venet_tx_setup(struct venet_queue *q);
void venet_tx_teardown(struct venet_queue *q);
netdev_tx_t venet_start_xmit(struct sk_buff *skb, struct net_device *dev);
void venet_tx_reap(struct venet_queue *q);
bool venet_tx_pending(struct venet_queue *q);
bool venet_tx_wants_signal(struct venet_queue *q);
void venet_tx_timer(struct timer_list *t);
void venet_tx_timeout(struct net_device *dev, unsigned int txqueue);

/* main: schedule the pair's NAPI poll from any context */
void venet_kick(struct venet_queue *q);
int venet_devcall(struct venet_priv *priv, u32 func, void *data, size_t len);

/* mq: queue pairs; under RTNL */
int venet_negqueues(struct venet_priv *priv);
int venet_queues_follow(struct venet_priv *priv);
void venet_reactivate(struct venet_priv *priv);
int venet_set_active(struct venet_priv *priv, u32 n);
void venet_set_xps(struct venet_priv *priv);

/* ethtool */
extern const struct ethtool_ops venet_ethtool_ops;

#endif /* VENET_DRV_H */
