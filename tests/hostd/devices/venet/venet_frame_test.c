// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * venet_frame: venet_sg / flat frames <-> virtio_net_hdr + iovecs, on a
 * synthetic guest RAM. The malformed cases are the point: each must come
 * back as an error with a reason, never a crash (run under ASan/UBSan).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "venet_frame.h"
#include "tap.h"

#define RAM_SIZE (1u << 20)

static unsigned char *ram;
static unsigned int xlate_calls;
/* test hook: runs inside xlate (simulates a guest racing the host) */
static void (*xlate_hook)(unsigned int call);

static void *test_xlate(void *ctx, __u64 gpa, __u64 len)
{
	(void)ctx;
	xlate_calls++;
	if (xlate_hook)
		xlate_hook(xlate_calls);
	/* overflow-safe: gpa + len may wrap */
	if (!len || gpa >= RAM_SIZE || len > RAM_SIZE - gpa)
		return NULL;
	return ram + gpa;
}

static const struct venet_mem mem = { .xlate = test_xlate };

#define ALL_CAPS (VENET_CAP_SG | VENET_CAP_TSO4 | VENET_CAP_TSO6 | \
		  VENET_CAP_ECN)

static int setup(void **state)
{
	(void)state;
	ram = calloc(1, RAM_SIZE);
	xlate_calls = 0;
	xlate_hook = NULL;
	return ram ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(ram);
	ram = NULL;
	return 0;
}

/* A venet_sg at @gpa with @count iovs: returns it for the test to fill. */
static struct venet_sg *sg_at(__u64 gpa)
{
	return (struct venet_sg *)(ram + gpa);
}

/* sg with n iovs of @each bytes at 0x10000, 0x20000, ... */
static struct venet_sg *make_sg(unsigned int n, __u32 each)
{
	struct venet_sg *sg = sg_at(0x1000);
	unsigned int i;

	memset(sg, 0, VENET_SG_SIZE(n));
	sg->cookie = 0xdeadbeef;
	sg->count = n;
	sg->len = n * each;
	for (i = 0; i < n; i++) {
		sg->iov[i].len = each;
		sg->iov[i].ptr = 0x10000 + (__u64)i * 0x4000;
		sg->iov[i].reserved = 0xffffffff;	/* ignored */
	}
	return sg;
}

#define SG_GPA 0x1000
#define SG_DESC_LEN VENET_SG_SIZE(VENET_SG_MAX_IOVS)

/* ---- tx flat ---- */

static void tx_flat_ok(void **state)
{
	struct venet_txframe f;
	const char *why = NULL;

	(void)state;
	assert_int_equal(venet_tx_flat(&mem, 0x3000, 60, &f, &why), 0);
	assert_int_equal(f.niov, 2);
	assert_ptr_equal(f.iov[0].iov_base, &f.vh);
	assert_int_equal(f.iov[0].iov_len, TAP_VNET_HDR_LEN);
	assert_ptr_equal(f.iov[1].iov_base, ram + 0x3000);
	assert_int_equal(f.iov[1].iov_len, 60);
	assert_int_equal(f.len, 60);
	assert_int_equal(f.vh.flags, 0);
	assert_int_equal(f.vh.gso_type, VIRTIO_NET_HDR_GSO_NONE);
	assert_false(f.gso);
}

static void tx_flat_bad(void **state)
{
	struct venet_txframe f;
	const char *why = NULL;

	(void)state;
	assert_int_equal(venet_tx_flat(&mem, 0x3000, 13, &f, &why), -EINVAL);
	assert_non_null(why);
	assert_int_equal(venet_tx_flat(&mem, 0x3000, 0, &f, &why), -EINVAL);
	assert_int_equal(venet_tx_flat(&mem, 0x3000, VENET_FRAME_MAX + 1, &f,
				       &why), -EINVAL);
	/* the descriptor's u64 len must not be truncated to 32 bits */
	assert_int_equal(venet_tx_flat(&mem, 0x3000, (1ull << 32) + 60, &f,
				       &why), -EINVAL);
	/* past the end of RAM, and a gpa that wraps */
	assert_int_equal(venet_tx_flat(&mem, RAM_SIZE - 30, 60, &f, &why),
			 -EFAULT);
	assert_int_equal(venet_tx_flat(&mem, ~0ull - 10, 60, &f, &why),
			 -EFAULT);
}

/* ---- tx sg ---- */

