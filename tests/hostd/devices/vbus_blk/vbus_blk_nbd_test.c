// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-blk's NBD backend (nbd=URI) end to end, minus QEMU: the device
 * inside libvbus-hostd, driven by the synthetic guest (blk_fx.c over
 * fg_dev.c), against a real NBD server, nbdkit (scripts/deps.sh installs
 * it), on a unix socket in a temporary directory. The data is checked in
 * the server's backing file itself (nbdkit's file plugin), never through
 * the device only. Servers are killed with SIGKILL and started again on
 * the same socket; delays come from nbdkit's delay filter, odd limits
 * from its blocksize-policy filter. qemu-nbd serves a qcow2 image; the
 * image= tests let the device start qemu-storage-daemon itself on a
 * qcow2 overlay over a base (both checked with qemu-io / qemu-img
 * check, -U: the daemon holds the lock). Every wait is for the awaited thing
 * (a stat, a pid file, a completion), bounded by TIMEOUT_MS.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <dirent.h>

#include "blk_fx.h"

#define DISK_SIZE	(8u << 20)

struct nfx {
	struct fx f;		/* first: the shared helpers take it */
	char dir[256];		/* the servers' socket and pid file */
	char sock[320];
	char pidfile[320];
	char uri[512];
	char image[320];	/* qemu-nbd's qcow2 image; image='s overlay */
	char base[320];		/* image='s base */
	pid_t pid;		/* the server, 0 when none */
};

/* ---- the server ---------------------------------------------------------------- */

static bool server_ready(struct nfx *x)
{
	int st;

	/* nbdkit writes its pid file once it listens */
	if (!access(x->pidfile, F_OK))
		return true;
	if (waitpid(x->pid, &st, WNOHANG) == x->pid) {
		fprintf(stderr, "[test] nbdkit exited (status %d)\n", st);
		x->pid = 0;
		fail();
	}
	return false;
}

/*
 * nbdkit -f on our socket with @args (filters, plugin, its params; NULL
 * ends them); returns once it accepts connections.
 */
static void server_start(struct nfx *x, ...)
{
	const char *argv[32] = {
		"nbdkit", "-f", "--exit-with-parent", "-U", x->sock,
		"-P", x->pidfile,
	};
	unsigned int n = 7;
	__u64 end = hostd_now_ns() + TIMEOUT_MS * 1000000ull;
	va_list ap;

	va_start(ap, x);
	while (n < 31 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	unlink(x->sock);	/* a killed server leaves it */
	unlink(x->pidfile);
	x->pid = fork();
	assert_true(x->pid >= 0);
	if (!x->pid) {
		execvp("nbdkit", (char *const *)argv);
		fprintf(stderr, "[test] nbdkit: %s (scripts/deps.sh installs it)\n",
			strerror(errno));
		_exit(127);
	}
	while (!server_ready(x)) {
		struct timespec ts = { 0, 1000000 };

		assert_true(hostd_now_ns() < end);
		nanosleep(&ts, NULL);	/* a pid file has no fd to wait on */
	}
}

static void server_kill(struct nfx *x)
{
	if (!x->pid)
		return;
	kill(x->pid, SIGKILL);
	assert_int_equal(waitpid(x->pid, NULL, 0), x->pid);
	x->pid = 0;
}

/* nbdkit's file plugin over the fixture's backing file */
static void server_file(struct nfx *x, const char *filter, const char *arg)
{
	char file[600];

	snprintf(file, sizeof(file), "file=%s", x->f.path);
	if (filter)
		server_start(x, filter, "file", file, arg, NULL);
	else
		server_start(x, "file", file, NULL);
}

/*
 * qemu-nbd on a new qcow2 image of @size: --fork returns once it serves;
 * its server process is ours to reap (a child subreaper, main()).
 */
static void server_qemu_nbd(struct nfx *x, const char *size)
{
	const char *create[] = { "qemu-img", "create", "-q", "-f", "qcow2",
				 x->image, size, NULL };
	const char *serve[] = { "qemu-nbd", "--fork", "--pid-file", x->pidfile,
				"-k", x->sock, "-f", "qcow2", x->image, NULL };
	char buf[32] = "";
	FILE *pf;

	assert_int_equal(blk_run(create), 0);
	unlink(x->pidfile);
	assert_int_equal(blk_run(serve), 0);
	pf = fopen(x->pidfile, "r");
	assert_non_null(pf);
	assert_non_null(fgets(buf, sizeof(buf), pf));
	fclose(pf);
	x->pid = (pid_t)atoi(buf);
	assert_true(x->pid > 0);
}

static int setup(void **state)
{
	struct nfx *x = calloc(1, sizeof(*x));

	if (!x || fgd_init())
		return -1;
	tmp_path(x->f.path, sizeof(x->f.path), "nbd");
	make_file(x->f.path, DISK_SIZE, 0x11);
	snprintf(x->dir, sizeof(x->dir), "%s", "/tmp/vbus-nbd-XXXXXX");
	if (!mkdtemp(x->dir))
		return -1;
	snprintf(x->sock, sizeof(x->sock), "%s/sock", x->dir);
	snprintf(x->pidfile, sizeof(x->pidfile), "%s/pid", x->dir);
	snprintf(x->uri, sizeof(x->uri), "nbd+unix:///?socket=%s", x->sock);
	snprintf(x->image, sizeof(x->image), "%s/image.qcow2", x->dir);
	snprintf(x->base, sizeof(x->base), "%s/base.qcow2", x->dir);
	/* image='s storage daemons put their private directories here */
	setenv("RUNTIME_DIRECTORY", x->dir, 1);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct nfx *x = *state;

	if (x->f.dev)
		fgd_dev_destroy(x->f.dev);
	fgd_fini();
	server_kill(x);
	unlink(x->sock);
	unlink(x->pidfile);
	unlink(x->image);
	unlink(x->base);
	rmdir(x->dir);
	unlink(x->f.path);
	free(x);
	return 0;
}

/* the device on the server's socket with "nbd=URI,@extra", negotiated */
static void nbd_up(struct nfx *x, const char *extra)
{
	char params[2048];

	snprintf(params, sizeof(params), "nbd=%s%s%s", x->uri,
		 extra ? "," : "", extra ? extra : "");
	blk_create_params(&x->f, params);
	blk_negotiate(&x->f, x->f.cfg.features, 2, 16);
}

struct stat_wait {
	struct hostd_dev *dev;
	const char *key, *want;
};

static bool stat_is(void *arg)
{
	struct stat_wait *w = arg;

	return !strcmp(fgd_stat_str(w->dev, w->key), w->want);
}

static void wait_state(struct nfx *x, const char *state)
{
	struct stat_wait w = { x->f.dev, "nbd_state", state };

	assert_true(fgd_run_until(stat_is, &w, TIMEOUT_MS));
}

struct count_wait {
	struct hostd_dev *dev;
	const char *key;
	__u64 want;
};

static bool stat_reached(void *arg)
{
	struct count_wait *w = arg;

	return fgd_stat(w->dev, w->key) >= w->want;
}

static void wait_stat(struct nfx *x, const char *key, __u64 want)
{
	struct count_wait w = { x->f.dev, key, want };

	assert_true(fgd_run_until(stat_reached, &w, TIMEOUT_MS));
}

/* ---- tests ---------------------------------------------------------------------- */

/* GETCONFIG describes the export: its size and what the server can do */
static void nbd_config(void **state)
{
	struct nfx *x = *state;

	server_file(x, NULL, NULL);
	nbd_up(x, NULL);
	assert_int_equal(x->f.cfg.capacity, DISK_SIZE / SEC);
	assert_int_equal(x->f.cfg.logical_block_size, 512);
	assert_true(x->f.cfg.features & VBUS_BLK_F_FLUSH);
	assert_true(x->f.cfg.features & VBUS_BLK_F_FUA);
	assert_true(x->f.cfg.features & VBUS_BLK_F_DISCARD);
	assert_true(x->f.cfg.features & VBUS_BLK_F_WRITE_ZEROES);
	assert_false(x->f.cfg.features & VBUS_BLK_F_RO);
	assert_string_equal(fgd_stat_str(x->f.dev, "backend"), "nbd");
	/* the file plugin has multi-conn: the other connections come on the loop */
	wait_state(x, "up");
	assert_string_equal(fgd_stat_str(x->f.dev, "nbd"), x->uri);
	assert_int_equal(fgd_stat(x->f.dev, "nbd_connects"),
			 fgd_stat(x->f.dev, "nbd_conns"));
}

/* WRITE in three segments lands in the server's file; READ brings it back */
static void nbd_read_write(void **state)
{
	struct nfx *x = *state;
	__u32 len[3] = { 4096, 512, 8192 };
	unsigned char file[4096 + 512 + 8192];
	__u64 w[3], r[3];
	unsigned int i;

	server_file(x, NULL, NULL);
	nbd_up(x, NULL);
	for (i = 0; i < 3; i++) {
		w[i] = buf_new(len[i], 0xa0 + (int)i);
		r[i] = buf_new(len[i], 0);
	}
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_WRITE, 0, 64, 3, w, len),
			 VBUS_BLK_S_OK);
	file_read(x->f.path, 64 * SEC, file, sizeof(file));
	assert_memory_equal(file, fgd_ram(w[0]), 4096);
	assert_memory_equal(file + 4096, fgd_ram(w[1]), 512);
	assert_memory_equal(file + 4608, fgd_ram(w[2]), 8192);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_READ, 0, 64, 3, r, len),
			 VBUS_BLK_S_OK);
	for (i = 0; i < 3; i++)
		assert_memory_equal(fgd_ram(r[i]), fgd_ram(w[i]), len[i]);
	assert_int_equal(fgd_stat(x->f.dev, "bytes_written"), 12800);
	assert_int_equal(fgd_stat(x->f.dev, "bytes_read"), 12800);
	assert_int_equal(fgd_stat(x->f.dev, "io_errors"), 0);
}

