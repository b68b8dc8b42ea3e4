// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The producer (north), as the guest drivers: posts batches with
 * ioq_post_begin()/ioq_post_end() and signals once per batch, reaps
 * completions with ioq_reap_begin()/ioq_reap_end() (--iter 1: the
 * compatibility iterator on ioq_idx_push and, IOQ_ITER_REAP, the inuse
 * index instead),
 * and sleeps only when it can neither post (ring full, or all posted) nor
 * reap. Notifications from south stay masked except while it sleeps, so a
 * consumer popping at full speed costs the producer nothing.
 *
 * --lookagain: a second north thread plays venet's NAPI poll that has just
 * completed (issue 20.1): it asks ioq_reap_poll() with the reaper's last
 * snapshot, over and over, while the reaper reaps and south completes on
 * the other threads. A look-again that wrote the reaper's state would
 * show as a completion out of order, a fault, or a TSan race.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "stress.h"
#include "hg.h"

struct north {
	const struct stress_cfg *cfg;
	struct ioq *q;
	struct ioq_iterator post, reap;
	struct stress_shared *sh;
	struct stress_result *res;
	unsigned long posted, reaped;
	__u64 *sent_len;	/* per slot: the len word we posted */
	/* --lookagain: the reaper publishes, the look-again thread reads */
	__u32 snap;
	int stop;
	unsigned long looks, hits;	/* the look-again thread's own */
};

static void *lookagain(void *arg)
{
	struct north *n = arg;

	while (!__atomic_load_n(&n->stop, __ATOMIC_ACQUIRE)) {
		__u32 snap = __atomic_load_n(&n->snap, __ATOMIC_ACQUIRE);

		n->looks++;
		n->hits += ioq_reap_poll(n->q, snap) != 0;
	}
	return NULL;
}

/* Fill the descriptor for message n->posted at ring position @pos. */
static void fill(struct north *n, struct ioq_ring_desc *d, __u32 pos)
{
	const struct stress_cfg *cfg = n->cfg;
	__u32 slot = pos & (cfg->ring - 1), len, csum;

	stress_payload_fill(&n->sh->slots[slot], n->posted, &len, &csum);
	d->cookie = n->posted;
	d->ptr = (__u64)slot * sizeof(struct stress_slot);
	d->len = (__u64)csum << 32 | len;
	n->sent_len[slot] = d->len;
	stress_hb_before(STRESS_HB_POST(&n->sh->slots[slot]));
}

/* claim @k slots, fill them, publish the tail once */
static int post_batch(struct north *n, unsigned long k)
{
	__u32 pos;
	unsigned long i;
	int got = ioq_post_begin(n->q, (unsigned int)k, &pos), rc;

	if (got < 0 || (unsigned long)got != k) {
		stress_fail(n->res, "ioq_post_begin: %d of %lu", got, k);
		return got < 0 ? got : -ENOSPC;
	}
	for (i = 0; i < k; i++) {
		fill(n, ioq_desc(n->q, pos + i), pos + (__u32)i);
		n->posted++;
	}
	rc = ioq_post_end(n->q, (unsigned int)k, 0);
	if (rc)
		stress_fail(n->res, "ioq_post_end: %d", rc);
	return rc;
}

static int post(struct north *n)
{
	const struct stress_cfg *cfg = n->cfg;
	int room = ioq_remain(n->q, ioq_idx_reap), i, rc;
	unsigned long k;

	if (room < 0) {
		stress_fail(n->res, "ioq_remain(inuse): %d", room);
		return room;
	}
	k = cfg->n - n->posted;
	if (k > cfg->batch)
		k = cfg->batch;
	if (k > (unsigned long)room)
		k = (unsigned long)room;

	if (!cfg->iter && k) {
		rc = post_batch(n, k);
		if (rc)
			return rc;
	}
	for (i = 0; cfg->iter && i < (int)k; i++) {
		fill(n, n->post.desc, n->post.pos);
		rc = ioq_iter_push(&n->post, 0);
		if (rc) {
			stress_fail(n->res, "ioq_iter_push: %d", rc);
			return rc;
		}
		n->posted++;
	}
	if (k) {
		rc = ioq_signal(n->q, 0);
		if (rc) {
			stress_fail(n->res, "ioq_signal: %d", rc);
			return rc;
		}
	}
	return (int)k;
}

/*
 * Completions to reap: from the inuse head up to valid's head (v6) or
 * while north-owned (v5). A slot we see back is already off the valid index
 * (v5: [R4] follows [R2] in the pop; docs/ring.md), so posting it again
 * cannot fail with -ENOSPC (post() fails the test if it does).
 */
static int reapable(void *arg)
{
	struct north *n = arg;
	__u32 pos;

	if (!n->cfg->iter)
		return ioq_reap_begin(n->q, 1, &pos) > 0;
	return ioq_iter_owned(&n->reap);
}