static void tx_sg_csum_ok(void **state)
{
	struct venet_txframe f;
	struct venet_sg *sg = make_sg(3, 100);
	const char *why = NULL;
	int i;

	(void)state;
	sg->flags = VENET_SG_FLAG_NEEDS_CSUM;
	sg->csum.start = 34;
	sg->csum.offset = 16;
	assert_int_equal(venet_tx_sg(&mem, ALL_CAPS, SG_GPA, SG_DESC_LEN, &f,
				     &why), 0);
	assert_int_equal(f.niov, 4);
	assert_int_equal(f.len, 300);
	for (i = 0; i < 3; i++) {
		assert_ptr_equal(f.iov[1 + i].iov_base,
				 ram + 0x10000 + i * 0x4000);
		assert_int_equal(f.iov[1 + i].iov_len, 100);
	}
	assert_int_equal(f.vh.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	assert_int_equal(f.vh.csum_start, 34);
	assert_int_equal(f.vh.csum_offset, 16);
	assert_int_equal(f.vh.gso_type, VIRTIO_NET_HDR_GSO_NONE);
	assert_false(f.gso);
}

static void tx_sg_gso_ok(void **state)
{
	struct venet_txframe f;
	struct venet_sg *sg = make_sg(17, 3800);
	const char *why = NULL;

	(void)state;
	sg->flags = VENET_SG_FLAG_NEEDS_CSUM | VENET_SG_FLAG_GSO |
		    VENET_SG_FLAG_ECN;
	sg->csum.start = 34;
	sg->csum.offset = 16;
	sg->gso.type = VENET_GSO_TYPE_TCPV4;
	sg->gso.hdrlen = 66;
	sg->gso.size = 1448;
	assert_int_equal(venet_tx_sg(&mem, ALL_CAPS, SG_GPA, SG_DESC_LEN, &f,
				     &why), 0);
	assert_int_equal(f.niov, 18);
	assert_true(f.gso);
	assert_int_equal(f.vh.gso_type,
			 VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN);
	assert_int_equal(f.vh.gso_size, 1448);
	assert_int_equal(f.vh.hdr_len, 66);

	sg->flags &= ~VENET_SG_FLAG_ECN;
	sg->gso.type = VENET_GSO_TYPE_TCPV6;
	assert_int_equal(venet_tx_sg(&mem, ALL_CAPS, SG_GPA, SG_DESC_LEN, &f,
				     &why), 0);
	assert_int_equal(f.vh.gso_type, VIRTIO_NET_HDR_GSO_TCPV6);

	/* the largest frame is accepted: 65535 + 18 */
	sg = make_sg(1, VENET_FRAME_MAX);
	sg->iov[0].ptr = 0x40000;
	sg->flags = VENET_SG_FLAG_NEEDS_CSUM | VENET_SG_FLAG_GSO;
	sg->csum.start = 54;
	sg->csum.offset = 16;
	sg->gso.type = VENET_GSO_TYPE_TCPV6;
	sg->gso.hdrlen = 86;
	sg->gso.size = 1428;
	assert_int_equal(venet_tx_sg(&mem, ALL_CAPS, SG_GPA, SG_DESC_LEN, &f,
				     &why), 0);
}

/* zero-length iovs carry nothing: skipped, their ptr never translated */
static void tx_sg_empty_iov(void **state)
{
	struct venet_txframe f;
	struct venet_sg *sg = make_sg(3, 100);
	const char *why = NULL;

	(void)state;
	sg->iov[1].len = 0;
	sg->iov[1].ptr = ~0ull;
	sg->len = 200;
	assert_int_equal(venet_tx_sg(&mem, ALL_CAPS, SG_GPA, SG_DESC_LEN, &f,
				     &why), 0);
	assert_int_equal(f.niov, 3);
	assert_int_equal(f.len, 200);
}

#define EXPECT_BAD(err) do {						\
	why = NULL;							\
	assert_int_equal(venet_tx_sg(&mem, caps, SG_GPA, dlen, &f, &why), \
			 (err));					\
	assert_non_null(why);						\
} while (0)

