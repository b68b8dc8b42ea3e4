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
#include "fd_pass.h"

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

int ioq_channel_recv_fds(int sock, struct ioq_channel_fds *fds)
{
	struct fds_msg m;
	int fdv[IOQ_CHANNEL_NFDS];
	int err;

	err = ioq_recv_fds(sock, &m, sizeof(m), fdv, IOQ_CHANNEL_NFDS);
	if (err)
		return err;
	if (m.magic != IOQ_CHANNEL_FDS_MAGIC) {
		ioq_close_fds(fdv, IOQ_CHANNEL_NFDS);
		return -EPROTO;
	}

	fds->shm_fd = fdv[0];
	fds->kick_south_fd = fdv[1];
	fds->kick_north_fd = fdv[2];
	fds->count = m.count;
	return 0;
}
