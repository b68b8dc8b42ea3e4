/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Receiving one message with descriptors attached (internal to the
 * library): the channel hand-over (channel_fds.c) and the vbus-ipc attach
 * (ipc.c) read a fixed-size payload plus SCM_RIGHTS from a peer that may be
 * anybody, so both take every descriptor that came, check, and close them
 * all on any mismatch.
 */
#ifndef IOQ_FD_PASS_H
#define IOQ_FD_PASS_H

#include <stddef.h>
#include "region.h"	/* IOQ_HIDDEN */

/* More room than any message of ours carries, so extras are seen, not lost. */
#define IOQ_FD_PASS_MAX 16

/*
 * recvmsg() one message into @buf: exactly @len bytes and exactly @want
 * descriptors (CLOEXEC) into @fdv, or nothing kept. Returns 0;
 * -ECONNRESET when the peer closed; -EPROTO for a short or long payload,
 * a truncated message or another number of descriptors; -errno from
 * recvmsg(). On error no descriptor stays open.
 */
IOQ_HIDDEN int ioq_recv_fds(int sock, void *buf, size_t len, int *fdv,
			    size_t want);

IOQ_HIDDEN void ioq_close_fds(const int *fdv, size_t n);

#endif
