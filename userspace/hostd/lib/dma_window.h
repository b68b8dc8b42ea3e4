/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: a device's test-only dma_window=START-END (dma_window.c):
 * where its data buffers must lie, and how many did.
 */
#ifndef VBUS_HOSTD_DMA_WINDOW_H
#define VBUS_HOSTD_DMA_WINDOW_H

#include <stdbool.h>
#include "device.h"

struct hostd_dma_window {
	bool on;
	__u64 lo, hi;	/* [lo, hi) */
	__u64 in, out;	/* data buffers inside, outside */
};

/* dma_window is a key of every device (hostd_params_check accepts it). */
bool hostd_dma_window_key(const char *key);
/*
 * From @p's dma_window (*@value: its text, or NULL without one): 0 (on
 * or off), or -EINVAL for a value that is not START-END with START < END.
 */
int hostd_dma_window_setup(struct hostd_dma_window *w,
			   const struct hostd_params *p, const char **value);
/* Is [gpa, gpa+len) inside (always, when off)? Counts it either way. */
bool hostd_dma_window_admits(struct hostd_dma_window *w, __u64 gpa, __u64 len);

#endif /* VBUS_HOSTD_DMA_WINDOW_H */
