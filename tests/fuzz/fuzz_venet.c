// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Fuzz target "venet": the venet device (id 1, strict=0, queues=2; id 2,
 * strict=1, queues=3) over a fake tap (fake_tap.h, a socketpair per tap
 * queue): tx frames flat and scatter-gather (with the checksum and GSO
 * fields the fuzzer writes), rx into flat and RXSG buffers (venet_sg
 * anywhere, aligned or not, overlapping or not), frames from any tap
 * queue (detached or not) with any virtio_net_hdr, a tap queue that is
 * full, lost or refused, queue pairs asked for (QUEUES) or not, before
 * or after the rings, and moved (SETACTIVE) under traffic. Rings: DEVSHM
 * id 2P is pair P's rx, 2P + 1 its tx (the shared fake guest picks ids
 * 0..7).
 *
 * Opcode 6 is data (a tx frame, an rx buffer, a frame from the tap, the
 * tap's side), opcode 11 the device's calls (LINKUP, NEGCAP, QUEUES,
 * ...). What
 * venet writes to the tap must be a virtio_net_hdr and a frame no longer
 * than VENET_FRAME_MAX: anything else aborts.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "fake_tap.h"
#include "fuzz_guest.h"
#include "venet_frame.h"

static const char *const devices[] = {
	"type=venet,id=1,tap=fuzz1,queues=2",
	"type=venet,id=2,tap=fuzz2,strict=1,queues=3", NULL
};

static uint8_t frame[VENET_FRAME_MAX + 64];

/* Bytes from the input, repeated to @len (frames longer than inputs). */
static void fill(struct fuzz_in *in, uint8_t *p, size_t len)
{
	uint8_t n = fuzz_u8(in) % 32;
	uint8_t pat[32];
	size_t i;

	for (i = 0; i < n; i++)
		pat[i] = fuzz_u8(in);
	for (i = 0; i < len; i++)
		p[i] = n ? pat[i % n] : (uint8_t)i;
}

/* An Ethernet/IPv4/TCP-ish frame of @len at guest @gpa. */
static void guest_frame(struct fuzz_in *in, uint64_t gpa, uint32_t len)
{
	uint8_t *p = fuzz_ptr(gpa, len);

	if (p)
		fill(in, p, len);
}

/* A venet_sg at @at with @n (<= 5) iovs; false when it is not RAM. The
 * guest may put it anywhere: built here, copied there bytewise. */
static bool guest_sg(struct fuzz_in *in, uint64_t at, uint32_t n, bool tx)
{
	union {
		struct venet_sg sg;
		uint8_t b[VENET_SG_SIZE(5)];
	} u;
	struct venet_sg *sg = &u.sg;
	void *p = fuzz_ptr(at, VENET_SG_SIZE(n));
	uint32_t i, total = 0;

	if (!p)
		return false;
	memset(&u, 0, sizeof(u));
	sg->cookie = at;
	sg->count = n;
	if (fuzz_u8(in) & 1)
		sg->count = fuzz_u32(in);
	for (i = 0; i < n; i++) {
		uint8_t sel = fuzz_u8(in);

		sg->iov[i].len = (sel & 1) ? fuzz_u32(in) :
				 (1u + fuzz_u8(in)) * 16;
		sg->iov[i].ptr = (sel & 2) ? fuzz_gpa(in) :
				 0xa000 + (uint64_t)fuzz_u8(in) * 64;
		total += sg->iov[i].len;
		if (tx)
			guest_frame(in, sg->iov[i].ptr, sg->iov[i].len < 4096 ?
				    sg->iov[i].len : 4096);
	}
	if (tx) {
		sg->len = (fuzz_u8(in) & 1) ? fuzz_u32(in) : total;
		sg->flags = fuzz_u8(in) & 0xf;
		sg->csum.start = fuzz_u16(in);
		sg->csum.offset = fuzz_u16(in);
		sg->gso.type = fuzz_u8(in) % 4;
		sg->gso.hdrlen = fuzz_u16(in);
		sg->gso.size = fuzz_u16(in);
	}
	/* the iovs' frames may overlap it: the guest's problem, so be it */
	memcpy(p, &u, VENET_SG_SIZE(n));
	return true;
}

/* Where a venet_sg goes: mostly aligned, sometimes not, anywhere. */
static uint64_t sg_at(struct fuzz_in *in)
{
	uint8_t sel = fuzz_u8(in);

	if (sel & 1)
		return fuzz_gpa(in) + (sel & 2 ? (sel >> 2) % 8 : 0);
	return 0x9000 + (uint64_t)(fuzz_u8(in) % 32) * 64 +
	       (sel & 2 ? (sel >> 2) % 8 : 0);
}

static void tx_post(struct fuzz_in *in, uint8_t sub)
{
	unsigned int k = fuzz_u8(in);

	if (sub & 4) {
		uint64_t at = sg_at(in);
		uint32_t n = 1 + fuzz_u8(in) % 5;

		if (guest_sg(in, at, n, true))
			fuzz_ring_post(k, at, (sub & 8) ? fuzz_u64(in) :
					      VENET_SG_SIZE(n));
	} else {
		uint64_t at = (sub & 8) ? fuzz_gpa(in) :
			      0xa000 + (uint64_t)fuzz_u8(in) * 16;
		uint32_t len = (sub & 16) ? fuzz_u16(in) : 14u + fuzz_u8(in) * 4;

		guest_frame(in, at, len < 8192 ? len : 8192);
		fuzz_ring_post(k, at, (sub & 32) ? fuzz_u64(in) : len);
	}
}

static void rx_post(struct fuzz_in *in, uint8_t sub)
{
	unsigned int k = fuzz_u8(in);

	if (sub & 4) {
		uint64_t at = sg_at(in);
		uint32_t n = 1 + fuzz_u8(in) % 5;

		if (guest_sg(in, at, n, false))
			fuzz_ring_post(k, at, (sub & 8) ? fuzz_u64(in) :
					      VENET_SG_SIZE(n));
	} else {
		fuzz_ring_post(k, (sub & 8) ? fuzz_gpa(in) :
			       0xc000 + (uint64_t)fuzz_u8(in) * 64,
			       (sub & 16) ? fuzz_u64(in) :
			       (uint64_t)(1u + fuzz_u8(in)) * 64);
	}
}

/* A frame from the network: a virtio_net_hdr and the frame. */
static void tap_inject(struct fuzz_in *in, uint8_t sub)
{
	struct virtio_net_hdr vh = { 0 };
	uint32_t len = (sub & 4) ? fuzz_u16(in) % (VENET_FRAME_MAX + 32) :
		       14u + fuzz_u8(in) * 8;

	/* any queue of any tap: bits 4..7 */
	int peer = fake_tap_peer[(sub >> 4) % FAKE_TAP_FDS];

	if (peer < 0)
		return;
	if (sub & 8) {		/* what a tap with offloads on hands over */
		vh.flags = fuzz_u8(in) & 3;
		vh.gso_type = fuzz_u8(in);
		vh.hdr_len = fuzz_u16(in);
		vh.gso_size = fuzz_u16(in);
		vh.csum_start = fuzz_u16(in);
		vh.csum_offset = fuzz_u16(in);
	}
	memcpy(frame, &vh, sizeof(vh));
	fill(in, frame + sizeof(vh), len);
	send(peer, frame, sizeof(vh) + len, MSG_DONTWAIT);
}

/* Read what venet sent; each frame must be well-formed. */
static void tap_drain(void)
{
	ssize_t n;
	int i;

	for (i = 0; i < FAKE_TAP_FDS; i++)
		while (fake_tap_peer[i] >= 0 &&
		       (n = recv(fake_tap_peer[i], frame, sizeof(frame),
				 MSG_DONTWAIT | MSG_TRUNC)) >= 0) {
			if (n < (ssize_t)sizeof(struct virtio_net_hdr) + 1 ||
			    n > (ssize_t)(sizeof(struct virtio_net_hdr) +
					  VENET_FRAME_MAX)) {
				fprintf(stderr, "venet wrote a %zd-byte frame\n",
					n);
				abort();
			}
		}
}

static void op_data(struct fuzz_in *in)
{
	uint8_t sub = fuzz_u8(in);

	switch (sub & 3) {
	case 0:
		tx_post(in, sub);
		break;
	case 1:
		rx_post(in, sub);
		break;
	case 2:
		tap_inject(in, sub);
		break;
	default:
		if ((sub & 0x1c) == 0x1c &&
		    fake_tap_peer[(sub >> 5) % FAKE_TAP_FDS] >= 0) {
			/* a tap queue goes away (EPOLLHUP on venet's end) */
			close(fake_tap_peer[(sub >> 5) % FAKE_TAP_FDS]);
			fake_tap_peer[(sub >> 5) % FAKE_TAP_FDS] = -1;
		} else if ((sub & 0x1c) == 0x18) {
			fake_tap_refuse = !fake_tap_refuse;
		} else if (!(sub & 4)) {
			tap_drain();	/* else: leave it full */
		}
		break;
	}
	fuzz_pump();
}

static void op_call(struct fuzz_in *in)
{
	uint8_t sub = fuzz_u8(in);
	unsigned int slot = fuzz_u8(in);
	struct venet_capabilities caps = { VENET_CAP_GROUP_SG, 0 };
	struct venet_queues q = { 0, 0 };
	uint8_t mac[6] = { 0 };

	switch (sub % 7) {
	case VENET_FUNC_NEGCAP:
		caps.bits = (sub & 8) ? fuzz_u32(in) : fuzz_u8(in) & 0x3f;
		if (sub & 16)
			caps.gid = fuzz_u32(in);
		fuzz_devcall(in, slot, VENET_FUNC_NEGCAP, &caps, sizeof(caps),
			     sub & 32);
		break;
	case VENET_FUNC_MACQUERY:
		fuzz_devcall(in, slot, VENET_FUNC_MACQUERY, mac, sizeof(mac),
			     sub & 32);
		break;
	case VENET_FUNC_QUEUES:
	case VENET_FUNC_SETACTIVE:
		/* mostly 0 .. 17 pairs (in range, 0, too many), sometimes any */
		q.pairs = (sub & 8) ? fuzz_u32(in) : fuzz_u8(in) % 18u;
		if (sub & 16)
			q.reserved = fuzz_u32(in);
		fuzz_devcall(in, slot, sub % 7, &q, sizeof(q), sub & 32);
		break;
	default:	/* LINKUP, LINKDOWN, FLUSHRX */
		fuzz_devcall(in, slot, sub % 5, NULL, 0, sub & 32);
		break;
	}
	fuzz_pump();
}

static void reset(void)
{
	fake_tap_refuse = false;
}

static void done(void)
{
	tap_drain();
}

static const struct fuzz_target target = {
	.devices = devices,
	.reset = reset,
	.op_a = op_data,
	.op_b = op_call,
	.done = done,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_guest_run(&target, data, size);
	return 0;
}
