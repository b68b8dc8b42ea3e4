// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The consumer (south), as vbus-hostd's device queue (hostd_devq,
 * userspace/hostd/lib/devq.c) does it: claims a batch with
 * ioq_consume_begin(), hands it back with one ioq_consume_end() and one
 * ioq_signal() (--iter 1: the compatibility iterator instead). Drains
 * with notifications masked, then unmasks and re-checks the ring before
 * it sleeps: a message published between the last
 * drain and the unmask gets no notification (we were masked), so only the
 * re-check after the unmask finds it (the virtio-net/NAPI pattern; see
 * docs/design.md, "Signals: unmask, then look again"). shm_signal_enable()
 * has the full barrier that orders the unmask before the re-check's loads.
 */
#include <stdio.h>
#include <string.h>

#include "stress.h"
#include "hg.h"

struct south {
	const struct stress_cfg *cfg;
	struct ioq *q;
	struct ioq_iterator it;
	struct stress_shared *sh;
	struct stress_result *res;
	__u64 expect;		/* next sequence number we should see */
	unsigned long popped;
	struct stress_slot prev;	/* last payload seen, for STALE */
	int stay_masked;		/* NOWAKE: skip the unmask */
};

/* A private copy of one message: the checker never reads shared memory. */
struct view {
	__u64 cookie, ptr, len;
	__u32 pos;
	struct stress_slot slot;
	int have_slot;
};

static void check(struct south *s, const struct view *v)
{
	struct stress_result *res = s->res;
	__u32 len = (__u32)v->len, csum = (__u32)(v->len >> 32);

	if (v->cookie != s->expect) {
		if (v->cookie > s->expect)
			stress_fail(res, "lost: expected seq %llu, got %llu",
				    (unsigned long long)s->expect,
				    (unsigned long long)v->cookie);
		else
			stress_fail(res, "duplicate/reordered: expected seq %llu, got %llu",
				    (unsigned long long)s->expect,
				    (unsigned long long)v->cookie);
	}
	/* resync, so one fault is reported once and not for every message */
	if (v->cookie >= s->expect)
		s->expect = v->cookie + 1;

	if (!v->have_slot) {
		stress_fail(res, "seq %llu: bad payload pointer %#llx",
			    (unsigned long long)v->cookie,
			    (unsigned long long)v->ptr);
		return;
	}
	if (len < 1 || len > STRESS_SLOT_DATA) {
		stress_fail(res, "seq %llu: bad payload length %u",
			    (unsigned long long)v->cookie, len);
		return;
	}
	if (v->slot.seq != v->cookie) {
		stress_fail(res, "stale payload: seq %llu's buffer holds seq %llu",
			    (unsigned long long)v->cookie,
			    (unsigned long long)v->slot.seq);
		return;
	}
	if (stress_csum(v->cookie, v->slot.data, len) != csum)
		stress_fail(res, "checksum: seq %llu payload corrupted",
			    (unsigned long long)v->cookie);
}

/* Copy the descriptor under the iterator and its payload, bounds-checked. */
static void read_view(struct south *s, struct view *v,
		      const struct ioq_ring_desc *d, __u32 slot_pos)
{
	__u32 ring = s->cfg->ring;

	v->cookie = d->cookie;
	v->ptr = d->ptr;
	v->len = d->len;
	v->pos = slot_pos;
	/* the producer puts message at ring position p in payload slot p */
	v->have_slot = v->ptr == (__u64)(slot_pos & (ring - 1)) *
				 sizeof(struct stress_slot);
	if (v->have_slot)
		memcpy(&v->slot, &s->sh->slots[slot_pos & (ring - 1)],
		       sizeof(v->slot));
}

/* The deliberate faults: each one corrupts only what the checker sees. */
static void consume(struct south *s, const struct ioq_ring_desc *d,
		    __u32 pos)
{
	const struct stress_cfg *cfg = s->cfg;
	struct view v;
	int hit = cfg->inject && d->cookie == cfg->inject_at;

	read_view(s, &v, d, pos);
	if (hit && cfg->inject == STRESS_INJ_NOWAKE)
		s->stay_masked = 1;
	if (!hit || cfg->inject == STRESS_INJ_NOWAKE) {
		check(s, &v);
		s->prev = v.slot;
		return;
	}
	switch (cfg->inject) {
	case STRESS_INJ_DROP:		/* never looked at: "lost" */
		break;
	case STRESS_INJ_DUP:
		check(s, &v);
		check(s, &v);
		break;
	case STRESS_INJ_CSUM:
		v.slot.data[0] ^= 0x10;
		check(s, &v);
		break;
	case STRESS_INJ_STALE:
		/*
		 * The buffer as it was before the producer refilled it: the
		 * previous message's bytes (our private copy, so the fault
		 * itself is not a data race).
		 */
		v.slot = s->prev;
		check(s, &v);
		break;
	default:
		check(s, &v);
	}
}

