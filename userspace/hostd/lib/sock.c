// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* vbus-hostd: unix sockets: listening, sending descriptors (see sock.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "sock.h"

/* Does a process accept on @sa? */
static bool sock_live(const struct sockaddr_un *sa)
{
	int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (probe < 0)
		return false;
	live = connect(probe, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	close(probe);
	return live;
}

/* bind() said EADDRINUSE: replace a stale socket, refuse anything else. */
static int sock_rebind(int fd, const struct sockaddr_un *sa, char *err,
		       size_t errlen)
{
	const char *path = sa->sun_path;
	struct stat st;

	if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket", path);
		return -EEXIST;
	}
	if (sock_live(sa)) {
		snprintf(err, errlen, "%s is in use by another process", path);
		return -EADDRINUSE;
	}
	unlink(path);
	if (bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	return 0;
}

int hostd_sock_listen(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, ret = 0;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "%s: socket path too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	/* non-blocking: a loop thread that finds no connection must not wait */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "socket: %s", strerror(-ret));
		return ret;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EADDRINUSE) {
			ret = sock_rebind(fd, &sa, err, errlen);
		} else {
			ret = -errno;
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		}
	}
	if (!ret && listen(fd, 8) < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	}
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/* Is @gid among the peer's groups (SO_PEERGROUPS, Linux 4.13)? */
static bool peer_in_group(int fd, gid_t gid)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);
	size_t i;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false;
	for (i = 0; i < len / sizeof(groups[0]); i++)
		if (groups[i] == gid)
			return true;
	return false;
}

bool hostd_sock_peer_ok(int fd, const struct hostd_peer_rule *rule,
			struct ucred *cr)
{
	socklen_t len = sizeof(*cr);
	gid_t gid;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &len) < 0) {
		cr->pid = 0;
		cr->uid = (uid_t)-1;
		cr->gid = (gid_t)-1;
		return false;
	}
	if (cr->uid == 0 || cr->uid == geteuid())
		return true;
	if (rule->uid_set && cr->uid == rule->uid)
		return true;
	/*
	 * Neither given: the daemon's own group, the one its sockets' mode
	 * lets in (the unit's vbus, with QEMU's user a member)
	 */
	if (!rule->uid_set && !rule->gid_set)
		gid = getegid();
	else if (rule->gid_set)
		gid = rule->gid;
	else
		return false;
	return cr->gid == gid || peer_in_group(fd, gid);
}

int hostd_send_fds(int sock, const void *buf, size_t len, const int *fds,
		   size_t nfd)
{
	union {
		char buf[CMSG_SPACE(HOSTD_SEND_FDS_MAX * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	size_t done = 0;

	if (nfd > HOSTD_SEND_FDS_MAX)
		return -EINVAL;
	memset(&u, 0, sizeof(u));
	if (nfd) {
		struct cmsghdr *c;

		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfd * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfd * sizeof(int));
	}
	while (done < len) {
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* the fds went with the first byte; the rest goes without */
		done += (size_t)n;
		iov.iov_base = (char *)buf + done;
		iov.iov_len = len - done;
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
	}
	return 0;
}
