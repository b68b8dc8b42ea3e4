// SPDX-License-Identifier: GPL-2.0
/*
 * Cross-CPU stress of one IOQ, both sides in this kernel.
 *
 * A producer kthread (north, the driver side) and a consumer kthread (south,
 * the host side), bound to different CPUs, share one ring in kmalloc'ed
 * memory and follow the usage protocol of core/ioq.c through exactly the
 * role calls the devices use: north posts a batch with ioq_post_begin()/
 * ioq_post_end() (one tail store, one signal), south consumes with
 * ioq_consume_begin()/ioq_consume_end() and hands each descriptor back
 * with a completion tag, north reaps with ioq_reap_begin()/ioq_reap_end().
 * The 2009 iterator, which no device uses, is tested as the compatibility
 * API it is by the shared cases (tests/common/cases_ioq.c).
 *
 * Each side has its own shm_signal over the ring's one descriptor. The
 * "boundary crossing" of an inject is an irq_work: a hard interrupt on the
 * injecting CPU (what a doorbell or an MSI would be) whose handler runs the
 * PEER's _shm_signal_wakeup(); the peer's notifier then wakes the peer
 * kthread on its own CPU. So every notification really crosses CPUs and
 * goes through the whole enable/inject/wakeup protocol, including the
 * deferred notify (tasklet) that shm_signal_enable() uses.
 *
 * The consumer also plays venet's NAPI look-again (issue 20.1): after each
 * batch it asks ioq_reap_poll() about north's ring with the snapshot the
 * reaper last took (ioq_reap_snapshot()), on its own CPU while the
 * producer reaps on the other. That runs the call venet uses in-guest,
 * against a live reaper; it cannot catch a look-again that writes the
 * reaper's state, since valid_head does not move while the consumer
 * itself looks (the old look-again passed here): that race needs a third
 * party, and `ioq-stress --lookagain 1` (tests/stress) is its test.
 *
 * Checks: every message arrives exactly once and in order (cookie = sequence
 * number, ptr = a tag of it), every completion comes back in order with the
 * tag the consumer wrote, no lost wakeup (a sleep that ended by its timeout
 * with work ready, and still no wakeup long after), no channel fault, and
 * the ring is empty and consistent at the end.
 */
#define pr_fmt(fmt) "vbus_selftest: " fmt

#include <linux/kthread.h>
#include <linux/irq_work.h>
#include <linux/slab.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/ktime.h>
#include <linux/jiffies.h>
#include <linux/cpumask.h>
#include <linux/math64.h>
#include <linux/atomic.h>
#include <vbus/platform.h>
#include <vbus/shm_signal.h>
#include <vbus/ioq.h>
#include "selftest.h"

/*
 * A sleep that lasts this long ends by its timeout. If the awaited work was
 * not ready by then, the peer was just slow (a starved vCPU under TCG),
 * which is counted but is no failure. If it was ready, the peer may still
 * be between publishing and injecting (its vCPU stolen for seconds): its
 * wakeup is late, not lost. Lost is a wakeup that has not come
 * VST_LOST_MS later; a real one never comes (the notification protocol
 * guarantees one for work published after our enable), and only that
 * case waits so long.
 */
#define VST_STALL_MS 5000
#define VST_LOST_MS 30000

struct vst_stress;

/* One side of the channel: what a driver (north) or the host (south) holds. */
struct vst_side {
	struct vst_stress *st;
	struct vst_side *peer;
	struct shm_signal sig;
	struct ioq ioq;
	struct irq_work irq;		/* the interrupt this side receives */
	struct task_struct *task;
	int cpu;
	/* written by this side's kthread only */
	unsigned long waits;
	unsigned long stalls;
	unsigned long lost_wakeups;
};

struct vst_stress {
	const struct vst_stress_cfg *cfg;
	struct ioq_ring_head *ring;
	struct vst_side north;
	struct vst_side south;
	u64 pushed;	/* north only */
	u64 reaped;	/* north only */
	u64 consumed;	/* south only */
	u32 reap_snap;	/* north writes, south reads: WRITE_ONCE/READ_ONCE */
	unsigned long lookagains, lookagain_hits;	/* south only */
	atomic_t running;
	wait_queue_head_t done_wq;
	bool abort;	/* READ_ONCE/WRITE_ONCE: stop both sides */
	spinlock_t lock;	/* protects why */
	char why[160];	/* first failure */
};

/* What north puts in ptr, and what south writes back into len. */
static u64 vst_tag(u64 seq)
{
	return (seq * 0x9e3779b97f4a7c15ULL) ^ 0x5bd1e9955bd1e995ULL;
}

