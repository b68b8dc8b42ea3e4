// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * venet's queue pairs (docs/devices/venet.md, "Queue pairs"), the host
 * side: the "venet" device with queues=N inside libvbus-hostd, driven by
 * the fake guest of fg_dev.c through QUEUES, SETACTIVE and a ring pair
 * per granted pair, against a real multi-queue tap in a network
 * namespace of its own (as venet_tap_test.c; the wire helpers are
 * venet_wire.c). One behaviour per check:
 *
 *   negotiation     what QUEUES grants, what it refuses (-EINVAL,
 *                   -EBUSY), DEVSHM beyond the grant, SETACTIVE's range
 *                   and a SETACTIVE loop (the tap's queues change at most
 *                   every 50 ms),
 *                   an old guest (no QUEUES) getting one pair; none of
 *                   it faults the device or loses a frame
 *   data            pair 1's tx reaching the tap and the null backend,
 *                   the tap's flow steering delivering a flow on the
 *                   pair that sent it, SETACTIVE 1 moving it to pair 0,
 *                   an inactive pair's tx still sent, FLUSHRX on every
 *                   pair, the per-pair counters of `ctl stats`
 *   the tap         queues=2 on a single-queue tap refused with the
 *                   reason, queues=1 on a multi-queue tap served, a
 *                   persistent one opened again with every queue after
 *                   its daemon went (a restart)
 *
 * Exit 77 (skipped) only when /dev/net/tun is absent.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <cmocka.h>

#include <vbus/venet.h>
#include "fg_dev.h"
#include "venet_wire.h"

/* for what must happen; a loaded CI machine stalls us for seconds */
#define TIMEOUT_MS 10000
#define PAIRS 2
#define RXLEN 1518

static const __u8 guest_mac[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x66 };

struct mfx {
	struct hostd_dev *dev;
	unsigned int pairs;		/* granted */
	struct fg_ring rx[PAIRS], tx[PAIRS];
	char tap[IFNAMSIZ];
	__u8 tapmac[6];
	int ps;				/* AF_PACKET on the tap */
};

static unsigned int tapno;

/* A device "tap=vmN,queues=2,..." (DEVOPEN, NEGCAP 0), not yet up. */
static void mfx_create(struct mfx *f, const char *extra)
{
	struct venet_capabilities caps = { VENET_CAP_GROUP_SG, 0 };
	char params[256];
	int err;

	memset(f, 0, sizeof(*f));
	f->ps = -1;
	snprintf(f->tap, sizeof(f->tap), "vm%u", tapno++);
	snprintf(params, sizeof(params),
		 "tap=%s,mac=02:11:22:33:44:66,queues=%d%s%s", f->tap, PAIRS,
		 extra ? "," : "", extra ? extra : "");
	f->dev = fgd_dev_create(VENET_TYPE, params, &err);
	assert_non_null(f->dev);
	assert_int_equal(fgd_dev_open(f->dev, VENET_VERSION), 0);
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_NEGCAP, &caps,
				  sizeof(caps)), 0);
}

/* QUEUES(@want): the call's result; *@granted what it answered. */
static int queues(struct mfx *f, __u32 want, __u32 reserved, __u32 *granted)
{
	struct venet_queues q = { .pairs = want, .reserved = reserved };
	int ret = fgd_call(f->dev, VENET_FUNC_QUEUES, &q, sizeof(q));

	if (granted)
		*granted = q.pairs;
	return ret;
}

static int setactive(struct mfx *f, __u32 pairs, __u32 reserved)
{
	struct venet_queues q = { .pairs = pairs, .reserved = reserved };

	return fgd_call(f->dev, VENET_FUNC_SETACTIVE, &q, sizeof(q));
}

/* The rings of pairs [0, @pairs), 8 rx buffers each, LINKUP, tap up. */
static void mfx_rings(struct mfx *f, unsigned int pairs)
{
	unsigned int p, i;

	f->pairs = pairs;
	for (p = 0; p < pairs; p++) {
		assert_int_equal(fgd_ring_attach(f->dev, VENET_QUEUE_RX_ID(p),
						 64, &f->rx[p]), 0);
		assert_int_equal(fgd_ring_attach(f->dev, VENET_QUEUE_TX_ID(p),
						 64, &f->tx[p]), 0);
		for (i = 0; i < 8; i++) {
			__u64 gpa = fgd_alloc(RXLEN, 64);

			assert_int_equal(fgd_post(&f->rx[p], gpa, RXLEN, gpa),
					 0);
		}
	}
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_LINKUP, NULL, 0), 0);
	if (f->ps >= 0)
		return;
	assert_int_equal(sh("ip link set %s up", f->tap), 0);
	if_mac(f->tap, f->tapmac);
	f->ps = pkt_sock(f->tap, 1);
}

