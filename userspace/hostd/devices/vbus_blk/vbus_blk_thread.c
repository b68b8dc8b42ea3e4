// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-blk: queue threads (threads=N, device.h "Queue threads"), for the
 * file backend.
 *
 * Each thread gets a shard: a struct vbus_blk of its own, copied from the
 * device's after create, with its own io_uring (and completion eventfd),
 * submit kick, doorbell-mask timer, poll state and counters, and the
 * queues q with q mod N == its index in its q[] (the others stay
 * unattached there). The queue code (vbus_blk_queue.c, _mask.c, _poll.c,
 * _file.c's fast path) runs unchanged on a shard: every "for each queue"
 * in it meets only its own thread's queues, and a tag's queue index finds
 * the shard's slot. So a shard shares nothing writable with another
 * thread:
 *  - what the device's struct holds for everyone (the backing file's fds,
 *    the limits, serial, params) is copied once and never written again
 *    while the threads run (the file's fds stay open until destroy, which
 *    runs after every shard is gone);
 *  - what the guest's thread changes (the session at open, the features
 *    and depth NEGOTIATE set, the capacity after a resize) is copied into
 *    a shard by a call on its thread (hostd_devthread_call orders it);
 *  - what the guest's thread reads (`ctl stats`) is copied out the same
 *    way.
 * The NBD backend keeps every queue on the guest's thread (one libnbd
 * handle per connection, shared by the queues): nbd= and image= refuse
 * threads= above 0.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include "vbus_blk_dev.h"

static void on_shard_kick(struct hostd_dev *dev, void *arg)
{
	(void)dev;
	vbus_blk_backend_submit(arg);
}

/* On the shard's thread: its fds go into that thread's loop. */
static int shard_up(void *arg)
{
	struct vbus_blk *s = arg;
	int ret = vbus_blk_file_ring_up(s);

	if (!ret)
		ret = hostd_kick_init(s->dev, &s->kick, on_shard_kick, s);
	if (!ret)
		ret = hostd_fd_add(s->dev, s->efd, EPOLLIN,
				   vbus_blk_completions, s);
	if (!ret)
		s->efd_watched = true;
	if (!ret)
		ret = vbus_blk_mask_init(s);
	return ret;
}

/* On the shard's thread (also after a failed shard_up). */
static int shard_down(void *arg)
{
	struct vbus_blk *s = arg;

	if (s->efd_watched)
		hostd_fd_del(s->dev, s->efd);
	s->efd_watched = false;
	if (s->kick.dev)
		hostd_kick_fini(&s->kick);
	vbus_blk_mask_fini(s);
	vbus_blk_file_ring_down(s);
	return 0;
}

/* A copy of @b's settings with nothing of its per-thread state. */
static struct vbus_blk *shard_new(struct vbus_blk *b, unsigned int i)
{
	struct vbus_blk *s = malloc(sizeof(*s));

	if (!s)
		return NULL;
	memcpy(s, b, sizeof(*s));
	memset(&s->ring, 0, sizeof(s->ring));
	memset(&s->kick, 0, sizeof(s->kick));
	memset(s->q, 0, sizeof(s->q));
	memset(&s->evq, 0, sizeof(s->evq));
	memset(&s->st, 0, sizeof(s->st));
	memset(s->shard, 0, sizeof(s->shard));
	s->ring_up = s->efd_watched = s->submit_pending = false;
	s->efd = s->mask_tfd = -1;
	s->mask_tfd_watched = s->mask_armed = s->mask_stalled = false;
	s->polling = s->poll_masked = s->open = false;
	s->inflight = s->stale = 0;
	s->cqes = s->cqes_at_arm = 0;
	s->image = NULL;
	s->be_priv = NULL;
	s->nshards = 0;
	s->main = b;
	s->thr = hostd_dev_thread(b->dev, i);
	return s;
}

int vbus_blk_threads_check(struct vbus_blk *b, const struct hostd_params *p)
{
	unsigned int n = hostd_dev_threads(b->dev);

	if (!n || b->be == &vbus_blk_file_ops)
		return 0;
	/* the guest's default (no threads= of its own): say how to opt out */
	return hostd_dev_fail(b->dev, -EINVAL,
			      "threads=%u%s applies to file= only (nbd= and image= serve every queue from the guest's thread)%s",
			      n, hostd_param_get(p, "threads") ? "" :
			      " (the guest's threads=)",
			      hostd_param_get(p, "threads") ? "" :
			      ": give this disk threads=0");
}

