// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Eventfd doorbells shared with a peer process: see doorbell.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "doorbell.h"

/*
 * Put O_NONBLOCK back if the peer took it off the shared description. It
 * can take it off again at any time; the poll() before each access is
 * what keeps a full (or empty) counter from blocking us in between.
 */
static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* 1: @fd is ready for @events now, 0: not, -errno. Never sleeps. */
static int ready_now(int fd, short events)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int n;

	do {
		n = poll(&pfd, 1, 0);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (pfd.revents & POLLNVAL)
		return -EBADF;
	if (pfd.revents & POLLERR)
		return -EIO;
	return n > 0 && (pfd.revents & events);
}

/*
 * One 8-byte write (POLLOUT) or read (POLLIN) of @fd, only when poll()
 * says it cannot block. Not ready, or EAGAIN because the peer got there
 * between the poll and the call: 0, nothing done.
 */
static int doorbell_io(int fd, short events)
{
	uint64_t v = 1;
	ssize_t n;
	int err;

	err = nonblock(fd);
	if (err)
		return err;
	err = ready_now(fd, events);
	if (err <= 0)
		return err;
	do {
		n = events == POLLOUT ? write(fd, &v, sizeof(v)) :
					read(fd, &v, sizeof(v));
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	return n == (ssize_t)sizeof(v) ? 0 : -EIO;
}

/* Not writable: the counter is full, the reader will wake anyway. */
int ioq_doorbell_ring(int fd)
{
	return doorbell_io(fd, POLLOUT);
}

/* Not readable: empty (the peer may read our doorbell too). */
int ioq_doorbell_drain(int fd)
{
	return doorbell_io(fd, POLLIN);
}

/*
 * Not an eventfd (a peer's mistake or malice): poll() would spin or a
 * write block. Without /proc we cannot tell and accept it.
 */
static int is_eventfd(int fd)
{
	char link[64], target[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return errno == EBADF ? -EBADF : 0;
	target[n] = '\0';
	return strcmp(target, "anon_inode:[eventfd]") ? -EINVAL : 0;
}

int ioq_doorbell_check(int fd)
{
	char path[64], line[128];
	FILE *f;
	int sem = 0, err = is_eventfd(fd);

	if (err)
		return err;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return 0;	/* no /proc: cannot tell, accept */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "eventfd-semaphore: %d", &sem) == 1)
			break;
	fclose(f);
	return sem ? -EINVAL : 0;
}
