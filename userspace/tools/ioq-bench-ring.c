// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ioq-bench loops. Both sides follow the ring's usage protocol (core/ioq.c)
 * and really sleep on notifications; nobody busy-polls, so the figures
 * include the wakeup path a real driver pays.
 *
 *   throughput  north posts a batch, signals once, reaps; sleeps only when
 *               it can do neither. South drains with notifications masked,
 *               unmasks, re-checks, sleeps. With --spin-us (default 0:
 *               never) either side first polls the ring that long before
 *               it unmasks: a wakeup costs tens of microseconds, so a side
 *               that would be woken within that time is cheaper spinning,
 *               and at saturation it hardly ever sleeps (NAPI busy-poll
 *               and vhost's busyloop do the same) — which is why it is an
 *               option and not the default: it hides the path measured.
 *   ping-pong   one descriptor in flight; both sides keep notifications
 *               unmasked, so every message costs one doorbell each way.
 *   raw         the same ping-pong on a bare eventfd pair, the floor that
 *               the ring's protocol adds to.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "ioq-bench.h"

/* Sleep one slice; -1 when the run is over (failure or dead peer). */
static int wait_slice(struct bench_side *side)
{
	int rc = ioq_channel_wait(side->ch, 1000);

	if (rc < 0) {
		bench_fail(side->sh, rc);
		return -1;
	}
	if (rc == 0 && bench_peer_gone(side->sh))
		return -1;
	return 0;
}

/*
 * Poll @ready for up to sh->spin_ns before the caller unmasks and sleeps;
 * 1 as soon as it is true.
 */
static int spin_before_sleep(struct bench_shared *sh, int (*ready)(void *),
			     void *arg)
{
	__u64 end;
	unsigned int i = 0;

	if (!sh->spin_ns)
		return 0;
	end = bench_now_ns() + sh->spin_ns;
	for (;;) {
		if (ready(arg))
			return 1;
		bench_relax();
		if (!(++i & 63) && bench_now_ns() > end)
			return 0;
	}
}

struct north {
	struct ioq *q;
	struct ioq_iterator post, reap;
	unsigned long posted, reaped;
};

static int north_init(struct bench_side *side, struct north *n)
{
	int rc;

	n->q = ioq_channel_ioq(side->ch);
	n->posted = n->reaped = 0;
	rc = ioq_iter_init(n->q, &n->post, ioq_idx_push, 0);
	if (!rc)
		rc = ioq_iter_seek(&n->post, ioq_seek_tail, 0, 0);
	if (!rc)
		rc = ioq_iter_init(n->q, &n->reap, ioq_idx_reap,
				   IOQ_ITER_REAP);
	if (!rc)
		rc = ioq_iter_seek(&n->reap, ioq_seek_head, 0, 0);
	if (rc)
		bench_fail(side->sh, rc);
	return rc;
}

/*
 * Completions to reap: from the inuse head up to valid's head (v6; v5:
 * while north-owned). A reaped slot is off the valid index ([R2], and in
 * v5 [R4] after it; docs/ring.md), so reusing it never sees a full valid
 * index.
 */
static int reapable(struct north *n)
{
	return ioq_iter_owned(&n->reap);
}

static int reapable_fn(void *n)
{
	return reapable(n);
}

static int reap(struct bench_side *side, struct north *n)
{
	int k, rc;

	for (k = 0; ioq_iter_owned(&n->reap); k++) {
		rc = ioq_iter_pop(&n->reap, 0);
		if (rc) {
			bench_fail(side->sh, rc);
			return -1;
		}
		n->reaped++;
	}
	return k;
}

/* Post @k descriptors and ring the doorbell once. */
static int post(struct bench_side *side, struct north *n, unsigned long k)
{
	unsigned long i;
	int rc;

	for (i = 0; i < k; i++) {
		n->post.desc->cookie = n->posted;
		n->post.desc->len = 64;
		rc = ioq_iter_push(&n->post, 0);
		if (rc) {
			bench_fail(side->sh, rc);
			return -1;
		}
		n->posted++;
	}
	rc = ioq_signal(n->q, 0);
	if (rc)
		bench_fail(side->sh, rc);
	return rc ? -1 : 0;
}

void bench_tput_north(struct bench_side *side)
{
	struct bench_shared *sh = side->sh;
	struct north n;
	double t0;

	if (north_init(side, &n))
		return;
	bench_wait_ready(sh);
	t0 = bench_now();
	while (n.reaped < sh->n && !bench_failed(sh)) {
		unsigned long left = sh->n - n.posted, k;
		int room, r = reap(side, &n);

		if (r < 0)
			return;
		room = ioq_remain(n.q, ioq_idx_reap);
		k = left < sh->batch ? left : sh->batch;
		/* whole batches only: a partial one would cost extra signals */
		if (k && room >= (int)k) {
			if (post(side, &n, k))
				return;
			continue;
		}
		if (r || spin_before_sleep(sh, reapable_fn, &n))
			continue;
		ioq_notify_enable(n.q, 0);
		if (!reapable(&n) && wait_slice(side))
			return;
		ioq_notify_disable(n.q, 0);
	}
	sh->seconds = bench_now() - t0;
	ioq_channel_stats(side->ch, &sh->st[0]);
}

struct south {
	struct ioq *q;
	struct ioq_iterator it;
	unsigned long seen;
};

static int south_init(struct bench_side *side, struct south *s)
{
	int rc;

	s->q = ioq_channel_ioq(side->ch);
	s->seen = 0;
	rc = ioq_iter_init(s->q, &s->it, ioq_idx_consume, 0);
	if (!rc)
		rc = ioq_iter_seek(&s->it, ioq_seek_head, 0, 0);
	if (rc)
		bench_fail(side->sh, rc);
	return rc;
}

/* Consume what is published, check the order, one doorbell per batch. */
static int drain(struct bench_side *side, struct south *s)
{
	int n = ioq_count(s->q, ioq_idx_consume), i, rc;

	for (i = 0; i < n; i++) {
		if (!ioq_iter_owned(&s->it) ||
		    s->it.desc->cookie != s->seen) {
			bench_fail(side->sh, -EPROTO);
			return -1;
		}
		rc = ioq_iter_pop(&s->it, 0);
		if (rc) {
			bench_fail(side->sh, rc);
			return -1;
		}
		s->seen++;
	}
	if (n > 0 && (rc = ioq_signal(s->q, 0))) {
		bench_fail(side->sh, rc);
		return -1;
	}
	return n < 0 ? (bench_fail(side->sh, n), -1) : n;
}

static int has_work(void *s)
{
	return ioq_count(((struct south *)s)->q, ioq_idx_consume) != 0;
}

void bench_tput_south(struct bench_side *side)
{
	struct bench_shared *sh = side->sh;
	struct south s;
	int r;

	if (south_init(side, &s))
		return;
	bench_set_ready(sh);
	while (s.seen < sh->n && !bench_failed(sh)) {
		ioq_notify_disable(s.q, 0);
		r = drain(side, &s);
		if (r < 0)
			return;
		if (r || spin_before_sleep(sh, has_work, &s))
			continue;
		/* unmask, then re-check: the lost-wakeup-safe order */
		ioq_notify_enable(s.q, 0);
		if (ioq_count(s.q, ioq_idx_consume) == 0 && wait_slice(side))
			return;
	}
	ioq_notify_disable(s.q, 0);
	ioq_channel_stats(side->ch, &sh->st[1]);
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static void latency_stats(struct bench_shared *sh, __u64 *ns)
{
	qsort(ns, sh->n, sizeof(*ns), cmp_u64);
	sh->min_ns = ns[0];
	sh->median_ns = ns[sh->n / 2];
	sh->p99_ns = ns[sh->n * 99 / 100];
}

void bench_ping_north(struct bench_side *side)
{
	struct bench_shared *sh = side->sh;
	unsigned long i, total = sh->warmup + sh->n;
	__u64 *ns = calloc(sh->n, sizeof(*ns));
	struct north n;

	if (!ns || north_init(side, &n)) {
		bench_fail(sh, -ENOMEM);
		free(ns);
		return;
	}
	ioq_notify_enable(n.q, 0);
	bench_wait_ready(sh);
	for (i = 0; i < total && !bench_failed(sh); i++) {
		__u64 t0 = bench_now_ns();

		if (post(side, &n, 1))
			break;
		while (!reapable(&n))
			if (wait_slice(side))
				goto out;
		if (reap(side, &n) < 0)
			break;
		if (i >= sh->warmup)
			ns[i - sh->warmup] = bench_now_ns() - t0;
	}
out:
	if (!bench_failed(sh))
		latency_stats(sh, ns);
	free(ns);
	ioq_channel_stats(side->ch, &sh->st[0]);
}

void bench_ping_south(struct bench_side *side)
{
	struct bench_shared *sh = side->sh;
	unsigned long total = sh->warmup + sh->n;
	struct south s;

	if (south_init(side, &s))
		return;
	ioq_notify_enable(s.q, 0);
	bench_set_ready(sh);
	while (s.seen < total && !bench_failed(sh)) {
		int r = drain(side, &s);

		if (r < 0)
			return;
		if (!r && ioq_count(s.q, ioq_idx_consume) == 0 &&
		    wait_slice(side))
			return;
	}
	ioq_channel_stats(side->ch, &sh->st[1]);
}

/*
 * Wait with poll() then read(), as ioq_channel_wait() does, so the
 * baseline differs from the ring only by the ring's own protocol.
 */
static int raw_wait(struct bench_shared *sh, int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t v;

	for (;;) {
		int rc = poll(&p, 1, 1000);

		if (rc > 0)
			return read(fd, &v, sizeof(v)) == sizeof(v) ? 0 : -1;
		if (rc < 0 && errno != EINTR)
			return -1;
		if (bench_peer_gone(sh))
			return -1;
	}
}

static int raw_ring(int fd)
{
	uint64_t one = 1;

	return write(fd, &one, sizeof(one)) == sizeof(one) ? 0 : -1;
}

void bench_raw_north(struct bench_side *side)
{
	struct bench_shared *sh = side->sh;
	unsigned long i, total = sh->warmup + sh->n;
	__u64 *ns = calloc(sh->n, sizeof(*ns));

	if (!ns) {
		bench_fail(sh, -ENOMEM);
		return;
	}
	bench_wait_ready(sh);
	for (i = 0; i < total && !bench_failed(sh); i++) {
		__u64 t0 = bench_now_ns();

		if (raw_ring(sh->efd[0]) || raw_wait(sh, sh->efd[1])) {
			bench_fail(sh, -EIO);
			break;
		}
		if (i >= sh->warmup)
			ns[i - sh->warmup] = bench_now_ns() - t0;
	}
	if (!bench_failed(sh))
		latency_stats(sh, ns);
	free(ns);
}

void bench_raw_south(struct bench_side *side)
{
	struct bench_shared *sh = side->sh;
	unsigned long i, total = sh->warmup + sh->n;

	bench_set_ready(sh);
	for (i = 0; i < total && !bench_failed(sh); i++)
		if (raw_wait(sh, sh->efd[0]) || raw_ring(sh->efd[1])) {
			bench_fail(sh, -EIO);
			return;
		}
}
