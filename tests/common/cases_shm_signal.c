// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Cases for core/shm_signal.c, shared by cmocka (tests/unit) and the
 * kernel selftest (vt_kernel.h). One behaviour per case. The north side
 * plays the producer (it injects into irq[south]); the south side is the
 * receiver whose enable/disable/wakeup is under test.
 */
#include <vbus/shm_signal.h>
#include <vbus/ioq.h>
#include "vt.h"

#define SOUTH_IRQ(p) vt_irq(&(p)->desc, shm_locality_south)
#define NORTH_IRQ(p) vt_irq(&(p)->desc, shm_locality_north)

/* ---- descriptor ---- */

VT_CASE(desc_init_formats)
{
	struct shm_signal_desc *d = vt_alloc(sizeof(*d));

	VT_ASSERT(d);
	memset(d, 0xa5, sizeof(*d));
	shm_signal_desc_init(d);
	VT_ASSERT_EQ(d->magic, SHM_SIGNAL_MAGIC);
	VT_ASSERT_EQ(d->ver, SHM_SIGNAL_VER);
	for (int i = 0; i < 2; i++) {
		VT_ASSERT_EQ(d->irq[i].enabled, 0);
		VT_ASSERT_EQ(d->irq[i].pending, 0);
		VT_ASSERT_EQ(d->irq[i].dirty, 0);
	}
	VT_ASSERT_EQ(d->reserved[0] | d->reserved[1], 0);
	VT_ASSERT_EQ(shm_signal_desc_check(d), 0);
}

VT_CASE(desc_check_bad_magic)
{
	struct shm_signal_desc *d = vt_alloc(sizeof(*d));

	VT_ASSERT(d);
	shm_signal_desc_init(d);
	d->magic ^= 1;
	VT_ASSERT_EQ(shm_signal_desc_check(d), -EINVAL);
}

VT_CASE(desc_check_bad_version)
{
	struct shm_signal_desc *d = vt_alloc(sizeof(*d));

	VT_ASSERT(d);
	shm_signal_desc_init(d);
	d->ver = SHM_SIGNAL_VER + 1;
	VT_ASSERT_EQ(shm_signal_desc_check(d), -EPROTO);
}

VT_CASE(init_local_state)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	VT_ASSERT_EQ(p->south.sig.locale, shm_locality_south);
	VT_ASSERT(p->south.sig.desc == &p->desc);
	VT_ASSERT_EQ(vbus_ref_read(&p->south.sig.ref), 1);
	VT_ASSERT_EQ(shm_signal_faulted(&p->south.sig), 0);
	VT_ASSERT_EQ(vt_defer_pending(&p->south.sig.deferred_notify), 0);
}

/* ---- inject ---- */

VT_CASE(inject_to_disabled_marks_dirty_only)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	VT_ASSERT_EQ(shm_signal_inject(&p->north.sig, 0), 0);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->dirty, 1);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->pending, 0);
	VT_ASSERT_EQ(p->north.injects, 0);
	VT_ASSERT_EQ(p->north.sig.injects, 0);
}

VT_CASE(inject_targets_peer_record_only)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	shm_signal_enable(&p->south.sig, 0);
	shm_signal_enable(&p->north.sig, 0);
	VT_ASSERT_EQ(shm_signal_inject(&p->north.sig, 0), 0);
	VT_ASSERT_EQ(NORTH_IRQ(p)->dirty, 0);
	VT_ASSERT_EQ(NORTH_IRQ(p)->pending, 0);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->dirty, 1);
}

VT_CASE(inject_to_enabled_crosses_once_and_sets_pending)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	shm_signal_enable(&p->south.sig, 0);
	VT_ASSERT_EQ(shm_signal_inject(&p->north.sig, 0), 0);
	VT_ASSERT_EQ(p->north.injects, 1);
	VT_ASSERT_EQ(p->north.sig.injects, 1);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->pending, 1);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->dirty, 1);
}

VT_CASE(inject_while_pending_does_not_cross_again)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	shm_signal_enable(&p->south.sig, 0);
	for (int i = 0; i < 3; i++)
		VT_ASSERT_EQ(shm_signal_inject(&p->north.sig, 0), 0);
	VT_ASSERT_EQ(p->north.injects, 1);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->pending, 1);
}

