// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* See fake_qemu.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <endian.h>
#include <grp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "fakeguest.h"
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

void stranger_refused(struct fg *fg, const char *dir, const char *path)
{
	int sv[2], status;
	pid_t pid, w = 0;
	char b;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(chmod(dir, 0711), 0);
	assert_int_equal(chmod(path, 0666), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int fd;

		close(sv[0]);
		/* no group of root's either: the daemon's group may connect */
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(2);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		strcpy(sa.sun_path, path);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			_exit(3);
		if (write(sv[1], "c", 1) != 1)
			_exit(4);
		/* EOF, no handshake; the connection stays until then */
		_exit(recv(fd, &b, 1, 0) == 0 ? 0 : 5);
	}
	close(sv[1]);
	assert_int_equal(read(sv[0], &b, 1), 1);
	for (int i = 0; i < 2000 && (w = waitpid(pid, &status, WNOHANG)) == 0;
	     i++) {
		fg_pump(fg);
		usleep(10000);
	}
	close(sv[0]);
	assert_int_equal(w, pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}
