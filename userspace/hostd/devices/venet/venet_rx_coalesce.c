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
 * or the pair's tx ring is held for a stream of its own bytes
 * (tx_stream, venet_tx_hold.c: what comes back now is that stream's
 * ACKs), a period of rx_coalesce_us starts: the batches within it are
 * published at once (the guest's NAPI, if running, takes them) but not
 * signalled, unless a quarter of the ring waits. When the period ends
 * (the pair's timer; its callback is venet_dev.c's) what waits is
 * signalled, and another period starts if this one was a stream's by
 * the same rule (its bytes, or ACKs of a tx stream). Otherwise the
 * coalescing ends and the next batch signals at once again: a
 * request/response exchange after a transfer is back to an interrupt
 * per frame within a period. So a frame of a stream waits at most
 * rx_coalesce_us for its interrupt, and a stream costs at most one
 * interrupt per period and pair. Only a period of a stream of its own
 * bytes (rx_stream) makes the tx side hold ACKs, and only a hold for
 * the tx side's own bytes makes this side coalesce them: an ACK hold and
 * an ACK coalescing never keep each other going.
 *
 * Only the signal moves: each batch is still published with its own
 * valid-head store ([R2] in hostd_devq_hand_back()), and the guest's
 * unmask-then-look ([B1]/[B2], shm_signal.c) sees it whether or not a
 * signal follows.
 */
#include "venet_dev.h"

/* a stream's bytes, or ACKs of the pair's own tx stream (tx_stream) */
static bool stream_batch(const struct venet_pair *p, __u64 bytes)
{
	return bytes >= VENET_RX_COALESCE_BYTES || p->tx_stream;
}

/* Whether this batch's signal waits for the period's end (true). */
bool venet_rx_coalesce(struct venet_pair *p, unsigned int n, __u64 bytes)
{
	if (!n || p->rxc.fd < 0)
		return false;
	if (p->rx_coalescing) {
		p->rx_unsignalled += n;
		p->rx_period_bytes += bytes;
		p->rx_came = true;
		if (p->rx_unsignalled < p->rxq.size / 4)
			return true;
		p->rx_unsignalled = 0;	/* a quarter ring waits: now */
		return false;
	}
	if (stream_batch(p, bytes) &&
	    hostd_timer_arm(&p->rxc, p->v->rx_coalesce_ns)) {
		p->rx_coalescing = true;
		p->rx_stream = bytes >= VENET_RX_COALESCE_BYTES;
		p->rx_came = false;
		p->rx_period_bytes = 0;
	}
	return false;	/* this batch signals now */
}

/*
 * The period ended: whether to signal what waits. The next period runs
 * while this one brought a stream's bytes, or ACKs of the pair's own tx
 * stream; else coalescing ends (the next batch signals at once).
 */
bool venet_rx_coalesce_end(struct venet_pair *p)
{
	bool signal = p->rx_unsignalled > 0;
	bool go_on = p->rx_came && stream_batch(p, p->rx_period_bytes);

	p->rx_unsignalled = 0;
	p->rx_stream = p->rx_period_bytes >= VENET_RX_COALESCE_BYTES;
	p->rx_came = false;
	p->rx_period_bytes = 0;
	if (!go_on || !hostd_timer_arm(&p->rxc, p->v->rx_coalesce_ns)) {
		p->rx_coalescing = false;
		p->rx_stream = false;
	}
	return signal;
}

void venet_rx_coalesce_stop(struct venet_pair *p)
{
	hostd_timer_cancel(&p->rxc);
	p->rx_coalescing = false;
	p->rx_stream = false;
	p->rx_came = false;
	p->rx_period_bytes = 0;
	p->rx_unsignalled = 0;
}
