// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the sd_notify datagram protocol (what systemd's Type=notify
 * listens for), without linking libsystemd.
 *
 * The manager puts the address of an AF_UNIX datagram socket in
 * $NOTIFY_SOCKET: a filesystem path ("/run/systemd/notify") or, with a
 * leading '@', a name in the abstract namespace (the '@' stands for the
 * leading NUL byte, and the address is exactly as long as the name: no
 * terminating NUL). Each message is one datagram of "VAR=value" lines.
 * The manager learns who sent it from the SCM_CREDENTIALS the kernel
 * attaches for a receiver with SO_PASSCRED, so we send nothing but the
 * text, and descriptors for the store (FDSTORE=1, docs/operations.md,
 * "Restarts") as SCM_RIGHTS.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include "daemon.h"
#include "sd_notify.h"

/* Fill @sa from $NOTIFY_SOCKET's value; the address length, or -errno. */
static int notify_addr(const char *name, struct sockaddr_un *sa)
{
	size_t len = strlen(name);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (name[0] == '@') {
		if (len > sizeof(sa->sun_path))
			return -ENAMETOOLONG;
		/* sun_path[0] stays NUL: the abstract namespace */
		memcpy(sa->sun_path + 1, name + 1, len - 1);
		return (int)(offsetof(struct sockaddr_un, sun_path) + len);
	}
	if (name[0] != '/')
		return -EAFNOSUPPORT;	/* e.g. "vsock:", which we do not speak */
	if (len >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memcpy(sa->sun_path, name, len);
	return (int)(offsetof(struct sockaddr_un, sun_path) + len + 1);
}

/* One datagram; @fds (SCM_RIGHTS) when @nfds > 0. */
static int notify_send(const struct sockaddr_un *sa, int salen,
		       const char *state, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * HOSTD_SD_NOTIFY_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)state,
			     .iov_len = strlen(state) };
	struct msghdr mh = { .msg_name = (void *)sa,
			     .msg_namelen = (socklen_t)salen,
			     .msg_iov = &iov, .msg_iovlen = 1 };
	/*
	 * A manager that stops reading must not stall start-up or
	 * shutdown: a datagram socket blocks when the receiver's queue is
	 * full, so bound the wait.
	 */
	struct timeval tv = { .tv_sec = 2 };
	ssize_t n;
	int fd, e = 0;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	memset(&u, 0, sizeof(u));
	if (nfds > 0) {
		struct cmsghdr *c;

		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	do {
		/* sendto without descriptors: what ops_sd_notify watches for */
		n = nfds > 0 ? sendmsg(fd, &mh, MSG_NOSIGNAL) :
		    sendto(fd, state, strlen(state), MSG_NOSIGNAL,
			   (const struct sockaddr *)sa, (socklen_t)salen);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		e = -errno;
	close(fd);
	return e;
}

int daemon_sd_notify_fds(const char *state, const int *fds, int nfds)
{
	const char *name = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	int ret;

	if (!name || !*name)
		return 0;
	ret = notify_addr(name, &sa);
	if (ret >= 0)
		ret = nfds > HOSTD_SD_NOTIFY_MAX_FDS ? -E2BIG :
		      notify_send(&sa, ret, state, fds, nfds);
	if (ret < 0) {
		hostd_log("cannot notify the service manager (NOTIFY_SOCKET=%s): %s",
			  name, strerror(-ret));
		return ret;
	}
	return 1;
}

static int daemon_sd_notify(const char *state)
{
	return daemon_sd_notify_fds(state, NULL, 0);
}

int daemon_sd_notifyf(const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return daemon_sd_notify(buf);
}
