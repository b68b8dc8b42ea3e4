// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Handing a channel to an unrelated process: the three fds travel as
 * SCM_RIGHTS over a connected unix socket, with the ring size and a magic
 * word as the payload so a stray message is not taken for a channel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vbus/ioq_channel.h>

#define IOQ_CHANNEL_FDS_MAGIC 0x494f5143u	/* "IOQC" */
#define IOQ_CHANNEL_NFDS 3

struct fds_msg {
	__u32 magic;
	__u32 count;
};

int ioq_channel_send_fds(int sock, const struct ioq_channel_fds *fds)
{
	struct fds_msg m = { IOQ_CHANNEL_FDS_MAGIC, fds->count };
	union {
		char buf[CMSG_SPACE(IOQ_CHANNEL_NFDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	int fdv[IOQ_CHANNEL_NFDS] = {
		fds->shm_fd, fds->kick_south_fd, fds->kick_north_fd
	};
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *c;
	ssize_t n;

	memset(&u, 0, sizeof(u));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fdv));
	memcpy(CMSG_DATA(c), fdv, sizeof(fdv));

	do {
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(m) ? 0 : -EIO;
}

static void close_all(const int *fdv, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fdv[i]);
}

int ioq_channel_recv_fds(int sock, struct ioq_channel_fds *fds)
{
	struct fds_msg m;
	union {
		/* room for more than we expect, so extras are seen, not lost */
		char buf[CMSG_SPACE(16 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	int fdv[16];
	size_t nfd = 0;
	struct cmsghdr *c;
	ssize_t n;

	do {
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;

	/* collect every fd we were given, so each error path closes them */
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		size_t k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (k > 16 - nfd)
			k = 16 - nfd;
		memcpy(&fdv[nfd], CMSG_DATA(c), k * sizeof(int));
		nfd += k;
	}

	if (n == 0) {
		close_all(fdv, nfd);
		return -ECONNRESET;
	}
	if (n != (ssize_t)sizeof(m) || m.magic != IOQ_CHANNEL_FDS_MAGIC ||
	    (msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) ||
	    nfd != IOQ_CHANNEL_NFDS) {
		close_all(fdv, nfd);
		return -EPROTO;
	}

	fds->shm_fd = fdv[0];
	fds->kick_south_fd = fdv[1];
	fds->kick_north_fd = fdv[2];
	fds->count = m.count;
	return 0;
}
