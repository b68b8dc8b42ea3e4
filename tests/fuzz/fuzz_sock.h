/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Socket peers for the fuzz targets (fuzz_sock.c): a private directory for
 * the daemon's sockets, a client that connects as QEMU or a host process
 * does, and QEMU's side of the ivshmem-doorbell protocol.
 */
#ifndef VBUS_FUZZ_SOCK_H
#define VBUS_FUZZ_SOCK_H

#include <stdbool.h>
#include <stdint.h>

/* A fresh private directory (removed at exit); its path. */
const char *fuzz_sock_dir(void);
/* Connect to the unix socket @path (non-blocking); fd or -1. */
int fuzz_sock_connect(const char *path);

/*
 * QEMU's reader (hw/misc/ivshmem.c): one little-endian int64 per
 * recvmsg, with at most one descriptor. 1: a message (@fd -1 without
 * one), 0: nothing there yet, -1: EOF or an error. More than one
 * descriptor with one message is a protocol error: aborts.
 */
int fuzz_ivshmem_recv(int sock, int64_t *msg, int *fd);

/*
 * What QEMU checks, message by message: version 0, the guest's peer id,
 * -1 with the BAR2 memfd of @bar2_size (0: any), then the host's and the guest's
 * vectors (eventfds, @nvec each), nothing after. A client's state.
 */
struct fuzz_qemu {
	int fd;			/* -1: none */
	unsigned int got;	/* messages so far */
	int64_t guest_peer, host_peer;
	int bar2;		/* the memfd, once received */
	int db[2];		/* host vectors: the guest "rings" these */
	bool eof;
};

void fuzz_qemu_init(struct fuzz_qemu *q);
/* Read what is there and check it; abort on a protocol violation. */
void fuzz_qemu_read(struct fuzz_qemu *q, uint64_t bar2_size,
		    unsigned int nvec);
void fuzz_qemu_close(struct fuzz_qemu *q);

#endif /* VBUS_FUZZ_SOCK_H */
