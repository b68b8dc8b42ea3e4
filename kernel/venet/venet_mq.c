// SPDX-License-Identifier: GPL-2.0
/*
 * venet queue pairs (docs/devices/venet.md, "Queue pairs"): how many the
 * host grants (QUEUES), how many are active (SETACTIVE, ethtool -L), the
 * stack's queue counts that follow them, and XPS from the bridge's
 * per-queue vectors.
 *
 * The stack's tx queues are the active pairs: it sends only on those.
 * Its rx queues are every granted pair: the host may still complete a
 * frame on a pair that was just made inactive, and that frame's rx queue
 * index must stay valid (RPS).
 *
 * Everything here runs under RTNL.
 */
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>

#include "venet_drv.h"

/* QUEUES or SETACTIVE with @pairs; the call's result. *@out: pairs read back. */
static int venet_queues_call(struct venet_priv *priv, u32 func, u32 pairs,
			     u32 *out)
{
	struct venet_queues *qs;
	int ret;

	/* the bus hands the buffer to the host by physical address */
	qs = kzalloc(sizeof(*qs), GFP_KERNEL);
	if (!qs)
		return -ENOMEM;
	qs->pairs = pairs;
	ret = venet_devcall(priv, func, qs, sizeof(*qs));
	if (out)
		*out = READ_ONCE(qs->pairs);	/* host-written: read once */
	kfree(qs);
	return ret;
}

/*
 * QUEUES, after NEGCAP and before any ring: the pairs granted (1 without
 * asking when we want one; 1 from a host that fails the call, as an old
 * host answers -EINVAL), or -EPROTO when the host grants none or more
 * than asked (it does not follow the contract: no device).
 */
int venet_negqueues(struct venet_priv *priv)
{
	u32 want = priv->max_pairs, got = 0;
	int ret;

	if (want == 1)
		return 1;
	ret = venet_queues_call(priv, VENET_FUNC_QUEUES, want, &got);
	if (ret < 0) {
		dev_info(&priv->vdev->dev,
			 "QUEUES: %d (a host without queue pairs): one pair\n",
			 ret);
		return 1;
	}
	if (got < 1 || got > want) {
		dev_err(&priv->vdev->dev,
			"host granted %u queue pairs, we asked for %u\n", got,
			want);
		return -EPROTO;
	}
	return got;
}

/*
 * XPS: a CPU sends on the pair whose tx ring's completions interrupt it
 * (the ring's per-queue vector's managed affinity: docs/transport.md,
 * "Per-queue vectors"). Pairs whose rings share a vector share its CPUs
 * (the stack then picks among them by flow hash); without vectors the
 * stack's flow hash alone spreads the flows. A failure (-ENOMEM) only
 * costs the hint.
 */
void venet_set_xps(struct venet_priv *priv)
{
	struct vbus_device_proxy *vdev = priv->vdev;
	const struct cpumask *mask;
	u32 p;

	if (!vdev->ops->queue_affinity || priv->detached)
		return;
	for (p = 0; p < priv->active; p++) {
		mask = vdev->ops->queue_affinity(vdev, VENET_QUEUE_TX_ID(p));
		if (mask)
			netif_set_xps_queue(priv->dev, mask, p);
	}
}

/*
 * After a (re)grant of priv->pairs: the active count where it still fits,
 * and the stack's queue counts. Detached or not registered (no xmit).
 */
int venet_queues_follow(struct venet_priv *priv)
{
	priv->active = min(priv->active, priv->pairs);
	if (!priv->active)
		priv->active = priv->pairs;
	return netif_set_real_num_queues(priv->dev, priv->active, priv->pairs);
}

/*
 * After DEVOPEN the host delivers to every granted pair: tell it the
 * active count ethtool -L set before the host restarted. A refusal
 * leaves it at all of them, and so the stack.
 */
void venet_reactivate(struct venet_priv *priv)
{
	int ret;

	if (priv->active < priv->pairs) {
		ret = venet_queues_call(priv, VENET_FUNC_SETACTIVE,
					priv->active, NULL);
		if (ret < 0) {
			netdev_warn(priv->dev,
				    "host refused SETACTIVE %u: %d, all %u pairs active\n",
				    priv->active, ret, priv->pairs);
			if (!netif_set_real_num_tx_queues(priv->dev,
							  priv->pairs))
				priv->active = priv->pairs;
		}
	}
	venet_set_xps(priv);
}

/*
 * ethtool -L combined @n, under traffic. Fewer: the stack stops sending
 * on the pairs first, then the host stops delivering to them; more: the
 * host first. Frames in flight on a pair made inactive are still reaped
 * by its NAPI (it keeps its rings). Detached: the stack only; reconnect
 * tells the new host (venet_reactivate()).
 */
int venet_set_active(struct venet_priv *priv, u32 n)
{
	struct net_device *dev = priv->dev;
	u32 old = priv->active;
	int ret;

	if (n < 1 || n > priv->pairs)
		return -EINVAL;
	if (n == old)
		return 0;
	if (venet_faulted(priv))
		return -EIO;

	if (n > old && !priv->detached) {
		ret = venet_queues_call(priv, VENET_FUNC_SETACTIVE, n, NULL);
		if (ret < 0)
			goto refused;
	}
	ret = netif_set_real_num_tx_queues(dev, n);
	if (ret) {
		if (n > old && !priv->detached)
			venet_queues_call(priv, VENET_FUNC_SETACTIVE, old, NULL);
		return ret;
	}
	if (n < old && !priv->detached) {
		ret = venet_queues_call(priv, VENET_FUNC_SETACTIVE, n, NULL);
		if (ret < 0) {
			/* back as it was: fewer queues never fails to grow again */
			netif_set_real_num_tx_queues(dev, old);
			goto refused;
		}
	}
	priv->active = n;
	venet_set_xps(priv);
	return 0;

refused:
	netdev_warn(dev, "host refused SETACTIVE %u: %d\n", n, ret);
	return ret;
}
