// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * IOQ: portable core, compiled into the kernel modules and libioq.
 * This file is ring version 6 and what both versions share (format,
 * check, init, queries, the public entry points); the v5-only code is in
 * core/ioq_v5.c, reached through the ioq_v5() dispatch (core/ioq_impl.h).
 *
 * How the two sides use a ring (the three roles; docs/ring.md):
 *
 *   north pushes    push on ioq_idx_push: valid and inuse grow at
 *                   the tail together
 *   south consumes  iterate ioq_idx_consume (valid) from its head; pop
 *                   advances valid's head and hands the descriptor back
 *   north reaps     iterate ioq_idx_reap (inuse) from its head over the
 *                   descriptors south handed back; pop (IOQ_ITER_REAP)
 *                   advances inuse's head, and the slot can be posted again
 *
 * Each shared counter has one writer: valid.tail, inuse.tail, inuse.head
 * are north's, valid.head is south's. tail - head is the count in u32
 * arithmetic; anything above the ring size means the peer corrupted a
 * counter, and faults the channel.
 *
 * Version 5 hands a descriptor over with its ownership byte (sown) as well
 * as with the counters, and re-reads every counter on every call. Version 6
 * goes by the counters alone: each role keeps a shadow of the counter it
 * writes and a cached copy of the one it waits on, reloaded (and checked)
 * only when the cache says full or empty, as DPDK's rte_ring does.
 *
 * v6 never reads this side's own counters back from shared memory: the
 * peer can write them. North's pusher takes the reaper's inuse head from
 * the reaper's shadow (reap.head), its reaper bounds valid.head by the
 * pusher's shadow (push.tail), and the queries count with the shadows of
 * this side's counters and the shared copy of the peer's only. The shared
 * copy of an own counter is written for the peer and read back only by
 * v6_own_intact(), which faults the channel when the peer changed it.
 *
 * Ordering, every edge labelled; callers cite these labels
 * (docs/ring.md has the table):
 *
 *   [R1] pusher: release store of the tail, after the descriptor bodies
 *        (and the buffers they point to).  Pairs with [A1].
 *   [A1] consumer: acquire load of the tail, before reading the bodies.
 *   [R2] consumer: release store of valid.head, after its reads of the
 *        bodies and buffers and its writes to them (a completion's length).
 *        Pairs with [A2] (v6 reaper) and with [A3] (v5: the pusher's room
 *        check reads valid.head too).
 *   [A2] reaper: acquire load of valid.head (v6) / of sown (v5, via [A4])
 *        before reading a completion.
 *   [R3] reaper: release store of inuse.head, after its reads of the
 *        completion (v6: of its shadow reap.head, which north's pusher
 *        reads, then of the shared copy, for the peer's queries).
 *        Pairs with [A3].
 *   [A3] pusher: acquire load of inuse.head before rewriting the slot
 *        (v6: of the reaper's shadow, never the shared copy).
 *   [R4] v5 only: release store of sown (push: body before the flip;
 *        pop: after valid.head moved, so "reaped" implies "valid has
 *        room").  Pairs with [A4].
 *   [A4] v5 only: acquire load of sown in ioq_iter_owned() and the bulk
 *        begin calls, before reading the body.
 *   (The v5 sites of [R1]..[A3] and all of [R4]/[A4] are in
 *   core/ioq_v5.c.)
 * Notification: the index stores come before shm_signal_inject()'s dirty=1
 * (its write barrier, [B0] in core/shm_signal.c), and a woken side reads
 * the indexes after its dirty=0 ([B4]).
 */
#include <vbus/platform.h>
#include <vbus/ioq.h>
#include "ioq_impl.h"

static inline int ver_known(__u32 ver)
{
	return ver == IOQ_RING_VER_V5 || ver == IOQ_RING_VER_V6;
}

static inline struct ioq_ring_head_v6 *v6_head(struct ioq *ioq)
{
	return (struct ioq_ring_head_v6 *)ioq->head_desc;
}

/* ---- format, check, init ---- */

int ioq_ring_format_ver(struct ioq_ring_head *head, __u32 count, __u32 ver)
{
	if (!ioq_count_valid(count) || !ver_known(ver))
		return -EINVAL;

	memset(head, 0, IOQ_RING_SIZE(ver, count));
	head->magic = IOQ_RING_MAGIC;
	head->ver = ver;
	head->count = count;	/* same offset in v5 and v6 */
	shm_signal_desc_init(&head->signal);
	return 0;
}
VBUS_EXPORT(ioq_ring_format_ver);

int ioq_ring_format(struct ioq_ring_head *head, __u32 count)
{
	return ioq_ring_format_ver(head, count, IOQ_RING_VER);
}
VBUS_EXPORT(ioq_ring_format);

long ioq_ring_check_ver(const struct ioq_ring_head *head, __u64 len,
			__u32 count, __u32 *verp)
{
	__u32 n, ver;

	if (len < sizeof(*head))
		return -EMSGSIZE;
	if (VBUS_READ(head->magic) != IOQ_RING_MAGIC)
		return -EINVAL;
	ver = VBUS_READ(head->ver);
	if (!ver_known(ver))
		return -EPROTO;
	if (shm_signal_desc_check(&head->signal))
		return -EPROTO;

	n = VBUS_READ(head->count);
	if (!ioq_count_valid(n) || (count && n != count))
		return -EINVAL;
	if (len < IOQ_RING_SIZE(ver, (__u64)n))
		return -EMSGSIZE;
	if (verp)
		*verp = ver;
	return n;
}
VBUS_EXPORT(ioq_ring_check_ver);

long ioq_ring_check(const struct ioq_ring_head *head, __u64 len, __u32 count)
{
	return ioq_ring_check_ver(head, len, count, NULL);
}
VBUS_EXPORT(ioq_ring_check);

static void ioq_shm_signal(struct shm_signal_notifier *notifier)
{
	struct ioq *ioq = (struct ioq *)((char *)notifier -
				VBUS_OFFSETOF(struct ioq, shm_notifier));
	/* read once: the owner may clear it at teardown */
	struct ioq_notifier *n = VBUS_READ(ioq->notifier);

	/*
	 * The notifier first, then the sleepers: a waiter on ioq->wq may be
	 * waiting for what the notifier records (a count, a timestamp). Woken
	 * first, it could re-check on another CPU before the notifier ran,
	 * find nothing, sleep again and lose this wakeup until its timeout
	 * (vbus_test's event latency: a 5 s stall now and then under load).
	 * The wake orders the notifier's stores before the woken task's
	 * re-check: wake_up()'s barrier pairs with set_current_state() in
	 * the waiter's wait_event (memory-barriers.txt, "Sleep and wake-up
	 * functions"); a waiter already running re-checks under its own
	 * ordering, as for any wait_event condition.
	 */
	if (n)
		n->signal(n);
	vbus_waitq_wake(&ioq->wq);
}

/*
 * v6: seed each role's shadow and cache from the ring as it is now (zero
 * on a fresh ring; a south side that attaches late starts where the
 * counters are). Nothing read here is trusted: a cache is checked when it
 * is reloaded, and a bad shadow only makes that check fail.
 */
static void v6_bind(struct ioq *ioq)
{
	struct ioq_ring_head_v6 *h = v6_head(ioq);

	ioq->tailp = &h->tail;
	ioq->vheadp = &h->valid_head;
	ioq->iheadp = &h->inuse_head;
	ioq->ring = &h->ring[0];

	ioq->push.tail = VBUS_READ(h->tail);
	ioq->push.head = VBUS_READ(h->inuse_head);
	ioq->consume.head = VBUS_READ(h->valid_head);
	ioq->consume.tail = ioq->consume.head;	/* empty: reload first */
	ioq->reap.head = ioq->push.head;
	ioq->reap.done = ioq->reap.head;	/* none: reload first */
	/*
	 * North's own counters are read this once, into the shadows; a pair
	 * that cannot be right (the peer wrote them before we bound) would
	 * make every later room check lie, so it faults the channel now.
	 */
	if (ioq->locale == ioq_locality_north &&
	    ioq->push.tail - ioq->reap.head > ioq->count)
		ioq_faulted(ioq, "ioq: index out of range");
}

int ioq_init_ver(struct ioq *ioq, const struct ioq_ops *ops,
		 enum ioq_locality locale, struct ioq_ring_head *head,
		 struct shm_signal *signal, __u32 count, __u32 ver)
{
	if (!ioq_count_valid(count))
		return -EINVAL;
	if (!ver_known(ver))
		return -EPROTO;

	memset(ioq, 0, sizeof(*ioq));
	vbus_ref_init(&ioq->ref);
	vbus_waitq_init(&ioq->wq);

	ioq->ops = ops;
	ioq->locale = locale;
	ioq->head_desc = head;
	ioq->ver = ver;
	ioq->count = count;
	ioq->mask = count - 1;
	ioq->signal = signal;
	if (ioq_v5(ioq))
		ioq_v5_bind(ioq);
	else
		v6_bind(ioq);

	ioq->shm_notifier.signal = ioq_shm_signal;
	signal->notifier = &ioq->shm_notifier;
	return 0;
}
VBUS_EXPORT(ioq_init_ver);

int ioq_init(struct ioq *ioq, const struct ioq_ops *ops,
	     enum ioq_locality locale, struct ioq_ring_head *head,
	     struct shm_signal *signal, __u32 count)
{
	return ioq_init_ver(ioq, ops, locale, head, signal, count,
			    VBUS_READ(head->ver));
}
VBUS_EXPORT(ioq_init);

void ioq_put(struct ioq *ioq)
{
	if (vbus_ref_put(&ioq->ref)) {
		struct shm_signal *signal = ioq->signal;

		signal->notifier = NULL;
		shm_signal_put(signal);
		if (ioq->ops && ioq->ops->release)
			ioq->ops->release(ioq);
	}
}
VBUS_EXPORT(ioq_put);

/* ---- v6: the three roles' verbs ---- */

/*
 * Pusher: free slots, up to @n. The cached inuse.head says how far the
 * reaper had got; reload it only when that is not enough.
 */
static int v6_post_room(struct ioq *ioq, unsigned int n)
{
	__u32 used = ioq->push.tail - ioq->push.head;
	__u32 head;

	if (ioq->count - used >= n)
		return (int)n;
	/*
	 * [A3] the reaper's reads of the slots come before we reuse them.
	 * Its shadow, not the shared inuse_head the peer can write: a
	 * reaper on this side moves it, so it is always in range.
	 */
	head = VBUS_LOAD_ACQUIRE(ioq->reap.head);
	used = ioq->push.tail - head;
	if (used > ioq->count)
		return ioq_faulted(ioq, "ioq: inuse head out of range");
	ioq->push.head = head;
	return (int)ioq_min_u(ioq->count - used, n);
}

/*
 * A role's shadow against the shared copy of the counter it writes. Only
 * this side writes that counter, so in an honest run the two are equal
 * when we are about to publish; a difference is the peer writing a
 * counter that is not its own (rewinding our tail, say), which no later
 * check could tell from a real state. Fault rather than publish over it.
 * A plain load of our own store: nothing to order.
 */
static int v6_own_intact(struct ioq *ioq, const __u32 *p, __u32 shadow)
{
	if (VBUS_READ(*p) != shadow)
		return ioq_faulted(ioq, "ioq: peer wrote our counter");
	return 0;
}

static int v6_post_publish(struct ioq *ioq, unsigned int n)
{
	int err = v6_own_intact(ioq, ioq->tailp, ioq->push.tail);

	if (err)
		return err;
	/*
	 * The shadow first: this side's reaper and queries read it (a
	 * reader that saw the shared tail through [A1]/[A2] then sees it).
	 */
	VBUS_WRITE(ioq->push.tail, ioq->push.tail + n);
	/* [R1] the descriptor bodies before the tail; pairs with [A1] */
	VBUS_STORE_RELEASE(*ioq->tailp, ioq->push.tail);
	return 0;
}

/* Consumer: descriptors posted and not consumed, up to @n. */
static int v6_consume_avail(struct ioq *ioq, unsigned int n)
{
	__u32 avail = ioq->consume.tail - ioq->consume.head;
	__u32 tail;

	if (avail >= n)
		return (int)n;
	/* [A1] the tail before the bodies it covers; pairs with [R1] */
	tail = VBUS_LOAD_ACQUIRE(*ioq->tailp);
	avail = tail - ioq->consume.head;
	if (avail > ioq->count)
		return ioq_faulted(ioq, "ioq: tail out of range");
	ioq->consume.tail = tail;
	return (int)ioq_min_u(avail, n);
}

static int v6_consume_publish(struct ioq *ioq, unsigned int n)
{
	int err = v6_own_intact(ioq, ioq->vheadp, ioq->consume.head);

	if (err)
		return err;
	/* the shadow first: this side's queries read it */
	VBUS_WRITE(ioq->consume.head, ioq->consume.head + n);
	/*
	 * [R2] our reads of the bodies and buffers (and writes to them)
	 * before the head; pairs with [A2] in the reaper
	 */
	VBUS_STORE_RELEASE(*ioq->vheadp, ioq->consume.head);
	return 0;
}

/*
 * Reaper: completions (consumed and not reaped), up to @n. A valid.head
 * behind our inuse.head or past the tail is the peer's corruption.
 */
static int v6_reap_avail(struct ioq *ioq, unsigned int n)
{
	__u32 avail = ioq->reap.done - ioq->reap.head;
	__u32 done, posted;

	if (avail >= n)
		return (int)n;
	/* [A2] valid.head before the completions; pairs with [R2] */
	done = VBUS_LOAD_ACQUIRE(*ioq->vheadp);
	/*
	 * The tail only to bound valid.head: [A2] saw a head that the
	 * consumer moved after its [A1] of this tail or a later one. The
	 * pusher's shadow, not the shared tail the peer can write; the
	 * pusher stored it before its [R1], so [A2] makes it visible here.
	 */
	posted = VBUS_READ(ioq->push.tail) - ioq->reap.head;
	avail = done - ioq->reap.head;
	if (posted > ioq->count || avail > posted)
		return ioq_faulted(ioq, "ioq: valid head out of range");
	ioq->reap.done = done;
	return (int)ioq_min_u(avail, n);
}

static int v6_reap_publish(struct ioq *ioq, unsigned int n)
{
	int err = v6_own_intact(ioq, ioq->iheadp, ioq->reap.head);

	if (err)
		return err;
	/*
	 * [R3] our reads of the completions before the head, the shadow
	 * (north's pusher reads it, [A3]) and then the shared copy (the
	 * peer's queries)
	 */
	VBUS_STORE_RELEASE(ioq->reap.head, ioq->reap.head + n);
	VBUS_STORE_RELEASE(*ioq->iheadp, ioq->reap.head);
	return 0;
}

/* The role this side plays on an index, or none. */
static enum ioq_role role_of(struct ioq *ioq, enum ioq_idx_type type)
{
	int north = ioq->locale == ioq_locality_north;

	switch (type) {
	case ioq_idx_push:
		return north ? ioq_role_push : ioq_role_none;
	case ioq_idx_consume:
		return north ? ioq_role_none : ioq_role_consume;
	case ioq_idx_reap:
		return north ? ioq_role_reap : ioq_role_none;
	default:
		return ioq_role_none;
	}
}

/*
 * Counters of an index, read for a query (not a role's hot path). All
 * three, in the order they move (inuse head, valid head, tail): an honest
 * ring then always reads inuse_head <= valid_head <= tail with at most
 * count between the ends, even while the roles run. A valid head outside
 * [inuse_head, tail] is no more possible than a window over count, and
 * faults the same way, after the same bounded re-reads as
 * ioq_load_pair() (a query may catch the counters at different moments).
 * This side's own counters come from the roles' shadows (north: inuse
 * head and tail; south: valid head), only the peer's from shared memory.
 */
static int v6_count(struct ioq *ioq, enum ioq_idx_type type,
		    __u32 *headp, __u32 *tailp)
{
	int north = ioq->locale == ioq_locality_north;
	int tries = 3;
	__u32 ih, vh, t, head;

	do {
		/* [A3], [A2], [A1]: as the roles' reloads; a query reads all */
		ih = VBUS_LOAD_ACQUIRE(*(north ? &ioq->reap.head :
					 ioq->iheadp));
		vh = north ? VBUS_LOAD_ACQUIRE(*ioq->vheadp) :
			     VBUS_READ(ioq->consume.head);
		t = north ? VBUS_READ(ioq->push.tail) :
			    VBUS_LOAD_ACQUIRE(*ioq->tailp);
		if (t - ih <= ioq->count && vh - ih <= t - ih)
			break;
	} while (--tries);

	if (!tries)
		return ioq_faulted(ioq, "ioq: index out of range");
	head = type == ioq_idx_consume ? vh : ih;
	if (headp)
		*headp = head;
	if (tailp)
		*tailp = t;
	return (int)(t - head);
}

/* ---- queries ---- */

static int count_of(struct ioq *ioq, enum ioq_idx_type type,
		    __u32 *headp, __u32 *tailp)
{
	if (type != ioq_idx_consume && type != ioq_idx_reap)
		return -EINVAL;
	if (ioq_broken(ioq))
		return -EIO;
	if (ioq_v5(ioq))
		return ioq_v5_count(ioq, type, headp, tailp);
	return v6_count(ioq, type, headp, tailp);
}

int ioq_count(struct ioq *ioq, enum ioq_idx_type type)
{
	return count_of(ioq, type, NULL, NULL);
}
VBUS_EXPORT(ioq_count);

int ioq_remain(struct ioq *ioq, enum ioq_idx_type type)
{
	int n = ioq_count(ioq, type);

	return n < 0 ? n : (int)ioq->count - n;
}
VBUS_EXPORT(ioq_remain);

int ioq_size(struct ioq *ioq)
{
	return (int)ioq->count;
}
VBUS_EXPORT(ioq_size);

/* Errors read as full: a caller that stops producing is the safe answer. */
int ioq_full(struct ioq *ioq, enum ioq_idx_type type)
{
	int n = ioq_count(ioq, type);

	return n < 0 ? n : n == (int)ioq->count;
}
VBUS_EXPORT(ioq_full);

/* Errors read as empty: a caller that stops consuming is the safe answer. */
int ioq_empty(struct ioq *ioq, enum ioq_idx_type type)
{
	int n = ioq_count(ioq, type);

	return n < 0 ? n : n == 0;
}
VBUS_EXPORT(ioq_empty);

/* ---- iterators ---- */

static void iter_setpos(struct ioq_iterator *iter, __u32 pos)
{
	iter->pos = pos;
	iter->desc = ioq_desc(iter->ioq, pos);
}

static int iter_signal(struct ioq_iterator *iter)
{
	/* shm_signal_inject() orders the index stores before dirty=1 [B0] */
	return iter->update ? ioq_signal(iter->ioq, 0) : 0;
}

int ioq_iter_init(struct ioq *ioq, struct ioq_iterator *iter,
		  enum ioq_idx_type type, int flags)
{
	iter->ioq = ioq;
	iter->update = !!(flags & IOQ_ITER_AUTOUPDATE);
	iter->flipowner = !(flags & IOQ_ITER_REAP);
	iter->dualidx = 0;
	iter->pos = 0;
	iter->desc = NULL;
	iter->role = role_of(ioq, type);

	if (type == ioq_idx_push) {
		/* walk the valid index; push moves the inuse tail along */
		type = ioq_idx_consume;
		iter->dualidx = 1;
	}
	iter->type = type;

	iter->idx = NULL;	/* v6 has no ioq_ring_idx */
	if (type != ioq_idx_consume && type != ioq_idx_reap)
		return -EINVAL;
	if (ioq_v5(ioq))
		iter->idx = ioq_v5_idx(ioq, type);
	return 0;
}
VBUS_EXPORT(ioq_iter_init);

/* v6: where the walked index starts and ends, as this iterator's role sees it */
static __u32 v6_iter_head(struct ioq_iterator *iter)
{
	struct ioq *ioq = iter->ioq;

	switch (iter->role) {
	case ioq_role_consume:
		return ioq->consume.head;
	case ioq_role_reap:
		return ioq->reap.head;
	default:
		return VBUS_READ(*(iter->type == ioq_idx_consume ?
				   ioq->vheadp : ioq->iheadp));
	}
}

static __u32 v6_iter_tail(struct ioq_iterator *iter)
{
	/* north's tail is the pusher's shadow, never the shared copy */
	if (iter->ioq->locale == ioq_locality_north)
		return VBUS_READ(iter->ioq->push.tail);
	return VBUS_READ(*iter->ioq->tailp);
}

static __u32 iter_head(struct ioq_iterator *iter)
{
	if (ioq_v5(iter->ioq))
		return ioq_v5_iter_head(iter);
	return v6_iter_head(iter);
}

int ioq_iter_seek(struct ioq_iterator *iter, enum ioq_seek_type type,
		  long offset, int flags)
{
	(void)flags;

	switch (type) {
	case ioq_seek_next:
		iter_setpos(iter, iter->pos + 1);
		break;
	case ioq_seek_tail:
		iter_setpos(iter, ioq_v5(iter->ioq) ?
			    ioq_v5_iter_tail(iter) : v6_iter_tail(iter));
		break;
	case ioq_seek_head:
		iter_setpos(iter, iter_head(iter));
		break;
	case ioq_seek_set: {
		/*
		 * @offset is a slot, as in v4. Positions are free-running, so
		 * take the one in the window [head, head + count) that maps to
		 * that slot: after the first lap a bare "pos = offset" would
		 * match no head or tail ever again.
		 */
		__u32 head;

		if (offset < 0 || offset >= (long)iter->ioq->count)
			return -EINVAL;
		head = iter_head(iter);
		iter_setpos(iter, head + (((__u32)offset - head) &
					  iter->ioq->mask));
		break;
	}
	default:
		return -EINVAL;
	}
	return 0;
}
VBUS_EXPORT(ioq_iter_seek);

/*
 * v6: inside the role's window, reloading the cached peer counter ([A1]
 * or [A2]) only when the cache does not reach @pos.
 */
static int v6_iter_owned(struct ioq_iterator *iter)
{
	struct ioq *ioq = iter->ioq;
	__u32 d;
	int n;

	switch (iter->role) {
	case ioq_role_consume:
		d = iter->pos - ioq->consume.head;
		if (d >= ioq->count)
			return 0;
		n = v6_consume_avail(ioq, d + 1);
		break;
	case ioq_role_reap:
		d = iter->pos - ioq->reap.head;
		if (d >= ioq->count)
			return 0;
		n = v6_reap_avail(ioq, d + 1);
		break;
	default:
		return 0;
	}
	return n > 0 && (__u32)n > d;
}

int ioq_iter_owned(struct ioq_iterator *iter)
{
	if (!iter->desc || ioq_broken(iter->ioq))
		return 0;
	if (ioq_v5(iter->ioq))
		return ioq_v5_iter_owned(iter);
	return v6_iter_owned(iter);
}
VBUS_EXPORT(ioq_iter_owned);

static int v6_iter_push(struct ioq_iterator *iter)
{
	struct ioq *ioq = iter->ioq;
	int room;

	if (iter->role != ioq_role_push)
		return -EINVAL;
	room = v6_post_room(ioq, 1);
	if (room <= 0)
		return room ? room : -ENOSPC;	/* full first, as in v5 */
	if (!iter->desc || iter->pos != ioq->push.tail)
		return -EINVAL;
	return v6_post_publish(ioq, 1);		/* [R1] */
}

int ioq_iter_push(struct ioq_iterator *iter, int flags)
{
	int ret;

	(void)flags;
	if (ioq_broken(iter->ioq))
		return -EIO;
	if (ioq_v5(iter->ioq))
		ret = ioq_v5_iter_push(iter);
	else
		ret = v6_iter_push(iter);
	if (ret)
		return ret;
	iter_setpos(iter, iter->pos + 1);
	return iter_signal(iter);
}
VBUS_EXPORT(ioq_iter_push);

static int v6_iter_pop(struct ioq_iterator *iter)
{
	struct ioq *ioq = iter->ioq;
	int n;

	switch (iter->role) {
	case ioq_role_consume:
		n = v6_consume_avail(ioq, 1);
		if (n <= 0)
			return n ? n : -ENOENT;
		if (!iter->desc || iter->pos != ioq->consume.head)
			return -EINVAL;
		return v6_consume_publish(ioq, 1);	/* [R2] */
	case ioq_role_reap:
		n = v6_reap_avail(ioq, 1);
		if (n < 0)
			return n;
		if (!n)	/* empty, or posted and not consumed yet */
			return VBUS_READ(ioq->push.tail) == ioq->reap.head ?
			       -ENOENT : -EINVAL;
		if (!iter->desc || iter->pos != ioq->reap.head)
			return -EINVAL;
		return v6_reap_publish(ioq, 1);		/* [R3] */
	default:
		return -EINVAL;
	}
}

int ioq_iter_pop(struct ioq_iterator *iter, int flags)
{
	int ret;

	(void)flags;
	if (ioq_broken(iter->ioq))
		return -EIO;
	if (ioq_v5(iter->ioq))
		ret = ioq_v5_iter_pop(iter);
	else
		ret = v6_iter_pop(iter);
	if (ret)
		return ret;
	iter_setpos(iter, iter->pos + 1);
	return iter_signal(iter);
}
VBUS_EXPORT(ioq_iter_pop);

/* ---- bulk: begin claims, the caller fills or reads, end publishes ---- */

static int end_signal(struct ioq *ioq, int flags)
{
	return (flags & IOQ_ITER_AUTOUPDATE) ? ioq_signal(ioq, 0) : 0;
}

static int is_north(struct ioq *ioq)
{
	return ioq->locale == ioq_locality_north;
}

int ioq_post_begin(struct ioq *ioq, unsigned int n, __u32 *pos)
{
	if (!is_north(ioq))
		return -EINVAL;
	if (ioq_broken(ioq))
		return -EIO;
	if (ioq_v5(ioq))
		return ioq_v5_post_begin(ioq, n, pos);
	*pos = ioq->push.tail;
	return v6_post_room(ioq, n);
}
VBUS_EXPORT(ioq_post_begin);

int ioq_post_end(struct ioq *ioq, unsigned int n, int flags)
{
	int ret;

	if (!is_north(ioq))
		return -EINVAL;
	if (ioq_broken(ioq))
		return -EIO;
	if (ioq_v5(ioq)) {
		ret = ioq_v5_post_end(ioq, n);		/* [R4], [R1] */
		if (ret)
			return ret;
	} else {
		if (n > ioq->count - (ioq->push.tail - ioq->push.head))
			return -EINVAL;
		ret = v6_post_publish(ioq, n);		/* [R1] */
		if (ret)
			return ret;
	}
	return end_signal(ioq, flags);
}
VBUS_EXPORT(ioq_post_end);

int ioq_consume_begin(struct ioq *ioq, unsigned int n, __u32 *pos)
{
	if (is_north(ioq))
		return -EINVAL;
	if (ioq_broken(ioq))
		return -EIO;
	if (ioq_v5(ioq))
		return ioq_v5_take_begin(ioq, ioq_idx_consume, n, pos);
	*pos = ioq->consume.head;
	return v6_consume_avail(ioq, n);
}
VBUS_EXPORT(ioq_consume_begin);

int ioq_consume_end(struct ioq *ioq, unsigned int n, int flags)
{
	int ret;

	if (is_north(ioq))
		return -EINVAL;
	if (ioq_broken(ioq))
		return -EIO;
	if (ioq_v5(ioq)) {
		/* [R2], [R4] */
		ret = ioq_v5_take_end(ioq, ioq_idx_consume, n, 1);
		if (ret)
			return ret;
	} else {
		if (n > ioq->consume.tail - ioq->consume.head)
			return -EINVAL;
		ret = v6_consume_publish(ioq, n);	/* [R2] */
		if (ret)
			return ret;
	}
	return end_signal(ioq, flags);
}
VBUS_EXPORT(ioq_consume_end);

int ioq_reap_begin(struct ioq *ioq, unsigned int n, __u32 *pos)
{
	if (!is_north(ioq))
		return -EINVAL;
	if (ioq_broken(ioq))
		return -EIO;
	if (ioq_v5(ioq))
		return ioq_v5_take_begin(ioq, ioq_idx_reap, n, pos);
	*pos = ioq->reap.head;
	return v6_reap_avail(ioq, n);
}
VBUS_EXPORT(ioq_reap_begin);

int ioq_reap_end(struct ioq *ioq, unsigned int n, int flags)
{
	int ret;

	if (!is_north(ioq))
		return -EINVAL;
	if (ioq_broken(ioq))
		return -EIO;
	if (ioq_v5(ioq)) {
		/* [R3] */
		ret = ioq_v5_take_end(ioq, ioq_idx_reap, n, 0);
		if (ret)
			return ret;
	} else {
		if (n > ioq->reap.done - ioq->reap.head)
			return -EINVAL;
		ret = v6_reap_publish(ioq, n);		/* [R3] */
		if (ret)
			return ret;
	}
	return end_signal(ioq, flags);
}
VBUS_EXPORT(ioq_reap_end);

/* The body of a descriptor, never its v5 ownership byte. */
static void desc_fill(struct ioq_ring_desc *to, const struct ioq_ring_desc *from)
{
	to->cookie = from->cookie;
	to->ptr = from->ptr;
	to->len = from->len;
	to->valid = from->valid;
}

int ioq_push_bulk(struct ioq *ioq, const struct ioq_ring_desc *descs,
		  unsigned int n, int flags)
{
	unsigned int i;
	__u32 pos;
	int k, err;

	k = ioq_post_begin(ioq, n, &pos);
	if (k < 0)
		return k;
	if ((unsigned int)k < n)
		return -ENOSPC;
	for (i = 0; i < n; i++)
		desc_fill(ioq_desc(ioq, pos + i), &descs[i]);
	err = ioq_post_end(ioq, n, flags);
	return err < 0 ? err : (int)n;
}
VBUS_EXPORT(ioq_push_bulk);

static int take_burst(struct ioq *ioq, struct ioq_ring_desc *descs,
		      unsigned int n, int flags,
		      int (*begin)(struct ioq *, unsigned int, __u32 *),
		      int (*end)(struct ioq *, unsigned int, int))
{
	unsigned int i;
	__u32 pos;
	int k, err;

	k = begin(ioq, n, &pos);
	if (k <= 0)
		return k;
	for (i = 0; i < (unsigned int)k; i++)
		descs[i] = *ioq_desc(ioq, pos + i);
	err = end(ioq, (unsigned int)k, flags);
	return err < 0 ? err : k;
}

int ioq_consume_burst(struct ioq *ioq, struct ioq_ring_desc *descs,
		      unsigned int n, int flags)
{
	return take_burst(ioq, descs, n, flags, ioq_consume_begin,
			  ioq_consume_end);
}
VBUS_EXPORT(ioq_consume_burst);

int ioq_reap_burst(struct ioq *ioq, struct ioq_ring_desc *descs,
		   unsigned int n, int flags)
{
	return take_burst(ioq, descs, n, flags, ioq_reap_begin, ioq_reap_end);
}
VBUS_EXPORT(ioq_reap_burst);
