/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * IOQ: a lockless shared-memory descriptor ring with an embedded shm-signal.
 *
 * The ring is an array of descriptors, each with an ownership bit (sown:
 * 1 = owned by the south side, 0 = north; v5 only) and two indexes over it:
 *   - valid: descriptors posted and not consumed yet: the consumer's
 *     window (ioq_idx_consume);
 *   - inuse: descriptors posted and not reaped yet: the reaper's window
 *     (ioq_idx_reap); the pusher (ioq_idx_push) grows both at the tail.
 *
 * Wire ABI version 5 (the 2009 series was version 4): head and tail are
 * free-running 32-bit counters, each written by exactly one side (tail by the
 * side that pushes, head by the side that pops). count = tail - head,
 * full = (count == size), slot = index & (size - 1), size a power of two.
 * Version 4 kept a "full" byte written by both sides that gave wrong answers
 * while the other side worked (an empty ring read as full, a full ring as
 * empty); that byte is now reserved and must be 0.
 *
 * Wire ABI version 6 keeps the descriptor and the first 52 bytes of the
 * header (magic, ver, signal, count at the v5 offsets) and moves the
 * indexes: each counter on its own IOQ_RING_LINE, the descriptors from a
 * line boundary, and no ownership bits (a descriptor belongs to whoever the
 * counters say). See struct ioq_ring_head_v6 and docs/ring.md.
 *
 * Usage protocol, the three roles (every driver and the host follow it;
 * docs/ring.md, core/ioq.c): north pushes with ioq_idx_push, south
 * consumes on ioq_idx_consume (pop hands the descriptor back), north reaps
 * on ioq_idx_reap with IOQ_ITER_REAP. One writer per shared index.
 */
#ifndef VBUS_IOQ_H
#define VBUS_IOQ_H

#include <vbus/platform.h>
#include <vbus/shm_signal.h>

#define IOQ_RING_MAGIC 0x47fa2fe4
#define IOQ_RING_VER_V5 5
#define IOQ_RING_VER_V6 6
/* what ioq_ring_format() lays out: the newest version */
#define IOQ_RING_VER   IOQ_RING_VER_V6

/*
 * v6 puts each side's counter on a line of its own. 128 bytes, not 64:
 * x86's adjacent-line prefetcher (and the 128-byte lines of some arm64 and
 * POWER parts) would otherwise pull the peer's line along with ours and
 * bring the false sharing back (docs/ring.md).
 */
#define IOQ_RING_LINE 128

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

/*
 * Version 6. Line 0 is the v5 prefix (magic, ver, signal, count; the v5
 * index area is reserved and 0) and is written only by the signal. Then one
 * line per counter, each with one writer:
 *   tail        north's pusher: both valid and inuse end here
 *   valid_head  south's consumer: [valid_head, tail) is south's to read
 *   inuse_head  north's reaper: [inuse_head, valid_head) are completions
 * inuse_head <= valid_head <= tail (mod 2^32), tail - inuse_head <= count.
 * sown and valid in the descriptors are not used (left as formatted, 0).
 */
struct ioq_ring_head_v6 {
	__u32 magic;
	__u32 ver;
	struct shm_signal_desc signal;
	__u8 reserved_v5idx[24];	/* v5's idx[2]: must be 0 */
	__u32 count;
	__u8 reserved0[IOQ_RING_LINE - 52];
	__u32 tail;			/* line 1: north (pusher) */
	__u8 reserved1[IOQ_RING_LINE - 4];
	__u32 valid_head;		/* line 2: south (consumer) */
	__u8 reserved2[IOQ_RING_LINE - 4];
	__u32 inuse_head;		/* line 3: north (reaper) */
	__u8 reserved3[IOQ_RING_LINE - 4];
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

VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct ioq_ring_head_v6, signal) == 8,
		   "v6.signal");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct ioq_ring_head_v6, count) == 48,
		   "v6.count");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct ioq_ring_head_v6, tail) ==
		   IOQ_RING_LINE, "v6.tail");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct ioq_ring_head_v6, valid_head) ==
		   2 * IOQ_RING_LINE, "v6.valid_head");
VBUS_STATIC_ASSERT(VBUS_OFFSETOF(struct ioq_ring_head_v6, inuse_head) ==
		   3 * IOQ_RING_LINE, "v6.inuse_head");
VBUS_STATIC_ASSERT(sizeof(struct ioq_ring_head_v6) == 4 * IOQ_RING_LINE,
		   "ioq_ring_head_v6");

/* Bytes a ring of @count descriptors takes in version @ver (5 or 6). */
#define IOQ_RING_SIZE(ver, count)					\
	(((ver) == IOQ_RING_VER_V5 ? sizeof(struct ioq_ring_head) :	\
				     sizeof(struct ioq_ring_head_v6)) +	\
	 sizeof(struct ioq_ring_desc) * (count))

