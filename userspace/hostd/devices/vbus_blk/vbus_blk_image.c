// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-blk image=PATH: a disk image in any format QEMU's block layer
 * reads (qcow2 with its backing chain, vmdk, ...), served by a
 * qemu-storage-daemon this device starts, and used through the NBD
 * backend (vbus_blk_nbd.c) on a unix socket in a private directory
 * (mkdtemp: 0700) under $RUNTIME_DIRECTORY (systemd's), or
 * $XDG_RUNTIME_DIR, or /tmp.
 *
 * The format is image_format=, or what `qemu-img info --output=json`
 * says (a raw image's content is the guest's: a guest can write what
 * looks like a qcow2 header into it, so give image_format=raw for raw
 * images). The storage daemon opens the image with locking on: a second
 * user (another vbus-hostd, a QEMU) is refused, and so is this one when
 * the image is in use, with qemu-storage-daemon's own message.
 *
 * The daemon is watched through a pidfd: when it dies it is started
 * again (the NBD backend's requests wait meanwhile and are resent once
 * it reconnects, vbus_blk_nbd_conn.c). A restart that fails stops the
 * restarts (`ctl stats`: image_state=failed); the requests then fail at
 * their nbd_timeout. A start runs qemu-storage-daemon --daemonize: its
 * first process exits once the export is up; at create that is waited
 * for (bounded by nbd_timeout), on the loop it is watched, not waited.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "vbus_blk_image.h"

extern char **environ;

static const char *const formats[] = {
	"raw", "qcow2", "qed", "vmdk", "vdi", "vhdx", "vpc", NULL
};

static int pidfd_of(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* spawn @argv, stdin and stdout /dev/null unless @out, stderr to @err */
static pid_t spawn(const char *const *argv, int out, int err)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int ret;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (out >= 0)
		posix_spawn_file_actions_adddup2(&fa, out, 1);
	else
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, err, 2);
	ret = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv,
			   environ);
	posix_spawn_file_actions_destroy(&fa);
	if (ret) {
		errno = ret;
		return -1;
	}
	return pid;
}

/* what is in @fd now (non-blocking), as one line */
static void read_msg(int fd, char *buf, size_t len)
{
	ssize_t n = read(fd, buf, len - 1);
	char *nl;

	buf[n > 0 ? n : 0] = '\0';
	while ((nl = strchr(buf, '\n')) && nl[1])
		*nl = ' ';
	if ((nl = strchr(buf, '\n')))
		*nl = '\0';
}

/* `qemu-img info --output=json`'s top-level "format" into im->format */
static int probe_format(struct vbus_blk *b, struct vbus_blk_image *im)
{
	const char *argv[] = { "qemu-img", "info", "--output=json", "-U",
			       im->image, NULL };
	static char out[65536];
	int p[2], e[2], st = 0;
	size_t got = 0;
	const char *f;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) || pipe2(e, O_CLOEXEC | O_NONBLOCK))
		return hostd_dev_fail(b->dev, -errno, "image=: pipe: %s",
				      strerror(errno));
	pid = spawn(argv, p[1], e[1]);
	close(p[1]);
	close(e[1]);
	while (pid > 0 && got < sizeof(out) - 1 &&
	       (n = read(p[0], out + got, sizeof(out) - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(p[0]);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st)) {
		char msg[512];

		read_msg(e[0], msg, sizeof(msg));
		close(e[0]);
		return hostd_dev_fail(b->dev, -EINVAL, "image=%s: qemu-img info: %s",
				      im->image, pid < 0 ? strerror(errno) : msg);
	}
	close(e[0]);
	/* top level: four spaces in; a backing file's format is deeper */
	f = strstr(out, "\n    \"format\": \"");
	if (!f || sscanf(f, "\n    \"format\": \"%31[a-z0-9]\"", im->format) != 1)
		return hostd_dev_fail(b->dev, -EINVAL,
				      "image=%s: qemu-img info names no format",
				      im->image);
	return 0;
}

static int check_format(struct vbus_blk *b, const struct vbus_blk_image *im)
{
	unsigned int i;

	for (i = 0; formats[i]; i++)
		if (!strcmp(im->format, formats[i]))
			return 0;
	return hostd_dev_fail(b->dev, -EINVAL,
			      "image=%s: format %s is not one of raw, qcow2, qed, "
			      "vmdk, vdi, vhdx, vpc", im->image, im->format);
}

/* ---- the storage daemon ------------------------------------------------- */