static u64 vst_done_tag(u64 seq)
{
	return ~vst_tag(seq);
}

static bool vst_stopping(struct vst_stress *st)
{
	return READ_ONCE(st->abort) || kthread_should_stop();
}

/* Record the first failure and make both sides give up. Any context. */
static __printf(2, 3) void vst_stress_fail(struct vst_stress *st,
					   const char *fmt, ...)
{
	unsigned long flags;
	va_list ap;

	spin_lock_irqsave(&st->lock, flags);
	if (!st->why[0]) {
		va_start(ap, fmt);
		vscnprintf(st->why, sizeof(st->why), fmt, ap);
		va_end(ap);
	}
	spin_unlock_irqrestore(&st->lock, flags);
	WRITE_ONCE(st->abort, true);
	wake_up(&st->north.ioq.wq);
	wake_up(&st->south.ioq.wq);
}

/* ---- the transport: shm_signal ops and the "interrupt" ---------------- */

static int vst_inject(struct shm_signal *s)
{
	struct vst_side *side = container_of(s, struct vst_side, sig);

	/*
	 * Raise the peer's interrupt. A work already pending coalesces with
	 * this one, like an eventfd or a level-triggered line: its handler
	 * has not run yet and will see our dirty flag.
	 */
	irq_work_queue(&side->peer->irq);
	return 0;
}

static void vst_fault(struct shm_signal *s, const char *msg)
{
	struct vst_side *side = container_of(s, struct vst_side, sig);

	vst_stress_fail(side->st, "%s: channel fault: %s",
			side == &side->st->north ? "north" : "south", msg);
}

static const struct shm_signal_ops vst_signal_ops = {
	.inject = vst_inject,
	.fault = vst_fault,
};

/* Hard-irq context, like a bridge's interrupt handler. */
static void vst_irq(struct irq_work *work)
{
	struct vst_side *side = container_of(work, struct vst_side, irq);

	_shm_signal_wakeup(&side->sig);
}

/* ---- sleeping ---------------------------------------------------------- */

/*
 * Work was ready when a sleep timed out: true if no wakeup (the notifier
 * run by _shm_signal_wakeup()) has come since @woken, within VST_LOST_MS
 * more. The count is bumped after the notifier's wake_up(): a wakeup we
 * race with is seen when the wait re-evaluates at its end.
 */
static bool vst_wakeup_lost(struct vst_side *side, unsigned long woken)
{
	struct vst_stress *st = side->st;

	wait_event_idle_timeout(side->ioq.wq,
				READ_ONCE(side->sig.wakeups) != woken ||
				vst_stopping(st),
				msecs_to_jiffies(VST_LOST_MS));
	return READ_ONCE(side->sig.wakeups) == woken && !vst_stopping(st);
}

/*
 * Sleep until @ready(side), with notifications enabled. wait_event
 * evaluates @ready after the enable and before it sleeps: the
 * enable-then-recheck that catches a peer which published just before we
 * unmasked (its inject saw us masked and did not cross). Notifications
 * stay masked while we work, so a busy side costs the peer no interrupts.
 */
static void vst_wait(struct vst_side *side, bool (*ready)(struct vst_side *))
{
	struct vst_stress *st = side->st;
	unsigned long t0, woken;
	long left;

	side->waits++;
	ioq_notify_enable(&side->ioq, 0);
	for (;;) {
		t0 = jiffies;
		woken = READ_ONCE(side->sig.wakeups);
		left = wait_event_idle_timeout(side->ioq.wq,
					       ready(side) || vst_stopping(st),
					       msecs_to_jiffies(VST_STALL_MS));
		if (left)
			break;
		side->stalls++;
	}
	/*
	 * 1 means the condition held only when the timeout re-evaluated it:
	 * the work was there and nobody woke us, yet.
	 */
	if (left == 1 && !vst_stopping(st) &&
	    time_after_eq(jiffies, t0 + msecs_to_jiffies(VST_STALL_MS)) &&
	    vst_wakeup_lost(side, woken))
		side->lost_wakeups++;
	ioq_notify_disable(&side->ioq, 0);
}

/* ---- north: producer --------------------------------------------------- */

/* The oldest posted descriptor has come back (errors wake us, too). */
static bool vst_reapable(struct vst_side *n)
{
	u32 pos;

	return ioq_reap_begin(&n->ioq, 1, &pos) != 0;
}