/* What to allocate for a ring: room for either version. */
#define IOQ_HEAD_DESC_SIZE(count) IOQ_RING_SIZE(IOQ_RING_VER_V6, count)

/* --- end of wire ABI --- */

/*
 * What an iterator walks and a query counts, named by the role that walks
 * it (docs/ring.md, "The three roles"):
 *   ioq_idx_push     north's pusher: fills at the tail (the iterator walks
 *                    the consume window; a push grows both windows)
 *   ioq_idx_consume  south's consumer: [valid head, tail), posted and not
 *                    consumed yet (v5's "valid" index)
 *   ioq_idx_reap     north's reaper: [inuse head, tail), posted and not
 *                    reaped yet; the completions are its first
 *                    [inuse head, valid head) (v5's "inuse" index)
 * The queries (ioq_count() ...) take ioq_idx_consume or ioq_idx_reap.
 * The values are library ABI (compiled into programs) and the first two are
 * the v5 wire's idx[] numbers.
 */
enum ioq_idx_type {
	ioq_idx_consume,
	ioq_idx_reap,
	ioq_idx_push,
	ioq_idx_invalid,
	/*
	 * deprecated: the 2009 index names, the same values; removed at
	 * libioq.so.2 (docs/libioq.md, "The next SONAME")
	 */
	ioq_idxtype_valid = ioq_idx_consume,
	ioq_idxtype_inuse = ioq_idx_reap,
	ioq_idxtype_both = ioq_idx_push,
	ioq_idxtype_invalid = ioq_idx_invalid,
};
VBUS_STATIC_ASSERT(ioq_idx_consume == 0 && ioq_idx_reap == 1 &&
		   ioq_idx_push == 2 && ioq_idx_invalid == 3, "ioq_idx_type");

enum ioq_seek_type {
	ioq_seek_tail,
	ioq_seek_next,
	ioq_seek_head,
	ioq_seek_set
};

struct ioq;

struct ioq_iterator {
	struct ioq *ioq;
	struct ioq_ring_idx *idx;	/* v5: the index walked */
	__u32 pos;			/* free-running position */
	struct ioq_ring_desc *desc;	/* &ring[pos & mask] */
	unsigned int update:1;
	unsigned int dualidx:1;
	unsigned int flipowner:1;
	unsigned int role:2;		/* v6: enum ioq_role */
	unsigned int type:2;		/* the index walked (valid, inuse) */
};

/* The three roles of the usage protocol (and none: a query-only walk). */
enum ioq_role {
	ioq_role_none,
	ioq_role_push,		/* north on ioq_idx_push */
	ioq_role_consume,	/* south on ioq_idx_consume */
	ioq_role_reap,		/* north on ioq_idx_reap */
};

/* Runs on each wakeup, before the sleepers on ioq->wq are woken. */
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
	__u32 ver;	/* ring version, fixed at ioq_init */
	/*
	 * v6: where the shared counters are, and each role's private state:
	 * a shadow of the counter it writes (never re-read from shared
	 * memory) and a cached copy of the one it waits on, reloaded only
	 * when the cache says full/empty. Roles may run on different CPUs:
	 * padding keeps their state off each other's cache line.
	 */
	__u32 *tailp, *vheadp, *iheadp;
	char pad0[64];
	struct {
		__u32 tail;	/* shadow of tail */
		__u32 head;	/* cached inuse_head: room ends at head+count */
	} push;
	char pad1[64];
	struct {
		__u32 head;	/* shadow of valid_head */
		__u32 tail;	/* cached tail */
	} consume;
	char pad2[64];
	struct {
		__u32 head;	/* shadow of inuse_head */
		__u32 done;	/* cached valid_head: completions end here */
	} reap;
	char pad3[64];
};

/* signal the peer: after each iterator push/pop, once per bulk *_end() */
#define IOQ_ITER_AUTOUPDATE  (1 << 0)
/*
 * ioq_iter_init(): the reaper's iterator (north on ioq_idx_reap). On a v5
 * ring its pop keeps the slot north's instead of flipping sown back (the
 * pusher flips it when it posts again); a v6 ring has no sown and ignores
 * it (the role follows from the locality and the index).
 */
#define IOQ_ITER_REAP        (1 << 1)
/* deprecated: the 2009 name of IOQ_ITER_REAP; removed at libioq.so.2 */
#define IOQ_ITER_NOFLIPOWNER IOQ_ITER_REAP

/* A ring size every side accepts: a power of two, 1 .. IOQ_RING_MAX_COUNT. */
static inline int ioq_count_valid(__u32 count)
{
	return count && !(count & (count - 1)) && count <= IOQ_RING_MAX_COUNT;
}

