/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * venet frames <-> tap frames, zero copy.
 *
 * tx (guest -> tap): a guest frame is either one flat buffer (no SG
 * negotiated) or a struct venet_sg with up to VENET_SG_MAX_IOVS iovs. We
 * turn it into a local struct virtio_net_hdr plus an iovec array whose
 * entries point straight into the mapped guest RAM, and writev() that to
 * the tap: the payload is never copied by us.
 *
 * rx (tap -> guest): readv() with the first iovec on a local
 * virtio_net_hdr and the rest on the guest's posted buffer(s).
 *
 * Everything read from guest memory is hostile. Each venet_sg (header and
 * iov array) is copied to local memory exactly once and only the copy is
 * validated and used; every guest pointer goes through the caller's
 * bounds-checked translation. A malformed frame returns -errno and a
 * constant reason string; it never crashes and never loops.
 *
 * Nothing here depends on the daemon: the translation is a callback, so
 * the unit tests run this on synthetic guest memory.
 */
#ifndef VBUS_HOSTD_VENET_FRAME_H
#define VBUS_HOSTD_VENET_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <linux/virtio_net.h>

#include <vbus/venet.h>

/*
 * Largest frame we pass either way (docs/devices/venet.md): a maximal
 * IP packet (a GSO super-frame at the guest's default gso_max_size) plus
 * an Ethernet header with one VLAN tag. Bounds every length we take from
 * the guest.
 */
#define VENET_FRAME_MAX (65535u + 18u)
/* Smallest frame: an Ethernet header. */
#define VENET_FRAME_MIN 14u

/* Size of a venet_sg with n iovs. */
#define VENET_SG_SIZE(n) (sizeof(struct venet_sg) + \
			  (size_t)(n) * sizeof(struct venet_iov))

/*
 * Guest-physical [gpa, gpa + len) to a host pointer, or NULL when the
 * range is not entirely inside one block of guest RAM (or len is 0 and the
 * caller asked for it anyway). hostd_dev_gpa() in the device.
 */
typedef void *(*venet_xlate_fn)(void *ctx, __u64 gpa, __u64 len);

struct venet_mem {
	venet_xlate_fn xlate;	/* venet_sgs */
	venet_xlate_fn data;	/* frame bytes; NULL: xlate (hostd_dev_data) */
	void *ctx;
};

/* A frame ready for writev(tapfd, f->iov, f->niov). */
struct venet_txframe {
	struct virtio_net_hdr vh;	/* local: iov[0] points here */
	struct iovec iov[1 + VENET_SG_MAX_IOVS];
	int niov;
	__u32 len;			/* frame bytes, without vh */
	bool gso;			/* a GSO super-frame */
};

/*
 * tx, no SG negotiated: the descriptor's ptr/len is the whole frame. The
 * virtio header is all zero (no checksum or GSO request).
 */
int venet_tx_flat(const struct venet_mem *m, __u64 gpa, __u64 len,
		  struct venet_txframe *f, const char **why);

/*
 * tx, SG negotiated: the descriptor points at a struct venet_sg of
 * @desc_len bytes. @caps are the negotiated VENET_CAP_* bits (group SG): a
 * checksum or GSO request the guest did not negotiate is refused. Checks:
 * known flags only; 1 <= count <= VENET_SG_MAX_IOVS and the iov array
 * inside @desc_len; sum of iov lens == sg.len, VENET_FRAME_MIN <= len <=
 * VENET_FRAME_MAX; every iov translated; csum start + offset + 2 <= len;
 * GSO: known, negotiated type, NEEDS_CSUM set, size != 0, hdrlen <= len.
 */
int venet_tx_sg(const struct venet_mem *m, __u32 caps, __u64 gpa,
		__u64 desc_len, struct venet_txframe *f, const char **why);

/*
 * A guest rx buffer, translated, for venet_rx_read(). v1 rx buffers are
 * flat (one iov); the array leaves room for an rx format with venet_sg.
 */
