/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * venet, the host side: the device's state, shared by its files, in the
 * order they use each other (none calls up):
 *
 *   venet_dev.c    the ops (create .. stats), params, the kick's
 *                  callback, opening the backend
 *   venet_pairs.c  queue pairs: QUEUES, SETACTIVE, the tap queue each
 *                  pair reads (its fd callback) and writes
 *   venet_rx.c     tap -> guest
 *   venet_rx_coalesce.c  whether a stream's rx batch waits for its
 *                  interrupt (rx_coalesce_us)
 *   venet_tx.c     guest -> tap
 *   venet_tx_hold.c  whether a streaming guest's drained tx ring stays
 *                  masked (doorbell_mask_us)
 *   venet_state.c  what both directions share: the tap's epoll interest,
 *                  losing the backend, a bad descriptor, a batch done
 *   venet_frame.c  venet frames <-> tap frames (no hostd dependency)
 *   tap.c          the tap interface
 */
#ifndef VBUS_HOSTD_VENET_DEV_H
#define VBUS_HOSTD_VENET_DEV_H

#include <stdbool.h>
#include <linux/if_tun.h>
#include <vbus/venet.h>
#include "devq.h"
#include "tap.h"
#include "venet_frame.h"

/* Descriptors per pass before we yield to the loop. */
#define VENET_RX_BUDGET 64
#define VENET_TX_BUDGET 64
/* unmask/re-check rounds in one tx pass before we kick ourselves */
#define VENET_TX_ROUNDS 4
/*
 * tx_poll_us= default and bound: the cap of the adaptive window for which
 * the drained tx ring is polled (venet_tx.c). Off by default: polling
 * needs a host core to spare, which the 2-core TCG bench does not have
 * (docs/devices/venet.md, "Notifications").
 */
#define VENET_TX_POLL_US 0
#define VENET_TX_POLL_US_MAX 10000
/*
 * doorbell_mask_us= default and bound: how long a streaming guest's tx
 * ring stays masked before we look at it again (venet_tx_hold.c), and the
 * bytes sent since the ring slept that make it a stream.
 */
#define VENET_DOORBELL_MASK_US 500
#define VENET_DOORBELL_MASK_US_MAX 10000
#define VENET_TX_HOLD_BYTES (16u << 10)
/*
 * rx_coalesce_us= default and bound: how long a stream's rx batches may
 * wait for their interrupt (venet_rx_coalesce.c), and the bytes in one
 * batch that make it a stream's.
 */
#define VENET_RX_COALESCE_US 500
#define VENET_RX_COALESCE_US_MAX 10000
#define VENET_RX_COALESCE_BYTES (16u << 10)

/* backend=null's buffer: a virtio_net_hdr and the longest frame */
#define VENET_SINK_LEN (TAP_VNET_HDR_LEN + VENET_FRAME_MAX)

#define VENET_CAPS_SUPPORTED (VENET_CAP_SG | VENET_CAP_TSO4 | \
			      VENET_CAP_TSO6 | VENET_CAP_ECN | VENET_CAP_RXSG)

/* What the tap may hand us when the guest takes RXSG frames. */
#define VENET_RXSG_TUN_F (TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | \
			  TUN_F_TSO_ECN)

struct venet;

/* queues= default (docs/devices/venet.md, "Queue pairs") */
#define VENET_QUEUES_DEFAULT 1
/*
 * The least time between two changes of the tap's attached queues
 * (venet_pairs.c): each TUNSETQUEUE takes the host's rtnl lock and waits
 * for an RCU grace period, so a guest calling SETACTIVE in a loop must
 * not get one per call.
 */
#define VENET_QSYNC_GAP_NS (50ull * 1000 * 1000)

