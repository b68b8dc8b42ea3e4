// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The fake guest's vbus-blk driver (fuzz_blk.h): well-formed calls and
 * requests to corrupt from, with segment lists and descriptors the fuzzer
 * writes.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vbus/vbus_blk.h>
#include "fuzz_blk.h"

/* the backing file: 64 KiB, 128 sectors */
#define DISK_SIZE	(64u << 10)
static char disk_path[256];
static char disk_spec[512];

static void disk_unlink(void)
{
	unlink(disk_path);
}

const char *fuzz_blk_disk(const char *extra)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(disk_path, sizeof(disk_path), "%s/vbus-fuzz-disk-%d.img",
		 dir && *dir ? dir : "/tmp", (int)getpid());
	fd = open(disk_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, DISK_SIZE) < 0)
		abort();
	close(fd);
	atexit(disk_unlink);
	/* buffered: the fuzzer wants iterations, not the disk's latency */
	snprintf(disk_spec, sizeof(disk_spec),
		 "type=vbus-blk,id=3,file=%s,queues=2,depth=64,segs=4,"
		 "max_sectors=32,direct=0%s", disk_path, extra);
	return disk_spec;
}

/* A request at a low address and its descriptor on ring k. */
static void blk_post(struct fuzz_in *in, uint8_t sub)
{
	unsigned int k = fuzz_u8(in) % FUZZ_NRINGS;
	uint64_t at = (sub & 8) ? fuzz_gpa(in) :
		      0x6000 + (uint64_t)(fuzz_u8(in) % 16) * 256;
	struct vbus_blk_req r = { 0 };
	struct vbus_blk_seg seg[6];
	uint32_t i;
	uint8_t *p;

	r.op = fuzz_u8(in) % 7;
	r.flags = fuzz_u8(in) % 4;
	r.sector = (sub & 16) ? fuzz_u64(in) : fuzz_u8(in);
	r.nr_sectors = fuzz_u8(in) % 32;
	r.nr_segs = fuzz_u8(in) % 6;
	/* F_DISCARD_RANGES: a list of 0 .. 3 ranges (no byte of its own) */
	r.nr_ranges = r.nr_sectors & 3;
	r.status = VBUS_BLK_S_PENDING;
	for (i = 0; i < r.nr_segs; i++) {
		uint8_t sel = fuzz_u8(in);

		seg[i].addr = (sel & 1) ? fuzz_gpa(in) :
			      (uint64_t)(fuzz_u8(in) % 128) * 512;
		seg[i].len = (sel & 2) ? fuzz_u32(in) :
			     (1u + fuzz_u8(in) % 8) * 512;
		/* a DISCARD's list as long as it says, its ranges whatever
		 * the guest memory there holds */
		if (r.op == VBUS_BLK_OP_DISCARD && r.nr_ranges && (sel & 4))
			seg[i].len = 16 * r.nr_ranges;
		seg[i].reserved = 0;
	}
	p = fuzz_ptr(at, VBUS_BLK_REQ_SIZE(r.nr_segs));
	if (p) {
		memcpy(p, &r, sizeof(r));
		memcpy(p + sizeof(r), seg, sizeof(seg[0]) * r.nr_segs);
	}
	fuzz_ring_post(k, at, (sub & 32) ? fuzz_u64(in) :
				       VBUS_BLK_REQ_SIZE(r.nr_segs));
}

void fuzz_blk_op(struct fuzz_in *in)
{
	uint8_t sub = fuzz_u8(in);

	switch (sub % 4) {
	case 0: {
		struct vbus_blk_negotiate n = { 0 };

		fuzz_u8(in);	/* was: a ring, for its count */
		n.features = fuzz_u8(in);
		n.nr_queues = 1 + fuzz_u8(in) % 2;
		n.queue_depth = (sub & 16) ? fuzz_u32(in) : 16;
		fuzz_devcall(in, fuzz_u8(in), VBUS_BLK_FUNC_NEGOTIATE, &n,
			     sizeof(n), sub & 8);
		break;
	}
	case 1: {
		struct vbus_blk_config c = { 0 };

		fuzz_devcall(in, fuzz_u8(in), VBUS_BLK_FUNC_GETCONFIG, &c,
			     sizeof(c), sub & 8);
		break;
	}
	case 2:
		blk_post(in, sub);
		break;
	default:
		/*
		 * let io_uring's completions come in (buffered I/O on a
		 * cached 64 KiB file completes at submission; never sleep:
		 * the fuzzer wants iterations, close drains the rest)
		 */
		hostd_loop_poll(&fuzz_guest.loop, 0);
		fuzz_pump();
		break;
	}
}
