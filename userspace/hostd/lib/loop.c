// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the event loop (see loop.h).
 *
 * Commands from other threads (the control socket's) are the loop's only
 * cross-thread structure: a list under cmd_lock, announced on wake_fd. The
 * caller's struct hostd_loop_cmd lives on its stack until the loop marks
 * it done, so nothing is allocated and nothing can be lost.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include "eventfd.h"
#include "log.h"
#include "loop.h"

#define LOOP_BATCH 16

/* The loop the calling thread runs (loop_thread), or NULL: one per thread. */
static __thread struct hostd_loop *loop_current;

/*
 * A call handed to the loop's thread. Under cmd_lock: @started when the
 * loop takes it, @done with @ret when it returns. A caller that gave up
 * before @started sets @abandoned and leaves: the loop frees it unrun
 * (@arg stays the caller's). A caller with @release may also leave a
 * started call: the loop then hands @arg to @release when @fn returns,
 * and frees the call.
 */
struct hostd_loop_cmd {
	int (*fn)(void *arg);
	void (*release)(void *arg, int ret);
	void *arg;
	int ret;
	bool started, done, abandoned;
	pthread_cond_t cond;
	struct hostd_loop_cmd *next;
};

/* ---- watches ---------------------------------------------------------- */

static struct hostd_loop_watch *watch_find(struct hostd_loop *l, int fd)
{
	struct hostd_loop_watch *w;

	hostd_list_for_each_entry(w, pos, &l->watches, struct hostd_loop_watch,
				  node)
		if (w->fd == fd && !w->dead)
			return w;
	return NULL;
}

int hostd_loop_add(struct hostd_loop *l, int fd, __u32 events,
		   hostd_loop_fn fn, void *arg)
{
	struct epoll_event ev = { .events = events };
	struct hostd_loop_watch *w;

	if (fd < 0 || !fn)
		return -EINVAL;
	if (watch_find(l, fd))
		return -EEXIST;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = fd;
	w->events = events;
	w->fn = fn;
	w->arg = arg;
	ev.data.ptr = w;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int err = -errno;

		free(w);
		return err;
	}
	hostd_list_add_tail(&w->node, &l->watches);
	return 0;
}

int hostd_loop_mod(struct hostd_loop *l, int fd, __u32 events)
{
	struct hostd_loop_watch *w = watch_find(l, fd);
	struct epoll_event ev = { .events = events };

	if (!w)
		return -ENOENT;
	ev.data.ptr = w;
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	w->events = events;
	return 0;
}

void hostd_loop_del(struct hostd_loop *l, int fd)
{
	struct hostd_loop_watch *w = watch_find(l, fd);

	if (!w)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	if (l->depth) {
		/* an event for it may still sit in this batch */
		w->dead = true;
		return;
	}
	hostd_list_del(&w->node);
	free(w);
}

long hostd_loop_events(struct hostd_loop *l, int fd)
{
	struct hostd_loop_watch *w = watch_find(l, fd);

	return w ? (long)w->events : -1;
}

static void watch_reap(struct hostd_loop *l)
{
	struct hostd_loop_watch *w;

	hostd_list_for_each_entry(w, pos, &l->watches, struct hostd_loop_watch,
				  node) {
		if (w->dead) {
			hostd_list_del(&w->node);
			free(w);
		}
	}
}

/* ---- deferred work -------------------------------------------------------- */

void hostd_loop_set_deferred(struct hostd_loop *l, void (*fn)(void *arg),
			     void *arg)
{
	l->run_deferred = fn;
	l->deferred_arg = arg;
}

void hostd_loop_defer(struct hostd_loop *l)
{
	l->deferred = true;
}

void hostd_loop_defer_kick(void *loop)
{
	hostd_loop_defer(loop);
}

bool hostd_loop_deferred(const struct hostd_loop *l)
{
	return l->deferred;
}

/*
 * One run per batch: deferred work that runs out of budget defers itself
 * again, and that must not starve the fds of this loop.
 */
static void run_deferred(struct hostd_loop *l)
{
	if (l->deferred) {
		l->deferred = false;
		if (l->run_deferred)
			l->run_deferred(l->deferred_arg);
	}
	if (!l->depth)
		watch_reap(l);
}

/* ---- soon work ---------------------------------------------------------------- */

void hostd_loop_soon(struct hostd_loop *l, struct hostd_loop_soon *s)
{
	if (s->queued)
		return;
	s->queued = true;
	hostd_list_add_tail(&s->node, &l->soon);
}

void hostd_loop_soon_cancel(struct hostd_loop_soon *s)
{
	if (!s->queued)
		return;
	s->queued = false;
	hostd_list_del(&s->node);
}