static void on_daemon_exit(struct hostd_dev *dev, int fd, __u32 events,
			   void *arg);
static void on_starter_exit(struct hostd_dev *dev, int fd, __u32 events,
			    void *arg);

static void unwatch(struct vbus_blk_image *im, int *fd)
{
	if (*fd < 0)
		return;
	hostd_fd_del(im->b->dev, *fd);
	close(*fd);
	*fd = -1;
}

/* qemu-storage-daemon --daemonize: its first process is the starter */
static int start(struct vbus_blk_image *im)
{
	char file[PATH_MAX + 64], fmt[64], nbd[PATH_MAX + 64], exp[128];
	const char *argv[] = {
		"qemu-storage-daemon", "--daemonize", "--pidfile", im->pidfile,
		"--blockdev", file, "--blockdev", fmt, "--nbd-server", nbd,
		"--export", exp, NULL
	};
	int e[2];

	snprintf(file, sizeof(file),
		 "driver=file,node-name=file,filename=%s,locking=on", im->image);
	snprintf(fmt, sizeof(fmt), "driver=%s,node-name=disk,file=file",
		 im->format);
	snprintf(nbd, sizeof(nbd), "addr.type=unix,addr.path=%s", im->sock);
	snprintf(exp, sizeof(exp),
		 "type=nbd,id=disk,node-name=disk,name=disk,writable=%s",
		 im->b->ro ? "off" : "on");
	if (strchr(im->image, ','))
		return -EINVAL;	/* qemu's option syntax: a comma splits */
	if (pipe2(e, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	unlink(im->pidfile);
	unlink(im->sock);
	im->starter = spawn(argv, -1, e[1]);
	close(e[1]);
	if (im->starter < 0) {
		close(e[0]);
		return -errno;
	}
	im->errfd = e[0];
	im->starter_fd = pidfd_of(im->starter);
	return im->starter_fd < 0 ? -errno : 0;
}

/* the starter exited: the daemon serves (0), or it said why not */
static int started(struct vbus_blk_image *im)
{
	char buf[32] = "";
	int st = 0, fd = -1;
	FILE *pf;

	waitpid(im->starter, &st, 0);
	im->starter = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		read_msg(im->errfd, im->why, sizeof(im->why));
		if (!im->why[0])
			snprintf(im->why, sizeof(im->why), "exited with status %d",
				 WIFEXITED(st) ? WEXITSTATUS(st) : 128);
		return -EIO;
	}
	pf = fopen(im->pidfile, "re");
	if (pf && fgets(buf, sizeof(buf), pf))
		im->pid = (pid_t)atoi(buf);
	if (pf)
		fclose(pf);
	if (im->pid > 0)
		fd = pidfd_of(im->pid);
	if (fd < 0) {
		snprintf(im->why, sizeof(im->why), "no pid file");
		return -EIO;
	}
	im->daemon_fd = fd;
	return hostd_fd_add(im->b->dev, fd, EPOLLIN, on_daemon_exit, im);
}

static void close_errfd(struct vbus_blk_image *im)
{
	if (im->errfd >= 0)
		close(im->errfd);
	im->errfd = -1;
}

static void on_starter_exit(struct hostd_dev *dev, int fd, __u32 events,
			    void *arg)
{
	struct vbus_blk_image *im = arg;
	int ret;

	(void)dev;
	(void)fd;
	(void)events;
	unwatch(im, &im->starter_fd);
	ret = started(im);
	close_errfd(im);
	if (ret < 0) {
		im->failed = true;
		hostd_dev_log(im->b->dev, "vbus-blk: image=%s: qemu-storage-daemon "
			      "did not start again: %s", im->image, im->why);
	}
}

static void on_daemon_exit(struct hostd_dev *dev, int fd, __u32 events,
			   void *arg)
{
	struct vbus_blk_image *im = arg;

	(void)fd;
	(void)events;
	unwatch(im, &im->daemon_fd);
	im->pid = 0;
	im->restarts++;
	hostd_dev_log(dev, "vbus-blk: image=%s: qemu-storage-daemon exited; "
		      "starting it again", im->image);
	if (start(im) < 0 ||
	    hostd_fd_add(dev, im->starter_fd, EPOLLIN, on_starter_exit, im) < 0) {
		im->failed = true;
		close_errfd(im);
		hostd_dev_log(dev, "vbus-blk: image=%s: cannot start "
			      "qemu-storage-daemon: %s", im->image, strerror(errno));
	}
}

/* the first start, at create: waited for, up to @timeout_s */
static int start_first(struct vbus_blk *b, struct vbus_blk_image *im,
		       unsigned int timeout_s)
{
	struct pollfd p;
	int ret = start(im);

	if (ret == -EINVAL)
		return hostd_dev_fail(b->dev, ret, "image=%s: a comma in the path "
				      "is not supported", im->image);
	if (ret < 0)
		return hostd_dev_fail(b->dev, ret, "image=%s: cannot start "
				      "qemu-storage-daemon: %s", im->image,
				      strerror(-ret));
	p = (struct pollfd){ .fd = im->starter_fd, .events = POLLIN };
	if (poll(&p, 1, (int)timeout_s * 1000) <= 0)
		return hostd_dev_fail(b->dev, -ETIMEDOUT, "image=%s: "
				      "qemu-storage-daemon did not start within "
				      "%u s", im->image, timeout_s);
	close(im->starter_fd);
	im->starter_fd = -1;
	ret = started(im);
	close_errfd(im);
	if (ret < 0)
		return hostd_dev_fail(b->dev, ret, "image=%s: %s", im->image,
				      im->why);
	return 0;
}

int vbus_blk_image_open(struct vbus_blk *b, const char *path,
			const char *format)
{
	struct vbus_blk_image *im = calloc(1, sizeof(*im));
	const char *base = getenv("RUNTIME_DIRECTORY");
	int ret;

	if (!im)
		return -ENOMEM;
	im->b = b;
	im->starter_fd = im->daemon_fd = im->errfd = -1;
	b->image = im;
	if (!realpath(path, im->image))
		return hostd_dev_fail(b->dev, -errno, "image=%s: %s", path,
				      strerror(errno));
	if (!base || !*base)
		base = getenv("XDG_RUNTIME_DIR");
	if (!base || !*base)
		base = "/tmp";
	if (strlen(base) > sizeof(im->dir) - 24)
		return hostd_dev_fail(b->dev, -ENAMETOOLONG, "image=%s: the runtime "
				      "directory %s is too long for a unix socket "
				      "path in it", path, base);
	snprintf(im->dir, sizeof(im->dir), "%s/vbus-blk-image-XXXXXX", base);
	/* mkdtemp: mode 0700, ours: the socket in it is private */
	if (!mkdtemp(im->dir)) {
		im->dir[0] = '\0';
		return hostd_dev_fail(b->dev, -errno, "image=%s: mkdtemp in %s: %s",
				      path, base, strerror(errno));
	}
	snprintf(im->sock, sizeof(im->sock), "%s/nbd.sock", im->dir);
	snprintf(im->pidfile, sizeof(im->pidfile), "%s/qsd.pid", im->dir);
	if (format)
		snprintf(im->format, sizeof(im->format), "%s", format);
	ret = format ? 0 : probe_format(b, im);
	if (!ret)
		ret = check_format(b, im);
	if (!ret)
		ret = start_first(b, im, b->nbd_timeout_s);
	if (ret < 0)
		return ret;
	snprintf(b->path, sizeof(b->path), "nbd+unix:///disk?socket=%s",
		 im->sock);
	return 0;
}

void vbus_blk_image_close(struct vbus_blk *b)
{
	struct vbus_blk_image *im = b->image;

	if (!im)
		return;
	unwatch(im, &im->starter_fd);
	unwatch(im, &im->daemon_fd);
	if (im->starter > 0) {
		kill(im->starter, SIGTERM);
		waitpid(im->starter, NULL, 0);
	}
	if (im->pid > 0)
		kill(im->pid, SIGTERM);
	close_errfd(im);
	if (im->dir[0]) {
		unlink(im->sock);
		unlink(im->pidfile);
		rmdir(im->dir);
	}
	free(im);
	b->image = NULL;
}

void vbus_blk_image_stats(struct vbus_blk *b, struct hostd_stats_out *out)
{
	struct vbus_blk_image *im = b->image;

	if (!im)
		return;
	hostd_stat_str(out, "image", im->image);
	hostd_stat_str(out, "image_format", im->format);
	hostd_stat_str(out, "image_state", im->failed ? "failed" :
		       im->pid > 0 ? "running" : "starting");
	hostd_stat_u64(out, "image_pid", (__u64)(im->pid > 0 ? im->pid : 0));
	hostd_stat_u64(out, "image_restarts", im->restarts);
}
