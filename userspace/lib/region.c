// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Shared-memory regions: see region.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vbus/ioq.h>
#include "region.h"

size_t ioq_region_size(__u32 count)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = IOQ_HEAD_DESC_SIZE((size_t)count);

	return (len + page - 1) / page * page;
}

int ioq_region_create(const char *path, size_t len)
{
	int fd, err;

	if (path)
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	else
		fd = memfd_create("ioq-channel",
				  MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;

	if (ftruncate(fd, (off_t)len) < 0)
		goto fail;
	/*
	 * A memfd's size is sealed: a peer that could shrink it would turn
	 * our next access to the ring into SIGBUS. A named file cannot be
	 * sealed; whoever can write it is trusted not to truncate it.
	 */
	if (!path && fcntl(fd, F_ADD_SEALS,
			   F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	return fd;

fail:
	err = -errno;
	close(fd);
	if (path)
		unlink(path);
	return err;
}

int ioq_region_check(int fd)
{
	struct stat st;
	int seals;

	if (fstat(fd, &st) < 0)
		return -errno;
	/* a named file is trusted like its owner (docs/libioq.md) */
	if (st.st_nlink)
		return 0;
	/* no name: a memfd (or an unlinked file), the peer's to shrink */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0)
		return errno == EINVAL ? -EPERM : -errno;
	return (seals & F_SEAL_SHRINK) ? 0 : -EPERM;
}

int ioq_region_map(int fd, void **addr, size_t *len)
{
	struct stat st;
	void *p;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size <= 0 || (uintmax_t)st.st_size > SIZE_MAX)
		return -EMSGSIZE;

	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	*addr = p;
	*len = (size_t)st.st_size;
	return 0;
}
