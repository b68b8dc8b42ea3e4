// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: guest RAM and the guest-physical -> host pointer table.
 *
 * QEMU runs with -object memory-backend-file,mem-path=F,share=on and reuses
 * F when it exists, so the daemon creates and sizes F before QEMU starts
 * and maps it for its whole life (a restarted QEMU maps the same file).
 * The file's layout is QEMU's: RAM below 4 GiB up to "lowmem", the rest
 * from 4 GiB up (the PCI hole sits in between):
 *
 *   off = gpa                      for gpa < lowmem
 *   off = gpa - 4 GiB + lowmem     for 4 GiB <= gpa < 4 GiB + ram - lowmem
 *
 * A range the guest hands us must lie entirely inside one block: a buffer
 * that runs from lowmem into the hole (or across the 4 GiB boundary) is not
 * contiguous in the file and is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "hostd.h"

#define GIB (1ull << 30)
#define FOUR_GIB (4ull << 30)

__u64 hostd_mem_lowmem(enum hostd_machine machine, __u64 ram)
{
	/* QEMU 7.2 pc_q35_init / pc_init1 */
	if (machine == HOSTD_MACHINE_PC)
		return ram >= 3 * GIB + GIB / 2 ? 3 * GIB : ram;
	return ram >= 2 * GIB + 3 * GIB / 4 ? 2 * GIB : ram;
}

void hostd_mem_layout(struct hostd_mem *m, __u64 size, __u64 lowmem)
{
	if (lowmem > size)
		lowmem = size;
	m->size = size;
	m->nblocks = 0;
	m->blk[m->nblocks++] = (struct hostd_memblock){
		.gpa = 0, .size = lowmem, .off = 0 };
	if (size > lowmem)
		m->blk[m->nblocks++] = (struct hostd_memblock){
			.gpa = FOUR_GIB, .size = size - lowmem, .off = lowmem };
}

int hostd_mem_open(struct hostd_mem *m, const char *path, int fd, __u64 size,
		   enum hostd_machine machine)
{
	struct stat st;
	void *p;
	int err;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	if (fd < 0) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return -errno;
	}
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		goto out_close;
	}
	/*
	 * Size it ourselves: QEMU reuses the file as it is. A leftover file
	 * of another size (an earlier run with other settings) is resized.
	 */
	if ((__u64)st.st_size != size && ftruncate(fd, (off_t)size) < 0) {
		err = -errno;
		goto out_close;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
		 fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		goto out_close;
	}
	m->fd = fd;
	m->base = p;
	hostd_mem_layout(m, size, hostd_mem_lowmem(machine, size));
	return 0;

out_close:
	close(fd);
	return err;
}

void hostd_mem_close(struct hostd_mem *m)
{
	if (m->base)
		munmap(m->base, m->size);
	if (m->fd >= 0)
		close(m->fd);
	m->base = NULL;
	m->fd = -1;
}

void *hostd_mem_gpa(const struct hostd_mem *m, __u64 gpa, __u64 len)
{
	unsigned int i;

	if (!len || !m->base)
		return NULL;
	for (i = 0; i < m->nblocks; i++) {
		const struct hostd_memblock *b = &m->blk[i];
		__u64 rel;

		if (gpa < b->gpa)
			continue;
		rel = gpa - b->gpa;
		/* written so that nothing can overflow */
		if (rel >= b->size || len > b->size - rel)
			continue;
		return m->base + b->off + rel;
	}
	return NULL;
}

void *hostd_gpa(struct hostd_guest *g, __u64 gpa, __u64 len)
{
	return hostd_mem_gpa(&g->mem, gpa, len);
}