static void tx_sg_malformed(void **state)
{
	struct venet_txframe f;
	struct venet_sg *sg;
	const char *why;
	__u32 caps = ALL_CAPS;
	__u64 dlen = SG_DESC_LEN;

	(void)state;

	/* count: 0, one too many, huge */
	sg = make_sg(2, 100);
	sg->count = 0;
	EXPECT_BAD(-EINVAL);
	sg->count = VENET_SG_MAX_IOVS + 1;
	EXPECT_BAD(-EINVAL);
	sg->count = 0xffffffffu;
	EXPECT_BAD(-EINVAL);

	/* the iov array does not fit in the descriptor */
	sg = make_sg(4, 100);
	dlen = VENET_SG_SIZE(3);
	EXPECT_BAD(-EINVAL);
	dlen = sizeof(struct venet_sg) - 1;
	EXPECT_BAD(-EINVAL);
	dlen = 0;
	EXPECT_BAD(-EINVAL);
	dlen = SG_DESC_LEN;

	/* lengths: short of sg.len, beyond it, u32 wrap-around */
	sg = make_sg(4, 100);
	sg->len = 401;
	EXPECT_BAD(-EINVAL);
	sg->len = 399;
	EXPECT_BAD(-EINVAL);
	sg = make_sg(2, 100);
	sg->iov[0].len = 0xffffffffu;
	sg->iov[1].len = 201;	/* sums to 200 mod 2^32 */
	sg->len = 200;
	EXPECT_BAD(-EINVAL);

	/* frame too short / too long */
	sg = make_sg(1, 13);
	EXPECT_BAD(-EINVAL);
	sg = make_sg(2, 40000);
	EXPECT_BAD(-EINVAL);

	/* an iov past the end of RAM, one that wraps, a 0 gpa that is fine */
	sg = make_sg(2, 100);
	sg->iov[1].ptr = RAM_SIZE - 50;
	EXPECT_BAD(-EFAULT);
	sg->iov[1].ptr = ~0ull - 20;
	EXPECT_BAD(-EFAULT);

	/* the venet_sg itself outside RAM (header, or just its iov array) */
	why = NULL;
	assert_int_equal(venet_tx_sg(&mem, caps, RAM_SIZE - 8, dlen, &f, &why),
			 -EFAULT);
	assert_non_null(why);
	memset(ram + RAM_SIZE - 48, 0, 48);
	((struct venet_sg *)(ram + RAM_SIZE - 48))->count = 2;
	((struct venet_sg *)(ram + RAM_SIZE - 48))->len = 100;
	why = NULL;
	assert_int_equal(venet_tx_sg(&mem, caps, RAM_SIZE - 48, dlen, &f,
				     &why), -EFAULT);
	assert_non_null(why);

	/* unknown flags */
	sg = make_sg(2, 100);
	sg->flags = 1u << 7;
	EXPECT_BAD(-EINVAL);

	/* csum offsets outside the frame, incl. u16 maxima */
	sg->flags = VENET_SG_FLAG_NEEDS_CSUM;
	sg->csum.start = 190;
	sg->csum.offset = 9;	/* 190 + 9 + 2 = 201 > 200 */
	EXPECT_BAD(-EINVAL);
	sg->csum.start = 0xffff;
	sg->csum.offset = 0xffff;
	EXPECT_BAD(-EINVAL);

	/* GSO: unknown type, not negotiated, no csum, size 0, hdrlen */
	sg = make_sg(4, 1000);
	sg->flags = VENET_SG_FLAG_NEEDS_CSUM | VENET_SG_FLAG_GSO;
	sg->csum.start = 34;
	sg->csum.offset = 16;
	sg->gso.size = 1448;
	sg->gso.hdrlen = 66;
	sg->gso.type = 7;
	EXPECT_BAD(-EINVAL);
	sg->gso.type = 0xff;
	EXPECT_BAD(-EINVAL);
	sg->gso.type = VENET_GSO_TYPE_UDP;	/* UFO never negotiated */
	EXPECT_BAD(-EINVAL);
	sg->gso.type = VENET_GSO_TYPE_TCPV6;
	caps = VENET_CAP_SG | VENET_CAP_TSO4;
	EXPECT_BAD(-EINVAL);
	sg->gso.type = VENET_GSO_TYPE_TCPV4;
	sg->flags |= VENET_SG_FLAG_ECN;	/* ECN not negotiated */
	EXPECT_BAD(-EINVAL);
	caps = ALL_CAPS;
	sg->flags = VENET_SG_FLAG_GSO;	/* GSO without NEEDS_CSUM */
	EXPECT_BAD(-EINVAL);
	sg->flags = VENET_SG_FLAG_NEEDS_CSUM | VENET_SG_FLAG_GSO;
	sg->gso.size = 0;
	EXPECT_BAD(-EINVAL);
	sg->gso.size = 1448;
	sg->gso.hdrlen = 4001;
	EXPECT_BAD(-EINVAL);
	sg->gso.hdrlen = 4000;	/* == len: allowed by the contract */
	why = NULL;
	assert_int_equal(venet_tx_sg(&mem, caps, SG_GPA, dlen, &f, &why), 0);
}

