// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Cases for core/ioq.c (ring version 5), shared by cmocka (tests/unit) and
 * the kernel selftest (vt_kernel.h). One behaviour per case. The fixture is
 * one formatted ring with a north struct ioq (posts on ioq_idx_push,
 * reaps inuse) and a south struct ioq (consumes valid) over it, as in the
 * usage protocol at the top of core/ioq.c.
 */
#include <vbus/shm_signal.h>
#include <vbus/ioq.h>
#include "vt.h"

#define N 8	/* default ring size */

#define VALID ioq_idx_consume
#define INUSE ioq_idx_reap

/* ---- format / check ---- */

VT_CASE(ring_format_lays_out_v5)
{
	struct ioq_ring_head *h = vt_alloc(IOQ_HEAD_DESC_SIZE(N));

	VT_ASSERT(h);
	memset(h, 0x5a, IOQ_HEAD_DESC_SIZE(N));
	VT_ASSERT_EQ(ioq_ring_format_ver(h, N, 5), 0);
	VT_ASSERT_EQ(h->magic, IOQ_RING_MAGIC);
	VT_ASSERT_EQ(h->ver, 5);
	VT_ASSERT_EQ(h->count, N);
	VT_ASSERT_EQ(shm_signal_desc_check(&h->signal), 0);
	for (int i = 0; i < 2; i++) {
		VT_ASSERT_EQ(h->idx[i].head, 0);
		VT_ASSERT_EQ(h->idx[i].tail, 0);
		VT_ASSERT_EQ(h->idx[i].reserved_full, 0);
	}
	for (int i = 0; i < N; i++) {
		VT_ASSERT_EQ(h->ring[i].sown, 0);	/* north owns all */
		VT_ASSERT_EQ(h->ring[i].valid, 0);
	}
	VT_ASSERT_EQ(ioq_ring_check(h, IOQ_HEAD_DESC_SIZE(N), N), N);
}

VT_CASE(ring_format_rejects_bad_count)
{
	struct ioq_ring_head *h = vt_alloc(IOQ_HEAD_DESC_SIZE(N));

	VT_ASSERT(h);
	VT_ASSERT_EQ(ioq_ring_format(h, 0), -EINVAL);
	VT_ASSERT_EQ(ioq_ring_format(h, 6), -EINVAL);
	VT_ASSERT_EQ(ioq_ring_format(h, IOQ_RING_MAX_COUNT * 2), -EINVAL);
}

VT_CASE(ring_check_accepts_any_count_when_zero)
{
	struct ioq_ring_head *h = vt_alloc(IOQ_HEAD_DESC_SIZE(16));

	VT_ASSERT(h);
	VT_ASSERT_EQ(ioq_ring_format(h, 16), 0);
	VT_ASSERT_EQ(ioq_ring_check(h, IOQ_HEAD_DESC_SIZE(16), 0), 16);
}

VT_CASE(ring_check_bad_magic)
{
	struct ioq_ring_head *h = vt_alloc(IOQ_HEAD_DESC_SIZE(N));

	VT_ASSERT(h);
	ioq_ring_format(h, N);
	h->magic = ~h->magic;
	VT_ASSERT_EQ(ioq_ring_check(h, IOQ_HEAD_DESC_SIZE(N), N), -EINVAL);
}

VT_CASE(ring_check_bad_version)
{
	struct ioq_ring_head *h = vt_alloc(IOQ_HEAD_DESC_SIZE(N));

	VT_ASSERT(h);
	ioq_ring_format(h, N);
	h->ver = 4;	/* the 2009 layout with the two-writer full flag */
	VT_ASSERT_EQ(ioq_ring_check(h, IOQ_HEAD_DESC_SIZE(N), N), -EPROTO);
}

VT_CASE(ring_check_bad_signal_desc)
{
	struct ioq_ring_head *h = vt_alloc(IOQ_HEAD_DESC_SIZE(N));

	VT_ASSERT(h);
	ioq_ring_format(h, N);
	h->signal.magic = 0;
	VT_ASSERT_EQ(ioq_ring_check(h, IOQ_HEAD_DESC_SIZE(N), N), -EPROTO);
}

VT_CASE(ring_check_count_not_pow2)
{
	struct ioq_ring_head *h = vt_alloc(IOQ_HEAD_DESC_SIZE(N));

	VT_ASSERT(h);
	ioq_ring_format(h, N);
	h->count = 6;
	VT_ASSERT_EQ(ioq_ring_check(h, IOQ_HEAD_DESC_SIZE(N), 0), -EINVAL);
	h->count = 0;
	VT_ASSERT_EQ(ioq_ring_check(h, IOQ_HEAD_DESC_SIZE(N), 0), -EINVAL);
}

