// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd "ipc" device: its unix sockets. A device sees only device.h,
 * so the ivshmem server messages (docs/transport.md, "ivshmem server") are
 * written here again rather than borrowed from the library's ivshmem.c.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "ipc.h"

static int sock_addr(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

/* Is someone accepting on @sa? Then it is not ours to replace. */
static int sock_live(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), live;

	if (fd < 0)
		return -errno;
	live = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	close(fd);
	return live;
}

int ipc_sock_listen(const char *path)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, err;

	err = sock_addr(&sa, path);
	if (err)
		return err;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		if (sock_live(&sa) > 0)
			return -EADDRINUSE;
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 4) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int ipc_sock_accept(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	return fd < 0 ? -errno : fd;
}

/* sendmsg with @fds (SCM_RIGHTS) riding on the first byte */
static int send_with_fds(int sock, const void *buf, size_t len,
			 const int *fds, size_t nfd)
{
	union {
		char buf[CMSG_SPACE(VBUS_IPC_ATTACH_NFDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	size_t done = 0;

	if (nfd > VBUS_IPC_ATTACH_NFDS)
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
		done += (size_t)n;
		iov.iov_base = (char *)buf + done;
		iov.iov_len = len - done;
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
	}
	return 0;
}

int ipc_ivshmem_send(int sock, __s64 msg, int fd)
{
	__u64 le = htole64((__u64)msg);

	return send_with_fds(sock, &le, sizeof(le), &fd, fd >= 0 ? 1 : 0);
}

int ipc_attach_send(int sock, __u32 session, const int *fds)
{
	struct vbus_ipc_attach m = {
		.magic = VBUS_IPC_ATTACH_MAGIC,
		.version = VBUS_IPC_ABI_VERSION,
		.session = session,
	};

	return send_with_fds(sock, &m, sizeof(m), fds, VBUS_IPC_ATTACH_NFDS);
}
