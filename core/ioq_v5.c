// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * IOQ ring version 5: the v5-only half of core/ioq.c, reached through the
 * ioq_v5() dispatch in core/ioq_impl.h. Delete this file the day nothing
 * speaks v5 (core/ioq_impl.h says what goes with it).
 *
 * v5 keeps two indexes in the header, idx[valid] and idx[inuse], each a
 * head and a tail with one writer (valid.tail, inuse.tail, inuse.head:
 * north; valid.head: south). It hands a descriptor over with its
 * ownership byte (sown) as well as with the counters, and re-reads every
 * counter on every call: no cached copies.
 *
 * The ordering labels are those of core/ioq.c and docs/ring.md; two are
 * v5's alone:
 *   [R4] release store of sown (push: body before the flip; pop: after
 *        valid.head moved, so "reaped" implies "valid has room").
 *        Pairs with [A4].
 *   [A4] acquire load of sown in ioq_iter_owned() and the bulk begin
 *        calls, before reading the body.
 */
#include <vbus/platform.h>
#include <vbus/ioq.h>
#include "ioq_impl.h"

void ioq_v5_bind(struct ioq *ioq)
{
	ioq->ring = &ioq->head_desc->ring[0];
}

struct ioq_ring_idx *ioq_v5_idx(struct ioq *ioq, enum ioq_idx_type type)
{
	return &ioq->head_desc->idx[type];
}

/* Descriptors in flight on @idx, or -EIO: ioq_load_pair(). */
static int idx_count(struct ioq *ioq, struct ioq_ring_idx *idx,
		     __u32 *headp, __u32 *tailp)
{
	/*
	 * [A1] (tail) / [A2], [A3] (heads): the descriptors counted here
	 * are read or rewritten after the index. Pairs with [R1] in push
	 * and [R2]/[R3] in pop.
	 */
	return ioq_load_pair(ioq, &idx->head, &idx->tail, headp, tailp);
}

int ioq_v5_count(struct ioq *ioq, enum ioq_idx_type type,
		 __u32 *headp, __u32 *tailp)
{
	return idx_count(ioq, ioq_v5_idx(ioq, type), headp, tailp);
}

/* Is the descriptor at @pos ours? */
static int v5_owned_at(struct ioq *ioq, __u32 pos)
{
	/*
	 * [A4] sown before the body the caller reads next. Pairs with [R4]
	 * in the peer's hand_over().
	 */
	return VBUS_LOAD_ACQUIRE(ioq->ring[pos & ioq->mask].sown) ==
	       (__u8)ioq->locale;
}

/* Flip the descriptor at @pos to the peer. */
static void v5_hand_over(struct ioq *ioq, __u32 pos)
{
	/*
	 * [R4] the caller's descriptor body (and, on pop, its reads of it)
	 * before the flip. Pairs with [A4].
	 */
	VBUS_STORE_RELEASE(ioq->ring[pos & ioq->mask].sown,
			   (__u8)!ioq->locale);
}

/* ---- bulk ---- */

/* Pusher: free slots up to @n (inuse bounds valid), first one in *@pos */
int ioq_v5_post_begin(struct ioq *ioq, unsigned int n, __u32 *pos)
{
	struct ioq_ring_idx *valid = &ioq->head_desc->idx[ioq_idx_consume];
	struct ioq_ring_idx *inuse = &ioq->head_desc->idx[ioq_idx_reap];
	__u32 tail, itail;
	unsigned int k;
	int vn, in;

	vn = idx_count(ioq, valid, NULL, &tail);
	if (vn < 0)
		return vn;
	in = idx_count(ioq, inuse, NULL, &itail);
	if (in < 0)
		return in;
	if (itail != tail)
		return ioq_faulted(ioq, "ioq: tails not synchronized");
	n = ioq_min_u(n, ioq->count - (unsigned int)in);
	for (k = 0; k < n && v5_owned_at(ioq, tail + k); k++)
		;
	*pos = tail;
	return (int)k;
}

static void v5_post_publish(struct ioq *ioq, __u32 tail, unsigned int n)
{
	struct ioq_ring_idx *valid = &ioq->head_desc->idx[ioq_idx_consume];
	struct ioq_ring_idx *inuse = &ioq->head_desc->idx[ioq_idx_reap];
	unsigned int i;

	for (i = 0; i < n; i++)
		v5_hand_over(ioq, tail + i);
	/* [R1] sown and the bodies before the tails; pairs with [A1] */
	VBUS_STORE_RELEASE(valid->tail, tail + n);
	VBUS_STORE_RELEASE(inuse->tail, tail + n);
}

/* Publish @n posted descriptors: all of them still free, else -EINVAL. */
int ioq_v5_post_end(struct ioq *ioq, unsigned int n)
{
	__u32 tail;
	int ret;

	ret = ioq_v5_post_begin(ioq, n, &tail);
	if (ret != (int)n)
		return ret < 0 ? ret : -EINVAL;
	v5_post_publish(ioq, tail, n);		/* [R4], [R1] */
	return 0;
}

