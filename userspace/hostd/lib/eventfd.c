// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: eventfd helpers, for the library's own fds (doorbells,
 * MSI-X vectors, the loop's wakeup) and for devices (device.h).
 */
#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "eventfd.h"

int hostd_eventfd_new(void)
{
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

void hostd_eventfd_write(int fd)
{
	__u64 one = 1;

	/*
	 * The fd is non-blocking (ours, and QEMU sets O_NONBLOCK on the
	 * shared file description too). EAGAIN means the counter is at its
	 * maximum: a wakeup is pending anyway, and counters coalesce.
	 */
	while (write(fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

bool hostd_eventfd_drain(int fd)
{
	__u64 v;
	ssize_t n;

	do {
		n = read(fd, &v, sizeof(v));
	} while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(v) && v;
}
