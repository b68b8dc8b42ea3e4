// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Cases for ring version 6 and for v5 <-> v6 interoperation, shared by
 * cmocka (tests/unit) and the kernel selftest. The fixture is the one of
 * cases_ioq.c (vt_doubles.h) laid out as v6; the iterator cases there pin
 * down v5. One behaviour per case.
 */
#include <vbus/shm_signal.h>
#include <vbus/ioq.h>
#define VT_RING_VER IOQ_RING_VER_V6
#include "vt.h"

#define N 8

static struct ioq_ring_head_v6 *h6(struct vt_ring *r)
{
	return (struct ioq_ring_head_v6 *)r->head;
}

/* post @n cookies from @first with the bulk call; what it returned */
static int bulk_post(struct vt_ring *r, __u64 first, unsigned int n)
{
	struct ioq_ring_desc d[N + 1];
	unsigned int i;

	memset(d, 0, sizeof(d));
	for (i = 0; i < n && i < N + 1; i++)
		d[i].cookie = first + i;
	return ioq_push_bulk(&r->north.q, d, n, 0);
}

/* consume up to N; 1 if the cookies were @first, @first+1 ... */
static int burst_in_order(int (*burst)(struct ioq *, struct ioq_ring_desc *,
				       unsigned int, int),
			  struct ioq *q, __u64 first, int *got)
{
	struct ioq_ring_desc d[N];
	int i;

	*got = burst(q, d, N, 0);
	for (i = 0; i < *got; i++)
		if (d[i].cookie != first + i)
			return 0;
	return 1;
}

/* the offset of the first byte that differs, -1 when none (no memcmp: vt.h) */
static long first_diff(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	size_t i;

	for (i = 0; i < n; i++)
		if (x[i] != y[i])
			return (long)i;
	return -1;
}

/* ---- layout, format, check ---- */

VT_CASE(v6_format_lays_out_lines)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_ring_head_v6 *h;

	VT_ASSERT(r);
	h = h6(r);
	VT_ASSERT_EQ(h->magic, IOQ_RING_MAGIC);
	VT_ASSERT_EQ(h->ver, 6);
	VT_ASSERT_EQ(h->count, N);
	VT_ASSERT_EQ(shm_signal_desc_check(&h->signal), 0);
	VT_ASSERT_EQ(h->tail, 0);
	VT_ASSERT_EQ(h->valid_head, 0);
	VT_ASSERT_EQ(h->inuse_head, 0);
	/* each counter on its own line; descriptors from a line boundary */
	VT_ASSERT_EQ((char *)&h->tail - (char *)h, IOQ_RING_LINE);
	VT_ASSERT_EQ((char *)&h->valid_head - (char *)h, 2 * IOQ_RING_LINE);
	VT_ASSERT_EQ((char *)&h->inuse_head - (char *)h, 3 * IOQ_RING_LINE);
	VT_ASSERT_EQ((char *)&h->ring[0] - (char *)h, 4 * IOQ_RING_LINE);
	VT_ASSERT(r->north.q.ring == &h->ring[0]);
	VT_ASSERT(r->south.q.ring == &h->ring[0]);
}

VT_CASE(v6_check_sizes_per_version)
{
	struct ioq_ring_head *h = vt_alloc(IOQ_HEAD_DESC_SIZE(N));
	__u32 ver = 0;

	VT_ASSERT(h);
	VT_ASSERT_EQ(ioq_ring_format_ver(h, N, 6), 0);
	VT_ASSERT_EQ(ioq_ring_check_ver(h, IOQ_RING_SIZE(6, N), N, &ver), N);
	VT_ASSERT_EQ(ver, 6);
	VT_ASSERT_EQ(ioq_ring_check(h, IOQ_RING_SIZE(6, N) - 1, N),
		     -EMSGSIZE);
	/* a v5 peer allocates exactly the v5 size: that is enough for v5 */
	VT_ASSERT_EQ(ioq_ring_format_ver(h, N, 5), 0);
	VT_ASSERT_EQ(ioq_ring_check_ver(h, IOQ_RING_SIZE(5, N), N, &ver), N);
	VT_ASSERT_EQ(ver, 5);
}