VT_CASE(ring_check_count_too_large)
{
	struct ioq_ring_head *h = vt_alloc(IOQ_HEAD_DESC_SIZE(N));

	VT_ASSERT(h);
	ioq_ring_format(h, N);
	h->count = IOQ_RING_MAX_COUNT * 2;
	VT_ASSERT_EQ(ioq_ring_check(h, ~0ull, 0), -EINVAL);
}

VT_CASE(ring_check_count_mismatch)
{
	struct ioq_ring_head *h = vt_alloc(IOQ_HEAD_DESC_SIZE(N));

	VT_ASSERT(h);
	ioq_ring_format(h, N);
	VT_ASSERT_EQ(ioq_ring_check(h, IOQ_HEAD_DESC_SIZE(N), N * 2),
		     -EINVAL);
}

VT_CASE(ring_check_len_below_header)
{
	struct ioq_ring_head *h = vt_alloc(IOQ_HEAD_DESC_SIZE(N));

	VT_ASSERT(h);
	ioq_ring_format(h, N);
	/* nothing past @len is read: not even a bad magic */
	h->magic = 0;
	VT_ASSERT_EQ(ioq_ring_check(h, sizeof(*h) - 1, N), -EMSGSIZE);
}

VT_CASE(ring_check_len_below_ring)
{
	struct ioq_ring_head *h = vt_alloc(IOQ_HEAD_DESC_SIZE(N));

	VT_ASSERT(h);
	ioq_ring_format(h, N);
	VT_ASSERT_EQ(ioq_ring_check(h, IOQ_HEAD_DESC_SIZE(N) - 1, N),
		     -EMSGSIZE);
	/* a header that claims more than the region holds */
	h->count = N * 4;
	VT_ASSERT_EQ(ioq_ring_check(h, IOQ_HEAD_DESC_SIZE(N), 0), -EMSGSIZE);
}

VT_CASE(init_rejects_bad_count)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq *q = vt_alloc(sizeof(*q));

	VT_ASSERT(r && q);
	VT_ASSERT_EQ(ioq_init(q, NULL, ioq_locality_north, r->head,
			      &r->north.side.sig, 3), -EINVAL);
	VT_ASSERT_EQ(ioq_init(q, NULL, ioq_locality_north, r->head,
			      &r->north.side.sig, 0), -EINVAL);
}

/* ---- queries in every state ---- */

VT_CASE(queries_on_empty_ring)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	VT_ASSERT_EQ(ioq_size(&r->north.q), N);
	for (int t = VALID; t <= INUSE; t++) {
		VT_ASSERT_EQ(ioq_count(&r->north.q, t), 0);
		VT_ASSERT_EQ(ioq_remain(&r->north.q, t), N);
		VT_ASSERT_EQ(ioq_empty(&r->north.q, t), 1);
		VT_ASSERT_EQ(ioq_full(&r->north.q, t), 0);
	}
}

VT_CASE(queries_on_partial_ring)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c = 0;

	VT_ASSERT(r);
	for (int i = 0; i < 3; i++)
		VT_ASSERT_EQ(vt_post(r, i, 0), 0);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	/* valid: 2 waiting for south; inuse: 3 not yet reaped */
	VT_ASSERT_EQ(ioq_count(&r->south.q, VALID), 2);
	VT_ASSERT_EQ(ioq_remain(&r->south.q, VALID), N - 2);
	VT_ASSERT_EQ(ioq_count(&r->north.q, INUSE), 3);
	VT_ASSERT_EQ(ioq_remain(&r->north.q, INUSE), N - 3);
	VT_ASSERT_EQ(ioq_empty(&r->south.q, VALID), 0);
	VT_ASSERT_EQ(ioq_full(&r->south.q, VALID), 0);
	VT_ASSERT_EQ(ioq_empty(&r->north.q, INUSE), 0);
	VT_ASSERT_EQ(ioq_full(&r->north.q, INUSE), 0);
}

VT_CASE(queries_one_from_empty_and_full)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	VT_ASSERT_EQ(vt_post(r, 0, 0), 0);
	VT_ASSERT_EQ(ioq_count(&r->south.q, VALID), 1);
	VT_ASSERT_EQ(ioq_empty(&r->south.q, VALID), 0);
	VT_ASSERT_EQ(ioq_full(&r->south.q, VALID), 0);
	for (int i = 1; i < N - 1; i++)
		VT_ASSERT_EQ(vt_post(r, i, 0), 0);
	VT_ASSERT_EQ(ioq_count(&r->south.q, VALID), N - 1);
	VT_ASSERT_EQ(ioq_remain(&r->south.q, VALID), 1);
	VT_ASSERT_EQ(ioq_full(&r->south.q, VALID), 0);
	VT_ASSERT_EQ(ioq_empty(&r->south.q, VALID), 0);
}

