// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the test-only dma_window=START-END device parameter
 * (device.h, hostd_dev_data; vbus-hostd(8)).
 *
 * A guest booted with swiotlb=force hands its devices nothing but bounce
 * buffers for data: the QEMU suites set the window to the guest's swiotlb
 * range and check that every data buffer the device was given lies inside
 * it (dma_in > 0, dma_out == 0). dev.c refuses (and logs) one outside: the
 * device treats it as a bad address. Nothing else uses it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "dma_window.h"

#define DMA_WINDOW_KEY "dma_window"

bool hostd_dma_window_key(const char *key)
{
	return !strcmp(key, DMA_WINDOW_KEY);
}

/* "START-END", each a C integer (0x... or decimal), START < END. */
static int window_parse(const char *s, __u64 *lo, __u64 *hi)
{
	char *end;

	errno = 0;
	*lo = strtoull(s, &end, 0);
	if (errno || end == s || *end != '-')
		return -EINVAL;
	s = end + 1;
	*hi = strtoull(s, &end, 0);
	if (errno || end == s || *end || *lo >= *hi)
		return -EINVAL;
	return 0;
}

int hostd_dma_window_setup(struct hostd_dma_window *w,
			   const struct hostd_params *p, const char **value)
{
	unsigned int i;

	memset(w, 0, sizeof(*w));
	*value = NULL;
	for (i = 0; p && i < p->count; i++)
		if (hostd_dma_window_key(p->v[i].key))
			*value = p->v[i].value;
	if (!*value)
		return 0;
	if (window_parse(*value, &w->lo, &w->hi))
		return -EINVAL;
	w->on = true;
	return 0;
}

bool hostd_dma_window_admits(struct hostd_dma_window *w, __u64 gpa, __u64 len)
{
	if (!w->on)
		return true;
	if (gpa >= w->lo && gpa < w->hi && len <= w->hi - gpa) {
		/* relaxed atomics: a queue thread counts, `ctl stats` reads */
		__atomic_fetch_add(&w->in, 1, __ATOMIC_RELAXED);
		return true;
	}
	__atomic_fetch_add(&w->out, 1, __ATOMIC_RELAXED);
	return false;
}