/*
 * What was queued before this run, oldest first; what it queues again
 * runs in the next pass, after that pass's fds (a device that kicks
 * itself at every pass never holds the loop).
 */
static int run_soon(struct hostd_loop *l)
{
	struct hostd_list batch;
	int ran = 0;

	if (hostd_list_empty(&l->soon))
		return 0;
	/* splice the list into @batch */
	batch = l->soon;
	batch.next->prev = &batch;
	batch.prev->next = &batch;
	hostd_list_init(&l->soon);
	while (!hostd_list_empty(&batch)) {
		struct hostd_loop_soon *s = hostd_container_of(batch.next,
						struct hostd_loop_soon, node);

		hostd_list_del(&s->node);
		s->queued = false;
		s->fn(s->arg);
		ran++;
	}
	return ran;
}

bool hostd_loop_busy(struct hostd_loop *l)
{
	struct epoll_event ev;

	if (l->deferred || !hostd_list_empty(&l->soon) ||
	    hostd_loop_stopping(l))
		return true;
	/* level-triggered: what this reports stays ready for the loop */
	return epoll_wait(l->epfd, &ev, 1, 0) > 0;
}

/* ---- the loop --------------------------------------------------------------- */

int hostd_loop_poll(struct hostd_loop *l, int timeout_ms)
{
	struct epoll_event evs[LOOP_BATCH];
	int i, n;

	if (l->deferred || !hostd_list_empty(&l->soon))
		timeout_ms = 0;
	n = epoll_wait(l->epfd, evs, LOOP_BATCH, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	l->depth++;
	for (i = 0; i < n; i++) {
		struct hostd_loop_watch *w = evs[i].data.ptr;

		if (!w->dead)
			w->fn(w->arg, w->fd, evs[i].events);
	}
	l->depth--;
	n += run_soon(l);
	run_deferred(l);
	return n;
}

static void *loop_thread(void *arg)
{
	struct hostd_loop *l = arg;

	loop_current = l;
	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		int ret = hostd_loop_poll(l, 1000);

		if (ret < 0) {
			/*
			 * Never leave the loop: control commands wait for it.
			 * Not expected to happen; don't spin if it does.
			 */
			hostd_log("epoll: %s", strerror(-ret));
			usleep(100000);
		}
	}
	return NULL;
}

int hostd_loop_start(struct hostd_loop *l, const char *name)
{
	int ret = pthread_create(&l->thread, NULL, loop_thread, l);

	if (ret)
		return -ret;
	l->thread_started = true;
	/* best effort: top -H, /proc/PID/task/TID/comm and perf tell guests apart */
	if (name) {
		char comm[16];

		snprintf(comm, sizeof(comm), "%s", name);
		pthread_setname_np(l->thread, comm);
	}
	return 0;
}

void hostd_loop_stop(struct hostd_loop *l)
{
	/* also without a thread: a device's close then knows (stopping) */
	__atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
	if (!l->thread_started)
		return;
	hostd_eventfd_write(l->wake_fd);
	pthread_join(l->thread, NULL);
	l->thread_started = false;
}

struct hostd_loop *hostd_loop_current(void)
{
	return loop_current;
}

bool hostd_loop_stopping(const struct hostd_loop *l)
{
	return __atomic_load_n(&l->stop, __ATOMIC_ACQUIRE);
}

/* ---- calls from other threads ------------------------------------------------ */

static void cmd_free(struct hostd_loop_cmd *c)
{
	pthread_cond_destroy(&c->cond);
	free(c);
}


static void on_wake(void *arg, int fd, __u32 events)
{
	struct hostd_loop *l = arg;
	struct hostd_loop_cmd *list, *c, *next;

	(void)events;
	hostd_eventfd_drain(fd);
	pthread_mutex_lock(&l->cmd_lock);
	list = l->cmds;
	l->cmds = NULL;
	pthread_mutex_unlock(&l->cmd_lock);
	/* oldest first */
	for (c = list, list = NULL; c; c = next) {
		next = c->next;
		c->next = list;
		list = c;
	}
	for (c = list; c; c = next) {
		bool gone;
		int ret;

		next = c->next;
		pthread_mutex_lock(&l->cmd_lock);
		gone = c->abandoned;
		c->started = !gone;
		pthread_mutex_unlock(&l->cmd_lock);
		if (gone) {
			cmd_free(c);	/* @arg stayed the caller's */
			continue;
		}
		ret = c->fn(c->arg);
		pthread_mutex_lock(&l->cmd_lock);
		c->ret = ret;
		c->done = true;
		gone = c->abandoned;
		pthread_cond_signal(&c->cond);
		pthread_mutex_unlock(&l->cmd_lock);
		if (gone) {
			c->release(c->arg, ret);
			cmd_free(c);
		}
	}
}