VT_CASE(queries_on_full_ring)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	for (int i = 0; i < N; i++)
		VT_ASSERT_EQ(vt_post(r, i, 0), 0);
	for (int t = VALID; t <= INUSE; t++) {
		VT_ASSERT_EQ(ioq_count(&r->south.q, t), N);
		VT_ASSERT_EQ(ioq_remain(&r->south.q, t), 0);
		VT_ASSERT_EQ(ioq_full(&r->south.q, t), 1);
		VT_ASSERT_EQ(ioq_empty(&r->south.q, t), 0);
	}
}

VT_CASE(queries_reject_push_and_invalid)
{
	struct vt_ring *r = vt_ring_new(N);
	enum ioq_idx_type bad[] = { ioq_idx_push, ioq_idx_invalid };

	VT_ASSERT(r);
	for (int i = 0; i < 2; i++) {
		VT_ASSERT_EQ(ioq_count(&r->north.q, bad[i]), -EINVAL);
		VT_ASSERT_EQ(ioq_remain(&r->north.q, bad[i]), -EINVAL);
		VT_ASSERT_EQ(ioq_full(&r->north.q, bad[i]), -EINVAL);
		VT_ASSERT_EQ(ioq_empty(&r->north.q, bad[i]), -EINVAL);
	}
	VT_ASSERT_EQ(shm_signal_faulted(&r->north.side.sig), 0);
}

/* ---- push ---- */

VT_CASE(push_publishes_and_advances)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;

	VT_ASSERT(r);
	VT_ASSERT_EQ(ioq_iter_init(&r->north.q, &it, VALID, 0), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_tail, 0, 0), 0);
	it.desc->cookie = 42;
	VT_ASSERT_EQ(ioq_iter_push(&it, 0), 0);
	VT_ASSERT_EQ(r->head->ring[0].sown, 1);	/* flipped to south */
	VT_ASSERT_EQ(vt_idx(r, VALID)->tail, 1);
	VT_ASSERT_EQ(vt_idx(r, INUSE)->tail, 0);	/* single index */
	VT_ASSERT_EQ(it.pos, 1);
	VT_ASSERT(it.desc == &r->head->ring[1]);
}

VT_CASE(push_reap_flag_keeps_owner)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;

	VT_ASSERT(r);
	VT_ASSERT_EQ(ioq_iter_init(&r->north.q, &it, VALID,
				   IOQ_ITER_REAP), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_tail, 0, 0), 0);
	VT_ASSERT_EQ(ioq_iter_push(&it, 0), 0);
	VT_ASSERT_EQ(r->head->ring[0].sown, 0);
	VT_ASSERT_EQ(vt_idx(r, VALID)->tail, 1);
}

VT_CASE(push_only_at_tail)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;

	VT_ASSERT(r);
	VT_ASSERT_EQ(ioq_iter_init(&r->north.q, &it, VALID, 0), 0);
	/* never positioned */
	VT_ASSERT_EQ(ioq_iter_push(&it, 0), -EINVAL);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_set, 1, 0), 0);
	VT_ASSERT_EQ(ioq_iter_push(&it, 0), -EINVAL);
	VT_ASSERT_EQ(vt_idx(r, VALID)->tail, 0);
	VT_ASSERT_EQ(r->head->ring[1].sown, 0);
}

VT_CASE(push_only_when_owned)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;

	VT_ASSERT(r);
	r->head->ring[0].sown = 1;	/* not ours */
	VT_ASSERT_EQ(ioq_iter_init(&r->north.q, &it, VALID, 0), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_tail, 0, 0), 0);
	VT_ASSERT_EQ(ioq_iter_push(&it, 0), -EINVAL);
	VT_ASSERT_EQ(vt_idx(r, VALID)->tail, 0);
}

VT_CASE(push_on_full_is_enospc)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	for (int i = 0; i < N; i++)
		VT_ASSERT_EQ(vt_post(r, i, 0), 0);
	VT_ASSERT_EQ(vt_post(r, N, 0), -ENOSPC);
	VT_ASSERT_EQ(vt_idx(r, VALID)->tail, N);
	VT_ASSERT_EQ(vt_idx(r, INUSE)->tail, N);
	VT_ASSERT_EQ(r->head->ring[0].cookie, 0);
}

VT_CASE(push_single_index_on_full_is_enospc)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;

	VT_ASSERT(r);
	VT_ASSERT_EQ(ioq_iter_init(&r->north.q, &it, VALID, 0), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_tail, 0, 0), 0);
	for (int i = 0; i < N; i++)
		VT_ASSERT_EQ(ioq_iter_push(&it, 0), 0);
	/* the tail slot is the head slot, still south's: full, not misuse */
	VT_ASSERT_EQ(ioq_iter_push(&it, 0), -ENOSPC);
	VT_ASSERT_EQ(vt_idx(r, VALID)->tail, N);
}

