// SPDX-License-Identifier: GPL-2.0
/*
 * venet - a paravirtual 802.x network device on the vbus: the guest
 * driver of the host's "venet" device (the 2009 "virtual-ethernet").
 *
 * Derived from the AlacrityVM venet driver (Gregory Haskins, Novell, 2009),
 * ported to Linux 6.1 and to IOQ ring version 5. The wire contract with
 * the host is docs/devices/venet.md.
 *
 * Queue pairs (docs/devices/venet.md, "Queue pairs"): after NEGCAP the
 * driver asks the host for `queues` pairs (default: one per online CPU)
 * with QUEUES; an old host's -EINVAL means one pair, exactly the
 * single-queue device. Pair p has an rx ring (DEVSHM 2p), a tx ring
 * (2p + 1) and the stack's tx/rx queue p. ethtool -L changes how many
 * are active (SETACTIVE); every granted pair keeps its rings and NAPI so
 * frames in flight on one made inactive are still reaped.
 *
 * One NAPI context per pair serves both its rings: a signal on either
 * masks both and schedules the poll; the poll reaps tx completions,
 * receives up to its budget, and when it completes unmasks both and
 * re-checks both rings (docs/design.md, "Signals: unmask, then look
 * again": a signal that races the completion is otherwise lost).
 *
 * Nothing the host writes can make the driver crash: lengths are checked
 * against the guest's own records, skbs are found by slot index (never by
 * the host-writable cookie), and a ring whose indexes make no sense
 * faults the device (carrier off, traffic dropped) until it is removed.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/rcupdate.h>
#include <linux/interrupt.h>

#include "venet_drv.h"

static int rx_ringlen = 256;
module_param(rx_ringlen, int, 0444);
MODULE_PARM_DESC(rx_ringlen, "rx ring descriptors (power of two, 2..4096)");

static int tx_ringlen = 256;
module_param(tx_ringlen, int, 0444);
MODULE_PARM_DESC(tx_ringlen, "tx ring descriptors (power of two, 2..4096)");

static int queues;
module_param(queues, int, 0444);
MODULE_PARM_DESC(queues,
		 "queue pairs to ask the host for (0: one per online CPU, the default; at most "
		 __stringify(VENET_MAX_QUEUE_PAIRS) ")");

static bool sg_enabled = true;
module_param(sg_enabled, bool, 0444);
MODULE_PARM_DESC(sg_enabled,
		 "request scatter-gather/checksum/TSO offload from the host");

#define VENET_MAX_RINGLEN 4096

int venet_devcall(struct venet_priv *priv, u32 func, void *data,
			 size_t len)
{
	struct vbus_device_proxy *vdev = priv->vdev;

	return vdev->ops->call(vdev, func, data, len, 0);
}

/*
 * The host corrupted a ring (or the ring layer reported it faulted): stop
 * using the device. Any context.
 */
void venet_fault(struct venet_priv *priv, const char *why)
{
	if (test_and_set_bit(0, &priv->faulted))
		return;
	netdev_err(priv->dev, "ring fault (%s): device disabled until removed\n",
		   why);
	netif_carrier_off(priv->dev);
	netif_tx_stop_all_queues(priv->dev);
}

/*
 * Mask both rings of the pair and schedule its poll, unless it is already
 * scheduled (then NAPI notes the miss and polls again) or disabled.
 */
static void venet_schedule(struct venet_queue *q)
{
	if (napi_schedule_prep(&q->napi)) {
		/*
		 * Masking is only an optimisation: a late mask costs one
		 * spurious signal. The poll unmasks both when it completes.
		 */
		ioq_notify_disable(q->rxq, 0);
		ioq_notify_disable(q->txq, 0);
		__napi_schedule(&q->napi);
	}
}

/*
 * Signal from the host on either ring of a pair. The bus may call this
 * from a hard or soft interrupt or from a work item; from task context,
 * bracket the schedule with a BH-disabled section so the NET_RX softirq
 * runs at local_bh_enable() instead of waiting for the next interrupt.
 */
