// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ioq-bench --poll baseline: DPDK's rte_ring, single producer / single
 * consumer, bulk enqueue/dequeue of @batch pointers, the same loop shape as
 * the IOQ one (spin while full/empty, never sleep). Built only when CMake
 * found libdpdk (VBUS_BENCH_DPDK); otherwise the column is reported as
 * skipped. No EAL: rte_ring_init() on our own shared memory needs none.
 */
#include <stdint.h>
#include <sys/mman.h>

#include "ioq-bench.h"

#ifdef VBUS_BENCH_DPDK
#include <rte_ring.h>

int bench_rte_available(void)
{
	return 1;
}

static size_t rte_bytes(unsigned int count)
{
	/* RING_F_EXACT_SZ: capacity @count, storage for the next power of 2 */
	return (size_t)rte_ring_get_memsize(count * 2);
}

void *bench_rte_new(unsigned int count)
{
	size_t len = rte_bytes(count);
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

void bench_rte_free(void *r, unsigned int count)
{
	if (r)
		munmap(r, rte_bytes(count));
}

void bench_rte_north(struct bench_side *side)
{
	struct bench_shared *sh = side->sh;
	struct rte_ring *r = sh->rte;
	unsigned int b = sh->batch, i;
	unsigned long sent = 0, spins = 0;
	void *objs[64];

	bench_wait_ready(sh);
	sh->t0_ns = bench_now_ns();
	while (sent < sh->n) {
		for (i = 0; i < b; i++)
			objs[i] = (void *)(uintptr_t)(sent + i + 1);
		if (rte_ring_sp_enqueue_bulk(r, objs, b, NULL) == b) {
			sent += b;
			continue;
		}
		bench_relax();
		if (!(++spins & 0xfffff) && bench_peer_gone(sh))
			return;
	}
}

void bench_rte_south(struct bench_side *side)
{
	struct bench_shared *sh = side->sh;
	struct rte_ring *r = sh->rte;
	unsigned int b = sh->batch, i;
	unsigned long got = 0, spins = 0;
	__u64 sum = 0;
	void *objs[64];

	bench_set_ready(sh);
	while (got < sh->n) {
		if (rte_ring_sc_dequeue_bulk(r, objs, b, NULL) == b) {
			for (i = 0; i < b; i++)
				sum += (uintptr_t)objs[i];
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

#else /* !VBUS_BENCH_DPDK */

int bench_rte_available(void)
{
	return 0;
}

void *bench_rte_new(unsigned int count)
{
	(void)count;
	return NULL;
}

void bench_rte_free(void *r, unsigned int count)
{
	(void)r;
	(void)count;
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
