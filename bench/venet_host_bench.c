// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * venet's host path alone, no QEMU, no TCG: a userspace venet guest (the
 * tests' fake guest, tests/hostd/fg_dev.h, on core/'s north side with
 * the role calls the guest driver uses) transmits frames of one size
 * through libvbus-hostd and the venet device, run by the guest's loop on
 * a thread of its own exactly as vbus-hostd runs it ("g:fgd"), into
 * venet's null backend (backend=null: each frame copied once into a host
 * buffer and dropped; docs/devices/venet.md). Prints one line of figures
 * for one measurement; bench/venet-host-vs-dpdk.sh runs it in rounds
 * next to DPDK's memif and vhost/virtio-user and prints the table.
 *
 *   venet-host-bench --size 64 --mode poll|sleep [--ms 2000]
 *                    [--warmup-ms 300] [--ring 256] [--batch 32]
 *                    [--cpus G,H]
 *
 * poll:  the host polls the tx ring (tx_poll_us=10000, the most; it
 *        stays masked while frames keep coming), the guest spins: no
 *        doorbell and no interrupt while both run.
 * sleep: the host sleeps in epoll when the ring is drained (tx_poll_us=0,
 *        the default; doorbell_mask_us=0: no timer holds it masked
 *        either), the guest posts until the ring is full and then
 *        sleeps on its interrupt (the eventq's MSI-X eventfd) until the
 *        host hands back completions.
 *
 * The guest posts up to --batch frames per publication (one tail store,
 * one signal that crosses only when the host is listening) and reaps
 * everything handed back with one inuse-head store; plain (not SG)
 * descriptors, one buffer per frame, filled once: like a DPDK tx burst
 * of prebuilt packets. --cpus pins the guest thread to G and the host
 * loop to H.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vbus/venet.h>
#include "fg_dev.h"

#define BUF_LEN		2048u
#define RING_MAX	4096u

struct opts {
	unsigned int size, ms, warmup_ms, ring, batch;
	bool sleep;
	int cpu_guest, cpu_host;
};

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "venet-host-bench: %s\n", what);
	exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: venet-host-bench --size N --mode poll|sleep "
		"[--ms N] [--warmup-ms N] [--ring N] [--batch N] [--cpus G,H]\n");
	exit(2);
}

static unsigned int num(const char *s, unsigned int lo, unsigned int hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno || v < lo || v > hi) {
		fprintf(stderr, "venet-host-bench: %s: want %u..%u\n", s, lo, hi);
		exit(2);
	}
	return (unsigned int)v;
}

