/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd "vbus-ipc" device: shared state of its three files.
 *   vbus_ipc_region.c  the channel's memfd: create, size, seal, lay out, format
 *   vbus_ipc_sock.c    unix sockets: accept, the peer's credentials, the
 *                      attach message (SCM_RIGHTS) for the host process
 *   vbus_ipc_dev.c     the device type, the connections and the session
 *   vbus_ipc_link.c    a link (peer=): the channel between two guests
 */
#ifndef HOSTD_DEV_VBUS_IPC_H
#define HOSTD_DEV_VBUS_IPC_H

#include <stdbool.h>
#include <sys/types.h>
#include <vbus/vbus_ipc.h>
#include "device.h"

#define VBUS_IPC_GUEST_PEER	1	/* the guest's ivshmem peer id */
#define VBUS_IPC_HOST_PEER	0

struct vbus_ipc_region {
	int fd;			/* the memfd: QEMU's BAR2, the host's region */
	size_t size;		/* a power of two (a PCI BAR) */
	struct vbus_ipc_shm *shm;	/* mapped; guest and host write parts */
	struct vbus_ipc_layout lay;	/* ours, never re-read */
	/* what we wrote into the header, which the guest can overwrite */
	__u64 region_id;
	char service[VBUS_IPC_SERVICE_LEN];
};

/* The region's size for @count buffers of @buf_size a direction. */
__u64 vbus_ipc_region_size(__u32 count, __u32 buf_size);
/* The largest count x bufsize a direction that fits VBUS_IPC_MAX_SIZE. */
__u64 vbus_ipc_region_max_area(__u32 count);
int vbus_ipc_region_create(struct vbus_ipc_region *r, const char *service,
			   __u32 count, __u32 buf_size);
void vbus_ipc_region_destroy(struct vbus_ipc_region *r);
/* Fresh rings for a new session (nobody may be using the old ones). */
int vbus_ipc_region_format(struct vbus_ipc_region *r);

int vbus_ipc_sock_accept(int lfd);
int vbus_ipc_qemu_accept(struct hostd_dev *dev, int lfd, const char *path,
			 __u64 *refused);
/*
 * May the process on @fd have the channel? Root, the daemon's user and
 * @allowed (peer_uid=) may; the peer's uid goes to @uid either way.
 */
bool vbus_ipc_sock_peer(int fd, uid_t allowed, uid_t *uid);
/* The attach message and its VBUS_IPC_ATTACH_NFDS fds. */
int vbus_ipc_attach_send(int sock, __u32 session, const int *fds);

/* A link: the region served to two guests' QEMUs (vbus_ipc_link.c). */
struct vbus_ipc_link;
int vbus_ipc_link_create(struct hostd_dev *dev, struct vbus_ipc_region *r,
			 const char *peer, const char *qsock,
			 const char *peer_qsock, struct vbus_ipc_link **out);
void vbus_ipc_link_free(struct vbus_ipc_link *l);
void vbus_ipc_link_stats(const struct vbus_ipc_link *l,
			 struct hostd_stats_out *out);

#endif /* HOSTD_DEV_VBUS_IPC_H */
