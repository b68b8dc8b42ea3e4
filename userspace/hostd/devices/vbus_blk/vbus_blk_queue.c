// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-blk: a queue (one IOQ ring, DEVSHM id = queue index) and io_uring's
 * completions (see vbus_blk_dev.h).
 *
 * Parse ahead, hand back in order. The ring hands descriptors back only
 * at the valid head (ioq_consume_end), but io_uring completes out of order.
 * So the queue keeps two positions: `next`, the first descriptor not yet
 * parsed, and `head`, the first not yet handed back; every descriptor in
 * [head, next) has a slot (slot = position & (depth - 1)) that is
 * INFLIGHT or DONE. A pass claims what the guest posted
 * (ioq_consume_begin from valid's head, which is `head`: it stays put
 * until we publish), parses from `next` to the end of the claim, submits
 * all it parsed with one io_uring_submit, and then hands back from `head`
 * every DONE slot in a row with one ioq_consume_end (one valid-head
 * store). The cost: a request that completes early waits for the ones
 * posted before it (head-of-line), typically a few microseconds on a
 * file in the page cache, up to the slowest request in flight on a disk.
 * A guest that wants independent latencies uses more queues.
 *
 * The hand-back writes req.status through a fresh translation of the
 * request's address (never a pointer kept from the parse), then one
 * publication and one hostd_devq_signal() per batch, which the shm-signal
 * suppresses while the guest has its side masked or an event pending.
 *
 * Our side of the signal is masked while the queue has I/O in flight and
 * the ring is looked at on each completion instead (vbus_blk_mask.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/falloc.h>
#include "vbus_blk_dev.h"

static void count_status(struct vbus_blk *b, __u8 st, const char *why)
{
	if (st == VBUS_BLK_S_BADREQ) {
		b->st.bad_requests++;
		/* strict=1: the first malformed request stops the device */
		if (b->strict)
			hostd_dev_fault(b->dev, "vbus-blk: bad request: %s", why);
		else
			hostd_dev_log(b->dev, "vbus-blk: bad request: %s", why);
	} else if (st == VBUS_BLK_S_UNSUPP) {
		b->st.unsupported++;
	} else if (st == VBUS_BLK_S_IOERR) {
		b->st.io_errors++;
	}
}

/* ---- hand-back ------------------------------------------------------------- */

/* req.status of @s into guest memory; false: faulted */
static bool put_status(struct vbus_blk *b, const struct vbus_blk_slot *s)
{
	__u8 *p = hostd_dev_gpa(b->dev, s->req_gpa +
				VBUS_OFFSETOF(struct vbus_blk_req, status), 1);

	if (!p) {
		hostd_dev_fault(b->dev, "vbus-blk: request 0x%llx left guest RAM",
				(unsigned long long)s->req_gpa);
		return false;
	}
	/*
	 * Ordered before the hand-back by [R2], the release store of
	 * valid.head in ioq_consume_end(); pairs with [A2] in the guest's
	 * ioq_reap_begin(), after which it reads the status.
	 */
	VBUS_WRITE(*p, s->status);
	return true;
}

/*
 * The claim from valid's head: how many, or -1 (faulted) when it does
 * not start at our `head` (valid.head is ours alone: on a v5 ring the
 * guest can write it).
 */
static int claim(struct vbus_blk_queue *q, unsigned int n)
{
	__u32 pos;
	int k;

	k = hostd_devq_claim(&q->ring, n, &pos);
	if (k < 0)
		return -1;	/* the channel faulted */
	if (k && pos != q->head) {
		hostd_dev_fault(q->b->dev, "vbus-blk: queue %u: valid head moved",
				q->idx);
		return -1;
	}
	return k;
}

/* Hand back from the head every request that is DONE, in ring order. */
static void hand_back(struct vbus_blk_queue *q)
{
	struct vbus_blk *b = q->b;
	unsigned int n = 0, i;

	if (!q->attached || hostd_dev_faulted(b->dev))
		return;
	while (q->head + n != q->next) {
		struct vbus_blk_slot *s =
			&q->slots[(q->head + n) & (q->depth - 1)];

		if (s->state != VBLK_SLOT_DONE || !put_status(b, s))
			break;
		n++;
	}
	if (!n || hostd_dev_faulted(b->dev))
		return;
	/* still ours, from our head: the guest took nothing back */
	if (claim(q, n) != (int)n || hostd_devq_hand_back(&q->ring, n) < 0) {
		hostd_dev_fault(b->dev, "vbus-blk: queue %u: pop failed",
				q->idx);
		return;
	}
	for (i = 0; i < n; i++)
		q->slots[(q->head + i) & (q->depth - 1)].state =
			VBLK_SLOT_FREE;
	q->head += n;
	hostd_dev_account(b->dev, n, 0);
	hostd_devq_signal(&q->ring);
	b->st.batches++;
}

/* ---- parse and submit -------------------------------------------------------- */

static void reap_and_hand_back(struct vbus_blk *b);

static void slot_done(struct vbus_blk_slot *s, __u8 status)
{
	s->status = status;
	s->state = VBLK_SLOT_DONE;
}

static void count_op(struct vbus_blk *b, __u8 op)
{
	switch (op) {
	case VBUS_BLK_OP_READ: b->st.reads++; break;
	case VBUS_BLK_OP_WRITE: b->st.writes++; break;
	case VBUS_BLK_OP_FLUSH: b->st.flushes++; break;
	case VBUS_BLK_OP_DISCARD: b->st.discards++; break;
	case VBUS_BLK_OP_WRITE_ZEROES: b->st.write_zeroes++; break;
	case VBUS_BLK_OP_GET_ID: b->st.get_ids++; break;
	default: break;
	}
}

/*
 * The descriptor at `next`: parse it into its slot and either finish it
 * (a refusal, GET_ID) or queue it on io_uring. false: the device is
 * faulted (a descriptor we could not even answer).
 */
static bool start_one(struct vbus_blk_queue *q,
		      const struct ioq_ring_desc *desc)
{
	struct vbus_blk *b = q->b;
	unsigned int slot = q->next & (q->depth - 1);
	struct vbus_blk_slot *s = &q->slots[slot];
	/* ptr and len once each: the guest may rewrite them meanwhile */
	__u64 ptr = VBUS_READ(desc->ptr);
	__u64 len = VBUS_READ(desc->len);
	const char *why;
	__u8 st;

	/*
	 * Without a header we can write the status into, there is no way to
	 * answer: ring-level garbage faults the device.
	 */
	if ((ptr & 7) || !hostd_dev_gpa(b->dev, ptr,
					sizeof(struct vbus_blk_req))) {
		hostd_dev_fault(b->dev, "vbus-blk: queue %u: request 0x%llx "
				"not an aligned request in guest RAM", q->idx,
				(unsigned long long)ptr);
		return false;
	}
	memset(s, 0, VBUS_OFFSETOF(struct vbus_blk_slot, iov));
	s->req_gpa = ptr;
	st = vbus_blk_req_parse(b, ptr, len, &s->io, s->iov, s->spans, &why);
	s->op = s->io.op;
	if (st != VBUS_BLK_S_OK) {
		count_status(b, st, why);
		slot_done(s, st);
		return !hostd_dev_faulted(b->dev);
	}
	count_op(b, s->op);
	if (s->op == VBUS_BLK_OP_GET_ID) {
		vbus_blk_req_get_id(b, &s->io, s->iov);
		slot_done(s, VBUS_BLK_S_OK);
		return true;
	}
	s->t0_ns = hostd_now_ns();
	if (vbus_blk_backend_queue(b, q->idx, slot, s) < 0) {
		b->st.io_errors++;
		slot_done(s, VBUS_BLK_S_IOERR);
		return true;
	}
	s->state = VBLK_SLOT_INFLIGHT;
	q->inflight++;
	b->inflight++;
	return true;
}

static void queue_run(struct vbus_blk_queue *q)
{
	struct vbus_blk *b = q->b;
	int k;

	if (!q->attached || hostd_dev_faulted(b->dev))
		return;
	/* at most depth slots between head and next: a bounded pass */
	k = claim(q, q->depth);
	while (k > 0 && q->next - q->head < (unsigned int)k) {
		if (!start_one(q, hostd_devq_desc(&q->ring, q->next)))
			break;
		q->next++;
	}
	vbus_blk_backend_submit(b);
	/*
	 * What io_uring finished during the submit (a read from the page
	 * cache completes inline) goes back now, not one loop turn later
	 * through the eventfd.
	 */
	reap_and_hand_back(b);
	hand_back(q);
	/* in flight now: doorbells off; nothing: on (vbus_blk_mask.c) */
	vbus_blk_mask_update(q);
}

/* posts not parsed yet: the ring's valid count beyond ours */
static bool posted(struct vbus_blk_queue *q)
{
	return hostd_devq_more(&q->ring, q->next - q->head);
}

/* One look of a poll (vbus_blk_poll.c): true if it found work. */
static bool poll_step(struct vbus_blk *b)
{
	bool got = false;
	unsigned int i;

	/* completion work the kernel keeps for our next entry (COOP_TASKRUN) */
	if (b->ring_up && b->inflight &&
	    (IO_URING_READ_ONCE(*b->ring.sq.kflags) & IORING_SQ_TASKRUN))
		io_uring_get_events(&b->ring);
	if (b->ring_up && io_uring_cq_ready(&b->ring)) {
		reap_and_hand_back(b);
		got = true;
	}
	for (i = 0; i < VBUS_BLK_MAX_QUEUES; i++) {
		struct vbus_blk_queue *q = &b->q[i];

		if (q->attached && posted(q)) {
			queue_run(q);
			got = true;
		}
	}
	return got;
}

static void on_signal(struct hostd_devq *ring)
{
	struct vbus_blk_queue *q = ring->owner;

	/* hostd counts the doorbell (notify_in) */
	queue_run(q);
	vbus_blk_poll(q->b, poll_step);
}

/* ---- completions -------------------------------------------------------------- */

static void count_latency(struct vbus_blk *b, const struct vbus_blk_slot *s)
{
	__u64 us = (hostd_now_ns() - s->t0_ns) / 1000;
	unsigned int i = 0;

	while (us && i < VBLK_LAT_BUCKETS - 1) {
		us >>= 1;
		i++;
	}
	b->st.lat[i]++;
}

/* WRITE_ZEROES the file system refused one way: try the other once */
static bool zeroes_retry(struct vbus_blk *b, unsigned int qi, unsigned int slot,
			 struct vbus_blk_slot *s, int res)
{
	if (s->op != VBUS_BLK_OP_WRITE_ZEROES || s->retried ||
	    (res != -EOPNOTSUPP && res != -EINVAL))
		return false;
	if (s->zmode & FALLOC_FL_ZERO_RANGE) {
		b->zero_range_ok = false;	/* e.g. tmpfs: punch from now */
		b->st.zero_fallbacks++;
		s->zmode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
	} else {
		s->zmode = FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;
	}
	s->retried = true;
	return vbus_blk_backend_queue(b, qi, slot, s) == 0;
}

static __u8 result_status(const struct vbus_blk_slot *s, int res)
{
	if (res < 0)
		return VBUS_BLK_S_IOERR;
	/* a short transfer: the file shrank under us */
	if ((s->op == VBUS_BLK_OP_READ || s->op == VBUS_BLK_OP_WRITE) &&
	    (__u64)res != s->io.len)
		return VBUS_BLK_S_IOERR;
	return VBUS_BLK_S_OK;
}

static void count_done(struct vbus_blk *b, const struct vbus_blk_slot *s)
{
	if (s->status != VBUS_BLK_S_OK) {
		b->st.io_errors++;	/* the backend's: the only kind here */
		return;
	}
	if (s->op == VBUS_BLK_OP_READ)
		b->st.bytes_read += s->io.len;
	else if (s->op == VBUS_BLK_OP_WRITE)
		b->st.bytes_written += s->io.len;
	if (s->op == VBUS_BLK_OP_READ || s->op == VBUS_BLK_OP_WRITE)
		hostd_dev_account(b->dev, 0, s->io.len);
	if (s->op == VBUS_BLK_OP_DISCARD) {
		b->st.discard_ranges += s->io.nspans ? s->io.nspans : 1;
		if (s->io.nspans > 1)
			b->st.multi_range_discards++;
	}
	count_latency(b, s);
}

/*
 * One CQE. Returns the queue it finished a request of, or NULL. With
 * @closing no retry is queued: close waits for the ring to empty.
 */
static struct vbus_blk_queue *cqe_done(struct vbus_blk *b, __u64 tag, int res,
				   bool closing)
{
	unsigned int qi, slot;
	struct vbus_blk_queue *q;
	struct vbus_blk_slot *s;

	if (tag == VBLK_TAG_CANCEL)
		return NULL;
	if (!vbus_blk_untag(b, tag, &qi, &slot)) {
		/* a request of a session whose close timed out waiting */
		if (b->stale)
			b->stale--;
		return NULL;
	}
	if (qi >= VBUS_BLK_MAX_QUEUES)
		return NULL;
	q = &b->q[qi];
	if (!q->attached || slot >= q->depth)
		return NULL;
	s = &q->slots[slot];
	if (s->state != VBLK_SLOT_INFLIGHT)
		return NULL;
	if (!closing && res < 0 && zeroes_retry(b, qi, slot, s, res))
		return NULL;
	/* a DISCARD's ranges: answered once all are */
	if (!vbus_blk_part_done(s, &res))
		return NULL;
	s->status = result_status(s, res);
	s->state = VBLK_SLOT_DONE;
	q->inflight--;
	b->inflight--;
	/* at close nobody hears the answer: cancelled is not an error */
	if (closing)
		return q;
	if (s->status == VBUS_BLK_S_IOERR && res < 0)
		hostd_dev_log(b->dev, "vbus-blk: op %u at %llu: %s", s->op,
			      (unsigned long long)s->io.offset, strerror(-res));
	count_done(b, s);
	return q;
}

/* Take every CQE there is; mark the queues that finished something. */
static void reap(struct vbus_blk *b, bool *touched, bool closing)
{
	struct io_uring_cqe *cqe;

	while (io_uring_peek_cqe(&b->ring, &cqe) == 0) {
		struct vbus_blk_queue *q = cqe_done(b, cqe->user_data, cqe->res,
						closing);

		io_uring_cqe_seen(&b->ring, cqe);
		if (!closing)
			vbus_blk_mask_cqe(b);
		if (q && touched)
			touched[q->idx] = true;
	}
}

static void reap_and_hand_back(struct vbus_blk *b)
{
	bool touched[VBUS_BLK_MAX_QUEUES] = { false };
	unsigned int i;

	if (!b->ring_up)
		return;		/* the nbd backend: vbus_blk_complete() */
	reap(b, touched, false);
	vbus_blk_backend_submit(b);	/* retries */
	for (i = 0; i < VBUS_BLK_MAX_QUEUES; i++)
		if (touched[i])
			hand_back(&b->q[i]);
}

/*
 * A masked queue rang no doorbell for what the guest posted since: look
 * at its ring now (queue_run also unmasks it once idle).
 */
static void run_masked(struct vbus_blk *b)
{
	unsigned int i;

	for (i = 0; i < VBUS_BLK_MAX_QUEUES; i++) {
		if (b->q[i].masked) {
			b->st.mask_polls++;
			queue_run(&b->q[i]);
		}
	}
}

void vbus_blk_completions(struct hostd_dev *dev, int fd, __u32 events, void *arg)
{
	struct vbus_blk *b = arg;

	(void)dev;
	(void)events;
	/* empty it first: a CQE posted after this raises it again */
	hostd_eventfd_drain(fd);
	reap_and_hand_back(b);
	run_masked(b);
	vbus_blk_poll(b, poll_step);
}

void vbus_blk_complete(struct vbus_blk *b, __u64 tag, int res, bool *touched)
{
	struct vbus_blk_queue *q = cqe_done(b, tag, res, false);

	vbus_blk_mask_cqe(b);
	if (q)
		touched[q->idx] = true;
}

void vbus_blk_complete_end(struct vbus_blk *b, const bool *touched)
{
	unsigned int i;

	for (i = 0; i < VBUS_BLK_MAX_QUEUES; i++)
		if (touched[i])
			hand_back(&b->q[i]);
	run_masked(b);
}

/*
 * When to give up on the requests still in flight: VBLK_DRAIN_MS from the
 * start, or VBLK_DRAIN_STOP_MS once the daemon is going down (from then
 * on), so that SIGTERM never waits for a disk that does not answer.
 */
static __u64 drain_deadline(struct vbus_blk *b, __u64 deadline, bool *stop)
{
	__u64 now = hostd_now_ns();

	if (!*stop && hostd_dev_stopping(b->dev)) {
		*stop = true;
		if (now + VBLK_DRAIN_STOP_MS * 1000000ull < deadline)
			deadline = now + VBLK_DRAIN_STOP_MS * 1000000ull;
	}
	return deadline;
}

void vbus_blk_queues_drain(struct vbus_blk *b)
{
	__u64 deadline = hostd_now_ns() + VBLK_DRAIN_MS * 1000000ull;
	bool stop = false;

	if (!b->ring_up || !b->inflight)
		return;
	vbus_blk_backend_cancel_all(b);
	while (b->inflight &&
	       hostd_now_ns() < (deadline = drain_deadline(b, deadline, &stop))) {
		struct __kernel_timespec ts = { .tv_nsec = 50 * 1000000 };
		struct io_uring_cqe *cqe;

		/* SQEs the kernel refused (EAGAIN) must go, or they stay ours */
		vbus_blk_backend_submit(b);
		if (io_uring_wait_cqe_timeout(&b->ring, &cqe, &ts) == 0)
			reap(b, NULL, true);
	}
	if (b->inflight) {
		/*
		 * Not cancellable and not finishing (a hung disk). Their
		 * completions are recognized as stale and dropped; the data
		 * may still land in guest RAM, which stays mapped.
		 */
		hostd_dev_log(b->dev, "vbus-blk: %u requests still in flight "
			      "after %u ms at close%s", b->inflight,
			      stop ? VBLK_DRAIN_STOP_MS : VBLK_DRAIN_MS,
			      stop ? " (the daemon is stopping)" : "");
		b->st.drain_timeouts++;
		b->stale += b->inflight;
		b->inflight = 0;
	}
}

/* ---- attach / detach --------------------------------------------------------- */

int vbus_blk_queue_attach(struct vbus_blk *b, struct hostd_shm *shm)
{
	struct vbus_blk_queue *q;
	struct iovec *iov;
	unsigned int i;
	int ret;

	if (!b->negotiated || shm->id >= b->nr_queues || !shm->signal)
		return -EINVAL;
	q = &b->q[shm->id];
	if (q->attached)
		return -EBUSY;
	/* the ring must be exactly the negotiated depth */
	q->ring.owner = q;
	ret = hostd_devq_attach(&q->ring, shm, b->depth, on_signal);
	if (ret < 0)
		return ret;
	q->slots = calloc(b->depth, sizeof(*q->slots));
	iov = q->slots ? calloc((size_t)b->depth * b->max_segs,
				sizeof(struct iovec)) : NULL;
	if (!iov) {
		free(q->slots);
		q->slots = NULL;
		hostd_devq_detach(&q->ring);
		return -ENOMEM;
	}
	q->slots[0].iov = iov;
	for (i = 1; i < b->depth; i++)
		q->slots[i].iov = q->slots[0].iov + (size_t)i * b->max_segs;
	q->b = b;
	q->idx = shm->id;
	q->depth = b->depth;
	q->next = q->head = 0;
	q->inflight = 0;
	q->attached = true;
	shm->priv = q;
	/* listen; anything posted before the registration is run now */
	hostd_devq_unmask(&q->ring, 0);
	queue_run(q);
	return 0;
}

/* close, after the drain: nothing of io_uring points into the slots */
void vbus_blk_queue_detach(struct vbus_blk_queue *q)
{
	if (!q->attached)
		return;
	q->attached = false;
	hostd_devq_detach(&q->ring);
	free(q->slots[0].iov);
	free(q->slots);
	q->slots = NULL;
}