VT_CASE(v6_format_and_init_reject_unknown_versions)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq q;

	VT_ASSERT(r);
	VT_ASSERT_EQ(ioq_ring_format_ver(r->head, N, 4), -EINVAL);
	VT_ASSERT_EQ(ioq_ring_format_ver(r->head, N, 7), -EINVAL);
	VT_ASSERT_EQ(ioq_init_ver(&q, NULL, ioq_locality_south, r->head,
				  &r->south.side.sig, N, 7), -EPROTO);
	r->head->ver = 7;
	VT_ASSERT_EQ(ioq_ring_check(r->head, IOQ_HEAD_DESC_SIZE(N), N),
		     -EPROTO);
}

VT_CASE(v6_default_format_is_v6)
{
	struct ioq_ring_head *h = vt_alloc(IOQ_HEAD_DESC_SIZE(N));

	VT_ASSERT(h);
	VT_ASSERT_EQ(ioq_ring_format(h, N), 0);
	VT_ASSERT_EQ(h->ver, IOQ_RING_VER_V6);
	VT_ASSERT_EQ(IOQ_RING_VER, IOQ_RING_VER_V6);
}

/* ---- the three roles through the iterators ---- */

VT_CASE(v6_post_consume_reap_in_order_across_laps)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c = ~0ull;
	int i;

	VT_ASSERT(r);
	for (i = 0; i < 3 * N; i++) {
		VT_ASSERT_EQ(vt_post(r, i, 0), 0);
		VT_ASSERT_EQ(ioq_count(&r->south.q, ioq_idx_consume), 1);
		VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
		VT_ASSERT_EQ(c, i);
		VT_ASSERT_EQ(ioq_count(&r->north.q, ioq_idx_reap), 1);
		VT_ASSERT_EQ(vt_reap(r, &c), 0);
		VT_ASSERT_EQ(c, i);
	}
	VT_ASSERT_EQ(h6(r)->tail, 3 * N);
	VT_ASSERT_EQ(h6(r)->valid_head, 3 * N);
	VT_ASSERT_EQ(h6(r)->inuse_head, 3 * N);
}

VT_CASE(v6_writes_no_ownership_bytes)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c;
	int i;

	VT_ASSERT(r);
	for (i = 0; i < N; i++)
		VT_ASSERT_EQ(vt_post(r, i, 0), 0);
	for (i = 0; i < N; i++)
		VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	/* the consumer never wrote a descriptor line */
	for (i = 0; i < N; i++)
		VT_ASSERT_EQ(h6(r)->ring[i].sown, 0);
}

VT_CASE(v6_push_full_until_reaped)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c;
	int i;

	VT_ASSERT(r);
	for (i = 0; i < N; i++)
		VT_ASSERT_EQ(vt_post(r, i, 0), 0);
	VT_ASSERT_EQ(vt_post(r, N, 0), -ENOSPC);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	/* consumed is not reaped: the slot still holds a completion */
	VT_ASSERT_EQ(vt_post(r, N, 0), -ENOSPC);
	VT_ASSERT_EQ(vt_reap(r, &c), 0);
	VT_ASSERT_EQ(vt_post(r, N, 0), 0);
	VT_ASSERT_EQ(h6(r)->tail, N + 1);
}

VT_CASE(v6_pop_errors_say_why)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c = 0;

	VT_ASSERT(r);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), -ENOENT);
	VT_ASSERT_EQ(vt_reap(r, &c), -ENOENT);
	VT_ASSERT_EQ(vt_post(r, 1, 0), 0);
	/* posted, not consumed: the reaper's slot is not its yet */
	VT_ASSERT_EQ(vt_reap(r, &c), -EINVAL);
	VT_ASSERT_EQ(h6(r)->inuse_head, 0);
}

