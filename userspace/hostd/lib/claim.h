/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: host resources a device needs for itself (a tap, a disk
 * image), claimed by name across every guest of the daemon. A device
 * claims through hostd_dev_claim() (device.h); its claims go with it.
 * The registry is the library's one piece of state shared between guest
 * threads, hence its lock.
 */
#ifndef VBUS_HOSTD_CLAIM_H
#define VBUS_HOSTD_CLAIM_H

#include <stddef.h>

/*
 * Claim "@what @name" for @owner, described as @desc ("device 1 of guest
 * g1"). 0, or -EBUSY with the holder's description in @holder.
 */
int hostd_claim(const char *what, const char *name, const void *owner,
		const char *desc, char *holder, size_t holderlen);
/* Release every claim of @owner. */
void hostd_claim_release(const void *owner);

#endif /* VBUS_HOSTD_CLAIM_H */
