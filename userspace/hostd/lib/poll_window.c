// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the adaptive poll window of a device (device.h, struct
 * hostd_poll_window). Pure bookkeeping; the device decides what polling
 * means (its rings, its backend's completions) and when it slept.
 */
#include "device.h"

void hostd_poll_window_adapt(struct hostd_poll_window *w, __u64 gap_ns)
{
	if (gap_ns <= w->ns)
		return;		/* the window caught it: leave it be */
	if (gap_ns > w->cap_ns) {
		if (w->ns)
			w->shrinks++;
		w->ns = 0;
		return;
	}
	w->ns = w->ns ? w->ns * 2 : HOSTD_POLL_WINDOW_START_NS;
	if (w->ns > w->cap_ns)
		w->ns = w->cap_ns;
	w->grows++;
}

bool hostd_poll_window_open(const struct hostd_poll_window *w, __u64 last_ns)
{
	return w->ns && hostd_now_ns() - last_ns < w->ns;
}
