// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * venet frames <-> tap frames (see venet_frame.h and
 * docs/devices/venet.md). Every check below is against a local copy; guest
 * memory is only ever read through venet_guest_copy() (structures) or
 * handed to the kernel in an iovec (payload, which the guest may scribble
 * on at will: that only garbles its own frame).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "venet_frame.h"

#define SG_FLAGS_KNOWN (VENET_SG_FLAG_NEEDS_CSUM | VENET_SG_FLAG_GSO | \
			VENET_SG_FLAG_ECN)

static int bad(const char **why, const char *reason, int err)
{
	if (why)
		*why = reason;
	return err;
}

static void *xlate(const struct venet_mem *m, __u64 gpa, __u64 len)
{
	/* a zero-length range proves nothing about gpa: never ask */
	if (!len)
		return NULL;
	return m->xlate(m->ctx, gpa, len);
}

/* The frame's bytes (not a venet_sg): m->data when the caller set one. */
static void *xlate_data(const struct venet_mem *m, __u64 gpa, __u64 len)
{
	if (!len)
		return NULL;
	return (m->data ? m->data : m->xlate)(m->ctx, gpa, len);
}

/*
 * The one read of a guest's venet_sg and its iov array (both directions):
 * copies both into @sg and @iov, so nothing after this reads them from
 * guest memory again, after checking the header and the array fit the
 * descriptor (@desc_len) and guest RAM. @hdr, when not NULL, gets the
 * translated header (rx writes the used length back into it). The caller
 * says which direction in its own log line.
 */
static int sg_read(const struct venet_mem *m, __u64 gpa, __u64 desc_len,
		   struct venet_sg *sg, struct venet_iov *iov,
		   struct venet_sg **hdr, const char **why)
{
	unsigned char *p;

	if (desc_len < sizeof(*sg))
		return bad(why, "sg descriptor shorter than a venet_sg",
			   -EINVAL);
	/*
	 * rx stores through *hdr (venet_rx_sg_publish): a venet_sg must sit
	 * where its __u64 can (a guest's kmalloc always does), or the host's
	 * own stores would be misaligned. tx only copies it, but one rule.
	 */
	if (gpa & (_Alignof(struct venet_sg) - 1))
		return bad(why, "venet_sg not 8-byte aligned", -EINVAL);
	p = xlate(m, gpa, sizeof(*sg));
	if (!p)
		return bad(why, "venet_sg outside guest RAM", -EFAULT);
	venet_guest_copy(sg, p, sizeof(*sg));

	if (sg->count < 1 || sg->count > VENET_SG_MAX_IOVS)
		return bad(why, "venet_sg count out of range", -EINVAL);
	if (VENET_SG_SIZE(sg->count) > desc_len)
		return bad(why, "venet_sg iovs beyond the descriptor",
			   -EINVAL);
	p = xlate(m, gpa, VENET_SG_SIZE(sg->count));
	if (!p)
		return bad(why, "venet_sg iovs outside guest RAM", -EFAULT);
	venet_guest_copy(iov, p + sizeof(*sg),
			 (size_t)sg->count * sizeof(iov[0]));
	if (hdr)
		*hdr = (struct venet_sg *)p;
	return 0;
}

static void txframe_init(struct venet_txframe *f)
{
	memset(&f->vh, 0, sizeof(f->vh));
	f->vh.gso_type = VIRTIO_NET_HDR_GSO_NONE;
	f->iov[0].iov_base = &f->vh;
	f->iov[0].iov_len = sizeof(f->vh);
	f->niov = 1;
	f->len = 0;
	f->gso = false;
}

int venet_tx_flat(const struct venet_mem *m, __u64 gpa, __u64 len,
		  struct venet_txframe *f, const char **why)
{
	void *p;

	txframe_init(f);
	if (len < VENET_FRAME_MIN)
		return bad(why, "tx frame shorter than an Ethernet header",
			   -EINVAL);
	if (len > VENET_FRAME_MAX)
		return bad(why, "tx frame too long", -EINVAL);
	p = xlate_data(m, gpa, len);
	if (!p)
		return bad(why, "tx frame outside guest RAM", -EFAULT);

	f->iov[1].iov_base = p;
	f->iov[1].iov_len = (size_t)len;
	f->niov = 2;
	f->len = (__u32)len;
	return 0;
}

/*
 * venet_sg checksum/GSO fields -> virtio_net_hdr, validated against the
 * frame length sg->len and the negotiated @caps (-EINVAL + reason).
 * @sg must be a local copy.
 */
static int venet_sg_to_vnet(const struct venet_sg *sg, __u32 caps,
			    struct virtio_net_hdr *vh, const char **why)
{
	__u32 flags = sg->flags;

