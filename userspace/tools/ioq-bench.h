/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* ioq-bench: the parts shared by the harness, the loops and main. */
#ifndef VBUS_IOQ_BENCH_H
#define VBUS_IOQ_BENCH_H

#include <sys/types.h>
#include <vbus/ioq_channel.h>

#define BENCH_RING 256u

/*
 * One run's configuration and results. It lives in MAP_SHARED memory so
 * that a child process (the south side in process mode) reports through
 * it like a thread does.
 */
struct bench_shared {
	/* in */
	unsigned long n;		/* messages, or round trips */
	unsigned long warmup;		/* round trips not measured */
	unsigned int batch;		/* posts per signal */
	int efd[2];			/* raw eventfd pair: ping, pong */
	__u64 spin_ns;			/* poll this long before sleeping */
	__u32 ring;			/* descriptors; 0: BENCH_RING */
	__u32 ver;			/* ring version; 0: IOQ_RING_VER */
	void *rte;			/* --poll: the rte_ring, shared */
	unsigned int esize;		/* --poll: its element, 8 or 32 bytes */
	/* handshake: south is attached and about to wait */
	int ready;
	pid_t peer_pid;			/* the south process, 0 for a thread */
	/* out */
	int error;			/* -errno from either side */
	double seconds;
	struct ioq_channel_stats st[2];	/* north, south */
	__u64 min_ns, median_ns, p99_ns;
	__u64 t0_ns, t1_ns;		/* --poll: first post, last consume */
	__u64 sum;			/* --poll: what the consumer read */
};

/* This side's end of the channel, and the shared block. */
struct bench_side {
	struct ioq_channel *ch;
	struct bench_shared *sh;
};

typedef void (*bench_fn)(struct bench_side *side);

/*
 * ioq-bench-run.c: run @north and @south on two threads or two processes,
 * each pinned to its own CPU when there are two, around a fresh channel of
 * BENCH_RING descriptors. Returns 0 or -errno.
 */
int bench_pair(int process, bench_fn north, bench_fn south,
	       struct bench_shared *sh);
void bench_set_ready(struct bench_shared *sh);
void bench_wait_ready(struct bench_shared *sh);
void bench_fail(struct bench_shared *sh, int err);
int bench_peer_gone(struct bench_shared *sh);
static inline int bench_failed(struct bench_shared *sh)
{
	return __atomic_load_n(&sh->error, __ATOMIC_ACQUIRE) != 0;
}
double bench_now(void);
__u64 bench_now_ns(void);
/* CPUs the harness pins to, or -1 (fewer than two usable) */
void bench_cpus(int *north, int *south, int *online, int *usable);

/* ioq-bench-ring.c: the loops */
void bench_tput_north(struct bench_side *side);
void bench_tput_south(struct bench_side *side);
void bench_ping_north(struct bench_side *side);
void bench_ping_south(struct bench_side *side);
void bench_raw_north(struct bench_side *side);
void bench_raw_south(struct bench_side *side);

/* ioq-bench-poll.c: --poll, the ring with no sleeping (main's entry) */
int bench_poll_main(int json, int quick, unsigned long n, unsigned int reps);

/*
 * ioq-bench-rte.c: DPDK's rte_ring SP/SC bulk as the baseline, when the
 * build found libdpdk. bench_rte_new() lays one out in MAP_SHARED memory
 * (a forked south sees it at the same address); NULL without DPDK.
 */
int bench_rte_available(void);
/* @esize: bytes per element, a multiple of 4 (8: pointers) */
void *bench_rte_new(unsigned int count, unsigned int esize);
void bench_rte_free(void *r, unsigned int count, unsigned int esize);
/* the two sides, elements of sh->esize bytes (8: pointers; 32: an IOQ
 * descriptor's size) */
void bench_rte_north(struct bench_side *side);
void bench_rte_south(struct bench_side *side);

/* spin-wait hint */
static inline void bench_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

#endif /* VBUS_IOQ_BENCH_H */