VT_CASE(push_role_on_unreaped_ring_is_enospc)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c = 0;

	VT_ASSERT(r);
	for (int i = 0; i < N; i++)
		VT_ASSERT_EQ(vt_post(r, i, 0), 0);
	/* south consumed everything; north has reaped nothing */
	for (int i = 0; i < N; i++)
		VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	VT_ASSERT_EQ(ioq_empty(&r->north.q, VALID), 1);
	VT_ASSERT_EQ(vt_post(r, N, 0), -ENOSPC);
	VT_ASSERT_EQ(vt_reap(r, &c), 0);
	VT_ASSERT_EQ(vt_post(r, N, 0), 0);
}

VT_CASE(push_role_keeps_tails_in_step)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c = 0;

	VT_ASSERT(r);
	for (int i = 0; i < 3 * N; i++) {
		VT_ASSERT_EQ(vt_post(r, i, 0), 0);
		VT_ASSERT_EQ(vt_idx(r, VALID)->tail, vt_idx(r, INUSE)->tail);
		VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
		VT_ASSERT_EQ(vt_reap(r, &c), 0);
	}
	VT_ASSERT_EQ(vt_idx(r, VALID)->tail, 3 * N);
}

VT_CASE(push_role_desynchronised_tails_fault)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	VT_ASSERT_EQ(vt_post(r, 0, 0), 0);
	vt_idx(r, INUSE)->tail++;	/* in range, but out of step */
	VT_ASSERT_EQ(vt_post(r, 1, 0), -EIO);
	VT_ASSERT_EQ(r->north.side.faults, 1);
	VT_ASSERT(r->north.side.fault_msg != NULL);
	VT_ASSERT_EQ(shm_signal_faulted(&r->north.side.sig), 1);
	VT_ASSERT_EQ(vt_idx(r, VALID)->tail, 1);
}

/* ---- pop ---- */

VT_CASE(pop_hands_back_and_advances)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c = 0;

	VT_ASSERT(r);
	VT_ASSERT_EQ(vt_post(r, 7, 0), 0);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	VT_ASSERT_EQ(c, 7);
	VT_ASSERT_EQ(r->head->ring[0].sown, 0);	/* back to north */
	VT_ASSERT_EQ(vt_idx(r, VALID)->head, 1);
	VT_ASSERT_EQ(vt_idx(r, INUSE)->head, 0);
}

VT_CASE(pop_reap_flag_keeps_owner)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c = 0;

	VT_ASSERT(r);
	VT_ASSERT_EQ(vt_post(r, 7, 0), 0);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	VT_ASSERT_EQ(vt_reap(r, &c), 0);
	VT_ASSERT_EQ(c, 7);
	VT_ASSERT_EQ(r->head->ring[0].sown, 0);
	VT_ASSERT_EQ(vt_idx(r, INUSE)->head, 1);
}

VT_CASE(pop_only_at_head)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;

	VT_ASSERT(r);
	VT_ASSERT_EQ(vt_post(r, 0, 0), 0);
	VT_ASSERT_EQ(vt_post(r, 1, 0), 0);
	VT_ASSERT_EQ(ioq_iter_init(&r->south.q, &it, VALID, 0), 0);
	VT_ASSERT_EQ(ioq_iter_pop(&it, 0), -EINVAL);	/* unpositioned */
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_set, 1, 0), 0);
	VT_ASSERT_EQ(ioq_iter_pop(&it, 0), -EINVAL);
	VT_ASSERT_EQ(vt_idx(r, VALID)->head, 0);
	VT_ASSERT_EQ(r->head->ring[1].sown, 1);
}

VT_CASE(pop_only_when_owned)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;

	VT_ASSERT(r);
	/* published on the index, but north kept the descriptor */
	VT_ASSERT_EQ(ioq_iter_init(&r->north.q, &it, VALID,
				   IOQ_ITER_REAP), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_tail, 0, 0), 0);
	VT_ASSERT_EQ(ioq_iter_push(&it, 0), 0);

	VT_ASSERT_EQ(ioq_iter_init(&r->south.q, &it, VALID, 0), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_head, 0, 0), 0);
	VT_ASSERT_EQ(ioq_iter_owned(&it), 0);
	VT_ASSERT_EQ(ioq_iter_pop(&it, 0), -EINVAL);
	VT_ASSERT_EQ(vt_idx(r, VALID)->head, 0);
}

VT_CASE(pop_on_empty_is_enoent)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c = 0;

	VT_ASSERT(r);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), -ENOENT);
	VT_ASSERT_EQ(vt_reap(r, &c), -ENOENT);
	VT_ASSERT_EQ(vt_post(r, 0, 0), 0);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), -ENOENT);
	VT_ASSERT_EQ(vt_idx(r, VALID)->head, 1);
}

/* ---- iterator ---- */

