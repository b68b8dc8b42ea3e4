// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* See fake_qemu.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <endian.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "fake_qemu.h"

double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

__s64 qemu_recv(int sock, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	__u64 le;
	struct iovec iov = { .iov_base = &le, .iov_len = sizeof(le) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;

	*fd = -1;
	assert_int_equal(recvmsg(sock, &mh, 0), sizeof(le));
	c = CMSG_FIRSTHDR(&mh);
	if (c && c->cmsg_type == SCM_RIGHTS)
		memcpy(fd, CMSG_DATA(c), sizeof(int));
	return (__s64)le64toh(le);
}

int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strcpy(sa.sun_path, path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

void kick(int fd)
{
	__u64 one = 1;

	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
}
