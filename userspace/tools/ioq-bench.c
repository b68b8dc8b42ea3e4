// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ioq-bench: IOQ ring + shm-signal over eventfds, two threads and two
 * processes.
 *
 *   ioq-bench [--json] [--quick] [-n MESSAGES] [--rtt ROUND_TRIPS]
 *             [--spin-us US]
 *   ioq-bench --poll [--json] [--quick] [-n MESSAGES] [--reps N]
 *
 *   throughput  messages/s for batches of 1, 8 and 32 posts per signal,
 *               with notifications (doorbells, both directions) and
 *               sleeps per message under saturation
 *   latency     ping-pong round trip (min, median, p99) over the ring, and
 *               over a bare eventfd pair as the baseline, in the same run
 *
 * The default (blocking) mode sleeps in ioq_channel_wait() as soon as the
 * ring is empty or full, so it measures doorbells, sleeps and wakeups;
 * --spin-us US makes each side poll that long first (NAPI busy-poll,
 * vhost's busyloop), which at saturation hides the wakeup path: the output
 * says which of the two it measured.
 * --poll measures the ring alone against DPDK's rte_ring in the same run
 * (ioq-bench-poll.c).
 *
 * --quick is a smoke run (CI checks only that it works and prints valid
 * JSON; never its speed). The figures depend on the machine: the output
 * names its CPU count and whether the two sides were pinned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include "ioq-bench.h"

static const unsigned int batches[] = { 1, 8, 32 };
#define NBATCH (sizeof(batches) / sizeof(batches[0]))

struct tput_row {
	int process;
	unsigned int batch;
	unsigned long n;
	double seconds;
	struct ioq_channel_stats st[2];
	int error;
};

struct lat_row {
	int process;
	const char *transport;
	unsigned long n;
	__u64 min_ns, median_ns, p99_ns;
	double notif_per_rt;	/* doorbells per round trip, both ways */
	int error;
};

static const char *mode_name(int process)
{
	return process ? "process" : "thread";
}

static double per(unsigned long x, unsigned long n)
{
	return n ? (double)x / (double)n : 0.0;
}

/* 0: a side sleeps as soon as it can do nothing (--spin-us polls first) */
static __u64 spin_ns;

static void run_tput(struct bench_shared *sh, struct tput_row *row)
{
	memset(sh, 0, sizeof(*sh));
	sh->spin_ns = spin_ns;
	sh->n = row->n;
	sh->batch = row->batch;
	row->error = bench_pair(row->process, bench_tput_north,
				bench_tput_south, sh);
	row->seconds = sh->seconds;
	memcpy(row->st, sh->st, sizeof(row->st));
}

static void run_lat(struct bench_shared *sh, struct lat_row *row, int raw,
		    unsigned long warmup)
{
	memset(sh, 0, sizeof(*sh));
	sh->n = row->n;
	sh->warmup = warmup;
	row->transport = raw ? "raw eventfd pair" : "shm-signal+eventfd";
	row->error = raw ? bench_pair(row->process, bench_raw_north,
				      bench_raw_south, sh) :
			   bench_pair(row->process, bench_ping_north,
				      bench_ping_south, sh);
	row->min_ns = sh->min_ns;
	row->median_ns = sh->median_ns;
	row->p99_ns = sh->p99_ns;
	row->notif_per_rt = raw ? 2.0 :
			    per(sh->st[0].injects + sh->st[1].injects,
				row->n + warmup);
}

static void print_text(const struct tput_row *t, int nt,
		       const struct lat_row *l, int nl, int ncpu, int usable,
		       int pinned, const char *machine)
{
	int i;

	printf("ioq-bench: %d CPUs online (%d usable), %s, ring %u "
	       "descriptors, %s\n", ncpu, usable, pinned ? "sides pinned to separate CPUs" :
			      "not pinned (fewer than 2 usable CPUs)",
	       BENCH_RING, machine);
	if (spin_ns)
		printf("\nthroughput (notif = doorbells sent, both directions; "
		       "--spin-us %llu: each side polls that long before it "
		       "sleeps)\n", (unsigned long long)(spin_ns / 1000));
	else
		printf("\nthroughput (notif = doorbells sent, both directions; "
		       "each side sleeps as soon as the ring is empty or full)\n");
	printf("  %-8s %5s %10s %12s %10s %12s %12s\n", "mode", "batch",
	       "messages", "msgs/s", "notif/msg", "sleeps/msg N",
	       "sleeps/msg S");
	for (i = 0; i < nt; i++) {
		if (t[i].error) {
			printf("  %-8s %5u  FAILED: %s\n", mode_name(t[i].process),
			       t[i].batch, strerror(-t[i].error));
			continue;
		}
		printf("  %-8s %5u %10lu %12.0f %10.4f %12.4f %12.4f\n",
		       mode_name(t[i].process), t[i].batch, t[i].n,
		       t[i].n / t[i].seconds,
		       per(t[i].st[0].injects + t[i].st[1].injects, t[i].n),
		       per(t[i].st[0].sleeps, t[i].n),
		       per(t[i].st[1].sleeps, t[i].n));
	}
	printf("\nlatency: ping-pong round trip, one message in flight\n");
	printf("  %-8s %-20s %9s %9s %9s %9s %9s\n", "mode", "transport",
	       "trips", "min ns", "median ns", "p99 ns", "notif/rt");
	for (i = 0; i < nl; i++) {
		if (l[i].error) {
			printf("  %-8s %-20s  FAILED: %s\n",
			       mode_name(l[i].process), l[i].transport,
			       strerror(-l[i].error));
			continue;
		}
		printf("  %-8s %-20s %9lu %9llu %9llu %9llu %9.2f\n",
		       mode_name(l[i].process), l[i].transport, l[i].n,
		       (unsigned long long)l[i].min_ns,
		       (unsigned long long)l[i].median_ns,
		       (unsigned long long)l[i].p99_ns, l[i].notif_per_rt);
	}
}

static void print_json(const struct tput_row *t, int nt,
		       const struct lat_row *l, int nl, int ncpu, int usable,
		       int pinned, int quick, const char *machine)
{
	int i;

	printf("{\"tool\": \"ioq-bench\", \"quick\": %s, \"cpus_online\": %d, "
	       "\"cpus_usable\": %d, \"pinned\": %s, \"machine\": \"%s\", "
	       "\"ring\": %u, \"spin_us\": %llu,\n \"throughput\": [",
	       quick ? "true" : "false", ncpu, usable,
	       pinned ? "true" : "false", machine, BENCH_RING,
	       (unsigned long long)(spin_ns / 1000));
	for (i = 0; i < nt; i++) {
		const struct ioq_channel_stats *s = t[i].st;

		printf("%s\n  {\"mode\": \"%s\", \"batch\": %u, \"messages\": %lu, "
		       "\"ok\": %s", i ? "," : "", mode_name(t[i].process),
		       t[i].batch, t[i].n, t[i].error ? "false" : "true");
		if (!t[i].error)
			printf(", \"seconds\": %.6f, \"msgs_per_s\": %.0f, "
			       "\"notifications_per_msg\": %.6f, "
			       "\"north\": {\"injects\": %lu, \"wakeups\": %lu, "
			       "\"sleeps\": %lu}, \"south\": {\"injects\": %lu, "
			       "\"wakeups\": %lu, \"sleeps\": %lu}",
			       t[i].seconds, t[i].n / t[i].seconds,
			       per(s[0].injects + s[1].injects, t[i].n),
			       s[0].injects, s[0].wakeups, s[0].sleeps,
			       s[1].injects, s[1].wakeups, s[1].sleeps);
		printf("}");
	}
	printf("],\n \"latency\": [");
	for (i = 0; i < nl; i++) {
		printf("%s\n  {\"mode\": \"%s\", \"transport\": \"%s\", "
		       "\"round_trips\": %lu, \"ok\": %s", i ? "," : "",
		       mode_name(l[i].process), l[i].transport, l[i].n,
		       l[i].error ? "false" : "true");
		if (!l[i].error)
			printf(", \"min_ns\": %llu, \"median_ns\": %llu, "
			       "\"p99_ns\": %llu, \"notifications_per_rt\": %.3f",
			       (unsigned long long)l[i].min_ns,
			       (unsigned long long)l[i].median_ns,
			       (unsigned long long)l[i].p99_ns,
			       l[i].notif_per_rt);
		printf("}");
	}
	printf("]}\n");
}

static void usage(void)
{
	fprintf(stderr, "usage: ioq-bench [--json] [--quick] [-n MESSAGES] "
		"[--rtt ROUND_TRIPS] [--spin-us US]\n"
		"       ioq-bench --poll [--json] [--quick] [-n MESSAGES] "
		"[--reps N]\n");
	exit(2);
}

static unsigned long num(const char *s)
{
	char *end;
	unsigned long v = s ? strtoul(s, &end, 0) : 0;

	if (!s || !*s || *end || !v)
		usage();
	return v;
}

/* like num(), but 0 is a value (--spin-us 0: never poll) */
static unsigned long num0(const char *s)
{
	char *end;
	unsigned long v = s ? strtoul(s, &end, 0) : 0;

	if (!s || !*s || *end)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	struct tput_row tput[2 * NBATCH];
	struct lat_row lat[4];
	unsigned long n = 0, rtt = 0, warmup;
	int json = 0, quick = 0, nt = 0, nl = 0, i, p, raw, failed = 0;
	int poll = 0;
	unsigned long reps = 0;
	int ncpu_n, ncpu_s, online, usable;
	struct bench_shared *sh;
	struct utsname u;
	unsigned int b;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "-n"))
			n = num(argv[++i]);
		else if (!strcmp(argv[i], "--rtt"))
			rtt = num(argv[++i]);
		else if (!strcmp(argv[i], "--spin-us"))
			spin_ns = 1000 * num0(argv[++i]);
		else if (!strcmp(argv[i], "--poll"))
			poll = 1;
		else if (!strcmp(argv[i], "--reps"))
			reps = num(argv[++i]);
		else
			usage();
	}
	if (poll)
		return bench_poll_main(json, quick, n ? n : quick ? 3200 :
				       2000000, reps ? (unsigned int)reps :
				       quick ? 3 : 9);
	if (!n)
		n = quick ? 50000 : 2000000;
	if (!rtt)
		rtt = quick ? 2000 : 100000;
	warmup = rtt / 20;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("ioq-bench: mmap");
		return 1;
	}
	fflush(NULL);	/* nothing buffered may be duplicated by fork() */
	for (p = 0; p < 2; p++)
		for (b = 0; b < NBATCH; b++) {
			tput[nt] = (struct tput_row){ .process = p,
				.batch = batches[b], .n = n };
			run_tput(sh, &tput[nt]);
			failed |= tput[nt++].error;
		}
	for (p = 0; p < 2; p++)
		for (raw = 0; raw < 2; raw++) {
			lat[nl] = (struct lat_row){ .process = p, .n = rtt };
			run_lat(sh, &lat[nl], raw, warmup);
			failed |= lat[nl++].error;
		}

	bench_cpus(&ncpu_n, &ncpu_s, &online, &usable);
	if (uname(&u))
		strcpy(u.machine, "unknown");
	if (json)
		print_json(tput, nt, lat, nl, online, usable, ncpu_n >= 0,
			   quick, u.machine);
	else
		print_text(tput, nt, lat, nl, online, usable, ncpu_n >= 0,
			   u.machine);
	munmap(sh, sizeof(*sh));
	return failed ? 1 : 0;
}