/*
 * Format a ring for use (north side, before the south side sees it):
 * magic, version, count, zeroed indexes, every descriptor north-owned, and
 * the embedded signal descriptor. @count must be a power of two, 1 ..
 * IOQ_RING_MAX_COUNT; @head must hold IOQ_RING_SIZE(@ver, @count) bytes
 * (IOQ_HEAD_DESC_SIZE(@count) holds either). ioq_ring_format() lays out
 * IOQ_RING_VER (6); ioq_ring_format_ver() picks 5 or 6, for a south side
 * that refused 6 with -EPROTO (docs/transport.md). Returns 0 or -EINVAL.
 */
int ioq_ring_format(struct ioq_ring_head *head, __u32 count);
int ioq_ring_format_ver(struct ioq_ring_head *head, __u32 count, __u32 ver);

/*
 * Check a ring header that the peer formatted, in memory of @len bytes:
 * magic, version (5 or 6), a count the caller expects (@count, or any
 * valid count when 0), and that the whole ring of that version fits. Reads
 * each field once. On success returns the ring's count (> 0) and, with
 * ioq_ring_check_ver(), the version it checked in *@ver: pass that one to
 * ioq_init_ver() (the peer may rewrite the header meanwhile). Else -EINVAL
 * / -EPROTO / -EMSGSIZE.
 */
long ioq_ring_check(const struct ioq_ring_head *head, __u64 len,
		    __u32 count);
long ioq_ring_check_ver(const struct ioq_ring_head *head, __u64 len,
			__u32 count, __u32 *ver);

/*
 * Bind a local context to a ring. @count is the caller's own idea of the
 * size (it is never re-read from shared memory). Takes over the caller's
 * reference on @signal (dropped by the last ioq_put()). ioq_init() reads
 * the version from the header, once: only for the side that formatted the
 * ring, before the peer can write it. Once the ring is published, the
 * side that formatted it passes the version it chose to ioq_init_ver(),
 * and the side that checked it the checked version.
 * Returns 0, -EINVAL for a count that is not a power of two, or -EPROTO.
 */
int ioq_init(struct ioq *ioq, const struct ioq_ops *ops,
	     enum ioq_locality locale, struct ioq_ring_head *head,
	     struct shm_signal *signal, __u32 count);
int ioq_init_ver(struct ioq *ioq, const struct ioq_ops *ops,
		 enum ioq_locality locale, struct ioq_ring_head *head,
		 struct shm_signal *signal, __u32 count, __u32 ver);

static inline struct ioq *ioq_get(struct ioq *ioq)
{
	vbus_ref_get(&ioq->ref);
	return ioq;
}

void ioq_put(struct ioq *ioq);

