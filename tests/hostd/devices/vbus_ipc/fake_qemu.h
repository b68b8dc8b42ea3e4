/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the vbus-ipc device tests share (cmocka): a clock, QEMU's side of
 * the ivshmem server protocol, and a doorbell write.
 */
#ifndef TESTS_HOSTD_IPC_FAKE_QEMU_H
#define TESTS_HOSTD_IPC_FAKE_QEMU_H

#include <linux/types.h>

double now(void);
/* One ivshmem server message: its int64, and the fd it carried or -1. */
__s64 qemu_recv(int sock, int *fd);
/* A connected unix stream socket to @path (asserts). */
int connect_to(const char *path);
/* Ring an eventfd once (asserts). */
void kick(int fd);

struct fg;
/*
 * A process of uid and gid 65534 without supplementary groups connects
 * to @path (in directory @dir) and must be closed on before any message;
 * @fg's loop is pumped meanwhile. Asserts; needs root.
 */
void stranger_refused(struct fg *fg, const char *dir, const char *path);

#endif