VT_CASE(iter_init_rejects_invalid_type)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;

	VT_ASSERT(r);
	VT_ASSERT_EQ(ioq_iter_init(&r->north.q, &it, ioq_idx_invalid, 0),
		     -EINVAL);
}

VT_CASE(iter_owned_needs_window_and_sown)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;

	VT_ASSERT(r);
	VT_ASSERT_EQ(ioq_iter_init(&r->south.q, &it, VALID, 0), 0);
	VT_ASSERT_EQ(ioq_iter_owned(&it), 0);	/* not positioned */
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_head, 0, 0), 0);
	VT_ASSERT_EQ(ioq_iter_owned(&it), 0);	/* empty window */
	VT_ASSERT_EQ(vt_post(r, 0, 0), 0);
	VT_ASSERT_EQ(ioq_iter_owned(&it), 1);
	r->head->ring[0].sown = 0;		/* in the window, not ours */
	VT_ASSERT_EQ(ioq_iter_owned(&it), 0);
}

VT_CASE(iter_owned_stops_at_tail)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;
	__u64 c = 0;

	VT_ASSERT(r);
	VT_ASSERT_EQ(vt_post(r, 0, 0), 0);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	/* north reaps: slot 0 is its own and in the window, slot 1 is
	 * north-owned too (never posted) but past the tail */
	VT_ASSERT_EQ(ioq_iter_init(&r->north.q, &it, INUSE,
				   IOQ_ITER_REAP), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_head, 0, 0), 0);
	VT_ASSERT_EQ(ioq_iter_owned(&it), 1);
	VT_ASSERT_EQ(ioq_iter_pop(&it, 0), 0);
	VT_ASSERT_EQ(r->head->ring[1].sown, 0);
	VT_ASSERT_EQ(ioq_iter_owned(&it), 0);
}

VT_CASE(seek_tail_head_next)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;
	__u64 c = 0;

	VT_ASSERT(r);
	for (int i = 0; i < 5; i++)
		VT_ASSERT_EQ(vt_post(r, i, 0), 0);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);

	VT_ASSERT_EQ(ioq_iter_init(&r->south.q, &it, VALID, 0), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_tail, 0, 0), 0);
	VT_ASSERT_EQ(it.pos, 5);
	VT_ASSERT(it.desc == &r->head->ring[5]);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_head, 0, 0), 0);
	VT_ASSERT_EQ(it.pos, 2);
	VT_ASSERT(it.desc == &r->head->ring[2]);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_next, 0, 0), 0);
	VT_ASSERT_EQ(it.pos, 3);
	VT_ASSERT(it.desc == &r->head->ring[3]);
}

VT_CASE(seek_next_wraps_to_slot_zero)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;

	VT_ASSERT(r);
	VT_ASSERT_EQ(ioq_iter_init(&r->north.q, &it, VALID, 0), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_set, N - 1, 0), 0);
	VT_ASSERT(it.desc == &r->head->ring[N - 1]);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_next, 0, 0), 0);
	VT_ASSERT_EQ(it.pos, N);	/* free-running ... */
	VT_ASSERT(it.desc == &r->head->ring[0]);	/* ... slot wraps */
}

VT_CASE(seek_set_picks_slot_in_current_lap)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;
	__u64 c = 0;

	VT_ASSERT(r);
	/* one and a half laps: head = tail = N + N / 2 */
	for (int i = 0; i < N + N / 2; i++) {
		VT_ASSERT_EQ(vt_post(r, i, 0), 0);
		VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
		VT_ASSERT_EQ(vt_reap(r, &c), 0);
	}
	VT_ASSERT_EQ(ioq_iter_init(&r->north.q, &it, ioq_idx_push, 0), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_set, N / 2, 0), 0);
	VT_ASSERT_EQ(it.pos, N + N / 2);
	VT_ASSERT(it.desc == &r->head->ring[N / 2]);
	/* the position matches the tail, so a push there is accepted */
	VT_ASSERT_EQ(ioq_iter_push(&it, 0), 0);
}

VT_CASE(seek_set_out_of_range)
{
	struct vt_ring *r = vt_ring_new(N);
	struct ioq_iterator it;

	VT_ASSERT(r);
	VT_ASSERT_EQ(ioq_iter_init(&r->north.q, &it, VALID, 0), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_set, 2, 0), 0);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_set, N, 0), -EINVAL);
	VT_ASSERT_EQ(ioq_iter_seek(&it, ioq_seek_set, -1, 0), -EINVAL);
	VT_ASSERT_EQ(ioq_iter_seek(&it, (enum ioq_seek_type)17, 0, 0),
		     -EINVAL);
	VT_ASSERT_EQ(it.pos, 2);	/* untouched by the failures */
}

/* ---- laps and index arithmetic ---- */

