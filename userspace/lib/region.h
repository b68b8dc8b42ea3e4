/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Shared-memory regions for libioq channels (internal to the library).
 * A region is a file (a memfd, or a named file another process can open)
 * mapped MAP_SHARED by each side: both sides see the same pages, which is
 * the "shared memory" core/ assumes.
 */
#ifndef IOQ_REGION_H
#define IOQ_REGION_H

#include <stddef.h>
#include <linux/types.h>

#define IOQ_HIDDEN __attribute__((visibility("hidden")))

/* Bytes a ring of @count descriptors occupies, rounded up to pages. */
IOQ_HIDDEN size_t ioq_region_size(__u32 count);

/*
 * Create a region of @len bytes: a memfd when @path is NULL, else a new
 * file at @path (O_EXCL, mode 0600; unlinked again if sizing fails).
 * Returns the fd (close-on-exec) or -errno.
 */
IOQ_HIDDEN int ioq_region_create(const char *path, size_t len);

/*
 * May we map @fd from a peer? A region with no name (a memfd, or a file
 * unlinked since) must carry F_SEAL_SHRINK: a peer that shrinks it turns
 * our next access to the ring into SIGBUS. Growing does no harm (we map
 * the size fstat says at attach and never remap), so F_SEAL_GROW is not
 * required. A named file is accepted: whoever can write it is trusted not
 * to truncate it (docs/libioq.md, "What a peer can and cannot do to
 * you"). Returns 0, -EPERM (unsealed), or -errno.
 */
IOQ_HIDDEN int ioq_region_check(int fd);

/*
 * Map all of the region behind @fd read/write and shared. Its size comes
 * from fstat, never from the peer's header: a peer that lies about count
 * is caught by ioq_ring_check() against this length. Returns 0 or -errno.
 */
IOQ_HIDDEN int ioq_region_map(int fd, void **addr, size_t *len);

#endif /* IOQ_REGION_H */