/*
 * The guest rewrites the venet_sg while the host is parsing it (here:
 * right after the host read the header, inside the second translation).
 * The host must keep using what it read first.
 */
static void race_hook(unsigned int call)
{
	struct venet_sg *sg = sg_at(SG_GPA);

	if (call == 2) {
		sg->count = 64;
		sg->len = 0xffffffffu;
		sg->flags = 0xffffffffu;
	}
}

static void tx_sg_guest_races(void **state)
{
	struct venet_txframe f;
	const char *why = NULL;

	(void)state;
	make_sg(2, 100);
	xlate_calls = 0;
	xlate_hook = race_hook;
	assert_int_equal(venet_tx_sg(&mem, ALL_CAPS, SG_GPA, SG_DESC_LEN, &f,
				     &why), 0);
	xlate_hook = NULL;
	assert_int_equal(f.len, 200);
	assert_int_equal(f.niov, 3);
	assert_int_equal(f.vh.flags, 0);
}

/* random garbage: must never crash, and anything accepted is consistent */
static void tx_sg_fuzz(void **state)
{
	struct venet_txframe f;
	const char *why;
	unsigned int i, seed = 12345;
	int j;

	(void)state;
	for (i = 0; i < 20000; i++) {
		unsigned char *p = ram + SG_GPA;
		size_t k, n = VENET_SG_SIZE(4);
		__u64 sum = 0;

		for (k = 0; k < n; k++)
			p[k] = (unsigned char)rand_r(&seed);
		/* keep the counts small half of the time so deeper checks run */
		if (i & 1) {
			struct venet_sg *sg = sg_at(SG_GPA);

			sg->count = 1 + (sg->count & 3);
			for (k = 0; k < sg->count; k++) {
				sg->iov[k].len &= 0x3fff;
				sg->iov[k].ptr &= (RAM_SIZE * 2 - 1);
			}
		}
		why = NULL;
		if (venet_tx_sg(&mem, ALL_CAPS | VENET_CAP_UFO, SG_GPA, n, &f,
				&why) != 0) {
			assert_non_null(why);
			continue;
		}
		for (j = 1; j < f.niov; j++) {
			unsigned char *b = f.iov[j].iov_base;

			assert_true(b >= ram &&
				    b + f.iov[j].iov_len <= ram + RAM_SIZE);
			sum += f.iov[j].iov_len;
		}
		assert_int_equal(sum, f.len);
	}
}

/* ---- rx ---- */

static void rx_flat_buffers(void **state)
{
	struct venet_rxbuf rb;
	const char *why = NULL;

	(void)state;
	assert_int_equal(venet_rx_flat(&mem, 0x8000, 1518, &rb, &why), 0);
	assert_int_equal(rb.niov, 2);
	assert_int_equal(rb.cap, 1518);
	assert_ptr_equal(rb.iov[1].iov_base, ram + 0x8000);

	/* a huge buffer is clamped to the largest frame */
	assert_int_equal(venet_rx_flat(&mem, 0x8000, 1ull << 40, &rb, &why),
			 0);
	assert_int_equal(rb.cap, VENET_FRAME_MAX);

	assert_int_equal(venet_rx_flat(&mem, 0x8000, 10, &rb, &why), -EINVAL);
	assert_int_equal(venet_rx_flat(&mem, RAM_SIZE - 100, 1518, &rb, &why),
			 -EFAULT);
	assert_int_equal(venet_rx_flat(&mem, ~0ull - 100, 1518, &rb, &why),
			 -EFAULT);
}