VT_CASE(wraparound_over_several_laps)
{
	struct vt_ring *r = vt_ring_new(4);
	__u64 c = 0, next_consume = 0, next_reap = 0;

	VT_ASSERT(r);
	/* 5 laps, in bursts of 3 so slots and laps do not line up */
	for (int burst = 0; burst < 7; burst++) {
		for (int i = 0; i < 3; i++)
			VT_ASSERT_EQ(vt_post(r, burst * 3 + i, 0), 0);
		for (int i = 0; i < 3; i++) {
			VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
			VT_ASSERT_EQ(c, next_consume++);
		}
		for (int i = 0; i < 3; i++) {
			VT_ASSERT_EQ(vt_reap(r, &c), 0);
			VT_ASSERT_EQ(c, next_reap++);
		}
	}
	VT_ASSERT_EQ(vt_idx(r, VALID)->tail, 21);
	VT_ASSERT_EQ(vt_idx(r, VALID)->head, 21);
	VT_ASSERT_EQ(vt_idx(r, INUSE)->head, 21);
	VT_ASSERT_EQ(ioq_empty(&r->north.q, INUSE), 1);
}

VT_CASE(indexes_wrap_at_u32)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c = 0;

	VT_ASSERT(r);
	for (int t = VALID; t <= INUSE; t++) {
		vt_idx(r, t)->head = 0xfffffffeu;
		vt_idx(r, t)->tail = 0xfffffffeu;
	}
	for (int i = 0; i < N; i++)
		VT_ASSERT_EQ(vt_post(r, i, 0), 0);
	VT_ASSERT_EQ(vt_idx(r, VALID)->tail, N - 2);	/* wrapped */
	VT_ASSERT_EQ(ioq_count(&r->south.q, VALID), N);
	VT_ASSERT_EQ(ioq_full(&r->south.q, VALID), 1);
	for (int i = 0; i < N; i++) {
		VT_ASSERT_EQ(vt_consume(r, &c, 0), 0);
		VT_ASSERT_EQ(c, i);
	}
	VT_ASSERT_EQ(ioq_empty(&r->south.q, VALID), 1);
	VT_ASSERT_EQ(shm_signal_faulted(&r->south.side.sig), 0);
}

/* ---- signalling ---- */

VT_CASE(push_autoupdate_signals_peer)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	ioq_notify_enable(&r->south.q, 0);
	VT_ASSERT_EQ(vt_post(r, 0, IOQ_ITER_AUTOUPDATE), 0);
	VT_ASSERT_EQ(r->north.side.injects, 1);
	VT_ASSERT_EQ(r->head->signal.irq[shm_locality_south].dirty, 1);
}

VT_CASE(push_without_autoupdate_is_silent)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	ioq_notify_enable(&r->south.q, 0);
	VT_ASSERT_EQ(vt_post(r, 0, 0), 0);
	VT_ASSERT_EQ(r->north.side.injects, 0);
	VT_ASSERT_EQ(r->head->signal.irq[shm_locality_south].dirty, 0);
	/* ioq_signal() is the explicit form */
	VT_ASSERT_EQ(ioq_signal(&r->north.q, 0), 0);
	VT_ASSERT_EQ(r->north.side.injects, 1);
}

VT_CASE(pop_autoupdate_signals_peer)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c = 0;

	VT_ASSERT(r);
	ioq_notify_enable(&r->north.q, 0);
	VT_ASSERT_EQ(vt_post(r, 0, 0), 0);
	VT_ASSERT_EQ(vt_consume(r, &c, IOQ_ITER_AUTOUPDATE), 0);
	VT_ASSERT_EQ(r->south.side.injects, 1);
	VT_ASSERT_EQ(r->north.side.injects, 0);
}

VT_CASE(notify_disable_suppresses_signal)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	ioq_notify_enable(&r->south.q, 0);
	ioq_notify_disable(&r->south.q, 0);
	VT_ASSERT_EQ(vt_post(r, 0, IOQ_ITER_AUTOUPDATE), 0);
	VT_ASSERT_EQ(r->north.side.injects, 0);
}

VT_CASE(wakeup_runs_ioq_notifier)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	ioq_notify_enable(&r->south.q, 0);
	VT_ASSERT_EQ(vt_post(r, 0, IOQ_ITER_AUTOUPDATE), 0);
	_shm_signal_wakeup(r->south.q.signal);
	VT_ASSERT_EQ(r->south.side.notifies, 1);
	VT_ASSERT_EQ(r->north.side.notifies, 0);
}

/*
 * A sleeper on ioq->wq waits for what the notifier records: it is woken
 * after the notifier ran, never before (woken first, it re-checked too
 * early and slept through the event: vbus_test's event latency stalled).
 */