struct tapq_goal {
	struct mfx *f;
	unsigned int n;
};

static bool tapq_reached(void *arg)
{
	struct tapq_goal *g = arg;

	return fgd_stat(g->f->dev, "tap_queues_attached") == g->n;
}

/*
 * Run the host until the tap has @n queues attached: the tap follows
 * QUEUES and SETACTIVE at most every VENET_QSYNC_GAP_NS (50 ms).
 */
static void wait_tap_queues(struct mfx *f, unsigned int n)
{
	struct tapq_goal g = { f, n };

	assert_true(fgd_run_until(tapq_reached, &g, TIMEOUT_MS));
}

/* The device with @pairs granted (QUEUES @pairs) and their rings. */
static void mfx_up(struct mfx *f, unsigned int pairs)
{
	__u32 granted;

	mfx_create(f, NULL);
	assert_int_equal(queues(f, pairs, 0, &granted), 0);
	assert_int_equal(granted, pairs);
	mfx_rings(f, pairs);
	wait_tap_queues(f, pairs);
}

static int setup(void **state)
{
	struct mfx *f = calloc(1, sizeof(*f));

	if (!f || fgd_init())
		return -1;
	f->ps = -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct mfx *f = *state;

	if (f->ps >= 0)
		close(f->ps);
	if (f->dev)
		fgd_dev_destroy(f->dev);
	free(f);
	fgd_fini();
	return 0;
}

/* ---- frames of one UDP flow ------------------------------------------------ */

/*
 * An IPv4/UDP frame 10.9.0.2:@port -> 10.9.0.1:7 (@reply: the other way,
 * the same flow for the tap's symmetric hash) of @len bytes, carrying
 * @seq like the test frames. Checksums are not needed: the flow
 * dissector does not look at them.
 */
static void mk_flow(__u8 *b, size_t len, const __u8 dst[6], const __u8 src[6],
		    __u16 port, bool reply, __u32 seq)
{
	const __u8 ga[4] = { 10, 9, 0, 2 }, ha[4] = { 10, 9, 0, 1 };
	__u16 gp = port, hp = 7;

	if (reply)
		mk_ipv4_udp(b, len, dst, src, ha, ga, hp, gp);
	else
		mk_ipv4_udp(b, len, dst, src, ga, ha, gp, hp);
	memcpy(b + 42, &seq, 4);
}

static __u32 flow_seq(const __u8 *b)
{
	__u32 seq;

	memcpy(&seq, b + 42, 4);
	return seq;
}

/* guest: pair @p sends flow @port's frame @seq (100 bytes) */
static void tx_flow(struct mfx *f, unsigned int p, __u16 port, __u32 seq)
{
	__u64 gpa = fgd_alloc(100, 64);

	mk_flow(fgd_ram(gpa), 100, f->tapmac, guest_mac, port, false, seq);
	assert_int_equal(fgd_post(&f->tx[p], gpa, 100, seq), 0);
}

/* host: frame @seq of flow @port to the guest */
static void host_flow(struct mfx *f, __u16 port, __u32 seq)
{
	__u8 b[100];

	mk_flow(b, sizeof(b), guest_mac, f->tapmac, port, true, seq);
	pkt_send(f->ps, b, sizeof(b));
}

/* host: wait for frame @seq of the guest's on the tap */
static void host_sees(struct mfx *f, __u32 seq)
{
	__u8 buf[2048];
	ssize_t n;

	for (;;) {
		n = pkt_recv(f->ps, 1, NULL, buf, sizeof(buf), TIMEOUT_MS);
		assert_true(n > 0);
		if (n == 100 && buf[23] == 17 && flow_seq(buf) == seq)
			return;
	}
}

struct reaped {
	struct mfx *f;
	unsigned int want;		/* completions in all */
	unsigned int n[PAIRS];		/* per pair */
	__u32 seq[PAIRS][16];
	unsigned int tx_pair;		/* reap tx of this pair ... */
	bool tx;			/* ... instead of rx */
};