/* A datagram socket stands in for the tap: one message = header + frame. */
static void rx_read_datagram(void **state)
{
	struct venet_rxbuf rb;
	struct virtio_net_hdr vh_in = { .flags = 0 }, vh;
	unsigned char frame[100];
	struct iovec iov[2];
	const char *why = NULL;
	int sv[2];
	ssize_t n;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0,
				    sv), 0);
	assert_int_equal(venet_rx_flat(&mem, 0x8000, 1518, &rb, &why), 0);
	assert_int_equal(venet_rx_read(sv[0], &rb, &vh), -EAGAIN);

	memset(frame, 0xab, sizeof(frame));
	vh_in.gso_type = VIRTIO_NET_HDR_GSO_NONE;
	iov[0].iov_base = &vh_in;
	iov[0].iov_len = sizeof(vh_in);
	iov[1].iov_base = frame;
	iov[1].iov_len = sizeof(frame);
	assert_int_equal(writev(sv[1], iov, 2),
			 sizeof(vh_in) + sizeof(frame));
	n = venet_rx_read(sv[0], &rb, &vh);
	assert_int_equal(n, sizeof(frame));
	assert_memory_equal(ram + 0x8000, frame, sizeof(frame));
	assert_int_equal(venet_rx_finish_flat(&rb, &vh, (__u32)n, &why), 0);

	/* exactly the buffer's size fits; one byte more does not */
	assert_int_equal(venet_rx_flat(&mem, 0x8000, 100, &rb, &why), 0);
	assert_int_equal(writev(sv[1], iov, 2),
			 sizeof(vh_in) + sizeof(frame));
	assert_int_equal(venet_rx_read(sv[0], &rb, &vh), 100);
	assert_int_equal(venet_rx_flat(&mem, 0x8000, 99, &rb, &why), 0);
	assert_int_equal(writev(sv[1], iov, 2),
			 sizeof(vh_in) + sizeof(frame));
	assert_int_equal(venet_rx_read(sv[0], &rb, &vh), -EMSGSIZE);

	/* a runt (shorter than an Ethernet header) is refused */
	iov[1].iov_len = 10;
	assert_int_equal(writev(sv[1], iov, 2), sizeof(vh_in) + 10);
	assert_int_equal(venet_rx_read(sv[0], &rb, &vh), -EMSGSIZE);
	close(sv[0]);
	close(sv[1]);
}

/* independent one's-complement sum over a flat buffer */
static __u16 ref_csum(const unsigned char *p, size_t len, __u32 sum)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (__u32)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

static void rx_finish_csum(void **state)
{
	struct venet_rxbuf rb;
	struct virtio_net_hdr vh;
	const char *why = NULL;
	unsigned char *f = ram + 0x8000;
	const __u32 len = 14 + 20 + 8 + 33;	/* odd payload */
	const __u32 l4 = 34;
	__u32 i, pseudo;

	(void)state;
	/* Ethernet + IPv4 + UDP frame with a partial (pseudo-header) sum */
	memset(f, 0, len);
	f[12] = 0x08;
	f[14] = 0x45;
	f[23] = 17;			/* UDP */
	f[26] = 10; f[29] = 1;		/* 10.0.0.1 */
	f[30] = 10; f[33] = 2;		/* 10.0.0.2 */
	f[l4 + 1] = 7; f[l4 + 3] = 9;	/* ports */
	f[l4 + 5] = (unsigned char)(len - l4);
	for (i = l4 + 8; i < len; i++)
		f[i] = (unsigned char)(i * 7);
	pseudo = ref_csum(f + 26, 8, 17 + (len - l4));
	f[l4 + 6] = (unsigned char)(pseudo >> 8);
	f[l4 + 7] = (unsigned char)pseudo;

	memset(&vh, 0, sizeof(vh));
	vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	vh.csum_start = l4;
	vh.csum_offset = 6;
	assert_int_equal(venet_rx_flat(&mem, 0x8000, 1518, &rb, &why), 0);
	assert_int_equal(venet_rx_finish_flat(&rb, &vh, len, &why), 0);

	/* verify: pseudo header + UDP header + data sums to 0xffff */
	assert_int_equal(ref_csum(f + l4, len - l4,
				  ref_csum(f + 26, 8, 17 + (len - l4))),
			 0xffff);

	/* offsets outside the frame, GSO: refused */
	vh.csum_offset = (__u16)(len - l4 - 1);
	assert_int_equal(venet_rx_finish_flat(&rb, &vh, len, &why), -EPROTO);
	vh.flags = 0;
	vh.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	assert_int_equal(venet_rx_finish_flat(&rb, &vh, len, &why), -EPROTO);
}

/* ---- rx, RXSG ---- */

/* a guest rx venet_sg: n iovs of @each bytes (make_sg, flags etc. zero) */
static struct venet_sg *make_rx_sg(unsigned int n, __u32 each)
{
	struct venet_sg *sg = make_sg(n, each);

	/* the host must ignore what the guest left in these */
	sg->flags = 0xffffffffu;
	sg->len = 7;
	sg->gso.type = 0xee;
	return sg;
}

