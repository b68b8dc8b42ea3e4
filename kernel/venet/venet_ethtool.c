// SPDX-License-Identifier: GPL-2.0
/*
 * venet ethtool support: driver info, link, ring sizes (fixed at
 * probe), and driver counters (`ethtool -S`). Offloads (`ethtool -k`) are
 * the standard feature flags set from the negotiated capabilities.
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

static int venet_get_sset_count(struct net_device *dev, int sset)
{
	return sset == ETH_SS_STATS ? VENET_NSTATS : -EOPNOTSUPP;
}

static void venet_get_strings(struct net_device *dev, u32 sset, u8 *data)
{
	size_t i;

	if (sset != ETH_SS_STATS)
		return;
	for (i = 0; i < ARRAY_SIZE(venet_stats); i++)
		memcpy(data + i * ETH_GSTRING_LEN, venet_stats[i].name,
		       ETH_GSTRING_LEN);
	memcpy(data + i * ETH_GSTRING_LEN, venet_sig_names,
	       sizeof(venet_sig_names));
}

/* The signal counters are bumped racily by design (vbus_stat_inc). */
static void venet_get_sig_stats(struct venet_priv *priv, u64 *data)
{
	memset(data, 0, VENET_NSIGSTATS * sizeof(*data));
	if (!priv->rxq || !priv->txq)	/* probe failed half-way */
		return;
	data[VENET_SIG_RX_SENT] = READ_ONCE(priv->rxq->signal->injects);
	data[VENET_SIG_RX_RECV] = READ_ONCE(priv->rxq->signal->wakeups);
	data[VENET_SIG_TX_SENT] = READ_ONCE(priv->txq->signal->injects);
	data[VENET_SIG_TX_RECV] = READ_ONCE(priv->txq->signal->wakeups);
}

static void venet_get_ethtool_stats(struct net_device *dev,
				    struct ethtool_stats *stats, u64 *data)
{
	struct venet_priv *priv = netdev_priv(dev);
	const struct u64_stats_sync *syncp;
	unsigned int start;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(venet_stats); i++) {
		const struct venet_stat *s = &venet_stats[i];
		const void *base;

		if (s->tx) {
			base = &priv->tx_stats;
			syncp = &priv->tx_stats.syncp;
		} else {
			base = &priv->rx_stats;
			syncp = &priv->rx_stats.syncp;
		}
		do {
			start = u64_stats_fetch_begin(syncp);
			data[i] = u64_stats_read(base + s->offset);
		} while (u64_stats_fetch_retry(syncp, start));
	}
	venet_get_sig_stats(priv, data + i);
}

const struct ethtool_ops venet_ethtool_ops = {
	.get_drvinfo		= venet_get_drvinfo,
	.get_link		= ethtool_op_get_link,
	.get_ringparam		= venet_get_ringparam,
	.get_sset_count		= venet_get_sset_count,
	.get_strings		= venet_get_strings,
	.get_ethtool_stats	= venet_get_ethtool_stats,
};
