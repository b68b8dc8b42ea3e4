// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * IOQ: portable core, compiled into the kernel modules and libioq.
 *
 * How the two sides use a ring (ring version 5; see <vbus/ioq.h>):
 *
 *   north posts     push on ioq_idxtype_both: valid.tail and inuse.tail
 *                   advance together, sown flips to south
 *   south consumes  iterate valid from its head while a descriptor is
 *                   south-owned; pop flips sown back to north and advances
 *                   valid.head
 *   north reaps     iterate inuse from its head while a descriptor is
 *                   north-owned; pop with IOQ_ITER_NOFLIPOWNER advances
 *                   inuse.head, and the slot can be posted again
 *
 * So each shared index has one writer: valid.tail, inuse.tail and
 * inuse.head are north's, valid.head is south's. The count of an index is
 * tail - head in u32 arithmetic; anything above the ring size means the
 * peer corrupted it, and faults the channel.
 *
 * Memory model: ownership bytes and indexes are published with release
 * stores and read with acquire loads (virt_store_release/virt_load_acquire
 * in the kernel; plain moves on x86). Order of the stores:
 *   push: caller's descriptor body, then sown (release), then tail (release)
 *         - a peer that sees the tail move (acquire) sees sown and body;
 *   pop:  head (release), then sown (release)
 *         - the release on head also orders the caller's earlier READS of
 *           the descriptor and its buffer before the hand-back; and a
 *           reaper that sees sown flipped (acquire) already sees the head
 *           moved, so "inuse has room" implies "valid has room" and the
 *           next push cannot fail with -ENOSPC.
 * ioq_iter_owned() is the reader's side: window (acquire on the index),
 * then sown (acquire), then the caller reads the body.
 */
#include <vbus/platform.h>
#include <vbus/ioq.h>

static inline int is_pow2(__u32 n)
{
	return n && !(n & (n - 1));
}

int ioq_ring_format(struct ioq_ring_head *head, __u32 count)
{
	if (!is_pow2(count) || count > IOQ_RING_MAX_COUNT)
		return -EINVAL;

	memset(head, 0, IOQ_HEAD_DESC_SIZE(count));
	head->magic = IOQ_RING_MAGIC;
	head->ver = IOQ_RING_VER;
	head->count = count;
	shm_signal_desc_init(&head->signal);
	return 0;
}
VBUS_EXPORT(ioq_ring_format);

long ioq_ring_check(const struct ioq_ring_head *head, __u64 len, __u32 count)
{
	__u32 n;

	if (len < sizeof(*head))
		return -EMSGSIZE;
	if (VBUS_READ(head->magic) != IOQ_RING_MAGIC)
		return -EINVAL;
	if (VBUS_READ(head->ver) != IOQ_RING_VER)
		return -EPROTO;
	if (shm_signal_desc_check(&head->signal))
		return -EPROTO;

	n = VBUS_READ(head->count);
	if (!is_pow2(n) || n > IOQ_RING_MAX_COUNT || (count && n != count))
		return -EINVAL;
	if (len < IOQ_HEAD_DESC_SIZE((__u64)n))
		return -EMSGSIZE;
	return n;
}
VBUS_EXPORT(ioq_ring_check);

static void ioq_shm_signal(struct shm_signal_notifier *notifier)
{
	struct ioq *ioq = (struct ioq *)((char *)notifier -
				VBUS_OFFSETOF(struct ioq, shm_notifier));
	/* read once: the owner may clear it at teardown */
	struct ioq_notifier *n = VBUS_READ(ioq->notifier);

	vbus_waitq_wake(&ioq->wq);
	if (n)
		n->signal(n);
}

int ioq_init(struct ioq *ioq, const struct ioq_ops *ops,
	     enum ioq_locality locale, struct ioq_ring_head *head,
	     struct shm_signal *signal, __u32 count)
{
	if (!is_pow2(count) || count > IOQ_RING_MAX_COUNT)
		return -EINVAL;

	memset(ioq, 0, sizeof(*ioq));
	vbus_ref_init(&ioq->ref);
	vbus_waitq_init(&ioq->wq);

	ioq->ops = ops;
	ioq->locale = locale;
	ioq->head_desc = head;
	ioq->ring = &head->ring[0];
	ioq->count = count;
	ioq->mask = count - 1;
	ioq->signal = signal;