static void rx_sg_buffers(void **state)
{
	struct venet_rxbuf rb;
	const char *why = NULL;
	struct venet_sg *sg;
	int i;

	(void)state;
	make_rx_sg(4, 4096);
	assert_int_equal(venet_rx_sg(&mem, SG_GPA, SG_DESC_LEN, &rb, &why), 0);
	assert_int_equal(rb.niov, 5);
	assert_int_equal(rb.cap, 4 * 4096);
	assert_ptr_equal(rb.gsg, ram + SG_GPA);
	for (i = 0; i < 4; i++) {
		assert_ptr_equal(rb.iov[1 + i].iov_base,
				 ram + 0x10000 + (size_t)i * 0x4000);
		assert_int_equal(rb.iov[1 + i].iov_len, 4096);
	}

	/* 17 pages: used only up to the largest frame, the last one cut */
	make_rx_sg(17, 4096);
	assert_int_equal(venet_rx_sg(&mem, SG_GPA, SG_DESC_LEN, &rb, &why), 0);
	assert_int_equal(rb.cap, VENET_FRAME_MAX);
	assert_int_equal(rb.niov, 18);
	assert_int_equal(rb.iov[17].iov_len, VENET_FRAME_MAX - 16 * 4096);

	/* iovs past the largest frame are never translated: out of RAM ok */
	sg = make_rx_sg(20, 4096);
	for (i = 17; i < 20; i++)
		sg->iov[i].ptr = ~0ull - 10;
	assert_int_equal(venet_rx_sg(&mem, SG_GPA, SG_DESC_LEN, &rb, &why), 0);
	assert_int_equal(rb.cap, VENET_FRAME_MAX);

	/* empty iovs are skipped, their ptr unchecked */
	sg = make_rx_sg(3, 100);
	sg->iov[1].len = 0;
	sg->iov[1].ptr = ~0ull;
	assert_int_equal(venet_rx_sg(&mem, SG_GPA, SG_DESC_LEN, &rb, &why), 0);
	assert_int_equal(rb.niov, 3);
	assert_int_equal(rb.cap, 200);
}

/*
 * rx stores through the guest's venet_sg: one that is not 8-byte aligned
 * is refused before anything is translated or written (5e8fef9 took it,
 * and publishing into it was a misaligned store UBSan aborts on).
 */
static void rx_sg_misaligned(void **state)
{
	struct venet_rxbuf rb;
	const char *why = NULL;

	(void)state;
	make_rx_sg(4, 4096);
	memmove(ram + SG_GPA + 4, ram + SG_GPA, VENET_SG_SIZE(4));
	assert_int_equal(venet_rx_sg(&mem, SG_GPA + 4, SG_DESC_LEN, &rb, &why),
			 -EINVAL);
	assert_string_equal(why, "venet_sg not 8-byte aligned");
	assert_null(rb.gsg);
}

static void rx_sg_malformed(void **state)
{
	struct venet_rxbuf rb;
	const char *why;
	struct venet_sg *sg;

	(void)state;
#define RX_SG_BAD(gpa, dlen, err) do {					\
		why = NULL;						\
		assert_int_equal(venet_rx_sg(&mem, gpa, dlen, &rb, &why), \
				 err);					\
		assert_non_null(why);					\
		assert_null(rb.gsg);					\
		assert_int_equal(rb.cap, 0);				\
	} while (0)

	/* count 0, one too many, huge */
	sg = make_rx_sg(4, 4096);
	sg->count = 0;
	RX_SG_BAD(SG_GPA, SG_DESC_LEN, -EINVAL);
	sg->count = VENET_SG_MAX_IOVS + 1;
	RX_SG_BAD(SG_GPA, VENET_SG_SIZE(VENET_SG_MAX_IOVS + 1), -EINVAL);
	sg->count = 0xffffffffu;
	RX_SG_BAD(SG_GPA, ~0ull, -EINVAL);

	/* descriptor too short for the header / for the iov array */
	sg->count = 4;
	RX_SG_BAD(SG_GPA, sizeof(struct venet_sg) - 1, -EINVAL);
	RX_SG_BAD(SG_GPA, VENET_SG_SIZE(4) - 1, -EINVAL);

	/* header, iov array outside RAM; a wrapping gpa */
	RX_SG_BAD(RAM_SIZE - 16, SG_DESC_LEN, -EFAULT);
	RX_SG_BAD(~0ull - 15, SG_DESC_LEN, -EFAULT);
	memcpy(ram + RAM_SIZE - sizeof(*sg), sg, sizeof(*sg));
	RX_SG_BAD(RAM_SIZE - sizeof(*sg), SG_DESC_LEN, -EFAULT);

	/* an iov out of RAM, straddling its end, wrapping */
	sg = make_rx_sg(4, 4096);
	sg->iov[2].ptr = RAM_SIZE;
	RX_SG_BAD(SG_GPA, SG_DESC_LEN, -EFAULT);
	sg->iov[2].ptr = RAM_SIZE - 100;
	RX_SG_BAD(SG_GPA, SG_DESC_LEN, -EFAULT);
	sg->iov[2].ptr = ~0ull - 100;
	RX_SG_BAD(SG_GPA, SG_DESC_LEN, -EFAULT);
	/* a huge iov is cut to the largest frame, which is out of RAM here */
	sg->iov[2].ptr = RAM_SIZE - 0x8000;
	sg->iov[2].len = 0xffffffffu;
	RX_SG_BAD(SG_GPA, SG_DESC_LEN, -EFAULT);

	/* capacity too small: less than an Ethernet header, or nothing */
	make_rx_sg(1, 13);
	RX_SG_BAD(SG_GPA, SG_DESC_LEN, -EINVAL);
	sg = make_rx_sg(4, 0);
	RX_SG_BAD(SG_GPA, SG_DESC_LEN, -EINVAL);