VT_CASE(v6_owned_follows_the_windows)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator s, n;
	__u64 c;

	VT_ASSERT(r);
	VT_ASSERT_EQ(ioq_iter_init(&r->south.q, &s, ioq_idx_consume, 0), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&s, ioq_seek_head, 0, 0), 0);
	VT_ASSERT_EQ(ioq_iter_init(&r->north.q, &n, ioq_idx_reap,
				   IOQ_ITER_REAP), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&n, ioq_seek_head, 0, 0), 0);
	VT_ASSERT_EQ(ioq_iter_owned(&s), 0);
	VT_ASSERT_EQ(ioq_iter_owned(&n), 0);
	VT_ASSERT_EQ(vt_post(r, 5, 0), 0);
	/* the consumer's cached tail said empty: owned() reloads it */
	VT_ASSERT_EQ(ioq_iter_owned(&s), 1);
	VT_ASSERT_EQ(ioq_iter_owned(&n), 0);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	VT_ASSERT_EQ(ioq_iter_owned(&n), 1);
	/* one past the window is nobody's */
	VT_ASSERT_EQ(ioq_iter_seek(&n, ioq_seek_next, 0, 0), 0);
	VT_ASSERT_EQ(ioq_iter_owned(&n), 0);
}

VT_CASE(v6_roles_are_enforced)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;
	__u32 pos;

	VT_ASSERT(r);
	/* south does not push, north does not consume */
	VT_ASSERT_EQ(ioq_iter_init(&r->south.q, &it, ioq_idx_push, 0), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_tail, 0, 0), 0);
	VT_ASSERT_EQ(ioq_iter_push(&it, 0), -EINVAL);
	VT_ASSERT_EQ(ioq_post_begin(&r->south.q, 1, &pos), -EINVAL);
	VT_ASSERT_EQ(ioq_consume_begin(&r->north.q, 1, &pos), -EINVAL);
	VT_ASSERT_EQ(ioq_reap_begin(&r->south.q, 1, &pos), -EINVAL);
	VT_ASSERT_EQ(h6(r)->tail, 0);
}

VT_CASE(v6_south_attaches_after_posts)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq q;
	__u64 c = 0;
	__u32 pos;

	VT_ASSERT(r);
	VT_ASSERT_EQ(bulk_post(r, 0, 3), 3);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	/* a second south context (a restarted host) starts at the counters */
	shm_signal_get(&r->south.side.sig);
	VT_ASSERT_EQ(ioq_init_ver(&q, NULL, ioq_locality_south, r->head,
				  &r->south.side.sig, N, 6), 0);
	VT_ASSERT_EQ(ioq_consume_begin(&q, N, &pos), 2);
	VT_ASSERT_EQ(pos, 1);
	r->south.side.sig.notifier = &r->south.q.shm_notifier;
	shm_signal_put(&r->south.side.sig);
}

/* ---- peer-written counters are checked whenever they are loaded ---- */

VT_CASE(v6_tail_out_of_range_faults)
{
	struct vt_ring *r = vt_ring_new(N);
	__u32 pos;

	VT_ASSERT(r);
	h6(r)->tail = N + 1;	/* valid_head 0: more than N apart */
	VT_ASSERT_EQ(ioq_consume_begin(&r->south.q, 1, &pos), -EIO);
	VT_ASSERT_EQ(shm_signal_faulted(&r->south.side.sig), 1);
}

VT_CASE(v6_tail_behind_head_faults)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c;
	__u32 pos;

	VT_ASSERT(r);
	VT_ASSERT_EQ(bulk_post(r, 0, 2), 2);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	h6(r)->tail = 1;	/* moved back behind what was consumed */
	VT_ASSERT_EQ(ioq_consume_begin(&r->south.q, 1, &pos), -EIO);
	VT_ASSERT_EQ(shm_signal_faulted(&r->south.side.sig), 1);
}