struct venet_rxbuf {
	/* iov[0]: header; then the guest's; then one spill byte */
	struct iovec iov[2 + VENET_SG_MAX_IOVS];
	int niov;			/* header + guest iovs */
	__u32 cap;			/* guest bytes available */
	unsigned char spill;		/* see venet_rx_read() */
	/* RXSG: the guest's venet_sg, where venet_rx_sg_publish() writes */
	struct venet_sg *gsg;
};

/* rx, flat: one guest buffer of @len bytes at @gpa (clamped to
 * VENET_FRAME_MAX: no frame is longer). */
int venet_rx_flat(const struct venet_mem *m, __u64 gpa, __u64 len,
		  struct venet_rxbuf *rb, const char **why);

/*
 * rx, RXSG negotiated: the descriptor points at a struct venet_sg of
 * @desc_len bytes whose iovs are the buffer. The header and iov array are
 * copied once; checks: 1 <= count <= VENET_SG_MAX_IOVS and the iov array
 * inside @desc_len; every non-empty iov translated; the capacity (sum of
 * the iov lens, used only up to VENET_FRAME_MAX) at least VENET_FRAME_MIN.
 * The guest's sg.len, flags etc. are ignored (we overwrite them).
 */
int venet_rx_sg(const struct venet_mem *m, __u64 gpa, __u64 desc_len,
		struct venet_rxbuf *rb, const char **why);

/*
 * The tap's virtio_net_hdr for a frame of @len bytes -> the venet_sg rx
 * fields in @out (flags, len, csum, gso; count/cookie/iov untouched):
 * NEEDS_CSUM with start + offset + 2 <= len; DATA_VALID; GSO TCPV4/TCPV6
 * (+ECN) with size != 0, hdr_len <= len and NEEDS_CSUM or DATA_VALID.
 * Anything else (UDP GSO, which we never enable) is -EPROTO + reason.
 */
int venet_vnet_to_rx_sg(const struct virtio_net_hdr *vh, __u32 len,
			struct venet_sg *out, const char **why);

/* Write the rx fields of @s into the guest's venet_sg (rb->gsg). */
void venet_rx_sg_publish(struct venet_rxbuf *rb, const struct venet_sg *s);

/*
 * Read one frame from the tap into @rb; the virtio header lands in @vh.
 * Returns the frame length (> 0), -EAGAIN when the tap is empty,
 * -EMSGSIZE when the frame did not fit or is shorter than an Ethernet
 * header (the tap has consumed it: it is dropped, and the guest buffer
 * holds garbage but stays ours to reuse), or another -errno from readv.
 *
 * How "did not fit" is seen: a local spill byte follows the guest
 * buffer in the iovec. Kernels disagree on what a short read returns
 * (older tun returned the whole frame's length, 6.x returns the bytes
 * copied), so the length alone cannot tell an exact fit from a
 * truncation; a frame that reaches the spill byte is too long either way.
 */
ssize_t venet_rx_read(int tapfd, struct venet_rxbuf *rb,
		      struct virtio_net_hdr *vh);

/*
 * For a guest that cannot take offloaded frames (no SG): complete a partial
 * checksum in place (NEEDS_CSUM: the Internet checksum from csum_start to
 * the end, stored at csum_start + csum_offset) and refuse GSO frames. The
 * tap should not hand us either with offloads off; this keeps a kernel
 * surprise from reaching the guest as a bad frame.
 */
int venet_rx_finish_flat(struct venet_rxbuf *rb, const struct virtio_net_hdr *vh,
			 __u32 len, const char **why);

/*
 * Copy @n bytes out of guest memory into local memory, once. The compiler
 * barrier keeps the compiler from turning later uses of the copy back into
 * loads from guest memory (which the guest may have changed meanwhile).
 */
static inline void venet_guest_copy(void *dst, const void *src, size_t n)
{
	__builtin_memcpy(dst, src, n);
	__asm__ __volatile__("" ::: "memory");
}

#endif /* VBUS_HOSTD_VENET_FRAME_H */
