// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-blk online resize (docs/devices/vbus_blk.md, "Resize"):
 *
 *   `ctl resize NAME ID SIZE`  the backend grows its store (the file
 *                              backend ftruncate()s, then the capacity
 *                              moves; image= asks its storage daemon,
 *                              vbus_blk_image_qmp.c, and the capacity
 *                              moves at the reconnect, as below);
 *   a server's bigger export   the nbd backend reconnected to a larger
 *                              export: the capacity moves too;
 *   the events ring            a guest that negotiated F_RESIZE
 *                              registered it (DEVSHM VBUS_BLK_SHM_EVENTS);
 *                              its signal tells it to GETCONFIG again.
 *                              No descriptor is ever posted on it.
 *
 * Only growing: a shrink would cut off data the guest has (its file
 * system does not know), so `ctl resize` refuses one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vbus_blk_image.h"

int vbus_blk_events_attach(struct vbus_blk *b, struct hostd_shm *shm)
{
	int ret;

	if (!b->negotiated || !(b->features & VBUS_BLK_F_RESIZE) ||
	    !shm->signal)
		return -EINVAL;
	/* the guest never signals it: nothing to hear (no callback) */
	ret = hostd_devq_attach(&b->evq, shm, VBUS_BLK_EVENTS_COUNT, NULL);
	return ret < 0 ? ret : 0;
}

/* close: the guest's ring goes with its shm */
void vbus_blk_events_detach(struct vbus_blk *b)
{
	hostd_devq_detach(&b->evq);
}

void vbus_blk_capacity_set(struct vbus_blk *b, __u64 sectors)
{
	if (sectors == b->capacity)
		return;
	hostd_dev_log(b->dev, "vbus-blk: %s: capacity %llu -> %llu sectors%s",
		      b->path, (unsigned long long)b->capacity,
		      (unsigned long long)sectors,
		      b->evq.attached ? "; the guest is told" : "");
	b->capacity = sectors;
	vbus_blk_threads_sync(b);	/* the queue threads' copies */
	b->st.resizes++;
	if (!hostd_devq_live(&b->evq))
		return;
	b->st.resize_events++;
	hostd_devq_signal(&b->evq);
}

/*
 * SIZE: bytes, or a number with K, M, G or T (powers of 1024), as QEMU's
 * and qemu-img's sizes. 0 when it is not one.
 */
static __u64 parse_size(const char *s)
{
	static const char units[] = "KMGT";
	unsigned long long v;
	const char *u;
	char *end;
	unsigned int shift = 0;

	if (!s || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return 0;
	if (*end) {
		u = strchr(units, *end);
		if (!u || end[1])
			return 0;
		shift = 10 * (unsigned int)(u - units + 1);
		if (v > (~0ull >> shift))
			return 0;
	}
	return (__u64)v << shift;
}

/* the largest disk: sectors fit a __u64 with room; 2^60 bytes (1 EiB) */
#define VBLK_MAX_BYTES	(1ull << 60)

static int resize(struct vbus_blk *b, const char *arg, char *msg, size_t len)
{
	__u64 bytes = parse_size(arg), now = b->capacity * 512;
	int ret;

	if (!bytes || bytes > VBLK_MAX_BYTES)
		return hostd_dev_fail(b->dev, -EINVAL,
				      "resize: SIZE '%s': want bytes, or a number with K, M, G or T (1024-based), 1 .. 1 EiB",
				      arg ? arg : "");
	if (bytes % b->lbs)
		return hostd_dev_fail(b->dev, -EINVAL,
				      "resize: %llu bytes is not a multiple of the disk's logical block (%u bytes)",
				      (unsigned long long)bytes, b->lbs);
	if (bytes < now)
		return hostd_dev_fail(b->dev, -EINVAL,
				      "resize: %llu bytes is smaller than the disk (%llu bytes): vbus-hostd only grows a disk (a shrink would cut off data the guest has)",
				      (unsigned long long)bytes,
				      (unsigned long long)now);
	if (b->ro)
		return hostd_dev_fail(b->dev, -EROFS,
				      "resize: the disk is read-only (ro=1)");
	if (bytes == now) {
		snprintf(msg, len, "%s: %llu bytes already", b->path,
			 (unsigned long long)bytes);
		return 0;
	}
	if (b->image) {
		/* the capacity follows when the NBD connection comes back */
		ret = vbus_blk_image_resize(b, bytes);
		if (!ret)
			snprintf(msg, len, "image=%s: %llu bytes; the disk grows when vbus-hostd reconnects to the export",
				 b->image->image, (unsigned long long)bytes);
		return ret;
	}
	if (!b->be->resize)
		return hostd_dev_fail(b->dev, -EOPNOTSUPP,
				      "resize: nbd=%s: an NBD export is resized on its server; vbus-hostd takes a larger export's size when it reconnects",
				      b->path);
	ret = b->be->resize(b, bytes);
	if (ret < 0)
		return ret;
	vbus_blk_capacity_set(b, bytes / 512);
	snprintf(msg, len, "%s: %llu bytes%s", b->path,
		 (unsigned long long)bytes,
		 b->evq.attached ? "; the guest was told" :
		 "; the guest sees it when it opens the device again (it did not ask for resize events)");
	return 0;
}

int vbus_blk_ctl(struct hostd_dev *dev, const char *verb, const char *arg,
		 char *msg, size_t len)
{
	if (strcmp(verb, "resize"))
		return -EOPNOTSUPP;
	return resize(hostd_dev_priv(dev), arg, msg, len);
}