static void venet_notify(struct venet_queue *q)
{
	if (in_interrupt() || irqs_disabled()) {
		venet_schedule(q);
	} else {
		local_bh_disable();
		venet_schedule(q);
		local_bh_enable();
	}
}

static void venet_rx_signal(struct ioq_notifier *n)
{
	venet_notify(container_of(n, struct venet_queue, rx_notifier));
}

static void venet_tx_signal(struct ioq_notifier *n)
{
	venet_notify(container_of(n, struct venet_queue, tx_notifier));
}

static int venet_poll(struct napi_struct *napi, int budget)
{
	struct venet_queue *q = container_of(napi, struct venet_queue, napi);
	struct venet_priv *priv = q->priv;
	int done = 0;
	u32 rx_snap;

	/* the ring layer faults a signal whose indexes the host corrupted */
	if (shm_signal_faulted(q->rxq->signal) ||
	    shm_signal_faulted(q->txq->signal))
		venet_fault(priv, "ring index out of range");

	venet_tx_reap(q);
	if (budget)	/* budget 0 is netpoll: tx only */
		done = venet_rx_poll(q, budget);

	/*
	 * Where the rx reaper got to, taken while this poll still owns it:
	 * once napi_complete_done() returned, another CPU's poll may be
	 * reaping, and the look-again below only compares (read-only).
	 */
	rx_snap = ioq_reap_snapshot(q->rxq);
	if (done < budget && napi_complete_done(napi, done) &&
	    !venet_faulted(priv)) {
		/* tx completions interrupt only when we wait on them */
		bool tx_on = venet_tx_wants_signal(q);

		ioq_notify_enable(q->rxq, 0);
		if (tx_on)
			ioq_notify_enable(q->txq, 0);
		/*
		 * docs/design.md, "Signals: unmask, then look again": re-check
		 * after unmasking. The host may have completed descriptors
		 * after our last look and signalled while we were masked
		 * (or while NAPI was still marked scheduled).
		 * shm_signal_enable() issues a full
		 * barrier after storing enabled=1 ([B2]), so the ring loads
		 * below cannot be satisfied before that store; it pairs with
		 * the full barrier after dirty=1 in the host's inject ([B1]):
		 * either the host sees enabled=1 and signals, or we see its
		 * pop here. rx: ioq_reap_poll() against the snapshot, which
		 * writes no ring state; tx: under txlock.
		 */
		if (ioq_reap_poll(q->rxq, rx_snap) ||
		    (tx_on && venet_tx_pending(q)))
			venet_schedule(q);
	}

	return done;
}

void venet_kick(struct venet_queue *q)
{
	local_bh_disable();
	venet_schedule(q);
	local_bh_enable();
}

static void venet_napi_enable_all(struct venet_priv *priv)
{
	struct venet_queue *q;

	venet_for_each_pair(priv, q)
		napi_enable(&q->napi);
}

static void venet_napi_disable_all(struct venet_priv *priv)
{
	struct venet_queue *q;

	venet_for_each_pair(priv, q)
		napi_disable(&q->napi);
}

static void venet_kick_all(struct venet_priv *priv)
{
	struct venet_queue *q;

	venet_for_each_pair(priv, q)
		venet_kick(q);
}

static void venet_napi_del_all(struct venet_priv *priv)
{
	u32 i;

	for (i = 0; i < priv->max_pairs; i++)
		netif_napi_del(&priv->queues[i].napi);
}

static void venet_tx_timers_stop(struct venet_priv *priv)
{
	u32 i;

	for (i = 0; i < priv->max_pairs; i++)
		del_timer_sync(&priv->queues[i].tx_timer);
}

static int venet_open(struct net_device *dev)
{
	struct venet_priv *priv = netdev_priv(dev);
	int ret;

	if (venet_faulted(priv))
		return -EIO;
	/* the host is away: reconnect brings the link up */
	if (priv->detached)
		return 0;

	venet_napi_enable_all(priv);

	ret = venet_devcall(priv, VENET_FUNC_LINKUP, NULL, 0);
	if (ret < 0) {
		netdev_err(dev, "host refused LINKUP: %d\n", ret);
		venet_napi_disable_all(priv);
		return ret;
	}
	priv->link_up = true;

	netif_carrier_on(dev);
	netif_tx_start_all_queues(dev);

	/* reap and refill whatever happened while we were down */
	venet_kick_all(priv);
	return 0;
}

