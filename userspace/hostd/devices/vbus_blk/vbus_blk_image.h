/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-blk image=PATH: the qemu-storage-daemon this device starts and
 * watches for the image (vbus_blk_image.c); the disk itself is the NBD
 * backend on the daemon's socket.
 */
#ifndef VBUS_HOSTD_VBUS_BLK_IMAGE_H
#define VBUS_HOSTD_VBUS_BLK_IMAGE_H

#include <limits.h>
#include <sys/types.h>
#include "vbus_blk_dev.h"

#define VBLK_IMAGE_STOP_MS	5000	/* destroy: SIGTERM, then SIGKILL */

struct vbus_blk_image {
	struct vbus_blk *b;
	char image[PATH_MAX];		/* canonical */
	char format[32];		/* qemu's driver name */
	char dir[96];			/* private (0700): the socket, the pid file */
	char sock[112];			/* fits sun_path */
	char pidfile[112];
	char qmp[112];			/* its QMP monitor (ctl resize) */
	int errfd;			/* its stderr, watched, -1 */
	pid_t pid;			/* the storage daemon (our child), 0 */
	int daemon_fd;			/* its pidfd, watched, -1 */
	bool ready;			/* its export was up (the pid file) */
	bool failed;			/* a restart failed: no more */
	int infd;			/* pending start: inotify on dir, -1 */
	/*
	 * A start not waited for (a pending device: vbus_blk_nbd_conn.c):
	 * called on the loop once the export is up (@why NULL) or the
	 * daemon died starting (@why: its words); then cleared.
	 */
	void (*started)(struct vbus_blk *b, const char *why);
	__u64 restarts;
	char why[512];			/* why a start failed */
};

/*
 * start the daemon for @path (format @format, or probed); b->path = URI.
 * Waits for its export (bounded by nbd_timeout), but on a running guest
 * (hostd_dev_hot): then started() says when, and the caller bounds it.
 */
int vbus_blk_image_open(struct vbus_blk *b, const char *path,
			const char *format);
/* the export is up (the pid file), or the start is still under way */
bool vbus_blk_image_up(struct vbus_blk *b);
void vbus_blk_image_close(struct vbus_blk *b);
void vbus_blk_image_stats(struct vbus_blk *b, struct hostd_stats_out *out);
/*
 * ctl resize (vbus_blk_image_qmp.c): the image made @bytes long by its
 * storage daemon; the NBD connection drops and the reconnect sees the
 * new size. 0, or hostd_dev_fail's -errno.
 */
int vbus_blk_image_resize(struct vbus_blk *b, __u64 bytes);

#endif /* VBUS_HOSTD_VBUS_BLK_IMAGE_H */