	ioq->shm_notifier.signal = ioq_shm_signal;
	signal->notifier = &ioq->shm_notifier;
	return 0;
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

static struct ioq_ring_idx *idxtype_to_idx(struct ioq *ioq,
					   enum ioq_idx_type type)
{
	switch (type) {
	case ioq_idxtype_valid:
	case ioq_idxtype_inuse:
		return &ioq->head_desc->idx[type];
	default:
		return NULL;
	}
}

/*
 * Descriptors in flight on @idx, or -EIO (and the channel faulted) when the
 * pair cannot be right. A reader that writes neither counter of the index
 * (a dump tool, a test observer) can catch head and tail at different
 * moments and see more than count in flight for an instant: re-read a
 * bounded number of times before calling it corruption.
 */
static int idx_count(struct ioq *ioq, struct ioq_ring_idx *idx,
		     __u32 *headp, __u32 *tailp)
{
	int tries = 3;
	__u32 head, tail;

	do {
		/*
		 * Acquire: the descriptors counted here are read after the
		 * index. Pairs with the release stores in ioq_iter_push()
		 * (tail) and ioq_iter_pop() (head).
		 */
		head = VBUS_LOAD_ACQUIRE(idx->head);
		tail = VBUS_LOAD_ACQUIRE(idx->tail);
		if (tail - head <= ioq->count)
			break;
	} while (--tries);

	if (!tries) {
		SHM_SIGNAL_FAULT(ioq->signal, "ioq: index out of range");
		return -EIO;
	}
	if (headp)
		*headp = head;
	if (tailp)
		*tailp = tail;
	return (int)(tail - head);
}

int ioq_count(struct ioq *ioq, enum ioq_idx_type type)
{
	struct ioq_ring_idx *idx = idxtype_to_idx(ioq, type);

	if (!idx)
		return -EINVAL;
	return idx_count(ioq, idx, NULL, NULL);
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

static void iter_setpos(struct ioq_iterator *iter, __u32 pos)
{
	iter->pos = pos;
	iter->desc = &iter->ioq->ring[pos & iter->ioq->mask];
}

int ioq_iter_init(struct ioq *ioq, struct ioq_iterator *iter,
		  enum ioq_idx_type type, int flags)
{
	iter->ioq = ioq;
	iter->update = !!(flags & IOQ_ITER_AUTOUPDATE);
	iter->flipowner = !(flags & IOQ_ITER_NOFLIPOWNER);
	iter->dualidx = 0;
	iter->pos = 0;
	iter->desc = NULL;

	if (type == ioq_idxtype_both) {
		/* walk the valid index; push moves the inuse tail along */
		type = ioq_idxtype_valid;
		iter->dualidx = 1;
	}

	iter->idx = idxtype_to_idx(ioq, type);
	if (!iter->idx)
		return -EINVAL;
	return 0;
}
VBUS_EXPORT(ioq_iter_init);

int ioq_iter_seek(struct ioq_iterator *iter, enum ioq_seek_type type,
		  long offset, int flags)
{
	(void)flags;

	switch (type) {
	case ioq_seek_next:
		iter_setpos(iter, iter->pos + 1);
		break;
	case ioq_seek_tail:
		iter_setpos(iter, VBUS_READ(iter->idx->tail));
		break;
	case ioq_seek_head:
		iter_setpos(iter, VBUS_READ(iter->idx->head));
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
		head = VBUS_READ(iter->idx->head);
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

int ioq_iter_owned(struct ioq_iterator *iter)
{
	__u32 head;
	int n, owned;

	if (!iter->desc)
		return 0;
	/*
	 * Inside the index's window first: past the tail there is nothing
	 * for us even if the slot's sown happens to match (a reaped slot
	 * that has not been posted again is north-owned).
	 */
	n = idx_count(iter->ioq, iter->idx, &head, NULL);
	if (n <= 0 || iter->pos - head >= (__u32)n)
		return 0;
	/*
	 * Acquire: the caller reads the descriptor body after this. Pairs
	 * with the release store of sown in ioq_iter_push()/ioq_iter_pop().
	 * The window check above already loaded the index with acquire.
	 */
	owned = VBUS_LOAD_ACQUIRE(iter->desc->sown) ==
		(__u8)iter->ioq->locale;
	return owned;
}
VBUS_EXPORT(ioq_iter_owned);

/* Flip the descriptor under the iterator to the peer (unless NOFLIPOWNER). */
static void hand_over(struct ioq_iterator *iter)
{
	/*
	 * Release: the caller's descriptor body (and, on pop, its reads of
	 * it) before the flip. Pairs with the acquire in the peer's
	 * ioq_iter_owned().
	 */
	if (iter->flipowner)
		VBUS_STORE_RELEASE(iter->desc->sown,
				   (__u8)!iter->ioq->locale);
}

int ioq_iter_push(struct ioq_iterator *iter, int flags)
{
	struct ioq *ioq = iter->ioq;
	struct ioq_ring_idx *inuse = &ioq->head_desc->idx[ioq_idxtype_inuse];
	__u32 tail;
	int n;

	(void)flags;
	n = idx_count(ioq, iter->idx, NULL, &tail);
	if (n < 0)
		return n;

	if (iter->dualidx) {
		__u32 itail;
		int in = idx_count(ioq, inuse, NULL, &itail);

		if (in < 0)
			return in;
		if (itail != tail) {
			SHM_SIGNAL_FAULT(ioq->signal,
					 "ioq: tails not synchronized");
			return -EIO;
		}
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

	hand_over(iter);
	/*
	 * Release: sown and the body before the tail. Pairs with the acquire
	 * in the peer's idx_count(). inuse.tail is north-private in use but
	 * shares the rule.
	 */
	VBUS_STORE_RELEASE(iter->idx->tail, tail + 1);
	if (iter->dualidx)
		VBUS_STORE_RELEASE(inuse->tail, tail + 1);

	iter_setpos(iter, tail + 1);

	/* shm_signal_inject() orders the index stores before dirty=1 */
	if (iter->update)
		return ioq_signal(ioq, 0);
	return 0;
}
VBUS_EXPORT(ioq_iter_push);

int ioq_iter_pop(struct ioq_iterator *iter, int flags)
{
	struct ioq *ioq = iter->ioq;
	__u32 head;
	int n;

	(void)flags;
	n = idx_count(ioq, iter->idx, &head, NULL);
	if (n < 0)
		return n;
	/* empty first, for the same reason as full in ioq_iter_push() */
	if (n == 0)
		return -ENOENT;
	if (!iter->desc || iter->pos != head)
		return -EINVAL;
	if (VBUS_READ(iter->desc->sown) != (__u8)ioq->locale)
		return -EINVAL;

	/*
	 * Release: our reads of the descriptor and its buffer complete
	 * before the head moves (the producer may reuse the slot once it
	 * sees it). Head before sown, see the top of this file.
	 */
	VBUS_STORE_RELEASE(iter->idx->head, head + 1);
	hand_over(iter);

	iter_setpos(iter, head + 1);

	if (iter->update)
		return ioq_signal(ioq, 0);
	return 0;
}
VBUS_EXPORT(ioq_iter_pop);
