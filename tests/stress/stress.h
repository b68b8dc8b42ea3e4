/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Ring stress test: a north producer posts N descriptors, a south consumer
 * checks that each arrives exactly once, in order and intact, and pops it;
 * the producer reaps the completions. Both sides sleep on shm-signal
 * notifications (eventfds), so a lost wakeup shows up as a stall that the
 * test detects and reports, not as a hang.
 */
#ifndef VBUS_STRESS_H
#define VBUS_STRESS_H

#include <vbus/ioq_channel.h>

/*
 * One payload buffer per ring slot, in a region both sides map. The slot a
 * descriptor uses is its ring position, so the producer may rewrite it only
 * after reaping that descriptor: a consumer that reads a reused buffer sees
 * the wrong sequence number.
 */
#define STRESS_SLOT_DATA 56
struct stress_slot {
	__u64 seq;
	unsigned char data[STRESS_SLOT_DATA];
};

/* What a side reports (in the shared region, so a child process can too). */
struct stress_result {
	unsigned long msgs;		/* consumed (south) or reaped (north) */
	unsigned long errors;		/* checker failures */
	unsigned long lost_wakeups;	/* slept through pending work */
	unsigned long waits;		/* ioq_channel_wait calls */
	unsigned long notifier_runs;
	struct ioq_channel_stats st;
	int setup_error;		/* -errno if the side could not start */
	char first_error[160];
};

/* Corruptions of the consumer's view, to prove the checker can fail. */
enum stress_inject {
	STRESS_INJ_NONE,
	STRESS_INJ_DROP,	/* consumer "loses" one message */
	STRESS_INJ_DUP,		/* consumer sees one message twice */
	STRESS_INJ_CSUM,	/* one payload bit flips on the way */
	STRESS_INJ_STALE,	/* consumer reads a slot the producer reused */
	STRESS_INJ_NOWAKE,	/* consumer "forgets" to unmask once */
};

struct stress_cfg {
	unsigned long n;		/* messages */
	__u32 ring;			/* descriptors in the ring */
	unsigned int batch;		/* posts per signal */
	int timeout_ms;			/* wait slice (side.c: when one is lost) */
	enum stress_inject inject;
	unsigned long inject_at;	/* sequence number to corrupt */
	__u32 ring_ver;			/* ring version: 5 or 6 */
	/*
	 * 0: the role calls the devices use (post/consume/reap begin+end,
	 * one signal per batch); 1: libioq 1's compatibility iterator
	 */
	int iter;
	int lookagain;			/* north: a look-again thread (north.c) */
};

/* Shared by both sides: MAP_SHARED anonymous memory, inherited by fork. */
struct stress_shared {
	struct stress_result north, south;
	int abort;			/* a side gave up: the other stops waiting */
	struct stress_slot slots[];	/* cfg.ring of them */
};

/* payload.c */
void stress_payload_fill(struct stress_slot *slot, __u64 seq, __u32 *len,
			 __u32 *csum);
__u32 stress_csum(__u64 seq, const unsigned char *data, __u32 len);

/* north.c / south.c: run one side to completion, filling @res. */
int stress_north(const struct stress_cfg *cfg, struct ioq_channel *ch,
		 struct stress_shared *sh, int (*peer_alive)(void));
int stress_south(const struct stress_cfg *cfg, struct ioq_channel *ch,
		 struct stress_shared *sh, int (*peer_alive)(void));

/*
 * side.c: sleep on the channel until the peer signals. @work says whether
 * this side has something to do; full timeouts in a row with work pending
 * for STRESS_LOST_MS are a lost wakeup (counted as an error). Returns 0,
 * or -ECANCELED when the peer gave up or died.
 */
int stress_wait(const struct stress_cfg *cfg, struct ioq_channel *ch,
		struct stress_shared *sh, struct stress_result *res,
		int (*work)(void *), void *arg, int (*peer_alive)(void));
void stress_abort(struct stress_shared *sh);
void stress_count_notifier(struct ioq_channel *ch, void *arg);

/* Record a checker failure; keeps the first message. */
void stress_fail(struct stress_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* hg.c: tell valgrind's race detectors about the ring (see there). */
void stress_hg_ignore_ring(struct ioq *q);

#endif /* VBUS_STRESS_H */