static bool reap_more(void *arg)
{
	struct reaped *r = arg;
	struct mfx *f = r->f;
	unsigned int p;
	__u64 len, cookie;

	for (p = 0; p < f->pairs; p++) {
		struct fg_ring *ring = r->tx ? &f->tx[p] : &f->rx[p];

		if (r->tx && p != r->tx_pair)
			continue;
		while (fgd_reap(ring, &len, &cookie) == 1) {
			if (!r->tx) {
				assert_int_equal(len, 100);
				r->seq[p][r->n[p] % 16] =
					flow_seq(fgd_ram(cookie));
			}
			r->n[p]++;
		}
	}
	return r->n[0] + r->n[1] >= r->want;
}

/* run the host until @want rx completions arrived, over all pairs */
static void run_rx(struct mfx *f, struct reaped *r, unsigned int want)
{
	memset(r, 0, sizeof(*r));
	r->f = f;
	r->want = want;
	assert_true(fgd_run_until(reap_more, r, TIMEOUT_MS));
}

/* run the host until pair @p's tx ring handed @want back */
static void run_tx(struct mfx *f, unsigned int p, unsigned int want)
{
	struct reaped r = { .f = f, .want = want, .tx = true, .tx_pair = p };

	assert_true(fgd_run_until(reap_more, &r, TIMEOUT_MS));
}

static unsigned long long stat_q(struct mfx *f, unsigned int p,
				 const char *name)
{
	char key[48];

	snprintf(key, sizeof(key), "q%u_%s", p, name);
	return fgd_stat(f->dev, key);
}

/* ---- negotiation -------------------------------------------------------- */

/* QUEUES grants what was asked, up to queues=. */
static void queues_grants_up_to_param(void **state)
{
	struct mfx *f = *state;
	__u32 granted;

	mfx_create(f, NULL);
	assert_int_equal(queues(f, VENET_MAX_QUEUE_PAIRS, 0, &granted), 0);
	assert_int_equal(granted, PAIRS);
	/* asked again before any ring: the new answer holds */
	assert_int_equal(queues(f, 1, 0, &granted), 0);
	assert_int_equal(granted, 1);
	assert_int_equal(fgd_stat(f->dev, "queues_granted"), 1);
}

/* 0, more than VENET_MAX_QUEUE_PAIRS, reserved != 0, a wrong length. */
static void queues_refuses_bad_requests(void **state)
{
	struct mfx *f = *state;
	struct venet_queues q = { .pairs = 2 };
	__u32 granted;

	mfx_create(f, NULL);
	assert_int_equal(queues(f, 0, 0, NULL), -EINVAL);
	assert_int_equal(queues(f, VENET_MAX_QUEUE_PAIRS + 1, 0, NULL),
			 -EINVAL);
	assert_int_equal(queues(f, 2, 1, NULL), -EINVAL);
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_QUEUES, &q, 4), -EINVAL);
	/* nothing of it stuck, nothing faulted: a good request works */
	assert_false(fgd_dev_faulted(f->dev));
	assert_int_equal(fgd_stat(f->dev, "queues_granted"), 1);
	assert_int_equal(queues(f, 2, 0, &granted), 0);
	assert_int_equal(granted, 2);
}

/* Once a ring is registered QUEUES is -EBUSY and the grant stands. */
static void queues_busy_after_ring(void **state)
{
	struct mfx *f = *state;

	mfx_up(f, 2);
	assert_int_equal(queues(f, 1, 0, NULL), -EBUSY);
	assert_int_equal(fgd_stat(f->dev, "queues_granted"), 2);
	assert_false(fgd_dev_faulted(f->dev));
	/* and pair 1 still carries: nothing lost */
	tx_flow(f, 1, 1000, 1);
	run_tx(f, 1, 1);
	host_sees(f, 1);
}

/* A guest that never calls QUEUES: one pair, ids 2 and 3 refused. */
static void old_guest_gets_one_pair(void **state)
{
	struct mfx *f = *state;
	struct fg_ring r;

	mfx_create(f, NULL);
	assert_int_equal(fgd_ring_attach(f->dev, VENET_QUEUE_RX_ID(1), 64, &r),
			 -EINVAL);
	assert_int_equal(fgd_ring_attach(f->dev, VENET_QUEUE_TX_ID(1), 64, &r),
			 -EINVAL);
	assert_false(fgd_dev_faulted(f->dev));
	assert_int_equal(fgd_stat(f->dev, "queues_granted"), 1);
	assert_int_equal(fgd_stat(f->dev, "queues_active"), 1);
}

