/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * IOQ: a lockless shared-memory descriptor ring with an embedded shm-signal.
 *
 * The ring is an array of descriptors, each with an ownership bit (sown:
 * 1 = owned by the south side, 0 = north) and two indexes over it:
 *   - valid: descriptors that carry something the owner should look at;
 *   - inuse: descriptors handed out and not yet reaped (used with
 *     ioq_idxtype_both by the side that pushes, to reap completions).
 *
 * Wire ABI version 5 (the 2009 series was version 4): head and tail are
 * free-running 32-bit counters, each written by exactly one side (tail by the
 * side that pushes, head by the side that pops). count = tail - head,
 * full = (count == size), slot = index & (size - 1), size a power of two.
 * Version 4 kept a "full" byte written by both sides that gave wrong answers
 * while the other side worked (an empty ring read as full, a full ring as
 * empty); that byte is now reserved and must be 0.
 *
 * Usage protocol (every driver and the host follow it; see core/ioq.c):
 *   north posts with ioq_idxtype_both, south consumes on ioq_idxtype_valid
 *   (pop hands the descriptor back), north reaps on ioq_idxtype_inuse with
 *   IOQ_ITER_NOFLIPOWNER. One writer per shared index.
 */
#ifndef VBUS_IOQ_H
#define VBUS_IOQ_H

#include <vbus/platform.h>
#include <vbus/shm_signal.h>

#define IOQ_RING_MAGIC 0x47fa2fe4
#define IOQ_RING_VER   5

/* Largest ring we accept from a peer: bounds allocations and loops. */
#define IOQ_RING_MAX_COUNT (1u << 16)

struct ioq_ring_desc {
	__u64 cookie;	/* for arbitrary use by the north side */
	__u64 ptr;
	__u64 len;
	__u8 valid;
	__u8 sown;	/* south owned = 1, north owned = 0 */
	__u8 reserved[6];
};

struct ioq_ring_idx {
	__u32 head;	/* free-running; written by the popping side */
	__u32 tail;	/* free-running; written by the pushing side */
	__u8 reserved_full;	/* v4's two-writer "full" flag: must be 0 */
	__u8 reserved[3];
};

enum ioq_locality {
	ioq_locality_north,
	ioq_locality_south,
};

struct ioq_ring_head {
	__u32 magic;
	__u32 ver;
	struct shm_signal_desc signal;
	struct ioq_ring_idx idx[2];
	__u32 count;
	__u32 reserved;	/* explicit: the ring is 8-byte aligned */
	struct ioq_ring_desc ring[];	/* "count" elements */
};

VBUS_STATIC_ASSERT(sizeof(struct ioq_ring_desc) == 32, "ioq_ring_desc");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct ioq_ring_desc, ptr) == 8, "desc.ptr");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct ioq_ring_desc, len) == 16, "desc.len");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct ioq_ring_desc, valid) == 24,
		   "desc.valid");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct ioq_ring_desc, sown) == 25,
		   "desc.sown");
VBUS_STATIC_ASSERT(sizeof(struct ioq_ring_idx) == 12, "ioq_ring_idx");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct ioq_ring_idx, tail) == 4, "idx.tail");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct ioq_ring_head, signal) == 8,
		   "head.signal");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct ioq_ring_head, idx) == 24,
		   "head.idx");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct ioq_ring_head, count) == 48,
		   "head.count");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct ioq_ring_head, ring) == 56,
		   "head.ring");
VBUS_STATIC_ASSERT(sizeof(struct ioq_ring_head) == 56, "ioq_ring_head");

#define IOQ_HEAD_DESC_SIZE(count) \
	(sizeof(struct ioq_ring_head) + sizeof(struct ioq_ring_desc) * (count))

/* --- end of wire ABI --- */

enum ioq_idx_type {
	ioq_idxtype_valid,
	ioq_idxtype_inuse,
	ioq_idxtype_both,
	ioq_idxtype_invalid,
};

enum ioq_seek_type {
	ioq_seek_tail,
	ioq_seek_next,
	ioq_seek_head,
	ioq_seek_set
};

struct ioq;

struct ioq_iterator {
	struct ioq *ioq;
	struct ioq_ring_idx *idx;
	__u32 pos;			/* free-running position */
	struct ioq_ring_desc *desc;	/* &ring[pos & mask] */
	unsigned int update:1;
	unsigned int dualidx:1;
	unsigned int flipowner:1;
};

struct ioq_notifier {
	void (*signal)(struct ioq_notifier *);
};

struct ioq_ops {
	void (*release)(struct ioq *ioq);
};

