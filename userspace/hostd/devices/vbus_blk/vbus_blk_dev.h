/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-blk, the host side: the device's state, shared by its files, in the
 * order they use each other (none calls up):
 *
 *   vbus_blk_dev.c      the ops (create .. stats), params, GETCONFIG and
 *                       NEGOTIATE, attaching the queue rings
 *   vbus_blk_queue.c    a queue: parse descriptors, submit, hand back in
 *                       order; io_uring's completions; the drain at close
 *   vbus_blk_req.c      one request: read it once from guest memory,
 *                       check it, build its iovecs (no io_uring in it)
 *   vbus_blk_file.c     the file backend: the backing file and the
 *                       io_uring: open, probe O_DIRECT, queue an op,
 *                       submit, cancel (the fast path); grow (resize)
 *   vbus_blk_file_topo.c  its topology (io_min, io_opt, alignment,
 *                       rotational) from the block layer below
 *   vbus_blk_nbd.c      the NBD backend's requests (nbd=URI): issue
 *                       through libnbd's async API, park, resend, answer
 *   vbus_blk_nbd_conn.c the NBD backend's connection: connect, the
 *                       server's limits, loss, reconnect with backoff,
 *                       the timeout tick
 *   vbus_blk_image.c    image=: the qemu-storage-daemon serving the
 *                       image to the NBD backend, started and watched
 *   vbus_blk_resize.c   online resize: `ctl resize`, the new capacity,
 *                       the events ring that tells the guest
 *   vbus_blk_mask.c     the guest's doorbells masked while a queue has
 *                       I/O in flight, and the timer that bounds it
 *   vbus_blk_poll.c     poll_us: look at the CQ and the rings for a
 *                       while after each wakeup (the steps are queue.c's,
 *                       passed in: poll.c calls nothing above it)
 *   vbus_blk_thread.c   threads=N: a shard (a struct vbus_blk with its
 *                       own io_uring) per queue thread, its queues
 *                       attached, synced, closed and counted there
 *
 * Without threads= everything runs on the guest's loop thread
 * (device.h): io_uring's completions arrive through an eventfd
 * registered with hostd_fd_add, so the device has no thread and no lock.
 * With threads=N each shard runs on its queue thread in the same way and
 * shares nothing writable with another (vbus_blk_thread.c says how).
 */
#ifndef VBUS_HOSTD_VBUS_BLK_DEV_H
#define VBUS_HOSTD_VBUS_BLK_DEV_H

#include <stdbool.h>
#include <sys/uio.h>
#include <liburing.h>
#include <vbus/vbus_blk.h>
#include "devq.h"

#define VBLK_DEF_DEPTH		128
#define VBLK_DEF_SEGS		128
#define VBLK_DEF_MAX_SECTORS	2048		/* 1 MiB per request */
#define VBLK_MAX_SEG_SIZE	(1u << 20)
#define VBLK_MAX_DISCARD	(1u << 22)	/* 2 GiB per request */
/* ranges per DISCARD we offer (<= VBUS_BLK_MAX_DISCARD_RANGES) */
#define VBLK_MAX_DISCARD_RANGES	64
#define VBLK_URING_ENTRIES	256		/* SQ size; CQ is twice */
#define VBLK_DRAIN_MS		10000		/* close: wait this long */
#define VBLK_DRAIN_STOP_MS	100		/* when the daemon stops */
#define VBLK_LAT_BUCKETS	24		/* < 1us .. >= 2^22 us */
#define VBLK_DEF_MASK_US	1000		/* doorbell_mask_us */
#define VBLK_MAX_MASK_US	1000000
#define VBLK_MASK_MIN_INFLIGHT	2		/* QD1 never masks */
#define VBLK_MAX_POLL_US	1000		/* poll_us */
#define VBLK_DEF_IOWQ		8	/* iowq_workers: io-wq threads, each kind */
#define VBLK_MAX_IOWQ		256
#define VBLK_POLL_BUDGET_US	500		/* one poll, then the loop */
#define VBLK_DEF_NBD_TIMEOUT_S	30		/* nbd_timeout */
#define VBLK_MAX_NBD_TIMEOUT_S	3600

struct vbus_blk;
struct vbus_blk_slot;
struct hostd_stats_out;

/*
 * A backend: where requests go. The device calls these and nothing else
 * of it; a backend answers through the io_uring CQ (file) or
 * vbus_blk_complete() (nbd).
 */