/*
 * Consume everything published so far. The count is read first ([A1]) and
 * each descriptor's ownership after it (v5: [A4]), so a descriptor the
 * count includes must be ours (docs/ring.md).
 */
/* everything posted so far: valid's head published once, one signal */
static int drain_batch(struct south *s)
{
	__u32 pos;
	int n = ioq_consume_begin(s->q, s->cfg->ring, &pos), i, rc;

	if (n < 0) {
		stress_fail(s->res, "ioq_consume_begin: %d", n);
		return n;
	}
	for (i = 0; i < n; i++) {
		struct ioq_ring_desc *d = ioq_desc(s->q, pos + (__u32)i);
		struct stress_slot *slot;

		slot = &s->sh->slots[(pos + (__u32)i) & (s->cfg->ring - 1)];
		stress_hb_after(STRESS_HB_POST(slot));
		consume(s, d, pos + (__u32)i);
		d->len = ~d->len;
		stress_hb_before(STRESS_HB_DONE(slot));
		s->popped++;
	}
	if (!n)
		return 0;
	rc = ioq_consume_end(s->q, (unsigned int)n, 0);
	if (rc) {
		stress_fail(s->res, "ioq_consume_end: %d", rc);
		return rc;
	}
	rc = ioq_signal(s->q, 0);
	if (rc) {
		stress_fail(s->res, "ioq_signal: %d", rc);
		return rc;
	}
	return n;
}

static int drain(struct south *s)
{
	int n, i, rc;

	if (!s->cfg->iter)
		return drain_batch(s);
	n = ioq_count(s->q, ioq_idx_consume);

	if (n < 0) {
		stress_fail(s->res, "ioq_count(valid): %d", n);
		return n;
	}
	for (i = 0; i < n; i++) {
		struct ioq_ring_desc *d = s->it.desc;
		struct stress_slot *slot;

		if (!ioq_iter_owned(&s->it)) {
			stress_fail(s->res, "pos %u: counted but not south-owned",
				    s->it.pos);
			return -EPROTO;
		}
		slot = &s->sh->slots[s->it.pos & (s->cfg->ring - 1)];
		stress_hb_after(STRESS_HB_POST(slot));
		consume(s, d, s->it.pos);
		/* the completion the producer checks when it reaps */
		d->len = ~d->len;
		stress_hb_before(STRESS_HB_DONE(slot));
		rc = ioq_iter_pop(&s->it, 0);
		if (rc) {
			stress_fail(s->res, "ioq_iter_pop: %d", rc);
			return rc;
		}
		s->popped++;
	}
	/* one notification per drained batch, not per descriptor */
	if (n) {
		rc = ioq_signal(s->q, 0);
		if (rc) {
			stress_fail(s->res, "ioq_signal: %d", rc);
			return rc;
		}
	}
	return n;
}

static int has_work(void *arg)
{
	struct south *s = arg;
	__u32 pos;

	/* consume_begin reloads the cached tail when it says empty */
	if (!s->cfg->iter)
		return ioq_consume_begin(s->q, 1, &pos) != 0;
	return ioq_count(s->q, ioq_idx_consume) != 0;
}

int stress_south(const struct stress_cfg *cfg, struct ioq_channel *ch,
		 struct stress_shared *sh, int (*peer_alive)(void))
{
	struct south s = { .cfg = cfg, .sh = sh, .res = &sh->south };
	int rc;

	s.q = ioq_channel_ioq(ch);
	ioq_channel_set_notifier(ch, stress_count_notifier, s.res);
	rc = 0;
	if (cfg->iter) {
		rc = ioq_iter_init(s.q, &s.it, ioq_idx_consume, 0);
		if (!rc)
			rc = ioq_iter_seek(&s.it, ioq_seek_head, 0, 0);
	}
	if (rc)
		goto out;

	while (s.popped < cfg->n) {
		ioq_notify_disable(s.q, 0);
		rc = drain(&s);
		if (rc < 0)
			goto out;
		if (rc > 0)
			continue;
		/*
		 * NOWAKE leaves us masked: the producer's signals stop
		 * crossing and we sleep with work pending until the lost-
		 * wakeup check fires, which is the point. After that we
		 * behave again, so the run still ends.
		 */
		if (!s.stay_masked)
			ioq_notify_enable(s.q, 0);
		if (has_work(&s))
			continue;
		rc = stress_wait(cfg, ch, sh, s.res, has_work, &s, peer_alive);
		if (rc)
			goto out;
		if (s.res->lost_wakeups)
			s.stay_masked = 0;
	}
	ioq_notify_disable(s.q, 0);
	if (s.expect != cfg->n)
		stress_fail(s.res, "end: next expected seq %llu, sent %lu",
			    (unsigned long long)s.expect, cfg->n);
	rc = 0;
out:
	s.res->msgs = s.popped;
	ioq_channel_stats(ch, &s.res->st);
	if (rc)
		stress_abort(sh);
	return rc;
}
