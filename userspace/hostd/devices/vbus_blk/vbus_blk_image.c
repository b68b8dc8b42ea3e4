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
 * The daemon is our child, watched through a pidfd: when it dies after
 * serving it is started again (the NBD backend's requests wait
 * meanwhile and are resent once it reconnects, vbus_blk_nbd_conn.c,
 * whose reconnect backoff also covers the restart's start-up). One
 * that dies while starting is not restarted (`ctl stats`:
 * image_state=failed); the requests then fail at their nbd_timeout. At
 * the daemon's start create waits for the start (bounded by
 * nbd_timeout): the pid file it writes once its export is up. On a
 * running guest (`ctl add`: hostd_dev_hot) nothing is waited for: an
 * inotify watch on the loop sees the pid file, the pidfd the daemon's
 * exit, and started() tells the NBD backend, whose pending first
 * connect goes on from there (and bounds the start by nbd_timeout). On
 * the loop nothing is waited for (but `ctl resize`, bounded:
 * vbus_blk_image_qmp.c, on its QMP socket).
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
#include <sys/inotify.h>
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
	/* nothing of ours (guest RAM, sockets) reaches the child */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
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
static void on_daemon_stderr(struct hostd_dev *dev, int fd, __u32 events,
			     void *arg);

static void unwatch(struct vbus_blk_image *im, int *fd)
{
	if (*fd < 0)
		return;
	hostd_fd_del(im->b->dev, *fd);
	close(*fd);
	*fd = -1;
}

/*
 * qemu-storage-daemon as our child, through setpriv --pdeathsig: it
 * gets SIGTERM when the thread that started it (the guest's loop) ends,
 * the daemon's crash included, so no storage daemon outlives us holding
 * the image's lock (a restarted vbus-hostd starts its own). Its signal
 * mask and handlers are reset: ours may block SIGTERM.
 */