/* FLUSH and a FUA WRITE are answered by the server */
static void nbd_flush_fua(void **state)
{
	struct nfx *x = *state;
	__u32 len = 4096;
	__u64 w = buf_new(len, 0x5c);
	unsigned char file[4096];

	server_file(x, NULL, NULL);
	nbd_up(x, NULL);
	assert_int_equal(noseg(&x->f, VBUS_BLK_OP_FLUSH, 0, 0, 0),
			 VBUS_BLK_S_OK);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_WRITE, VBUS_BLK_REQ_FUA, 8, 1,
			    &w, &len), VBUS_BLK_S_OK);
	file_read(x->f.path, 8 * SEC, file, len);
	assert_memory_equal(file, fgd_ram(w), len);
	assert_int_equal(fgd_stat(x->f.dev, "flushes"), 1);
	assert_int_equal(fgd_stat(x->f.dev, "fua_writes"), 1);
	assert_int_equal(fgd_stat(x->f.dev, "io_errors"), 0);
}

/* DISCARD and WRITE_ZEROES (with and without UNMAP) zero the range only */
static void nbd_discard_zeroes(void **state)
{
	struct nfx *x = *state;
	static const unsigned char zero[65536];
	unsigned char file[65536];

	server_file(x, NULL, NULL);
	nbd_up(x, NULL);
	assert_int_equal(noseg(&x->f, VBUS_BLK_OP_DISCARD, 0, 2048, 128),
			 VBUS_BLK_S_OK);
	file_read(x->f.path, 2048 * SEC, file, sizeof(file));
	assert_memory_equal(file, zero, sizeof(file));
	assert_int_equal(noseg(&x->f, VBUS_BLK_OP_WRITE_ZEROES, 0, 8192, 128),
			 VBUS_BLK_S_OK);
	file_read(x->f.path, 8192 * SEC, file, sizeof(file));
	assert_memory_equal(file, zero, sizeof(file));
	assert_int_equal(noseg(&x->f, VBUS_BLK_OP_WRITE_ZEROES,
			       VBUS_BLK_REQ_UNMAP, 9000, 128), VBUS_BLK_S_OK);
	file_read(x->f.path, 9000 * SEC, file, sizeof(file));
	assert_memory_equal(file, zero, sizeof(file));
	file_read(x->f.path, 9000 * SEC + sizeof(file), file, 512);
	assert_int_equal(file[0], 0x11);	/* not a byte more */
	assert_int_equal(fgd_stat(x->f.dev, "io_errors"), 0);
}

