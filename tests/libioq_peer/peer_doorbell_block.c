// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Issue 26.1: a peer cannot block us in write(2). It shares the open file
 * descriptions of both doorbell eventfds, clears O_NONBLOCK on them and
 * fills their counters, and never reads them. A push with AUTOUPDATE, an
 * ioq_signal() and an ioq_notify_enable() that must ring them then
 * return at once: a full counter is "already signalled". Each call is
 * watched by alarm(); libioq at 5e8fef9 blocked in the first one forever.
 */
#include "peer.h"
#include <fcntl.h>
#include <stdint.h>

static const char *volatile step = "setup";
static volatile pid_t peer;

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL: blocked (over 3 s) in ";

	(void)sig;
	/* async-signal-safe: kill, write(2) and _exit only */
	if (peer > 0)
		kill(peer, SIGKILL);
	if (write(2, msg, sizeof(msg) - 1) < 0 ||
	    write(2, step, strlen(step)) < 0 || write(2, "\n", 1) < 0)
		_exit(1);
	_exit(1);
}

/* The peer's move on one shared description. */
static void block_and_fill(int fd)
{
	uint64_t v = 0xfffffffffffffffeULL;	/* the counter's maximum */
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		_exit(2);
	if (write(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		_exit(3);
}

/* a FAIL() must not leave the peer sitting in pause() */
static void end_peer(void)
{
	if (peer > 0)
		peer_end(peer);
	peer = 0;
}

static void timed(const char *name, int rc, double t0)
{
	alarm(0);
	CHECK(rc == 0, "%s returned %d", name, rc);
	CHECK(now_s() - t0 < 1.0, "%s took %.2f s", name, now_s() - t0);
	printf("%s: 0 in %.3f ms\n", name, (now_s() - t0) * 1e3);
}

int main(void)
{
	struct ioq_channel *n, *s;
	struct ioq_channel_fds fds;
	struct ioq_iterator it;
	struct ioq *nq;
	struct sigaction sa;
	int ready[2];
	double t0;
	char c;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);

	CHECK(ioq_channel_create(&n, 16, NULL) == 0, "create");
	ioq_channel_fds(n, &fds);
	CHECK(ioq_channel_attach(&s, ioq_locality_south, &fds) == 0,
	      "attach");
	nq = ioq_channel_ioq(n);
	/* south wants doorbells: north's next push must ring one */
	CHECK(ioq_notify_enable(ioq_channel_ioq(s), 0) == 0, "enable");

	CHECK(pipe(ready) == 0, "pipe");
	peer = fork();
	CHECK(peer >= 0, "fork");
	if (peer > 0)
		atexit(end_peer);
	if (peer == 0) {
		/* the peer: make both doorbells blocking and full, then sit */
		block_and_fill(fds.kick_south_fd);
		block_and_fill(fds.kick_north_fd);
		if (write(ready[1], "r", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	CHECK(read(ready[0], &c, 1) == 1, "the peer did not get ready");

	/* 1: a push that signals south rings kick_south */
	CHECK(ioq_iter_init(nq, &it, ioq_idx_push, IOQ_ITER_AUTOUPDATE) == 0,
	      "iter_init");
	CHECK(ioq_iter_seek(&it, ioq_seek_tail, 0, 0) == 0, "seek");
	it.desc->cookie = 1;
	step = "ioq_iter_push (AUTOUPDATE)";
	t0 = now_s();
	alarm(3);
	timed(step, ioq_iter_push(&it, 0), t0);

	/*
	 * 2: ioq_signal() crosses again once south's pending is clear (the
	 * peer may clear it: it is south's record)
	 */
	nq->head_desc->signal.irq[ioq_locality_south].pending = 0;
	step = "ioq_signal";
	t0 = now_s();
	alarm(3);
	timed(step, ioq_signal(nq, 0), t0);

	/* 3: an enable that finds north dirty kicks north's own eventfd */
	nq->head_desc->signal.irq[ioq_locality_north].dirty = 1;
	step = "ioq_notify_enable";
	t0 = now_s();
	alarm(3);
	timed(step, ioq_notify_enable(nq, 0), t0);

	/* and the wait that follows handles it without blocking either */
	step = "ioq_channel_wait";
	t0 = now_s();
	alarm(3);
	{
		int rc = ioq_channel_wait(n, 100);

		alarm(0);
		CHECK(rc >= 0, "ioq_channel_wait returned %d", rc);
	}

	end_peer();
	ioq_channel_destroy(s);
	ioq_channel_destroy(n);
	printf("ok: no call blocked on the peer's full, blocking doorbells\n");
	return 0;
}
