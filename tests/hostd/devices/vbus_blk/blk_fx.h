/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The vbus-blk host tests' shared harness: the fixture, backing files,
 * and the guest's driver in small (fg_dev.c underneath). cmocka asserts:
 * a helper that fails fails the test that called it.
 */
#ifndef VBUS_TESTS_BLK_FX_H
#define VBUS_TESTS_BLK_FX_H

#include <stdbool.h>
#include <stddef.h>
#include <vbus/vbus_blk.h>
#include "fg_dev.h"

#define TIMEOUT_MS	10000
#define SEC		512u

struct fx {
	char loop[64];		/* a loop device the test attached, or "" */
	char path[512];
	char path2[512];
	struct hostd_dev *dev;
	struct vbus_blk_config cfg;
	struct vbus_blk_negotiate neg;
	struct fg_ring r[2];
	__u64 cookie;
};

/* the backing file: in $VBUS_BLK_TEST_DIR or the current directory */
void tmp_path(char *buf, size_t len, const char *tag);
void make_file(const char *path, __u64 size, int fill);
void file_read(const char *path, __u64 off, void *buf, size_t len);
/* run @argv (a tool: qemu-img, nbdkit...) to its end; its exit status */
int blk_run(const char *const *argv);
__u64 file_blocks(const char *path);

/*
 * cmocka fixture of one disk file: a struct fx in *@state, the fake guest
 * up, f->path (tagged @tag) made @size bytes of @fill; the teardown
 * destroys f->dev if a test left it, unlinks the file, ends the guest
 */
int blk_fx_setup_file(void **state, const char *tag, __u64 size, int fill);
int blk_fx_teardown_file(void **state);

/* create with @params, open, GETCONFIG into f->cfg */
void blk_create_params(struct fx *f, const char *params);
/* the same with "file=<f->path>,@extra" */
void blk_create(struct fx *f, const char *extra);
/* NEGOTIATE @features, @nq queues of @depth; attach the rings (two at most) */
void blk_negotiate(struct fx *f, __u32 features, __u32 nq, __u32 depth);
/* blk_create, then every offered feature, 2 queues of 16 */
void blk_up(struct fx *f, const char *extra);

/* a request in guest RAM: header + @n segments; its gpa */
__u64 req_new(__u8 op, __u16 flags, __u64 sector, __u32 nr_sectors,
	      __u32 n, const __u64 *addr, const __u32 *len);
__u8 req_status(__u64 g);
/* wait until @n descriptors came back on @r; their cookies in order */
void reap_n(struct fg_ring *r, unsigned int n, __u64 *cookies);
/* post one request on queue @q, wait for it, return its status */
__u8 submit(struct fx *f, unsigned int q, __u64 req, __u32 desc_len);
/* one READ / WRITE / GET_ID on queue 0, waited for */
__u8 rw(struct fx *f, __u8 op, __u16 flags, __u64 sector, __u32 n,
	const __u64 *addr, const __u32 *len);
/* one FLUSH / DISCARD / WRITE_ZEROES on queue 0, waited for */
__u8 noseg(struct fx *f, __u8 op, __u16 flags, __u64 sector,
	   __u32 nr_sectors);
/*
 * A DISCARD with a range list (F_DISCARD_RANGES): header nr_ranges =
 * @nr_ranges, one segment of @seg_len bytes holding @rg (@n of them, the
 * rest of the segment zero); its gpa. @seg_len 0: n * 16.
 */
__u64 ranges_req_new(const struct vbus_blk_range *rg, __u32 n,
		     __u32 nr_ranges, __u32 seg_len);
/* that request for @rg on queue 0, well formed, waited for */
__u8 discard_ranges(struct fx *f, const struct vbus_blk_range *rg, __u32 n);
/* guest RAM of @len bytes of @fill, page-aligned */
__u64 buf_new(__u32 len, int fill);

#endif /* VBUS_TESTS_BLK_FX_H */
