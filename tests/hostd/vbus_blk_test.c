// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The vbus-blk host device end to end, minus QEMU: the "vbus-blk" device
 * (userspace/hostd/devices/vbus_blk/) inside libvbus-hostd, driven by a
 * synthetic guest through hypercalls, doorbells and the eventq (fg_dev.c
 * over fakeguest.c: memfd RAM, rings formatted north by the test), and a
 * real io_uring on a temporary backing file (in the build tree, or
 * $VBUS_BLK_TEST_DIR). The test checks the data in the file itself with
 * pread/fstat, never through the device only.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include <vbus/vbus_blk.h>
#include "fg_dev.h"

#define TIMEOUT_MS	10000
#define DISK_SIZE	(8u << 20)
#define SEC		512u

struct fx {
	char path[512];
	char path2[512];
	struct hostd_dev *dev;
	struct vbus_blk_config cfg;
	struct vbus_blk_negotiate neg;
	struct fg_ring r[2];
	__u64 cookie;
};

/* ---- the backing file --------------------------------------------------------- */

static void tmp_path(char *buf, size_t len, const char *tag)
{
	const char *dir = getenv("VBUS_BLK_TEST_DIR");

	snprintf(buf, len, "%s/vbus-blk-test-%d-%s.img", dir ? dir : ".",
		 (int)getpid(), tag);
}

static void make_file(const char *path, __u64 size, int fill)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	char buf[65536];
	__u64 off;

	assert_true(fd >= 0);
	memset(buf, fill, sizeof(buf));
	for (off = 0; off < size; off += sizeof(buf)) {
		size_t n = size - off < sizeof(buf) ? size - off : sizeof(buf);

		assert_int_equal(pwrite(fd, buf, n, (off_t)off), (ssize_t)n);
	}
	assert_int_equal(fsync(fd), 0);
	close(fd);
}

static void file_read(const char *path, __u64 off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static __u64 file_blocks(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (__u64)st.st_blocks;
}

/* ---- the guest's driver, in small -------------------------------------------- */

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || fgd_init())
		return -1;
	tmp_path(f->path, sizeof(f->path), "a");
	tmp_path(f->path2, sizeof(f->path2), "b");
	make_file(f->path, DISK_SIZE, 0x11);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f->dev)
		fgd_dev_destroy(f->dev);
	fgd_fini();
	unlink(f->path);
	unlink(f->path2);
	free(f);
	return 0;
}

/* create with "file=<path>,@extra", open, GETCONFIG */
static void blk_create(struct fx *f, const char *extra)
{
	char params[1024];
	int err;

	snprintf(params, sizeof(params), "file=%s%s%s", f->path,
		 extra && *extra ? "," : "", extra ? extra : "");
	f->dev = fgd_dev_create("vbus-blk", params, &err);
	assert_non_null(f->dev);
	assert_int_equal(fgd_dev_open(f->dev, VBUS_BLK_VERSION), 0);
	assert_int_equal(fgd_call(f->dev, VBUS_BLK_FUNC_GETCONFIG, &f->cfg,
				  sizeof(f->cfg)), 0);
}

/* NEGOTIATE @features, @nq queues of @depth; attach the rings */
static void blk_negotiate(struct fx *f, __u32 features, __u32 nq,
			  __u32 depth)
{
	__u32 i;

	memset(&f->neg, 0, sizeof(f->neg));
	f->neg.features = features;
	f->neg.nr_queues = nq;
	f->neg.queue_depth = depth;
	assert_int_equal(fgd_call(f->dev, VBUS_BLK_FUNC_NEGOTIATE, &f->neg,
				  sizeof(f->neg)), 0);
	for (i = 0; i < f->neg.nr_queues && i < 2; i++)
		assert_int_equal(fgd_ring_attach(f->dev, i, depth, &f->r[i]), 0);
}

static void blk_up(struct fx *f, const char *extra)
{
	blk_create(f, extra);
	blk_negotiate(f, f->cfg.features, 2, 16);
}