struct venet_stats {
	__u64 rx_packets, rx_bytes;
	__u64 tx_packets, tx_bytes;
	__u64 rx_notify_in, tx_notify_in;	/* guest signals that ran us */
	__u64 rx_notify_out, tx_notify_out;	/* hostd_devq_signal()s towards it */
	__u64 tx_gso, tx_csum;		/* frames with GSO / partial csum */
	__u64 tx_bad;			/* invalid descriptors, dropped */
	__u64 tx_errors;		/* the tap refused the frame */
	__u64 tx_dropped;		/* link down or no backend */
	__u64 tx_blocked;		/* tap write EAGAIN */
	__u64 rx_bad;			/* untranslatable buffers: len 0 */
	__u64 rx_too_big;		/* frame longer than the buffer */
	__u64 rx_offload_dropped;	/* GSO frame with offloads off */
	__u64 rx_csum_fixed;		/* partial csum completed by us */
	__u64 rx_gso, rx_csum;		/* RXSG: GSO / partial csum frames */
	__u64 rx_offload_errors;	/* RXSG: tap offload failed, plain rx */
	__u64 rx_starved;		/* ran out of guest buffers */
	__u64 rx_flushed;		/* buffers returned by FLUSHRX */
	__u64 kicks;			/* self-scheduled tx passes */
	__u64 tx_polls;			/* passes that found the ring empty */
	__u64 tx_holds;			/* looks after a doorbell_mask_us */
	__u64 rx_coalesced;		/* batches whose signal waited */
	__u64 backend_lost;
};

/*
 * One pair's share of the traffic (`ctl stats`: qP_rx_packets, ...): the
 * totals above are the sums. rx_dropped: frames its tap queue gave that
 * did not reach the guest (too big, offloads it cannot take) and buffers
 * handed back empty (untranslatable); tx_dropped: frames of its tx ring
 * not sent (invalid, refused by the tap, link down or no backend).
 */
struct venet_pair_stats {
	__u64 rx_packets, rx_bytes, rx_dropped;
	__u64 tx_packets, tx_bytes, tx_dropped;
};

/*
 * Queue pair P (docs/devices/venet.md, "Queue pairs"): its rings (DEVSHM
 * ids VENET_QUEUE_RX_ID(P), VENET_QUEUE_TX_ID(P)) and tap queue P. What
 * it reads from tap queue P goes to its rx ring; its tx ring's frames are
 * written to tap queue P, attached or not (a detached queue still takes
 * writes: only the kernel's steering towards it stops). Pair 0 is the
 * single-queue device of old.
 */
struct venet_pair {
	struct venet *v;
	unsigned int idx;
	struct hostd_devq rxq, txq;	/* owner: the pair */
	struct hostd_kick kick;		/* "run tx again" */
	/*
	 * backend=null (benchmarks, tests): every tx frame is copied once
	 * into this host buffer and dropped (sent, for the counters). NULL
	 * with a tap.
	 */
	unsigned char *sink;
	bool tap_watched;		/* tap queue idx in the loop */
	__u32 tap_events;		/* what it is watched for */
	bool rx_starved;		/* no guest buffer: queue not polled */
	bool tx_blocked;		/* tap said EAGAIN: wait for EPOLLOUT */
	unsigned int tx_unsignalled;	/* tx pops the guest was not told of */
	/*
	 * doorbell_mask_us (venet_tx_hold.c): frames and bytes sent since
	 * the ring was last found drained, and the timer of a hold (the
	 * ring masked, the guest streaming: we look again when it fires)
	 */
	unsigned int tx_run;
	__u64 tx_run_bytes;
	bool tx_held;
	bool tx_stream;		/* held for its own bytes, not for ACKs */
	struct hostd_timer hold;
	/*
	 * rx_coalesce_us (venet_rx_coalesce.c): a period is running, a
	 * batch came in it, the bytes it brought, the frames published
	 * and not yet signalled, and the period's timer
	 */
	bool rx_coalescing, rx_came;
	bool rx_stream;		/* coalescing for its own bytes, not ACKs */
	__u64 rx_period_bytes;
	unsigned int rx_unsignalled;
	struct hostd_timer rxc;
	struct venet_pair_stats st;
};

struct venet {
	struct hostd_dev *dev;
	struct venet_mem mem;
	struct tap tap;
	char tapreq[IFNAMSIZ];		/* tap= as given ("" = kernel's) */
	bool null_backend;		/* backend=null: pairs have sinks */
	char backend_err[192];		/* why there is no tap */
	__u8 mac[6];
	bool strict;
	__u64 mask_ns;			/* doorbell_mask_us=, in ns; 0: never */
	__u64 rx_coalesce_ns;		/* rx_coalesce_us=, in ns; 0: never */

