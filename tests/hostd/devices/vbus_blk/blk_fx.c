// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The vbus-blk host tests' shared harness (blk_fx.h): backing files, and
 * the guest's side of the device in small (create, negotiate, post a
 * request, wait for it) over fg_dev.c.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "blk_fx.h"


void tmp_path(char *buf, size_t len, const char *tag)
{
	const char *dir = getenv("VBUS_BLK_TEST_DIR");

	snprintf(buf, len, "%s/vbus-blk-test-%d-%s.img", dir ? dir : ".",
		 (int)getpid(), tag);
}

void make_file(const char *path, __u64 size, int fill)
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

int blk_fx_setup_file(void **state, const char *tag, __u64 size, int fill)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || fgd_init()) {
		free(f);
		return -1;
	}
	tmp_path(f->path, sizeof(f->path), tag);
	make_file(f->path, size, fill);
	*state = f;
	return 0;
}

int blk_fx_teardown_file(void **state)
{
	struct fx *f = *state;

	if (f->dev)
		fgd_dev_destroy(f->dev);
	unlink(f->path);
	fgd_fini();
	free(f);
	return 0;
}

void file_read(const char *path, __u64 off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

__u64 file_blocks(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (__u64)st.st_blocks;
}

/* ---- the guest's driver, in small -------------------------------------------- */

/* create with @params (all of them), open, GETCONFIG */
void blk_create_params(struct fx *f, const char *params)
{
	int err;

	f->dev = fgd_dev_create("vbus-blk", params, &err);
	if (!f->dev)
		fprintf(stderr, "[test] %s: %s\n", params, fgd_last_error());
	assert_non_null(f->dev);
	assert_int_equal(fgd_dev_open(f->dev, VBUS_BLK_VERSION), 0);
	assert_int_equal(fgd_call(f->dev, VBUS_BLK_FUNC_GETCONFIG, &f->cfg,
				  sizeof(f->cfg)), 0);
}

/* create with "file=<path>,@extra", open, GETCONFIG */
void blk_create(struct fx *f, const char *extra)
{
	char params[1024];

	snprintf(params, sizeof(params), "file=%s%s%s", f->path,
		 extra && *extra ? "," : "", extra ? extra : "");
	blk_create_params(f, params);
}

/* NEGOTIATE @features, @nq queues of @depth; attach the rings */
void blk_negotiate(struct fx *f, __u32 features, __u32 nq,
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

void blk_up(struct fx *f, const char *extra)
{
	blk_create(f, extra);
	blk_negotiate(f, f->cfg.features, 2, 16);
}

/* A request in guest RAM: header + @n segments; returns its gpa. */
__u64 req_new(__u8 op, __u16 flags, __u64 sector, __u32 nr_sectors,
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

__u8 req_status(__u64 g)
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
void reap_n(struct fg_ring *r, unsigned int n, __u64 *cookies)
{
	struct reap_ctx c = { .r = r, .want = n };

	assert_true(fgd_run_until(reaped_all, &c, TIMEOUT_MS));
	if (cookies)
		memcpy(cookies, c.cookies, n * sizeof(*cookies));
}

/* post one request on queue @q, wait for it, return its status */
__u8 submit(struct fx *f, unsigned int q, __u64 req, __u32 desc_len)
{
	assert_int_equal(fgd_post(&f->r[q], req, desc_len, ++f->cookie), 0);
	reap_n(&f->r[q], 1, NULL);
	return req_status(req);
}

__u8 rw(struct fx *f, __u8 op, __u16 flags, __u64 sector, __u32 n,
	       const __u64 *addr, const __u32 *len)
{
	__u64 g = req_new(op, flags, sector, 0, n, addr, len);

	return submit(f, 0, g, (__u32)VBUS_BLK_REQ_SIZE(n));
}

__u8 noseg(struct fx *f, __u8 op, __u16 flags, __u64 sector,
		  __u32 nr_sectors)
{
	__u64 g = req_new(op, flags, sector, nr_sectors, 0, NULL, NULL);

	return submit(f, 0, g, (__u32)VBUS_BLK_REQ_SIZE(0));
}

__u64 ranges_req_new(const struct vbus_blk_range *rg, __u32 n,
		     __u32 nr_ranges, __u32 seg_len)
{
	__u32 len = seg_len ? seg_len : n * (__u32)sizeof(*rg);
	__u32 room = len > n * sizeof(*rg) ? len : n * (__u32)sizeof(*rg);
	__u64 list = fgd_alloc(room ? room : 16, 8);
	__u64 g = req_new(VBUS_BLK_OP_DISCARD, 0, 0, 0, 1, &list, &len);

	memset(fgd_ram(list), 0, room ? room : 16);
	memcpy(fgd_ram(list), rg, n * sizeof(*rg));
	((struct vbus_blk_req *)fgd_ram(g))->nr_ranges = nr_ranges;
	return g;
}

__u8 discard_ranges(struct fx *f, const struct vbus_blk_range *rg, __u32 n)
{
	return submit(f, 0, ranges_req_new(rg, n, n, 0),
		      (__u32)VBUS_BLK_REQ_SIZE(1));
}

__u64 buf_new(__u32 len, int fill)
{
	__u64 g = fgd_alloc(len, 4096);

	memset(fgd_ram(g), fill, len);
	return g;
}

/* run @argv to its end; its exit status */
int blk_run(const char *const *argv)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (!pid) {
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}