/*
 * Ignored flags: the @flags of ioq_notify_enable(), ioq_notify_disable(),
 * ioq_signal(), ioq_iter_seek(), ioq_iter_push() and ioq_iter_pop() (and
 * of shm_signal_enable/disable/inject) is reserved: pass 0. libioq 1
 * ignores it, whatever its value; the parameter is removed at libioq.so.2
 * (docs/libioq.md, "The next SONAME"). ioq_iter_init() and the bulk
 * *_end() and *_burst() calls do read theirs.
 */
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
 * Queries. Each reads the shared indexes once; indexes that the peer has
 * corrupted (more than size descriptors in flight; on v6 also a valid
 * head outside [inuse head, tail]) fault the channel and return -EIO, as
 * does every later call. A counter this side writes that the peer
 * rewrote to another consistent value is caught at this side's next
 * push or pop (the role's shadow of it), not by a query.
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
 * @flags: ignored, pass 0 (see "Ignored flags" above).
 */
int ioq_iter_seek(struct ioq_iterator *iter, enum ioq_seek_type type,
		  long offset, int flags);
/*
 * Push: -ENOSPC when the ring is full (checked first: "try later"), else
 * only at the tail and only when we own the descriptor (-EINVAL).
 * Publishes the descriptor to the peer (v5: flips sown unless
 * IOQ_ITER_REAP), advances the tail, moves the iterator to the next
 * slot and signals the peer with IOQ_ITER_AUTOUPDATE. v6: only the pusher
 * role (north on ioq_idx_push) pushes; others get -EINVAL. Signalling
 * follows ioq_iter_init()'s IOQ_ITER_AUTOUPDATE; @flags: ignored, pass 0.
 */
int ioq_iter_push(struct ioq_iterator *iter, int flags);
/*
 * Pop: -ENOENT when the index is empty (checked first), else only at the
 * head and only when we own it (-EINVAL: v6's reaper also when the head
 * was posted but not consumed yet). v6: only the consumer (south on
 * ioq_idx_consume) and the reaper (north on ioq_idx_reap) pop.
 * @flags: ignored, pass 0.
 */
int ioq_iter_pop(struct ioq_iterator *iter, int flags);

/*
 * True when the descriptor under the iterator is inside its index's window
 * (head <= pos < tail) and owned by this side: "there is one here for me".
 * Consumers loop on it (the consumer and the reaper). Use it, not a
 * plain read of desc->sown, before reading the descriptor body: it carries
 * the acquire that pairs with the writer's publication ([A1]/[A2], v5 also
 * [A4]; docs/ring.md). A corrupted index pair faults the channel and reads
 * as false. v6 reloads the counter it waits on only when its cached copy
 * does not reach the iterator.
 */
int ioq_iter_owned(struct ioq_iterator *iter);

/*
 * The reaper's "look again" after it unmasked, in two halves (virtio's
 * virtqueue_enable_cb_prepare() and virtqueue_poll()), for a reaper that
 * gives up its role before it looks (NAPI: once napi_complete_done()
 * returned, another CPU may be reaping):
 *
 *   snap = ioq_reap_snapshot(ioq);    still the reaper: where it got to
 *   ... give up the role, unmask (ioq_notify_enable(): its [B2]) ...
 *   if (ioq_reap_poll(ioq, snap))     completions past snap: poll again
 *
 * ioq_reap_poll() writes nothing and reads one counter the peer writes
 * (v5: the slot's sown and the inuse tail), so it may run while another
 * context reaps; its answer is a hint (a true after someone else reaped
 * costs one spurious poll) and the reaper checks everything again.
 */
static inline __u32 ioq_reap_snapshot(const struct ioq *ioq)
{
	if (ioq->ver == IOQ_RING_VER_V5)
		return VBUS_READ(ioq->head_desc->idx[ioq_idx_reap].head);
	return ioq->reap.head;
}

static inline int ioq_reap_poll(const struct ioq *ioq, __u32 snap)
{
	if (shm_signal_faulted(ioq->signal))
		return 0;
	if (ioq->ver == IOQ_RING_VER_V5)
		/* [A4]: as ioq_iter_owned(); a slot past the tail is not news */
		return VBUS_READ(ioq->head_desc->idx[ioq_idx_reap].tail) !=
		       snap &&
		       VBUS_LOAD_ACQUIRE(ioq->ring[snap & ioq->mask].sown) ==
		       (__u8)ioq->locale;
	/* [A2]: valid.head moved past where the reaper had got */
	return VBUS_LOAD_ACQUIRE(*ioq->vheadp) != snap;
}

/*
 * Bulk calls, one per role, each in two halves (DPDK's zero-copy shape):
 * *_begin() claims up to @n descriptors from the role's end of the ring
 * and returns how many (0: full / empty; < 0: -EIO, the channel faulted;
 * -EINVAL: this side does not play that role) with the first position in
 * *@pos; the caller fills or reads ioq_desc(ioq, *pos + i); *_end()
 * publishes @n (at most what begin returned) with one index store, and
 * signals the peer with IOQ_ITER_AUTOUPDATE in @flags.
 *   post     north: fill descriptors at the tail, publish the tail
 *   consume  south: read (and complete) descriptors, publish valid's head
 *   reap     north: read completions, publish inuse's head
 * Works on v5 and v6 rings. ioq_push_bulk() copies @n descriptors in,
 * all or nothing (-ENOSPC); ioq_consume_burst() and ioq_reap_burst() copy
 * out up to @n and return how many.
 */
static inline struct ioq_ring_desc *ioq_desc(struct ioq *ioq, __u32 pos)
{
	return &ioq->ring[pos & ioq->mask];
}

int ioq_post_begin(struct ioq *ioq, unsigned int n, __u32 *pos);
int ioq_post_end(struct ioq *ioq, unsigned int n, int flags);
int ioq_consume_begin(struct ioq *ioq, unsigned int n, __u32 *pos);
int ioq_consume_end(struct ioq *ioq, unsigned int n, int flags);
int ioq_reap_begin(struct ioq *ioq, unsigned int n, __u32 *pos);
int ioq_reap_end(struct ioq *ioq, unsigned int n, int flags);

int ioq_push_bulk(struct ioq *ioq, const struct ioq_ring_desc *descs,
		  unsigned int n, int flags);
int ioq_consume_burst(struct ioq *ioq, struct ioq_ring_desc *descs,
		      unsigned int n, int flags);
int ioq_reap_burst(struct ioq *ioq, struct ioq_ring_desc *descs,
		   unsigned int n, int flags);

#endif /* VBUS_IOQ_H */
