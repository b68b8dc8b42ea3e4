/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The fake guest's vbus-blk driver (fuzz_blk.c), for the targets with a
 * vbus-blk device (id 3) over a small temporary backing file and a real
 * io_uring: hostd (plain) and blkpoll (poll_us=).
 */
#ifndef VBUS_FUZZ_BLK_H
#define VBUS_FUZZ_BLK_H

#include "fuzz_guest.h"

/* Create the backing file; the device's spec, with @extra params added. */
const char *fuzz_blk_disk(const char *extra);
/* NEGOTIATE, GETCONFIG, a request on a ring, or let completions in. */
void fuzz_blk_op(struct fuzz_in *in);

#endif /* VBUS_FUZZ_BLK_H */
