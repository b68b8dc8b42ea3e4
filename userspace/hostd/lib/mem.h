/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
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
 *
 * The file belongs to one daemon: it holds an OFD write lock on it for its
 * whole life, refuses a file another process has locked, and never shrinks
 * one (a larger file is a live guest's RAM, or one whose QEMU -m is not
 * size=: either way truncating it would pull memory out from under QEMU).
 */
#ifndef VBUS_HOSTD_MEM_H
#define VBUS_HOSTD_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <vbus/platform.h>

enum hostd_machine { HOSTD_MACHINE_Q35, HOSTD_MACHINE_PC };

struct hostd_memblock {
	__u64 gpa;	/* first guest-physical address of the block */
	__u64 size;
	__u64 off;	/* offset in the RAM file */
};

struct hostd_mem {
	int fd;			/* locked (F_OFD_SETLK) while open */
	unsigned char *base;	/* the whole file, MAP_SHARED */
	__u64 size;
	unsigned int nblocks;
	struct hostd_memblock blk[2];
};

/* The below-4G part of @ram for @machine (QEMU 7.2's pc/q35 rules). */
__u64 hostd_mem_lowmem(enum hostd_machine machine, __u64 ram);
/* Build the table for a RAM of @size with @lowmem below 4 GiB. */
void hostd_mem_layout(struct hostd_mem *m, __u64 size, __u64 lowmem);
/*
 * Create (or take) the RAM file @path, lock it, size it to @size (grow
 * only) and map it; @fd >= 0 (e.g. a memfd) is used instead of opening
 * @path. 0, or -errno with the reason in @err.
 */
int hostd_mem_open(struct hostd_mem *m, const char *path, int fd, __u64 size,
		   enum hostd_machine machine, char *err, size_t errlen);
void hostd_mem_close(struct hostd_mem *m);
/*
 * An OFD lock on the whole file behind @fd, exclusive or shared, held as
 * long as that open file description lives (RAM files hold an exclusive
 * one). 0, -EBUSY with "pid N (comm)" of a holder (or "another process")
 * in @holder, or -errno.
 */
int hostd_file_lock(int fd, bool exclusive, char *holder, size_t len);
/* Host pointer for [gpa, gpa+len) inside one block, or NULL. */
void *hostd_mem_gpa(const struct hostd_mem *m, __u64 gpa, __u64 len);

#endif /* VBUS_HOSTD_MEM_H */
