// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Test fixtures for ioq-dump (not installed): a real channel file with a
 * ring in mid-flight, and damaged copies of it, one per way a file can be
 * wrong. The ctest then expects a clean dump of the first and a clear
 * error (exit 1) or warning for each of the others.
 *
 *   ioq-dump-fixture DIR
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vbus/ioq_channel.h>

#define COUNT 64

static const char *dir;

static char *path(const char *name)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "ioq-dump-fixture: %s: %s\n", what, strerror(err));
	exit(1);
}

/*
 * 40 posted, 25 consumed, 10 reaped: all three ownership states exist.
 * good.ring is v5 (its ownership bytes give the dump something to check),
 * good-v6.ring the same state in the v6 layout.
 */
static void make_good(const char *name, __u32 ver)
{
	struct ioq_channel *north, *south;
	struct ioq_channel_fds fds;
	struct ioq_iterator it;
	struct ioq *q;
	int i, rc;

	unlink(path(name));
	rc = ioq_channel_create_ver(&north, COUNT, path(name), ver);
	if (rc)
		die("ioq_channel_create", -rc);
	ioq_channel_fds(north, &fds);
	rc = ioq_channel_attach(&south, ioq_locality_south, &fds);
	if (rc)
		die("ioq_channel_attach", -rc);

	q = ioq_channel_ioq(north);
	ioq_iter_init(q, &it, ioq_idx_push, 0);
	ioq_iter_seek(&it, ioq_seek_tail, 0, 0);
	for (i = 0; i < 40; i++) {
		it.desc->cookie = (__u64)i;
		it.desc->ptr = 0x1000u * (unsigned)i;
		it.desc->len = 64;
		if ((rc = ioq_iter_push(&it, 0)))
			die("push", -rc);
	}
	q = ioq_channel_ioq(south);
	ioq_iter_init(q, &it, ioq_idx_consume, 0);
	ioq_iter_seek(&it, ioq_seek_head, 0, 0);
	for (i = 0; i < 25; i++)
		if ((rc = ioq_iter_pop(&it, 0)))
			die("pop", -rc);
	ioq_notify_enable(q, 0);
	q = ioq_channel_ioq(north);
	ioq_iter_init(q, &it, ioq_idx_reap, IOQ_ITER_REAP);
	ioq_iter_seek(&it, ioq_seek_head, 0, 0);
	for (i = 0; i < 10; i++)
		if ((rc = ioq_iter_pop(&it, 0)))
			die("reap", -rc);
	ioq_channel_destroy(south);
	ioq_channel_destroy(north);
}

static unsigned char *good;
static size_t good_len;

static void load_good(const char *name)
{
	int fd = open(path(name), O_RDONLY);
	off_t len = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);

	if (len <= 0)
		die("good.ring", errno);
	good_len = (size_t)len;
	good = malloc(good_len);
	if (!good || pread(fd, good, good_len, 0) != len)
		die("read good.ring", errno);
	close(fd);
}

/* A copy of good.ring, cut to @len bytes, with @n bytes at @off replaced. */
static void variant(const char *name, size_t len, size_t off,
		    const void *bytes, size_t n)
{
	unsigned char *b = malloc(good_len);
	int fd;

	if (!b)
		die("malloc", ENOMEM);
	memcpy(b, good, good_len);
	memcpy(b + off, bytes, n);
	fd = open(path(name), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, b, len) != (ssize_t)len || close(fd))
		die(name, errno);
	free(b);
}

static void variant_u32(const char *name, size_t off, __u32 v)
{
	variant(name, good_len, off, &v, sizeof(v));
}

int main(int argc, char **argv)
{
	unsigned char junk[8192];
	unsigned int i, x = 12345;
	__u8 seven = 7;

	if (argc != 2) {
		fprintf(stderr, "usage: ioq-dump-fixture DIR\n");
		return 1;
	}
	dir = argv[1];
	make_good("good-v6.ring", IOQ_RING_VER_V6);
	load_good("good-v6.ring");
	/* v6: the tail (line 1) more than count ahead of valid's head */
	variant_u32("bad-index-v6.ring", 128, 1000);
	free(good);
	make_good("good.ring", IOQ_RING_VER_V5);
	load_good("good.ring");

	variant_u32("bad-magic.ring", 0, 0xdeadbeef);
	variant_u32("v4.ring", 4, 4);
	variant_u32("bad-signal.ring", 8, 0);
	variant_u32("count-npot.ring", 48, 100);
	variant_u32("count-huge.ring", 48, 1u << 20);
	variant("truncated.ring", good_len / 2, 0, "", 0);
	variant("tiny.ring", 10, 0, "", 0);
	variant("empty.ring", 0, 0, "", 0);
	/* valid header, broken state: tail - head > count, a bad owner byte */
	variant_u32("bad-index.ring", 24 + 4, 1000);
	variant("bad-owner.ring", good_len,
		sizeof(struct ioq_ring_head) + 3 * sizeof(struct ioq_ring_desc) +
		VBUS_OFFSETOF(struct ioq_ring_desc, sown), &seven, 1);

	for (i = 0; i < sizeof(junk); i++) {
		x = x * 1103515245u + 12345u;
		junk[i] = (unsigned char)(x >> 16);
	}
	good_len = sizeof(junk) < good_len ? sizeof(junk) : good_len;
	memcpy(good, junk, good_len);
	variant("garbage.ring", good_len, 0, "", 0);
	free(good);
	return 0;
}