struct vbus_blk_backend_ops {
	const char *name;			/* "file", "nbd" */
	/* open, probe, set b's limits and be_features; hostd_dev_fail */
	int (*open)(struct vbus_blk *b);
	void (*close)(struct vbus_blk *b);	/* destroy; safe after a failed open */
	/* queue @s (slot @slot of queue @qi); 0 or -errno (S_IOERR) */
	int (*queue)(struct vbus_blk *b, unsigned int qi, unsigned int slot,
		     struct vbus_blk_slot *s);
	void (*submit)(struct vbus_blk *b);	/* what queue() queued, now */
	/* close: let go of every request of the session (may be NULL) */
	void (*session_end)(struct vbus_blk *b);
	void (*stats)(struct vbus_blk *b, struct hostd_stats_out *out);
	/*
	 * ctl resize: make the backing store @bytes long (bigger than now,
	 * a multiple of the logical block); 0, or hostd_dev_fail's -errno.
	 * NULL: this backend cannot (the op says why).
	 */
	int (*resize)(struct vbus_blk *b, __u64 bytes);
};
extern const struct vbus_blk_backend_ops vbus_blk_file_ops;
extern const struct vbus_blk_backend_ops vbus_blk_nbd_ops;

/* A slot of a queue: the request the ring descriptor of that slot holds. */
enum vbus_blk_slot_state {
	VBLK_SLOT_FREE,		/* not parsed (not posted, or handed back) */
	VBLK_SLOT_INFLIGHT,	/* an SQE of ours is in io_uring */
	VBLK_SLOT_DONE,		/* status known, waiting for the head */
};

/* One range of a DISCARD with a range list, checked: bytes. */
struct vbus_blk_span {
	__u64 offset, len;
};

/* What a request asks of the backend, after the checks (vbus_blk_req.c). */
struct vbus_blk_io {
	__u8 op;		/* VBUS_BLK_OP_* */
	__u16 flags;		/* VBUS_BLK_REQ_*, checked */
	__u64 offset;		/* bytes into the backing file (spans: the first's) */
	__u64 len;		/* bytes moved / discarded / zeroed (spans: all) */
	unsigned int niov;
	/* a DISCARD with a range list: the slot's spans[0 .. nspans); 0:
	 * the request is the one range offset/len */
	unsigned int nspans;
	bool aligned;		/* usable with O_DIRECT */
};

struct vbus_blk_slot {
	enum vbus_blk_slot_state state;
	__u8 status;		/* VBUS_BLK_S_* once DONE */
	__u8 op;
	bool retried;		/* WRITE_ZEROES: tried the other mode */
	int zmode;		/* WRITE_ZEROES: fallocate mode, 0 = pick */
	__u64 req_gpa;		/* where req.status goes (re-translated) */
	struct vbus_blk_io io;
	__u64 t0_ns;		/* submitted */
	/* what the backend has of it (a DISCARD's ranges: one each) and the
	 * first error of those answered: vbus_blk_part_done() */
	unsigned int parts;
	int part_err;
	struct iovec *iov;	/* max_segments, until the CQE */
	/* a DISCARD's ranges, read once from the guest (io.nspans) */
	struct vbus_blk_span spans[VBLK_MAX_DISCARD_RANGES];
};

/*
 * One of @s's parts answered with @res (bytes, 0 or -errno): true when it
 * was the last, with @res then the first error of them all (or this
 * part's result). A request the backend sent as one part is answered by
 * it alone.
 */
static inline bool vbus_blk_part_done(struct vbus_blk_slot *s, int *res)
{
	if (*res < 0 && !s->part_err)
		s->part_err = *res;
	if (s->parts > 1) {
		s->parts--;
		return false;
	}
	if (s->part_err)
		*res = s->part_err;
	return true;
}

struct vbus_blk_queue {
	struct vbus_blk *b;
	unsigned int idx;
	bool attached;
	struct hostd_devq ring;	/* owner: the queue */
	__u32 depth;
	__u32 next;		/* free-running: next valid position to parse */
	__u32 head;		/* free-running: our copy of valid.head */
	unsigned int inflight;	/* slots INFLIGHT */
	bool masked;		/* doorbells off: completions look (mask.c) */
	struct vbus_blk_slot *slots;	/* depth of them */
};

struct vbus_blk_stats {
	__u64 reads, writes, flushes, discards, write_zeroes, get_ids;
	__u64 discard_ranges;		/* ranges of the DISCARDs served */
	__u64 multi_range_discards;	/* DISCARDs of more than one range */
	__u64 bytes_read, bytes_written;
	__u64 fua_writes;
	__u64 buffered_ios;	/* unaligned for O_DIRECT: the buffered fd */
	__u64 io_errors;	/* backend failures (S_IOERR) */
	__u64 bad_requests;	/* S_BADREQ */
	__u64 unsupported;	/* S_UNSUPP */
	__u64 batches;		/* hand-backs, one hostd_devq_signal() each */
	__u64 zero_fallbacks;	/* ZERO_RANGE refused: punched instead */
	__u64 submit_retries;	/* io_uring_submit EAGAIN/EBUSY: kicked */
	__u64 drain_timeouts;
	__u64 masks;		/* a queue masked the guest's doorbells */
	__u64 mask_polls;	/* ring looks at a completion, while masked */
	__u64 mask_timeouts;	/* no completion for doorbell_mask_us */
	__u64 polls;		/* polls started (poll_us) */
	__u64 poll_hits;	/* looks of a poll that found work */
	__u64 poll_ns;		/* time spent polling */
	__u64 lat[VBLK_LAT_BUCKETS];	/* completions by 2^n us */
	__u64 resizes;		/* capacity changes (ctl resize, a server's) */
	__u64 resize_events;	/* of them, told the guest (events ring) */
};