VT_CASE(v6_valid_head_past_tail_faults)
{
	struct vt_ring *r = vt_ring_new(N);
	__u32 pos;

	VT_ASSERT(r);
	VT_ASSERT_EQ(bulk_post(r, 0, 2), 2);
	h6(r)->valid_head = 3;	/* "consumed" one that was never posted */
	VT_ASSERT_EQ(ioq_reap_begin(&r->north.q, 1, &pos), -EIO);
	VT_ASSERT_EQ(shm_signal_faulted(&r->north.side.sig), 1);
}

/*
 * North's own counters are never read back (issue 20.5). The peer claims
 * north reaped everything (inuse_head = tail: a consistent value): the
 * pusher still sees the ring full by its reaper's shadow, and the
 * reaper's next publish finds the rewrite and faults.
 */
VT_CASE(v6_peer_written_inuse_head_gives_no_room)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c;
	__u32 pos;

	VT_ASSERT(r);
	VT_ASSERT_EQ(bulk_post(r, 0, N), N);
	h6(r)->inuse_head = N;
	VT_ASSERT_EQ(ioq_post_begin(&r->north.q, 1, &pos), 0);
	VT_ASSERT_EQ(vt_post(r, N, 0), -ENOSPC);
	VT_ASSERT_EQ(h6(r)->tail, N);
	VT_ASSERT_EQ(ioq_count(&r->north.q, ioq_idx_reap), N);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	VT_ASSERT_EQ(vt_reap(r, &c), -EIO);
	VT_ASSERT_EQ(shm_signal_faulted(&r->north.side.sig), 1);
}

/* A rewound tail does not shrink what north counts as posted. */
VT_CASE(v6_peer_written_tail_does_not_change_north_count)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c;

	VT_ASSERT(r);
	VT_ASSERT_EQ(bulk_post(r, 0, 3), 3);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	h6(r)->tail = 2;	/* = valid_head: consistent, and a lie */
	VT_ASSERT_EQ(ioq_count(&r->north.q, ioq_idx_reap), 3);
	VT_ASSERT_EQ(ioq_count(&r->north.q, ioq_idx_consume), 1);
}

/*
 * The peer moves north's tail and valid_head past what north posted:
 * the reaper bounds valid_head by its own tail and faults instead of
 * handing out slots that were never posted.
 */
VT_CASE(v6_peer_written_tail_cannot_widen_reap)
{
	struct vt_ring *r = vt_ring_new(N);
	__u32 pos = 0;

	VT_ASSERT(r);
	VT_ASSERT_EQ(bulk_post(r, 0, 3), 3);
	h6(r)->tail = 5;
	h6(r)->valid_head = 5;
	VT_ASSERT_EQ(ioq_reap_begin(&r->north.q, N, &pos), -EIO);
	VT_ASSERT_EQ(shm_signal_faulted(&r->north.side.sig), 1);
}

/* Bound to a ring whose own counters cannot be right: faulted at once. */
VT_CASE(v6_north_binds_impossible_counters_faulted)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq *q = vt_alloc(sizeof(*q));
	__u32 pos;

	VT_ASSERT(r && q);
	h6(r)->tail = N + 1;	/* inuse_head 0 */
	VT_ASSERT_EQ(ioq_init_ver(q, NULL, ioq_locality_north, r->head,
				  &r->north.side.sig, N, IOQ_RING_VER_V6), 0);
	VT_ASSERT_EQ(shm_signal_faulted(&r->north.side.sig), 1);
	VT_ASSERT_EQ(ioq_post_begin(q, 1, &pos), -EIO);
}

/* ---- the reaper's look-again (issue 20.1) ---- */

/*
 * ioq_reap_poll() may run while another context reaps: it must write
 * nothing, neither the struct ioq (the reaper's cached valid head) nor
 * the ring.
 */