/* An old guest's single pair gets every flow of the multi-queue tap. */
static void old_guest_gets_every_flow(void **state)
{
	struct mfx *f = *state;
	struct reaped r;
	unsigned int i;

	mfx_create(f, NULL);
	mfx_rings(f, 1);
	for (i = 0; i < 8; i++)
		host_flow(f, (__u16)(2000 + i * 17), i);
	run_rx(f, &r, 8);
	assert_int_equal(r.n[0], 8);
	assert_int_equal(fgd_stat(f->dev, "rx_packets"), 8);
}

/* DEVSHM of a pair beyond the grant: -EINVAL, nothing faulted. */
static void devshm_beyond_grant(void **state)
{
	struct mfx *f = *state;
	struct fg_ring r;

	mfx_up(f, 2);
	assert_int_equal(fgd_ring_attach(f->dev, VENET_QUEUE_RX_ID(2), 64, &r),
			 -EINVAL);
	assert_int_equal(fgd_ring_attach(f->dev, VENET_QUEUE_TX_ID(15), 64, &r),
			 -EINVAL);
	assert_false(fgd_dev_faulted(f->dev));
}

/* SETACTIVE: 0, more than granted, reserved != 0 are -EINVAL. */
static void setactive_range(void **state)
{
	struct mfx *f = *state;

	mfx_up(f, 2);
	assert_int_equal(setactive(f, 0, 0), -EINVAL);
	assert_int_equal(setactive(f, 3, 0), -EINVAL);
	assert_int_equal(setactive(f, 1, 7), -EINVAL);
	assert_int_equal(fgd_stat(f->dev, "queues_active"), 2);
	assert_int_equal(setactive(f, 1, 0), 0);
	assert_int_equal(fgd_stat(f->dev, "queues_active"), 1);
	assert_false(fgd_dev_faulted(f->dev));
}

/*
 * SETACTIVE in a loop: answered every time, the tap's queues change at
 * most every 50 ms (each change takes the host's rtnl lock), and end as
 * the last call said.
 */
static void setactive_loop_bounded(void **state)
{
	struct mfx *f = *state;
	unsigned long long syncs;
	unsigned int i;

	mfx_up(f, 2);
	syncs = fgd_stat(f->dev, "tap_queue_syncs");
	for (i = 0; i < 200; i++)
		assert_int_equal(setactive(f, 1 + (i & 1), 0), 0);
	assert_int_equal(setactive(f, 1, 0), 0);
	wait_tap_queues(f, 1);
	fprintf(stderr, "[test] 201 SETACTIVEs: %llu tap queue syncs\n",
		fgd_stat(f->dev, "tap_queue_syncs") - syncs);
	assert_true(fgd_stat(f->dev, "tap_queue_syncs") - syncs <= 3);
	assert_int_equal(fgd_stat(f->dev, "queues_active"), 1);
	assert_false(fgd_dev_faulted(f->dev));
}

/* After DEVCLOSE the next guest starts with one pair again. */
static void reopen_is_one_pair(void **state)
{
	struct mfx *f = *state;
	struct fg_ring r;

	mfx_up(f, 2);
	fgd_dev_close(f->dev);
	assert_int_equal(fgd_dev_open(f->dev, VENET_VERSION), 0);
	assert_int_equal(fgd_stat(f->dev, "queues_granted"), 1);
	assert_int_equal(fgd_ring_attach(f->dev, VENET_QUEUE_RX_ID(1), 64, &r),
			 -EINVAL);
}

/* ---- data ------------------------------------------------------------------ */

/* A frame posted on pair 1's tx ring reaches the tap. */
static void tx_pair1_reaches_tap(void **state)
{
	struct mfx *f = *state;

	mfx_up(f, 2);
	tx_flow(f, 1, 1001, 5);
	run_tx(f, 1, 1);
	host_sees(f, 5);
	assert_int_equal(stat_q(f, 1, "tx_packets"), 1);
	assert_int_equal(stat_q(f, 0, "tx_packets"), 0);
}

