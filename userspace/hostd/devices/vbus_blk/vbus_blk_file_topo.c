// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The file backend's topology (GETTOPOLOGY, docs/devices/vbus_blk.md):
 * what the block layer below the backing file says about its layout.
 *
 *   a block device   its own queue limits: BLKIOMIN, BLKIOOPT,
 *                    BLKALIGNOFF, BLKROTATIONAL;
 *   a regular file   the physical block as io_min, nothing for io_opt
 *                    and alignment (a file system hands out blocks of
 *                    its own), and the rotational flag of the disk the
 *                    file system is on (/sys/dev/block/MAJ:MIN, or its
 *                    parent for a partition); a file system on no disk
 *                    (tmpfs: major 0) is memory, not rotational.
 *
 * Hints only: a value that cannot be read is left out (0), never an
 * error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "vbus_blk_dev.h"

/* 1 rotational, 0 not, -1 unknown: /sys/dev/block/MAJ:MIN[/..]/queue */
static int sysfs_rotational(dev_t dev)
{
	static const char *const fmt[] = {
		"/sys/dev/block/%u:%u/queue/rotational",
		"/sys/dev/block/%u:%u/../queue/rotational",	/* a partition */
	};
	char path[96], c = 0;
	unsigned int i;
	int fd;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), fmt[i], major(dev), minor(dev));
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (read(fd, &c, 1) != 1)
			c = 0;
		close(fd);
		if (c == '0' || c == '1')
			return c - '0';
	}
	return -1;
}

/* a block size the guest takes: a power of two from the logical block on */
static __u32 blocks(const struct vbus_blk *b, long long v)
{
	return v >= (long long)b->lbs && v <= (1ll << 30) && !(v & (v - 1)) ?
	       (__u32)v : 0;
}

static void blkdev_topology(struct vbus_blk *b, int fd)
{
	unsigned int iomin = 0, ioopt = 0;
	unsigned short rot = 1;
	int align = 0;

	if (ioctl(fd, BLKIOMIN, &iomin) == 0)
		b->topo.io_min = blocks(b, iomin);
	/* io_opt need not be a power of two (RAID stripes): whole blocks */
	if (ioctl(fd, BLKIOOPT, &ioopt) == 0 && ioopt % b->lbs == 0 &&
	    ioopt <= (1u << 30))
		b->topo.io_opt = ioopt;
	if (ioctl(fd, BLKALIGNOFF, &align) == 0 && align > 0 &&
	    (__u32)align < b->pbs && align % (int)b->lbs == 0)
		b->topo.alignment_offset = (__u32)align;
	if (ioctl(fd, BLKROTATIONAL, &rot) == 0 && !rot)
		b->topo.flags |= VBUS_BLK_TOPO_NONROT;
}

void vbus_blk_file_topology(struct vbus_blk *b, int fd, const struct stat *st)
{
	b->topo = (struct vbus_blk_topology){ 0 };
	if (b->blkdev) {
		blkdev_topology(b, fd);
	} else if (!major(st->st_dev) || sysfs_rotational(st->st_dev) == 0) {
		b->topo.flags |= VBUS_BLK_TOPO_NONROT;
	}
	if (!b->topo.io_min)
		b->topo.io_min = b->pbs;
}