VT_CASE(v6_reap_poll_writes_nothing)
{
	struct vt_ring *r = vt_ring_new(N);
	size_t len = IOQ_HEAD_DESC_SIZE(N);
	struct ioq *q0 = vt_alloc(sizeof(*q0));
	void *ring0 = vt_alloc(len);
	__u64 c;
	__u32 snap;

	VT_ASSERT(r && q0 && ring0);
	VT_ASSERT_EQ(bulk_post(r, 0, 4), 4);
	snap = ioq_reap_snapshot(&r->north.q);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	memcpy(q0, &r->north.q, sizeof(*q0));
	memcpy(ring0, r->head, len);
	VT_ASSERT_EQ(ioq_reap_poll(&r->north.q, snap), 1);
	VT_ASSERT_EQ(first_diff(q0, &r->north.q, sizeof(*q0)), -1);
	VT_ASSERT_EQ(first_diff(ring0, r->head, len), -1);
}

/* News is a completion past the snapshot, and only that. */
VT_CASE(v6_reap_poll_news_only_past_snapshot)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c;
	__u32 snap;

	VT_ASSERT(r);
	VT_ASSERT_EQ(bulk_post(r, 0, 2), 2);
	snap = ioq_reap_snapshot(&r->north.q);
	VT_ASSERT_EQ(ioq_reap_poll(&r->north.q, snap), 0);	/* posted only */
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	VT_ASSERT_EQ(ioq_reap_poll(&r->north.q, snap), 1);
	VT_ASSERT_EQ(vt_reap(r, &c), 0);
	snap = ioq_reap_snapshot(&r->north.q);
	VT_ASSERT_EQ(snap, 1);
	VT_ASSERT_EQ(ioq_reap_poll(&r->north.q, snap), 0);
	shm_signal_fault(&r->north.side.sig, "test");
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	VT_ASSERT_EQ(ioq_reap_poll(&r->north.q, snap), 0);	/* faulted */
}

/* v5: the same answers from sown and the inuse tail. */
VT_CASE(v5_reap_poll_news_only_past_snapshot)
{
	struct vt_ring *r = vt_ring_new_ver(N, IOQ_RING_VER_V5);
	__u64 c;
	__u32 snap;

	VT_ASSERT(r);
	snap = ioq_reap_snapshot(&r->north.q);
	VT_ASSERT_EQ(ioq_reap_poll(&r->north.q, snap), 0);	/* empty */
	VT_ASSERT_EQ(vt_post(r, 0, 0), 0);
	VT_ASSERT_EQ(vt_post(r, 1, 0), 0);
	VT_ASSERT_EQ(ioq_reap_poll(&r->north.q, snap), 0);	/* posted only */
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	VT_ASSERT_EQ(ioq_reap_poll(&r->north.q, snap), 1);
	VT_ASSERT_EQ(vt_reap(r, &c), 0);
	snap = ioq_reap_snapshot(&r->north.q);
	VT_ASSERT_EQ(snap, 1);
	VT_ASSERT_EQ(ioq_reap_poll(&r->north.q, snap), 0);
}