VT_CASE(inject_returns_op_error)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	p->north.inject_ret = -EPIPE;
	shm_signal_enable(&p->south.sig, 0);
	VT_ASSERT_EQ(shm_signal_inject(&p->north.sig, 0), -EPIPE);
	VT_ASSERT_EQ(p->north.injects, 1);
}

/* ---- wakeup ---- */

VT_CASE(wakeup_runs_notifier_then_clears_pending)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	shm_signal_enable(&p->south.sig, 0);
	shm_signal_inject(&p->north.sig, 0);
	_shm_signal_wakeup(&p->south.sig);
	VT_ASSERT_EQ(p->south.notifies, 1);
	VT_ASSERT_EQ(p->south.sig.wakeups, 1);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->dirty, 0);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->pending, 0);
}

VT_CASE(wakeup_ack_lets_next_inject_cross)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	shm_signal_enable(&p->south.sig, 0);
	shm_signal_inject(&p->north.sig, 0);
	_shm_signal_wakeup(&p->south.sig);
	shm_signal_inject(&p->north.sig, 0);
	VT_ASSERT_EQ(p->north.injects, 2);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->pending, 1);
}

VT_CASE(wakeup_reruns_notifier_that_redirties)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	p->south.redirty = 2;	/* the peer signals again during two runs */
	shm_signal_enable(&p->south.sig, 0);
	shm_signal_inject(&p->north.sig, 0);
	_shm_signal_wakeup(&p->south.sig);
	VT_ASSERT_EQ(p->south.notifies, 3);
	VT_ASSERT_EQ(p->north.injects, 1);	/* pending held the doorbell */
	VT_ASSERT_EQ(SOUTH_IRQ(p)->dirty, 0);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->pending, 0);
}

VT_CASE(wakeup_with_nothing_dirty_runs_nothing)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	shm_signal_enable(&p->south.sig, 0);
	_shm_signal_wakeup(&p->south.sig);
	VT_ASSERT_EQ(p->south.notifies, 0);
}

VT_CASE(wakeup_while_disabled_leaves_dirty)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	shm_signal_inject(&p->north.sig, 0);
	_shm_signal_wakeup(&p->south.sig);
	VT_ASSERT_EQ(p->south.notifies, 0);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->dirty, 1);
}

VT_CASE(wakeup_budget_yields_to_deferred_notify)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	p->south.redirty = -1;	/* a peer that never stops */
	shm_signal_enable(&p->south.sig, 0);
	shm_signal_inject(&p->north.sig, 0);
	_shm_signal_wakeup(&p->south.sig);
	VT_ASSERT_EQ(p->south.notifies, SHM_SIGNAL_WAKEUP_BUDGET);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->dirty, 1);
	/* still "in flight": the peer must not ring again meanwhile */
	VT_ASSERT_EQ(SOUTH_IRQ(p)->pending, 1);
	VT_ASSERT_EQ(p->north.injects, 1);
	VT_ASSERT_EQ(vt_defer_pending(&p->south.sig.deferred_notify), 1);

	/* the deferred run picks up where the budget stopped */
	p->south.redirty = 3;
	VT_ASSERT_EQ(vt_defer_flush(&p->south.sig.deferred_notify), 1);
	VT_ASSERT_EQ(p->south.notifies, SHM_SIGNAL_WAKEUP_BUDGET + 4);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->dirty, 0);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->pending, 0);
	VT_ASSERT_EQ(vt_defer_pending(&p->south.sig.deferred_notify), 0);
}

/*
 * Our mask is ours: the peer writing our enabled byte (and dirty,
 * pending) must not run a masked side's notifier (issue 20.5: the
 * wakeup read enabled back from shared memory).
 */
VT_CASE(wakeup_ignores_peer_written_enabled)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	shm_signal_disable(&p->south.sig, 0);
	SOUTH_IRQ(p)->enabled = 1;	/* the peer unmasks us */
	SOUTH_IRQ(p)->dirty = 1;
	SOUTH_IRQ(p)->pending = 1;
	_shm_signal_wakeup(&p->south.sig);
	VT_ASSERT_EQ(p->south.notifies, 0);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->dirty, 1);
}

/* ---- enable / disable ---- */