/* Reap completed descriptors in order; returns how many, or -errno. */
static int vst_reap(struct vst_side *n)
{
	struct vst_stress *st = n->st;
	struct ioq_ring_desc *d;
	int k, i, ret;
	u32 pos;

	/* [A2] inside: valid's head before the completions it covers */
	k = ioq_reap_begin(&n->ioq, st->cfg->ring, &pos);
	if (k <= 0)
		return k;
	for (i = 0; i < k; i++) {
		d = ioq_desc(&n->ioq, pos + i);
		if (d->cookie != st->reaped ||
		    d->len != vst_done_tag(st->reaped)) {
			vst_stress_fail(st, "north: completion %llu came back as cookie %llu len %#llx",
					st->reaped, d->cookie, d->len);
			return -EPROTO;
		}
		st->reaped++;
	}
	/* [R3] inside: our reads of the completions before inuse's head */
	ret = ioq_reap_end(&n->ioq, k, 0);
	if (ret) {
		vst_stress_fail(st, "north: reap_end %d: %d", k, ret);
		return ret;
	}
	return k;
}

/*
 * Post what fits of what is left, one batch: one tail store and one
 * signal (masked south: no crossing). How many, or -errno.
 */
static int vst_post(struct vst_side *n)
{
	struct vst_stress *st = n->st;
	u64 left = st->cfg->msgs - st->pushed;
	unsigned int want = left < st->cfg->ring ? (unsigned int)left :
						   st->cfg->ring;
	struct ioq_ring_desc *d;
	int k, i, ret;
	u32 pos;

	k = ioq_post_begin(&n->ioq, want, &pos);
	if (k <= 0)
		return k;	/* full, or faulted: already reported */
	for (i = 0; i < k; i++) {
		d = ioq_desc(&n->ioq, pos + i);
		d->cookie = st->pushed + i;
		d->ptr = vst_tag(st->pushed + i);
		d->len = 0;
	}
	/*
	 * [R1] inside: the bodies before the tail. No error here: the
	 * claim had room, and a slot is reaped only after south's [R2]
	 * moved valid's head past it (v5: [R4] after [R2]; docs/ring.md).
	 */
	ret = ioq_post_end(&n->ioq, k, IOQ_ITER_AUTOUPDATE);
	if (ret) {
		vst_stress_fail(st, "north: post_end %llu+%d: %d",
				st->pushed, k, ret);
		return ret;
	}
	st->pushed += k;
	return k;
}

static int vst_producer(void *arg)
{
	struct vst_side *n = arg;
	struct vst_stress *st = n->st;
	u64 msgs = st->cfg->msgs;
	int progress, posted;

	while (st->reaped < msgs && !vst_stopping(st)) {
		progress = vst_reap(n);
		if (progress < 0)
			break;
		/* the reaper's snapshot, for the consumer's look-again */
		WRITE_ONCE(st->reap_snap, ioq_reap_snapshot(&n->ioq));

		if (st->pushed < msgs) {
			posted = vst_post(n);
			if (posted < 0)
				break;	/* faulted: already reported */
			progress += posted;
		}

		if (progress)
			cond_resched();
		else	/* ring full, or all posted: wait for completions */
			vst_wait(n, vst_reapable);
	}
	if (atomic_dec_and_test(&st->running))
		wake_up(&st->done_wq);
	return 0;
}

/* ---- south: consumer --------------------------------------------------- */

/* the consumer's look (a claim that publishes nothing); errors wake us */
static bool vst_consumable(struct vst_side *s)
{
	u32 pos;

	return ioq_consume_begin(&s->ioq, 1, &pos) != 0;
}

static int vst_consumer(void *arg)
{
	struct vst_side *s = arg;
	struct vst_stress *st = s->st;
	u64 msgs = st->cfg->msgs;
	struct ioq_ring_desc *d;
	int n, i, ret;
	u32 pos;

	/*
	 * Everything published so far (one [A1] reload at most), then
	 * valid's head once ([R2]) and one signal per batch, as vbus-hostd's
	 * device queue (hostd_devq) does.
	 */
	while (st->consumed < msgs && !vst_stopping(st)) {
		n = ioq_consume_begin(&s->ioq, st->cfg->ring, &pos);
		if (n < 0)
			break;	/* faulted: already reported */
		if (!n) {
			vst_wait(s, vst_consumable);
			continue;
		}
		for (i = 0; i < n; i++) {
			d = ioq_desc(&s->ioq, pos + i);
			if (d->cookie != st->consumed ||
			    d->ptr != vst_tag(st->consumed)) {
				vst_stress_fail(st, "south: expected message %llu, got cookie %llu ptr %#llx (lost, duplicated or reordered)",
						st->consumed, d->cookie, d->ptr);
				goto out;
			}
			d->len = vst_done_tag(st->consumed);
			st->consumed++;
		}
		ret = ioq_consume_end(&s->ioq, n, IOQ_ITER_AUTOUPDATE);
		if (ret) {
			vst_stress_fail(st, "south: consume_end %d: %d", n,
					ret);
			goto out;
		}
		/* venet_poll()'s look-again, racing the reaper */
		st->lookagains++;
		if (ioq_reap_poll(&st->north.ioq, READ_ONCE(st->reap_snap)))
			st->lookagain_hits++;
		cond_resched();
	}
out:
	if (atomic_dec_and_test(&st->running))
		wake_up(&st->done_wq);
	return 0;
}