/* Consumer / reaper: contiguous owned descriptors at the head, up to @n */
int ioq_v5_take_begin(struct ioq *ioq, enum ioq_idx_type type,
		      unsigned int n, __u32 *pos)
{
	__u32 head;
	unsigned int k;
	int avail = idx_count(ioq, &ioq->head_desc->idx[type], &head, NULL);

	if (avail < 0)
		return avail;
	n = ioq_min_u(n, (unsigned int)avail);
	for (k = 0; k < n && v5_owned_at(ioq, head + k); k++)
		;
	*pos = head;
	return (int)k;
}

static void v5_take_publish(struct ioq *ioq, enum ioq_idx_type type,
			    __u32 head, unsigned int n, int flip)
{
	unsigned int i;

	/*
	 * [R2] (valid) / [R3] (inuse): our reads of the bodies before the
	 * head. Head before sown ([R4]): a reaper that sees sown flipped
	 * already sees valid's head moved.
	 */
	VBUS_STORE_RELEASE(ioq->head_desc->idx[type].head, head + n);
	for (i = 0; flip && i < n; i++)
		v5_hand_over(ioq, head + i);
}

/*
 * Publish @n taken descriptors (all of them still ours, else -EINVAL),
 * handing them back with @flip (the consumer; the reaper keeps them).
 */
int ioq_v5_take_end(struct ioq *ioq, enum ioq_idx_type type,
		    unsigned int n, int flip)
{
	__u32 head;
	int ret;

	ret = ioq_v5_take_begin(ioq, type, n, &head);
	if (ret != (int)n)
		return ret < 0 ? ret : -EINVAL;
	v5_take_publish(ioq, type, head, n, flip);
	return 0;
}

/* ---- iterators ---- */

__u32 ioq_v5_iter_head(struct ioq_iterator *iter)
{
	return VBUS_READ(iter->idx->head);
}

__u32 ioq_v5_iter_tail(struct ioq_iterator *iter)
{
	return VBUS_READ(iter->idx->tail);
}

int ioq_v5_iter_owned(struct ioq_iterator *iter)
{
	__u32 head;
	int n;

	/*
	 * Inside the index's window first: past the tail there is nothing
	 * for us even if the slot's sown happens to match (a reaped slot
	 * that has not been posted again is north-owned).
	 */
	n = idx_count(iter->ioq, iter->idx, &head, NULL);
	if (n <= 0 || iter->pos - head >= (__u32)n)
		return 0;
	return v5_owned_at(iter->ioq, iter->pos);	/* [A4] */
}

int ioq_v5_iter_push(struct ioq_iterator *iter)
{
	struct ioq *ioq = iter->ioq;
	struct ioq_ring_idx *inuse = &ioq->head_desc->idx[ioq_idx_reap];
	__u32 tail;
	int n;

	n = idx_count(ioq, iter->idx, NULL, &tail);
	if (n < 0)
		return n;

	if (iter->dualidx) {
		__u32 itail;
		int in = idx_count(ioq, inuse, NULL, &itail);

		if (in < 0)
			return in;
		if (itail != tail)
			return ioq_faulted(ioq, "ioq: tails not synchronized");
		if (in == (int)ioq->count)
			return -ENOSPC;
	}
	/*
	 * Full before the position/ownership checks: on a full ring the slot
	 * at the tail is still the peer's (or not yet reaped), and the caller
	 * must hear "try later", not "you misused the iterator".
	 */
	if (n == (int)ioq->count)
		return -ENOSPC;
	if (!iter->desc || iter->pos != tail)
		return -EINVAL;
	if (VBUS_READ(iter->desc->sown) != (__u8)ioq->locale)
		return -EINVAL;

	if (iter->flipowner)
		v5_hand_over(ioq, tail);	/* [R4] */
	/* [R1] sown and the body before the tail; pairs with [A1] */
	VBUS_STORE_RELEASE(iter->idx->tail, tail + 1);
	if (iter->dualidx)
		VBUS_STORE_RELEASE(inuse->tail, tail + 1);
	return 0;
}

int ioq_v5_iter_pop(struct ioq_iterator *iter)
{
	struct ioq *ioq = iter->ioq;
	__u32 head;
	int n;

	n = idx_count(ioq, iter->idx, &head, NULL);
	if (n < 0)
		return n;
	/* empty first, for the same reason as full in push */
	if (n == 0)
		return -ENOENT;
	if (!iter->desc || iter->pos != head)
		return -EINVAL;
	if (VBUS_READ(iter->desc->sown) != (__u8)ioq->locale)
		return -EINVAL;
	/* [R2]/[R3] then [R4]: head before sown, see v5_take_publish() */
	v5_take_publish(ioq, iter->type, head, 1, iter->flipowner);
	return 0;
}