static int venet_stop(struct net_device *dev)
{
	struct venet_priv *priv = netdev_priv(dev);
	struct venet_queue *q;
	int ret;

	netif_tx_disable(dev);
	/* no xmit runs now to arm them again; a poll they schedule is moot */
	venet_tx_timers_stop(priv);
	if (priv->detached) {
		/* disconnect already stopped NAPI and freed the rings */
		netif_carrier_off(dev);
		return 0;
	}
	venet_napi_disable_all(priv);
	/* not _sync: the work takes RTNL, which we hold; it re-checks state */
	cancel_delayed_work(&priv->refill);

	if (priv->link_up) {
		ret = venet_devcall(priv, VENET_FUNC_LINKDOWN, NULL, 0);
		/* -ENODEV: the host dropped the device, its link with it */
		if (ret < 0 && ret != -ENODEV)
			netdev_warn(dev, "host refused LINKDOWN: %d\n", ret);
		priv->link_up = false;
	}
	netif_carrier_off(dev);

	/* free what the host has already completed; the rest at open/remove */
	venet_for_each_pair(priv, q)
		venet_tx_reap(q);
	return 0;
}

/*
 * New MTU: the posted rx buffers have the old size. FLUSHRX makes the
 * host hand every one back (every pair's) with length 0; we reap them and
 * post buffers of the new size. NAPI is off meanwhile so nothing posts an
 * old-size buffer behind the flush. If the host refuses, the old buffers
 * are used up first (a frame too big for one is dropped by the host) and
 * replaced as they come back.
 */
static int venet_change_mtu(struct net_device *dev, int new_mtu)
{
	struct venet_priv *priv = netdev_priv(dev);
	bool running = netif_running(dev);
	struct venet_queue *q;
	bool refill = false;
	int ret;

	if (priv->detached) {
		/* no buffers posted: reconnect posts the new size */
		WRITE_ONCE(dev->mtu, new_mtu);
		priv->rx_bufsize = venet_rx_bufsize(new_mtu);
		return 0;
	}
	if (running)
		venet_napi_disable_all(priv);

	WRITE_ONCE(dev->mtu, new_mtu);
	priv->rx_bufsize = venet_rx_bufsize(new_mtu);

	if (!venet_faulted(priv)) {
		ret = venet_devcall(priv, VENET_FUNC_FLUSHRX, NULL, 0);
		if (ret < 0)
			netdev_warn(dev, "host refused FLUSHRX: %d\n", ret);
		venet_for_each_pair(priv, q) {
			venet_rx_drain(q);
			if (venet_rx_fill(q, GFP_KERNEL) == -ENOMEM)
				refill = true;
		}
		if (refill)
			schedule_delayed_work(&priv->refill, HZ / 10);
	}

	if (running) {
		venet_napi_enable_all(priv);
		venet_kick_all(priv);
	}
	return 0;
}

/* Every pair that ever had rings: a later smaller grant keeps their counts. */
static void venet_get_stats64(struct net_device *dev,
			      struct rtnl_link_stats64 *stats)
{
	struct venet_priv *priv = netdev_priv(dev);
	unsigned int start;
	u32 i;

