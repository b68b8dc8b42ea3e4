// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd "vbus-ipc" device: the channel's region. A memfd of its own (the
 * guest's RAM file is never involved), sealed against shrinking and
 * growing so neither QEMU nor the host process can pull pages from under
 * another mapping (SIGBUS), sized to a power of two because it becomes a
 * PCI BAR (QEMU 7.2's pci_register_bar requires it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>
#include "vbus_ipc_dev.h"

static __u64 align_up(__u64 v, __u64 a)
{
	return (v + a - 1) & ~(a - 1);
}

static __u64 pow2_up(__u64 v)
{
	__u64 p = VBUS_IPC_HDR_SIZE;

	while (p < v)
		p <<= 1;
	return p;
}

/* page 0 header, the two rings, then the two page-aligned areas */
static void layout(struct vbus_ipc_layout *l, __u32 count, __u32 buf_size)
{
	__u64 ring_len = align_up(IOQ_HEAD_DESC_SIZE(count), 8);

	l->count = count;
	l->buf_size = buf_size;
	l->ring_off[VBUS_IPC_G2H] = VBUS_IPC_HDR_SIZE;
	l->ring_off[VBUS_IPC_H2G] = VBUS_IPC_HDR_SIZE + ring_len;
	l->area_len = (__u64)count * buf_size;
	l->area_off[VBUS_IPC_G2H] = align_up(VBUS_IPC_HDR_SIZE + 2 * ring_len,
					     VBUS_IPC_HDR_SIZE);
	l->area_off[VBUS_IPC_H2G] = align_up(l->area_off[VBUS_IPC_G2H] +
					     l->area_len, VBUS_IPC_HDR_SIZE);
}

__u64 vbus_ipc_region_size(__u32 count, __u32 buf_size)
{
	struct vbus_ipc_layout l;

	layout(&l, count, buf_size);
	return pow2_up(l.area_off[VBUS_IPC_H2G] + l.area_len);
}

/*
 * The end of the second area grows with the area's length (alignment
 * makes it a staircase, never a step down), so a bisection finds the
 * largest length that still ends within VBUS_IPC_MAX_SIZE.
 */
__u64 vbus_ipc_region_max_area(__u32 count)
{
	struct vbus_ipc_layout l;
	__u64 lo = 0, hi = VBUS_IPC_MAX_SIZE, mid;

	layout(&l, count, 0);
	while (lo < hi) {
		mid = lo + (hi - lo + 1) / 2;
		if (align_up(l.area_off[VBUS_IPC_G2H] + mid, VBUS_IPC_HDR_SIZE) +
		    mid <= VBUS_IPC_MAX_SIZE)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

static __u64 new_region_id(void)
{
	__u64 id = 0;

	/* only an identity to match the bus device with its BAR */
	while (getrandom(&id, sizeof(id), 0) != sizeof(id) || !id)
		;
	return id;
}

int vbus_ipc_region_create(struct vbus_ipc_region *r, const char *service,
			   __u32 count, __u32 buf_size)
{
	struct vbus_ipc_layout l;
	__u64 size;
	int fd, err;

	layout(&l, count, buf_size);
	size = pow2_up(l.area_off[VBUS_IPC_H2G] + l.area_len);
	if (vbus_ipc_layout_check(&l, size))
		return -EINVAL;
	fd = memfd_create("vbus-ipc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	r->shm = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->shm == MAP_FAILED)
		goto fail;
	r->fd = fd;
	r->size = size;
	r->lay = l;
	/* a new memfd reads as zeros: the session fields start IDLE, 0 */
	r->shm->magic = VBUS_IPC_MAGIC;
	r->shm->version = VBUS_IPC_ABI_VERSION;
	r->shm->size = size;
	r->region_id = new_region_id();
	snprintf(r->service, sizeof(r->service), "%s", service);
	r->shm->region_id = r->region_id;
	r->shm->host_peer = VBUS_IPC_HOST_PEER;
	r->shm->layout = l;
	memcpy(r->shm->service, r->service, sizeof(r->service));
	return 0;
fail:
	err = -errno;
	close(fd);
	r->shm = NULL;
	return err;
}

void vbus_ipc_region_destroy(struct vbus_ipc_region *r)
{
	if (r->shm)
		munmap(r->shm, r->size);
	if (r->fd >= 0)
		close(r->fd);
	r->shm = NULL;
	r->fd = -1;
}

int vbus_ipc_region_format(struct vbus_ipc_region *r)
{
	int d, err;

	/* the guest or an old host process may have scribbled anywhere */
	r->shm->layout = r->lay;
	for (d = 0; d < 2; d++) {
		err = ioq_ring_format((struct ioq_ring_head *)
				      ((char *)r->shm + r->lay.ring_off[d]),
				      r->lay.count);
		if (err)
			return err;
	}
	return 0;
}
