/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * venet, the host side: the device's state, shared by its files, in the
 * order they use each other (none calls up):
 *
 *   venet_dev.c    the ops (create .. stats), params, the tap's and the
 *                  kick's fd callbacks, opening the backend
 *   venet_rx.c     tap -> guest
 *   venet_tx.c     guest -> tap
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

#define VENET_CAPS_SUPPORTED (VENET_CAP_SG | VENET_CAP_TSO4 | \
			      VENET_CAP_TSO6 | VENET_CAP_ECN | VENET_CAP_RXSG)

/* What the tap may hand us when the guest takes RXSG frames. */
#define VENET_RXSG_TUN_F (TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | \
			  TUN_F_TSO_ECN)

struct venet;

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
	__u64 backend_lost;
};

struct venet {
	struct hostd_dev *dev;
	struct venet_mem mem;
	struct tap tap;
	char tapreq[IFNAMSIZ];		/* tap= as given ("" = kernel's) */
	char backend_err[192];		/* why there is no tap */
	__u8 mac[6];
	bool strict;

	bool open;
	bool link;			/* LINKUP .. LINKDOWN */
	__u32 caps;			/* negotiated, group SG */

	struct hostd_devq rxq, txq;	/* owner: the venet */
	struct hostd_kick kick;		/* "run tx again" */
	bool tap_watched;
	__u32 tap_events;		/* what the tap fd is watched for */
	bool rx_starved;		/* no guest buffer: tap not polled */
	bool tx_blocked;		/* tap said EAGAIN: wait for EPOLLOUT */
	unsigned int tx_unsignalled;	/* tx pops the guest was not told of */

	struct venet_stats st;
};

/* rx can run: the guest is up, the rx ring is there, a tap is there */
static inline bool venet_rx_possible(const struct venet *v)
{
	return v->open && v->link && v->tap.fd >= 0 && hostd_devq_live(&v->rxq);
}

/* venet_state.c */
void venet_tap_update(struct venet *v);
void venet_tap_unwatch(struct venet *v);
void venet_backend_lost(struct venet *v, int err);
void venet_bad_desc(struct venet *v, const char *dir, const char *why);
void venet_q_complete(struct venet *v, struct hostd_devq *q, unsigned int n,
		      __u64 bytes, __u64 *notify_out);
void venet_q_signal(struct hostd_devq *q, __u64 *notify_out);

/*
 * venet_tx.c: drain the tx ring into the tap (the tx ring's signal runs
 * it); its poll window is txq.window (cap_ns: tx_poll_us=)
 */
void venet_tx_work(struct venet *v);
void venet_tx_signal(struct hostd_devq *q);

/* venet_rx.c: fill the guest's rx buffers from the tap */
void venet_rx_run(struct venet *v);
void venet_rx_signal(struct hostd_devq *q);
int venet_rx_flush(struct venet *v);	/* FLUSHRX */

#endif /* VBUS_HOSTD_VENET_DEV_H */
