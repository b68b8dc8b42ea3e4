// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ioq-stress: run the producer and the consumer as two threads or as two
 * processes (fork; the channel's fds travel over a unix socket as they
 * would to an unrelated process) and judge the result.
 *
 *   ioq-stress [--mode thread|process] [-n N] [--ring R] [--batch B]
 *              [--ring-ver 5|6] [--iter 0|1] [--lookagain 0|1]
 *              [--timeout MS]
 *              [--inject drop|dup|csum|stale|nowake [--inject-at K]]
 *
 * Both sides go through exactly the calls the devices use: north posts
 * with ioq_post_begin()/ioq_post_end() and one ioq_signal() per batch
 * (the guest drivers), reaps with ioq_reap_begin()/ioq_reap_end(); south
 * consumes with ioq_consume_begin()/ioq_consume_end() and one signal per
 * batch, masked while it drains, and sleeps through unmask-then-look
 * (vbus-hostd's hostd_devq, userspace/hostd/lib/devq.c).
 *
 * --ring-ver picks the ring layout (default 6); --iter 1 runs the 2009
 * iterator instead (ioq_iter_*: libioq 1's compatibility API, which no
 * device uses; only the stress-*-iter tests, which test that API itself);
 * --lookagain 1
 * runs venet's NAPI look-again (ioq_reap_poll()) on a third, north-side
 * thread against the reaper (north.c).
 *
 * N defaults to $VBUS_STRESS_N, else 2000000. Exit 0 = pass. With
 * --inject the consumer's view is corrupted on purpose and the run passes
 * only if the checker catches it (proof that the test can fail).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stress.h"

static const char *const inject_names[] = {
	[STRESS_INJ_NONE] = "none", [STRESS_INJ_DROP] = "drop",
	[STRESS_INJ_DUP] = "dup", [STRESS_INJ_CSUM] = "csum",
	[STRESS_INJ_STALE] = "stale", [STRESS_INJ_NOWAKE] = "nowake",
};
/* what the checker must say for each fault */
static const char *const inject_expect[] = {
	[STRESS_INJ_DROP] = "lost", [STRESS_INJ_DUP] = "duplicate",
	[STRESS_INJ_CSUM] = "checksum", [STRESS_INJ_STALE] = "stale",
	[STRESS_INJ_NOWAKE] = "lost wakeup",
};

static void usage(void)
{
	fprintf(stderr, "usage: ioq-stress [--mode thread|process] [-n N] "
		"[--ring R] [--batch B] [--ring-ver 5|6] [--iter 0|1] "
		"[--lookagain 0|1] [--timeout MS]\n"
		"                  [--inject drop|dup|csum|stale|nowake] "
		"[--inject-at K]\n");
	exit(2);
}

static unsigned long num(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (!*s || *end)
		usage();
	return v;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- two threads ---- */

struct thread_arg {
	const struct stress_cfg *cfg;
	struct ioq_channel *ch;
	struct stress_shared *sh;
};

static void *south_thread(void *p)
{
	struct thread_arg *a = p;

	stress_south(a->cfg, a->ch, a->sh, NULL);
	return NULL;
}

static int run_threads(const struct stress_cfg *cfg, struct stress_shared *sh)
{
	struct ioq_channel *north, *south;
	struct ioq_channel_fds fds;
	struct thread_arg a = { .cfg = cfg, .sh = sh };
	pthread_t t;
	int rc;

	rc = ioq_channel_create_ver(&north, cfg->ring, NULL, cfg->ring_ver);
	if (rc) {
		fprintf(stderr, "ioq_channel_create: %s\n", strerror(-rc));
		return rc;
	}
	ioq_channel_fds(north, &fds);
	rc = ioq_channel_attach(&south, ioq_locality_south, &fds);
	if (rc) {
		fprintf(stderr, "ioq_channel_attach: %s\n", strerror(-rc));
		ioq_channel_destroy(north);
		return rc;
	}
	/* both views map the same pages; telling valgrind once is enough */
	stress_hg_ignore_ring(ioq_channel_ioq(north));
	stress_hg_ignore_ring(ioq_channel_ioq(south));

	a.ch = south;
	rc = pthread_create(&t, NULL, south_thread, &a);
	if (rc) {
		fprintf(stderr, "pthread_create: %s\n", strerror(rc));
	} else {
		stress_north(cfg, north, sh, NULL);
		pthread_join(t, NULL);
	}
	ioq_channel_destroy(south);
	ioq_channel_destroy(north);
	return -rc;
}

/* ---- two processes ---- */

static pid_t child;
static int child_status = -1;

static int child_alive(void)
{
	if (child_status == -1 && waitpid(child, &child_status, WNOHANG) == 0)
		return 1;
	return 0;
}

static int south_process(const struct stress_cfg *cfg,
			 struct stress_shared *sh, int sock)
{
	struct ioq_channel_fds fds;
	struct ioq_channel *ch;
	int rc;

	/* never outlive the producer, even if it is killed */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	rc = ioq_channel_recv_fds(sock, &fds);
	close(sock);
	if (rc)
		return sh->south.setup_error = rc;
	rc = ioq_channel_attach(&ch, ioq_locality_south, &fds);
	close(fds.shm_fd);
	close(fds.kick_south_fd);
	close(fds.kick_north_fd);
	if (rc)
		return sh->south.setup_error = rc;
	stress_hg_ignore_ring(ioq_channel_ioq(ch));
	stress_south(cfg, ch, sh, NULL);
	ioq_channel_destroy(ch);
	return 0;
}

static int run_processes(const struct stress_cfg *cfg,
			 struct stress_shared *sh)
{
	struct ioq_channel *north = NULL;
	struct ioq_channel_fds fds;
	int sv[2], rc;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	fflush(NULL);	/* or the child flushes our buffered output again */
	child = fork();
	if (child < 0)
		return -errno;
	if (child == 0) {
		close(sv[0]);
		exit(south_process(cfg, sh, sv[1]) ? 2 : 0);
	}
	close(sv[1]);

	rc = ioq_channel_create_ver(&north, cfg->ring, NULL, cfg->ring_ver);
	if (!rc) {
		ioq_channel_fds(north, &fds);
		rc = ioq_channel_send_fds(sv[0], &fds);
	}
	close(sv[0]);
	if (rc) {
		fprintf(stderr, "channel setup: %s\n", strerror(-rc));
		sh->north.setup_error = rc;
		stress_abort(sh);
	} else {
		stress_hg_ignore_ring(ioq_channel_ioq(north));
		stress_north(cfg, north, sh, child_alive);
	}
	if (child_status == -1)
		waitpid(child, &child_status, 0);
	if (north)
		ioq_channel_destroy(north);
	if (!WIFEXITED(child_status) || WEXITSTATUS(child_status)) {
		fprintf(stderr, "consumer process: %s %d\n",
			WIFEXITED(child_status) ? "exit" : "signal",
			WIFEXITED(child_status) ? WEXITSTATUS(child_status) :
						  WTERMSIG(child_status));
		if (!rc)
			rc = -ECHILD;
	}
	return rc;
}

/* ---- report ---- */

static void report_side(const char *name, const struct stress_result *r,
			unsigned long n)
{
	double per = n ? 1.0 / n : 0;

	printf("  %s: msgs %lu, errors %lu, lost wakeups %lu | per msg: "
	       "notifications sent %.4f, wakeups %.4f, sleeps %.4f\n",
	       name, r->msgs, r->errors, r->lost_wakeups,
	       r->st.injects * per, r->st.wakeups * per, r->st.sleeps * per);
	if (r->setup_error)
		printf("  %s: setup failed: %s\n", name,
		       strerror(-r->setup_error));
	if (r->errors)
		printf("  %s: first error: %s\n", name, r->first_error);
}

static int verdict(const struct stress_cfg *cfg,
		   const struct stress_shared *sh, int rc)
{
	const struct stress_result *no = &sh->north, *so = &sh->south;
	int nowake = cfg->inject == STRESS_INJ_NOWAKE;
	int clean_run = !rc && !no->setup_error && !so->setup_error &&
			no->msgs == cfg->n && so->msgs == cfg->n &&
			!no->lost_wakeups && (nowake || !so->lost_wakeups);

	if (cfg->inject == STRESS_INJ_NONE)
		return clean_run && !no->errors && !so->errors;
	/*
	 * The fault must be caught, by the right check, and nothing else.
	 * (With NOWAKE the producer may also sleep through it, waiting for
	 * completions the masked consumer does not deliver: not an error.)
	 */
	return clean_run && !no->errors && so->errors >= 1 &&
	       (!nowake || so->lost_wakeups >= 1) &&
	       strstr(so->first_error, inject_expect[cfg->inject]);
}

int main(int argc, char **argv)
{
	struct stress_cfg cfg = {
		.n = 2000000, .ring = 256, .batch = 16, .timeout_ms = 1000,
		.ring_ver = IOQ_RING_VER,
	};
	const char *mode = "thread", *env = getenv("VBUS_STRESS_N");
	struct stress_shared *sh;
	size_t shsize;
	double t0, dt;
	int i, rc, ok;

	if (env && *env)
		cfg.n = num(env);
	/* options come in pairs: NAME VALUE */
	for (i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		if (!strcmp(a, "--mode"))
			mode = v;
		else if (!strcmp(a, "-n"))
			cfg.n = num(v);
		else if (!strcmp(a, "--ring"))
			cfg.ring = (__u32)num(v);
		else if (!strcmp(a, "--batch"))
			cfg.batch = (unsigned int)num(v);
		else if (!strcmp(a, "--ring-ver"))
			cfg.ring_ver = (__u32)num(v);
		else if (!strcmp(a, "--iter"))
			cfg.iter = !!strcmp(v, "0");
		else if (!strcmp(a, "--lookagain"))
			cfg.lookagain = !!strcmp(v, "0");
		else if (!strcmp(a, "--timeout"))
			cfg.timeout_ms = (int)num(v);
		else if (!strcmp(a, "--inject-at"))
			cfg.inject_at = num(v);
		else if (!strcmp(a, "--inject")) {
			unsigned int k;

			for (k = 1; k < sizeof(inject_names) / sizeof(*inject_names); k++)
				if (!strcmp(v, inject_names[k]))
					cfg.inject = k;
			if (!cfg.inject)
				usage();
		} else
			usage();
	}
	if (strcmp(mode, "thread") && strcmp(mode, "process"))
		usage();
	if (!cfg.n || !cfg.batch || cfg.timeout_ms < 10 ||
	    cfg.ring < 2 || (cfg.ring & (cfg.ring - 1)) ||
	    cfg.ring > IOQ_RING_MAX_COUNT ||
	    (cfg.ring_ver != IOQ_RING_VER_V5 && cfg.ring_ver != IOQ_RING_VER_V6))
		usage();
	if (cfg.inject && !cfg.inject_at)
		cfg.inject_at = cfg.n / 2;
	if (cfg.inject && cfg.inject_at + 1 >= cfg.n)
		usage();

	shsize = sizeof(*sh) + cfg.ring * sizeof(struct stress_slot);
	sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 2;
	}

	t0 = now_s();
	rc = !strcmp(mode, "thread") ? run_threads(&cfg, sh) :
				       run_processes(&cfg, sh);
	dt = now_s() - t0;

	printf("ioq-stress %s: n=%lu ring=%u v%u%s%s batch=%u inject=%s: "
	       "%.3f s, %.0f msg/s\n", mode, cfg.n, cfg.ring, cfg.ring_ver,
	       cfg.iter ? " iter" : "", cfg.lookagain ? " lookagain" : "",
	       cfg.batch,
	       inject_names[cfg.inject], dt, dt > 0 ? cfg.n / dt : 0.0);
	report_side("north", &sh->north, cfg.n);
	report_side("south", &sh->south, cfg.n);
	printf("  notifications per message (both ways): %.4f\n",
	       (double)(sh->north.st.injects + sh->south.st.injects) / cfg.n);
	ok = verdict(&cfg, sh, rc);
	if (cfg.inject)
		printf("%s: injected fault '%s' at seq %lu %s\n",
		       ok ? "PASS" : "FAIL", inject_names[cfg.inject],
		       cfg.inject_at, ok ? "was caught" : "was NOT caught");
	else
		printf("%s\n", ok ? "PASS" : "FAIL");
	munmap(sh, shsize);
	return ok ? 0 : 1;
}