	for (i = 0; i < priv->max_pairs; i++) {
		const struct venet_rx_stats *rx = &priv->queues[i].rx_stats;
		const struct venet_tx_stats *tx = &priv->queues[i].tx_stats;
		u64 packets, bytes, length_errors, bad_offload, dropped;
		u64 tpackets, tbytes, terrors, tdropped;

		do {
			start = u64_stats_fetch_begin(&rx->syncp);
			packets = u64_stats_read(&rx->packets);
			bytes = u64_stats_read(&rx->bytes);
			length_errors = u64_stats_read(&rx->length_errors);
			bad_offload = u64_stats_read(&rx->bad_offload);
			dropped = u64_stats_read(&rx->dropped) +
				  u64_stats_read(&rx->alloc_failed);
		} while (u64_stats_fetch_retry(&rx->syncp, start));
		stats->rx_packets += packets;
		stats->rx_bytes += bytes;
		stats->rx_length_errors += length_errors;
		stats->rx_errors += length_errors + bad_offload;
		stats->rx_dropped += dropped;

		do {
			start = u64_stats_fetch_begin(&tx->syncp);
			tpackets = u64_stats_read(&tx->packets);
			tbytes = u64_stats_read(&tx->bytes);
			terrors = u64_stats_read(&tx->errors);
			tdropped = u64_stats_read(&tx->dropped);
		} while (u64_stats_fetch_retry(&tx->syncp, start));
		stats->tx_packets += tpackets;
		stats->tx_bytes += tbytes;
		stats->tx_errors += terrors;
		stats->tx_dropped += tdropped;
	}
}

static const struct net_device_ops venet_netdev_ops = {
	.ndo_open		= venet_open,
	.ndo_stop		= venet_stop,
	.ndo_start_xmit		= venet_start_xmit,
	.ndo_change_mtu		= venet_change_mtu,
	.ndo_tx_timeout		= venet_tx_timeout,
	.ndo_get_stats64	= venet_get_stats64,
	.ndo_validate_addr	= eth_validate_addr,
};

/*
 * Ask for SG/checksum/TSO when sg_enabled; the host answers with the bits
 * it accepts, which decide the tx descriptor format for this open. A host
 * that fails the call gets the plain format.
 */
static void venet_negcap(struct venet_priv *priv)
{
	struct venet_capabilities *caps;
	u32 want = 0, got;
	int ret;

	if (sg_enabled)
		/* no UFO: the stack no longer produces it (and never did safely) */
		want = VENET_CAP_SG | VENET_CAP_TSO4 | VENET_CAP_TSO6 |
		       VENET_CAP_ECN | VENET_CAP_RXSG;

	/* the bus hands the buffer to the host by physical address */
	caps = kzalloc(sizeof(*caps), GFP_KERNEL);
	if (!caps)
		return;
	caps->gid = VENET_CAP_GROUP_SG;
	caps->bits = want;

	ret = venet_devcall(priv, VENET_FUNC_NEGCAP, caps, sizeof(*caps));
	got = ret < 0 ? 0 : caps->bits & want;	/* never more than asked */
	kfree(caps);

	if (ret < 0)
		dev_warn(&priv->vdev->dev, "NEGCAP failed (%d): no offloads\n",
			 ret);

	if (got & VENET_CAP_SG) {
		priv->caps.sg = true;
		priv->caps.tso4 = !!(got & VENET_CAP_TSO4);
		priv->caps.tso6 = !!(got & VENET_CAP_TSO6);
		/* ECN only qualifies TSO */
		priv->caps.ecn = !!(got & VENET_CAP_ECN) &&
				 (priv->caps.tso4 || priv->caps.tso6);
		/* rx offload rides on the venet_sg format as well */
		priv->caps.rxsg = !!(got & VENET_CAP_RXSG);
	}

	dev_info(&priv->vdev->dev, "capabilities: %s%s%s%s%s\n",
		 priv->caps.sg ? "sg" : "plain",
		 priv->caps.tso4 ? " tso4" : "",
		 priv->caps.tso6 ? " tso6" : "",
		 priv->caps.ecn ? " ecn" : "",
		 priv->caps.rxsg ? " rxsg" : "");
}

static void venet_macquery(struct venet_priv *priv)
{
	struct net_device *dev = priv->dev;
	u8 *mac;
	int ret = -ENOMEM;

	mac = kzalloc(ETH_ALEN, GFP_KERNEL);
	if (mac)
		ret = venet_devcall(priv, VENET_FUNC_MACQUERY, mac,
				    ETH_ALEN);

	if (ret >= 0 && is_valid_ether_addr(mac)) {
		eth_hw_addr_set(dev, mac);
	} else {
		eth_hw_addr_random(dev);
		dev_warn(&priv->vdev->dev,
			 "no valid MAC from the host (%d): using %pM\n", ret,
			 dev->dev_addr);
	}
	kfree(mac);
}

