// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* vbus-hostd: logging (see log.h). */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "log.h"

#define HOSTD_LOG_BURST		10
#define HOSTD_LOG_INTERVAL_NS	1000000000ull

int hostd_log_verbose;

/* one line at a time from every thread */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

unsigned long long hostd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull +
	       (unsigned long long)ts.tv_nsec;
}

static void vlog(const char *prefix, const char *sub, const char *fmt,
		 va_list ap)
{
	size_t n = strlen(fmt);

	pthread_mutex_lock(&log_lock);
	fputs("vbus-hostd: ", stderr);
	if (prefix)
		fputs(prefix, stderr);
	if (sub)
		fputs(sub, stderr);
	vfprintf(stderr, fmt, ap);
	if (!n || fmt[n - 1] != '\n')
		fputc('\n', stderr);
	fflush(stderr);
	pthread_mutex_unlock(&log_lock);
}

int hostd_errf(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

void hostd_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(NULL, NULL, fmt, ap);
	va_end(ap);
}

void hostd_log_debug(const char *fmt, ...)
{
	va_list ap;

	if (!hostd_log_verbose)
		return;
	va_start(ap, fmt);
	vlog(NULL, NULL, fmt, ap);
	va_end(ap);
}

void hostd_log_limit_init(struct hostd_log_limit *l, const char *name)
{
	memset(l, 0, sizeof(*l));
	snprintf(l->prefix, sizeof(l->prefix), "[%s] ", name);
}

/*
 * A guest's limiter is shared by its thread and its devices' queue
 * threads (threads=): its counters under limit_lock, the line printed
 * after it (vlog takes log_lock).
 */
static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;

void hostd_log_vlimited(struct hostd_log_limit *l, const char *sub,
			const char *fmt, va_list ap)
{
	unsigned long long now = hostd_now_ns();
	unsigned long suppressed = 0;
	bool print = true;

	pthread_mutex_lock(&limit_lock);
	if (!l->window_ns || now - l->window_ns >= HOSTD_LOG_INTERVAL_NS) {
		suppressed = l->suppressed;
		l->window_ns = now;
		l->printed = 0;
		l->suppressed = 0;
	}
	if (l->printed >= HOSTD_LOG_BURST) {
		l->suppressed++;
		print = false;
	} else {
		l->printed++;
	}
	pthread_mutex_unlock(&limit_lock);
	if (suppressed)
		hostd_log("%s%lu messages suppressed", l->prefix, suppressed);
	if (print)
		vlog(l->prefix, sub, fmt, ap);
}

void hostd_log_limited(struct hostd_log_limit *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hostd_log_vlimited(l, NULL, fmt, ap);
	va_end(ap);
}