int vbus_blk_threads_create(struct vbus_blk *b)
{
	unsigned int n = hostd_dev_threads(b->dev), i;
	int ret;

	for (i = 0; i < n; i++) {
		struct vbus_blk *s = shard_new(b, i);

		if (!s)
			return -ENOMEM;
		b->shard[i] = s;
		b->nshards = i + 1;
		ret = hostd_devthread_call(s->thr, shard_up, s);
		if (ret < 0)
			return ret;
	}
	return 0;
}

void vbus_blk_threads_destroy(struct vbus_blk *b)
{
	unsigned int i;

	for (i = 0; i < b->nshards; i++) {
		hostd_devthread_call(b->shard[i]->thr, shard_down, b->shard[i]);
		free(b->shard[i]);
		b->shard[i] = NULL;
	}
	b->nshards = 0;
}

/* The guest's thread's session state, into the shard (on its thread). */
static void shard_sync(struct vbus_blk *s)
{
	const struct vbus_blk *b = s->main;

	s->open = b->open;
	s->negotiated = b->negotiated;
	s->session = b->session;
	s->features = b->features;
	s->nr_queues = b->nr_queues;
	s->depth = b->depth;
	s->capacity = b->capacity;
}

static int shard_sync_call(void *arg)
{
	shard_sync(arg);
	return 0;
}

/* open, NEGOTIATE, resize: what the guest's thread set, to every shard */
void vbus_blk_threads_sync(struct vbus_blk *b)
{
	unsigned int i;

	for (i = 0; i < b->nshards; i++)
		hostd_devthread_call(b->shard[i]->thr, shard_sync_call,
				     b->shard[i]);
}

struct attach_call {
	struct vbus_blk *s;
	struct hostd_shm *shm;
};

static int shard_attach(void *arg)
{
	struct attach_call *c = arg;

	shard_sync(c->s);
	return vbus_blk_queue_attach(c->s, c->shm);
}

int vbus_blk_threads_attach(struct vbus_blk *b, struct hostd_shm *shm)
{
	struct attach_call c;

	if (!b->negotiated || shm->id >= b->nr_queues)
		return -EINVAL;
	c.s = b->shard[shm->id % b->nshards];
	c.shm = shm;
	return hostd_devthread_call(c.s->thr, shard_attach, &c);
}

/* close, on the shard's thread: vbus_blk_close's steps for its queues */
static int shard_close(void *arg)
{
	struct vbus_blk *s = arg;
	unsigned int i;

	vbus_blk_queues_drain(s);
	hostd_kick_cancel(&s->kick);
	vbus_blk_mask_reset(s);
	for (i = 0; i < VBUS_BLK_MAX_QUEUES; i++)
		vbus_blk_queue_detach(&s->q[i]);
	s->open = s->negotiated = false;
	s->nr_queues = s->depth = 0;
	return 0;
}

void vbus_blk_threads_close(struct vbus_blk *b)
{
	unsigned int i;

	/* after it returns, nothing runs on the queues (device.h) */
	for (i = 0; i < b->nshards; i++)
		hostd_devthread_call(b->shard[i]->thr, shard_close, b->shard[i]);
}

struct stats_call {
	struct vbus_blk *s;
	struct vbus_blk_stats st;
	unsigned int inflight;
};

static int shard_stats(void *arg)
{
	struct stats_call *c = arg;

	c->st = c->s->st;
	c->inflight = c->s->inflight;
	return 0;
}

/* @sum += @add, counter by counter (the struct is all __u64) */
static void stats_add(struct vbus_blk_stats *sum,
		      const struct vbus_blk_stats *add)
{
	__u64 *d = (__u64 *)sum;
	const __u64 *a = (const __u64 *)add;
	size_t i;

	for (i = 0; i < sizeof(*sum) / sizeof(__u64); i++)
		d[i] += a[i];
}

/*
 * `ctl stats`: the device's counters plus every shard's, copied on its
 * thread (a thread busy for a second is skipped and counted). Each
 * shard's hand-backs also alone: which threads served the queues.
 */
void vbus_blk_threads_stats(struct vbus_blk *b, struct vbus_blk_stats *st,
			    unsigned int *inflight, struct hostd_stats_out *out)
{
	unsigned int i;
	__u64 busy = 0;

	for (i = 0; i < b->nshards; i++) {
		struct stats_call c = { .s = b->shard[i] };
		char key[32];
		int ret;

		if (hostd_devthread_call_within(c.s->thr, shard_stats, &c,
						1000, &ret) < 0) {
			busy++;
			continue;
		}
		stats_add(st, &c.st);
		*inflight += c.inflight;
		snprintf(key, sizeof(key), "thread%u_batches", i);
		hostd_stat_u64(out, key, c.st.batches);
	}
	if (b->nshards)
		hostd_stat_u64(out, "threads_busy", busy);
}
