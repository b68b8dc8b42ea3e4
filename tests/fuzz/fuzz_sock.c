// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Socket peers for the fuzz targets (fuzz_sock.h). */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "fuzz_sock.h"

static char dir[128];

static void dir_remove(void)
{
	char cmd[160];

	/* only what we made: a mkdtemp name */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz: cannot remove %s\n", dir);
}

const char *fuzz_sock_dir(void)
{
	const char *t = getenv("TMPDIR");

	if (dir[0])
		return dir;
	snprintf(dir, sizeof(dir), "%s/vbus-fuzz-XXXXXX",
		 t && *t && strlen(t) < 64 ? t : "/tmp");
	if (!mkdtemp(dir))
		abort();
	atexit(dir_remove);
	return dir;
}

int fuzz_sock_connect(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int fuzz_ivshmem_recv(int sock, int64_t *msg, int *fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(4 * sizeof(int))];
	} c;
	uint64_t le;
	struct iovec iov = { &le, sizeof(le) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = &c, .msg_controllen = sizeof(c) };
	struct cmsghdr *h;
	ssize_t n;

	*fd = -1;
	n = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC | MSG_WAITALL);
	if (n < 0)
		return errno == EAGAIN ? 0 : -1;
	if (n == 0)
		return -1;
	if (n != sizeof(le) || (m.msg_flags & MSG_CTRUNC)) {
		fprintf(stderr, "ivshmem: a %zd-byte message (flags %#x)\n", n,
			m.msg_flags);
		abort();
	}
	for (h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS ||
		    h->cmsg_len != CMSG_LEN(sizeof(int)) || *fd >= 0) {
			fprintf(stderr, "ivshmem: more than one fd in a message\n");
			abort();
		}
		memcpy(fd, CMSG_DATA(h), sizeof(int));
	}
	*msg = (int64_t)le64toh(le);
	return 1;
}

void fuzz_qemu_init(struct fuzz_qemu *q)
{
	memset(q, 0, sizeof(*q));
	q->fd = q->bar2 = q->db[0] = q->db[1] = -1;
}

static void violation(const struct fuzz_qemu *q, int64_t msg, int fd,
		      const char *why)
{
	fprintf(stderr, "ivshmem message %u (%lld, fd %d): %s\n", q->got,
		(long long)msg, fd, why);
	abort();
}

static bool is_kind(int fd, const char *link)
{
	char p[64], l[64];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	n = readlink(p, l, sizeof(l) - 1);
	if (n < 0)
		return false;
	l[n] = 0;
	return !strncmp(l, link, strlen(link));
}

/* One message, in the order of docs/transport.md. */
static void check(struct fuzz_qemu *q, int64_t msg, int fd, uint64_t size,
		  unsigned int nvec)
{
	struct stat st;

	if (q->got == 0 && (msg != 0 || fd >= 0))
		violation(q, msg, fd, "not protocol version 0");
	else if (q->got == 1 && (msg < 0 || fd >= 0))
		violation(q, msg, fd, "not the guest's peer id");
	else if (q->got == 2) {
		if (msg != -1 || fd < 0 || fstat(fd, &st) < 0 ||
		    !S_ISREG(st.st_mode) ||
		    (size ? (uint64_t)st.st_size != size : st.st_size < 4096))
			violation(q, msg, fd, "not -1 with the shared memory");
		q->bar2 = fd;
		return;
	} else if (q->got >= 3 && q->got < 3 + 2 * nvec) {
		bool host = q->got < 3 + nvec;

		if (fd < 0 || !is_kind(fd, "anon_inode:[eventfd]"))
			violation(q, msg, fd, "a vector without an eventfd");
		if (host && q->got == 3)
			q->host_peer = msg;
		if (msg != (host ? q->host_peer : q->guest_peer) ||
		    q->host_peer == q->guest_peer)
			violation(q, msg, fd, "a vector of the wrong peer");
		if (host && q->got - 3 < 2) {
			q->db[q->got - 3] = fd;
			return;
		}
	} else if (q->got >= 3 + 2 * nvec) {
		violation(q, msg, fd, "a message after the handshake");
	}
	if (q->got == 1)
		q->guest_peer = msg;
	if (fd >= 0)
		close(fd);
}

void fuzz_qemu_read(struct fuzz_qemu *q, uint64_t bar2_size,
		    unsigned int nvec)
{
	int64_t msg;
	int fd, r;

	while (q->fd >= 0 && !q->eof &&
	       (r = fuzz_ivshmem_recv(q->fd, &msg, &fd)) != 0) {
		if (r < 0) {
			q->eof = true;
			break;
		}
		check(q, msg, fd, bar2_size, nvec);
		q->got++;
	}
}

void fuzz_qemu_close(struct fuzz_qemu *q)
{
	if (q->fd >= 0)
		close(q->fd);
	if (q->bar2 >= 0)
		close(q->bar2);
	if (q->db[0] >= 0)
		close(q->db[0]);
	if (q->db[1] >= 0)
		close(q->db[1]);
	fuzz_qemu_init(q);
}