/* a queue's requests are at the server together, not one by one */
static void nbd_many_inflight(void **state)
{
	struct nfx *x = *state;
	__u32 len = 4096;
	unsigned char file[4096];
	__u64 w[16], req[16];
	unsigned int i;

	/* each write takes a second at the server: they overlap or take 16 */
	server_file(x, "--filter=delay", "delay-write=1");
	nbd_up(x, NULL);
	for (i = 0; i < 16; i++) {
		w[i] = buf_new(len, 0x30 + (int)i);
		req[i] = req_new(VBUS_BLK_OP_WRITE, 0, 8 * i, 0, 1, &w[i], &len);
		assert_int_equal(fgd_post(&x->f.r[0], req[i],
					  VBUS_BLK_REQ_SIZE(1), i + 1), 0);
	}
	wait_stat(x, "inflight", 16);
	reap_n(&x->f.r[0], 16, NULL);
	for (i = 0; i < 16; i++) {
		assert_int_equal(req_status(req[i]), VBUS_BLK_S_OK);
		file_read(x->f.path, 8 * i * SEC, file, len);
		assert_memory_equal(file, fgd_ram(w[i]), len);
	}
}

/* the fd of our connection to the server's socket (nbd_conns=1: one) */
static int conn_fd(struct nfx *x)
{
	char link[300], target[64];
	struct sockaddr_un peer;
	struct dirent *e;
	int fd = -1;
	DIR *d = opendir("/proc/self/fd");

	assert_non_null(d);
	while (fd < 0 && (e = readdir(d))) {
		socklen_t len = sizeof(peer);
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0 || strncmp(target, "socket:", 7))
			continue;
		memset(&peer, 0, sizeof(peer));
		if (!getpeername(atoi(e->d_name), (struct sockaddr *)&peer, &len) &&
		    peer.sun_family == AF_UNIX && !strcmp(peer.sun_path, x->sock))
			fd = atoi(e->d_name);
	}
	closedir(d);
	assert_true(fd >= 0);
	return fd;
}

/* until @fd holds @bytes unread (the loop does not run meanwhile) */
static void wait_unread(int fd, int bytes)
{
	__u64 end = hostd_now_ns() + TIMEOUT_MS * 1000000ull;
	int n = 0;

	while (!ioctl(fd, FIONREAD, &n) && n < bytes) {
		struct timespec ts = { 0, 1000000 };

		assert_true(hostd_now_ns() < end);
		nanosleep(&ts, NULL);	/* the byte count has no fd to wait on */
	}
	assert_int_equal(n, bytes);
}

/*
 * The answers of many requests that are at the server together go back
 * to the guest together: one hand-back (one publication, one signal),
 * not one per NBD reply. The loop does not run while the server
 * answers, so all 16 replies (16 bytes each: nbdkit answers a WRITE with
 * a simple reply) wait in the socket before the device sees one.
 */
static void nbd_replies_one_hand_back(void **state)
{
	struct nfx *x = *state;
	__u32 len = 4096;
	__u64 w, req[16], batches;
	unsigned int i;

	server_file(x, NULL, NULL);
	nbd_up(x, "nbd_conns=1");
	wait_state(x, "up");
	w = buf_new(len, 0x5a);
	for (i = 0; i < 16; i++) {
		req[i] = req_new(VBUS_BLK_OP_WRITE, 0, 8 * i, 0, 1, &w, &len);
		assert_int_equal(fgd_post(&x->f.r[0], req[i],
					  VBUS_BLK_REQ_SIZE(1), i + 1), 0);
	}
	wait_stat(x, "inflight", 16);
	batches = fgd_stat(x->f.dev, "batches");
	wait_unread(conn_fd(x), 16 * 16);
	reap_n(&x->f.r[0], 16, NULL);
	for (i = 0; i < 16; i++)
		assert_int_equal(req_status(req[i]), VBUS_BLK_S_OK);
	assert_int_equal(fgd_stat(x->f.dev, "batches") - batches, 1);
}

/* the server killed mid-request: the request waits, is resent, lands */
static void nbd_server_killed(void **state)
{
	struct nfx *x = *state;
	__u32 len = 4096;
	__u64 w = buf_new(len, 0x6b);
	__u64 req = req_new(VBUS_BLK_OP_WRITE, 0, 96, 0, 1, &w, &len);
	unsigned char file[4096];

	server_file(x, "--filter=delay", "delay-write=60");
	nbd_up(x, NULL);
	assert_int_equal(fgd_post(&x->f.r[0], req, VBUS_BLK_REQ_SIZE(1), 1), 0);
	wait_stat(x, "inflight", 1);
	server_kill(x);
	wait_state(x, "down");
	assert_int_equal(req_status(req), VBUS_BLK_S_PENDING);
	server_file(x, NULL, NULL);
	reap_n(&x->f.r[0], 1, NULL);
	assert_int_equal(req_status(req), VBUS_BLK_S_OK);
	file_read(x->f.path, 96 * SEC, file, len);
	assert_memory_equal(file, fgd_ram(w), len);
	/* multi-conn: the second connection may or may not have been up
	 * when the server died (timing); every one lost came back */
	wait_state(x, "up");
	assert_true(fgd_stat(x->f.dev, "nbd_losses") >= 1);
	assert_int_equal(fgd_stat(x->f.dev, "nbd_reconnects"),
			 fgd_stat(x->f.dev, "nbd_losses"));
	assert_true(fgd_stat(x->f.dev, "nbd_resent") >= 1);
	assert_int_equal(fgd_stat(x->f.dev, "io_errors"), 0);
}

/* what a FLUSH acknowledged is there after the server is killed */
static void nbd_flushed_survives(void **state)
{
	struct nfx *x = *state;
	__u32 len = 8192;
	__u64 w = buf_new(len, 0x4f), r = buf_new(len, 0);

	server_file(x, NULL, NULL);
	nbd_up(x, NULL);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_WRITE, 0, 200, 1, &w, &len),
			 VBUS_BLK_S_OK);
	assert_int_equal(noseg(&x->f, VBUS_BLK_OP_FLUSH, 0, 0, 0),
			 VBUS_BLK_S_OK);
	server_kill(x);
	wait_state(x, "down");
	server_file(x, NULL, NULL);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_READ, 0, 200, 1, &r, &len),
			 VBUS_BLK_S_OK);
	assert_memory_equal(fgd_ram(r), fgd_ram(w), len);
}

/* ---- DISCARD with a range list ------------------------------------------------ */

/* nbdkit's log filter's lines in @log that contain @what */
static unsigned int log_count(const char *log, const char *what);
static void server_logged(struct nfx *x, const char *log, const char *mode);

