// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the adaptive poll window of a device (device.h, struct
 * hostd_poll_window): the rule is vbus_poll_window_adapt() (core, shared
 * with libioq's vbus-ipc endpoints); here its counts. The device decides
 * what polling means (its rings, its backend's completions) and when it
 * slept.
 */
#include "device.h"

void hostd_poll_window_adapt(struct hostd_poll_window *w, __u64 gap_ns)
{
	__u64 ns = vbus_poll_window_adapt(w->ns, w->cap_ns, gap_ns);

	if (ns > w->ns)
		w->grows++;
	else if (ns < w->ns)
		w->shrinks++;
	w->ns = ns;
}

bool hostd_poll_window_open(const struct hostd_poll_window *w, __u64 last_ns)
{
	return w->ns && hostd_now_ns() - last_ns < w->ns;
}