/* a fault is final even where a cached counter would let a call through */
VT_CASE(v6_fault_stops_every_call)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;
	__u64 c;
	__u32 pos;

	VT_ASSERT(r);
	VT_ASSERT_EQ(bulk_post(r, 0, 4), 4);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);	/* caches tail = 4 */
	VT_ASSERT_EQ(vt_reap(r, &c), 0);	/* caches valid_head = 1 */
	shm_signal_fault(&r->south.side.sig, "test");
	shm_signal_fault(&r->north.side.sig, "test");

	VT_ASSERT_EQ(ioq_consume_begin(&r->south.q, 1, &pos), -EIO);
	VT_ASSERT_EQ(ioq_consume_end(&r->south.q, 0, 0), -EIO);
	VT_ASSERT_EQ(ioq_post_begin(&r->north.q, 1, &pos), -EIO);
	VT_ASSERT_EQ(ioq_post_end(&r->north.q, 0, 0), -EIO);
	VT_ASSERT_EQ(ioq_reap_begin(&r->north.q, 1, &pos), -EIO);
	VT_ASSERT_EQ(ioq_reap_end(&r->north.q, 0, 0), -EIO);
	VT_ASSERT_EQ(ioq_count(&r->south.q, ioq_idx_consume), -EIO);
	VT_ASSERT_EQ(vt_post(r, 9, 0), -EIO);
	VT_ASSERT_EQ(ioq_iter_init(&r->south.q, &it, ioq_idx_consume, 0), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_head, 0, 0), 0);
	VT_ASSERT_EQ(ioq_iter_owned(&it), 0);
	VT_ASSERT_EQ(ioq_iter_pop(&it, 0), -EIO);
	/* nothing moved */
	VT_ASSERT_EQ(h6(r)->tail, 4);
	VT_ASSERT_EQ(h6(r)->valid_head, 1);
	VT_ASSERT_EQ(h6(r)->inuse_head, 1);
}

VT_CASE(v6_cached_tail_is_not_reread_while_it_suffices)
{
	struct vt_ring *r = vt_ring_new(N);
	__u32 pos;

	VT_ASSERT(r);
	VT_ASSERT_EQ(bulk_post(r, 0, 4), 4);
	VT_ASSERT_EQ(ioq_consume_begin(&r->south.q, 2, &pos), 2);
	/*
	 * Corrupt the tail now: a consumer whose cache still covers what it
	 * asks for does not look (that is the point of the cache), one that
	 * needs more reloads and sees it.
	 */
	h6(r)->tail = 0x80000000u;
	VT_ASSERT_EQ(ioq_consume_begin(&r->south.q, 4, &pos), 4);
	VT_ASSERT_EQ(ioq_consume_begin(&r->south.q, 5, &pos), -EIO);
}

/* ---- bulk ---- */

VT_CASE(v6_bulk_round_trip)
{
	struct vt_ring *r = vt_ring_new(N);
	int got;

	VT_ASSERT(r);
	VT_ASSERT_EQ(bulk_post(r, 100, 5), 5);
	VT_ASSERT_EQ(h6(r)->tail, 5);
	VT_ASSERT(burst_in_order(ioq_consume_burst, &r->south.q, 100, &got));
	VT_ASSERT_EQ(got, 5);
	VT_ASSERT_EQ(h6(r)->valid_head, 5);
	VT_ASSERT(burst_in_order(ioq_reap_burst, &r->north.q, 100, &got));
	VT_ASSERT_EQ(got, 5);
	VT_ASSERT_EQ(h6(r)->inuse_head, 5);
	VT_ASSERT(burst_in_order(ioq_reap_burst, &r->north.q, 0, &got));
	VT_ASSERT_EQ(got, 0);
}

VT_CASE(v6_bulk_post_is_all_or_nothing)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	VT_ASSERT_EQ(bulk_post(r, 0, N - 2), N - 2);
	VT_ASSERT_EQ(bulk_post(r, 0, 3), -ENOSPC);
	VT_ASSERT_EQ(h6(r)->tail, N - 2);
	VT_ASSERT_EQ(bulk_post(r, 0, 2), 2);
}

VT_CASE(v6_bulk_end_beyond_claim_is_einval)
{
	struct vt_ring *r = vt_ring_new(N);
	__u32 pos;

	VT_ASSERT(r);
	VT_ASSERT_EQ(ioq_post_end(&r->north.q, N + 1, 0), -EINVAL);
	VT_ASSERT_EQ(bulk_post(r, 0, 2), 2);
	VT_ASSERT_EQ(ioq_consume_begin(&r->south.q, N, &pos), 2);
	VT_ASSERT_EQ(ioq_consume_end(&r->south.q, 3, 0), -EINVAL);
	VT_ASSERT_EQ(ioq_reap_end(&r->north.q, 1, 0), -EINVAL);
	VT_ASSERT_EQ(h6(r)->valid_head, 0);
}