/* A request in guest RAM: header + @n segments; returns its gpa. */
static __u64 req_new(__u8 op, __u16 flags, __u64 sector, __u32 nr_sectors,
		     __u32 n, const __u64 *addr, const __u32 *len)
{
	__u64 g = fgd_alloc(VBUS_BLK_REQ_SIZE(n), 8);
	struct vbus_blk_req *r = fgd_ram(g);
	__u32 i;

	r->sector = sector;
	r->nr_sectors = nr_sectors;
	r->op = op;
	r->flags = flags;
	r->nr_segs = n;
	r->status = VBUS_BLK_S_PENDING;
	for (i = 0; i < n; i++) {
		r->seg[i].addr = addr[i];
		r->seg[i].len = len[i];
	}
	return g;
}

static __u8 req_status(__u64 g)
{
	return ((struct vbus_blk_req *)fgd_ram(g))->status;
}

struct reap_ctx {
	struct fg_ring *r;
	unsigned int want, got;
	__u64 cookies[256];
};

static bool reaped_all(void *arg)
{
	struct reap_ctx *c = arg;
	__u64 cookie;

	while (c->got < c->want && fgd_reap(c->r, NULL, &cookie) == 1)
		c->cookies[c->got++] = cookie;
	return c->got == c->want;
}

/* wait until @n descriptors came back on @r; their cookies in order */
static void reap_n(struct fg_ring *r, unsigned int n, __u64 *cookies)
{
	struct reap_ctx c = { .r = r, .want = n };

	assert_true(fgd_run_until(reaped_all, &c, TIMEOUT_MS));
	if (cookies)
		memcpy(cookies, c.cookies, n * sizeof(*cookies));
}

/* post one request on queue @q, wait for it, return its status */
static __u8 submit(struct fx *f, unsigned int q, __u64 req, __u32 desc_len)
{
	assert_int_equal(fgd_post(&f->r[q], req, desc_len, ++f->cookie), 0);
	reap_n(&f->r[q], 1, NULL);
	return req_status(req);
}

static __u8 rw(struct fx *f, __u8 op, __u16 flags, __u64 sector, __u32 n,
	       const __u64 *addr, const __u32 *len)
{
	__u64 g = req_new(op, flags, sector, 0, n, addr, len);

	return submit(f, 0, g, (__u32)VBUS_BLK_REQ_SIZE(n));
}

static __u8 noseg(struct fx *f, __u8 op, __u16 flags, __u64 sector,
		  __u32 nr_sectors)
{
	__u64 g = req_new(op, flags, sector, nr_sectors, 0, NULL, NULL);

	return submit(f, 0, g, (__u32)VBUS_BLK_REQ_SIZE(0));
}

static __u64 buf_new(__u32 len, int fill)
{
	__u64 g = fgd_alloc(len, 4096);

	memset(fgd_ram(g), fill, len);
	return g;
}

/* ---- tests ------------------------------------------------------------------------ */