#undef RX_SG_BAD
}

/* the guest rewrites count after our one read: the copy rules */
static void rx_sg_guest_races(void **state)
{
	struct venet_rxbuf rb;
	const char *why = NULL;

	(void)state;
	make_rx_sg(2, 100);
	xlate_calls = 0;
	xlate_hook = race_hook;
	assert_int_equal(venet_rx_sg(&mem, SG_GPA, SG_DESC_LEN, &rb, &why), 0);
	xlate_hook = NULL;
	assert_int_equal(rb.niov, 3);
	assert_int_equal(rb.cap, 200);
}

static void rx_vnet_conversion(void **state)
{
	struct virtio_net_hdr vh;
	struct venet_sg out;
	const char *why;

	(void)state;
	memset(&vh, 0, sizeof(vh));
	vh.gso_type = VIRTIO_NET_HDR_GSO_NONE;
	assert_int_equal(venet_vnet_to_rx_sg(&vh, 60, &out, &why), 0);
	assert_int_equal(out.flags, 0);
	assert_int_equal(out.len, 60);

	/* a GSO TCPv6 frame with ECN and a partial checksum */
	vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	vh.csum_start = 54;
	vh.csum_offset = 16;
	vh.gso_type = VIRTIO_NET_HDR_GSO_TCPV6 | VIRTIO_NET_HDR_GSO_ECN;
	vh.gso_size = 1428;
	vh.hdr_len = 86;
	assert_int_equal(venet_vnet_to_rx_sg(&vh, 65000, &out, &why), 0);
	assert_int_equal(out.flags, VENET_SG_FLAG_NEEDS_CSUM |
			 VENET_SG_FLAG_GSO | VENET_SG_FLAG_ECN);
	assert_int_equal(out.csum.start, 54);
	assert_int_equal(out.csum.offset, 16);
	assert_int_equal(out.gso.type, VENET_GSO_TYPE_TCPV6);
	assert_int_equal(out.gso.size, 1428);
	assert_int_equal(out.gso.hdrlen, 86);
	assert_int_equal(out.len, 65000);

	/* TCPv4 GSO with only DATA_VALID (forwarded GRO frames) */
	vh.flags = VIRTIO_NET_HDR_F_DATA_VALID;
	vh.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	assert_int_equal(venet_vnet_to_rx_sg(&vh, 9000, &out, &why), 0);
	assert_int_equal(out.flags, VENET_SG_FLAG_DATA_VALID |
			 VENET_SG_FLAG_GSO);
	assert_int_equal(out.gso.type, VENET_GSO_TYPE_TCPV4);

#define RX_CONV_BAD(l) do {						\
		why = NULL;						\
		assert_int_equal(venet_vnet_to_rx_sg(&vh, l, &out, &why), \
				 -EPROTO);				\
		assert_non_null(why);					\
	} while (0)
	/* GSO without any checksum state */
	vh.flags = 0;
	RX_CONV_BAD(9000);
	/* csum field past the end of the frame, and exactly at it */
	vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	vh.gso_type = VIRTIO_NET_HDR_GSO_NONE;
	vh.csum_start = 0xffff;
	vh.csum_offset = 0xffff;
	RX_CONV_BAD(9000);
	vh.csum_start = 100;
	vh.csum_offset = 16;
	RX_CONV_BAD(117);
	assert_int_equal(venet_vnet_to_rx_sg(&vh, 118, &out, &why), 0);
	/* GSO types we never enable, size 0, hdr_len past the frame */
	vh.gso_type = VIRTIO_NET_HDR_GSO_UDP;
	RX_CONV_BAD(9000);
	vh.gso_type = 5;	/* UDP_L4 */
	RX_CONV_BAD(9000);
	vh.gso_type = 0x7f;
	RX_CONV_BAD(9000);
	vh.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	vh.gso_size = 0;
	RX_CONV_BAD(9000);
	vh.gso_size = 1448;
	vh.hdr_len = 9001;
	RX_CONV_BAD(9000);