/* one NBD_CMD_TRIM a range, each range and nothing else zero */
static void nbd_discard_ranges(void **state)
{
	struct nfx *x = *state;
	static const struct vbus_blk_range rg[] = {
		{ 4096, 8, 0 }, { 256, 64, 0 }, { 1024, 128, 0 },
	};
	static const unsigned char zero[65536];
	unsigned char file[65536];
	char log[sizeof(x->dir) + 8];
	unsigned int i;

	snprintf(log, sizeof(log), "%s/log", x->dir);
	server_logged(x, log, NULL);
	nbd_up(x, NULL);
	assert_true(x->f.neg.features & VBUS_BLK_F_DISCARD_RANGES);
	assert_int_equal(discard_ranges(&x->f, rg, 3), VBUS_BLK_S_OK);
	for (i = 0; i < 3; i++) {
		file_read(x->f.path, rg[i].sector * SEC, file,
			  rg[i].nr_sectors * SEC);
		assert_memory_equal(file, zero, rg[i].nr_sectors * SEC);
		file_read(x->f.path, (rg[i].sector + rg[i].nr_sectors) * SEC,
			  file, 1);
		assert_int_equal(file[0], 0x11);	/* not a byte more */
		file_read(x->f.path, rg[i].sector * SEC - 1, file, 1);
		assert_int_equal(file[0], 0x11);
	}
	assert_int_equal(log_count(log, "Trim"), 2 * 3);	/* call + return */
	assert_int_equal(fgd_stat(x->f.dev, "discard_ranges"), 3);
	assert_int_equal(fgd_stat(x->f.dev, "multi_range_discards"), 1);
	assert_int_equal(fgd_stat(x->f.dev, "io_errors"), 0);
	unlink(log);
}

/* a server that fails the trims: the request is S_IOERR */
static void nbd_discard_ranges_fail(void **state)
{
	struct nfx *x = *state;
	static const struct vbus_blk_range rg[] = {
		{ 256, 64, 0 }, { 1024, 128, 0 },
	};
	char file[600];

	snprintf(file, sizeof(file), "file=%s", x->f.path);
	server_start(x, "--filter=error", "file", file, "error-trim=EIO",
		     "error-trim-rate=100%", NULL);
	nbd_up(x, NULL);
	assert_int_equal(discard_ranges(&x->f, rg, 2), VBUS_BLK_S_IOERR);
	assert_int_equal(fgd_stat(x->f.dev, "io_errors"), 1);
	assert_int_equal(fgd_stat(x->f.dev, "nbd_server_errors"), 2);
	assert_false(fgd_dev_faulted(x->f.dev));
}

/* the disk up on a server that dies and comes back with half the export */
static void up_then_shrunk(struct nfx *x)
{
	server_file(x, NULL, NULL);
	nbd_up(x, NULL);
	server_kill(x);
	wait_state(x, "down");
	assert_int_equal(truncate(x->f.path, DISK_SIZE / 2), 0);
	server_file(x, NULL, NULL);
	wait_state(x, "up");
}

/*
 * One range fails, the last one succeeds: the request is S_IOERR all
 * the same (the export came back smaller: the first range is past its
 * end, nbd_past_end), and the good range was trimmed.
 */
static void nbd_discard_ranges_one_fails(void **state)
{
	struct nfx *x = *state;
	static const struct vbus_blk_range rg[] = {
		{ DISK_SIZE / SEC - 8, 8, 0 }, { 256, 64, 0 },
	};
	static const unsigned char zero[64 * SEC];
	unsigned char file[64 * SEC];

	up_then_shrunk(x);
	assert_int_equal(discard_ranges(&x->f, rg, 2), VBUS_BLK_S_IOERR);
	assert_int_equal(fgd_stat(x->f.dev, "nbd_past_end"), 1);
	file_read(x->f.path, 256 * SEC, file, sizeof(file));
	assert_memory_equal(file, zero, sizeof(file));
}

/* a range off the server's 4 KiB block: refused, never sent */
static void nbd_discard_ranges_unaligned(void **state)
{
	struct nfx *x = *state;
	static const struct vbus_blk_range rg[] = {
		{ 256, 64, 0 }, { 1025, 8, 0 },
	};

	server_start(x, "--filter=blocksize-policy", "memory", "size=8M",
		     "blocksize-minimum=4096", "blocksize-preferred=4096",
		     "blocksize-maximum=65536", NULL);
	nbd_up(x, NULL);
	assert_int_equal(x->f.cfg.logical_block_size, 4096);
	assert_int_equal(discard_ranges(&x->f, rg, 2), VBUS_BLK_S_BADREQ);
	assert_int_equal(fgd_stat(x->f.dev, "bad_requests"), 1);
	assert_int_equal(fgd_stat(x->f.dev, "discards"), 0);
}

/* ---- multi-conn ---------------------------------------------------------------- */

