// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus_log_fault() for libioq: the userspace side of the platform
 * vocabulary (see <vbus/platform.h>).
 *
 * Faults are reported from the data path, and a peer that corrupts a ring
 * can make every operation fault: without a limit a misbehaving peer could
 * flood our stderr. So, like the kernel's pr_err_ratelimited(), at most
 * VBUS_LOG_BURST lines per VBUS_LOG_INTERVAL_NS, and a count of what was
 * dropped when the next window opens.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <vbus/platform.h>

#define VBUS_LOG_BURST		10
#define VBUS_LOG_INTERVAL_NS	1000000000ull

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long window_start;	/* under log_lock */
static unsigned int printed;		/* under log_lock */
static unsigned long suppressed;	/* under log_lock */

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull +
	       (unsigned long long)ts.tv_nsec;
}

void vbus_log_fault(const char *fmt, ...)
{
	unsigned long long now = now_ns();
	unsigned long dropped = 0;
	va_list ap;

	pthread_mutex_lock(&log_lock);
	if (!window_start || now - window_start >= VBUS_LOG_INTERVAL_NS) {
		window_start = now;
		printed = 0;
		dropped = suppressed;
		suppressed = 0;
	}
	if (printed >= VBUS_LOG_BURST) {
		suppressed++;
		pthread_mutex_unlock(&log_lock);
		return;
	}
	printed++;

	/* one window at a time writes, so lines do not interleave */
	if (dropped)
		fprintf(stderr, "vbus: %lu fault messages suppressed\n",
			dropped);
	va_start(ap, fmt);
	fputs("vbus: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&log_lock);
}
