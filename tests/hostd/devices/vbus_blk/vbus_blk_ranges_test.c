// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-blk's DISCARD with a range list (F_DISCARD_RANGES) against the
 * device in libvbus-hostd, driven by fakeguest (blk_fx.h), on the file
 * backend: the ranges punched are exactly the listed ones (the file's
 * holes, SEEK_HOLE / SEEK_DATA, and its bytes around them), every
 * malformed list is refused with S_BADREQ before anything is punched
 * (one check each), and a guest or host without the feature sees what
 * it always did. The NBD backend's ranges: vbus_blk_nbd_test.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <vbus/vbus_blk.h>
#include "blk_fx.h"
#include "vbus_blk_dev.h"

#define DISK_SIZE	(8u << 20)
#define DISK_SECTORS	(DISK_SIZE / SEC)
#define FILL		0x11

static int setup(void **state)
{
	return blk_fx_setup_file(state, "ranges", DISK_SIZE, FILL);
}

static int teardown(void **state)
{
	return blk_fx_teardown_file(state);
}

/* [sector, sector + n) of the file is a hole: data neither side of it */
static void assert_hole(const char *path, __u64 sector, __u32 n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	off_t start = (off_t)(sector * SEC), end = (off_t)((sector + n) * SEC);

	assert_true(fd >= 0);
	assert_int_equal(lseek(fd, start, SEEK_HOLE), start);
	assert_int_equal(lseek(fd, start, SEEK_DATA), end);
	if (start)
		assert_int_equal(lseek(fd, start - 1, SEEK_DATA), start - 1);
	close(fd);
}

/* the file's first byte of @sector is still the one make_file wrote */
static void assert_intact(const char *path, __u64 sector)
{
	unsigned char c;

	file_read(path, sector * SEC, &c, 1);
	assert_int_equal(c, FILL);
}

/* offered with DISCARD, with the host's limit in the config */
static void ranges_offered(void **state)
{
	struct fx *f = *state;

	blk_up(f, NULL);
	assert_true(f->cfg.features & VBUS_BLK_F_DISCARD_RANGES);
	assert_int_equal(f->cfg.max_discard_ranges, VBLK_MAX_DISCARD_RANGES);
	assert_true(f->neg.features & VBUS_BLK_F_DISCARD_RANGES);
}

/* compat=v1 (an old host) offers neither the bit nor a limit */
static void ranges_not_offered_v1(void **state)
{
	struct fx *f = *state;

	blk_create(f, "compat=v1");
	assert_true(f->cfg.features & VBUS_BLK_F_DISCARD);
	assert_false(f->cfg.features & VBUS_BLK_F_DISCARD_RANGES);
	assert_int_equal(f->cfg.max_discard_ranges, 0);
}

/* no DISCARD (discard=0), no range list either */
static void ranges_not_offered_nodiscard(void **state)
{
	struct fx *f = *state;

	blk_create(f, "discard=0");
	assert_false(f->cfg.features & VBUS_BLK_F_DISCARD_RANGES);
	assert_int_equal(f->cfg.max_discard_ranges, 0);
}

/* three ranges, out of order: exactly those become holes */
static void ranges_punch_file(void **state)
{
	struct fx *f = *state;
	static const struct vbus_blk_range rg[] = {
		{ 4096, 8, 0 }, { 256, 64, 0 }, { 1024, 128, 0 },
	};
	unsigned int i;

	blk_up(f, NULL);
	assert_int_equal(discard_ranges(f, rg, 3), VBUS_BLK_S_OK);
	for (i = 0; i < 3; i++) {
		assert_hole(f->path, rg[i].sector, rg[i].nr_sectors);
		assert_intact(f->path, rg[i].sector + rg[i].nr_sectors);
	}
	assert_intact(f->path, 0);
	assert_int_equal(fgd_stat(f->dev, "discards"), 1);
	assert_int_equal(fgd_stat(f->dev, "discard_ranges"), 3);
	assert_int_equal(fgd_stat(f->dev, "multi_range_discards"), 1);
	assert_int_equal(fgd_stat(f->dev, "io_errors"), 0);
}

/* the header's one range still works with the feature granted */
static void ranges_header_form(void **state)
{
	struct fx *f = *state;

	blk_up(f, NULL);
	assert_int_equal(noseg(f, VBUS_BLK_OP_DISCARD, 0, 2048, 64),
			 VBUS_BLK_S_OK);
	assert_hole(f->path, 2048, 64);
	assert_int_equal(fgd_stat(f->dev, "discard_ranges"), 1);
	assert_int_equal(fgd_stat(f->dev, "multi_range_discards"), 0);
}

/*
 * A guest that did not ask for the feature (an old guest) gets what it
 * always got: its DISCARD is the header's range, a segment on it is
 * malformed ("segments on an op that takes none").
 */
