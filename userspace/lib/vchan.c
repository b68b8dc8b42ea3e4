// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libioq's vchan-style calls (<vbus/ioq_channel.h>, ioq_vchan(3)): the
 * shape of libxenvchan over a vbus-ipc endpoint, so that programs written
 * for inter-VM messaging port with a rename. A packet is one message; the
 * byte stream cuts writes into messages of up to ioq_ipc_max_msg() bytes
 * and keeps the unread rest of a received message here (the stash).
 *
 * The select descriptor is an epoll of the endpoint's own descriptor and
 * an eventfd of ours: after every call the endpoint is armed
 * (ioq_ipc_arm), and when the arm finds something ready already (or the
 * stash holds bytes) the eventfd is written, so the descriptor is
 * readable exactly when a call has something to do.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vbus/ioq_channel.h>
#include <vbus/vbus_ipc.h>
#include "ipc_priv.h"

#define VCHAN_EVENTS (IOQ_IPC_WAIT_RX | IOQ_IPC_WAIT_TX)
#define VCHAN_SYSFS "/sys/class/misc"
#define VCHAN_HOST_DIR "/run/vbus"	/* VBUS_IPC_DIR overrides */

struct ioq_vchan {
	struct ioq_ipc *ipc;
	int blocking;
	int evfd, epfd;
	size_t max;
	unsigned char *stash;	/* the unread rest of a received message */
	size_t stash_off, stash_len;
};

static size_t stashed(const struct ioq_vchan *v)
{
	return v->stash_len - v->stash_off;
}

static void self_wake(struct ioq_vchan *v)
{
	uint64_t one = 1;

	/* a full counter is already a wakeup */
	(void)!write(v->evfd, &one, sizeof(one));
}

/*
 * After every call: the select descriptor tells the truth again (a wakeup
 * an earlier call left is taken back first, so it is never stale).
 */
static void rearm(struct ioq_vchan *v)
{
	uint64_t n;

	(void)!read(v->evfd, &n, sizeof(n));
	/* take back consumed tx buffers first, or TX would stay "ready" */
	if (ipc_tx_room(v->ipc) < 0 || stashed(v) ||
	    ioq_ipc_arm(v->ipc, VCHAN_EVENTS) != 0)
		self_wake(v);
}

static long finish(struct ioq_vchan *v, long r)
{
	rearm(v);
	return r;
}

int ioq_vchan_attach_ipc(struct ioq_vchan **vp, struct ioq_ipc *ipc)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct ioq_vchan *v;

	if (!vp || !ipc)
		return -EINVAL;
	*vp = NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->ipc = ipc;
	v->blocking = 1;
	v->max = ioq_ipc_max_msg(ipc);
	v->stash = malloc(v->max);
	v->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	v->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!v->stash || v->evfd < 0 || v->epfd < 0 ||
	    epoll_ctl(v->epfd, EPOLL_CTL_ADD, ioq_ipc_pollfd(ipc), &ev) < 0 ||
	    epoll_ctl(v->epfd, EPOLL_CTL_ADD, v->evfd, &ev) < 0) {
		int err = v->stash ? -errno : -ENOMEM;

		v->ipc = NULL;	/* still the caller's */
		ioq_vchan_close(v);
		return err;
	}
	rearm(v);
	*vp = v;
	return 0;
}

/* ---- by name ----------------------------------------------------------------- */

static int name_ok(const char *s)
{
	size_t n = strlen(s);

	return n && n < VBUS_IPC_SERVICE_LEN &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789._-") == n;
}

/* The first line of a small sysfs file, without its newline. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return 0;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/*
 * A guest's /dev/vbus-ipcN of service @name on side @side ("north",
 * "south"): found by the driver's sysfs attributes, since an open would
 * start a session. 1 with the path in @dev, 0 if none.
 */