/* backend=null: pair 1's frames are taken and counted as sent. */
static void tx_pair1_null_backend(void **state)
{
	struct mfx *f = *state;
	struct venet_queues q = { .pairs = 2 };
	struct hostd_dev *d;
	__u64 gpa;
	int err;

	(void)f;
	d = fgd_dev_create(VENET_TYPE, "backend=null,queues=2", &err);
	assert_non_null(d);
	f->dev = d;
	assert_int_equal(fgd_dev_open(d, VENET_VERSION), 0);
	assert_int_equal(fgd_call(d, VENET_FUNC_QUEUES, &q, sizeof(q)), 0);
	assert_int_equal(q.pairs, 2);
	f->pairs = 2;
	assert_int_equal(fgd_ring_attach(d, VENET_QUEUE_TX_ID(1), 16,
					 &f->tx[1]), 0);
	assert_int_equal(fgd_call(d, VENET_FUNC_LINKUP, NULL, 0), 0);
	gpa = fgd_alloc(100, 64);
	memset(fgd_ram(gpa), 0x5a, 100);
	assert_int_equal(fgd_post(&f->tx[1], gpa, 100, 1), 0);
	run_tx(f, 1, 1);
	assert_int_equal(stat_q(f, 1, "tx_packets"), 1);
	assert_int_equal(stat_q(f, 1, "tx_bytes"), 100);
	assert_int_equal(fgd_stat(d, "tx_packets"), 1);
}

/*
 * The tap steers a flow to the queue that last sent it (its symmetric
 * flow hash): a reply to what pair P sent arrives on pair P's rx ring.
 */
static void rx_follows_tap_queue(void **state)
{
	struct mfx *f = *state;
	struct reaped r;

	mfx_up(f, 2);
	tx_flow(f, 1, 3001, 1);
	run_tx(f, 1, 1);
	host_sees(f, 1);
	tx_flow(f, 0, 3002, 2);
	run_tx(f, 0, 1);
	host_sees(f, 2);
	host_flow(f, 3001, 11);
	host_flow(f, 3002, 12);
	run_rx(f, &r, 2);
	assert_int_equal(r.n[1], 1);
	assert_int_equal(r.seq[1][0], 11);
	assert_int_equal(r.n[0], 1);
	assert_int_equal(r.seq[0][0], 12);
}

/* SETACTIVE 1: pair 1 gets no more frames, its flow goes to pair 0. */
static void setactive_stops_pair1(void **state)
{
	struct mfx *f = *state;
	struct reaped r;

	mfx_up(f, 2);
	tx_flow(f, 1, 3003, 1);
	run_tx(f, 1, 1);
	host_sees(f, 1);
	assert_int_equal(setactive(f, 1, 0), 0);
	wait_tap_queues(f, 1);
	host_flow(f, 3003, 21);
	run_rx(f, &r, 1);
	assert_int_equal(r.n[0], 1);
	assert_int_equal(r.seq[0][0], 21);
	/* and nothing came to pair 1 meanwhile */
	fgd_run_for(20);
	assert_int_equal(fgd_reap(&f->rx[1], NULL, NULL), 0);
	assert_int_equal(stat_q(f, 1, "rx_packets"), 0);
}

/* An inactive pair's tx ring is still drained (its detached queue writes). */
static void inactive_pair_tx_sent(void **state)
{
	struct mfx *f = *state;

	mfx_up(f, 2);
	assert_int_equal(setactive(f, 1, 0), 0);
	wait_tap_queues(f, 1);
	tx_flow(f, 1, 3004, 7);
	run_tx(f, 1, 1);
	host_sees(f, 7);
	assert_int_equal(stat_q(f, 1, "tx_packets"), 1);
	assert_int_equal(stat_q(f, 1, "tx_dropped"), 0);
}

