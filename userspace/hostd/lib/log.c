// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: logging and string buffers.
 *
 * Anything a guest can trigger goes through a per-guest rate limit, so a
 * guest that writes garbage in a loop cannot flood the log and hide the
 * other guests' messages.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "hostd.h"

#define HOSTD_LOG_BURST		10
#define HOSTD_LOG_INTERVAL_NS	1000000000ull

int hostd_verbose;

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull +
	       (unsigned long long)ts.tv_nsec;
}

static void vlog(const char *prefix, const char *fmt, va_list ap)
{
	size_t n = strlen(fmt);

	pthread_mutex_lock(&log_lock);
	fputs("vbus-hostd: ", stderr);
	if (prefix)
		fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	if (!n || fmt[n - 1] != '\n')
		fputc('\n', stderr);
	fflush(stderr);
	pthread_mutex_unlock(&log_lock);
}

void hostd_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(NULL, fmt, ap);
	va_end(ap);
}

void hostd_dbg(const char *fmt, ...)
{
	va_list ap;

	if (!hostd_verbose)
		return;
	va_start(ap, fmt);
	vlog(NULL, fmt, ap);
	va_end(ap);
}

/*
 * The caller serialises per limiter: a guest's limiter is only used from
 * that guest's thread.
 */
void hostd_vlog_rl(struct hostd_ratelimit *rl, const char *prefix,
		   const char *fmt, va_list ap)
{
	unsigned long long now = now_ns();

	if (!rl->window_ns || now - rl->window_ns >= HOSTD_LOG_INTERVAL_NS) {
		if (rl->suppressed)
			hostd_log("%s%lu messages suppressed", prefix ? prefix : "",
				  rl->suppressed);
		rl->window_ns = now;
		rl->printed = 0;
		rl->suppressed = 0;
	}
	if (rl->printed >= HOSTD_LOG_BURST) {
		rl->suppressed++;
		return;
	}
	rl->printed++;
	vlog(prefix, fmt, ap);
}

void hostd_glog(struct hostd_guest *g, const char *fmt, ...)
{
	char prefix[HOSTD_NAME_MAX + 16];
	va_list ap;

	snprintf(prefix, sizeof(prefix), "[%s] ", g->name);
	va_start(ap, fmt);
	hostd_vlog_rl(&g->rl, prefix, fmt, ap);
	va_end(ap);
}

void hostd_buf_printf(struct hostd_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
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
		{
			size_t cap = b->cap ? b->cap * 2 : 256;
			char *s;

			while (cap - b->len <= (size_t)n)
				cap *= 2;
			s = realloc(b->s, cap);
			if (!s) {
				b->oom = true;
				return;
			}
			b->s = s;
			b->cap = cap;
		}
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