VT_CASE(enable_sets_enabled)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	VT_ASSERT_EQ(shm_signal_enable(&p->south.sig, 0), 0);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->enabled, 1);
	VT_ASSERT_EQ(NORTH_IRQ(p)->enabled, 0);
}

VT_CASE(enable_with_dirty_schedules_deferred_notify)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	shm_signal_inject(&p->north.sig, 0);	/* masked: dirty only */
	shm_signal_enable(&p->south.sig, 0);
	VT_ASSERT_EQ(p->south.notifies, 0);	/* never inline in enable */
	VT_ASSERT_EQ(vt_defer_pending(&p->south.sig.deferred_notify), 1);
	VT_ASSERT_EQ(vt_defer_flush(&p->south.sig.deferred_notify), 1);
	VT_ASSERT_EQ(p->south.notifies, 1);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->dirty, 0);
}

VT_CASE(enable_with_pending_schedules_deferred_notify)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	/* a doorbell rang, then we masked before handling it */
	shm_signal_enable(&p->south.sig, 0);
	shm_signal_inject(&p->north.sig, 0);
	shm_signal_disable(&p->south.sig, 0);
	_shm_signal_wakeup(&p->south.sig);
	VT_ASSERT_EQ(p->south.notifies, 0);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->pending, 1);

	shm_signal_enable(&p->south.sig, 0);
	VT_ASSERT_EQ(vt_defer_flush(&p->south.sig.deferred_notify), 1);
	VT_ASSERT_EQ(p->south.notifies, 1);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->pending, 0);
}

VT_CASE(enable_when_clean_schedules_nothing)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	shm_signal_enable(&p->south.sig, 0);
	VT_ASSERT_EQ(vt_defer_pending(&p->south.sig.deferred_notify), 0);
	VT_ASSERT_EQ(vt_defer_flush(&p->south.sig.deferred_notify), 0);
	VT_ASSERT_EQ(p->south.notifies, 0);
}

VT_CASE(enable_inside_wakeup_leaves_it_to_the_loop)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	p->south.enable_in_notify = 1;	/* e.g. a poll loop re-arming */
	p->south.redirty = 1;
	shm_signal_enable(&p->south.sig, 0);
	shm_signal_inject(&p->north.sig, 0);
	_shm_signal_wakeup(&p->south.sig);
	VT_ASSERT_EQ(p->south.notifies, 2);
	VT_ASSERT_EQ(vt_defer_pending(&p->south.sig.deferred_notify), 0);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->pending, 0);
}

VT_CASE(disable_masks_notifications)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	shm_signal_enable(&p->south.sig, 0);
	VT_ASSERT_EQ(shm_signal_disable(&p->south.sig, 0), 0);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->enabled, 0);
	shm_signal_inject(&p->north.sig, 0);
	VT_ASSERT_EQ(p->north.injects, 0);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->dirty, 1);
}

VT_CASE(notifier_that_masks_stops_wakeup_until_enable)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	p->south.disable_in_notify = 1;	/* the NAPI pattern */
	p->south.redirty = 1;
	shm_signal_enable(&p->south.sig, 0);
	shm_signal_inject(&p->north.sig, 0);
	_shm_signal_wakeup(&p->south.sig);
	VT_ASSERT_EQ(p->south.notifies, 1);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->dirty, 1);

	/* the poll is done: re-enabling must find the work left behind */
	p->south.disable_in_notify = 0;
	shm_signal_enable(&p->south.sig, 0);
	VT_ASSERT_EQ(vt_defer_flush(&p->south.sig.deferred_notify), 1);
	VT_ASSERT_EQ(p->south.notifies, 2);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->dirty, 0);
}

/* ---- references ---- */

VT_CASE(release_runs_once_at_zero)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	VT_ASSERT(shm_signal_get(&p->south.sig) == &p->south.sig);
	shm_signal_get(&p->south.sig);
	VT_ASSERT_EQ(vbus_ref_read(&p->south.sig.ref), 3);
	shm_signal_put(&p->south.sig);
	shm_signal_put(&p->south.sig);
	VT_ASSERT_EQ(p->south.releases, 0);
	shm_signal_put(&p->south.sig);
	VT_ASSERT_EQ(p->south.releases, 1);
}

VT_CASE(put_without_release_op)
{
	struct vt_pair *p = vt_pair_new_ops(vt_ops_bare());

	VT_ASSERT(p);
	shm_signal_put(&p->south.sig);
	VT_ASSERT_EQ(p->south.releases, 0);
}