static void parse(int argc, char **argv, struct opts *o)
{
	int i;

	*o = (struct opts){ .size = 64, .ms = 2000, .warmup_ms = 300,
			    .ring = 256, .batch = 32, .cpu_guest = -1,
			    .cpu_host = -1 };
	for (i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (!strcmp(k, "--size"))
			o->size = num(v, 60, 1514);
		else if (!strcmp(k, "--ms"))
			o->ms = num(v, 1, 600000);
		else if (!strcmp(k, "--warmup-ms"))
			o->warmup_ms = num(v, 0, 60000);
		else if (!strcmp(k, "--ring"))
			o->ring = num(v, 2, RING_MAX);
		else if (!strcmp(k, "--batch"))
			o->batch = num(v, 1, RING_MAX);
		else if (!strcmp(k, "--mode") && (!strcmp(v, "poll") ||
						  !strcmp(v, "sleep")))
			o->sleep = !strcmp(v, "sleep");
		else if (!strcmp(k, "--cpus") &&
			 sscanf(v, "%d,%d", &o->cpu_guest, &o->cpu_host) == 2)
			;
		else
			usage();
	}
	if (i != argc || (o->ring & (o->ring - 1)))
		usage();
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

/* ---- the guest ------------------------------------------------------------ */

struct guest {
	struct fg_ring tx, rx;
	struct hostd_dev *dev;
	__u32 free[RING_MAX];	/* buffers not in flight */
	unsigned int nfree;
	__u64 buf[RING_MAX];
	__u64 reaped;
	/* sleeps that ended by the 1 s timeout, not an interrupt: lost wakeups */
	__u64 timeouts;
};

/* The device up as venet.ko brings it up: plain frames, both rings. */
static void guest_up(struct guest *g, const struct opts *o)
{
	struct venet_capabilities caps = { VENET_CAP_GROUP_SG, 0 };
	char params[64];
	unsigned int i;
	int err;

	snprintf(params, sizeof(params),
		 "backend=null,tx_poll_us=%u,doorbell_mask_us=0",
		 o->sleep ? 0 : 10000);
	g->dev = fgd_dev_create(VENET_TYPE, params, &err);
	if (!g->dev || fgd_dev_open(g->dev, VENET_VERSION) ||
	    fgd_call(g->dev, VENET_FUNC_NEGCAP, &caps, sizeof(caps)) ||
	    fgd_ring_attach(g->dev, VENET_QUEUE_RX, 64, &g->rx) ||
	    fgd_ring_attach(g->dev, VENET_QUEUE_TX, o->ring, &g->tx) ||
	    fgd_call(g->dev, VENET_FUNC_LINKUP, NULL, 0))
		die("venet device");
	for (i = 0; i < o->ring; i++) {
		__u8 *b;

		g->buf[i] = fgd_alloc(BUF_LEN, 64);
		b = fgd_ram(g->buf[i]);
		memset(b, 0xff, 6);			/* broadcast */
		memcpy(b + 6, "\x02\x00\x00\x00\x00\x01", 6);
		b[12] = 0x88;				/* local experimental */
		b[13] = 0xb5;
		memset(b + 14, 0x5a, o->size - 14);
		g->free[g->nfree++] = i;
	}
	/* completions are polled, not interrupts, until we must wait */
	ioq_notify_disable(&g->tx.ioq, 0);
}

/* Everything handed back, with one inuse-head store. */
static unsigned int guest_reap(struct guest *g)
{
	struct ioq_ring_desc d[RING_MAX];
	int n = fg_ring_reap_bulk(&g->tx, d, RING_MAX), i;

	if (n < 0)
		die("tx ring faulted");
	for (i = 0; i < n; i++)
		g->free[g->nfree++] = (__u32)d[i].cookie;
	g->reaped += (unsigned int)n;
	return (unsigned int)n;
}

/* Up to a batch of frames, one publication and at most one doorbell. */
static unsigned int guest_post(struct guest *g, const struct opts *o)
{
	struct ioq_ring_desc d[RING_MAX];
	unsigned int k = g->nfree < o->batch ? g->nfree : o->batch, i;
	int n;

	if (!k)
		return 0;
	for (i = 0; i < k; i++) {
		__u32 b = g->free[g->nfree - 1 - i];

		d[i] = (struct ioq_ring_desc){ .cookie = b, .ptr = g->buf[b],
					       .len = o->size };
	}
	n = fg_ring_post_bulk(&g->tx, d, k, true);
	if (n < 0)
		die("tx ring faulted");
	g->nfree -= (unsigned int)n;
	return (unsigned int)n;
}

/*
 * Ring full, nothing back: unmask, look again, sleep on the interrupt.
 * The interrupt's events are taken whether we slept or not, while still
 * unmasked, as the driver's handler would: an event left in the eventq
 * leaves our signal pending, and the host then never crosses again.
 */
static void guest_wait(struct guest *g)
{
	ioq_notify_enable(&g->tx.ioq, 0);
	if (!guest_reap(g) && !fgd_wait_irq(1000))
		g->timeouts++;
	fgd_irqs(&g->tx);
	ioq_notify_disable(&g->tx.ioq, 0);
}

/*
 * Transmit until @end; returns the frames handed back meanwhile. The
 * clock is read every 64 passes: on this VM's clocksource a read costs
 * about as much as a pass (perf: 40 % of the guest thread when read on
 * every pass), and the guest is the sender DPDK's txonly is compared with.
 */
static __u64 guest_run(struct guest *g, const struct opts *o, __u64 end)
{
	__u64 start = g->reaped;
	unsigned int pass = 0;

	while ((++pass & 63) || now_ns() < end) {
		unsigned int got = guest_reap(g);

		if (!guest_post(g, o) && !got && o->sleep)
			guest_wait(g);
	}
	return g->reaped - start;
}

static __u64 cpu_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/*
 * The host's counters are read once its thread stopped (they are the
 * loop's), so they cover the warm-up too: per frame over all frames.
 */
static void report(const struct opts *o, struct guest *g, __u64 frames,
		   __u64 ns, double guest_cpu, double host_cpu)
{
	double all = (double)g->reaped;

	printf("venet-host mode=%s size=%u frames=%llu ns=%llu mpps=%.3f "
	       "ns_per_frame=%.1f guest_cpu=%.2f host_cpu=%.2f "
	       "host_cpu_ns_per_frame=%.1f "
	       "doorbells_per_kframe=%.3f irqs_per_kframe=%.3f "
	       "host_kicks_per_kframe=%.2f host_empty_passes_per_kframe=%.2f "
	       "lost_wakeups=%llu\n",
	       o->sleep ? "sleep" : "poll", o->size,
	       (unsigned long long)frames, (unsigned long long)ns,
	       (double)frames * 1000.0 / (double)ns,
	       (double)ns / (double)frames, guest_cpu, host_cpu,
	       host_cpu * (double)ns / (double)frames,
	       1000.0 * (double)fgd_stat(g->dev, "tx_notify_in") / all,
	       1000.0 * (double)fgd_stat(g->dev, "tx_signals_sent") / all,
	       1000.0 * (double)fgd_stat(g->dev, "kicks") / all,
	       1000.0 * (double)fgd_stat(g->dev, "tx_polls") / all,
	       (unsigned long long)g->timeouts);
}

int main(int argc, char **argv)
{
	static struct guest g;
	struct opts o;
	__u64 t0, t1, g0, p0, frames;

	parse(argc, argv, &o);
	fg_ring_ver = IOQ_RING_VER_V6;	/* what venet.ko formats */
	if (fgd_init())
		die("fake guest");
	guest_up(&g, &o);
	pin(o.cpu_host);	/* the loop thread inherits it */
	if (fgd_host_start())
		die("host loop thread");
	pin(o.cpu_guest);
	guest_run(&g, &o, now_ns() + o.warmup_ms * 1000000ull);

	g0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	p0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
	t0 = now_ns();
	frames = guest_run(&g, &o, t0 + o.ms * 1000000ull);
	t1 = now_ns();
	g0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID) - g0;
	p0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - p0;
	fgd_stopping();
	if (!frames)
		die("no frame went through");
	report(&o, &g, frames, t1 - t0, (double)g0 / (double)(t1 - t0),
	       (double)(p0 - g0) / (double)(t1 - t0));
	fgd_fini();
	return 0;
}
