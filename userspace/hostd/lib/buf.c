// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* vbus-hostd: growable strings (see buf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "buf.h"

/* Room for @n more bytes and the NUL; false (and b->oom) on failure. */
static bool buf_grow(struct hostd_buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap * 2 : 256;
	char *s;

	while (cap - b->len <= n)
		cap *= 2;
	s = realloc(b->s, cap);
	if (!s) {
		b->oom = true;
		return false;
	}
	b->s = s;
	b->cap = cap;
	return true;
}

void hostd_buf_printf(struct hostd_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	while (!b->oom) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		if (!buf_grow(b, (size_t)n))
			return;
	}
}

void hostd_buf_json_str(struct hostd_buf *b, const char *s)
{
	hostd_buf_printf(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			hostd_buf_printf(b, "\\%c", c);
		else if (c < 0x20)
			hostd_buf_printf(b, "\\u%04x", c);
		else
			hostd_buf_printf(b, "%c", c);
	}
	hostd_buf_printf(b, "\"");
}

void hostd_buf_free(struct hostd_buf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
	b->oom = false;
}