static void venet_set_features(struct venet_priv *priv)
{
	struct net_device *dev = priv->dev;
	netdev_features_t hw = 0;

	/* we hand the host physical addresses: any memory will do */
	dev->features |= NETIF_F_HIGHDMA;

	if (priv->caps.sg) {
		/* the host is told csum start/offset: generic HW_CSUM */
		hw |= NETIF_F_SG | NETIF_F_HW_CSUM;
		if (priv->caps.tso4)
			hw |= NETIF_F_TSO;
		if (priv->caps.tso6)
			hw |= NETIF_F_TSO6;
		if (priv->caps.ecn)
			hw |= NETIF_F_TSO_ECN;
	}

	dev->hw_features |= hw;
	dev->features |= hw;
	dev->vlan_features |= hw;
}

static int venet_queue_init(struct venet_priv *priv, int qid,
			    u32 count, struct ioq **ioqp,
			    struct ioq_notifier *notifier,
			    void (*fn)(struct ioq_notifier *))
{
	int ret;

	ret = vbus_driver_ioq_alloc(priv->vdev, qid, 0, count, ioqp);
	if (ret < 0)
		return ret;

	notifier->signal = fn;
	(*ioqp)->notifier = notifier;
	return 0;
}

/* Mask every registered ring's signal (before close or free). */
static void venet_mask_all(struct venet_priv *priv)
{
	struct venet_queue *q;

	venet_for_each_pair(priv, q) {
		if (q->rxq)
			ioq_notify_disable(q->rxq, 0);
		if (q->txq)
			ioq_notify_disable(q->txq, 0);
	}
}

/* One pair's half of venet_free_rings(), after the RCU grace period. */
static void venet_free_pair(struct venet_queue *q, bool closed)
{
	if (!closed) {
		kvfree(q->rx_slots);
		q->rx_slots = NULL;
		return;
	}

	if (q->rx_slots)
		venet_rx_free_all(q);
	kvfree(q->rx_slots);
	q->rx_slots = NULL;
	venet_tx_teardown(q);

	if (q->rxq)
		ioq_put(q->rxq);
	if (q->txq)
		ioq_put(q->txq);
	q->rxq = NULL;
	q->txq = NULL;
}

/*
 * Undo the ring side of probe, for every pair. @closed: the host has
 * answered DEVCLOSE, so it no longer touches the buffers. Without that
 * answer the host may still write into rx buffers or read tx frames;
 * freeing them could corrupt whatever reuses the memory, so they are
 * leaked instead (with a log).
 */
static void venet_free_rings(struct venet_priv *priv, bool closed)
{
	struct venet_queue *q;

	venet_for_each_pair(priv, q) {
		if (q->rxq)
			WRITE_ONCE(q->rxq->notifier, NULL);
		if (q->txq)
			WRITE_ONCE(q->txq->notifier, NULL);
	}
	/*
	 * A notifier already running from an interrupt or softirq (an RCU
	 * read-side section) finishes before priv goes away.
	 */
	synchronize_rcu();

	if (!closed)
		dev_err(&priv->vdev->dev,
			"host did not close the device: leaking its buffers\n");
	venet_for_each_pair(priv, q)
		venet_free_pair(q, closed);
}

/* Close the host device; true when the host confirmed it. */
static bool venet_close_vdev(struct venet_priv *priv)
{
	int ret = priv->vdev->ops->close(priv->vdev, 0);

	if (ret < 0)
		dev_warn(&priv->vdev->dev, "DEVCLOSE failed: %d\n", ret);
	/*
	 * Only a timeout leaves the host possibly still running; any answer
	 * (even an error such as -ENODEV for a device it already dropped)
	 * means it has let go.
	 */
	return ret != -ETIMEDOUT;
}

/* What probe and reconnect do when they give up on the rings. */
static void venet_drop_rings(struct venet_priv *priv)
{
	venet_mask_all(priv);
	venet_free_rings(priv, venet_close_vdev(priv));
}

