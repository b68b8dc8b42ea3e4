/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * libioq channels: one IOQ ring in shared memory between two processes (or
 * threads), with a shm-signal in each direction carried by eventfds.
 *
 * A channel is a region (memfd, or a file an unrelated process can map)
 * holding a struct ioq_ring_head and its descriptors, plus two eventfds:
 * "kick_south" (written by north to notify south) and "kick_north". Each
 * side owns one struct ioq_channel: its struct ioq (locale north or south),
 * its struct shm_signal whose inject op writes the peer's eventfd, and a
 * wait function that sleeps on its own eventfd and runs the wakeup.
 *
 * A dozen lines for a consumer:
 *
 *	struct ioq_channel *ch;
 *	ioq_channel_create(&ch, 256, NULL);              // north, memfd
 *	... fork(), or send ioq_channel_fds() over a unix socket ...
 *	ioq_channel_attach(&peer, ioq_locality_south, &fds);   // in the peer
 *	ioq_channel_set_notifier(peer, on_signal, arg);
 *	ioq_notify_enable(ioq_channel_ioq(peer), 0);
 *	for (;;) ioq_channel_wait(peer, -1);             // runs on_signal
 *
 * Every call returns 0 or -errno; nothing here aborts the process.
 */
#ifndef VBUS_IOQ_CHANNEL_H
#define VBUS_IOQ_CHANNEL_H

#include <vbus/ioq.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ioq_channel;

/* The file descriptors that make up a channel, for passing to the peer. */
struct ioq_channel_fds {
	int shm_fd;		/* the region: ring head + descriptors */
	int kick_south_fd;	/* eventfd: north -> south notifications */
	int kick_north_fd;	/* eventfd: south -> north notifications */
	__u32 count;		/* ring size both sides agree on */
};

/*
 * Create a channel (north side): a region sized for @count descriptors
 * (power of two), formatted, and two eventfds. @path NULL makes a memfd;
 * otherwise the file at @path is created (O_EXCL) and sized, so another
 * process (or ioq-dump) can map it by name.
 */
int ioq_channel_create(struct ioq_channel **ch, __u32 count,
		       const char *path);
/* The same with ring version @ver (5 or 6; ioq_channel_create() lays out 6). */
int ioq_channel_create_ver(struct ioq_channel **ch, __u32 count,
			   const char *path, __u32 ver);

/*
 * Attach to an existing channel as @locale, from fds (dup'ed: the caller
 * keeps its own). The south side validates the ring header (magic,
 * version, count, size of the region) before it uses it.
 */
int ioq_channel_attach(struct ioq_channel **ch, enum ioq_locality locale,
		       const struct ioq_channel_fds *fds);

/* The fds of @ch (still owned by @ch). */
void ioq_channel_fds(const struct ioq_channel *ch,
		     struct ioq_channel_fds *fds);

struct ioq *ioq_channel_ioq(struct ioq_channel *ch);

/* Called (from ioq_channel_wait) whenever the peer signalled us. */
int ioq_channel_set_notifier(struct ioq_channel *ch,
			     void (*fn)(struct ioq_channel *ch, void *arg),
			     void *arg);

/*
 * Sleep until the peer signals (or @timeout_ms passes; -1 forever), then
 * run the wakeup (the notifier runs inside) and any deferred notify.
 * Returns 1 if the notifier ran, 0 on timeout, -errno on error.
 */
int ioq_channel_wait(struct ioq_channel *ch, int timeout_ms);

/* The eventfd this side sleeps on, for callers with their own poll loop;
 * when it is readable call ioq_channel_wait(ch, 0). */
int ioq_channel_pollfd(const struct ioq_channel *ch);

/* Counters of this side. */
struct ioq_channel_stats {
	unsigned long injects;	/* notifications sent to the peer */
	unsigned long wakeups;	/* notifier runs */
	unsigned long sleeps;	/* times wait actually blocked */
};
void ioq_channel_stats(const struct ioq_channel *ch,
		       struct ioq_channel_stats *st);

/* Unmap and close; drops this side's references. */
void ioq_channel_destroy(struct ioq_channel *ch);

/*
 * Unix-socket helpers, to hand a channel to an unrelated process:
 * send the fds with SCM_RIGHTS over a connected socket / receive them.
 */
int ioq_channel_send_fds(int sock, const struct ioq_channel_fds *fds);
int ioq_channel_recv_fds(int sock, struct ioq_channel_fds *fds);

#ifdef __cplusplus
}
#endif

#endif /* VBUS_IOQ_CHANNEL_H */
