/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: an event loop (epoll, level-triggered) with fd watches, a
 * deferred-work hook and calls from other threads. It knows nothing of
 * guests or devices: the owner (one per guest) gives it callbacks.
 *
 * A watch removed while the loop dispatches a batch is only marked dead
 * (an event for it may still sit in the batch) and freed after the batch.
 * The deferred hook runs after a batch whenever hostd_loop_defer() was
 * called since its last run; until then the loop does not sleep.
 * Soon work (hostd_loop_soon(): a device's kick) runs after the batch's
 * fds, once per queueing, without a system call of its own; while any
 * is queued the loop does not sleep either, and every pass still looks
 * at its fds first (epoll_wait with timeout 0): the fds that were ready
 * when work was queued are served before it runs.
 */
#ifndef VBUS_HOSTD_LOOP_H
#define VBUS_HOSTD_LOOP_H

#include <pthread.h>
#include <stdbool.h>
#include "list.h"

typedef void (*hostd_loop_fn)(void *arg, int fd, __u32 events);

struct hostd_loop_watch {
	struct hostd_list node;		/* in loop->watches */
	int fd;
	__u32 events;
	hostd_loop_fn fn;
	void *arg;
	bool dead;			/* removed during a batch */
};

struct hostd_loop_cmd;

/* Work queued to run once after the current (or next) batch. */
struct hostd_loop_soon {
	struct hostd_list node;		/* in loop->soon while queued */
	bool queued;
	void (*fn)(void *arg);
	void *arg;
};

struct hostd_loop {
	bool live;			/* between init and fini */
	int epfd;
	int wake_fd;			/* eventfd: commands, stop */
	struct hostd_list watches;
	unsigned int depth;		/* > 0 while a batch is dispatched */
	bool deferred;			/* hostd_loop_defer() since last run */
	void (*run_deferred)(void *arg);
	void *deferred_arg;
	struct hostd_list soon;		/* struct hostd_loop_soon, FIFO */

	pthread_t thread;
	bool thread_started;
	int stop;			/* __atomic */
	pthread_mutex_t cmd_lock;
	struct hostd_loop_cmd *cmds;	/* under cmd_lock, newest first */
};

int hostd_loop_init(struct hostd_loop *l);
void hostd_loop_fini(struct hostd_loop *l);
void hostd_loop_set_deferred(struct hostd_loop *l, void (*fn)(void *arg),
			     void *arg);

/* One watch per fd: -EEXIST for a second one. */
int hostd_loop_add(struct hostd_loop *l, int fd, __u32 events,
		   hostd_loop_fn fn, void *arg);
int hostd_loop_mod(struct hostd_loop *l, int fd, __u32 events);
void hostd_loop_del(struct hostd_loop *l, int fd);
/* The events @fd is watched for, or -1 (diagnostics, tests). */
long hostd_loop_events(struct hostd_loop *l, int fd);

/* Make the deferred hook run after the current (or next) batch. */
void hostd_loop_defer(struct hostd_loop *l);
/* The same, as a vbus_defer kick (vbus_defer_set_kick(d, this, loop)). */
void hostd_loop_defer_kick(void *loop);
bool hostd_loop_deferred(const struct hostd_loop *l);

/*
 * Run @s->fn(@s->arg) once, on the loop's thread, after the current (or
 * next) batch's fds. Queued already: nothing. Loop thread only.
 */
void hostd_loop_soon(struct hostd_loop *l, struct hostd_loop_soon *s);
/* Unqueue @s (it will not run). Loop thread only. */
void hostd_loop_soon_cancel(struct hostd_loop_soon *s);

/*
 * Anything besides the caller waiting on this loop: a ready fd (a
 * non-blocking epoll_wait: a system call), queued soon or deferred work,
 * a stop. For a device queue that spins inside its poll window
 * (devq.c): true means "end the spin, let the loop serve the others".
 */
bool hostd_loop_busy(struct hostd_loop *l);

/*
 * One pass: wait up to @timeout_ms, dispatch, run soon and deferred work.
 * The number of fd events dispatched and soon work run (0: idle), or
 * -errno.
 */
int hostd_loop_poll(struct hostd_loop *l, int timeout_ms);

/*
 * A thread that polls until hostd_loop_stop(), named @name (cut to 15
 * bytes; NULL: not named).
 */
int hostd_loop_start(struct hostd_loop *l, const char *name);
void hostd_loop_stop(struct hostd_loop *l);
/*
 * The loop whose thread (hostd_loop_start) is calling, or NULL on any
 * other thread (a caller polling a loop itself gets NULL too).
 */
struct hostd_loop *hostd_loop_current(void);
/* hostd_loop_stop() was called (from any thread; stays true). */
bool hostd_loop_stopping(const struct hostd_loop *l);
/* Run @fn on the loop's thread (inline when it has none) and wait. */
int hostd_loop_call(struct hostd_loop *l, int (*fn)(void *arg), void *arg);
/*
 * The same, with @fn's result in *@ret and 0; but if the loop has not
 * taken the call within @ms (it is busy, or stuck): -ETIMEDOUT, and @fn
 * never runs. Once taken, it is waited for. @ms 0: no limit. -ENOMEM.
 */
int hostd_loop_call_within(struct hostd_loop *l, int (*fn)(void *arg),
			   void *arg, unsigned int ms, int *ret);
/*
 * The same, but a call that started and has not returned within @ms is
 * left too (-EINPROGRESS; one not started: -ETIMEDOUT as above, @arg
 * stays the caller's): for work that can block (a device's open or
 * close on a file system that does not answer). Left while running,
 * @arg is the loop's: @release(@arg, @fn's result) runs on the loop's
 * thread when @fn returns. @ms 0 counts as 1.
 */
int hostd_loop_call_or_leave(struct hostd_loop *l, int (*fn)(void *arg),
			     void (*release)(void *arg, int ret), void *arg,
			     unsigned int ms, int *ret);

#endif /* VBUS_HOSTD_LOOP_H */
