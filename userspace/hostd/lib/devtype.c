// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* vbus-hostd: the device-type registry (see devtype.h). */
#include <stdio.h>
#include <string.h>
#include "devtype.h"
#include "log.h"

#define HOSTD_MAX_TYPES 32

/* Filled by constructors before main(); read-only afterwards. */
static const struct hostd_dev_type *types[HOSTD_MAX_TYPES];
static unsigned int ntypes;

static bool type_is(const struct hostd_dev_type *t, const char *name)
{
	return !strcmp(t->name, name) || (t->alias && !strcmp(t->alias, name));
}

static const struct hostd_dev_type *type_find(const char *name)
{
	unsigned int i;

	for (i = 0; i < ntypes; i++)
		if (type_is(types[i], name))
			return types[i];
	return NULL;
}

void hostd_dev_type_register(const struct hostd_dev_type *type)
{
	if (!type || !type->name || !type->create || !type->destroy) {
		hostd_log("device type %s: incomplete, not registered",
			  type && type->name ? type->name : "(null)");
		return;
	}
	if (type_find(type->name) || (type->alias && type_find(type->alias))) {
		hostd_log("device type %s registered twice", type->name);
		return;
	}
	if (ntypes == HOSTD_MAX_TYPES) {
		hostd_log("too many device types, %s not registered", type->name);
		return;
	}
	types[ntypes++] = type;
}

/* "venet (alias virtual-ethernet), vbus-test" */
static void hostd_dev_type_list(struct hostd_buf *b)
{
	unsigned int i;

	for (i = 0; i < ntypes; i++) {
		hostd_buf_printf(b, "%s%s", i ? ", " : "", types[i]->name);
		if (types[i]->alias)
			hostd_buf_printf(b, " (alias %s)", types[i]->alias);
	}
}

const struct hostd_dev_type *hostd_dev_type_lookup(const char *name,
						   char *err, size_t errlen)
{
	const struct hostd_dev_type *t = type_find(name);
	struct hostd_buf known = { 0 };

	if (t)
		return t;
	hostd_dev_type_list(&known);
	snprintf(err, errlen, "unknown device type '%s' (known: %s)", name,
		 known.s && !known.oom ? known.s : "none");
	hostd_buf_free(&known);
	return NULL;
}