	memset(vh, 0, sizeof(*vh));
	vh->gso_type = VIRTIO_NET_HDR_GSO_NONE;

	if (flags & ~SG_FLAGS_KNOWN)
		return bad(why, "unknown venet_sg flags", -EINVAL);

	if (flags & VENET_SG_FLAG_NEEDS_CSUM) {
		/* u32 arithmetic: two u16 plus 2 cannot wrap */
		if ((__u32)sg->csum.start + sg->csum.offset + 2 > sg->len)
			return bad(why, "csum start/offset outside the frame",
				   -EINVAL);
		vh->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		vh->csum_start = sg->csum.start;
		vh->csum_offset = sg->csum.offset;
	}

	if (!(flags & VENET_SG_FLAG_GSO))
		return 0;	/* FLAG_ECN alone qualifies nothing: ignored */

	/*
	 * A GSO super-frame is segmented by the host kernel, which then
	 * checksums each segment: that needs a partial checksum to start
	 * from. A "complete" checksum over the super-frame would be wrong on
	 * every segment.
	 */
	if (!(flags & VENET_SG_FLAG_NEEDS_CSUM))
		return bad(why, "GSO without NEEDS_CSUM", -EINVAL);

	switch (sg->gso.type) {
	case VENET_GSO_TYPE_TCPV4:
		if (!(caps & VENET_CAP_TSO4))
			return bad(why, "TSO4 frame, TSO4 not negotiated",
				   -EINVAL);
		vh->gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
		break;
	case VENET_GSO_TYPE_TCPV6:
		if (!(caps & VENET_CAP_TSO6))
			return bad(why, "TSO6 frame, TSO6 not negotiated",
				   -EINVAL);
		vh->gso_type = VIRTIO_NET_HDR_GSO_TCPV6;
		break;
	case VENET_GSO_TYPE_UDP:
		if (!(caps & VENET_CAP_UFO))
			return bad(why, "UFO frame, UFO not negotiated",
				   -EINVAL);
		vh->gso_type = VIRTIO_NET_HDR_GSO_UDP;
		break;
	default:
		return bad(why, "unknown GSO type", -EINVAL);
	}

	if (flags & VENET_SG_FLAG_ECN) {
		if (!(caps & VENET_CAP_ECN))
			return bad(why, "TSO ECN frame, ECN not negotiated",
				   -EINVAL);
		vh->gso_type |= VIRTIO_NET_HDR_GSO_ECN;
	}

	if (!sg->gso.size)
		return bad(why, "GSO with gso.size 0", -EINVAL);
	if (sg->gso.hdrlen > sg->len)
		return bad(why, "GSO hdrlen beyond the frame", -EINVAL);

	vh->gso_size = sg->gso.size;
	vh->hdr_len = sg->gso.hdrlen;
	return 0;
}

int venet_tx_sg(const struct venet_mem *m, __u32 caps, __u64 gpa,
		__u64 desc_len, struct venet_txframe *f, const char **why)
{
	struct venet_sg sg;
	struct venet_iov iov[VENET_SG_MAX_IOVS];
	__u64 sum = 0;
	__u32 i;
	int ret;

	txframe_init(f);

	ret = sg_read(m, gpa, desc_len, &sg, iov, NULL, why);
	if (ret)
		return ret;
	if (sg.len < VENET_FRAME_MIN)
		return bad(why, "tx frame shorter than an Ethernet header",
			   -EINVAL);
	if (sg.len > VENET_FRAME_MAX)
		return bad(why, "tx frame too long", -EINVAL);

	ret = venet_sg_to_vnet(&sg, caps, &f->vh, why);
	if (ret)
		return ret;

	for (i = 0; i < sg.count; i++) {
		void *base;

		/* u64: 64 u32 lengths cannot wrap it */
		sum += iov[i].len;
		if (sum > sg.len)
			return bad(why, "iov lengths exceed sg.len", -EINVAL);
		/* an empty iov carries nothing; its ptr is never looked at */
		if (!iov[i].len)
			continue;
		base = xlate_data(m, iov[i].ptr, iov[i].len);
		if (!base)
			return bad(why, "tx iov outside guest RAM", -EFAULT);
		f->iov[f->niov].iov_base = base;
		f->iov[f->niov].iov_len = iov[i].len;
		f->niov++;
	}
	if (sum != sg.len)
		return bad(why, "iov lengths do not sum to sg.len", -EINVAL);

	f->len = sg.len;
	f->gso = (f->vh.gso_type & ~VIRTIO_NET_HDR_GSO_ECN) !=
		 VIRTIO_NET_HDR_GSO_NONE;
	return 0;
}

int venet_rx_flat(const struct venet_mem *m, __u64 gpa, __u64 len,
		  struct venet_rxbuf *rb, const char **why)
{
	void *p;