/*
 * Until @c is done (true), or until @deadline (CLOCK_MONOTONIC) if it has
 * not started by then, or with a release not finished by then (false:
 * the loop frees @c). Under cmd_lock.
 */
static bool cmd_wait(struct hostd_loop *l, struct hostd_loop_cmd *c,
		     const struct timespec *deadline)
{
	while (!c->done) {
		if (!deadline) {
			pthread_cond_wait(&c->cond, &l->cmd_lock);
			continue;
		}
		if (pthread_cond_timedwait(&c->cond, &l->cmd_lock, deadline) ==
		    ETIMEDOUT && !c->done && (!c->started || c->release)) {
			c->abandoned = true;
			return false;
		}
		if (c->started && !c->release)
			deadline = NULL;	/* bounded work: it will end */
	}
	return true;
}

static int call(struct hostd_loop *l, int (*fn)(void *arg),
		void (*release)(void *arg, int ret), void *arg,
		unsigned int ms, int *ret)
{
	struct hostd_loop_cmd *c;
	pthread_condattr_t ca;
	struct timespec dl;
	bool ran, started;

	if (!l->thread_started || pthread_equal(pthread_self(), l->thread)) {
		*ret = fn(arg);
		return 0;
	}
	/*
	 * On the heap: a caller that gives up leaves it to the loop, which
	 * may still find it on its list (and then frees it without running).
	 */
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fn = fn;
	c->release = release;
	c->arg = arg;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += ms / 1000;
	dl.tv_nsec += (long)(ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&l->cmd_lock);
	c->next = l->cmds;
	l->cmds = c;
	pthread_mutex_unlock(&l->cmd_lock);
	hostd_eventfd_write(l->wake_fd);
	pthread_mutex_lock(&l->cmd_lock);
	ran = cmd_wait(l, c, ms ? &dl : NULL);
	started = c->started;
	if (ran)
		*ret = c->ret;
	pthread_mutex_unlock(&l->cmd_lock);
	if (!ran)	/* @c is the loop's to free now */
		return started ? -EINPROGRESS : -ETIMEDOUT;
	cmd_free(c);
	return 0;
}

int hostd_loop_call_within(struct hostd_loop *l, int (*fn)(void *arg),
			   void *arg, unsigned int ms, int *ret)
{
	return call(l, fn, NULL, arg, ms, ret);
}

int hostd_loop_call_or_leave(struct hostd_loop *l, int (*fn)(void *arg),
			     void (*release)(void *arg, int ret), void *arg,
			     unsigned int ms, int *ret)
{
	return call(l, fn, release, arg, ms ? ms : 1, ret);
}

int hostd_loop_call(struct hostd_loop *l, int (*fn)(void *arg), void *arg)
{
	int ret = 0;

	/* no limit: the loop never blocks (non-blocking fds, bounded work) */
	if (hostd_loop_call_within(l, fn, arg, 0, &ret) < 0)
		return -ENOMEM;
	return ret;
}

/* ---- lifetime ------------------------------------------------------------------ */

int hostd_loop_init(struct hostd_loop *l)
{
	int ret;

	memset(l, 0, sizeof(*l));
	hostd_list_init(&l->watches);
	hostd_list_init(&l->soon);
	pthread_mutex_init(&l->cmd_lock, NULL);
	l->live = true;
	l->wake_fd = -1;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		ret = -errno;
		goto out_fail;
	}
	l->wake_fd = hostd_eventfd_new();
	if (l->wake_fd < 0) {
		ret = l->wake_fd;
		goto out_fail;
	}
	ret = hostd_loop_add(l, l->wake_fd, EPOLLIN, on_wake, l);
	if (ret < 0)
		goto out_fail;
	return 0;

out_fail:
	hostd_loop_fini(l);
	return ret;
}

void hostd_loop_fini(struct hostd_loop *l)
{
	struct hostd_loop_watch *w;

	if (!l->live)
		return;
	hostd_loop_stop(l);
	/* calls given up on before the loop took them: nobody else frees them */
	while (l->cmds) {
		struct hostd_loop_cmd *c = l->cmds;

		l->cmds = c->next;
		if (c->abandoned)
			cmd_free(c);
	}
	hostd_list_for_each_entry(w, pos, &l->watches, struct hostd_loop_watch,
				  node) {
		hostd_list_del(&w->node);
		free(w);
	}
	if (l->wake_fd >= 0)
		close(l->wake_fd);
	if (l->epfd >= 0)
		close(l->epfd);
	l->wake_fd = l->epfd = -1;
	pthread_mutex_destroy(&l->cmd_lock);
	l->live = false;
}
