/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Test doubles and fixtures for the shared cases (part of vt.h; portable:
 * no libc beyond memset/memcpy, no assertions).
 *
 *   struct vt_side   one side's shm_signal with ops that count what core/
 *                    does to them, and a notifier whose behaviour a case
 *                    scripts (re-dirty, mask itself, fault ...)
 *   struct vt_pair   north and south signals over one descriptor
 *   struct vt_ring   a formatted ring with a north and a south struct ioq
 *                    (each with its vt_side) over it
 */
#ifndef VT_DOUBLES_H
#define VT_DOUBLES_H

#include <vbus/shm_signal.h>
#include <vbus/ioq.h>

#define vt_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - VBUS_OFFSETOF(type, member)))

struct vt_side {
	struct shm_signal sig;
	struct shm_signal_notifier sig_notifier;
	struct ioq_notifier ioq_notifier;
	struct vt_side *peer;

	/* what core/ did to us */
	int injects;		/* ops->inject calls: doorbells we rang */
	int faults;		/* ops->fault calls */
	const char *fault_msg;
	int releases;		/* ops->release calls */
	int notifies;		/* notifier runs */
	/* set by a case: its ioq's wakeups when the ioq notifier last ran */
	struct vt_waitq_watch *watch;
	long woken_at_notify;

	/* scripted: what ops->inject returns, what the notifier does */
	int inject_ret;
	int redirty;		/* peer injects again, N more times; -1: always */
	int disable_in_notify;
	int enable_in_notify;
	int fault_in_notify;
};

static inline struct vt_side *vt_side_of(struct shm_signal *s)
{
	return vt_container_of(s, struct vt_side, sig);
}

static inline int vt_op_inject(struct shm_signal *s)
{
	struct vt_side *v = vt_side_of(s);

	v->injects++;
	return v->inject_ret;
}

static inline void vt_op_fault(struct shm_signal *s, const char *msg)
{
	struct vt_side *v = vt_side_of(s);

	v->faults++;
	v->fault_msg = msg;
}

static inline void vt_op_release(struct shm_signal *s)
{
	vt_side_of(s)->releases++;
}

/* (functions, not file-scope tables: a case file may use only one) */
static inline const struct shm_signal_ops *vt_ops(void)
{
	static const struct shm_signal_ops ops = {
		.inject = vt_op_inject,
		.fault = vt_op_fault,
		.release = vt_op_release,
	};
	return &ops;
}

/* No fault or release op: the defaults core/ must cope with. */
static inline const struct shm_signal_ops *vt_ops_bare(void)
{
	static const struct shm_signal_ops ops = {
		.inject = vt_op_inject,
	};
	return &ops;
}

static inline void vt_side_notified(struct vt_side *v)
{
	v->notifies++;
	if (v->disable_in_notify)
		shm_signal_disable(&v->sig, 0);
	if (v->enable_in_notify)
		shm_signal_enable(&v->sig, 0);
	if (v->fault_in_notify)
		shm_signal_fault(&v->sig, "vt: notifier fault");
	if (v->redirty) {
		if (v->redirty > 0)
			v->redirty--;
		shm_signal_inject(&v->peer->sig, 0);
	}
}

static inline void vt_sig_notify(struct shm_signal_notifier *n)
{
	vt_side_notified(vt_container_of(n, struct vt_side, sig_notifier));
}

static inline void vt_ioq_notify(struct ioq_notifier *n)
{
	struct vt_side *v = vt_container_of(n, struct vt_side, ioq_notifier);

	if (v->watch)
		v->woken_at_notify = vt_waitq_woken(v->watch);
	vt_side_notified(v);
}

static inline void vt_side_init(struct vt_side *v,
				enum shm_signal_locality locale,
				const struct shm_signal_ops *ops,
				struct shm_signal_desc *desc,
				struct vt_side *peer)
{
	memset(v, 0, sizeof(*v));
	shm_signal_init(&v->sig, locale, ops, desc);
	vt_track_defer(&v->sig.deferred_notify);
	v->sig_notifier.signal = vt_sig_notify;
	v->sig.notifier = &v->sig_notifier;
	v->ioq_notifier.signal = vt_ioq_notify;
	v->peer = peer;
}

/* The irq record that side @locale receives on. */
static inline struct shm_signal_irq *vt_irq(struct shm_signal_desc *d,
					    enum shm_signal_locality locale)
{
	return &d->irq[locale];
}

/* ---- two signals over one descriptor ---- */

struct vt_pair {
	struct shm_signal_desc desc;
	struct vt_side north, south;
};

static inline struct vt_pair *vt_pair_new_ops(const struct shm_signal_ops *ops)
{
	struct vt_pair *p = vt_alloc(sizeof(*p));

	if (!p)
		return NULL;
	shm_signal_desc_init(&p->desc);
	vt_side_init(&p->north, shm_locality_north, ops, &p->desc, &p->south);
	vt_side_init(&p->south, shm_locality_south, ops, &p->desc, &p->north);
	return p;
}

