// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ioq-bench --poll baseline: DPDK's rte_ring, single producer / single
 * consumer, bulk enqueue/dequeue of @batch pointers, the same loop shape as
 * the IOQ one (spin while full/empty, never sleep); and the same ring with
 * 32-byte elements (rte_ring_elem.h), the size of an IOQ descriptor, so
 * that a reader can tell the ring's cost from the payload's: per batch of
 * 32 a pointer ring moves 4 cache lines of slots, IOQ and rte_ring-32B 16.
 * Built only when CMake found libdpdk (VBUS_BENCH_DPDK); otherwise the
 * columns are reported as skipped. No EAL: rte_ring_init() on our own
 * shared memory needs none.
 */
#include <stdint.h>
#include <sys/mman.h>

#include "ioq-bench.h"

#ifdef VBUS_BENCH_DPDK
#include <rte_ring.h>
#include <rte_ring_elem.h>

/* an IOQ descriptor's worth of bytes (struct ioq_ring_desc is 32) */
struct rte32 {
	__u64 cookie, ptr, len, flags;
};

int bench_rte_available(void)
{
	return 1;
}

static size_t rte_bytes(unsigned int count, unsigned int esize)
{
	/* RING_F_EXACT_SZ: capacity @count, storage for the next power of 2 */
	return (size_t)rte_ring_get_memsize_elem(esize, count * 2);
}

void *bench_rte_new(unsigned int count, unsigned int esize)
{
	size_t len = rte_bytes(count, esize);
	struct rte_ring *r = mmap(NULL, len, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (r == MAP_FAILED)
		return NULL;
	if (rte_ring_init(r, "ioq-bench", count, RING_F_SP_ENQ |
			  RING_F_SC_DEQ | RING_F_EXACT_SZ)) {
		munmap(r, len);
		return NULL;
	}
	return r;
}

void bench_rte_free(void *r, unsigned int count, unsigned int esize)
{
	if (r)
		munmap(r, rte_bytes(count, esize));
}

/* element @i of @objs (@esize bytes each): message number @v */
static inline void put_elem(void *objs, unsigned int esize, unsigned int i,
			    __u64 v)
{
	if (esize == sizeof(struct rte32)) {
		struct rte32 *e = (struct rte32 *)objs + i;

		e->cookie = v;
		e->ptr = 0;
		e->len = 64;
		e->flags = 0;
	} else {
		((__u64 *)objs)[i] = v;
	}
}

static inline __u64 get_elem(const void *objs, unsigned int esize,
			     unsigned int i)
{
	return esize == sizeof(struct rte32) ?
		       ((const struct rte32 *)objs)[i].cookie :
		       ((const __u64 *)objs)[i];
}

/*
 * One body for both sizes, always inlined with a constant @es: the
 * element tests above fold away and DPDK's copy is specialised for the
 * size, so with 8 this is rte_ring_sp_enqueue_bulk() exactly (that is
 * the _elem call with sizeof(void *)).
 */
static inline __attribute__((always_inline)) void
rte_north(struct bench_shared *sh, const unsigned int es)
{
	struct rte_ring *r = sh->rte;
	unsigned int b = sh->batch, i;
	unsigned long sent = 0, spins = 0;
	struct rte32 objs[64];

	bench_wait_ready(sh);
	sh->t0_ns = bench_now_ns();
	while (sent < sh->n) {
		for (i = 0; i < b; i++)
			put_elem(objs, es, i, sent + i + 1);
		if (rte_ring_sp_enqueue_bulk_elem(r, objs, es, b, NULL) == b) {
			sent += b;
			continue;
		}
		bench_relax();
		if (!(++spins & 0xfffff) && bench_peer_gone(sh))
			return;
	}
}

static inline __attribute__((always_inline)) void
rte_south(struct bench_shared *sh, const unsigned int es)
{
	struct rte_ring *r = sh->rte;
	unsigned int b = sh->batch, i;
	unsigned long got = 0, spins = 0;
	__u64 sum = 0;
	struct rte32 objs[64];

	bench_set_ready(sh);
	while (got < sh->n) {
		if (rte_ring_sc_dequeue_bulk_elem(r, objs, es, b, NULL) == b) {
			for (i = 0; i < b; i++)
				sum += get_elem(objs, es, i);
			got += b;
			continue;
		}
		bench_relax();
		if (!(++spins & 0xfffff) && bench_peer_gone(sh))
			return;
	}
	sh->t1_ns = bench_now_ns();
	sh->sum = sum;
}

void bench_rte_north(struct bench_side *side)
{
	if (side->sh->esize == sizeof(struct rte32))
		rte_north(side->sh, sizeof(struct rte32));
	else
		rte_north(side->sh, sizeof(void *));
}

void bench_rte_south(struct bench_side *side)
{
	if (side->sh->esize == sizeof(struct rte32))
		rte_south(side->sh, sizeof(struct rte32));
	else
		rte_south(side->sh, sizeof(void *));
}

#else /* !VBUS_BENCH_DPDK */

int bench_rte_available(void)
{
	return 0;
}

void *bench_rte_new(unsigned int count, unsigned int esize)
{
	(void)count;
	(void)esize;
	return NULL;
}

void bench_rte_free(void *r, unsigned int count, unsigned int esize)
{
	(void)r;
	(void)count;
	(void)esize;
}

void bench_rte_north(struct bench_side *side)
{
	bench_fail(side->sh, -ENOSYS);
}

void bench_rte_south(struct bench_side *side)
{
	bench_fail(side->sh, -ENOSYS);
}

#endif