/* GETCONFIG describes the file; NEGOTIATE grants within it */
static void config_and_negotiate(void **state)
{
	struct fx *f = *state;
	struct vbus_blk_negotiate n;

	blk_create(f, "serial=disk-one,queues=2,depth=64");
	assert_int_equal(f->cfg.capacity, DISK_SIZE / SEC);
	assert_int_equal(f->cfg.max_queues, 2);
	assert_int_equal(f->cfg.max_queue_depth, 64);
	assert_true(f->cfg.logical_block_size >= 512);
	assert_true(f->cfg.features & VBUS_BLK_F_FLUSH);
	assert_true(f->cfg.features & VBUS_BLK_F_FUA);
	assert_false(f->cfg.features & VBUS_BLK_F_RO);
	assert_memory_equal(f->cfg.serial, "disk-one\0\0\0\0\0\0\0\0\0\0\0\0",
			    VBUS_BLK_SERIAL_LEN);
	/* wrong sizes, bad depths */
	assert_int_equal(fgd_call(f->dev, VBUS_BLK_FUNC_GETCONFIG, &f->cfg, 8),
			 -EINVAL);
	n = (struct vbus_blk_negotiate){ 0, 1, 48, 0 };
	assert_int_equal(fgd_call(f->dev, VBUS_BLK_FUNC_NEGOTIATE, &n,
				  sizeof(n)), -EINVAL);
	n = (struct vbus_blk_negotiate){ 0, 1, 128, 0 };
	assert_int_equal(fgd_call(f->dev, VBUS_BLK_FUNC_NEGOTIATE, &n,
				  sizeof(n)), -EINVAL);
	n = (struct vbus_blk_negotiate){ 0, 0, 16, 0 };
	assert_int_equal(fgd_call(f->dev, VBUS_BLK_FUNC_NEGOTIATE, &n,
				  sizeof(n)), -EINVAL);
	/* a ring before NEGOTIATE is refused */
	assert_true(fgd_ring_attach(f->dev, 0, 16, &f->r[0]) < 0);
	/* granted: wanted & offered, queues capped */
	n = (struct vbus_blk_negotiate){ 0xffffffff, 9, 16, 0 };
	assert_int_equal(fgd_call(f->dev, VBUS_BLK_FUNC_NEGOTIATE, &n,
				  sizeof(n)), 0);
	assert_int_equal(n.features, f->cfg.features);
	assert_int_equal(n.nr_queues, 2);
	assert_int_equal(fgd_call(f->dev, VBUS_BLK_FUNC_NEGOTIATE, &n,
				  sizeof(n)), -EBUSY);
	/* ring ids within the granted queues, count = the depth */
	assert_true(fgd_ring_attach(f->dev, 2, 16, &f->r[0]) < 0);
	assert_true(fgd_ring_attach(f->dev, 0, 32, &f->r[0]) < 0);
	assert_int_equal(fgd_ring_attach(f->dev, 0, 16, &f->r[0]), 0);
	assert_int_equal(fgd_dev_open(f->dev, 2), -EBUSY);
	assert_false(fgd_dev_faulted(f->dev));
}

/* WRITE a pattern in three segments, READ it back, the file has it */
static void read_write(void **state)
{
	struct fx *f = *state;
	__u32 len[3] = { 4096, 512, 8192 };
	__u64 w[3], r[3];
	unsigned char file[4096 + 512 + 8192];
	unsigned int i;

	blk_up(f, NULL);
	for (i = 0; i < 3; i++) {
		w[i] = buf_new(len[i], 0xa0 + (int)i);
		r[i] = buf_new(len[i], 0);
	}
	assert_int_equal(rw(f, VBUS_BLK_OP_WRITE, 0, 64, 3, w, len),
			 VBUS_BLK_S_OK);
	file_read(f->path, 64 * SEC, file, sizeof(file));
	assert_memory_equal(file, fgd_ram(w[0]), 4096);
	assert_memory_equal(file + 4096, fgd_ram(w[1]), 512);
	assert_memory_equal(file + 4608, fgd_ram(w[2]), 8192);
	assert_int_equal(rw(f, VBUS_BLK_OP_READ, 0, 64, 3, r, len),
			 VBUS_BLK_S_OK);
	for (i = 0; i < 3; i++)
		assert_memory_equal(fgd_ram(r[i]), fgd_ram(w[i]), len[i]);
	/* the last sector of the disk, and the sector before 0 */
	assert_int_equal(rw(f, VBUS_BLK_OP_READ, 0, DISK_SIZE / SEC - 1, 1, r,
			    &len[1]), VBUS_BLK_S_OK);
	assert_int_equal(fgd_stat(f->dev, "writes"), 1);
	assert_int_equal(fgd_stat(f->dev, "reads"), 2);
	assert_int_equal(fgd_stat(f->dev, "bytes_written"), 12800);
	assert_int_equal(fgd_stat(f->dev, "bytes_read"), 12800 + 512);
	assert_int_equal(fgd_stat(f->dev, "inflight"), 0);
	assert_int_equal(fgd_stat(f->dev, "bad_requests"), 0);
	assert_false(fgd_dev_faulted(f->dev));
}