#undef RX_CONV_BAD
}

/* end to end: tap stand-in -> guest iovs -> the guest's venet_sg */
static void rx_sg_read_publish(void **state)
{
	struct venet_rxbuf rb;
	struct virtio_net_hdr vh_in, vh;
	static unsigned char frame[10000];
	struct venet_sg out, *sg;
	struct iovec iov[2];
	const char *why = NULL;
	int sv[2];
	ssize_t n;
	size_t i;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0,
				    sv), 0);
	for (i = 0; i < sizeof(frame); i++)
		frame[i] = (unsigned char)(i * 13 + 1);
	memset(&vh_in, 0, sizeof(vh_in));
	vh_in.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	vh_in.csum_start = 34;
	vh_in.csum_offset = 16;
	vh_in.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	vh_in.gso_size = 1448;
	vh_in.hdr_len = 66;
	iov[0].iov_base = &vh_in;
	iov[0].iov_len = sizeof(vh_in);
	iov[1].iov_base = frame;
	iov[1].iov_len = sizeof(frame);

	/* spans three 4 KiB iovs */
	sg = make_rx_sg(4, 4096);
	assert_int_equal(venet_rx_sg(&mem, SG_GPA, SG_DESC_LEN, &rb, &why), 0);
	assert_int_equal(writev(sv[1], iov, 2), sizeof(vh_in) + sizeof(frame));
	n = venet_rx_read(sv[0], &rb, &vh);
	assert_int_equal(n, sizeof(frame));
	for (i = 0; i < sizeof(frame); i++)
		assert_int_equal(ram[0x10000 + (i / 4096) * 0x4000 + i % 4096],
				 frame[i]);
	assert_int_equal(venet_vnet_to_rx_sg(&vh, (__u32)n, &out, &why), 0);
	venet_rx_sg_publish(&rb, &out);
	assert_int_equal(sg->flags, VENET_SG_FLAG_NEEDS_CSUM |
			 VENET_SG_FLAG_GSO);
	assert_int_equal(sg->len, sizeof(frame));
	assert_int_equal(sg->csum.start, 34);
	assert_int_equal(sg->csum.offset, 16);
	assert_int_equal(sg->gso.type, VENET_GSO_TYPE_TCPV4);
	assert_int_equal(sg->gso.size, 1448);
	assert_int_equal(sg->gso.hdrlen, 66);
	/* the guest's own fields are untouched */
	assert_int_equal(sg->count, 4);
	assert_int_equal(sg->cookie, 0xdeadbeef);
	assert_int_equal(sg->iov[3].ptr, 0x10000 + 3 * 0x4000);

	/* capacity one byte short: dropped, nothing beyond the iovs */
	make_rx_sg(2, 4096);
	sg->iov[1].len = sizeof(frame) - 4096 - 1;
	ram[0x14000 + sizeof(frame) - 4096 - 1] = 0x5a;
	assert_int_equal(venet_rx_sg(&mem, SG_GPA, SG_DESC_LEN, &rb, &why), 0);
	assert_int_equal(rb.cap, sizeof(frame) - 1);
	assert_int_equal(writev(sv[1], iov, 2), sizeof(vh_in) + sizeof(frame));
	assert_int_equal(venet_rx_read(sv[0], &rb, &vh), -EMSGSIZE);
	assert_int_equal(ram[0x14000 + sizeof(frame) - 4096 - 1], 0x5a);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(tx_flat_ok, setup, teardown),
		cmocka_unit_test_setup_teardown(tx_flat_bad, setup, teardown),
		cmocka_unit_test_setup_teardown(tx_sg_csum_ok, setup, teardown),
		cmocka_unit_test_setup_teardown(tx_sg_gso_ok, setup, teardown),
		cmocka_unit_test_setup_teardown(tx_sg_empty_iov, setup,
						teardown),
		cmocka_unit_test_setup_teardown(tx_sg_malformed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(tx_sg_guest_races, setup,
						teardown),
		cmocka_unit_test_setup_teardown(tx_sg_fuzz, setup, teardown),
		cmocka_unit_test_setup_teardown(rx_flat_buffers, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rx_read_datagram, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rx_finish_csum, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rx_sg_buffers, setup, teardown),
		cmocka_unit_test_setup_teardown(rx_sg_misaligned, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rx_sg_malformed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rx_sg_guest_races, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rx_vnet_conversion, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rx_sg_read_publish, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