/* The pairs to ask for: the module parameter, or one per online CPU. */
static u32 venet_wanted_pairs(void)
{
	u32 n = queues ? (u32)queues : num_online_cpus();

	return clamp_t(u32, n, 1, VENET_MAX_QUEUE_PAIRS);
}

static struct net_device *venet_alloc(struct vbus_device_proxy *vdev)
{
	u32 i, max = venet_wanted_pairs();
	struct venet_priv *priv;
	struct net_device *dev;

	dev = alloc_etherdev_mqs(struct_size(priv, queues, max), max, max);
	if (!dev)
		return NULL;
	SET_NETDEV_DEV(dev, &vdev->dev);

	priv = netdev_priv(dev);
	priv->dev = dev;
	priv->vdev = vdev;
	priv->max_pairs = max;
	INIT_DELAYED_WORK(&priv->refill, venet_refill_work);
	priv->rx_count = rx_ringlen;
	priv->tx_count = tx_ringlen;
	for (i = 0; i < max; i++) {
		struct venet_queue *q = &priv->queues[i];

		q->priv = priv;
		q->index = i;
		q->txnq = netdev_get_tx_queue(dev, i);
		spin_lock_init(&q->txlock);
		timer_setup(&q->tx_timer, venet_tx_timer, 0);
		u64_stats_init(&q->rx_stats.syncp);
		u64_stats_init(&q->tx_stats.syncp);
	}
	return dev;
}

/* The netdev side, once the host told us its capabilities and MAC. */
static void venet_netdev_setup(struct venet_priv *priv)
{
	struct net_device *dev = priv->dev;
	u32 i;

	dev->netdev_ops = &venet_netdev_ops;
	dev->ethtool_ops = &venet_ethtool_ops;
	dev->watchdog_timeo = 5 * HZ;
	dev->min_mtu = ETH_MIN_MTU;
	dev->max_mtu = VENET_MAX_MTU;
	priv->rx_bufsize = venet_rx_bufsize(dev->mtu);
	venet_set_features(priv);

	/* all of them: a reconnect may grant more pairs than probe did */
	for (i = 0; i < priv->max_pairs; i++)
		netif_napi_add(dev, &priv->queues[i].napi, venet_poll);
}

/* One pair's slots, both its rings registered with the host, rx posted. */
static int venet_pair_setup(struct venet_queue *q)
{
	struct venet_priv *priv = q->priv;
	int ret;

	ret = venet_rx_setup(q);
	if (ret)
		return ret;
	ret = venet_tx_setup(q);
	if (ret)
		return ret;

	ret = venet_queue_init(priv, VENET_QUEUE_RX_ID(q->index),
			       priv->rx_count, &q->rxq, &q->rx_notifier,
			       venet_rx_signal);
	if (ret)
		return ret;
	ret = venet_queue_init(priv, VENET_QUEUE_TX_ID(q->index),
			       priv->tx_count, &q->txq, &q->tx_notifier,
			       venet_tx_signal);
	if (ret)
		return ret;

	ret = venet_rx_fill(q, GFP_KERNEL);
	if (ret < 0)
		return ret;

	/*
	 * NAPI is disabled until open: signals before then are no-ops. tx
	 * follows the poll's rule (venet_tx_wants_signal): on by default, masked
	 * with tx_complete_irq=0 until we wait on completions.
	 */
	ioq_notify_enable(q->rxq, 0);
	if (venet_tx_wants_signal(q))
		ioq_notify_enable(q->txq, 0);
	return 0;
}

/* Every granted pair's rings; on error the caller drops what was made. */
static int venet_rings_setup(struct venet_priv *priv)
{
	struct venet_queue *q;
	int ret;

	venet_for_each_pair(priv, q) {
		ret = venet_pair_setup(q);
		if (ret)
			return ret;
	}
	return 0;
}