VT_CASE(wakeup_wakes_waiters_after_ioq_notifier)
{
	struct vt_ring *r = vt_ring_new(N);
	struct vt_waitq_watch *w = vt_alloc(sizeof(*w));
	long woken;

	VT_ASSERT(r && w);
	ioq_notify_enable(&r->south.q, 0);
	VT_ASSERT_EQ(vt_post(r, 0, IOQ_ITER_AUTOUPDATE), 0);
	vt_waitq_watch(w, &r->south.q.wq);
	r->south.side.watch = w;
	r->south.side.woken_at_notify = -1;
	_shm_signal_wakeup(r->south.q.signal);
	woken = vt_waitq_woken(w);
	vt_waitq_unwatch(w);
	VT_ASSERT_EQ(r->south.side.notifies, 1);
	VT_ASSERT_EQ(r->south.side.woken_at_notify, 0);
	VT_ASSERT_EQ(woken, 1);
}

VT_CASE(protocol_post_consume_reap)
{
	struct vt_ring *r = vt_ring_new(4);
	__u64 c = 0;
	int got;

	VT_ASSERT(r);
	ioq_notify_enable(&r->south.q, 0);
	ioq_notify_enable(&r->north.q, 0);

	for (int round = 0; round < 3; round++) {
		/* north posts a batch; one doorbell for it */
		for (int i = 0; i < 3; i++)
			VT_ASSERT_EQ(vt_post(r, round * 10 + i,
					     IOQ_ITER_AUTOUPDATE), 0);
		VT_ASSERT_EQ(r->north.side.injects, round + 1);

		/* south is woken, consumes everything, hands it back */
		_shm_signal_wakeup(r->south.q.signal);
		VT_ASSERT_EQ(r->south.side.notifies, round + 1);
		for (got = 0; vt_consume(r, &c, IOQ_ITER_AUTOUPDATE) == 0;
		     got++)
			VT_ASSERT_EQ(c, (__u64)(round * 10 + got));
		VT_ASSERT_EQ(got, 3);
		VT_ASSERT_EQ(r->south.side.injects, round + 1);

		/* north is woken and reaps the completions in order */
		_shm_signal_wakeup(r->north.q.signal);
		VT_ASSERT_EQ(r->north.side.notifies, round + 1);
		for (got = 0; vt_reap(r, &c) == 0; got++)
			VT_ASSERT_EQ(c, (__u64)(round * 10 + got));
		VT_ASSERT_EQ(got, 3);
		VT_ASSERT_EQ(ioq_empty(&r->north.q, INUSE), 1);
	}
	VT_ASSERT_EQ(shm_signal_faulted(&r->north.side.sig), 0);
	VT_ASSERT_EQ(shm_signal_faulted(&r->south.side.sig), 0);
}

/* ---- faults from corrupted shared fields ---- */

VT_CASE(corrupt_indexes_fault_queries)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	vt_idx(r, VALID)->tail = N + 1;	/* head 0: more than N apart */
	VT_ASSERT_EQ(ioq_count(&r->south.q, VALID), -EIO);
	VT_ASSERT_EQ(r->south.side.faults, 1);
	VT_ASSERT(r->south.side.fault_msg != NULL);
	VT_ASSERT_EQ(shm_signal_faulted(&r->south.side.sig), 1);
	VT_ASSERT_EQ(ioq_remain(&r->south.q, VALID), -EIO);
	VT_ASSERT_EQ(ioq_full(&r->south.q, VALID), -EIO);
	VT_ASSERT_EQ(ioq_empty(&r->south.q, VALID), -EIO);
}

VT_CASE(corrupt_head_past_tail_faults)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	VT_ASSERT_EQ(vt_post(r, 0, 0), 0);
	vt_idx(r, VALID)->head = 2;	/* tail 1: "count" is ~0u */
	VT_ASSERT_EQ(ioq_count(&r->north.q, VALID), -EIO);
	VT_ASSERT_EQ(r->north.side.faults, 1);
}

VT_CASE(corrupt_indexes_fail_push_and_pop)
{
	struct vt_ring *r = vt_ring_new(N);
	__u64 c = 0;

	VT_ASSERT(r);
	VT_ASSERT_EQ(vt_post(r, 0, 0), 0);
	vt_idx(r, VALID)->tail = 0x80000000u;
	VT_ASSERT_EQ(vt_post(r, 1, 0), -EIO);
	VT_ASSERT_EQ(vt_consume(r, &c, 0), -EIO);
	/* each side that looked faulted (and may report more than once) */
	VT_ASSERT(r->north.side.faults >= 1);
	VT_ASSERT(r->south.side.faults >= 1);
	VT_ASSERT_EQ(shm_signal_faulted(&r->north.side.sig), 1);
	VT_ASSERT_EQ(shm_signal_faulted(&r->south.side.sig), 1);
}

