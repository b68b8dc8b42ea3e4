// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * venet: a streaming guest's tx doorbells held off (doorbell_mask_us=).
 *
 * Without it, a host that drains faster than the guest posts finds the
 * tx ring empty after almost every burst, unmasks and sleeps, and the
 * guest's next burst rings again: one doorbell (a VM exit, a host wakeup)
 * every few frames of a TCP stream. The poll window (tx_poll_us) avoids
 * that by spinning, which needs a host core to spare.
 *
 * The hold: a drained ring whose run (what it sent since it was last
 * found drained) is a stream's (VENET_TX_HOLD_BYTES: one GSO frame, or a burst of
 * full-size ones; or any frame while the pair receives a stream: its
 * ACKs; a request/response guest's small frame per round trip is never
 * held) stays masked, and a timer (the pair's hold; its callback is
 * venet_dev.c's) brings us back after doorbell_mask_us to look. A look
 * whose period brought a stream's run holds on; the guest, posting,
 * reaps the completions itself. A look that finds nothing signals the
 * completions not yet signalled (the guest may be waiting for them: a
 * socket at its TCP small-queue limit sends nothing until its skbs are
 * freed) and holds one more period, so the sends that signal releases
 * ring no doorbell either. Anything else (nothing, with nothing to
 * signal; a few small frames) ends the hold: we unmask and look again as
 * always (venet_tx.c). So a stream rings about once per idle gap, not
 * once per burst; a frame posted during a hold waits at most
 * doorbell_mask_us; the timer costs the host one wakeup per period and
 * the guest nothing.
 *
 * This file only decides; venet_tx.c acts on the answer (signals, sleeps
 * or stays masked), so the two call each other in one direction only.
 *
 * The held ring stays masked, which changes nothing of unmask-then-look:
 * the hold ends in venet_tx.c's unmask and look like any drain
 * (tests/model/shm_signal.pml -DUNMASK_LOOK: masked drains repeat any
 * number of times before the unmask).
 */
#include "venet_dev.h"

/*
 * Since the ring was last found drained: a stream's bytes (a
 * request/response guest sends one small frame per round trip, maybe
 * two), or frames while the pair receives a stream (rx_stream,
 * venet_rx_coalesce.c): that stream's ACKs. Only a stream of its own
 * bytes counts on the other side (tx_stream), so a hold for ACKs and a
 * coalescing for ACKs never keep each other going once the streams
 * ended (a request/response exchange after a transfer would).
 */
static bool stream_run(struct venet_pair *p)
{
	p->tx_stream = p->tx_run_bytes >= VENET_TX_HOLD_BYTES;
	return p->tx_stream || (p->tx_run && p->rx_stream);
}

/* whether the ring stays masked: a stream, or a hold that goes on */
static enum venet_tx_held hold_on(struct venet_pair *p)
{
	if (stream_run(p))
		return VENET_TX_HELD;
	if (!p->tx_held || p->tx_run || !p->tx_unsignalled)
		return VENET_TX_UNHELD;	/* not a stream (any more) */
	return VENET_TX_HELD_SIGNAL;	/* it may wait for them: one more */
}

enum venet_tx_held venet_tx_hold(struct venet_pair *p)
{
	enum venet_tx_held h = p->hold.fd >= 0 ? hold_on(p) : VENET_TX_UNHELD;

	if (h != VENET_TX_UNHELD &&
	    (p->hold.armed || hostd_timer_arm(&p->hold, p->v->mask_ns))) {
		p->tx_run = 0;
		p->tx_run_bytes = 0;
		p->tx_held = true;
		return h;
	}
	venet_tx_hold_stop(p);
	return VENET_TX_UNHELD;
}

void venet_tx_hold_stop(struct venet_pair *p)
{
	hostd_timer_cancel(&p->hold);
	p->tx_held = false;
	p->tx_stream = false;
	p->tx_run = 0;
	p->tx_run_bytes = 0;
}
