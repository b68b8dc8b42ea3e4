// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the server side of QEMU's ivshmem protocol, and BAR2.
 *
 * QEMU's ivshmem-doorbell reads, on its chardev socket, a series of
 * little-endian int64 messages, each in its own sendmsg with at most one fd
 * (SCM_RIGHTS). The order is fixed (docs/transport.md; QEMU 7.2 segfaults
 * if the guest's own vectors come before the memory fd):
 *
 *   0                      protocol version
 *   guest_peer             the guest's own peer id
 *   -1       + BAR2 fd     the shared memory (QEMU blocks until it has it)
 *   host_peer + eventfd    x2: host vectors DB_HC, DB_SIGNAL; QEMU turns
 *                          them into ioeventfds on Doorbell
 *   guest_peer + eventfd   x2: the guest's MSI-X vectors HC, EVENTQ
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <endian.h>
#include "hostd.h"

int hostd_ivshmem_send(int sock, __s64 msg, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	__u64 le = htole64((__u64)msg);
	struct iovec iov = { .iov_base = &le, .iov_len = sizeof(le) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	size_t done = 0;

	memset(&u, 0, sizeof(u));
	if (fd >= 0) {
		struct cmsghdr *c;

		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	while (done < sizeof(le)) {
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* the fd went with the first byte; the rest goes without */
		done += (size_t)n;
		iov.iov_base = (char *)&le + done;
		iov.iov_len = sizeof(le) - done;
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
	}
	return 0;
}

int hostd_ivshmem_handshake(struct hostd_guest *g, int sock)
{
	int i, ret;

	ret = hostd_ivshmem_send(sock, 0, -1);
	if (!ret)
		ret = hostd_ivshmem_send(sock, g->guest_peer, -1);
	if (!ret)
		ret = hostd_ivshmem_send(sock, -1, g->bar2_fd);
	for (i = 0; !ret && i < VBUS_PCI_NR_VECTORS; i++)
		ret = hostd_ivshmem_send(sock, g->host_peer, g->db_fd[i]);
	for (i = 0; !ret && i < VBUS_PCI_NR_VECTORS; i++)
		ret = hostd_ivshmem_send(sock, g->guest_peer, g->msix_fd[i]);
	return ret;
}

/*
 * A fresh BAR2 for each QEMU: an old QEMU that is still exiting keeps its
 * mapping of the old one and cannot scribble on the new guest's mailbox.
 * The size is sealed, so nobody can shrink it under our mapping (SIGBUS).
 */
int hostd_bar2_create(struct hostd_guest *g)
{
	char name[HOSTD_NAME_MAX + 16];
	struct vbus_pci_shm *shm;
	int fd, err;

	snprintf(name, sizeof(name), "vbus-bar2-%s", g->name);
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, VBUS_PCI_SHM_SIZE) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	shm = mmap(NULL, VBUS_PCI_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	if (shm == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	/* a new memfd reads as zeros: only line 0 needs filling */
	shm->magic = VBUS_PCI_ABI_MAGIC;
	shm->version = VBUS_PCI_ABI_VERSION;
	shm->size = VBUS_PCI_SHM_SIZE;
	shm->host_peer = g->host_peer;
	shm->features = 0;
	g->bar2_fd = fd;
	g->shm = shm;
	g->last_seq = 0;
	return 0;
}

void hostd_bar2_destroy(struct hostd_guest *g)
{
	if (g->shm)
		munmap(g->shm, VBUS_PCI_SHM_SIZE);
	if (g->bar2_fd >= 0)
		close(g->bar2_fd);
	g->shm = NULL;
	g->bar2_fd = -1;
}