	unsigned int queues;		/* queues=: pairs we may grant */
	unsigned int granted;		/* QUEUES' answer; 1 before it */
	unsigned int active;		/* SETACTIVE: rx to pairs < active */
	/* the tap's queues follow active at most every VENET_QSYNC_GAP_NS */
	struct hostd_timer qsync;	/* a deferred sync (fd -1: none) */
	__u64 qsync_last_ns;		/* the last sync's TUNSETQUEUEs */
	__u64 qsyncs;			/* syncs done (ctl stats: tap_queue_syncs) */

	bool open;
	bool link;			/* LINKUP .. LINKDOWN */
	__u32 caps;			/* negotiated, group SG */

	struct venet_pair pair[VENET_MAX_QUEUE_PAIRS];	/* [0, queues) */

	struct venet_stats st;
};

/* Pair @p's tap queue: its fd, or -1 (no tap, or fewer queues). */
static inline int venet_pair_tapfd(const struct venet_pair *p)
{
	const struct tap *t = &p->v->tap;

	return p->idx < t->queues ? t->qfd[p->idx] : -1;
}

/* rx can run: the guest is up, the pair active with its rx ring and tap queue */
static inline bool venet_rx_possible(const struct venet_pair *p)
{
	const struct venet *v = p->v;

	return v->open && v->link && p->idx < v->active &&
	       venet_pair_tapfd(p) >= 0 && hostd_devq_live(&p->rxq);
}

/* venet_state.c */
void venet_tap_update(struct venet *v);
void venet_tap_unwatch(struct venet_pair *p);
void venet_tap_unwatch_all(struct venet *v);
void venet_backend_lost(struct venet *v, int err);
void venet_bad_desc(struct venet *v, const char *dir, const char *why);
void venet_q_complete(struct venet *v, struct hostd_devq *q, unsigned int n,
		      __u64 bytes, __u64 *notify_out);
void venet_q_signal(struct hostd_devq *q, __u64 *notify_out);

/* venet_pairs.c */
bool venet_rings_registered(const struct venet *v);
int venet_call_queues(struct venet *v, void *buf);	/* QUEUES */
int venet_call_setactive(struct venet *v, void *buf);	/* SETACTIVE */
void venet_pairs_reset(struct venet *v);	/* one pair, as after DEVOPEN */
void venet_pairs_apply(struct venet *v);	/* tap queues = active pairs */
void venet_tap_watch(struct venet_pair *p);
int venet_qsync_init(struct venet *v);	/* create: the deferred sync */
void venet_qsync_fini(struct venet *v);	/* destroy */

/*
 * venet_tx.c: drain a pair's tx ring into the tap (its tx ring's signal
 * runs it); its poll window is txq.window (cap_ns: tx_poll_us=)
 */
void venet_tx_work(struct venet_pair *p);
void venet_tx_signal(struct hostd_devq *q);

/*
 * venet_tx_hold.c: whether a drained tx ring stays masked, a timer to
 * look again (p->hold): not held (unmask, look, sleep), held, or held
 * after the caller signals the completions not yet signalled
 */
enum venet_tx_held { VENET_TX_UNHELD, VENET_TX_HELD, VENET_TX_HELD_SIGNAL };
enum venet_tx_held venet_tx_hold(struct venet_pair *p);
void venet_tx_hold_stop(struct venet_pair *p);	/* no hold, or close */

/*
 * venet_rx_coalesce.c: whether an rx batch of @n frames and @bytes waits
 * for the pair's period to signal (true) or signals now; at the period's
 * end, whether to signal; close
 */
bool venet_rx_coalesce(struct venet_pair *p, unsigned int n, __u64 bytes);
bool venet_rx_coalesce_end(struct venet_pair *p);
void venet_rx_coalesce_stop(struct venet_pair *p);

/* venet_rx.c: fill a pair's rx buffers from its tap queue */
void venet_rx_run(struct venet_pair *p);
void venet_rx_signal(struct hostd_devq *q);
void venet_rx_coalesced(struct venet_pair *p);	/* its period ended */
int venet_rx_flush(struct venet *v);	/* FLUSHRX: every pair */

#endif /* VBUS_HOSTD_VENET_DEV_H */
