/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: test-only fault injection, a host that misbehaves on purpose
 * (docs/fault-injection.md). Nothing here runs in normal operation: a
 * guest gets it only from hostd_fault_enable(), which vbus-hostd calls
 * only under --test-faults; without it the bus's hooks stay NULL and
 * `ctl fault` is refused.
 *
 * The verbs (hostd_fault_exec, from `vbus-hostd ctl fault NAME VERB ...`
 * and --test-fault), each on the guest's thread:
 *   phantoms N              N DEVADDs of type vbus-phantom (ids 900000..)
 *                           now and at every BUSREG ahead of the real
 *                           devices; 0: DEVDROP them and stop
 *   busreg-quiet on|off     at the next re-attach's BUSREG (host_epoch not
 *                           0: the guest had a host before; once) the eventq
 *                           pending is held 1, so its DEVADDs come without
 *                           an interrupt (the guest must look); the
 *                           interrupt comes at its next hypercall
 *   on-devshm ID OFF VALUE [storm]  the next DEVSHM of device ID gets
 *                           the u32 VALUE at byte OFF of its region,
 *                           written after the region was accepted, before
 *                           the answer (a ring's version or counters), and
 *                           its signal injected; with storm, then a storm
 *                           on the device (below) until it closes, and the
 *                           guest's next hypercall acted on 200 ms late,
 *                           the storm going on meanwhile
 *   complete ID SHM K       on a ring v6 region: tail and valid_head both
 *                           K on, so K slots are completed again
 *   poke ID SHM OFF VALUE [W]  write VALUE (W = 1, 2 or 4 bytes, default
 *                           4) at byte OFF of device ID's open region
 *                           with DEVSHM id SHM (counters, lengths,
 *                           statuses, the guest's own signal fields)
 *   peek ID SHM OFF         print the u32 there
 *   storm ID [enable]       every loop pass, for every signal of device
 *                           ID: dirty=1 held and a SHMSIGNAL posted even
 *                           while pending is set; with enable also store the
 *                           guest's own enabled=1. Ends by itself when
 *                           the device closes (the SHMCLOSE happens under
 *                           it), never writing a closed region; storm off
 *   shmclose ID             SHMCLOSE for device ID's signalled regions, the
 *                           host acting on them still (a storm goes on)
 *   hc-delay MS N           the next N hypercalls are acted on and answered
 *                           MS ms late (the guest's thread stalls: a stuck
 *                           host; a storm on goes on meanwhile)
 *   status                  what is armed and what was done
 */
#ifndef VBUS_HOSTD_FAULT_H
#define VBUS_HOSTD_FAULT_H

#include <stddef.h>
#include "buf.h"
#include "guest.h"

#define HOSTD_FAULT_PHANTOM_BASE	900000u
#define HOSTD_FAULT_PHANTOM_TYPE	"vbus-phantom"

/* Arm @g for fault injection (before its thread starts); 0 or -ENOMEM. */
int hostd_fault_enable(struct hostd_guest *g);
/* Undo hostd_fault_enable (after its thread stopped); no-op if never. */
void hostd_fault_disable(struct hostd_guest *g);
bool hostd_fault_enabled(const struct hostd_guest *g);
/*
 * One verb (@argv[0]) with its arguments, on @g's thread. 0 with a line
 * for the caller in @out, or -errno with the reason in @err.
 */
int hostd_fault_exec(struct hostd_guest *g, char **argv, unsigned int argc,
		     struct hostd_buf *out, char *err, size_t errlen);

#endif /* VBUS_HOSTD_FAULT_H */
