// SPDX-License-Identifier: GPL-2.0
/*
 * venet ethtool support: driver info, link, ring sizes (fixed at
 * probe), queue pairs (`ethtool -l/-L`: venet_mq.c) and driver counters
 * (`ethtool -S`: the device's totals over every pair, then each pair's
 * own). Offloads (`ethtool -k`) are the standard feature flags set from
 * the negotiated capabilities.
 */
#include <linux/ethtool.h>
#include <linux/netdevice.h>

#include "venet_drv.h"

struct venet_stat {
	char name[ETH_GSTRING_LEN];
	bool tx;
	size_t offset;
};

#define RX_STAT(n, f) { n, false, offsetof(struct venet_rx_stats, f) }
#define TX_STAT(n, f) { n, true, offsetof(struct venet_tx_stats, f) }

static const struct venet_stat venet_stats[] = {
	RX_STAT("rx_packets", packets),
	RX_STAT("rx_bytes", bytes),
	RX_STAT("rx_length_errors", length_errors),
	RX_STAT("rx_dropped", dropped),
	RX_STAT("rx_flushed", flushed),
	RX_STAT("rx_alloc_failed", alloc_failed),
	RX_STAT("rx_bad_offload", bad_offload),
	RX_STAT("rx_gso_packets", gso_packets),
	RX_STAT("rx_csum_partial", csum_partial),
	RX_STAT("rx_csum_valid", csum_valid),
	RX_STAT("rx_polls", polls),
	/*
	 * "kicks" in the two names below are doorbells to the host (the
	 * fields say so); the names are what ethtool -S users and
	 * bench/report.py read, so they stay.
	 */
	RX_STAT("rx_refill_kicks", refill_doorbells),
	TX_STAT("tx_packets", packets),
	TX_STAT("tx_bytes", bytes),
	TX_STAT("tx_errors", errors),
	TX_STAT("tx_dropped", dropped),
	TX_STAT("tx_gso_packets", gso_packets),
	TX_STAT("tx_csum_partial", csum_partial),
	TX_STAT("tx_busy", busy),
	TX_STAT("tx_completed", completed),
	TX_STAT("tx_timeouts", timeouts),
	TX_STAT("tx_kicks", doorbells),
	TX_STAT("tx_irq_waits", irq_waits),
};

/*
 * The rings' shm-signal counters (docs/devices/venet.md, "Counters"):
 * notifications that crossed to the host (an inject the host had not
 * suppressed) and host notifications that ran our notifier. The bridge
 * may still merge several crossings into one doorbell.
 */
enum venet_sig_stat {
	VENET_SIG_RX_SENT,
	VENET_SIG_RX_RECV,
	VENET_SIG_TX_SENT,
	VENET_SIG_TX_RECV,
	VENET_NSIGSTATS
};

static const char venet_sig_names[VENET_NSIGSTATS][ETH_GSTRING_LEN] = {
	[VENET_SIG_RX_SENT] = "rx_signals_sent",
	[VENET_SIG_RX_RECV] = "rx_signals_recv",
	[VENET_SIG_TX_SENT] = "tx_signals_sent",
	[VENET_SIG_TX_RECV] = "tx_signals_recv",
};

#define VENET_NSTATS (ARRAY_SIZE(venet_stats) + VENET_NSIGSTATS)

/* Each granted pair's own: how the traffic spread over the pairs. */
enum venet_q_stat {
	VENET_Q_RX_PACKETS,
	VENET_Q_RX_BYTES,
	VENET_Q_RX_POLLS,
	VENET_Q_RX_SIGNALS_RECV,
	VENET_Q_TX_PACKETS,
	VENET_Q_TX_BYTES,
	VENET_Q_TX_KICKS,
	VENET_Q_TX_SIGNALS_RECV,
	VENET_NQSTATS
};

static const char * const venet_q_names[VENET_NQSTATS] = {
	[VENET_Q_RX_PACKETS] = "rx_queue_%u_packets",
	[VENET_Q_RX_BYTES] = "rx_queue_%u_bytes",
	[VENET_Q_RX_POLLS] = "rx_queue_%u_polls",
	[VENET_Q_RX_SIGNALS_RECV] = "rx_queue_%u_signals_recv",
	[VENET_Q_TX_PACKETS] = "tx_queue_%u_packets",
	[VENET_Q_TX_BYTES] = "tx_queue_%u_bytes",
	[VENET_Q_TX_KICKS] = "tx_queue_%u_kicks",
	[VENET_Q_TX_SIGNALS_RECV] = "tx_queue_%u_signals_recv",
};

static void venet_get_drvinfo(struct net_device *dev,
			      struct ethtool_drvinfo *info)
{
	struct venet_priv *priv = netdev_priv(dev);

	strscpy(info->driver, VENET_DRV_NAME, sizeof(info->driver));
	strscpy(info->version, VENET_DRV_VERSION, sizeof(info->version));
	strscpy(info->bus_info, dev_name(&priv->vdev->dev),
		sizeof(info->bus_info));
}

static void venet_get_ringparam(struct net_device *dev,
				struct ethtool_ringparam *ring,
				struct kernel_ethtool_ringparam *kring,
				struct netlink_ext_ack *extack)
{
	struct venet_priv *priv = netdev_priv(dev);

	/* sized by the module parameters at probe; not changeable later */
	ring->rx_max_pending = priv->rx_count;
	ring->tx_max_pending = priv->tx_count;
	ring->rx_pending = priv->rx_count;
	ring->tx_pending = priv->tx_count;
}

/*
 * ethtool calls these under RTNL, which also covers a reconnect's change
 * of priv->pairs: the count and the strings agree.
 */