static int start(struct vbus_blk_image *im)
{
	char file[PATH_MAX + 80], fmt[96], nbd[160], exp[128], qmp[160];
	const char *argv[] = {
		"setpriv", "--pdeathsig", "TERM", "--",
		"qemu-storage-daemon", "--pidfile", im->pidfile,
		"--blockdev", file, "--blockdev", fmt, "--nbd-server", nbd,
		"--export", exp, "--chardev", qmp, "--monitor", "chardev=qmp",
		NULL
	};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	int e[2], ret;

	if (strchr(im->image, ','))
		return -EINVAL;	/* qemu's option syntax: a comma splits */
	snprintf(file, sizeof(file),
		 "driver=file,node-name=file,filename=%s,locking=on,"
		 "discard=unmap", im->image);
	/* discard=unmap: a guest's discard frees the image's space */
	snprintf(fmt, sizeof(fmt),
		 "driver=%s,node-name=disk,file=file,discard=unmap", im->format);
	snprintf(nbd, sizeof(nbd), "addr.type=unix,addr.path=%s", im->sock);
	snprintf(exp, sizeof(exp),
		 "type=nbd,id=disk,node-name=disk,name=disk,writable=%s",
		 im->b->ro ? "off" : "on");
	/* QMP for ctl resize (vbus_blk_image_qmp.c), private like the rest */
	snprintf(qmp, sizeof(qmp), "socket,id=qmp,path=%s,server=on,wait=off",
		 im->qmp);
	if (pipe2(e, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	unlink(im->pidfile);
	unlink(im->sock);
	unlink(im->qmp);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
				 POSIX_SPAWN_SETSIGDEF);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, e[1], 2);
	/*
	 * Only stdin, stdout and stderr: not every descriptor of the daemon
	 * is close-on-exec (a guest's RAM, the start-up pipe), and the
	 * storage daemon must hold none of them.
	 */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	ret = posix_spawnp(&im->pid, argv[0], &fa, &at, (char *const *)argv,
			   environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(e[1]);
	if (ret) {
		close(e[0]);
		im->pid = 0;
		return -ret;
	}
	im->errfd = e[0];
	im->ready = false;
	im->daemon_fd = pidfd_of(im->pid);
	return im->daemon_fd < 0 ? -errno : 0;
}

/* the start's words on stderr, as one line (a refusal says why there) */
static void take_stderr(struct vbus_blk_image *im)
{
	if (im->errfd >= 0)
		read_msg(im->errfd, im->why, sizeof(im->why));
}

/* the daemon exited: reap it, say why */
static void reap(struct vbus_blk_image *im)
{
	int st = 0;

	if (im->pid > 0 && waitpid(im->pid, &st, 0) == im->pid && !im->why[0])
		snprintf(im->why, sizeof(im->why), WIFEXITED(st) ?
			 "exited with status %d" : "was killed by signal %d",
			 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	im->pid = 0;
}

/* watched on the loop: its exit, and its stderr (never left to fill) */
static int watch(struct vbus_blk_image *im)
{
	int ret = hostd_fd_add(im->b->dev, im->daemon_fd, EPOLLIN,
			       on_daemon_exit, im);

	if (!ret)
		ret = hostd_fd_add(im->b->dev, im->errfd, EPOLLIN,
				   on_daemon_stderr, im);
	return ret;
}

static void on_daemon_stderr(struct hostd_dev *dev, int fd, __u32 events,
			     void *arg)
{
	struct vbus_blk_image *im = arg;
	char msg[512];

	(void)fd;
	read_msg(im->errfd, msg, sizeof(msg));
	if (msg[0]) {
		hostd_dev_log(dev, "vbus-blk: image=%s: qemu-storage-daemon: %s",
			      im->image, msg);
		snprintf(im->why, sizeof(im->why), "%s", msg);
	} else if (events & (EPOLLHUP | EPOLLERR)) {
		hostd_fd_del(dev, im->errfd);	/* closed: it is exiting */
		close(im->errfd);
		im->errfd = -1;
	}
}

static bool pidfile_there(const struct vbus_blk_image *im)
{
	return !access(im->pidfile, F_OK);
}

/* a start not waited for ended (@why NULL: the export is up) */
static void tell_started(struct vbus_blk_image *im, const char *why)
{
	void (*fn)(struct vbus_blk *b, const char *why) = im->started;

	unwatch(im, &im->infd);
	im->started = NULL;
	if (fn)
		fn(im->b, why);
}

/* pending start: something in the private directory; the pid file? */
static void on_dir(struct hostd_dev *dev, int fd, __u32 events, void *arg)
{
	struct vbus_blk_image *im = arg;
	char ev[4096];

	(void)dev;
	(void)events;
	while (read(fd, ev, sizeof(ev)) > 0)
		;
	if (!pidfile_there(im))
		return;
	im->ready = true;
	/* from now on its stderr is logged as it comes (watch()) */
	if (hostd_fd_add(dev, im->errfd, EPOLLIN, on_daemon_stderr, im) < 0) {
		tell_started(im, "cannot watch its stderr");
		return;
	}
	tell_started(im, NULL);
}

bool vbus_blk_image_up(struct vbus_blk *b)
{
	struct vbus_blk_image *im = b->image;

	if (im && !im->ready && pidfile_there(im))
		im->ready = true;
	return !im || im->ready;
}

/*
 * The daemon exited. One that had served (its pid file written after
 * its export was up) is started again: the NBD backend reconnects to
 * the same socket once it listens. One that died starting is not: the
 * next would too (the image is gone, locked, broken).
 */
static void on_daemon_exit(struct hostd_dev *dev, int fd, __u32 events,
			   void *arg)
{
	struct vbus_blk_image *im = arg;
	/* a start not waited for that did not reach on_dir(): not served */
	bool served = (im->ready || pidfile_there(im)) && !im->started;
	int ret;

	(void)fd;
	(void)events;
	unwatch(im, &im->daemon_fd);
	take_stderr(im);
	unwatch(im, &im->errfd);
	reap(im);
	if (!served) {
		im->failed = true;
		hostd_dev_log(dev, "vbus-blk: image=%s: qemu-storage-daemon did "
			      "not start: %s; not starting it again", im->image,
			      im->why);
		tell_started(im, im->why);
		return;
	}
	im->restarts++;
	hostd_dev_log(dev, "vbus-blk: image=%s: qemu-storage-daemon %s; "
		      "starting it again", im->image, im->why);
	im->why[0] = '\0';
	ret = start(im);
	if (!ret)
		ret = watch(im);
	if (ret < 0) {
		im->failed = true;
		hostd_dev_log(dev, "vbus-blk: image=%s: cannot start "
			      "qemu-storage-daemon: %s", im->image, strerror(-ret));
	}
}

/*
 * The first start, at create: until the pid file appears (inotify on
 * the private directory; qemu-storage-daemon writes it once its export
 * is up) or it exits, at most @timeout_s.
 */
static int wait_ready(struct vbus_blk_image *im, unsigned int timeout_s)
{
	__u64 end = hostd_now_ns() + timeout_s * 1000000000ull;
	int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	int ret = -ETIMEDOUT;

	if (in < 0 || inotify_add_watch(in, im->dir, IN_CREATE | IN_MOVED_TO) < 0) {
		ret = -errno;
		goto out;
	}
	for (;;) {
		struct pollfd p[2] = { { .fd = in, .events = POLLIN },
				       { .fd = im->daemon_fd, .events = POLLIN } };
		char ev[4096];
		__u64 now = hostd_now_ns();

		if (pidfile_there(im)) {
			ret = 0;
			break;
		}
		if (now >= end || poll(p, 2, (int)((end - now) / 1000000 + 1)) < 0)
			break;
		if (p[1].revents) {
			/* exited: a last look (it may have served and died) */
			ret = pidfile_there(im) ? 0 : -EIO;
			break;
		}
		while (read(in, ev, sizeof(ev)) > 0)
			;
	}
out:
	if (in >= 0)
		close(in);
	return ret;
}

/* start(), a failure told in the words both ways of adding say */
static int start_said(struct vbus_blk *b, struct vbus_blk_image *im)
{
	int ret = start(im);

	if (ret == -EINVAL)
		return hostd_dev_fail(b->dev, ret, "image=%s: a comma in the path "
				      "is not supported", im->image);
	if (ret < 0)
		return hostd_dev_fail(b->dev, ret, "image=%s: cannot start "
				      "qemu-storage-daemon: %s", im->image,
				      strerror(-ret));
	return 0;
}

static int start_first(struct vbus_blk *b, struct vbus_blk_image *im,
		       unsigned int timeout_s)
{
	int ret = start_said(b, im);

	if (ret < 0)
		return ret;
	ret = wait_ready(im, timeout_s);
	if (ret == -EIO) {
		/* it said why on stderr, then exited */
		take_stderr(im);
		reap(im);
		return hostd_dev_fail(b->dev, ret, "image=%s: %s", im->image,
				      im->why);
	}
	if (ret < 0)
		return hostd_dev_fail(b->dev, ret, "image=%s: qemu-storage-daemon "
				      "did not start within %u s%s%s", im->image,
				      timeout_s, ret == -ETIMEDOUT ? "" : ": ",
				      ret == -ETIMEDOUT ? "" : strerror(-ret));
	im->ready = true;
	return watch(im);
}

/* on a running guest: started, watched; the pid file seen on the loop */
static int start_hot(struct vbus_blk *b, struct vbus_blk_image *im)
{
	int ret = start_said(b, im);

	if (ret < 0)
		return ret;
	im->infd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (im->infd < 0 ||
	    inotify_add_watch(im->infd, im->dir, IN_CREATE | IN_MOVED_TO) < 0)
		ret = -errno;
	if (!ret)
		ret = hostd_fd_add(b->dev, im->infd, EPOLLIN, on_dir, im);
	if (ret < 0) {
		if (im->infd >= 0)
			close(im->infd);
		im->infd = -1;
		return hostd_dev_fail(b->dev, ret, "image=%s: inotify: %s",
				      im->image, strerror(-ret));
	}
	/*
	 * its exit only: its stderr stays unread until it is up or gone,
	 * so a refusal's words are taken whole, as start_first() takes them
	 */
	return hostd_fd_add(b->dev, im->daemon_fd, EPOLLIN, on_daemon_exit, im);
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
	im->daemon_fd = im->errfd = im->infd = -1;
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
	snprintf(im->qmp, sizeof(im->qmp), "%s/qmp.sock", im->dir);
	if (format)
		snprintf(im->format, sizeof(im->format), "%s", format);
	ret = format ? 0 : probe_format(b, im);
	if (!ret)
		ret = check_format(b, im);
	if (!ret)
		ret = hostd_dev_hot(b->dev) ? start_hot(b, im) :
		      start_first(b, im, b->nbd_timeout_s);
	if (ret < 0)
		return ret;
	snprintf(b->path, sizeof(b->path), "nbd+unix:///disk?socket=%s",
		 im->sock);
	return 0;
}

static void stop_wait(struct vbus_blk_image *im)
{
	int fd = pidfd_of(im->pid);
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (fd >= 0 && poll(&p, 1, VBLK_IMAGE_STOP_MS) == 0)
		kill(im->pid, SIGKILL);
	if (fd >= 0)
		close(fd);
	waitpid(im->pid, NULL, 0);
	im->pid = 0;
}

void vbus_blk_image_close(struct vbus_blk *b)
{
	struct vbus_blk_image *im = b->image;

	if (!im)
		return;
	unwatch(im, &im->infd);
	im->started = NULL;
	unwatch(im, &im->daemon_fd);
	unwatch(im, &im->errfd);
	if (im->pid > 0) {
		/*
		 * SIGTERM: it closes the image cleanly (qcow2's metadata);
		 * waited for, so the image is unlocked when the device is
		 * gone (a bounded wait: SIGKILL after VBLK_IMAGE_STOP_MS)
		 */
		kill(im->pid, SIGTERM);
		stop_wait(im);
	}
	if (im->dir[0]) {
		unlink(im->sock);
		unlink(im->qmp);
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
		       im->pid > 0 && (im->ready || pidfile_there(im)) ?
		       "running" : "starting");
	hostd_stat_u64(out, "image_pid", (__u64)(im->pid > 0 ? im->pid : 0));
	hostd_stat_u64(out, "image_restarts", im->restarts);
}
