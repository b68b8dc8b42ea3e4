// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * venet: rx interrupts of a stream coalesced (rx_coalesce_us=), the host
 * side's ethtool rx-usecs.
 *
 * Without it, every rx batch the guest has not masked costs an
 * interrupt. A guest whose NAPI keeps up (one queue pair on one busy
 * vCPU) masks most of them itself; with a pair per vCPU each NAPI
 * finishes and unmasks between batches, and a host->guest TCP stream
 * took 8x the interrupts of one pair in the bench.
 *
 * The rule: a batch signals at once, as before. If it carried at least
 * VENET_RX_COALESCE_BYTES (a GSO frame, or a burst of full-size ones: a
 * stream, not a request's small frame, whose latency stays as it was),
 * or the pair's tx ring is held for a stream (venet_tx_hold.c: what
 * comes back now is that stream's ACKs), a period of rx_coalesce_us
 * starts: the batches within it
 * are published at once (the guest's NAPI, if running, takes them) but
 * not signalled, unless a quarter of the ring waits. When the period
 * ends (the pair's timer; its callback is venet_dev.c's) what waits is
 * signalled and another period starts; a period in which nothing came
 * ends the coalescing, and the next batch signals at once again. So a
 * frame of a stream waits at most rx_coalesce_us for its interrupt, and
 * a stream costs at most one interrupt per period and pair.
 *
 * Only the signal moves: each batch is still published with its own
 * valid-head store ([R2] in hostd_devq_hand_back()), and the guest's
 * unmask-then-look ([B1]/[B2], shm_signal.c) sees it whether or not a
 * signal follows.
 */
#include "venet_dev.h"

/* a batch that big starts a period; 0: this batch signals now */
bool venet_rx_coalesce(struct venet_pair *p, unsigned int n, __u64 bytes)
{
	if (!n || p->rxc.fd < 0)
		return false;
	if (p->rx_coalescing) {
		p->rx_unsignalled += n;
		p->rx_came = true;
		if (p->rx_unsignalled < p->rxq.size / 4)
			return true;
		p->rx_unsignalled = 0;	/* a quarter ring waits: now */
		return false;
	}
	if ((bytes >= VENET_RX_COALESCE_BYTES || p->tx_held) &&
	    hostd_timer_arm(&p->rxc, p->v->rx_coalesce_ns)) {
		p->rx_coalescing = true;
		p->rx_came = false;
	}
	return false;
}

/* The period ended: signal what waits and go on, or end if none came. */
bool venet_rx_coalesce_end(struct venet_pair *p)
{
	bool signal = p->rx_unsignalled > 0;

	p->rx_unsignalled = 0;
	if (p->rx_came && hostd_timer_arm(&p->rxc, p->v->rx_coalesce_ns))
		p->rx_came = false;
	else
		p->rx_coalescing = false;
	return signal;
}

void venet_rx_coalesce_stop(struct venet_pair *p)
{
	hostd_timer_cancel(&p->rxc);
	p->rx_coalescing = false;
	p->rx_came = false;
	p->rx_unsignalled = 0;
}