VT_CASE(faulted_ring_push_does_not_signal)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	ioq_notify_enable(&r->south.q, 0);
	SHM_SIGNAL_FAULT(&r->north.side.sig, "vt: test fault");
	VT_ASSERT_EQ(vt_post(r, 0, IOQ_ITER_AUTOUPDATE), -EIO);
	VT_ASSERT_EQ(r->north.side.injects, 0);
}

/* ---- references ---- */

VT_CASE(ioq_put_drops_signal)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	shm_signal_get(&r->north.side.sig);	/* someone else's */
	ioq_put(&r->north.q);
	VT_ASSERT_EQ(r->north.ioq_releases, 1);
	VT_ASSERT_EQ(vbus_ref_read(&r->north.side.sig.ref), 1);
	VT_ASSERT_EQ(r->north.side.releases, 0);
	VT_ASSERT(r->north.side.sig.notifier == NULL);
	shm_signal_put(&r->north.side.sig);
	VT_ASSERT_EQ(r->north.side.releases, 1);
}

VT_CASE(ioq_release_once_at_zero)
{
	struct vt_ring *r = vt_ring_new(N);

	VT_ASSERT(r);
	VT_ASSERT(ioq_get(&r->south.q) == &r->south.q);
	ioq_put(&r->south.q);
	VT_ASSERT_EQ(r->south.ioq_releases, 0);
	VT_ASSERT_EQ(r->south.side.releases, 0);
	ioq_put(&r->south.q);
	VT_ASSERT_EQ(r->south.ioq_releases, 1);
	VT_ASSERT_EQ(r->south.side.releases, 1);
}

VT_SUITE(ioq,
	VT_ENTRY(ring_format_lays_out_v5),
	VT_ENTRY(ring_format_rejects_bad_count),
	VT_ENTRY(ring_check_accepts_any_count_when_zero),
	VT_ENTRY(ring_check_bad_magic),
	VT_ENTRY(ring_check_bad_version),
	VT_ENTRY(ring_check_bad_signal_desc),
	VT_ENTRY(ring_check_count_not_pow2),
	VT_ENTRY(ring_check_count_too_large),
	VT_ENTRY(ring_check_count_mismatch),
	VT_ENTRY(ring_check_len_below_header),
	VT_ENTRY(ring_check_len_below_ring),
	VT_ENTRY(init_rejects_bad_count),
	VT_ENTRY(queries_on_empty_ring),
	VT_ENTRY(queries_on_partial_ring),
	VT_ENTRY(queries_one_from_empty_and_full),
	VT_ENTRY(queries_on_full_ring),
	VT_ENTRY(queries_reject_push_and_invalid),
	VT_ENTRY(push_publishes_and_advances),
	VT_ENTRY(push_reap_flag_keeps_owner),
	VT_ENTRY(push_only_at_tail),
	VT_ENTRY(push_only_when_owned),
	VT_ENTRY(push_on_full_is_enospc),
	VT_ENTRY(push_single_index_on_full_is_enospc),
	VT_ENTRY(push_role_on_unreaped_ring_is_enospc),
	VT_ENTRY(push_role_keeps_tails_in_step),
	VT_ENTRY(push_role_desynchronised_tails_fault),
	VT_ENTRY(pop_hands_back_and_advances),
	VT_ENTRY(pop_reap_flag_keeps_owner),
	VT_ENTRY(pop_only_at_head),
	VT_ENTRY(pop_only_when_owned),
	VT_ENTRY(pop_on_empty_is_enoent),
	VT_ENTRY(iter_init_rejects_invalid_type),
	VT_ENTRY(iter_owned_needs_window_and_sown),
	VT_ENTRY(iter_owned_stops_at_tail),
	VT_ENTRY(seek_tail_head_next),
	VT_ENTRY(seek_next_wraps_to_slot_zero),
	VT_ENTRY(seek_set_picks_slot_in_current_lap),
	VT_ENTRY(seek_set_out_of_range),
	VT_ENTRY(wraparound_over_several_laps),
	VT_ENTRY(indexes_wrap_at_u32),
	VT_ENTRY(push_autoupdate_signals_peer),
	VT_ENTRY(push_without_autoupdate_is_silent),
	VT_ENTRY(pop_autoupdate_signals_peer),
	VT_ENTRY(notify_disable_suppresses_signal),
	VT_ENTRY(wakeup_runs_ioq_notifier),
	VT_ENTRY(wakeup_wakes_waiters_after_ioq_notifier),
	VT_ENTRY(protocol_post_consume_reap),
	VT_ENTRY(corrupt_indexes_fault_queries),
	VT_ENTRY(corrupt_head_past_tail_faults),
	VT_ENTRY(corrupt_indexes_fail_push_and_pop),
	VT_ENTRY(faulted_ring_push_does_not_signal),
	VT_ENTRY(ioq_put_drops_signal),
	VT_ENTRY(ioq_release_once_at_zero)
)
