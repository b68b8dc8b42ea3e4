/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Shared by the libioq_peer.* tests: each is an outside program (only the
 * public <vbus/...> headers, linked to libioq.so like a consumer) that
 * forks and plays the hostile peer of a channel itself
 * (docs/libioq.md, "What a peer can and cannot do to you").
 */
#ifndef PEER_H
#define PEER_H

#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vbus/ioq_channel.h>

#define FAIL(...)							\
	do {								\
		fprintf(stderr, "FAIL: " __VA_ARGS__);			\
		fputc('\n', stderr);					\
		exit(1);						\
	} while (0)

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond))						\
			FAIL(__VA_ARGS__);				\
	} while (0)

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The peer's own mapping of a region: what it writes, we see. */
static inline void *peer_map(int shm_fd)
{
	struct stat st;
	void *p;

	CHECK(fstat(shm_fd, &st) == 0, "fstat: %s", strerror(errno));
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
		 MAP_SHARED, shm_fd, 0);
	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	return p;
}

/* The peer writes one 32-bit word of the region, from its own process. */
static inline void peer_write_u32(int shm_fd, size_t off, __u32 v)
{
	pid_t pid = fork();
	int st;

	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		char *p = peer_map(shm_fd);

		__atomic_store_n((__u32 *)(p + off), v, __ATOMIC_RELEASE);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "the peer process failed");
}

/* Kill and reap a peer process of ours. */
static inline void peer_end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

#endif /* PEER_H */
