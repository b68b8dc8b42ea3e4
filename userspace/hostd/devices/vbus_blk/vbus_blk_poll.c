// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-blk: polling (poll_us), the two wakeups of a request off its path.
 *
 * At low queue depth each request costs the loop thread two wakeups: the
 * guest's doorbell, then io_uring's completion eventfd. On a loaded or
 * nested host each is tens of microseconds, as much as the I/O itself.
 * With poll_us=N the device, after each wakeup, keeps looking at
 * io_uring's CQ and at its rings until N microseconds pass with nothing
 * new (QEMU's iothread poll-max-ns and SPDK's vhost do the same). While
 * it looks the guest's doorbells are masked: the guest's inject sets
 * dirty and rings nothing, and a post is started as soon as it is seen;
 * io_uring's eventfd is off (IORING_CQ_EVENTFD_DISABLED), and a
 * completion is handed back as soon as it is seen. The price is host
 * CPU: the thread spins for the window after the last event
 * (the poll_ns counter says how long; 0, the default, never spins).
 *
 * Bounded: one poll returns to the loop after VBLK_POLL_BUDGET_US even
 * while busy (the guest's socket, the ctl socket and the guest's other
 * devices share the thread). Nothing is left unseen when it returns:
 *  - the eventfd goes back on before a last look at the CQ, so a CQE
 *    posted after that look raises it (the kernel reads the flag when it
 *    posts a CQE);
 *  - each queue's doorbell goes back to what vbus_blk_mask.c wants; a
 *    queue unmasked by it runs shm_signal_enable(), whose [B2] pairs with
 *    [B1] in the guest's inject: a post made while we were masked either
 *    rang or is seen by enable, which schedules the queue's notifier
 *    (inside a wakeup: the wakeup's loop sees dirty and runs it again).
 *
 * The loop's steps (reap, run the queues) are the caller's (@step in
 * vbus_blk_poll, vbus_blk_queue.c): this file only times, masks and counts.
 */
#include "vbus_blk_dev.h"

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static bool usable(const struct vbus_blk *b)
{
	return b->open && !hostd_dev_faulted(b->dev);
}

static void mask_all(struct vbus_blk *b)
{
	unsigned int i;

	/* no barrier: see mask() in vbus_blk_mask.c, a late ring is spurious */
	for (i = 0; i < VBUS_BLK_MAX_QUEUES; i++)
		if (b->q[i].attached && !b->q[i].masked)
			hostd_devq_mask(&b->q[i].ring);
	io_uring_cq_eventfd_toggle(&b->ring, false);
	b->poll_masked = true;
}

static void unmask_all(struct vbus_blk *b)
{
	unsigned int i;

	b->poll_masked = false;
	for (i = 0; i < VBUS_BLK_MAX_QUEUES; i++) {
		struct vbus_blk_queue *q = &b->q[i];

		if (!q->attached)
			continue;
		/* in flight: masked (mask.c); idle: unmasked, enable looks */
		vbus_blk_mask_update(q);
		if (!q->masked)
			(void)hostd_devq_unmask(&q->ring,
						q->next - q->head);
	}
}

void vbus_blk_poll(struct vbus_blk *b, bool (*step)(struct vbus_blk *b))
{
	__u64 start, last, now, window;

	if (!b->poll_us || b->polling || !usable(b))
		return;
	b->polling = true;
	b->st.polls++;
	window = (__u64)b->poll_us * 1000;
	mask_all(b);
	start = last = hostd_now_ns();
	for (;;) {
		bool got = step(b);

		now = hostd_now_ns();
		if (got) {
			b->st.poll_hits++;
			last = now;
		}
		if (!usable(b) || now - last >= window ||
		    now - start >= VBLK_POLL_BUDGET_US * 1000ull)
			break;
		/*
		 * pause, not sched_yield(): on a loaded host a yield hands
		 * the core to whatever else is runnable for the rest of its
		 * slice (milliseconds: hostd_vbus_blk_bench measured 4.6 ms
		 * per I/O with it while a build ran), far past the window
		 */
		cpu_relax();
	}
	b->st.poll_ns += now - start;
	if (b->ring_up) {
		io_uring_cq_eventfd_toggle(&b->ring, true);
		/* what the kernel signalled before the toggle: seen below */
		hostd_eventfd_drain(b->efd);
	}
	if (usable(b)) {
		step(b);
		unmask_all(b);
	}
	b->poll_masked = false;
	b->polling = false;
}