static int venet_probe(struct vbus_device_proxy *vdev)
{
	struct venet_priv *priv;
	struct net_device *dev;
	int ret;

	dev = venet_alloc(vdev);
	if (!dev)
		return -ENOMEM;
	priv = netdev_priv(dev);

	ret = vdev->ops->open(vdev, VENET_VERSION, 0);
	if (ret < 0) {
		dev_err(&vdev->dev, "DEVOPEN failed: %d\n", ret);
		goto out_free_netdev;
	}

	venet_negcap(priv);
	ret = venet_negqueues(priv);
	if (ret < 0)
		goto out_close;
	priv->pairs = ret;
	priv->active = ret;
	venet_macquery(priv);
	venet_netdev_setup(priv);
	/* not registered yet: only an invalid count fails, and it is not */
	ret = netif_set_real_num_queues(dev, priv->active, priv->pairs);
	if (ret)
		goto out_close;

	ret = venet_rings_setup(priv);
	if (ret)
		goto out_close;

	netif_carrier_off(dev);

	vdev->priv = priv;
	ret = register_netdev(dev);
	if (ret) {
		dev_err(&vdev->dev, "register_netdev failed: %d\n", ret);
		vdev->priv = NULL;
		goto out_close;
	}
	rtnl_lock();
	venet_set_xps(priv);
	rtnl_unlock();

	netdev_info(dev, "vbus device %llu, MAC %pM, %u queue pairs, rings rx %u tx %u\n",
		    vdev->id, dev->dev_addr, priv->pairs, priv->rx_count,
		    priv->tx_count);
	return 0;

out_close:
	venet_drop_rings(priv);
	venet_napi_del_all(priv);
out_free_netdev:
	free_netdev(dev);
	return ret;
}

static int venet_remove(struct vbus_device_proxy *vdev)
{
	struct venet_priv *priv = vdev->priv;
	struct net_device *dev;

	if (!priv)
		return 0;
	dev = priv->dev;

	/* stops traffic: ndo_stop disables NAPI and sends LINKDOWN */
	unregister_netdev(dev);
	venet_tx_timers_stop(priv);	/* ndo_stop did; never opened */
	cancel_delayed_work_sync(&priv->refill);

	/* detached: disconnect closed the device and freed the rings */
	if (!priv->detached)
		venet_drop_rings(priv);
	venet_napi_del_all(priv);

	vdev->priv = NULL;
	free_netdev(dev);
	return 0;
}

/*
 * Host restarts (docs/transport.md, "Host restarts"). The netdev, its
 * addresses and its up/down state survive; only the host side goes.
 * Frames the old host had taken from the tx rings without completing
 * them are freed here, lost (TCP retransmits); rx buffers are freed and
 * posted anew at reconnect.
 */
/*
 * Under RTNL: stop, let go of the host (close: the bus answers it
 * without asking a host that forgot the device) and free the rings.
 */
static void venet_detach(struct venet_priv *priv)
{
	struct net_device *dev = priv->dev;

	netif_carrier_off(dev);
	if (netif_running(dev)) {
		netif_tx_disable(dev);
		venet_napi_disable_all(priv);
	}
	/* not _sync: the work takes RTNL; it sees detached and returns */
	cancel_delayed_work(&priv->refill);
	priv->link_up = false;
	/* xmit reads it without RTNL; netif_tx_disable flushed any in flight */
	WRITE_ONCE(priv->detached, true);
	venet_drop_rings(priv);
}

static void venet_disconnect(struct vbus_device_proxy *vdev)
{
	struct venet_priv *priv = vdev->priv;

	if (!priv)
		return;
	rtnl_lock();
	if (!priv->detached) {
		venet_detach(priv);
		netdev_info(priv->dev, "host gone: carrier off until it is back\n");
	}
	rtnl_unlock();
}

/*
 * The rings as at probe, with the capabilities the netdev was made for.
 * The new host may grant another number of pairs (its queues=): the
 * stack's queues follow; the active count is kept where it still fits.
 * Under RTNL, detached (every NAPI disabled, tx stopped).
 */
