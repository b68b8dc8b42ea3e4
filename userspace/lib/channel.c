// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libioq channels: one IOQ ring in a shared region plus an eventfd per
 * direction (see <vbus/ioq_channel.h>).
 *
 * Signal transport. Each side's shm_signal is bound to the ring's embedded
 * signal descriptor; its inject op writes 1 to the peer's eventfd, and its
 * deferred notify is kicked by writing 1 to our own eventfd, so that
 * ioq_channel_wait() (the only place the notifier runs) picks it up from
 * the caller's loop. The eventfd is only a doorbell: what happened is in
 * the ring, and the shm-signal protocol (core/shm_signal.c) decides when a
 * doorbell is needed. So a doorbell that coalesces with an earlier one, or
 * one that arrives when there is nothing new, is harmless.
 *
 * The peer may be hostile (docs/libioq.md, "What a peer can and cannot do
 * to you"): it shares the eventfds' descriptions and maps the ring. So the
 * doorbells are rung and drained without ever blocking (doorbell.c), a
 * region must be sealed against shrinking (region.c), and one wait runs
 * one wakeup, at most SHM_SIGNAL_WAKEUP_BUDGET notifier runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>
#include <vbus/ioq_channel.h>
#include "doorbell.h"
#include "region.h"

struct ioq_channel {
	enum ioq_locality locale;
	struct ioq_channel_fds fds;	/* all owned by the channel */
	struct ioq_ring_head *head;	/* the mapping */
	size_t map_len;
	struct shm_signal signal;
	struct ioq ioq;
	struct ioq_notifier notifier;
	void (*fn)(struct ioq_channel *ch, void *arg);
	void *arg;
	unsigned long sleeps;
	unsigned int notified;	/* set by the notifier inside wait() */
};

#define channel_of(ptr, member) \
	((struct ioq_channel *)((char *)(ptr) - \
				offsetof(struct ioq_channel, member)))

/* The eventfd this side sleeps on / the one that wakes the peer. */
static int own_fd(const struct ioq_channel *ch)
{
	return ch->locale == ioq_locality_north ? ch->fds.kick_north_fd :
						  ch->fds.kick_south_fd;
}

static int peer_fd(const struct ioq_channel *ch)
{
	return ch->locale == ioq_locality_north ? ch->fds.kick_south_fd :
						  ch->fds.kick_north_fd;
}

static int channel_inject(struct shm_signal *s)
{
	return ioq_doorbell_ring(peer_fd(channel_of(s, signal)));
}

static const struct shm_signal_ops channel_signal_ops = {
	.inject = channel_inject,
	/* .fault: the default (rate-limited log) is what a channel wants */
};

static void channel_kick_self(void *arg)
{
	struct ioq_channel *ch = arg;
	int err = ioq_doorbell_ring(own_fd(ch));

	/*
	 * Still pending: the next ioq_channel_wait() runs it, it just may
	 * sleep first.
	 */
	if (err)
		vbus_log_fault("ioq channel: deferred kick failed (%d)\n",
			       err);
}

static void channel_notify(struct ioq_notifier *n)
{
	struct ioq_channel *ch = channel_of(n, notifier);

	ch->notified = 1;
	if (ch->fn)
		ch->fn(ch, ch->arg);
}

static struct ioq_channel *channel_alloc(enum ioq_locality locale)
{
	struct ioq_channel *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->locale = locale;
	ch->fds.shm_fd = -1;
	ch->fds.kick_south_fd = -1;
	ch->fds.kick_north_fd = -1;
	return ch;
}

static void channel_free(struct ioq_channel *ch)
{
	if (ch->head)
		munmap(ch->head, ch->map_len);
	if (ch->fds.shm_fd >= 0)
		close(ch->fds.shm_fd);
	if (ch->fds.kick_south_fd >= 0)
		close(ch->fds.kick_south_fd);
	if (ch->fds.kick_north_fd >= 0)
		close(ch->fds.kick_north_fd);
	free(ch);
}

/* Bind this side's signal and ioq to the mapped, checked ring. */
static int channel_bind(struct ioq_channel *ch, __u32 count, __u32 ver)
{
	int err;

	shm_signal_init(&ch->signal, (enum shm_signal_locality)ch->locale,
			&channel_signal_ops, &ch->head->signal);
	vbus_defer_set_kick(&ch->signal.deferred_notify, channel_kick_self,
			    ch);
	/* the ioq takes over the signal's initial reference */
	err = ioq_init_ver(&ch->ioq, NULL, ch->locale, ch->head, &ch->signal,
			   count, ver);
	if (err)
		return err;
	ch->notifier.signal = channel_notify;
	ch->ioq.notifier = &ch->notifier;
	ch->fds.count = count;
	return 0;
}

static int new_eventfd(void)
{
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int ioq_channel_create(struct ioq_channel **chp, __u32 count,
		       const char *path)
{
	return ioq_channel_create_ver(chp, count, path, IOQ_RING_VER);
}

int ioq_channel_create_ver(struct ioq_channel **chp, __u32 count,
			   const char *path, __u32 ver)
{
	struct ioq_channel *ch;
	int err;

	if (!chp)
		return -EINVAL;
	*chp = NULL;
	/* before anything is created on disk */
	if (!ioq_count_valid(count))
		return -EINVAL;

	ch = channel_alloc(ioq_locality_north);
	if (!ch)
		return -ENOMEM;

	err = ioq_region_create(path, ioq_region_size(count));
	if (err < 0)
		goto fail_nofile;
	ch->fds.shm_fd = err;

	err = ioq_region_map(ch->fds.shm_fd, (void **)&ch->head,
			     &ch->map_len);
	if (err)
		goto fail;
	err = ioq_ring_format_ver(ch->head, count, ver);
	if (err)
		goto fail;

	err = new_eventfd();
	if (err < 0)
		goto fail;
	ch->fds.kick_south_fd = err;
	err = new_eventfd();
	if (err < 0)
		goto fail;
	ch->fds.kick_north_fd = err;

	err = channel_bind(ch, count, ver);
	if (err)
		goto fail;
	*chp = ch;
	return 0;

fail:
	if (path)
		unlink(path);
fail_nofile:
	channel_free(ch);
	return err;
}

static int dup_fd(int fd)
{
	int nfd;

	if (fd < 0)
		return -EBADF;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	return nfd < 0 ? -errno : nfd;
}

int ioq_channel_attach(struct ioq_channel **chp, enum ioq_locality locale,
		       const struct ioq_channel_fds *fds)
{
	__u32 ver = 0;
	struct ioq_channel *ch;
	long n;
	int err;

	if (!chp || !fds || (locale != ioq_locality_north &&
			     locale != ioq_locality_south))
		return -EINVAL;
	*chp = NULL;

	ch = channel_alloc(locale);
	if (!ch)
		return -ENOMEM;

	if ((err = dup_fd(fds->shm_fd)) < 0)
		goto fail;
	ch->fds.shm_fd = err;
	if ((err = dup_fd(fds->kick_south_fd)) < 0)
		goto fail;
	ch->fds.kick_south_fd = err;
	if ((err = dup_fd(fds->kick_north_fd)) < 0)
		goto fail;
	ch->fds.kick_north_fd = err;
	if ((err = ioq_doorbell_check(ch->fds.kick_south_fd)) ||
	    (err = ioq_doorbell_check(ch->fds.kick_north_fd)))
		goto fail;
	/* before the first access: a region the peer can shrink is SIGBUS */
	err = ioq_region_check(ch->fds.shm_fd);
	if (err)
		goto fail;

	err = ioq_region_map(ch->fds.shm_fd, (void **)&ch->head,
			     &ch->map_len);
	if (err)
		goto fail;

	/*
	 * The ring is the peer's: check it against the size we mapped (not
	 * what the header claims) and use the count it returns from here on.
	 */
	n = ioq_ring_check_ver(ch->head, ch->map_len, fds->count, &ver);
	if (n < 0) {
		err = (int)n;
		goto fail;
	}

	err = channel_bind(ch, (__u32)n, ver);
	if (err)
		goto fail;
	*chp = ch;
	return 0;

fail:
	channel_free(ch);
	return err;
}

void ioq_channel_fds(const struct ioq_channel *ch,
		     struct ioq_channel_fds *fds)
{
	*fds = ch->fds;
}

struct ioq *ioq_channel_ioq(struct ioq_channel *ch)
{
	return &ch->ioq;
}

int ioq_channel_set_notifier(struct ioq_channel *ch,
			     void (*fn)(struct ioq_channel *ch, void *arg),
			     void *arg)
{
	if (!ch)
		return -EINVAL;
	ch->fn = fn;
	ch->arg = arg;
	return 0;
}

int ioq_channel_pollfd(const struct ioq_channel *ch)
{
	return own_fd(ch);
}

int ioq_channel_wait(struct ioq_channel *ch, int timeout_ms)
{
	struct pollfd pfd = { .fd = own_fd(ch), .events = POLLIN };
	int n;

	if (shm_signal_faulted(&ch->signal))
		return -EIO;

	n = poll(&pfd, 1, 0);
	if (n == 0 && timeout_ms != 0) {
		ch->sleeps++;
		n = poll(&pfd, 1, timeout_ms);
	}
	if (n < 0)
		return -errno;
	if (n == 0)
		return 0;
	if (pfd.revents & (POLLERR | POLLNVAL))
		return -EIO;

	/*
	 * Consume the doorbell before looking at shared memory: a doorbell
	 * that rings after this read is for updates the wakeup may not see,
	 * and it must stay readable for the next wait. Empty by now (another
	 * thread of ours, or the peer, read it first): the wakeup below is
	 * still right.
	 */
	n = ioq_doorbell_drain(pfd.fd);
	if (n < 0)
		return n;

	ch->notified = 0;
	/*
	 * One wakeup per wait, so at most SHM_SIGNAL_WAKEUP_BUDGET notifier
	 * runs (<vbus/shm_signal.h>). It is also all a deferred notify (an
	 * enable that found work, a wakeup out of budget) would run, so take
	 * that request instead of running it after: a wakeup that runs out
	 * again schedules it anew, and its kick rings our own eventfd for
	 * the next wait.
	 */
	vbus_defer_cancel(&ch->signal.deferred_notify);
	_shm_signal_wakeup(&ch->signal);

	if (shm_signal_faulted(&ch->signal))
		return -EIO;
	return ch->notified ? 1 : 0;
}

void ioq_channel_stats(const struct ioq_channel *ch,
		       struct ioq_channel_stats *st)
{
	st->injects = ch->signal.injects;
	st->wakeups = ch->signal.wakeups;
	st->sleeps = ch->sleeps;
}

void ioq_channel_destroy(struct ioq_channel *ch)
{
	if (!ch)
		return;
	vbus_defer_cancel(&ch->signal.deferred_notify);
	/* drops the ioq's reference, and with it the signal's */
	ioq_put(&ch->ioq);
	channel_free(ch);
}
