/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * tap: the host end of a venet device, a Linux tap interface opened with
 * IFF_TAP | IFF_NO_PI | IFF_VNET_HDR.
 *
 * Every frame crossing the tap fd is preceded by a 10-byte struct
 * virtio_net_hdr (TAP_VNET_HDR_LEN). We set that size explicitly with
 * TUNSETVNETHDRSZ rather than relying on the default, because a persistent
 * tap we attach to keeps whatever size its previous user set. Why 10 and
 * not the 12-byte virtio_net_hdr_mrg_rxbuf: the extra num_buffers field
 * only means something to a virtio guest that merges rx buffers; the tap
 * never fills it (it skips the bytes), and venet delivers one frame per
 * posted guest buffer, so it would be two dead bytes on every frame. The
 * header always lives in a local variable (never in guest memory), so its
 * size has no alignment consequence for the payload either. The header is
 * in the host's native byte order (legacy virtio), i.e. little-endian on
 * the x86-64 hosts we run on.
 *
 * The fds are non-blocking: the daemon's event loop polls them.
 *
 * Queues. One queue is a plain tap (no IFF_MULTI_QUEUE: a persistent tap
 * made without `multi_queue` keeps working), or one queue of a
 * multi-queue tap when the tap that exists is one. More than one is
 * IFF_MULTI_QUEUE with one fd per queue (qfd[q]); the host kernel spreads
 * what it sends to the tap over the queues attached (its flow steering),
 * and tap_set_queue() detaches one (TUNSETQUEUE: the kernel drops what
 * it held and steers its flows to the others; its fd still writes and
 * polls, it just gets nothing more to read) or attaches it again. The
 * ioctls of the whole tap (offload, carrier) go through queue 0's fd,
 * which is never detached.
 */
#ifndef VBUS_HOSTD_TAP_H
#define VBUS_HOSTD_TAP_H

#include <stddef.h>
#include <net/if.h>
#include <linux/virtio_net.h>

#include <stdbool.h>

#define TAP_VNET_HDR_LEN ((int)sizeof(struct virtio_net_hdr))
/* queues of one tap we open (venet's VENET_MAX_QUEUE_PAIRS) */
#define TAP_MAX_QUEUES 16

struct tap {
	int fd;			/* queue 0's, -1 when closed */
	int qfd[TAP_MAX_QUEUES];	/* queue q's (qfd[0] == fd), -1 */
	unsigned int queues;	/* fds open: 0 when closed */
	bool mq;		/* IFF_MULTI_QUEUE */
	unsigned int attached;	/* bit q: queue q attached */
	char name[IFNAMSIZ];	/* the kernel's name for it (may differ
				 * from the request, e.g. "vbus%d") */
	unsigned int offload;	/* TUN_F_* currently set */
};

/*
 * Open (create when absent, attach when it exists) the tap @name with
 * @queues (1 .. TAP_MAX_QUEUES) queues, all attached; @name NULL or ""
 * lets the kernel choose ("vbus%d"). Sets the vnet header size and no
 * offloads (the tap then only hands us fully checksummed, segmented
 * frames until tap_set_offload()). On failure returns -errno, leaves
 * t->fd == -1 and t->queues 0 and writes a human-readable reason into
 * @err (e.g. "/dev/net/tun is missing", "needs CAP_NET_ADMIN" or that
 * the tap that exists has a single queue).
 */
int tap_open(struct tap *t, const char *name, unsigned int queues, char *err,
	     size_t errlen);

/* Close the fds (a tap we created disappears with them). Idempotent. */
void tap_close(struct tap *t);

/*
 * Attach (@on) or detach queue @q (1 .. queues-1; a no-op when it is so
 * already): 0 or -errno.
 */
int tap_set_queue(struct tap *t, unsigned int q, bool on);

/*
 * What the host kernel may hand us on read: TUN_F_CSUM (frames with a
 * partial checksum), TUN_F_TSO4/6, TUN_F_TSO_ECN (GSO super-frames). The
 * kernel does the work itself for everything not set here. TSO needs CSUM
 * (the kernel rejects it otherwise); we drop TSO bits without CSUM rather
 * than fail. Returns 0 or -errno.
 */
int tap_set_offload(struct tap *t, unsigned int tun_flags);

/*
 * Carrier of the host-side interface (TUNSETCARRIER, Linux >= 4.20): the
 * guest's LINKUP/LINKDOWN shows up on the host as carrier on/off. Returns
 * 0, or -errno (-EINVAL / -ENOTTY on older kernels; callers ignore it).
 */
int tap_set_carrier(struct tap *t, int on);

#endif /* VBUS_HOSTD_TAP_H */