static int find_dev(const char *name, const char *side, char *dev,
		    size_t len)
{
	char p[512], svc[VBUS_IPC_SERVICE_LEN + 2], sd[16];
	struct dirent *e;
	DIR *d = opendir(VCHAN_SYSFS);
	int found = 0;

	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		if (strncmp(e->d_name, "vbus-ipc", 8))
			continue;
		snprintf(p, sizeof(p), VCHAN_SYSFS "/%s/service", e->d_name);
		if (!read_line(p, svc, sizeof(svc)) || strcmp(svc, name))
			continue;
		snprintf(p, sizeof(p), VCHAN_SYSFS "/%s/side", e->d_name);
		if (!read_line(p, sd, sizeof(sd)) || strcmp(sd, side))
			continue;
		snprintf(dev, len, "/dev/%s", e->d_name);
		found = 1;
	}
	closedir(d);
	return found;
}

static int attach_path(struct ioq_vchan **vp, const char *path, int tmo)
{
	struct ioq_ipc *ipc;
	struct stat st;
	int err;

	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISCHR(st.st_mode))
		err = ioq_ipc_attach_dev(&ipc, path, tmo);
	else if (S_ISSOCK(st.st_mode))
		err = ioq_ipc_attach_host(&ipc, path, tmo);
	else
		return -ENOTSUP;
	if (err)
		return err;
	err = ioq_vchan_attach_ipc(vp, ipc);
	if (err)
		ioq_ipc_close(ipc);
	return err;
}

/*
 * @name: a path (a device or a service socket), else a service name: in
 * a guest the device of that service on one of @sides (tried in order),
 * on the host $VBUS_IPC_DIR/ipc-NAME.sock (default /run/vbus).
 */
