/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: the one emitter of `ctl list` and `ctl stats`. Callers
 * describe what they show once, as nested objects and lists of key/value
 * pairs; the format is the emitter's:
 *
 *   JSON  {"guest": "g1", ..., "devices": [{"id": 1, ..., "device": {...}}]}
 *   text  one line per top-level object and per list element, as
 *         "key=value" words; a nested object's members continue the line
 *         of the object that holds it:
 *           guest=g1 state=registered ... bus_faults=0
 *           id=1 type=venet state=open calls=12 ... backend=vb0 link=up
 */
#ifndef VBUS_HOSTD_STAT_H
#define VBUS_HOSTD_STAT_H

#include <stdbool.h>
#include "buf.h"
#include "device.h"

#define HOSTD_STAT_DEPTH 8

struct hostd_stats_out {
	struct hostd_buf *b;
	bool json;
	unsigned int depth;
	/* per level: members emitted so far; whether it is a list */
	unsigned int n[HOSTD_STAT_DEPTH];
	bool list[HOSTD_STAT_DEPTH];
	bool line_open;		/* text: a line has words and no newline yet */
};

void hostd_stat_init(struct hostd_stats_out *out, struct hostd_buf *b,
		     bool json);
/* An object: at the top (@key NULL), as a list element (NULL) or member. */
void hostd_stat_begin(struct hostd_stats_out *out, const char *key);
void hostd_stat_end(struct hostd_stats_out *out);
/* A list member (its elements are objects). */
void hostd_stat_list(struct hostd_stats_out *out, const char *key);
void hostd_stat_list_end(struct hostd_stats_out *out);
/* hostd_stat_u64 / hostd_stat_str: device.h */

#endif /* VBUS_HOSTD_STAT_H */