struct vbus_blk {
	struct hostd_dev *dev;

	const struct vbus_blk_backend_ops *be;	/* file or nbd */
	void *be_priv;			/* the nbd backend's state */
	struct vbus_blk_image *image;	/* image=: its storage daemon */
	__u32 be_features;		/* VBUS_BLK_F_* the backend can do */
	struct vbus_blk_topology topo;	/* the backend's, GETTOPOLOGY */

	/* params */
	char path[4096];		/* canonical (realpath), or the nbd URI */
	__u32 nbd_timeout_s;		/* nbd_timeout: a request's bound */
	__u32 nbd_conns;		/* nbd_conns: at most, 0: one a queue */
	bool ro;
	bool strict;
	int direct_want;		/* -1 auto, 0 no, 1 must */
	char serial[VBUS_BLK_SERIAL_LEN];
	__u32 max_queues, max_depth, max_segs, max_sectors;
	bool discard;
	__u32 mask_us;			/* doorbell_mask_us; 0: never mask */
	__u32 poll_us;			/* poll_us; 0: never poll */
	__u32 iowq_workers;		/* iowq_workers: the ring's io-wq cap */
	bool compat_v1;			/* compat=v1: offer only version 1's features */

	/* the file backend (vbus_blk_file.c) */
	int fd;				/* O_DIRECT when direct, else buffered */
	int fd_buffered;		/* = fd when !direct */
	bool direct;
	bool blkdev;
	__u32 lbs, pbs;			/* bytes */
	__u64 capacity;			/* 512-byte sectors */
	bool zero_range_ok;
	struct io_uring ring;
	bool ring_up;
	int efd;			/* io_uring's completion eventfd */
	bool efd_watched;
	__u64 session;			/* open count: tags user_data */
	unsigned int inflight;		/* all queues, this session */
	unsigned int stale;		/* SQEs of a closed session (timeout) */
	bool submit_pending;		/* SQEs queued, not yet submitted */
	struct hostd_kick kick;		/* submit again: the kernel said EAGAIN */

	/* doorbell masking (vbus_blk_mask.c) */
	int mask_tfd;			/* timerfd, -1 when mask_us is 0 */
	bool mask_tfd_watched;
	bool mask_armed;
	bool mask_stalled;		/* timed out: no masking until a CQE */
	__u64 cqes;			/* completions taken, ever */
	__u64 cqes_at_arm;

	/* polling (vbus_blk_poll.c) */
	bool polling;			/* in vbus_blk_poll: none nests */
	bool poll_masked;		/* its masks hold: mask.c unmasks none */

	/* session (open .. close) */
	bool open;
	bool negotiated;
	__u32 features;			/* granted */
	__u32 nr_queues, depth;		/* granted */
	struct vbus_blk_queue q[VBUS_BLK_MAX_QUEUES];
	struct hostd_devq evq;		/* the events ring (F_RESIZE) */

	struct vbus_blk_stats st;

	/* threads=N (vbus_blk_thread.c) */
	struct vbus_blk *main;		/* a shard's device; NULL: the device */
	struct hostd_devthread *thr;	/* a shard's thread */
	unsigned int nshards;		/* the device's: N */
	struct vbus_blk *shard[VBUS_BLK_MAX_QUEUES];
};

/* The backend's: queue the op of @s (slot @slot of queue @qi); 0 or -errno */
static inline int vbus_blk_backend_queue(struct vbus_blk *b, unsigned int qi,
					 unsigned int slot,
					 struct vbus_blk_slot *s)
{
	return b->be->queue(b, qi, slot, s);
}

static inline void vbus_blk_backend_submit(struct vbus_blk *b)
{
	b->be->submit(b);
}

/* vbus_blk_file_topo.c: b->topo of the file or block device on @fd */
struct stat;
void vbus_blk_file_topology(struct vbus_blk *b, int fd, const struct stat *st);