/* nbdkit's log filter's lines in @log that contain @what */
static unsigned int log_count(const char *log, const char *what)
{
	FILE *f = fopen(log, "r");
	char line[4096];
	unsigned int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

/* the file plugin behind nbdkit's log filter (logfile=@log), and maybe
 * the multi-conn filter in @mode */
static void server_logged(struct nfx *x, const char *log, const char *mode)
{
	char file[600], logarg[600], modearg[64];

	snprintf(file, sizeof(file), "file=%s", x->f.path);
	snprintf(logarg, sizeof(logarg), "logfile=%s", log);
	if (mode) {
		snprintf(modearg, sizeof(modearg), "multi-conn-mode=%s", mode);
		server_start(x, "--filter=log", "--filter=multi-conn", "file",
			     file, logarg, modearg, NULL);
	} else {
		server_start(x, "--filter=log", "file", file, logarg, NULL);
	}
}

/* a WRITE on queue 0 and a FLUSH on queue 1 */
static void write_q0_flush_q1(struct nfx *x, int fill)
{
	__u32 len = 4096;
	__u64 w = buf_new(len, fill);
	unsigned char got[4096];

	assert_int_equal(rw(&x->f, VBUS_BLK_OP_WRITE, 0, 16, 1, &w, &len),
			 VBUS_BLK_S_OK);
	assert_int_equal(submit(&x->f, 1, req_new(VBUS_BLK_OP_FLUSH, 0, 0, 0,
						  0, NULL, NULL),
				(__u32)VBUS_BLK_REQ_SIZE(0)), VBUS_BLK_S_OK);
	file_read(x->f.path, 16 * SEC, got, len);
	assert_memory_equal(got, fgd_ram(w), len);
}

/*
 * A server with multi-conn: one connection per queue (queues=2), each
 * queue's requests on its own: the server saw two connections, the
 * WRITE on one and the FLUSH on the other.
 */
static void nbd_multi_conn_per_queue(void **state)
{
	struct nfx *x = *state;
	char log[400];

	snprintf(log, sizeof(log), "%s/log", x->dir);
	server_logged(x, log, NULL);
	nbd_up(x, "queues=2");
	assert_int_equal(fgd_stat(x->f.dev, "nbd_conns"), 2);
	wait_stat(x, "nbd_conns_up", 2);
	write_q0_flush_q1(x, 0x6c);
	assert_int_equal(log_count(log, "Connect "), 2);
	assert_int_equal(log_count(log, "connection=1 Write "), 1);
	assert_int_equal(log_count(log, "connection=2 Flush "), 1);
	assert_int_equal(log_count(log, "connection=2 Write "), 0);
	unlink(log);
}

/* without multi-conn one connection serves every queue, whatever nbd_conns= says */
static void nbd_no_multi_conn_one_conn(void **state)
{
	struct nfx *x = *state;
	char log[400];

	snprintf(log, sizeof(log), "%s/log", x->dir);
	server_logged(x, log, "disable");
	nbd_up(x, "queues=2,nbd_conns=2");
	assert_int_equal(fgd_stat(x->f.dev, "nbd_conns"), 1);
	write_q0_flush_q1(x, 0x6d);
	assert_int_equal(log_count(log, "Connect "), 1);
	assert_int_equal(log_count(log, "connection=1 Flush "), 1);
	unlink(log);
}

/* nbd_conns=1 keeps one connection to a multi-conn server; 17 is refused */
static void nbd_conns_param(void **state)
{
	struct nfx *x = *state;
	char params[2048];
	int err;

	snprintf(params, sizeof(params), "nbd=%s,nbd_conns=17", x->uri);
	assert_null(fgd_dev_create("vbus-blk", params, &err));
	assert_non_null(strstr(fgd_last_error(), "nbd_conns"));
	server_file(x, NULL, NULL);
	nbd_up(x, "queues=2,nbd_conns=1");
	assert_int_equal(fgd_stat(x->f.dev, "nbd_conns"), 1);
	assert_int_equal(fgd_stat(x->f.dev, "nbd_conns_up"), 1);
}

/*
 * The server killed with a request parked on each queue: both
 * connections come back, each sends its queue's request again.
 */
static void nbd_multi_conn_reconnect(void **state)
{
	struct nfx *x = *state;
	__u32 len = 4096;
	__u64 w0 = buf_new(len, 0x71), w1 = buf_new(len, 0x72), g0, g1;
	unsigned char got[4096];

	server_file(x, NULL, NULL);
	nbd_up(x, "queues=2");
	wait_stat(x, "nbd_conns_up", 2);
	server_kill(x);
	wait_state(x, "down");
	g0 = req_new(VBUS_BLK_OP_WRITE, 0, 32, 0, 1, &w0, &len);
	g1 = req_new(VBUS_BLK_OP_WRITE, 0, 40, 0, 1, &w1, &len);
	assert_int_equal(fgd_post(&x->f.r[0], g0, (__u32)VBUS_BLK_REQ_SIZE(1),
				  ++x->f.cookie), 0);
	assert_int_equal(fgd_post(&x->f.r[1], g1, (__u32)VBUS_BLK_REQ_SIZE(1),
				  ++x->f.cookie), 0);
	wait_stat(x, "nbd_parked_now", 2);
	server_file(x, NULL, NULL);
	reap_n(&x->f.r[0], 1, NULL);
	reap_n(&x->f.r[1], 1, NULL);
	assert_int_equal(req_status(g0), VBUS_BLK_S_OK);
	assert_int_equal(req_status(g1), VBUS_BLK_S_OK);
	assert_true(fgd_stat(x->f.dev, "nbd_reconnects") >= 2);
	file_read(x->f.path, 32 * SEC, got, len);
	assert_memory_equal(got, fgd_ram(w0), len);
	file_read(x->f.path, 40 * SEC, got, len);
	assert_memory_equal(got, fgd_ram(w1), len);
}

/* a server that does not come back: the request fails at nbd_timeout */
static void nbd_server_gone(void **state)
{
	struct nfx *x = *state;
	__u32 len = 4096;
	__u64 r = buf_new(len, 0);

	server_file(x, NULL, NULL);
	nbd_up(x, "nbd_timeout=1");
	server_kill(x);
	wait_state(x, "down");
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_READ, 0, 0, 1, &r, &len),
			 VBUS_BLK_S_IOERR);
	assert_int_equal(fgd_stat(x->f.dev, "nbd_timeouts"), 1);
	assert_int_equal(fgd_stat(x->f.dev, "io_errors"), 1);
	assert_true(fgd_stat(x->f.dev, "nbd_connect_failures") >= 1);
	assert_false(fgd_dev_faulted(x->f.dev));
}

/* a server that stops answering: dropped at nbd_timeout, the request fails */
static void nbd_server_stalls(void **state)
{
	struct nfx *x = *state;
	__u32 len = 4096;
	__u64 r = buf_new(len, 0);

	server_file(x, "--filter=delay", "delay-read=60");
	nbd_up(x, "nbd_timeout=1");
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_READ, 0, 0, 1, &r, &len),
			 VBUS_BLK_S_IOERR);
	assert_int_equal(fgd_stat(x->f.dev, "nbd_stalls"), 1);
	assert_int_equal(fgd_stat(x->f.dev, "nbd_timeouts"), 1);
	/* and the disk reconnects: the server itself is still there */
	wait_state(x, "up");
	assert_int_equal(fgd_stat(x->f.dev, "nbd_reconnects"), 1);
}

/* no server: the device is refused, saying why */
static void nbd_refused(void **state)
{
	struct nfx *x = *state;
	char params[2048];
	int err;

	snprintf(params, sizeof(params), "nbd=%s", x->uri);
	assert_null(fgd_dev_create("vbus-blk", params, &err));
	assert_true(err < 0);
	assert_non_null(strstr(fgd_last_error(), "cannot connect"));
	assert_non_null(strstr(fgd_last_error(), x->sock));
}