/* ---- faults ---- */

VT_CASE(fault_marks_faulted_and_calls_op)
{
	struct vt_pair *p = vt_pair_new();
	static const char msg[] = "vt: test fault";

	VT_ASSERT(p);
	shm_signal_fault(&p->north.sig, msg);
	VT_ASSERT_EQ(shm_signal_faulted(&p->north.sig), 1);
	VT_ASSERT_EQ(p->north.faults, 1);
	VT_ASSERT(p->north.fault_msg == msg);
	VT_ASSERT_EQ(shm_signal_faulted(&p->south.sig), 0);
}

VT_CASE(faulted_inject_returns_eio)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	shm_signal_enable(&p->south.sig, 0);
	SHM_SIGNAL_FAULT(&p->north.sig, "vt: test fault");
	VT_ASSERT_EQ(shm_signal_inject(&p->north.sig, 0), -EIO);
	VT_ASSERT_EQ(p->north.injects, 0);
	VT_ASSERT_EQ(SOUTH_IRQ(p)->dirty, 0);
}

VT_CASE(default_fault_logs_and_returns)
{
	struct vt_pair *p = vt_pair_new_ops(vt_ops_bare());

	VT_ASSERT(p);
	/* no fault op: a log line, never an abort or a panic */
	shm_signal_fault(&p->north.sig, "vt: expected test fault, ignore");
	VT_ASSERT_EQ(shm_signal_faulted(&p->north.sig), 1);
	VT_ASSERT_EQ(shm_signal_inject(&p->north.sig, 0), -EIO);
}

VT_CASE(fault_in_notifier_ends_wakeup)
{
	struct vt_pair *p = vt_pair_new();

	VT_ASSERT(p);
	p->south.fault_in_notify = 1;
	p->south.redirty = -1;
	shm_signal_enable(&p->south.sig, 0);
	shm_signal_inject(&p->north.sig, 0);
	_shm_signal_wakeup(&p->south.sig);
	VT_ASSERT_EQ(p->south.notifies, 1);
	VT_ASSERT_EQ(p->south.faults, 1);
	VT_ASSERT_EQ(vt_defer_pending(&p->south.sig.deferred_notify), 0);
}

VT_SUITE(shm_signal,
	VT_ENTRY(desc_init_formats),
	VT_ENTRY(desc_check_bad_magic),
	VT_ENTRY(desc_check_bad_version),
	VT_ENTRY(init_local_state),
	VT_ENTRY(inject_to_disabled_marks_dirty_only),
	VT_ENTRY(inject_targets_peer_record_only),
	VT_ENTRY(inject_to_enabled_crosses_once_and_sets_pending),
	VT_ENTRY(inject_while_pending_does_not_cross_again),
	VT_ENTRY(inject_returns_op_error),
	VT_ENTRY(wakeup_runs_notifier_then_clears_pending),
	VT_ENTRY(wakeup_ack_lets_next_inject_cross),
	VT_ENTRY(wakeup_reruns_notifier_that_redirties),
	VT_ENTRY(wakeup_with_nothing_dirty_runs_nothing),
	VT_ENTRY(wakeup_while_disabled_leaves_dirty),
	VT_ENTRY(wakeup_budget_yields_to_deferred_notify),
	VT_ENTRY(wakeup_ignores_peer_written_enabled),
	VT_ENTRY(enable_sets_enabled),
	VT_ENTRY(enable_with_dirty_schedules_deferred_notify),
	VT_ENTRY(enable_with_pending_schedules_deferred_notify),
	VT_ENTRY(enable_when_clean_schedules_nothing),
	VT_ENTRY(enable_inside_wakeup_leaves_it_to_the_loop),
	VT_ENTRY(disable_masks_notifications),
	VT_ENTRY(notifier_that_masks_stops_wakeup_until_enable),
	VT_ENTRY(release_runs_once_at_zero),
	VT_ENTRY(put_without_release_op),
	VT_ENTRY(fault_marks_faulted_and_calls_op),
	VT_ENTRY(faulted_inject_returns_eio),
	VT_ENTRY(default_fault_logs_and_returns),
	VT_ENTRY(fault_in_notifier_ends_wakeup)
)