static inline struct vt_pair *vt_pair_new(void)
{
	return vt_pair_new_ops(vt_ops());
}

/* ---- a ring, north and south ---- */

struct vt_end {
	struct ioq q;
	struct vt_side side;
	int ioq_releases;
};

struct vt_ring {
	struct ioq_ring_head *head;
	__u32 count;
	struct vt_end north, south;
};

static inline void vt_ioq_release(struct ioq *q)
{
	vt_container_of(q, struct vt_end, q)->ioq_releases++;
}

static inline const struct ioq_ops *vt_ioq_ops(void)
{
	static const struct ioq_ops ops = {
		.release = vt_ioq_release,
	};
	return &ops;
}

static inline int vt_end_init(struct vt_ring *r, struct vt_end *e,
			      enum ioq_locality locale, struct vt_end *peer)
{
	int err;

	vt_side_init(&e->side, (enum shm_signal_locality)locale, vt_ops(),
		     &r->head->signal, &peer->side);
	/* notifications must come through the ioq's own hook */
	e->side.sig.notifier = NULL;
	/* the ioq takes over the signal's first reference */
	err = ioq_init(&e->q, vt_ioq_ops(), locale, r->head, &e->side.sig,
		       r->count);
	if (err)
		return err;
	e->q.notifier = &e->side.ioq_notifier;
	return 0;
}

/*
 * NULL on any failure (allocation, format, init). A case file picks the
 * ring version vt_ring_new() lays out with VT_RING_VER (default 5: the
 * iterator cases of cases_ioq.c pin down v5's ownership bytes).
 */
#ifndef VT_RING_VER
#define VT_RING_VER IOQ_RING_VER_V5
#endif

static inline struct vt_ring *vt_ring_new_ver(__u32 count, __u32 ver)
{
	struct vt_ring *r = vt_alloc(sizeof(*r));

	if (!r)
		return NULL;
	r->count = count;
	r->head = vt_alloc(IOQ_HEAD_DESC_SIZE(count));
	if (!r->head || ioq_ring_format_ver(r->head, count, ver) ||
	    vt_end_init(r, &r->north, ioq_locality_north, &r->south) ||
	    vt_end_init(r, &r->south, ioq_locality_south, &r->north))
		return NULL;
	return r;
}

static inline struct vt_ring *vt_ring_new(__u32 count)
{
	return vt_ring_new_ver(count, VT_RING_VER);
}

static inline struct ioq_ring_idx *vt_idx(struct vt_ring *r,
					  enum ioq_idx_type type)
{
	return &r->head->idx[type];
}

/*
 * The usage protocol of core/ioq.c, one descriptor at a time.
 * vt_post:    north pushes @cookie on ioq_idx_push at the tail
 * vt_consume: south pops the head of valid (handing it back north)
 * vt_reap:    north pops the head of inuse with IOQ_ITER_REAP
 * Each returns what the push/pop returned.
 */
static inline int vt_post(struct vt_ring *r, __u64 cookie, int flags)
{
	struct ioq_iterator it;
	int err;

	err = ioq_iter_init(&r->north.q, &it, ioq_idx_push, flags);
	if (!err)
		err = ioq_iter_seek(&it, ioq_seek_tail, 0, 0);
	if (err)
		return err;
	/*
	 * Room on inuse means the tail slot is reaped and ours; otherwise it
	 * still holds a completion (or the peer's descriptor): leave it be.
	 */
	if (ioq_remain(&r->north.q, ioq_idx_reap) > 0)
		it.desc->cookie = cookie;
	return ioq_iter_push(&it, 0);
}

static inline int vt_consume(struct vt_ring *r, __u64 *cookie, int flags)
{
	struct ioq_iterator it;
	int err;

	err = ioq_iter_init(&r->south.q, &it, ioq_idx_consume, flags);
	if (!err)
		err = ioq_iter_seek(&it, ioq_seek_head, 0, 0);
	if (err)
		return err;
	if (ioq_iter_owned(&it))
		*cookie = it.desc->cookie;
	return ioq_iter_pop(&it, 0);
}

static inline int vt_reap(struct vt_ring *r, __u64 *cookie)
{
	struct ioq_iterator it;
	int err;

	err = ioq_iter_init(&r->north.q, &it, ioq_idx_reap,
			    IOQ_ITER_REAP);
	if (!err)
		err = ioq_iter_seek(&it, ioq_seek_head, 0, 0);
	if (err)
		return err;
	if (ioq_iter_owned(&it))
		*cookie = it.desc->cookie;
	return ioq_iter_pop(&it, 0);
}

#endif /* VT_DOUBLES_H */
