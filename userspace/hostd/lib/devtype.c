// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the device-type registry, parameters and the stats emitter.
 */
#include <inttypes.h>
#include <string.h>
#include "hostd.h"

#define HOSTD_MAX_TYPES 32

/* Filled by constructors before main(); read-only afterwards. */
static const struct hostd_dev_type *types[HOSTD_MAX_TYPES];
static unsigned int ntypes;

void hostd_dev_type_register(const struct hostd_dev_type *type)
{
	unsigned int i;

	if (!type || !type->name || !type->create || !type->destroy) {
		hostd_log("device type %s: incomplete, not registered",
			  type && type->name ? type->name : "(null)");
		return;
	}
	for (i = 0; i < ntypes; i++) {
		if (!strcmp(types[i]->name, type->name)) {
			hostd_log("device type %s registered twice", type->name);
			return;
		}
	}
	if (ntypes == HOSTD_MAX_TYPES) {
		hostd_log("too many device types, %s not registered", type->name);
		return;
	}
	types[ntypes++] = type;
}

const struct hostd_dev_type *hostd_dev_type_find(const char *name)
{
	unsigned int i;

	for (i = 0; i < ntypes; i++)
		if (!strcmp(types[i]->name, name))
			return types[i];
	return NULL;
}

void hostd_dev_types_list(struct hostd_buf *b)
{
	unsigned int i;

	for (i = 0; i < ntypes; i++)
		hostd_buf_printf(b, "%s%s", i ? ", " : "", types[i]->name);
}

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

/*
 * Text: " key=value" appended to the current line. JSON: "key": value
 * members of the current object (the caller opened it).
 */
static void sep(struct hostd_stats_out *out)
{
	if (out->json)
		hostd_buf_printf(out->b, "%s", out->n ? ", " : "");
	else
		hostd_buf_printf(out->b, "%s", out->n ? " " : "");
	out->n++;
}

void hostd_stat_u64(struct hostd_stats_out *out, const char *key, __u64 v)
{
	sep(out);
	if (out->json) {
		hostd_buf_json_str(out->b, key);
		hostd_buf_printf(out->b, ": %llu", (unsigned long long)v);
	} else {
		hostd_buf_printf(out->b, "%s=%llu", key, (unsigned long long)v);
	}
}

void hostd_stat_str(struct hostd_stats_out *out, const char *key,
		    const char *v)
{
	sep(out);
	if (out->json) {
		hostd_buf_json_str(out->b, key);
		hostd_buf_printf(out->b, ": ");
		hostd_buf_json_str(out->b, v);
	} else {
		hostd_buf_printf(out->b, "%s=%s", key, v);
	}
}

/* Text: one table row; JSON: one object. */
void hostd_dev_stats(struct hostd_dev *d, struct hostd_stats_out *out)
{
	const char *state = d->faulted ? "faulted" : d->open ? "open" : "closed";
	struct hostd_buf *b = out->b;

	if (out->json) {
		hostd_buf_printf(b, "{\"id\": %u, \"type\": ", d->id);
		hostd_buf_json_str(b, d->type->name);
		hostd_buf_printf(b, ", \"state\": \"%s\", \"calls\": %llu, "
				 "\"descs\": %llu, \"bytes\": %llu, "
				 "\"notify_in\": %llu, \"notify_out\": %llu, "
				 "\"faults\": %llu, \"device\": {",
				 state, (unsigned long long)d->cnt.calls,
				 (unsigned long long)d->cnt.descs,
				 (unsigned long long)d->cnt.bytes,
				 (unsigned long long)d->cnt.notify_in,
				 (unsigned long long)d->cnt.notify_out,
				 (unsigned long long)d->cnt.faults);
		out->n = 0;
		if (d->type->stats && d->created)
			d->type->stats(d, out);
		hostd_buf_printf(b, "}}");
	} else {
		hostd_buf_printf(b, "%-10u %-18s %-8s %10llu %10llu %14llu %10llu %10llu %6llu  ",
				 d->id, d->type->name, state,
				 (unsigned long long)d->cnt.calls,
				 (unsigned long long)d->cnt.descs,
				 (unsigned long long)d->cnt.bytes,
				 (unsigned long long)d->cnt.notify_in,
				 (unsigned long long)d->cnt.notify_out,
				 (unsigned long long)d->cnt.faults);
		out->n = 0;
		if (d->type->stats && d->created)
			d->type->stats(d, out);
		hostd_buf_printf(b, "\n");
	}
}