/* One completion at ring position @pos: in order, with the mark. */
static void check_done(struct north *n, const struct ioq_ring_desc *d,
		       __u32 pos)
{
	__u32 slot = pos & (n->cfg->ring - 1);

	stress_hb_after(STRESS_HB_DONE(&n->sh->slots[slot]));
	if (d->cookie != n->reaped)
		stress_fail(n->res, "reap: expected seq %lu, got %llu",
			    n->reaped, (unsigned long long)d->cookie);
	else if (d->len != ~n->sent_len[slot])
		stress_fail(n->res, "reap: seq %lu completion mark wrong",
			    n->reaped);
}

/* every completion there is, inuse's head published once */
static int reap_batch(struct north *n)
{
	__u32 pos;
	int k = ioq_reap_begin(n->q, n->cfg->ring, &pos), i, rc;

	if (k <= 0) {
		if (k < 0)
			stress_fail(n->res, "ioq_reap_begin: %d", k);
		return k;
	}
	for (i = 0; i < k; i++) {
		check_done(n, ioq_desc(n->q, pos + (__u32)i), pos + (__u32)i);
		n->reaped++;
	}
	rc = ioq_reap_end(n->q, (unsigned int)k, 0);
	if (rc) {
		stress_fail(n->res, "ioq_reap_end: %d", rc);
		return rc;
	}
	return k;
}

/* --iter: completions come back in order, each with the consumer's mark. */
static int reap_iter(struct north *n)
{
	int k = 0, rc;

	for (; ioq_iter_owned(&n->reap); k++) {
		check_done(n, n->reap.desc, n->reap.pos);
		rc = ioq_iter_pop(&n->reap, 0);
		if (rc) {
			stress_fail(n->res, "ioq_iter_pop(inuse): %d", rc);
			return rc;
		}
		n->reaped++;
	}
	return k;
}

static int reap(struct north *n)
{
	int k;

	if (!n->cfg->iter)
		k = reap_batch(n);
	else
		k = reap_iter(n);
	/* the snapshot a NAPI poll takes before napi_complete_done() */
	if (n->cfg->lookagain)
		__atomic_store_n(&n->snap, ioq_reap_snapshot(n->q),
				 __ATOMIC_RELEASE);
	return k;
}

int stress_north(const struct stress_cfg *cfg, struct ioq_channel *ch,
		 struct stress_shared *sh, int (*peer_alive)(void))
{
	struct north n = { .cfg = cfg, .sh = sh, .res = &sh->north };
	pthread_t looker;
	int rc, p, r, looking = 0;

	n.q = ioq_channel_ioq(ch);
	n.sent_len = calloc(cfg->ring, sizeof(*n.sent_len));
	if (!n.sent_len) {
		rc = -ENOMEM;
		goto out;
	}
	ioq_channel_set_notifier(ch, stress_count_notifier, n.res);
	rc = 0;
	if (cfg->iter) {
		rc = ioq_iter_init(n.q, &n.post, ioq_idx_push, 0);
		if (!rc)
			rc = ioq_iter_seek(&n.post, ioq_seek_tail, 0, 0);
		if (!rc)
			rc = ioq_iter_init(n.q, &n.reap, ioq_idx_reap,
					   IOQ_ITER_REAP);
		if (!rc)
			rc = ioq_iter_seek(&n.reap, ioq_seek_head, 0, 0);
	}
	if (rc) {
		stress_fail(n.res, "iterator setup: %d", rc);
		goto out;
	}
	if (cfg->lookagain) {
		n.snap = ioq_reap_snapshot(n.q);
		rc = -pthread_create(&looker, NULL, lookagain, &n);
		if (rc) {
			stress_fail(n.res, "look-again thread: %d", rc);
			goto out;
		}
		looking = 1;
	}

	while (n.reaped < cfg->n) {
		r = reap(&n);
		p = n.posted < cfg->n ? post(&n) : 0;
		if (r < 0 || p < 0) {
			rc = r < 0 ? r : p;
			goto out;
		}
		if (r || p)
			continue;
		/* stuck: unmask, re-check, and only then sleep */
		ioq_notify_enable(n.q, 0);
		if (!reapable(&n)) {
			rc = stress_wait(cfg, ch, sh, n.res, reapable, &n,
					 peer_alive);
			if (rc)
				goto out;
		}
		ioq_notify_disable(n.q, 0);
	}
	if (ioq_count(n.q, ioq_idx_consume) != 0 ||
	    ioq_count(n.q, ioq_idx_reap) != 0)
		stress_fail(n.res, "end: ring not empty (valid %d, inuse %d)",
			    ioq_count(n.q, ioq_idx_consume),
			    ioq_count(n.q, ioq_idx_reap));
	rc = 0;
out:
	if (looking) {
		__atomic_store_n(&n.stop, 1, __ATOMIC_RELEASE);
		pthread_join(looker, NULL);
		printf("  north look-again: %lu calls, %lu saw completions\n",
		       n.looks, n.hits);
		if (!n.looks)
			stress_fail(n.res, "the look-again thread never ran");
	}
	n.res->msgs = n.reaped;
	ioq_channel_stats(ch, &n.res->st);
	free(n.sent_len);
	if (rc)
		stress_abort(sh);
	return rc;
}