/* a server that takes the connection and never says a word */
static int stalled_server(struct nfx *x)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(s >= 0);
	assert_true(strlen(x->sock) < sizeof(a.sun_path));
	memcpy(a.sun_path, x->sock, strlen(x->sock) + 1);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	/* the kernel completes the connect from its backlog: never accepted */
	assert_int_equal(listen(s, 4), 0);
	return s;
}

/*
 * `ctl add` of an NBD disk on a running guest waits for nothing: the
 * device is pending (the guest is not told of it: DEVOPEN refused)
 * while the handshake runs on the loop, another disk's reads keep
 * completing meanwhile, and a server that never answers gives the add
 * up at nbd_timeout, saying so, the other disk untouched.
 */
static void nbd_add_stalled_server(void **state)
{
	struct nfx *x = *state;
	struct fx other = { 0 };
	__u32 len = 4096;
	__u64 r = buf_new(len, 0);
	char params[2048];
	struct hostd_dev *dev;
	unsigned int reads = 0;
	int ls = stalled_server(x), err;
	__u64 end = hostd_now_ns() + TIMEOUT_MS * 1000000ull;

	tmp_path(other.path, sizeof(other.path), "nbd-other");
	make_file(other.path, DISK_SIZE, 0x22);
	blk_create(&other, NULL);
	blk_negotiate(&other, other.cfg.features, 1, 16);
	snprintf(params, sizeof(params), "nbd=%s,nbd_timeout=1", x->uri);
	dev = fgd_dev_add("vbus-blk", params, &err);
	assert_non_null(dev);
	assert_true(fgd_dev_pending(dev));
	assert_string_equal(fgd_stat_str(dev, "state"), "pending");
	assert_string_equal(fgd_stat_str(dev, "nbd_state"), "connecting");
	assert_int_equal(fgd_dev_open(dev, VBUS_BLK_VERSION), -ENODEV);
	/* served while the add waits; `dev` is gone once it gave up */
	while (!fgd_add_error()[0]) {
		assert_true(hostd_now_ns() < end);
		assert_int_equal(rw(&other, VBUS_BLK_OP_READ, 0, 8, 1, &r, &len),
				 VBUS_BLK_S_OK);
		reads++;
	}
	assert_true(reads > 0);
	assert_non_null(strstr(fgd_add_error(), "nbd=nbd+unix:///?socket="));
	assert_non_null(strstr(fgd_add_error(), ": no answer from the server "
			       "within nbd_timeout=1 s"));
	assert_int_equal(((unsigned char *)fgd_ram(r))[0], 0x22);
	assert_int_equal(fgd_stat(other.dev, "io_errors"), 0);
	assert_false(fgd_dev_faulted(other.dev));
	fprintf(stderr, "[test] %u reads of the other disk while the add "
		"waited\n", reads);
	fgd_dev_destroy(other.dev);
	unlink(other.path);
	close(ls);
}

/* file= and nbd= together, or an nbd param with a file: refused */
static void nbd_param_errors(void **state)
{
	struct nfx *x = *state;
	char params[2048];
	int err;

	snprintf(params, sizeof(params), "file=%s,nbd=%s", x->f.path, x->uri);
	assert_null(fgd_dev_create("vbus-blk", params, &err));
	assert_non_null(strstr(fgd_last_error(), "vbus-blk takes one of file=PATH, nbd=URI and image=PATH"));
	snprintf(params, sizeof(params), "nbd=%s,direct=1", x->uri);
	assert_null(fgd_dev_create("vbus-blk", params, &err));
	assert_non_null(strstr(fgd_last_error(), "direct= applies to file= only, not to nbd="));
	snprintf(params, sizeof(params), "file=%s,nbd_timeout=5", x->f.path);
	assert_null(fgd_dev_create("vbus-blk", params, &err));
	assert_non_null(strstr(fgd_last_error(), "nbd_timeout= applies to nbd= and image= only"));
	assert_null(fgd_dev_create("vbus-blk", "nbd=nbd+ssh://h/x", &err));
	assert_non_null(strstr(fgd_last_error(), "cannot connect"));
}

/* a server's odd block sizes become the guest's limits, and bind it */
static void nbd_odd_block_sizes(void **state)
{
	struct nfx *x = *state;
	__u32 len = 4096, l512 = 512, big = 126976 + 4096;
	__u64 b = buf_new(big, 0x21);

	/* 4 KiB minimum, 16 KiB preferred, 124 KiB (not a power of 2) maximum */
	server_start(x, "--filter=blocksize-policy", "memory", "size=8M",
		     "blocksize-minimum=4096", "blocksize-preferred=16384",
		     "blocksize-maximum=126976", NULL);
	nbd_up(x, NULL);
	assert_int_equal(x->f.cfg.logical_block_size, 4096);
	assert_int_equal(x->f.cfg.physical_block_size, 16384);
	assert_int_equal(x->f.cfg.max_sectors, 126976 / SEC);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_WRITE, 0, 8, 1, &b, &len),
			 VBUS_BLK_S_OK);
	/* under the minimum, and over the maximum: never sent */
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_WRITE, 0, 8, 1, &b, &l512),
			 VBUS_BLK_S_BADREQ);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_READ, 0, 0, 1, &b, &big),
			 VBUS_BLK_S_BADREQ);
	assert_int_equal(fgd_stat(x->f.dev, "bad_requests"), 2);
	assert_int_equal(fgd_stat(x->f.dev, "io_errors"), 0);
}

/* a minimum block size the guest cannot have: refused, saying why */
static void nbd_block_size_refused(void **state)
{
	struct nfx *x = *state;
	char params[2048];
	int err;

	server_start(x, "--filter=blocksize-policy", "memory", "size=8M",
		     "blocksize-minimum=8192", "blocksize-preferred=8192",
		     "blocksize-maximum=65536", NULL);
	snprintf(params, sizeof(params), "nbd=%s", x->uri);
	assert_null(fgd_dev_create("vbus-blk", params, &err));
	assert_non_null(strstr(fgd_last_error(),
			       "minimum block size 8192 is not a power of two up to 4096"));
}