static void ranges_old_guest(void **state)
{
	struct fx *f = *state;
	static const struct vbus_blk_range rg[] = { { 256, 64, 0 } };

	blk_create(f, NULL);
	blk_negotiate(f, f->cfg.features & ~VBUS_BLK_F_DISCARD_RANGES, 1, 16);
	assert_false(f->neg.features & VBUS_BLK_F_DISCARD_RANGES);
	assert_int_equal(noseg(f, VBUS_BLK_OP_DISCARD, 0, 2048, 64),
			 VBUS_BLK_S_OK);
	assert_hole(f->path, 2048, 64);
	assert_int_equal(discard_ranges(f, rg, 1), VBUS_BLK_S_BADREQ);
	assert_intact(f->path, 256);
}

/*
 * A malformed list on a device with the feature: S_BADREQ, counted,
 * the device goes on, and nothing is punched (not even the good range
 * the list starts with: everything is checked before anything is done).
 */
static void refused(struct fx *f, const struct vbus_blk_range *rg, __u32 n,
		    __u32 nr_ranges, __u32 seg_len)
{
	__u64 g;

	blk_up(f, NULL);
	g = ranges_req_new(rg, n, nr_ranges, seg_len);
	assert_int_equal(submit(f, 0, g, (__u32)VBUS_BLK_REQ_SIZE(1)),
			 VBUS_BLK_S_BADREQ);
	assert_int_equal(fgd_stat(f->dev, "bad_requests"), 1);
	assert_int_equal(fgd_stat(f->dev, "discards"), 0);
	assert_intact(f->path, 256);
	assert_false(fgd_dev_faulted(f->dev));
}

static const struct vbus_blk_range good = { 256, 64, 0 };

/* nr_ranges 0, and a segment of 0 bytes to match */
static void ranges_none(void **state)
{
	refused(*state, &good, 0, 0, 0);
}

static void ranges_over_limit(void **state)
{
	static struct vbus_blk_range rg[VBLK_MAX_DISCARD_RANGES + 1];
	unsigned int i;

	for (i = 0; i <= VBLK_MAX_DISCARD_RANGES; i++)
		rg[i] = (struct vbus_blk_range){ 256 + 8 * i, 8, 0 };
	refused(*state, rg, VBLK_MAX_DISCARD_RANGES + 1,
		VBLK_MAX_DISCARD_RANGES + 1, 0);
}

static void ranges_past_end(void **state)
{
	const struct vbus_blk_range rg[] = { good,
					     { DISK_SECTORS - 8, 16, 0 } };

	refused(*state, rg, 2, 2, 0);
}

static void ranges_overflow(void **state)
{
	const struct vbus_blk_range rg[] = { good, { ~0ull - 2, 8, 0 } };

	refused(*state, rg, 2, 2, 0);
}

static void ranges_empty_range(void **state)
{
	const struct vbus_blk_range rg[] = { good, { 1024, 0, 0 } };

	refused(*state, rg, 2, 2, 0);
}

static void ranges_flags(void **state)
{
	const struct vbus_blk_range rg[] = { good, { 1024, 8, 1 } };

	refused(*state, rg, 2, 2, 0);
}

/* the list segment shorter than nr_ranges * 16: the count lies */
static void ranges_segment_short(void **state)
{
	const struct vbus_blk_range rg[] = { good, good, good };

	refused(*state, rg, 3, 3, 2 * sizeof(rg[0]));
}

/* each range within max_discard_sectors, their sum one sector over */
static void ranges_sum_too_long(void **state)
{
	const struct vbus_blk_range rg[] = {
		good, { 1024, VBLK_MAX_DISCARD - good.nr_sectors + 1, 0 },
	};
	struct fx *f = *state;

	/* a disk (sparse) where the second range fits */
	assert_int_equal(truncate(f->path, (off_t)VBLK_MAX_DISCARD * SEC +
					   DISK_SIZE), 0);
	refused(f, rg, 2, 2, 0);
}

/* a range list is exactly one segment */
static void ranges_two_segments(void **state)
{
	struct fx *f = *state;
	__u64 list = fgd_alloc(16, 8), g;
	__u64 addr[2] = { list, list };
	__u32 len[2] = { 16, 16 };

	memcpy(fgd_ram(list), &good, sizeof(good));
	blk_up(f, NULL);
	g = req_new(VBUS_BLK_OP_DISCARD, 0, 0, 0, 2, addr, len);
	((struct vbus_blk_req *)fgd_ram(g))->nr_ranges = 1;
	assert_int_equal(submit(f, 0, g, (__u32)VBUS_BLK_REQ_SIZE(2)),
			 VBUS_BLK_S_BADREQ);
	assert_int_equal(fgd_stat(f->dev, "discards"), 0);
	assert_intact(f->path, 256);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(ranges_offered), T(ranges_not_offered_v1),
		T(ranges_not_offered_nodiscard), T(ranges_punch_file),
		T(ranges_header_form), T(ranges_old_guest), T(ranges_none),
		T(ranges_over_limit), T(ranges_past_end), T(ranges_overflow),
		T(ranges_empty_range), T(ranges_flags),
		T(ranges_segment_short), T(ranges_sum_too_long),
		T(ranges_two_segments),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