struct ioq {
	const struct ioq_ops *ops;
	vbus_ref_t ref;
	enum ioq_locality locale;
	struct ioq_ring_head *head_desc;
	struct ioq_ring_desc *ring;
	struct shm_signal *signal;
	vbus_waitq_t wq;
	struct ioq_notifier *notifier;
	__u32 count;	/* local copy: never re-read from shared memory */
	__u32 mask;
	struct shm_signal_notifier shm_notifier;
};

#define IOQ_ITER_AUTOUPDATE  (1 << 0)
#define IOQ_ITER_NOFLIPOWNER (1 << 1)

/* A ring size every side accepts: a power of two, 1 .. IOQ_RING_MAX_COUNT. */
static inline int ioq_count_valid(__u32 count)
{
	return count && !(count & (count - 1)) && count <= IOQ_RING_MAX_COUNT;
}

/*
 * Format a ring for use (north side, before the south side sees it):
 * magic, version, count, zeroed indexes, every descriptor north-owned, and
 * the embedded signal descriptor. @count must be a power of two, 1 ..
 * IOQ_RING_MAX_COUNT. Returns 0 or -EINVAL.
 */
int ioq_ring_format(struct ioq_ring_head *head, __u32 count);

/*
 * Check a ring header that the peer formatted, in memory of @len bytes:
 * magic, version, a count the caller expects (@count, or any valid count
 * when 0), and that the whole ring fits. Reads each field once. On success
 * returns the ring's count (> 0); else -EINVAL / -EPROTO / -EMSGSIZE.
 */
long ioq_ring_check(const struct ioq_ring_head *head, __u64 len,
		    __u32 count);

/*
 * Bind a local context to a ring. @count is the caller's own idea of the
 * size (it is never re-read from shared memory). Takes over the caller's
 * reference on @signal (dropped by the last ioq_put()). Returns 0 or -EINVAL
 * for a count that is not a power of two.
 */
int ioq_init(struct ioq *ioq, const struct ioq_ops *ops,
	     enum ioq_locality locale, struct ioq_ring_head *head,
	     struct shm_signal *signal, __u32 count);

static inline struct ioq *ioq_get(struct ioq *ioq)
{
	vbus_ref_get(&ioq->ref);
	return ioq;
}

void ioq_put(struct ioq *ioq);

static inline int ioq_notify_enable(struct ioq *ioq, int flags)
{
	(void)flags;
	return shm_signal_enable(ioq->signal, 0);
}

static inline int ioq_notify_disable(struct ioq *ioq, int flags)
{
	(void)flags;
	return shm_signal_disable(ioq->signal, 0);
}

static inline int ioq_signal(struct ioq *ioq, int flags)
{
	(void)flags;
	return shm_signal_inject(ioq->signal, 0);
}

/*
 * Queries. Each reads the shared indexes once; a pair that the peer has
 * corrupted (more than size descriptors in flight) faults the channel and
 * returns -EIO.
 */
int ioq_count(struct ioq *ioq, enum ioq_idx_type type);
int ioq_remain(struct ioq *ioq, enum ioq_idx_type type);
int ioq_size(struct ioq *ioq);
int ioq_full(struct ioq *ioq, enum ioq_idx_type type);
int ioq_empty(struct ioq *ioq, enum ioq_idx_type type);

int ioq_iter_init(struct ioq *ioq, struct ioq_iterator *iter,
		  enum ioq_idx_type type, int flags);
/*
 * Move the iterator: to the index's tail or head, to the next position, or
 * (ioq_seek_set) to slot @offset (0 .. count-1) of the window that starts
 * at the head. Returns 0 or -EINVAL (bad type, @offset out of range).
 */
int ioq_iter_seek(struct ioq_iterator *iter, enum ioq_seek_type type,
		  long offset, int flags);
/*
 * Push: -ENOSPC when the ring is full (checked first: "try later"), else
 * only at the tail and only when we own the descriptor (-EINVAL).
 * Publishes the descriptor to the peer (flips sown unless
 * IOQ_ITER_NOFLIPOWNER), advances the tail, moves the iterator to the next
 * slot and signals the peer with IOQ_ITER_AUTOUPDATE.
 */
int ioq_iter_push(struct ioq_iterator *iter, int flags);
/*
 * Pop: -ENOENT when the index is empty (checked first), else only at the
 * head and only when we own it (-EINVAL).
 */
int ioq_iter_pop(struct ioq_iterator *iter, int flags);

/*
 * True when the descriptor under the iterator is inside its index's window
 * (head <= pos < tail) and owned by this side: "there is one here for me".
 * Consumers loop on it (south on valid, north reaping inuse). Use it, not a
 * plain read of desc->sown, before reading the descriptor body: it carries
 * the read barriers that pair with the writer's publication. A corrupted
 * index pair faults the channel and reads as false.
 */
int ioq_iter_owned(struct ioq_iterator *iter);

#endif /* VBUS_IOQ_H */