VT_CASE(v6_bulk_end_signals_once)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_ring_desc d[4];
	__u32 pos;

	VT_ASSERT(r);
	memset(d, 0, sizeof(d));
	ioq_notify_enable(&r->south.q, 0);
	VT_ASSERT_EQ(ioq_push_bulk(&r->north.q, d, 4, IOQ_ITER_AUTOUPDATE),
		     4);
	VT_ASSERT_EQ(r->north.side.injects, 1);
	VT_ASSERT_EQ(ioq_consume_begin(&r->south.q, 4, &pos), 4);
}

VT_CASE(bulk_on_v5_flips_ownership)
{
	struct vt_ring *r = vt_ring_new_ver(N, IOQ_RING_VER_V5);
	int got, i;

	VT_ASSERT(r);
	VT_ASSERT_EQ(bulk_post(r, 7, 3), 3);
	for (i = 0; i < 3; i++)
		VT_ASSERT_EQ(r->head->ring[i].sown, 1);
	VT_ASSERT_EQ(vt_idx(r, ioq_idx_consume)->tail, 3);
	VT_ASSERT_EQ(vt_idx(r, ioq_idx_reap)->tail, 3);
	VT_ASSERT(burst_in_order(ioq_consume_burst, &r->south.q, 7, &got));
	VT_ASSERT_EQ(got, 3);
	for (i = 0; i < 3; i++)
		VT_ASSERT_EQ(r->head->ring[i].sown, 0);
	VT_ASSERT(burst_in_order(ioq_reap_burst, &r->north.q, 7, &got));
	VT_ASSERT_EQ(got, 3);
	VT_ASSERT_EQ(vt_idx(r, ioq_idx_reap)->head, 3);
	VT_ASSERT_EQ(bulk_post(r, 0, N), N);
	VT_ASSERT_EQ(bulk_post(r, 0, 1), -ENOSPC);
}

/* ---- v5 <-> v6 ---- */

/*
 * A north side built before v6 (the 2024 code: v5 only) posts by hand at
 * the v5 offsets; the v6-capable south checks the ring, binds the version it
 * checked, and consumes as v5 (sown handed back, valid.head at offset 24).
 */
VT_CASE(interop_v5_north_v6_capable_south)
{
	struct vt_ring *r = vt_ring_new_ver(N, IOQ_RING_VER_V5);
	struct ioq q;
	__u32 ver = 0, pos;
	__u64 c = 0;
	long n;
	int i;

	VT_ASSERT(r);
	for (i = 0; i < 3; i++) {
		r->head->ring[i].cookie = 50 + i;
		r->head->ring[i].sown = 1;
	}
	r->head->idx[ioq_idx_consume].tail = 3;
	r->head->idx[ioq_idx_reap].tail = 3;
	n = ioq_ring_check_ver(r->head, IOQ_RING_SIZE(5, N), N, &ver);
	VT_ASSERT_EQ(n, N);
	VT_ASSERT_EQ(ver, 5);
	shm_signal_get(&r->south.side.sig);
	VT_ASSERT_EQ(ioq_init_ver(&q, NULL, ioq_locality_south, r->head,
				  &r->south.side.sig, N, ver), 0);
	VT_ASSERT_EQ(ioq_consume_begin(&q, N, &pos), 3);
	c = ioq_desc(&q, pos + 2)->cookie;
	VT_ASSERT_EQ(c, 52);
	VT_ASSERT_EQ(ioq_consume_end(&q, 3, 0), 0);
	VT_ASSERT_EQ(r->head->idx[ioq_idx_consume].head, 3);
	for (i = 0; i < 3; i++)
		VT_ASSERT_EQ(r->head->ring[i].sown, 0);
	r->south.side.sig.notifier = &r->south.q.shm_notifier;
	shm_signal_put(&r->south.side.sig);
}

