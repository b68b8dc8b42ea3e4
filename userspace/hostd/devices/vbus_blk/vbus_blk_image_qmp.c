// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * `ctl resize` of an image= disk: the storage daemon resizes the image
 * (QMP block_resize on its format node, qcow2's metadata included), on
 * the QMP monitor it was started with (a unix socket in the device's
 * private 0700 directory, vbus_blk_image.c).
 *
 * An NBD export holds its node without sharing "resize" (an NBD client
 * cannot follow a size change on a connection), so the export goes
 * first (block-export-del, mode hard: its connection closes), the node
 * is resized, and the export comes back under the same name. The NBD
 * backend sees a lost connection, parks its requests, reconnects (its
 * 100 ms tick), resends them, and takes the bigger size as a resize
 * (vbus_blk_nbd_conn.c -> vbus_blk_capacity_set: the guest is told).
 *
 * This waits, on the guest's loop, for the storage daemon's answers:
 * three commands to a local child, bounded by VBLK_QMP_MS in all; a
 * daemon that does not answer in time fails the resize.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "vbus_blk_image.h"

#define VBLK_QMP_MS	5000

struct qmp {
	int fd;
	__u64 deadline_ns;
	char buf[8192];
	size_t len;
	bool deleted;		/* BLOCK_EXPORT_DELETED seen */
	char err[256];		/* the last error's desc */
};

/* one line into q->buf (NUL-terminated, newline dropped): 0 or -errno */
static int qmp_line(struct qmp *q)
{
	q->len = 0;
	for (;;) {
		struct pollfd p = { .fd = q->fd, .events = POLLIN };
		__u64 now = hostd_now_ns();
		ssize_t n;

		if (now >= q->deadline_ns ||
		    poll(&p, 1, (int)((q->deadline_ns - now) / 1000000) + 1) <= 0)
			return -ETIMEDOUT;
		if (q->len == sizeof(q->buf) - 1)
			return -EMSGSIZE;
		n = read(q->fd, q->buf + q->len, 1);	/* lines only: no overread */
		if (n <= 0)
			return n ? -errno : -ECONNRESET;
		if (q->buf[q->len] == '\n')
			break;
		q->len++;
	}
	q->buf[q->len] = '\0';
	return 0;
}

/* the "desc" of an error answer, as the storage daemon wrote it */
static void qmp_desc(struct qmp *q)
{
	const char *d = strstr(q->buf, "\"desc\": \"");
	size_t n;

	if (!d) {
		snprintf(q->err, sizeof(q->err), "%.200s", q->buf);
		return;
	}
	d += 9;
	n = strcspn(d, "\"");
	if (n > sizeof(q->err) - 1)
		n = sizeof(q->err) - 1;
	memcpy(q->err, d, n);
	q->err[n] = '\0';
}

/* read up to the answer; events on the way are noted. 0, -EIO, -errno */
static int qmp_answer(struct qmp *q)
{
	int ret;

	while (!(ret = qmp_line(q))) {
		if (strstr(q->buf, "\"event\"")) {
			if (strstr(q->buf, "\"BLOCK_EXPORT_DELETED\""))
				q->deleted = true;
			continue;
		}
		if (!strncmp(q->buf, "{\"return\"", 9))
			return 0;
		if (!strncmp(q->buf, "{\"error\"", 8)) {
			qmp_desc(q);
			return -EIO;
		}
	}
	snprintf(q->err, sizeof(q->err), "no answer from the storage daemon: %s",
		 strerror(-ret));
	return ret;
}

static int qmp_cmd(struct qmp *q, const char *cmd)
{
	size_t n = strlen(cmd);

	if (send(q->fd, cmd, n, MSG_NOSIGNAL) != (ssize_t)n) {
		snprintf(q->err, sizeof(q->err), "QMP send: %s", strerror(errno));
		return -EIO;
	}
	return qmp_answer(q);
}

/* connected, greeting read, capabilities negotiated */
static int qmp_open(struct qmp *q, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	size_t n = strlen(path);

	/* vbus_blk_image_open sized the directory for its sockets */
	if (n >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, path, n + 1);
	q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (q->fd < 0)
		return -errno;
	if (connect(q->fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int err = errno;

		snprintf(q->err, sizeof(q->err), "QMP %s: %s", path,
			 strerror(err));
		return -err;
	}
	if (qmp_line(q) < 0 || !strstr(q->buf, "\"QMP\"")) {
		snprintf(q->err, sizeof(q->err), "QMP %s: no greeting", path);
		return -EIO;
	}
	return qmp_cmd(q, "{\"execute\": \"qmp_capabilities\"}\n");
}

/* the export gone (hard: its connection closes), resize, export back */
static int qmp_resize(struct qmp *q, struct vbus_blk *b, __u64 bytes)
{
	char cmd[256];
	int ret, again;

	ret = qmp_cmd(q, "{\"execute\": \"block-export-del\", \"arguments\": "
		      "{\"id\": \"disk\", \"mode\": \"hard\"}}\n");
	/* deleted once its clients are gone: maybe after the answer */
	while (!ret && !q->deleted) {
		ret = qmp_line(q);
		if (!ret && strstr(q->buf, "\"BLOCK_EXPORT_DELETED\""))
			q->deleted = true;
	}
	if (ret) {
		if (!q->err[0])
			snprintf(q->err, sizeof(q->err),
				 "the export did not go: %s", strerror(-ret));
		return ret;
	}
	snprintf(cmd, sizeof(cmd), "{\"execute\": \"block_resize\", "
		 "\"arguments\": {\"node-name\": \"disk\", \"size\": %llu}}\n",
		 (unsigned long long)bytes);
	ret = qmp_cmd(q, cmd);
	/* back in any case: the disk must not stay without its export */
	snprintf(cmd, sizeof(cmd), "{\"execute\": \"block-export-add\", "
		 "\"arguments\": {\"type\": \"nbd\", \"id\": \"disk\", "
		 "\"node-name\": \"disk\", \"name\": \"disk\", "
		 "\"writable\": %s}}\n", b->ro ? "false" : "true");
	again = qmp_cmd(q, cmd);
	if (again)
		hostd_dev_log(b->dev, "vbus-blk: image=%s: the export did not "
			      "come back after a resize: %s", b->image->image,
			      q->err);
	return ret ? ret : again;
}

int vbus_blk_image_resize(struct vbus_blk *b, __u64 bytes)
{
	struct vbus_blk_image *im = b->image;
	struct qmp q = { .fd = -1 };
	int ret;

	if (im->failed || im->pid <= 0)
		return hostd_dev_fail(b->dev, -EIO,
				      "resize: image=%s: its storage daemon is not running",
				      im->image);
	q.deadline_ns = hostd_now_ns() + VBLK_QMP_MS * 1000000ull;
	ret = qmp_open(&q, im->qmp);
	if (!ret)
		ret = qmp_resize(&q, b, bytes);
	if (q.fd >= 0)
		close(q.fd);
	if (ret)
		return hostd_dev_fail(b->dev, ret < 0 ? ret : -EIO,
				      "resize: image=%s: %s", im->image,
				      q.err[0] ? q.err : strerror(-ret));
	return 0;
}