/* FLUSH and FUA go to the backend */
static void flush_and_fua(void **state)
{
	struct fx *f = *state;
	__u32 len = 4096;
	__u64 w = buf_new(len, 0x5c);

	blk_up(f, NULL);
	assert_int_equal(noseg(f, VBUS_BLK_OP_FLUSH, 0, 0, 0), VBUS_BLK_S_OK);
	assert_int_equal(fgd_stat(f->dev, "flushes"), 1);
	assert_int_equal(rw(f, VBUS_BLK_OP_WRITE, VBUS_BLK_REQ_FUA, 8, 1, &w,
			    &len), VBUS_BLK_S_OK);
	assert_int_equal(fgd_stat(f->dev, "fua_writes"), 1);
	assert_int_equal(fgd_stat(f->dev, "writes"), 1);
}

/* DISCARD punches a hole; WRITE_ZEROES reads back zeros */
static void discard_and_zeroes(void **state)
{
	struct fx *f = *state;
	__u32 len = 65536;
	__u64 before, r = buf_new(len, 0x77);
	static const unsigned char zero[65536];
	unsigned char file[65536];

	blk_up(f, NULL);
	assert_true(f->neg.features & VBUS_BLK_F_DISCARD);
	before = file_blocks(f->path);
	assert_int_equal(noseg(f, VBUS_BLK_OP_DISCARD, 0, 2048, 2048),
			 VBUS_BLK_S_OK);
	assert_true(file_blocks(f->path) + 2048 <= before);
	file_read(f->path, 2048 * SEC, file, sizeof(file));
	assert_memory_equal(file, zero, sizeof(file));

	/* zeroes without UNMAP (ZERO_RANGE, or a punch where refused) */
	assert_int_equal(noseg(f, VBUS_BLK_OP_WRITE_ZEROES, 0, 8192, 128),
			 VBUS_BLK_S_OK);
	assert_int_equal(rw(f, VBUS_BLK_OP_READ, 0, 8192, 1, &r, &len),
			 VBUS_BLK_S_OK);
	assert_memory_equal(fgd_ram(r), zero, len);
	file_read(f->path, 8192 * SEC + len, file, 512);
	assert_int_equal(file[0], 0x11);	/* not a byte more */
	/* and with UNMAP */
	memset(fgd_ram(r), 0x77, len);
	assert_int_equal(noseg(f, VBUS_BLK_OP_WRITE_ZEROES, VBUS_BLK_REQ_UNMAP,
			       9000, 128), VBUS_BLK_S_OK);
	assert_int_equal(rw(f, VBUS_BLK_OP_READ, 0, 9000, 1, &r, &len),
			 VBUS_BLK_S_OK);
	assert_memory_equal(fgd_ram(r), zero, len);
	assert_int_equal(fgd_stat(f->dev, "discards"), 1);
	assert_int_equal(fgd_stat(f->dev, "write_zeroes"), 2);
	assert_int_equal(fgd_stat(f->dev, "io_errors"), 0);
}

/* GET_ID copies the serial; the default one is derived from the file */
static void get_id(void **state)
{
	struct fx *f = *state;
	__u32 len = 512;
	__u64 b = buf_new(len, 0xee);

	blk_up(f, NULL);
	assert_int_equal(strncmp(f->cfg.serial, "vbus-", 5), 0);
	assert_int_equal(rw(f, VBUS_BLK_OP_GET_ID, 0, 0, 1, &b, &len),
			 VBUS_BLK_S_OK);
	assert_memory_equal(fgd_ram(b), f->cfg.serial, VBUS_BLK_SERIAL_LEN);
	assert_int_equal(((unsigned char *)fgd_ram(b))[VBUS_BLK_SERIAL_LEN],
			 0xee);
	assert_int_equal(fgd_stat(f->dev, "get_ids"), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(config_and_negotiate, setup,
						teardown),
		cmocka_unit_test_setup_teardown(read_write, setup, teardown),
		cmocka_unit_test_setup_teardown(flush_and_fua, setup, teardown),
		cmocka_unit_test_setup_teardown(discard_and_zeroes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(get_id, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
