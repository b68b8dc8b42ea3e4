// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "fd_pass.h"

void ioq_close_fds(const int *fdv, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fdv[i]);
}

/* Every SCM_RIGHTS descriptor of @msg into @got, so each error path closes them. */
static size_t collect_fds(struct msghdr *msg, int *got)
{
	struct cmsghdr *c;
	size_t nfd = 0;

	for (c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		size_t k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (k > IOQ_FD_PASS_MAX - nfd)
			k = IOQ_FD_PASS_MAX - nfd;
		memcpy(&got[nfd], CMSG_DATA(c), k * sizeof(int));
		nfd += k;
	}
	return nfd;
}

int ioq_recv_fds(int sock, void *buf, size_t len, int *fdv, size_t want)
{
	union {
		char buf[CMSG_SPACE(IOQ_FD_PASS_MAX * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	int got[IOQ_FD_PASS_MAX];
	size_t nfd;
	ssize_t n;

	do {
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	nfd = collect_fds(&msg, got);
	if (n == 0) {
		ioq_close_fds(got, nfd);
		return -ECONNRESET;
	}
	if (n != (ssize_t)len || (msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) ||
	    nfd != want) {
		ioq_close_fds(got, nfd);
		return -EPROTO;
	}
	memcpy(fdv, got, want * sizeof(int));
	return 0;
}
