// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* vbus-hostd: a device's key=value parameters (device.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "device.h"
#include "dma_window.h"

const char *hostd_param_get(const struct hostd_params *p, const char *key)
{
	unsigned int i;

	if (!p)
		return NULL;
	for (i = 0; i < p->count; i++)
		if (!strcmp(p->v[i].key, key))
			return p->v[i].value;
	return NULL;
}

/* "tap, mac, strict" (or "none") for the message */
static void known_list(const char *const *known, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (; known && *known && n < len; known++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
				      *known);
	if (!buf[0])
		snprintf(buf, len, "none");
}

int hostd_params_check(struct hostd_dev *dev, const struct hostd_params *p,
		       const char *const *known)
{
	char list[256];
	unsigned int i;

	for (i = 0; p && i < p->count; i++) {
		const char *const *k;

		/* the library's own keys, valid for every device */
		if (hostd_dma_window_key(p->v[i].key) ||
		    !strcmp(p->v[i].key, "threads"))
			continue;
		for (k = known; k && *k; k++)
			if (!strcmp(*k, p->v[i].key))
				break;
		if (k && *k)
			continue;
		known_list(known, list, sizeof(list));
		return hostd_dev_fail(dev, -EINVAL,
				      "unknown parameter '%s' (known: %s)",
				      p->v[i].key, list);
	}
	return 0;
}
