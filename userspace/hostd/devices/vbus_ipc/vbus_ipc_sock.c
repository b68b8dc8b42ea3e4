// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd "vbus-ipc" device: its unix sockets. Listening and the ivshmem
 * server messages come from device.h; what is the device's own is the
 * accept and the attach message.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>
#include "vbus_ipc_dev.h"

int vbus_ipc_sock_accept(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	return fd < 0 ? -errno : fd;
}

/*
 * A QEMU on one of the device's ivshmem sockets (qsock=, peer_qsock=):
 * the region and the vectors go to whoever this is, so only what the
 * guest's qemu_uid=/qemu_gid= allow is accepted; anyone else is logged,
 * counted in *@refused and closed. The connection, or -1.
 */
int vbus_ipc_qemu_accept(struct hostd_dev *dev, int lfd, const char *path,
			 __u64 *refused)
{
	int fd = vbus_ipc_sock_accept(lfd);
	struct ucred cr;

	if (fd < 0)
		return -1;
	if (!hostd_dev_qemu_peer_ok(dev, fd, &cr)) {
		hostd_dev_log(dev, "ipc: %s: refused a connection from uid %d gid %d (pid %d): QEMU must run as root, as the daemon's uid or as the guest's qemu_uid=/qemu_gid=",
			      path, (int)cr.uid, (int)cr.gid, (int)cr.pid);
		(*refused)++;
		close(fd);
		return -1;
	}
	return fd;
}

bool vbus_ipc_sock_peer(int fd, uid_t allowed, uid_t *uid)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return false;
	*uid = cr.uid;
	return cr.uid == 0 || cr.uid == geteuid() || cr.uid == allowed;
}

_Static_assert(VBUS_IPC_ATTACH_NFDS <= HOSTD_SEND_FDS_MAX,
	       "the attach message's fds fit one hostd_send_fds()");

int vbus_ipc_attach_send(int sock, __u32 session, const int *fds)
{
	struct vbus_ipc_attach m = {
		.magic = VBUS_IPC_ATTACH_MAGIC,
		.version = VBUS_IPC_ABI_VERSION,
		.session = session,
	};

	return hostd_send_fds(sock, &m, sizeof(m), fds, VBUS_IPC_ATTACH_NFDS);
}