/* qP_ counters are per pair; the totals are their sums. */
static void per_pair_counters(void **state)
{
	struct mfx *f = *state;
	struct reaped r;

	mfx_up(f, 2);
	tx_flow(f, 1, 3005, 1);
	tx_flow(f, 1, 3005, 2);
	/* a tx descriptor outside guest RAM: dropped on pair 1 */
	assert_int_equal(fgd_post(&f->tx[1], (__u64)FGD_RAM_SIZE << 4, 100, 3),
			 0);
	run_tx(f, 1, 3);
	host_sees(f, 2);
	tx_flow(f, 0, 3006, 4);
	run_tx(f, 0, 1);
	host_sees(f, 4);
	host_flow(f, 3005, 31);
	run_rx(f, &r, 1);
	assert_int_equal(r.n[1], 1);
	assert_int_equal(stat_q(f, 1, "tx_packets"), 2);
	assert_int_equal(stat_q(f, 1, "tx_bytes"), 200);
	assert_int_equal(stat_q(f, 1, "tx_dropped"), 1);
	assert_int_equal(stat_q(f, 0, "tx_packets"), 1);
	assert_int_equal(stat_q(f, 0, "tx_dropped"), 0);
	assert_int_equal(stat_q(f, 1, "rx_packets"), 1);
	assert_int_equal(stat_q(f, 1, "rx_bytes"), 100);
	assert_int_equal(stat_q(f, 0, "rx_packets"), 0);
	assert_int_equal(fgd_stat(f->dev, "tx_packets"), 3);
	assert_int_equal(fgd_stat(f->dev, "rx_packets"), 1);
	assert_int_equal(fgd_stat(f->dev, "tx_bad"), 1);
}

/* FLUSHRX hands back every pair's buffers, empty. */
static void flushrx_every_pair(void **state)
{
	struct mfx *f = *state;
	unsigned int p, i;
	__u64 len;

	mfx_up(f, 2);
	fgd_run_for(10);
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_FLUSHRX, NULL, 0), 0);
	/* all back by the time the call returns, on both rings */
	for (p = 0; p < 2; p++) {
		for (i = 0; i < 8; i++) {
			assert_int_equal(fgd_reap(&f->rx[p], &len, NULL), 1);
			assert_int_equal(len, 0);
		}
		assert_int_equal(fgd_reap(&f->rx[p], NULL, NULL), 0);
	}
	assert_int_equal(fgd_stat(f->dev, "rx_flushed"), 16);
}

/* pair 1 handed a buffer back (empty) */
static bool rx1_back(void *arg)
{
	struct mfx *f = arg;
	__u64 len = 1;

	return fgd_reap(&f->rx[1], &len, NULL) == 1 && len == 0;
}

/* An rx buffer pair 1 cannot use goes back empty, counted as its drop. */
static void rx_drop_counted_per_pair(void **state)
{
	struct mfx *f = *state;
	unsigned int p;

	mfx_create(f, NULL);
	assert_int_equal(queues(f, 2, 0, NULL), 0);
	f->pairs = 2;
	for (p = 0; p < 2; p++) {
		assert_int_equal(fgd_ring_attach(f->dev, VENET_QUEUE_RX_ID(p),
						 64, &f->rx[p]), 0);
		assert_int_equal(fgd_ring_attach(f->dev, VENET_QUEUE_TX_ID(p),
						 64, &f->tx[p]), 0);
	}
	/* pair 1's only buffer is outside guest RAM: the next rx pass */
	assert_int_equal(fgd_post(&f->rx[1], FGD_RAM_SIZE - 100, RXLEN, 1), 0);
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_LINKUP, NULL, 0), 0);
	assert_true(fgd_run_until(rx1_back, f, TIMEOUT_MS));
	assert_int_equal(stat_q(f, 1, "rx_dropped"), 1);
	assert_int_equal(stat_q(f, 0, "rx_dropped"), 0);
	assert_int_equal(fgd_stat(f->dev, "rx_bad"), 1);
	assert_false(fgd_dev_faulted(f->dev));
}

/* ---- the tap ---------------------------------------------------------------- */

/* queues=2 on a tap made single-queue: no backend, and why. */
static void single_queue_tap_refused(void **state)
{
	struct mfx *f = *state;
	const char *why;
	int err;

	assert_int_equal(sh("ip tuntap add dev vsq0 mode tap vnet_hdr"), 0);
	f->dev = fgd_dev_create(VENET_TYPE, "tap=vsq0,queues=2", &err);
	assert_non_null(f->dev);
	assert_string_equal(fgd_stat_str(f->dev, "backend"), "none");
	why = fgd_stat_str(f->dev, "backend_error");
	fprintf(stderr, "[test] backend_error: %s\n", why);
	assert_non_null(strstr(why, "not a multi-queue tap"));
	assert_non_null(strstr(why, "multi_queue"));
	fgd_dev_destroy(f->dev);
	f->dev = NULL;
	sh("ip tuntap del dev vsq0 mode tap");
}

