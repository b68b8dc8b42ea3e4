/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vbus_enet: private definitions shared by the driver's files.
 *
 * The wire contract with the host is docs/transport.md, section "venet";
 * the ABI structures are in <vbus/venet.h>.
 */
#ifndef VBUS_ENET_PRIV_H
#define VBUS_ENET_PRIV_H

#include <linux/netdevice.h>
#include <linux/if_vlan.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/scatterlist.h>
#include <linux/u64_stats_sync.h>
#include <linux/workqueue.h>
#include <vbus/ioq.h>
#include <vbus/venet.h>
#include <vbus/vbus_driver.h>

#define VBUS_ENET_DRV_NAME	"vbus_enet"
#define VBUS_ENET_DRV_VERSION	"1"

#define VBUS_ENET_MAX_MTU	9000
/* One iov for the linear part, one per page fragment (no frag_list). */
#define VBUS_ENET_TX_MAX_IOVS	(MAX_SKB_FRAGS + 1)
#define VBUS_ENET_TX_SG_SIZE	(sizeof(struct venet_sg) + \
				 VBUS_ENET_TX_MAX_IOVS * sizeof(struct venet_iov))

/*
 * RXSG (docs/transport.md, venet, "rx ring, RXSG"): every rx buffer is a
 * venet_sg over whole pages, big enough for the largest frame the host
 * may send (a 64 KiB GSO frame plus Ethernet and VLAN headers). The first
 * VBUS_ENET_RX_COPY bytes are copied into the skb head (the stack wants
 * the headers linear); the rest of the used pages become frags, and only
 * those are replaced at refill. Like virtio-net's "big packets" mode.
 */
#define VBUS_ENET_RX_FRAME_MAX	(65535 + ETH_HLEN + VLAN_HLEN)
#define VBUS_ENET_RX_PAGES	DIV_ROUND_UP(VBUS_ENET_RX_FRAME_MAX, PAGE_SIZE)
#define VBUS_ENET_RX_SG_SIZE	(sizeof(struct venet_sg) + \
				 VBUS_ENET_RX_PAGES * sizeof(struct venet_iov))
#define VBUS_ENET_RX_COPY	128

/*
 * Per-slot state the guest keeps for itself. The descriptor's cookie lives
 * in memory the host can write, so it is never used to find an skb: the
 * slot index (ring position & mask) is.
 */
struct vbus_enet_rx_slot {
	struct sk_buff *skb;	/* plain mode: the posted buffer */
	u32 buflen;		/* bytes posted: the most the host may fill */
	bool posted;		/* RXSG: the descriptor is the host's */
	struct venet_sg *vsg;	/* RXSG: preallocated, VBUS_ENET_RX_SG_SIZE */
	struct page *pages[VBUS_ENET_RX_PAGES];	/* RXSG; NULL once consumed */
};

struct vbus_enet_tx_slot {
	struct sk_buff *skb;
	struct venet_sg *vsg;	/* SG mode: preallocated, VBUS_ENET_TX_SG_SIZE */
};

/* Written only by the NAPI poll (or with NAPI disabled). */
struct vbus_enet_rx_stats {
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
};

/* Written only under txlock. */
struct vbus_enet_tx_stats {
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
};

struct vbus_enet_priv {
	struct net_device *dev;
	struct vbus_device_proxy *vdev;
	struct napi_struct napi;

	struct ioq *rxq;
	struct ioq_notifier rx_notifier;
	struct vbus_enet_rx_slot *rx_slots;
	u32 rx_count;
	u32 rx_bufsize;		/* size of buffers posted from now on */
	struct delayed_work refill;

	struct ioq *txq;
	struct ioq_notifier tx_notifier;
	struct vbus_enet_tx_slot *tx_slots;
	u32 tx_count;
	spinlock_t txlock;	/* tx ring tail/head, tx_slots, tx_sgl, tx stats */
	struct scatterlist tx_sgl[VBUS_ENET_TX_MAX_IOVS];

	struct {
		bool sg;
		bool tso4;
		bool tso6;
		bool ecn;
		bool rxsg;	/* rx descriptors carry a venet_sg */
	} caps;

	bool link_up;		/* LINKUP answered; under RTNL */
	unsigned long faulted;	/* bit 0: ring corrupted, device unusable */

	struct vbus_enet_rx_stats rx_stats;
	struct vbus_enet_tx_stats tx_stats;
};

static inline u32 vbus_enet_rx_bufsize(unsigned int mtu)
{
	/* Ethernet header plus one VLAN tag: docs/transport.md "rx ring". */
	return mtu + ETH_HLEN + VLAN_HLEN;
}

/* main */
void vbus_enet_fault(struct vbus_enet_priv *priv, const char *why);
int vbus_enet_devcall(struct vbus_enet_priv *priv, u32 func, void *data,
		      size_t len);

/* rx */
int vbus_enet_rx_fill(struct vbus_enet_priv *priv, gfp_t gfp);
int vbus_enet_rx_poll(struct vbus_enet_priv *priv, int budget);
bool vbus_enet_rx_pending(struct vbus_enet_priv *priv);
void vbus_enet_rx_drain(struct vbus_enet_priv *priv);
void vbus_enet_rx_free_all(struct vbus_enet_priv *priv);
int vbus_enet_rx_setup(struct vbus_enet_priv *priv);
void vbus_enet_refill_work(struct work_struct *work);

/* tx */
int vbus_enet_tx_setup(struct vbus_enet_priv *priv);
void vbus_enet_tx_teardown(struct vbus_enet_priv *priv);
netdev_tx_t vbus_enet_start_xmit(struct sk_buff *skb, struct net_device *dev);
void vbus_enet_tx_reap(struct vbus_enet_priv *priv);
bool vbus_enet_tx_pending(struct vbus_enet_priv *priv);
void vbus_enet_tx_timeout(struct net_device *dev, unsigned int txqueue);

/* ethtool */
extern const struct ethtool_ops vbus_enet_ethtool_ops;

/*
 * True when the descriptor at the head of @ioq's inuse index has been
 * handed back by the host. Reading it needs the inuse count first (our own
 * index: no barrier) and then ioq_iter_owned(), whose rmb orders the sown
 * load before any later load of the descriptor body.
 */
static inline bool vbus_enet_head_completed(struct ioq *ioq,
					    struct ioq_iterator *iter)
{
	return ioq_count(ioq, ioq_idxtype_inuse) > 0 && ioq_iter_owned(iter);
}

#endif /* VBUS_ENET_PRIV_H */