static int vchan_init(struct ioq_vchan **vp, const char *name, int tmo,
		      const char *const *sides)
{
	char path[512];
	const char *dir;

	if (!vp || !name)
		return -EINVAL;
	*vp = NULL;
	if (strchr(name, '/'))
		return attach_path(vp, name, tmo);
	if (!name_ok(name))
		return -EINVAL;
	for (; *sides; sides++)
		if (find_dev(name, *sides, path, sizeof(path)))
			return attach_path(vp, path, tmo);
	dir = getenv("VBUS_IPC_DIR");
	if (snprintf(path, sizeof(path), "%s/ipc-%s.sock",
		     dir && *dir ? dir : VCHAN_HOST_DIR, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return attach_path(vp, path, tmo);
}

int ioq_vchan_server_init(struct ioq_vchan **vp, const char *name,
			  int timeout_ms)
{
	/* a link's south guest; else a guest <-> host channel's guest */
	static const char *const sides[] = { "south", "north", NULL };

	return vchan_init(vp, name, timeout_ms, sides);
}

int ioq_vchan_client_init(struct ioq_vchan **vp, const char *name,
			  int timeout_ms)
{
	static const char *const sides[] = { "north", NULL };

	return vchan_init(vp, name, timeout_ms, sides);
}

void ioq_vchan_set_blocking(struct ioq_vchan *v, int blocking)
{
	v->blocking = !!blocking;
}

/* ---- packets ------------------------------------------------------------------ */

long ioq_vchan_send(struct ioq_vchan *v, const void *buf, size_t len)
{
	long r;

	if (len > v->max)
		return -EMSGSIZE;
	while ((r = ioq_ipc_send(v->ipc, buf, len, 0)) == -EAGAIN &&
	       v->blocking) {
		r = ioq_ipc_wait(v->ipc, IOQ_IPC_WAIT_TX, -1);
		if (r < 0)
			return finish(v, r);
	}
	if (r == -EAGAIN)
		r = 0;	/* no room now (non-blocking) */
	else if (!r)
		r = (long)len;
	return finish(v, r);
}

long ioq_vchan_recv(struct ioq_vchan *v, void *buf, size_t len)
{
	long r;

	if (stashed(v)) {
		/* the rest of a message read() began: it is the packet */
		r = (long)(stashed(v) < len ? stashed(v) : len);
		memcpy(buf, v->stash + v->stash_off, (size_t)r);
		v->stash_off += (size_t)r;
		return finish(v, r);
	}
	while ((r = ioq_ipc_recv(v->ipc, buf, len)) == -EAGAIN && v->blocking) {
		r = ioq_ipc_wait(v->ipc, IOQ_IPC_WAIT_RX, -1);
		if (r < 0)
			return finish(v, r);
	}
	return finish(v, r == -EAGAIN ? 0 : r);
}

/* ---- the byte stream -------------------------------------------------------------- */

long ioq_vchan_write(struct ioq_vchan *v, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t pos = 0;
	long r = 0;

	while (pos < len) {
		size_t n = len - pos < v->max ? len - pos : v->max;

		r = ioq_ipc_send(v->ipc, p + pos, n, 0);
		if (r == -EAGAIN && v->blocking)
			r = ioq_ipc_wait(v->ipc, IOQ_IPC_WAIT_TX, -1);
		else if (!r)
			pos += n;
		if (r < 0)
			break;
	}
	if (pos || r == -EAGAIN)
		r = (long)pos;
	return finish(v, r);
}

/* The next message into the stash: 1, 0 (none), or an error. */
static long refill(struct ioq_vchan *v)
{
	long r = ioq_ipc_recv(v->ipc, v->stash, v->max);

	if (r < 0)
		return r == -EAGAIN ? 0 : r;
	v->stash_off = 0;
	v->stash_len = (size_t)r;
	return 1;
}

long ioq_vchan_read(struct ioq_vchan *v, void *buf, size_t len)
{
	unsigned char *p = buf;
	size_t pos = 0;
	long r = 0;

	while (pos < len) {
		size_t n = stashed(v);

		if (n) {
			n = n < len - pos ? n : len - pos;
			memcpy(p + pos, v->stash + v->stash_off, n);
			v->stash_off += n;
			pos += n;
			continue;
		}
		r = refill(v);
		if (r > 0)
			continue;
		/* blocking: wait for the first byte only, as read(2) */
		if (r < 0 || pos || !v->blocking)
			break;
		r = ioq_ipc_wait(v->ipc, IOQ_IPC_WAIT_RX, -1);
		if (r < 0)
			break;
	}
	if (pos || r >= 0)
		r = (long)pos;
	return finish(v, r);
}

/* ---- state ------------------------------------------------------------------------ */

long ioq_vchan_data_ready(struct ioq_vchan *v)
{
	long next = ipc_next_len(v->ipc);

	if (next == -EAGAIN)
		next = 0;
	if (next < 0)
		return stashed(v) ? (long)stashed(v) : next;
	return (long)stashed(v) + next;
}

long ioq_vchan_buffer_space(struct ioq_vchan *v)
{
	long room = ipc_tx_room(v->ipc);

	return room < 0 ? room : room * (long)v->max;
}

size_t ioq_vchan_max_packet(const struct ioq_vchan *v)
{
	return v->max;
}

int ioq_vchan_is_open(struct ioq_vchan *v)
{
	return ipc_tx_room(v->ipc) >= 0;
}

int ioq_vchan_fd_for_select(struct ioq_vchan *v)
{
	return v->epfd;
}

/*
 * Take the event that made the select descriptor readable, or sleep until
 * one comes. A readable descriptor never sleeps here: its event may be a
 * doorbell for a message a non-blocking call already took.
 */
int ioq_vchan_wait(struct ioq_vchan *v)
{
	struct pollfd p = { .fd = v->epfd, .events = POLLIN };
	uint64_t n;
	long r = 0;
	int pending;

	pending = poll(&p, 1, 0) > 0;
	(void)!read(v->evfd, &n, sizeof(n));
	if (!stashed(v)) {
		/* not readable: sleep unless there is data (or an error) */
		r = pending ? 0 : ioq_vchan_data_ready(v);
		if (!r)
			r = ioq_ipc_wait(v->ipc, VCHAN_EVENTS, pending ? 0 : -1);
	}
	return (int)finish(v, r < 0 ? r : 0);
}

void ioq_vchan_close(struct ioq_vchan *v)
{
	if (!v)
		return;
	ioq_ipc_close(v->ipc);
	if (v->evfd >= 0)
		close(v->evfd);
	if (v->epfd >= 0)
		close(v->epfd);
	free(v->stash);
	free(v);
}
