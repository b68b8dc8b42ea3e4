// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* vbus-hostd: key/value emitter, JSON or text (see stat.h). */
#include <string.h>
#include "stat.h"

void hostd_stat_init(struct hostd_stats_out *out, struct hostd_buf *b,
		     bool json)
{
	memset(out, 0, sizeof(*out));
	out->b = b;
	out->json = json;
}

/* Text: an object starts a line of its own at the top and in a list. */
static bool line_level(const struct hostd_stats_out *out)
{
	return !out->depth || out->list[out->depth - 1];
}

static void line_end(struct hostd_stats_out *out)
{
	if (out->line_open)
		hostd_buf_printf(out->b, "\n");
	out->line_open = false;
}

/* JSON: the separator and "key": of a new member or element. */
static void json_member(struct hostd_stats_out *out, const char *key)
{
	if (out->depth && out->n[out->depth - 1]++)
		hostd_buf_printf(out->b, ", ");
	if (key) {
		hostd_buf_json_str(out->b, key);
		hostd_buf_printf(out->b, ": ");
	}
}

/* One level deeper; a nesting deeper than the table is flattened. */
static void push(struct hostd_stats_out *out, bool list)
{
	if (out->depth == HOSTD_STAT_DEPTH)
		return;
	out->n[out->depth] = 0;
	out->list[out->depth] = list;
	out->depth++;
}

void hostd_stat_begin(struct hostd_stats_out *out, const char *key)
{
	if (out->json) {
		json_member(out, key);
		hostd_buf_printf(out->b, "{");
	} else if (line_level(out)) {
		line_end(out);
	}
	push(out, false);
}

void hostd_stat_end(struct hostd_stats_out *out)
{
	if (out->depth)
		out->depth--;
	if (out->json)
		hostd_buf_printf(out->b, "}%s", out->depth ? "" : "\n");
	else if (line_level(out))
		line_end(out);
}

void hostd_stat_list(struct hostd_stats_out *out, const char *key)
{
	if (out->json) {
		json_member(out, key);
		hostd_buf_printf(out->b, "[");
	} else {
		line_end(out);
	}
	push(out, true);
}

void hostd_stat_list_end(struct hostd_stats_out *out)
{
	if (out->depth)
		out->depth--;
	if (out->json)
		hostd_buf_printf(out->b, "]");
}

/* Text: " key=" (the first word of a line without the space). */
static void text_key(struct hostd_stats_out *out, const char *key)
{
	hostd_buf_printf(out->b, "%s%s=", out->line_open ? " " : "", key);
	out->line_open = true;
}

void hostd_stat_u64(struct hostd_stats_out *out, const char *key, __u64 v)
{
	if (out->json)
		json_member(out, key);
	else
		text_key(out, key);
	hostd_buf_printf(out->b, "%llu", (unsigned long long)v);
}

void hostd_stat_str(struct hostd_stats_out *out, const char *key,
		    const char *v)
{
	if (out->json) {
		json_member(out, key);
		hostd_buf_json_str(out->b, v);
	} else {
		text_key(out, key);
		/* one word: a value with blanks (a reason) is quoted */
		if (!*v || strpbrk(v, " \t\"\\"))
			hostd_buf_json_str(out->b, v);
		else
			hostd_buf_printf(out->b, "%s", v);
	}
}