static int venet_get_sset_count(struct net_device *dev, int sset)
{
	struct venet_priv *priv = netdev_priv(dev);

	if (sset != ETH_SS_STATS)
		return -EOPNOTSUPP;
	return VENET_NSTATS + priv->pairs * VENET_NQSTATS;
}

static void venet_get_strings(struct net_device *dev, u32 sset, u8 *data)
{
	struct venet_priv *priv = netdev_priv(dev);
	size_t i;
	u32 p, k;

	if (sset != ETH_SS_STATS)
		return;
	for (i = 0; i < ARRAY_SIZE(venet_stats); i++)
		memcpy(data + i * ETH_GSTRING_LEN, venet_stats[i].name,
		       ETH_GSTRING_LEN);
	memcpy(data + i * ETH_GSTRING_LEN, venet_sig_names,
	       sizeof(venet_sig_names));
	data += VENET_NSTATS * ETH_GSTRING_LEN;
	for (p = 0; p < priv->pairs; p++)
		for (k = 0; k < VENET_NQSTATS; k++)
			ethtool_sprintf(&data, venet_q_names[k], p);
}

/* A ring's signal counters; bumped racily by design (vbus_stat_inc). */
static u64 venet_sig_injects(struct ioq *ioq)
{
	return ioq ? READ_ONCE(ioq->signal->injects) : 0;
}

static u64 venet_sig_wakeups(struct ioq *ioq)
{
	return ioq ? READ_ONCE(ioq->signal->wakeups) : 0;
}

/* The totals of the rings there are now (a detached device has none). */
static void venet_get_sig_stats(struct venet_priv *priv, u64 *data)
{
	struct venet_queue *q;

	memset(data, 0, VENET_NSIGSTATS * sizeof(*data));
	venet_for_each_pair(priv, q) {
		data[VENET_SIG_RX_SENT] += venet_sig_injects(q->rxq);
		data[VENET_SIG_RX_RECV] += venet_sig_wakeups(q->rxq);
		data[VENET_SIG_TX_SENT] += venet_sig_injects(q->txq);
		data[VENET_SIG_TX_RECV] += venet_sig_wakeups(q->txq);
	}
}

static u64 venet_stat_read(const struct u64_stats_sync *syncp,
			   const u64_stats_t *c)
{
	unsigned int start;
	u64 v;

	do {
		start = u64_stats_fetch_begin(syncp);
		v = u64_stats_read(c);
	} while (u64_stats_fetch_retry(syncp, start));
	return v;
}

static void venet_get_q_stats(struct venet_queue *q, u64 *data)
{
	const struct venet_rx_stats *rx = &q->rx_stats;
	const struct venet_tx_stats *tx = &q->tx_stats;

	data[VENET_Q_RX_PACKETS] = venet_stat_read(&rx->syncp, &rx->packets);
	data[VENET_Q_RX_BYTES] = venet_stat_read(&rx->syncp, &rx->bytes);
	data[VENET_Q_RX_POLLS] = venet_stat_read(&rx->syncp, &rx->polls);
	data[VENET_Q_RX_SIGNALS_RECV] = venet_sig_wakeups(q->rxq);
	data[VENET_Q_TX_PACKETS] = venet_stat_read(&tx->syncp, &tx->packets);
	data[VENET_Q_TX_BYTES] = venet_stat_read(&tx->syncp, &tx->bytes);
	data[VENET_Q_TX_KICKS] = venet_stat_read(&tx->syncp, &tx->doorbells);
	data[VENET_Q_TX_SIGNALS_RECV] = venet_sig_wakeups(q->txq);
}

static void venet_get_ethtool_stats(struct net_device *dev,
				    struct ethtool_stats *stats, u64 *data)
{
	struct venet_priv *priv = netdev_priv(dev);
	struct venet_queue *q;
	size_t i;
	u32 p;

	/* the totals: every pair that ever had rings (as get_stats64) */
	for (i = 0; i < ARRAY_SIZE(venet_stats); i++) {
		const struct venet_stat *s = &venet_stats[i];

		data[i] = 0;
		for (p = 0; p < priv->max_pairs; p++) {
			const struct u64_stats_sync *syncp;
			const void *base;

			q = &priv->queues[p];
			if (s->tx) {
				base = &q->tx_stats;
				syncp = &q->tx_stats.syncp;
			} else {
				base = &q->rx_stats;
				syncp = &q->rx_stats.syncp;
			}
			data[i] += venet_stat_read(syncp, base + s->offset);
		}
	}
	venet_get_sig_stats(priv, data + i);
	data += VENET_NSTATS;
	venet_for_each_pair(priv, q) {
		venet_get_q_stats(q, data);
		data += VENET_NQSTATS;
	}
}

static void venet_get_channels(struct net_device *dev,
			       struct ethtool_channels *ch)
{
	struct venet_priv *priv = netdev_priv(dev);

	/* each pair is one rx and one tx ring with one interrupt: combined */
	ch->max_combined = priv->pairs;
	ch->combined_count = priv->active;
}

static int venet_set_channels(struct net_device *dev,
			      struct ethtool_channels *ch)
{
	struct venet_priv *priv = netdev_priv(dev);

	/* ethtool checked them against the maximums: rx/tx/other are 0 */
	if (ch->rx_count || ch->tx_count || ch->other_count)
		return -EINVAL;
	return venet_set_active(priv, ch->combined_count);
}

const struct ethtool_ops venet_ethtool_ops = {
	.get_drvinfo		= venet_get_drvinfo,
	.get_link		= ethtool_op_get_link,
	.get_ringparam		= venet_get_ringparam,
	.get_sset_count		= venet_get_sset_count,
	.get_strings		= venet_get_strings,
	.get_ethtool_stats	= venet_get_ethtool_stats,
	.get_channels		= venet_get_channels,
	.set_channels		= venet_set_channels,
};
