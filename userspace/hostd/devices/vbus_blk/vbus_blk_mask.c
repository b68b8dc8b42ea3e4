// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-blk: the guest's doorbells masked while a queue is busy.
 *
 * While a queue has requests in io_uring, each of their completions wakes
 * the loop (vbus_blk_completions), and that wakeup looks at the queue's ring
 * anyway: a doorbell from the guest would only repeat what we are about
 * to see, and costs a VM exit on its side and a wakeup on ours. So a queue
 * with I/O in flight masks its signal (the guest's inject then sets dirty
 * and rings nothing) and unmasks once nothing is in flight.
 *
 * A request posted behind slow ones must not wait for them: a timer
 * (doorbell_mask_us) checks that completions keep coming. When one full
 * period passes without any, every queue unmasks (the guest's next post
 * rings at once, and enabling hands us the posts made while masked) and
 * none masks again until a completion arrives ("stalled"). A post thus
 * waits at most about two periods; a device that completes nothing for
 * a period is slow enough that a doorbell per post does not matter.
 *
 * A queue masks only with at least VBLK_MASK_MIN_INFLIGHT requests in
 * flight: a guest with one request out (QD1) usually waits for it before
 * posting again, so masking would save nothing and cost the timer. It
 * unmasks when nothing is in flight. Everything runs on the guest's loop
 * thread: no locks.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include "vbus_blk_dev.h"

static void arm(struct vbus_blk *b)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = b->mask_us / 1000000;
	its.it_value.tv_nsec = (long)(b->mask_us % 1000000) * 1000;
	b->cqes_at_arm = b->cqes;
	/* cannot fail with a valid fd and value: then we just stay unarmed */
	b->mask_armed = timerfd_settime(b->mask_tfd, 0, &its, NULL) == 0;
}

static void mask(struct vbus_blk_queue *q)
{
	struct vbus_blk *b = q->b;

	/*
	 * enabled=0, no barrier: a guest that still reads enabled=1 rings
	 * once more, which costs a spurious wakeup and nothing else
	 * (shm_signal_disable). The posts it makes from now on are seen by
	 * the ring look of our next completion wakeup ([A1]/[A4] in
	 * queue_run pair with the guest push's [R1]/[R4], core/ioq.c).
	 */
	hostd_devq_mask(&q->ring);
	q->masked = true;
	b->st.masks++;
	if (!b->mask_armed)
		arm(b);
}

static void unmask(struct vbus_blk_queue *q)
{
	q->masked = false;
	/*
	 * shm_signal_enable()'s [B2] orders enabled=1 before its load of
	 * dirty; pairs with [B1] in the guest's inject. A post the guest
	 * made while we were masked set dirty=1 ([B0] after the ring
	 * stores): either the guest saw enabled=1 and rang, or enable sees
	 * dirty=1 and runs our notifier (queue_run) itself. No post is
	 * left unseen. So the look hostd_devq_unmask() makes after the
	 * enable is not needed here (the dirty bit brings queue_run).
	 */
	(void)hostd_devq_unmask(&q->ring, q->next - q->head);
}

void vbus_blk_mask_update(struct vbus_blk_queue *q)
{
	struct vbus_blk *b = q->b;

	if (!q->attached || hostd_dev_faulted(b->dev))
		return;
	if (q->inflight >= VBLK_MASK_MIN_INFLIGHT && !q->masked &&
	    b->mask_tfd >= 0 && !b->mask_stalled)
		mask(q);
	else if (!q->inflight && q->masked && !b->poll_masked)
		unmask(q);	/* a poll's (poll.c) unmasks when it ends */
}

void vbus_blk_mask_cqe(struct vbus_blk *b)
{
	b->cqes++;
	b->mask_stalled = false;
}

static void on_timer(struct hostd_dev *dev, int fd, __u32 events, void *arg)
{
	struct vbus_blk *b = arg;
	__u64 expirations;
	unsigned int i;
	bool any = false;

	(void)dev;
	(void)events;
	if (read(fd, &expirations, sizeof(expirations)) < 0 && errno == EAGAIN)
		return;
	b->mask_armed = false;
	for (i = 0; i < VBUS_BLK_MAX_QUEUES; i++)
		any |= b->q[i].masked;
	if (!any)
		return;
	if (b->cqes != b->cqes_at_arm) {
		arm(b);		/* completions keep coming: the ring is looked at */
		return;
	}
	b->st.mask_timeouts++;
	b->mask_stalled = true;
	for (i = 0; i < VBUS_BLK_MAX_QUEUES; i++)
		if (b->q[i].masked)
			unmask(&b->q[i]);
}

int vbus_blk_mask_init(struct vbus_blk *b)
{
	int ret;

	b->mask_tfd = -1;
	if (!b->mask_us)
		return 0;
	b->mask_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (b->mask_tfd < 0)
		return hostd_dev_fail(b->dev, -errno, "vbus-blk: timerfd: %s",
				      strerror(errno));
	ret = hostd_fd_add(b->dev, b->mask_tfd, EPOLLIN, on_timer, b);
	if (ret < 0)
		return ret;
	b->mask_tfd_watched = true;
	return 0;
}

void vbus_blk_mask_fini(struct vbus_blk *b)
{
	if (b->mask_tfd_watched)
		hostd_fd_del(b->dev, b->mask_tfd);
	if (b->mask_tfd >= 0)
		close(b->mask_tfd);
	b->mask_tfd = -1;
	b->mask_tfd_watched = false;
}

/* close: the rings go away; a timer still armed finds nothing masked */
void vbus_blk_mask_reset(struct vbus_blk *b)
{
	unsigned int i;

	for (i = 0; i < VBUS_BLK_MAX_QUEUES; i++)
		b->q[i].masked = false;
	b->mask_stalled = false;
}
