// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ioq-bench harness: two threads or two processes around one channel,
 * pinned to separate CPUs so that the numbers measure the ring and the
 * wakeup path, not the scheduler moving both sides onto one core.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ioq-bench.h"

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__u64 bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000u + (__u64)ts.tv_nsec;
}

void bench_fail(struct bench_shared *sh, int err)
{
	int zero = 0;

	__atomic_compare_exchange_n(&sh->error, &zero, err, 0,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

void bench_set_ready(struct bench_shared *sh)
{
	__atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);
}

/*
 * For a side that waited a whole slice: did the run fail, or did the
 * south process die (it would never signal again)? WNOWAIT leaves the
 * child for the harness's waitpid().
 */
int bench_peer_gone(struct bench_shared *sh)
{
	siginfo_t si = { 0 };

	if (__atomic_load_n(&sh->error, __ATOMIC_ACQUIRE))
		return 1;
	if (sh->peer_pid <= 0 || getpid() == sh->peer_pid)
		return 0;
	return waitid(P_PID, (id_t)sh->peer_pid, &si,
		      WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid != 0;
}

/* Only at start-up: sleep-polls, so it never competes with the peer. */
void bench_wait_ready(struct bench_shared *sh)
{
	while (!__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&sh->error, __ATOMIC_ACQUIRE))
		usleep(100);
}

void bench_cpus(int *north, int *south, int *online, int *usable)
{
	cpu_set_t set;
	int cpu, found = 0;

	*north = *south = -1;
	*online = (int)sysconf(_SC_NPROCESSORS_ONLN);
	*usable = 0;
	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	*usable = CPU_COUNT(&set);
	for (cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		if (found++ == 0)
			*north = cpu;
		else
			*south = cpu;
	}
	if (found < 2)
		*north = *south = -1;
}

/* Best effort: an unpinned run is still a run. */
static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

struct south_arg {
	bench_fn fn;
	struct bench_side side;
	int cpu;
};

static void *south_thread(void *p)
{
	struct south_arg *a = p;

	pin(a->cpu);
	a->fn(&a->side);
	return NULL;
}

static int attach_south(struct ioq_channel *north, struct ioq_channel **ch)
{
	struct ioq_channel_fds fds;

	ioq_channel_fds(north, &fds);
	return ioq_channel_attach(ch, ioq_locality_south, &fds);
}

int bench_pair(int process, bench_fn north_fn, bench_fn south_fn,
	       struct bench_shared *sh)
{
	struct south_arg sa = { .fn = south_fn, .side.sh = sh };
	struct bench_side ns = { .sh = sh };
	struct ioq_channel *north;
	int ncpu, online, usable, rc, status;
	cpu_set_t all;
	pthread_t t;
	pid_t pid;

	/* the caller keeps running on every CPU it had */
	sched_getaffinity(0, sizeof(all), &all);
	bench_cpus(&ncpu, &sa.cpu, &online, &usable);
	sh->ready = 0;
	sh->error = 0;
	sh->peer_pid = 0;
	sh->efd[0] = eventfd(0, EFD_CLOEXEC);
	sh->efd[1] = eventfd(0, EFD_CLOEXEC);
	rc = ioq_channel_create_ver(&north, sh->ring ? sh->ring : BENCH_RING,
				    NULL, sh->ver ? sh->ver : IOQ_RING_VER);
	if (sh->efd[0] < 0 || sh->efd[1] < 0 || rc) {
		rc = rc ? rc : -errno;
		goto out_fds;
	}
	ns.ch = north;

	if (!process) {
		rc = attach_south(north, &sa.side.ch);
		if (rc)
			goto out;
		rc = -pthread_create(&t, NULL, south_thread, &sa);
		if (rc) {
			ioq_channel_destroy(sa.side.ch);
			goto out;
		}
		pin(ncpu);
		north_fn(&ns);
		pthread_join(t, NULL);
		ioq_channel_destroy(sa.side.ch);
		goto out;
	}

	pid = fork();
	if (pid < 0) {
		rc = -errno;
		goto out;
	}
	if (pid == 0) {
		/* the south process: its own mapping of the ring */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pin(sa.cpu);
		rc = attach_south(north, &sa.side.ch);
		if (rc) {
			bench_fail(sh, rc);
			_exit(1);
		}
		south_fn(&sa.side);
		ioq_channel_destroy(sa.side.ch);
		_exit(0);
	}
	sh->peer_pid = pid;
	pin(ncpu);
	north_fn(&ns);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		bench_fail(sh, -ECHILD);
out:
	sched_setaffinity(0, sizeof(all), &all);
	ioq_channel_destroy(north);
out_fds:
	if (sh->efd[0] >= 0)
		close(sh->efd[0]);
	if (sh->efd[1] >= 0)
		close(sh->efd[1]);
	if (rc)
		bench_fail(sh, rc);
	return sh->error;
}