/* vbus_blk_file.c: ask io_uring to cancel everything of ours (close) */
void vbus_blk_backend_cancel_all(struct vbus_blk *b);
/* (session, queue, slot) -> a request's tag (io_uring's user_data) */
static inline __u64 vbus_blk_tag(const struct vbus_blk *b, unsigned int qi,
				 unsigned int slot)
{
	return (b->session & 0xffffffffull) << 32 | (__u64)qi << 16 | slot;
}
/* tag -> (session, queue, slot) */
bool vbus_blk_untag(const struct vbus_blk *b, __u64 tag, unsigned int *qi,
		unsigned int *slot);
#define VBLK_TAG_CANCEL (~0ull)

/* vbus_blk_req.c: read one request and check it. Returns VBUS_BLK_S_OK
 * (then @io/@iov describe it) or the status to complete it with; @why
 * says what was wrong. Never faults: the caller decides. */
__u8 vbus_blk_req_parse(struct vbus_blk *b, __u64 req_gpa, __u64 desc_len,
		    struct vbus_blk_io *io, struct iovec *iov,
		    struct vbus_blk_span *spans, const char **why);
/* GET_ID: copy the serial into the request's segment */
void vbus_blk_req_get_id(struct vbus_blk *b, const struct vbus_blk_io *io,
		     struct iovec *iov);

/* vbus_blk_resize.c: online resize */
int vbus_blk_events_attach(struct vbus_blk *b, struct hostd_shm *shm);
void vbus_blk_events_detach(struct vbus_blk *b);
/* the backing store is @sectors long now: GETCONFIG says so, the guest
 * is told (when it attached the events ring) */
void vbus_blk_capacity_set(struct vbus_blk *b, __u64 sectors);
/* the device type's ctl op ("resize SIZE") */
int vbus_blk_ctl(struct hostd_dev *dev, const char *verb, const char *arg,
		 char *msg, size_t len);

/* vbus_blk_mask.c: the guest's doorbells off while a queue is busy */
int vbus_blk_mask_init(struct vbus_blk *b);	/* hostd_dev_fail on error */
void vbus_blk_mask_fini(struct vbus_blk *b);
void vbus_blk_mask_reset(struct vbus_blk *b);	/* close: nothing masked */
/* after a queue run: mask if I/O is in flight, unmask when idle */
void vbus_blk_mask_update(struct vbus_blk_queue *q);
void vbus_blk_mask_cqe(struct vbus_blk *b);	/* a completion came */

/* vbus_blk_poll.c: after a wakeup, look with @step (true: it found
 * work) until poll_us pass with nothing; doorbells and the CQ eventfd
 * off meanwhile. No-op when poll_us is 0 or already polling. */
void vbus_blk_poll(struct vbus_blk *b, bool (*step)(struct vbus_blk *b));

/* vbus_blk_file.c: a shard's own io_uring (vbus_blk_thread.c) */
int vbus_blk_file_ring_up(struct vbus_blk *b);
void vbus_blk_file_ring_down(struct vbus_blk *b);

/* vbus_blk_thread.c: threads=N (each a no-op without it) */
/* params: file= only (@p: was threads= the device's own) */
int vbus_blk_threads_check(struct vbus_blk *b, const struct hostd_params *p);
int vbus_blk_threads_create(struct vbus_blk *b);	/* hostd_dev_fail */
void vbus_blk_threads_destroy(struct vbus_blk *b);
/* open, NEGOTIATE, resize: the guest's thread's state to the shards */
void vbus_blk_threads_sync(struct vbus_blk *b);
/* DEVSHM of a queue: attached on its thread's shard */
int vbus_blk_threads_attach(struct vbus_blk *b, struct hostd_shm *shm);
/* close: every shard's queues drained and detached on their threads */
void vbus_blk_threads_close(struct vbus_blk *b);
/* ctl stats: the shards' counters added to @st and @inflight */
void vbus_blk_threads_stats(struct vbus_blk *b, struct vbus_blk_stats *st,
			    unsigned int *inflight,
			    struct hostd_stats_out *out);

/* vbus_blk_queue.c */
int vbus_blk_queue_attach(struct vbus_blk *b, struct hostd_shm *shm);
void vbus_blk_queue_detach(struct vbus_blk_queue *q);
void vbus_blk_completions(struct hostd_dev *dev, int fd, __u32 events, void *arg);
/*
 * A backend without a CQ (nbd) answers request @tag with @res (the
 * bytes moved, 0, or -errno) and marks its queue in @touched; then,
 * once per batch, vbus_blk_complete_end() hands back what is done and
 * looks at the masked queues' rings.
 */
void vbus_blk_complete(struct vbus_blk *b, __u64 tag, int res, bool *touched);
void vbus_blk_complete_end(struct vbus_blk *b, const bool *touched);
/* close: wait (bounded) until io_uring holds nothing of this session */
void vbus_blk_queues_drain(struct vbus_blk *b);

#endif /* VBUS_HOSTD_VBUS_BLK_DEV_H */