/* ---- setup, run, teardown ---------------------------------------------- */

static int vst_side_init(struct vst_stress *st, struct vst_side *side,
			 struct vst_side *peer, enum shm_signal_locality sl,
			 enum ioq_locality il)
{
	side->st = st;
	side->peer = peer;
	init_irq_work(&side->irq, vst_irq);
	shm_signal_init(&side->sig, sl, &vst_signal_ops, &st->ring->signal);
	/* start masked: each side unmasks only to sleep */
	shm_signal_disable(&side->sig, 0);
	/* ioq takes over our reference on sig */
	return ioq_init(&side->ioq, NULL, il, st->ring, &side->sig,
			st->cfg->ring);
}

/*
 * Stop everything that could still touch the channel, then free it: the
 * kthreads (the only injectors), then the interrupts they raised, then the
 * deferred notifies those may have scheduled. Masking first means a late
 * wakeup runs no notifier.
 */
static void vst_side_quiesce(struct vst_side *side)
{
	if (side->task) {
		kthread_stop(side->task);
		put_task_struct(side->task);
		side->task = NULL;
	}
}

static void vst_side_teardown(struct vst_side *side)
{
	shm_signal_disable(&side->sig, 0);
	irq_work_sync(&side->irq);
	vbus_defer_cancel(&side->sig.deferred_notify);
}

static int vst_pick_cpus(const struct vst_stress_cfg *cfg, int *pcpu,
			 int *ccpu)
{
	int p = cfg->producer_cpu, c = cfg->consumer_cpu;

	if (p < 0)
		p = cpumask_first(cpu_online_mask);
	if (c < 0) {
		c = cpumask_next(p, cpu_online_mask);
		if (c >= nr_cpu_ids)
			c = p;	/* one CPU: still a valid (weaker) test */
	}
	if (p >= nr_cpu_ids || c >= nr_cpu_ids || !cpu_online(p) ||
	    !cpu_online(c))
		return -EINVAL;
	*pcpu = p;
	*ccpu = c;
	return 0;
}

static int vst_start(struct vst_side *side, int (*fn)(void *),
		     const char *name)
{
	struct task_struct *t;

	t = kthread_create(fn, side, "%s/%d", name, side->cpu);
	if (IS_ERR(t))
		return PTR_ERR(t);
	/* a ref so kthread_stop() works even after fn returned */
	get_task_struct(t);
	kthread_bind(t, side->cpu);
	side->task = t;
	return 0;
}

static void vst_report(struct vst_stress *st, u64 ns)
{
	const struct vst_stress_cfg *cfg = st->cfg;
	u64 msgs = st->consumed;
	u64 notifies = st->north.sig.injects + st->south.sig.injects;
	u64 ms = div_u64(ns, NSEC_PER_MSEC);
	u64 rate = ns ? div64_u64(msgs * NSEC_PER_SEC, ns) : 0;
	u64 npm = msgs ? div64_u64(notifies * 1000, msgs) : 0;

	pr_info("STRESS msgs=%llu secs=%llu.%03llu msgs_per_sec=%llu notifies_per_msg=%llu.%03llu ring=%u cpus=%d,%d n2s_notifies=%lu s2n_notifies=%lu wakeups=%lu/%lu waits=%lu/%lu stalls=%lu/%lu lookagains=%lu/%lu\n",
		msgs, ms / 1000, ms % 1000, rate, npm / 1000, npm % 1000,
		cfg->ring, st->north.cpu, st->south.cpu,
		st->north.sig.injects, st->south.sig.injects,
		st->north.sig.wakeups, st->south.sig.wakeups,
		st->north.waits, st->south.waits,
		st->north.stalls, st->south.stalls,
		st->lookagain_hits, st->lookagains);
}