/* v6-capable code on both sides asked for v5: the v5 layout, end to end */
VT_CASE(interop_v6_capable_code_asked_for_v5)
{
	struct vt_ring *r = vt_ring_new_ver(N, IOQ_RING_VER_V5);
	__u64 c = 0;
	int i;

	VT_ASSERT(r);
	VT_ASSERT_EQ(r->head->ver, 5);
	VT_ASSERT_EQ(r->north.q.ver, 5);
	VT_ASSERT(r->north.q.ring == &r->head->ring[0]);
	for (i = 0; i < 2 * N; i++) {
		VT_ASSERT_EQ(vt_post(r, i, 0), 0);
		VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
		VT_ASSERT_EQ(c, i);
		VT_ASSERT_EQ(vt_reap(r, &c), 0);
	}
	VT_ASSERT_EQ(vt_idx(r, ioq_idx_consume)->head, 2 * N);
	/* nothing was written where v6 keeps its counters */
	VT_ASSERT_EQ(h6(r)->tail, 0);
	VT_ASSERT_EQ(h6(r)->valid_head, 0);
}

/* a v6 ring offered to a side that reads only v5 is refused with -EPROTO */
VT_CASE(interop_v5_only_check_refuses_v6)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	/* what a v5-only ioq_ring_check() tested: ver == 5, else -EPROTO */
	VT_ASSERT(r->head->ver != IOQ_RING_VER_V5);
	/* and the north side's answer: format again as v5 */
	VT_ASSERT_EQ(ioq_ring_format_ver(r->head, N, IOQ_RING_VER_V5), 0);
	VT_ASSERT_EQ(ioq_ring_check(r->head, IOQ_RING_SIZE(5, N), N), N);
}

VT_SUITE(ioq_v6,
	VT_ENTRY(v6_format_lays_out_lines),
	VT_ENTRY(v6_check_sizes_per_version),
	VT_ENTRY(v6_format_and_init_reject_unknown_versions),
	VT_ENTRY(v6_default_format_is_v6),
	VT_ENTRY(v6_post_consume_reap_in_order_across_laps),
	VT_ENTRY(v6_writes_no_ownership_bytes),
	VT_ENTRY(v6_push_full_until_reaped),
	VT_ENTRY(v6_pop_errors_say_why),
	VT_ENTRY(v6_owned_follows_the_windows),
	VT_ENTRY(v6_roles_are_enforced),
	VT_ENTRY(v6_south_attaches_after_posts),
	VT_ENTRY(v6_tail_out_of_range_faults),
	VT_ENTRY(v6_tail_behind_head_faults),
	VT_ENTRY(v6_valid_head_past_tail_faults),
	VT_ENTRY(v6_peer_written_inuse_head_gives_no_room),
	VT_ENTRY(v6_peer_written_tail_does_not_change_north_count),
	VT_ENTRY(v6_peer_written_tail_cannot_widen_reap),
	VT_ENTRY(v6_north_binds_impossible_counters_faulted),
	VT_ENTRY(v6_reap_poll_writes_nothing),
	VT_ENTRY(v6_reap_poll_news_only_past_snapshot),
	VT_ENTRY(v5_reap_poll_news_only_past_snapshot),
	VT_ENTRY(v6_fault_stops_every_call),
	VT_ENTRY(v6_cached_tail_is_not_reread_while_it_suffices),
	VT_ENTRY(v6_bulk_round_trip),
	VT_ENTRY(v6_bulk_post_is_all_or_nothing),
	VT_ENTRY(v6_bulk_end_beyond_claim_is_einval),
	VT_ENTRY(v6_bulk_end_signals_once),
	VT_ENTRY(bulk_on_v5_flips_ownership),
	VT_ENTRY(interop_v5_north_v6_capable_south),
	VT_ENTRY(interop_v6_capable_code_asked_for_v5),
	VT_ENTRY(interop_v5_only_check_refuses_v6),
);