/* malformed and oversized requests are refused before the server */
static void nbd_malformed(void **state)
{
	struct nfx *x = *state;
	__u32 len = 4096, huge = 2048 * SEC + 4096;
	__u64 b = buf_new(huge, 0);

	server_file(x, NULL, NULL);
	nbd_up(x, NULL);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_READ, 0, DISK_SIZE / SEC, 1, &b,
			    &len), VBUS_BLK_S_BADREQ);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_WRITE, 0, 0, 1, &b, &huge),
			 VBUS_BLK_S_BADREQ);
	assert_int_equal(noseg(&x->f, VBUS_BLK_OP_DISCARD, 0,
			       DISK_SIZE / SEC - 8, 16), VBUS_BLK_S_BADREQ);
	assert_int_equal(noseg(&x->f, 0x7f, 0, 0, 0), VBUS_BLK_S_UNSUPP);
	assert_int_equal(fgd_stat(x->f.dev, "bad_requests"), 3);
	assert_int_equal(fgd_stat(x->f.dev, "reads"), 0);
	assert_false(fgd_dev_faulted(x->f.dev));
}

/* an export that comes back smaller: what is past its end fails */
static void nbd_export_shrinks(void **state)
{
	struct nfx *x = *state;
	__u32 len = 4096;
	__u64 r = buf_new(len, 0);

	up_then_shrunk(x);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_READ, 0, DISK_SIZE / SEC - 8, 1,
			    &r, &len), VBUS_BLK_S_IOERR);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_READ, 0, 0, 1, &r, &len),
			 VBUS_BLK_S_OK);
	assert_int_equal(fgd_stat(x->f.dev, "nbd_past_end"), 1);
	assert_int_equal(fgd_stat(x->f.dev, "nbd_size"), DISK_SIZE / 2);
}

/*
 * a server back with a larger export grew the disk: the capacity follows
 * and the guest's events ring is signalled; `ctl resize` of an nbd= disk
 * is refused, saying where an export is resized
 */
static void nbd_export_grows(void **state)
{
	struct nfx *x = *state;
	__u32 len = 4096;
	__u64 w = buf_new(len, 0x3c);
	static struct fg_ring ev;	/* attached: it outlives the function */
	char msg[512];

	server_file(x, NULL, NULL);
	nbd_up(x, NULL);
	assert_int_equal(fgd_ring_attach(x->f.dev, VBUS_BLK_SHM_EVENTS,
					 VBUS_BLK_EVENTS_COUNT, &ev), 0);
	fgd_irqs(&ev);
	assert_int_equal(fgd_dev_ctl(x->f.dev, "resize", "16M", msg,
				     sizeof(msg)), -EOPNOTSUPP);
	assert_non_null(strstr(msg, "(vbus-blk): resize: nbd=nbd+unix:///?socket="));
	assert_non_null(strstr(msg, ": an NBD export is resized on its server; vbus-hostd takes a larger export's size when it reconnects"));
	server_kill(x);
	wait_state(x, "down");
	assert_int_equal(truncate(x->f.path, DISK_SIZE * 2), 0);
	server_file(x, NULL, NULL);
	wait_state(x, "up");
	assert_int_equal(fgd_stat(x->f.dev, "capacity"), 2 * DISK_SIZE / SEC);
	fgd_run_for(10);
	assert_true(fgd_irqs(&ev) >= 1);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_WRITE, 0, DISK_SIZE / SEC, 1,
			    &w, &len), VBUS_BLK_S_OK);
	assert_int_equal(fgd_stat(x->f.dev, "resizes"), 1);
}

/* a read-only export is a read-only disk */
static void nbd_read_only(void **state)
{
	struct nfx *x = *state;
	char file[600];

	snprintf(file, sizeof(file), "file=%s", x->f.path);
	server_start(x, "-r", "file", file, NULL);
	nbd_up(x, NULL);
	assert_true(x->f.cfg.features & VBUS_BLK_F_RO);
	assert_int_equal(fgd_stat(x->f.dev, "ro"), 1);
}

static bool no_orphans(void *arg)
{
	return fgd_stat(arg, "nbd_orphans") == 0;
}

/* close with a request at a slow server: at once, and nothing answered */
static void nbd_close_inflight(void **state)
{
	struct nfx *x = *state;
	__u32 len = 4096;
	__u64 r = buf_new(len, 0x99);
	__u64 req = req_new(VBUS_BLK_OP_READ, 0, 0, 0, 1, &r, &len);

	server_file(x, "--filter=delay", "delay-read=1");
	nbd_up(x, NULL);
	assert_int_equal(fgd_post(&x->f.r[0], req, VBUS_BLK_REQ_SIZE(1), 1), 0);
	wait_stat(x, "inflight", 1);
	fgd_dev_close(x->f.dev);
	assert_int_equal(fgd_stat(x->f.dev, "inflight"), 0);
	assert_int_equal(fgd_stat(x->f.dev, "drain_timeouts"), 0);
	/* the answer comes to a closed session: dropped, no guest write */
	assert_int_equal(fgd_stat(x->f.dev, "nbd_orphans"), 1);
	assert_true(fgd_run_until(no_orphans, x->f.dev, TIMEOUT_MS));
	assert_int_equal(req_status(req), VBUS_BLK_S_PENDING);
	assert_int_equal(((unsigned char *)fgd_ram(r))[0], 0x99);
	assert_false(fgd_dev_faulted(x->f.dev));
}

/* qemu-nbd on a qcow2 image: flushed data is in the image, server killed */
static void nbd_qemu_nbd_qcow2(void **state)
{
	struct nfx *x = *state;
	__u32 len = 4096;
	__u64 w = buf_new(len, 0x6b), r = buf_new(len, 0);
	const char *check[] = { "qemu-io", "-f", "qcow2", "-c",
				"read -q -P 0x6b 4096 4096", x->image, NULL };

	server_qemu_nbd(x, "8M");
	nbd_up(x, NULL);
	assert_int_equal(x->f.cfg.capacity, DISK_SIZE / SEC);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_WRITE, 0, 8, 1, &w, &len),
			 VBUS_BLK_S_OK);
	assert_int_equal(noseg(&x->f, VBUS_BLK_OP_FLUSH, 0, 0, 0),
			 VBUS_BLK_S_OK);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_READ, 0, 8, 1, &r, &len),
			 VBUS_BLK_S_OK);
	assert_memory_equal(fgd_ram(r), fgd_ram(w), len);
	server_kill(x);
	assert_int_equal(blk_run(check), 0);
}