/* After a clean run: everything arrived once, came back, and nothing hangs. */
static void vst_check_end(struct vst_stress *st)
{
	u64 msgs = st->cfg->msgs;
	int v, u;

	if (st->pushed != msgs || st->consumed != msgs || st->reaped != msgs)
		vst_stress_fail(st, "counts: pushed %llu consumed %llu reaped %llu of %llu",
				st->pushed, st->consumed, st->reaped, msgs);
	v = ioq_count(&st->south.ioq, ioq_idx_consume);
	u = ioq_count(&st->north.ioq, ioq_idx_reap);
	if (v || u)
		vst_stress_fail(st, "ring not empty at the end: valid %d inuse %d",
				v, u);
	if (shm_signal_faulted(&st->north.sig) ||
	    shm_signal_faulted(&st->south.sig))
		vst_stress_fail(st, "channel faulted");
	if (!st->lookagains)
		vst_stress_fail(st, "the look-again never ran");
	if (st->north.lost_wakeups || st->south.lost_wakeups)
		vst_stress_fail(st, "lost wakeups: north %lu south %lu (work ready, no wakeup for %u s)",
				st->north.lost_wakeups, st->south.lost_wakeups,
				(VST_STALL_MS + VST_LOST_MS) / 1000);
}

void vst_run_stress(const struct vst_stress_cfg *cfg)
{
	struct vst_stress *st;
	ktime_t t0;
	u64 ns = 0;
	long left;
	int ret;

	if (!is_power_of_2(cfg->ring) || cfg->ring > IOQ_RING_MAX_COUNT) {
		vst_fail("stress", "stress_ring=%u is not a power of two <= %u",
			 cfg->ring, IOQ_RING_MAX_COUNT);
		return;
	}

	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st) {
		vst_fail("stress", "out of memory");
		return;
	}
	st->cfg = cfg;
	spin_lock_init(&st->lock);
	init_waitqueue_head(&st->done_wq);
	st->ring = kzalloc(IOQ_HEAD_DESC_SIZE(cfg->ring), GFP_KERNEL);
	if (!st->ring) {
		kfree(st);
		vst_fail("stress", "out of memory for a %u-slot ring", cfg->ring);
		return;
	}

	ret = ioq_ring_format(st->ring, cfg->ring);
	if (ret) {
		/* nothing was bound to the ring yet */
		kfree(st->ring);
		kfree(st);
		vst_fail("stress", "ioq_ring_format: %d", ret);
		return;
	}
	/* cannot fail: the count was checked above */
	vst_side_init(st, &st->north, &st->south, shm_locality_north,
		      ioq_locality_north);
	vst_side_init(st, &st->south, &st->north, shm_locality_south,
		      ioq_locality_south);

	ret = vst_pick_cpus(cfg, &st->north.cpu, &st->south.cpu);
	if (ret) {
		vst_stress_fail(st, "no such online CPUs: producer_cpu=%d consumer_cpu=%d",
				cfg->producer_cpu, cfg->consumer_cpu);
		goto teardown;
	}
	if (st->north.cpu == st->south.cpu)
		pr_info("stress: one CPU online, both sides on CPU %d\n",
			st->north.cpu);

	ret = vst_start(&st->north, vst_producer, "vst_north");
	if (!ret)
		ret = vst_start(&st->south, vst_consumer, "vst_south");
	if (ret) {
		vst_stress_fail(st, "kthread_create: %d", ret);
		goto stop;	/* never woken: kthread_stop() reaps them */
	}

	atomic_set(&st->running, 2);
	t0 = ktime_get();
	wake_up_process(st->south.task);
	wake_up_process(st->north.task);

	/* TASK_IDLE: a long run is not a hung task */
	left = wait_event_idle_timeout(st->done_wq, !atomic_read(&st->running),
				       (unsigned long)cfg->timeout_s * HZ);
	ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	if (!left)
		vst_stress_fail(st, "timeout after %u s: pushed %llu consumed %llu reaped %llu",
				cfg->timeout_s, READ_ONCE(st->pushed),
				READ_ONCE(st->consumed), READ_ONCE(st->reaped));
stop:
	vst_side_quiesce(&st->north);
	vst_side_quiesce(&st->south);
	if (!ret) {
		vst_report(st, ns);
		vst_check_end(st);
	}
teardown:
	vst_side_teardown(&st->north);
	vst_side_teardown(&st->south);
	ioq_put(&st->north.ioq);
	ioq_put(&st->south.ioq);

	if (st->why[0])
		vst_fail("stress", "%s", st->why);
	else
		vst_pass("stress");
	kfree(st->ring);
	kfree(st);
}
