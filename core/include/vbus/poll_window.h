/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The adaptive poll window, KVM's halt-polling rule, in one place: how
 * long a waiter keeps looking at its ring before it unmasks and sleeps.
 * vbus-hostd's devices (hostd_poll_window, device.h) and libioq's vbus-ipc
 * endpoints (ioq_ipc_wait) both adapt with it; each measures its own
 * clock and decides what polling means. Pure bookkeeping, userspace only.
 *
 * After a sleep, @gap_ns is the time from the start of the wait (the last
 * work) to the work that ended it: within @cap_ns a wider window would
 * have caught it, so the window doubles (opening at
 * VBUS_POLL_WINDOW_START_NS; a doorbell and a wakeup cost more than the
 * spin); past the cap none would, so it closes (a peer that answers later
 * than the cap gets no spinning on the core it may need). A gap the window
 * caught leaves it be.
 */
#ifndef VBUS_POLL_WINDOW_H
#define VBUS_POLL_WINDOW_H

#include <vbus/platform.h>

#define VBUS_POLL_WINDOW_START_NS 10000ULL

/* the window after a sleep that ended @gap_ns after the wait began */
static inline __u64 vbus_poll_window_adapt(__u64 ns, __u64 cap_ns, __u64 gap_ns)
{
	if (gap_ns <= ns)
		return ns;
	if (gap_ns > cap_ns)
		return 0;
	ns = ns ? ns * 2 : VBUS_POLL_WINDOW_START_NS;
	return ns > cap_ns ? cap_ns : ns;
}

#endif