/* image=: a base with a pattern, a qcow2 overlay on it; the device on it */
static void image_up(struct nfx *x)
{
	const char *base[] = { "qemu-img", "create", "-q", "-f", "qcow2",
			       x->base, "8M", NULL };
	const char *fill[] = { "qemu-io", "-f", "qcow2", "-c",
			       "write -q -P 0x5a 0 1M", x->base, NULL };
	const char *overlay[] = { "qemu-img", "create", "-q", "-f", "qcow2",
				  "-b", x->base, "-F", "qcow2", x->image, NULL };
	char params[1024];

	assert_int_equal(blk_run(base), 0);
	assert_int_equal(blk_run(fill), 0);
	assert_int_equal(blk_run(overlay), 0);
	snprintf(params, sizeof(params), "image=%s", x->image);
	blk_create_params(&x->f, params);
	blk_negotiate(&x->f, x->f.cfg.features, 2, 16);
}

/* image=: the overlay's data and the base's, and the base unchanged */
static void image_qcow2_overlay(void **state)
{
	struct nfx *x = *state;
	__u32 len = 4096;
	__u64 w = buf_new(len, 0x6b), r = buf_new(len, 0);
	const char *in_overlay[] = { "qemu-io", "-U", "-r", "-f", "qcow2", "-c",
				     "read -q -P 0x6b 4096 4096", x->image, NULL };
	const char *base_kept[] = { "qemu-io", "-U", "-r", "-f", "qcow2", "-c",
				    "read -q -P 0x5a 0 1M", x->base, NULL };
	const char *check[] = { "qemu-img", "check", "-q", "-U", x->image, NULL };

	image_up(x);
	assert_string_equal(fgd_stat_str(x->f.dev, "image_format"), "qcow2");
	assert_string_equal(fgd_stat_str(x->f.dev, "image_state"), "running");
	assert_int_equal(x->f.cfg.capacity, DISK_SIZE / SEC);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_READ, 0, 0, 1, &r, &len),
			 VBUS_BLK_S_OK);
	assert_int_equal(((unsigned char *)fgd_ram(r))[0], 0x5a);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_WRITE, 0, 8, 1, &w, &len),
			 VBUS_BLK_S_OK);
	assert_int_equal(noseg(&x->f, VBUS_BLK_OP_FLUSH, 0, 0, 0),
			 VBUS_BLK_S_OK);
	assert_int_equal(blk_run(in_overlay), 0);
	assert_int_equal(blk_run(base_kept), 0);
	assert_int_equal(blk_run(check), 0);
}

/* a second user of the image is refused, with the storage daemon's reason */
static void image_second_user(void **state)
{
	struct nfx *x = *state;
	char params[1024];
	int err;

	image_up(x);
	snprintf(params, sizeof(params), "image=%s", x->image);
	assert_null(fgd_dev_create("vbus-blk", params, &err));
	assert_non_null(strstr(fgd_last_error(), "lock"));
}

/* the storage daemon killed: started again, the request waits and lands */
static void image_daemon_restarted(void **state)
{
	struct nfx *x = *state;
	__u32 len = 4096;
	__u64 w = buf_new(len, 0x3c);
	const char *landed[] = { "qemu-io", "-U", "-r", "-f", "qcow2", "-c",
				 "read -q -P 0x3c 8192 4096", x->image, NULL };
	pid_t pid;

	image_up(x);
	pid = (pid_t)fgd_stat(x->f.dev, "image_pid");
	assert_true(pid > 0);
	assert_int_equal(kill(pid, SIGKILL), 0);
	wait_stat(x, "image_restarts", 1);
	assert_int_equal(rw(&x->f, VBUS_BLK_OP_WRITE, 0, 16, 1, &w, &len),
			 VBUS_BLK_S_OK);
	assert_int_equal(noseg(&x->f, VBUS_BLK_OP_FLUSH, 0, 0, 0),
			 VBUS_BLK_S_OK);
	assert_true(fgd_stat(x->f.dev, "nbd_reconnects") >= 1);
	assert_int_equal(blk_run(landed), 0);
}

/* the storage daemon holds no descriptor of ours: no guest RAM, no pipe */
static void image_daemon_inherits_nothing(void **state)
{
	struct nfx *x = *state;
	char dir[64], fd[320], target[512];
	int leaked = 0, fds = 0;
	DIR *d;
	struct dirent *e;
	int keep;

	/*
	 * a descriptor that is not close-on-exec, as the daemon may have;
	 * numbered high, above any of the storage daemon's own
	 */
	keep = fcntl(0, F_DUPFD, 900);
	assert_true(keep >= 0);
	image_up(x);
	snprintf(dir, sizeof(dir), "/proc/%d/fd",
		 (int)fgd_stat(x->f.dev, "image_pid"));
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d))) {
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		fds++;
		snprintf(fd, sizeof(fd), "%s/%s", dir, e->d_name);
		n = readlink(fd, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		if (atoi(e->d_name) == keep || strstr(target, "memfd:")) {
			fprintf(stderr, "[test] storage daemon has fd %s -> %s\n",
				e->d_name, target);
			leaked++;
		}
	}
	closedir(d);
	close(keep);
	assert_true(fds >= 3);
	assert_int_equal(leaked, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(nbd_config), T(nbd_read_write), T(nbd_flush_fua),
		T(nbd_discard_zeroes), T(nbd_many_inflight),
		T(nbd_replies_one_hand_back),
		T(nbd_server_killed), T(nbd_flushed_survives),
		T(nbd_server_gone), T(nbd_server_stalls), T(nbd_refused),
		T(nbd_add_stalled_server),
		T(nbd_param_errors), T(nbd_odd_block_sizes),
		T(nbd_block_size_refused), T(nbd_malformed),
		T(nbd_export_shrinks), T(nbd_export_grows), T(nbd_read_only),
		T(nbd_close_inflight), T(nbd_qemu_nbd_qcow2),
		T(image_qcow2_overlay), T(image_second_user),
		T(image_daemon_restarted), T(image_daemon_inherits_nothing),
		T(nbd_multi_conn_per_queue), T(nbd_no_multi_conn_one_conn),
		T(nbd_conns_param), T(nbd_multi_conn_reconnect),
		T(nbd_discard_ranges), T(nbd_discard_ranges_fail),
		T(nbd_discard_ranges_one_fails), T(nbd_discard_ranges_unaligned),
#undef T
	};

	/* qemu-nbd --fork's server: a grandchild, reaped here */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