static int venet_reopen(struct venet_priv *priv)
{
	struct vbus_device_proxy *vdev = priv->vdev;
	typeof(priv->caps) caps = priv->caps;
	int ret;

	ret = vdev->ops->open(vdev, VENET_VERSION, 0);
	if (ret < 0)
		return ret;
	memset(&priv->caps, 0, sizeof(priv->caps));
	venet_negcap(priv);
	if (memcmp(&caps, &priv->caps, sizeof(caps))) {
		/* other offloads: only a new netdev can say so */
		priv->caps = caps;
		ret = -EPROTO;
	}
	if (!ret)
		ret = venet_negqueues(priv);
	if (ret > 0) {
		WRITE_ONCE(priv->pairs, ret);
		ret = venet_queues_follow(priv);
	}
	if (!ret)
		ret = venet_rings_setup(priv);
	if (!ret)
		clear_bit(0, &priv->faulted);	/* that was the old host's ring */
	if (ret)
		venet_drop_rings(priv);
	return ret;
}

static int venet_reconnect(struct vbus_device_proxy *vdev)
{
	struct venet_priv *priv = vdev->priv;
	struct net_device *dev;
	int ret;

	if (!priv)
		return -ENODEV;
	dev = priv->dev;
	rtnl_lock();
	ret = priv->detached ? venet_reopen(priv) : -EINVAL;
	if (ret) {
		rtnl_unlock();
		netdev_warn(dev, "cannot reconnect to the host: %d\n", ret);
		return ret;
	}
	WRITE_ONCE(priv->detached, false);
	venet_reactivate(priv);
	if (netif_running(dev)) {
		venet_napi_enable_all(priv);
		ret = venet_devcall(priv, VENET_FUNC_LINKUP, NULL, 0);
		if (ret < 0) {
			/* back to waiting; the bus decides what next */
			venet_detach(priv);
			rtnl_unlock();
			netdev_warn(dev, "host refused LINKUP: %d\n", ret);
			return ret;
		}
		priv->link_up = true;
		netif_carrier_on(dev);
		netif_tx_wake_all_queues(dev);
		venet_kick_all(priv);
	}
	rtnl_unlock();
	netdev_info(dev, "host back: reconnected, %u queue pairs\n",
		    priv->pairs);
	return 0;
}

static struct vbus_driver_ops venet_driver_ops = {
	.probe		= venet_probe,
	.remove		= venet_remove,
	.disconnect	= venet_disconnect,
	.reconnect	= venet_reconnect,
};

static struct vbus_driver venet_driver = {
	.type	= VENET_TYPE,
	.owner	= THIS_MODULE,
	.ops	= &venet_driver_ops,
	/* a pair's rx and tx ring on one vector: the pair completes on one CPU */
	.shms_per_queue = 2,
};

static bool venet_ringlen_ok(const char *name, int len)
{
	if (len >= 2 && len <= VENET_MAX_RINGLEN &&
	    is_power_of_2((unsigned int)len))
		return true;
	pr_err(VENET_DRV_NAME ": %s=%d: must be a power of two, 2..%d\n",
	       name, len, VENET_MAX_RINGLEN);
	return false;
}

static int __init venet_init(void)
{
	if (queues < 0 || queues > VENET_MAX_QUEUE_PAIRS) {
		pr_err(VENET_DRV_NAME ": queues=%d: must be 0 (one per online CPU) or 1..%d\n",
		       queues, VENET_MAX_QUEUE_PAIRS);
		return -EINVAL;
	}
	if (!venet_ringlen_ok("rx_ringlen", rx_ringlen) ||
	    !venet_ringlen_ok("tx_ringlen", tx_ringlen))
		return -EINVAL;

	return vbus_driver_register(&venet_driver);
}

static void __exit venet_exit(void)
{
	vbus_driver_unregister(&venet_driver);
}

module_init(venet_init);
module_exit(venet_exit);

MODULE_DESCRIPTION("vbus venet (virtual-ethernet) driver");
MODULE_AUTHOR("Gregory Haskins (original venet driver)");
MODULE_LICENSE("GPL");
MODULE_VERSION(VENET_DRV_VERSION);
/* the bus's uevent sets MODALIAS=vbus:<type> */
MODULE_ALIAS("vbus:" VENET_TYPE);
/* the 2009 series built this driver as vbus-enet.ko: modprobe vbus_enet */
MODULE_ALIAS("vbus_enet");
