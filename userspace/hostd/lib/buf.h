/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* vbus-hostd: a growable string, for control-socket replies. */
#ifndef VBUS_HOSTD_BUF_H
#define VBUS_HOSTD_BUF_H

#include <stdbool.h>
#include <stddef.h>

struct hostd_buf {
	char *s;
	size_t len, cap;
	bool oom;	/* an allocation failed: the contents are cut short */
};

void hostd_buf_printf(struct hostd_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* @s as a JSON string literal, quotes included */
void hostd_buf_json_str(struct hostd_buf *b, const char *s);
void hostd_buf_free(struct hostd_buf *b);

#endif /* VBUS_HOSTD_BUF_H */
