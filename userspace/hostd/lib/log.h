/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: logging. Daemon-level messages (start-up, control) are never
 * rate-limited; anything a guest can provoke goes through that guest's
 * limiter, so a guest writing garbage in a loop cannot flood the log and
 * hide the other guests' messages.
 */
#ifndef VBUS_HOSTD_LOG_H
#define VBUS_HOSTD_LOG_H

#include <stdarg.h>
#include <stddef.h>

/* 0: quiet; 1 (-v): hostd_log_debug() lines too. */
extern int hostd_log_verbose;

void hostd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hostd_log_debug(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/*
 * A rate-limited log stream: every line starts with @prefix ("[g1] "); at
 * most a burst of lines per second, the rest counted and reported once
 * the window has passed. Used from one thread only (its guest's).
 */
struct hostd_log_limit {
	char prefix[64];
	unsigned long long window_ns;
	unsigned int printed;
	unsigned long suppressed;
};

void hostd_log_limit_init(struct hostd_log_limit *l, const char *name);
void hostd_log_limited(struct hostd_log_limit *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* prefix, then @sub (e.g. "device 3 (venet): "), then the message */
void hostd_log_vlimited(struct hostd_log_limit *l, const char *sub,
			const char *fmt, va_list ap);

/*
 * An error message for the caller: @fmt into @err (@errlen bytes), and
 * @ret back, so a check fails in one statement.
 */
int hostd_errf(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* CLOCK_MONOTONIC in ns: the limiter's clock, and devices' (device.h) */
unsigned long long hostd_now_ns(void);

#endif /* VBUS_HOSTD_LOG_H */