	rb->iov[0].iov_base = NULL;
	rb->iov[0].iov_len = TAP_VNET_HDR_LEN;
	rb->niov = 1;
	rb->cap = 0;
	rb->gsg = NULL;

	if (len < VENET_FRAME_MIN)
		return bad(why, "rx buffer shorter than an Ethernet header",
			   -EINVAL);
	/*
	 * No frame is longer than VENET_FRAME_MAX: a bigger buffer is used
	 * (and translated) only that far.
	 */
	if (len > VENET_FRAME_MAX)
		len = VENET_FRAME_MAX;
	p = xlate_data(m, gpa, len);
	if (!p)
		return bad(why, "rx buffer outside guest RAM", -EFAULT);

	rb->iov[1].iov_base = p;
	rb->iov[1].iov_len = (size_t)len;
	rb->niov = 2;
	rb->cap = (__u32)len;
	return 0;
}

int venet_rx_sg(const struct venet_mem *m, __u64 gpa, __u64 desc_len,
		struct venet_rxbuf *rb, const char **why)
{
	struct venet_sg sg, *hdr;
	struct venet_iov iov[VENET_SG_MAX_IOVS];
	__u32 cap = 0;
	__u32 i;
	int ret;

	rb->iov[0].iov_base = NULL;
	rb->iov[0].iov_len = TAP_VNET_HDR_LEN;
	rb->niov = 1;
	rb->cap = 0;
	rb->gsg = NULL;

	ret = sg_read(m, gpa, desc_len, &sg, iov, &hdr, why);
	if (ret)
		return ret;

	for (i = 0; i < sg.count && cap < VENET_FRAME_MAX; i++) {
		__u32 l = iov[i].len;
		void *base;

		/* no frame is longer: the rest is neither used nor checked */
		if (l > VENET_FRAME_MAX - cap)
			l = VENET_FRAME_MAX - cap;
		/* an empty iov carries nothing; its ptr is never looked at */
		if (!l)
			continue;
		base = xlate_data(m, iov[i].ptr, l);
		if (!base)
			return bad(why, "rx iov outside guest RAM", -EFAULT);
		rb->iov[rb->niov].iov_base = base;
		rb->iov[rb->niov].iov_len = l;
		rb->niov++;
		cap += l;
	}
	if (cap < VENET_FRAME_MIN)
		return bad(why, "rx sg capacity below an Ethernet header",
			   -EINVAL);

	rb->cap = cap;
	/* translated above with the iovs: the header is writable RAM */
	rb->gsg = hdr;
	return 0;
}

int venet_vnet_to_rx_sg(const struct virtio_net_hdr *vh, __u32 len,
			struct venet_sg *out, const char **why)
{
	__u8 gso = vh->gso_type & ~VIRTIO_NET_HDR_GSO_ECN;

	out->flags = 0;
	out->len = len;
	out->csum.start = 0;
	out->csum.offset = 0;
	out->gso.type = 0;
	out->gso.reserved = 0;
	out->gso.hdrlen = 0;
	out->gso.size = 0;

	if (vh->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
		/* u32 arithmetic: two u16 plus 2 cannot wrap */
		if ((__u32)vh->csum_start + vh->csum_offset + 2 > len)
			return bad(why, "tap gave csum offsets outside the frame",
				   -EPROTO);
		out->flags |= VENET_SG_FLAG_NEEDS_CSUM;
		out->csum.start = vh->csum_start;
		out->csum.offset = vh->csum_offset;
	} else if (vh->flags & VIRTIO_NET_HDR_F_DATA_VALID) {
		/* with NEEDS_CSUM it would say nothing more */
		out->flags |= VENET_SG_FLAG_DATA_VALID;
	}

	if (gso == VIRTIO_NET_HDR_GSO_NONE)
		return 0;	/* a lone ECN bit qualifies nothing */

	switch (gso) {
	case VIRTIO_NET_HDR_GSO_TCPV4:
		out->gso.type = VENET_GSO_TYPE_TCPV4;
		break;
	case VIRTIO_NET_HDR_GSO_TCPV6:
		out->gso.type = VENET_GSO_TYPE_TCPV6;
		break;
	default:	/* UDP: we never enable TUN_F_UFO */
		return bad(why, "tap gave a GSO type we did not enable",
			   -EPROTO);
	}
	if (!(out->flags & (VENET_SG_FLAG_NEEDS_CSUM |
			    VENET_SG_FLAG_DATA_VALID)))
		return bad(why, "tap gave GSO without a checksum state",
			   -EPROTO);
	if (!vh->gso_size)
		return bad(why, "tap gave GSO with gso_size 0", -EPROTO);
	if (vh->hdr_len > len)
		return bad(why, "tap gave a GSO hdr_len beyond the frame",
			   -EPROTO);
	out->flags |= VENET_SG_FLAG_GSO;
	if (vh->gso_type & VIRTIO_NET_HDR_GSO_ECN)
		out->flags |= VENET_SG_FLAG_ECN;
	out->gso.size = vh->gso_size;
	out->gso.hdrlen = vh->hdr_len;
	return 0;
}

