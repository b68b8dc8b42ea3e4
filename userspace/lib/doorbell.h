/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Eventfd doorbells shared with a peer process (internal to the library).
 *
 * A doorbell's open file description is shared with the peer (SCM_RIGHTS
 * or fork pass descriptions, not copies), so the peer can clear
 * O_NONBLOCK on it, fill its counter, or read it empty, at any moment.
 * Linux gives no private description of an eventfd (opening
 * /proc/self/fd/N fails with ENXIO) and no per-call non-blocking write on
 * one (pwritev2's RWF_NOWAIT: EOPNOTSUPP), so these re-establish
 * O_NONBLOCK and ask poll() first, and never wait for the peer.
 */
#ifndef IOQ_DOORBELL_H
#define IOQ_DOORBELL_H

#include "region.h"	/* IOQ_HIDDEN */

/*
 * Ring @fd once without blocking. 0 also when the counter is full: the
 * reader has unread doorbells and wakes anyway, one more changes nothing
 * ("already signalled"). Else -errno.
 */
IOQ_HIDDEN int ioq_doorbell_ring(int fd);

/*
 * Consume whatever @fd holds without blocking: 0 (also when it was empty,
 * or the peer read it first), else -errno.
 */
IOQ_HIDDEN int ioq_doorbell_drain(int fd);

/*
 * @fd can be a doorbell: an eventfd (-EINVAL otherwise, -EBADF when
 * closed), and not EFD_SEMAPHORE (a read would take 1 from a counter the
 * peer can set to 2^64 - 2, and every wait would return at once, forever:
 * -EINVAL). What the kernel does not say (no /proc; no
 * "eventfd-semaphore" line in fdinfo before Linux 6.3) is accepted.
 */
IOQ_HIDDEN int ioq_doorbell_check(int fd);

#endif /* IOQ_DOORBELL_H */
