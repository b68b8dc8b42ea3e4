/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * IOQ internals shared by core/ioq.c (v6 and everything both versions
 * share: format, check, init, queries, the iterator and bulk entry points)
 * and core/ioq_v5.c (ring version 5 only). Not installed: nothing outside
 * core/ includes it.
 *
 * The version dispatch: every public call that behaves differently on a v5
 * ring asks ioq_v5() and calls the ioq_v5_*() function declared below. The
 * day nothing speaks v5 (the last v5-only south side is gone and the
 * bridge's eventq is formatted v6), delete core/ioq_v5.c, the
 * declarations below and the ioq_v5() branches in core/ioq.c, and drop
 * IOQ_RING_VER_V5 from ver_known(); docs/ring.md lists what else goes
 * (the [R4]/[A4] labels, "Layout v5").
 */
#ifndef VBUS_IOQ_IMPL_H
#define VBUS_IOQ_IMPL_H

#include <vbus/platform.h>
#include <vbus/ioq.h>

/* The ring is v5: fixed at ioq_init_ver(), which accepts only 5 and 6. */
static inline int ioq_v5(const struct ioq *ioq)
{
	return ioq->ver == IOQ_RING_VER_V5;
}

/* Fault the channel (sticky) and return -EIO for the caller to return. */
static inline int ioq_faulted(struct ioq *ioq, const char *msg)
{
	SHM_SIGNAL_FAULT(ioq->signal, msg);
	return -EIO;
}

/*
 * The one "faulted" check of the ring level, at every data-path entry
 * (virtio_ring's BAD_RING/broken): once a counter failed its check the
 * channel is dead for good, even where a cached counter would still let
 * a call through. The flag is this side's private memory.
 */
static inline int ioq_broken(const struct ioq *ioq)
{
	return shm_signal_faulted(ioq->signal);
}

static inline unsigned int ioq_min_u(unsigned int a, unsigned int b)
{
	return a < b ? a : b;
}

/*
 * Descriptors in flight between the head *@hp and the tail *@tp, or -EIO
 * (and the channel faulted) when the pair cannot be right. A reader that
 * writes neither counter (a query, a dump tool, a test observer) can catch
 * head and tail at different moments and see more than count in flight for
 * an instant: re-read a bounded number of times before calling it
 * corruption. Both loads are acquires; the caller says which label each
 * one is ([A1] the tail, [A2]/[A3] a head).
 */
static inline int ioq_load_pair(struct ioq *ioq, __u32 *hp, __u32 *tp,
				__u32 *headp, __u32 *tailp)
{
	int tries = 3;
	__u32 head, tail;

	do {
		head = VBUS_LOAD_ACQUIRE(*hp);
		tail = VBUS_LOAD_ACQUIRE(*tp);
		if (tail - head <= ioq->count)
			break;
	} while (--tries);

	if (!tries)
		return ioq_faulted(ioq, "ioq: index out of range");
	if (headp)
		*headp = head;
	if (tailp)
		*tailp = tail;
	return (int)(tail - head);
}

/*
 * v5 (core/ioq_v5.c). The callers in core/ioq.c have checked the type
 * (valid or inuse), the locality and the fault flag; these do the v5 part
 * only: read the shared counters on every call and hand each descriptor
 * over with sown as well ([R4]/[A4]).
 */
void ioq_v5_bind(struct ioq *ioq);
struct ioq_ring_idx *ioq_v5_idx(struct ioq *ioq, enum ioq_idx_type type);
int ioq_v5_count(struct ioq *ioq, enum ioq_idx_type type,
		 __u32 *headp, __u32 *tailp);

__u32 ioq_v5_iter_head(struct ioq_iterator *iter);
__u32 ioq_v5_iter_tail(struct ioq_iterator *iter);
int ioq_v5_iter_owned(struct ioq_iterator *iter);
int ioq_v5_iter_push(struct ioq_iterator *iter);
int ioq_v5_iter_pop(struct ioq_iterator *iter);

/* Bulk halves: begin claims up to @n; end publishes exactly @n, no signal. */
int ioq_v5_post_begin(struct ioq *ioq, unsigned int n, __u32 *pos);
int ioq_v5_post_end(struct ioq *ioq, unsigned int n);
int ioq_v5_take_begin(struct ioq *ioq, enum ioq_idx_type type,
		      unsigned int n, __u32 *pos);
int ioq_v5_take_end(struct ioq *ioq, enum ioq_idx_type type,
		    unsigned int n, int flip);

#endif /* VBUS_IOQ_IMPL_H */