void venet_rx_sg_publish(struct venet_rxbuf *rb, const struct venet_sg *s)
{
	struct venet_sg *g = rb->gsg;

	/*
	 * One store per field, before the caller's ioq_consume_end(): its
	 * [R2] (v5: [R4] too) publishes them and pairs with the guest's
	 * [A2] ([A4]) in ioq_reap_begin() before it reads them
	 * (docs/ring.md).
	 * cookie, count and iov[] stay the guest's.
	 */
	VBUS_WRITE(g->flags, s->flags);
	VBUS_WRITE(g->len, s->len);
	VBUS_WRITE(g->csum.start, s->csum.start);
	VBUS_WRITE(g->csum.offset, s->csum.offset);
	VBUS_WRITE(g->gso.type, s->gso.type);
	VBUS_WRITE(g->gso.hdrlen, s->gso.hdrlen);
	VBUS_WRITE(g->gso.size, s->gso.size);
}

ssize_t venet_rx_read(int tapfd, struct venet_rxbuf *rb,
		      struct virtio_net_hdr *vh)
{
	ssize_t n;

	rb->iov[0].iov_base = vh;
	rb->iov[0].iov_len = sizeof(*vh);
	rb->iov[rb->niov].iov_base = &rb->spill;
	rb->iov[rb->niov].iov_len = 1;
	do {
		n = readv(tapfd, rb->iov, rb->niov + 1);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* a tap opened with IFF_VNET_HDR always writes the header */
	if (n < (ssize_t)sizeof(*vh))
		return -EIO;
	n -= (ssize_t)sizeof(*vh);
	/* into the spill byte (or beyond, on kernels reporting the total) */
	if (n > (ssize_t)rb->cap)
		return -EMSGSIZE;
	if (n < (ssize_t)VENET_FRAME_MIN)
		return -EMSGSIZE;
	return n;
}

/* byte @pos of the frame in rb (pos < frame length <= cap) */
static unsigned char *rx_byte(struct venet_rxbuf *rb, __u32 pos)
{
	int i;

	for (i = 1; i < rb->niov; i++) {
		if (pos < rb->iov[i].iov_len)
			return (unsigned char *)rb->iov[i].iov_base + pos;
		pos -= (__u32)rb->iov[i].iov_len;
	}
	return NULL;
}

/* Internet checksum (RFC 1071) of frame bytes [start, end), folded. */
static __u32 rx_csum(const struct venet_rxbuf *rb, __u32 start, __u32 end)
{
	__u64 sum = 0;
	__u32 base = 0;
	int i;

	for (i = 1; i < rb->niov && base < end; i++) {
		const unsigned char *b = rb->iov[i].iov_base;
		__u32 top = base + (__u32)rb->iov[i].iov_len;
		__u32 a = base > start ? base : start;
		__u32 z = top < end ? top : end;

		/* even offsets from start are the high byte of a word */
		for (; a < z; a++)
			sum += ((a - start) & 1) ? b[a - base]
						 : (__u32)b[a - base] << 8;
		base = top;
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u32)sum;
}

int venet_rx_finish_flat(struct venet_rxbuf *rb,
			 const struct virtio_net_hdr *vh, __u32 len,
			 const char **why)
{
	__u32 start, at;
	__u16 csum;
	unsigned char *hi, *lo;

	if ((vh->gso_type & ~VIRTIO_NET_HDR_GSO_ECN) !=
	    VIRTIO_NET_HDR_GSO_NONE)
		return bad(why, "tap gave a GSO frame with offloads off",
			   -EPROTO);
	if (!(vh->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM))
		return 0;

	start = vh->csum_start;
	at = start + vh->csum_offset;
	if (at + 2 > len)
		return bad(why, "tap gave csum offsets outside the frame",
			   -EPROTO);
	/*
	 * Like the kernel's skb_checksum_help(): the checksum field holds
	 * the pseudo-header sum, so summing over it and complementing gives
	 * the final value; 0 is sent as 0xffff (same in ones' complement,
	 * and UDP reserves 0 for "no checksum").
	 */
	csum = (__u16)~rx_csum(rb, start, len);
	if (!csum)
		csum = 0xffff;
	hi = rx_byte(rb, at);
	lo = rx_byte(rb, at + 1);
	if (!hi || !lo)
		return bad(why, "csum field outside the buffer", -EPROTO);
	*hi = (unsigned char)(csum >> 8);
	*lo = (unsigned char)csum;
	return 0;
}