/* queues=1 (the default) on a tap made multi-queue: served. */
static void multi_queue_tap_one_pair(void **state)
{
	struct mfx *f = *state;
	int err;

	assert_int_equal(sh("ip tuntap add dev vmq0 mode tap vnet_hdr "
			    "multi_queue"), 0);
	f->dev = fgd_dev_create(VENET_TYPE, "tap=vmq0", &err);
	assert_non_null(f->dev);
	assert_string_equal(fgd_stat_str(f->dev, "backend"), "vmq0");
	fgd_dev_destroy(f->dev);
	f->dev = NULL;
	sh("ip tuntap del dev vmq0 mode tap multi_queue");
}

/*
 * A restart (docs/operations.md, "Restarts"): the daemon's tap fds close
 * with it and the next daemon opens the persistent multi-queue tap again;
 * its guest negotiates two pairs anew and pair 1 carries both ways.
 */
static void restart_reopens_every_queue(void **state)
{
	struct mfx *f = *state;
	struct reaped r;
	int err;

	assert_int_equal(sh("ip tuntap add dev vmr0 mode tap vnet_hdr "
			    "multi_queue"), 0);
	/* the first daemon's device, pair 1 in use */
	f->dev = fgd_dev_create(VENET_TYPE, "tap=vmr0,queues=2,"
				"mac=02:11:22:33:44:66", &err);
	assert_non_null(f->dev);
	snprintf(f->tap, sizeof(f->tap), "vmr0");
	assert_int_equal(fgd_dev_open(f->dev, VENET_VERSION), 0);
	assert_int_equal(queues(f, 2, 0, NULL), 0);
	mfx_rings(f, 2);
	wait_tap_queues(f, 2);
	tx_flow(f, 1, 4001, 1);
	run_tx(f, 1, 1);
	host_sees(f, 1);
	/* it goes (every queue's fd closed), the tap stays */
	fgd_dev_destroy(f->dev);
	f->dev = NULL;
	/* the next daemon's */
	f->dev = fgd_dev_create(VENET_TYPE, "tap=vmr0,queues=2,"
				"mac=02:11:22:33:44:66", &err);
	assert_non_null(f->dev);
	assert_string_equal(fgd_stat_str(f->dev, "backend"), "vmr0");
	assert_int_equal(fgd_dev_open(f->dev, VENET_VERSION), 0);
	assert_int_equal(queues(f, 2, 0, NULL), 0);
	mfx_rings(f, 2);
	wait_tap_queues(f, 2);
	tx_flow(f, 1, 4001, 2);
	run_tx(f, 1, 1);
	host_sees(f, 2);
	host_flow(f, 4001, 41);
	run_rx(f, &r, 1);
	assert_int_equal(r.n[1], 1);
	assert_int_equal(r.seq[1][0], 41);
	close(f->ps);
	f->ps = -1;
	fgd_dev_destroy(f->dev);
	f->dev = NULL;
	sh("ip tuntap del dev vmr0 mode tap multi_queue");
}

/* queues= out of range or not a number: refused, saying what it wants. */
static void queues_param_refused(void **state)
{
	static const char *const bad[] = { "queues=0", "queues=17",
					   "queues=two", "queues=-1" };
	unsigned int i;
	int err;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_null(fgd_dev_create(VENET_TYPE, bad[i], &err));
		assert_int_equal(err, -EINVAL);
		assert_non_null(strstr(fgd_last_error(),
				       "want 1..16 (queue pairs)"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(queues_grants_up_to_param),
		T(queues_refuses_bad_requests),
		T(queues_busy_after_ring),
		T(old_guest_gets_one_pair),
		T(old_guest_gets_every_flow),
		T(devshm_beyond_grant),
		T(setactive_range),
		T(setactive_loop_bounded),
		T(reopen_is_one_pair),
		T(tx_pair1_reaches_tap),
		T(tx_pair1_null_backend),
		T(rx_follows_tap_queue),
		T(setactive_stops_pair1),
		T(inactive_pair_tx_sent),
		T(per_pair_counters),
		T(flushrx_every_pair),
		T(rx_drop_counted_per_pair),
		T(single_queue_tap_refused),
		T(multi_queue_tap_one_pair),
		T(restart_reopens_every_queue),
		T(queues_param_refused),
#undef T
	};
	int rc = wire_netns();

	if (rc)
		return rc;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
