// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ipc-peer: one end of a vbus-ipc channel, the same program on both
 * sides (static, so it also runs in the guest's busybox initramfs); or,
 * for the comparison (bench/ipc-vs-tcp.sh), one end of a TCP connection
 * carrying the same messages (peer_tcp.c).
 *
 *   ipc-peer guest DEV  ACTION [OPTIONS]    DEV = /dev/vbus-ipcN
 *   ipc-peer host SOCK  ACTION [OPTIONS]    SOCK = vbus-hostd's sock=
 *   ipc-peer guest-poll DEV | host-poll SOCK ACTION [OPTIONS]
 *                    the same, sleeping in a poll loop of its own
 *                    (ioq_ipc_arm + ioq_ipc_pollfd), not in ioq_ipc_wait
 *   ipc-peer vchan-client NAME | vchan-server NAME ACTION [OPTIONS]
 *                    the same channel through libioq's vchan-style calls
 *                    (ioq_vchan(3)): NAME a service or a path
 *   ipc-peer tcp-listen ADDR:PORT  ACTION [OPTIONS]  accepts one connection
 *   ipc-peer tcp-connect ADDR:PORT ACTION [OPTIONS]  retries until it is up
 *
 * OPTIONS: --timeout MS (30000; -1 forever), --max-msg BYTES (TCP: the
 * largest message, 65536, as the bench's vbus-ipc buffers).
 *
 * ACTION:
 *   send N [WINDOW]  send N test messages (seq, length up to the buffer
 *                    size, checksum), at most WINDOW in flight (32), and
 *                    check each echoed reply
 *   echo             send every message back until the session ends
 *   echo-check       the same, checking each message's sequence number,
 *                    length and checksum on the way (against send)
 *   die-after N      echo N messages, then SIGKILL itself
 *   garbage          after the first message, post a descriptor whose
 *                    offset is outside the area; then wait for the end
 *   rr N BYTES       N round trips of one BYTES message against an echo
 *                    peer (after 100 unmeasured): min/p50/p99 microseconds
 *   stream N BYTES B N messages of BYTES against an echo peer, B sent per
 *                    signal (IOQ_IPC_MORE; TCP: per send()), B in flight:
 *                    messages/s, MB/s one way, doorbells per message
 * The figures' lines start with "ipc-" or "tcp-" (the link); doorbells
 * per message only for vbus-ipc (TCP: the NICs' counters, read by the
 * bench in the guest).
 *
 * Exit: 0 done (echo/garbage: the session ended, -EPIPE); 2 usage;
 * 3 -EPIPE during send; 4 the endpoint faulted (-EIO); 5 a reply was
 * wrong; 6 attach failed; 7 timeout. One summary line on stdout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <vbus/ioq_channel.h>
#include "ipc_msg.h"
#include "peer_link.h"

static int timeout_ms = 30000;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int exit_code(long err)
{
	if (err == -EPIPE)
		return 3;
	if (err == -EIO)
		return 4;
	if (err == 0)
		return 7;
	return 1;
}

static void summary(struct peer_link *peer, const char *what, double secs)
{
	struct peer_stats st;

	peer->ops->stats(peer, &st);
	printf("ipc-peer: %s: sent %lu received %lu in %.2f s (%.0f msg/s each way); kicks %lu wakeups %lu sleeps %lu faults %lu\n",
	       what, st.sent, st.received, secs,
	       secs > 0 ? st.received / secs : 0.0, st.kicks, st.wakeups,
	       st.sleeps, st.faults);
	fflush(stdout);
}

static int do_send(struct peer_link *peer, unsigned long n, unsigned long win)
{
	size_t max = peer->ops->max_msg(peer);
	unsigned char *buf = malloc(max), *rbuf = malloc(max);
	unsigned long sent = 0, got = 0;
	double t0 = now();
	long r;
	int rc = 0;

	while (got < n) {
		int progress = 0;

		while (sent < n && sent - got < win) {
			uint32_t len = ipc_msg_len(sent, (uint32_t)max);

			ipc_msg_fill(buf, sent, len);
			r = peer->ops->send(peer, buf, len, PEER_MORE);
			if (r == -EAGAIN)
				break;
			if (r < 0)
				goto fail;
			sent++;
			progress = 1;
		}
		if (progress && (r = peer->ops->flush(peer)) < 0)
			goto fail;
		while ((r = peer->ops->recv(peer, rbuf, max)) >= 0) {
			if (ipc_msg_check(rbuf, r, got)) {
				printf("ipc-peer: reply %lu is wrong (len %ld)\n",
				       got, r);
				rc = 5;
				goto out;
			}
			got++;
			progress = 1;
		}
		if (r != -EAGAIN)
			goto fail;
		if (!progress) {
			r = peer->ops->wait(peer, PEER_WAIT_RX, timeout_ms);
			if (r <= 0)
				goto fail;
		}
	}
	summary(peer, "send", now() - t0);
	goto out;
fail:
	printf("ipc-peer: send stopped at %lu sent, %lu received: %s\n", sent,
	       got, r ? strerror((int)-r) : "timeout");
	rc = exit_code(r);
out:
	free(buf);
	free(rbuf);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * Doorbells rung and handled by this end per message (each of the n
 * exchanges is two messages); vbus-ipc only: a TCP end sees none.
 */
static void print_doorbells(struct peer_link *peer, const struct peer_stats *a,
			    const struct peer_stats *b, unsigned long n)
{
	double m = 2.0 * n;

	if (!strcmp(peer->name, "ipc"))
		printf(" doorbells_per_msg=%.3f kicks_per_msg=%.3f wakeups_per_msg=%.3f sleeps_per_msg=%.3f",
		       (double)(b->kicks - a->kicks + b->wakeups - a->wakeups) / m,
		       (double)(b->kicks - a->kicks) / m,
		       (double)(b->wakeups - a->wakeups) / m,
		       (double)(b->sleeps - a->sleeps) / m);
	printf("\n");
}

/* One message out, its echo back; the round trip in seconds or < 0. */
static double rr_once(struct peer_link *peer, unsigned char *buf, size_t len)
{
	double t0 = now();
	long r;

	r = peer->ops->send(peer, buf, len, 0);
	while (r >= 0 && (r = peer->ops->recv(peer, buf, len)) == -EAGAIN)
		r = peer->ops->wait(peer, PEER_WAIT_RX, timeout_ms) > 0 ? 0 : -ETIMEDOUT;
	return r < 0 ? (double)r : now() - t0;
}

static int do_rr(struct peer_link *peer, unsigned long n, size_t len)
{
	unsigned char *buf = calloc(1, len ? len : 1);
	double *t = calloc(n, sizeof(*t)), d = 0;
	struct peer_stats a, b;
	unsigned long i;

	for (i = 0; i < 100 && d >= 0; i++)
		d = rr_once(peer, buf, len);
	peer->ops->stats(peer, &a);
	for (i = 0; i < n && d >= 0; i++)
		d = t[i] = rr_once(peer, buf, len);
	peer->ops->stats(peer, &b);
	if (d < 0) {
		printf("ipc-peer: rr failed: %s\n", strerror((int)-d));
		return exit_code((long)d);
	}
	qsort(t, n, sizeof(*t), cmp_double);
	printf("%s-rr bytes=%zu samples=%lu min_us=%.1f p50_us=%.1f p99_us=%.1f max_us=%.1f",
	       peer->name, len, n, t[0] * 1e6, t[n / 2] * 1e6,
	       t[n * 99 / 100] * 1e6, t[n - 1] * 1e6);
	print_doorbells(peer, &a, &b, n);
	free(buf);
	free(t);
	return 0;
}

static int do_stream(struct peer_link *peer, unsigned long n, size_t len,
		     unsigned long batch)
{
	unsigned char *buf = calloc(1, len), *rbuf = calloc(1, len);
	unsigned long sent = 0, got = 0, k;
	struct peer_stats a, b;
	double t0;
	long r = 0;

	peer->ops->stats(peer, &a);
	t0 = now();
	while (got < n) {
		for (k = 0; k < batch && sent < n && sent - got < batch; k++) {
			r = peer->ops->send(peer, buf, len, PEER_MORE);
			if (r == -EAGAIN)
				break;
			if (r < 0)
				goto fail;
			sent++;
		}
		if (k && (r = peer->ops->flush(peer)) < 0)
			goto fail;
		while ((r = peer->ops->recv(peer, rbuf, len)) >= 0)
			got++;
		if (r != -EAGAIN)
			goto fail;
		if (got < n && (sent - got >= batch || sent == n)) {
			r = peer->ops->wait(peer, PEER_WAIT_RX, timeout_ms);
			if (r <= 0)
				goto fail;
		}
	}
	t0 = now() - t0;
	peer->ops->stats(peer, &b);
	printf("%s-stream bytes=%zu batch=%lu msgs=%lu secs=%.3f msgs_per_s=%.0f mb_per_s=%.1f",
	       peer->name, len, batch, n, t0, n / t0,
	       n * (double)len / t0 / 1e6);
	print_doorbells(peer, &a, &b, n);
	free(buf);
	free(rbuf);
	return 0;
fail:
	printf("ipc-peer: stream failed at %lu/%lu: %s\n", sent, got,
	       r ? strerror((int)-r) : "timeout");
	return exit_code(r);
}

/* Post one descriptor whose offset lies outside the area, on our tx ring. */
static int post_garbage(struct peer_link *peer)
{
	struct ioq_ipc *ipc = peer_ipc_channel(peer);
	struct ioq *q;
	struct ioq_iterator it;
	int err;

	if (!ipc)
		return -EINVAL;
	q = ioq_ipc_ioq(ipc, 1);
	err = ioq_iter_init(q, &it, ioq_idx_push, 0);
	if (!err)
		err = ioq_iter_seek(&it, ioq_seek_tail, 0, 0);
	if (err)
		return err;
	it.desc->ptr = 1ull << 40;
	it.desc->len = 64;
	it.desc->valid = 1;
	err = ioq_iter_push(&it, 0);
	return err ? err : ioq_signal(q, 0);
}

enum echo_kind { ECHO, ECHO_CHECK, ECHO_GARBAGE };

/* send one message back, waiting for room */
static long echo_one(struct peer_link *peer, const unsigned char *buf,
		     size_t len)
{
	long r;

	while ((r = peer->ops->send(peer, buf, len, 0)) == -EAGAIN)
		if ((r = peer->ops->wait(peer, PEER_WAIT_TX, -1)) < 0)
			break;
	return r;
}

/*
 * echo (limit 0: forever); ECHO_CHECK checks each message as do_send
 * made it; ECHO_GARBAGE posts garbage after the first message
 */
static int do_echo(struct peer_link *peer, unsigned long limit,
		   enum echo_kind kind)
{
	size_t max = peer->ops->max_msg(peer);
	unsigned char *buf = malloc(max);
	unsigned long n = 0, got = 0;
	double t0 = now();
	long r;

	for (;;) {
		r = peer->ops->recv(peer, buf, max);
		if (r == -EAGAIN) {
			r = peer->ops->wait(peer, PEER_WAIT_RX, -1);
			if (r < 0)
				break;
			continue;
		}
		if (r < 0)
			break;
		if (kind == ECHO_CHECK && ipc_msg_check(buf, r, got++)) {
			printf("ipc-peer: message %lu is wrong (len %ld)\n",
			       got - 1, r);
			summary(peer, "echo-check", now() - t0);
			free(buf);
			return 5;
		}
		if (kind == ECHO_GARBAGE) {
			r = post_garbage(peer);
			/* then only wait for the peer to give up on us */
			while (r >= 0)
				r = peer->ops->wait(peer, PEER_WAIT_RX, -1);
			break;
		}
		if ((r = echo_one(peer, buf, (size_t)r)) < 0)
			break;
		if (limit && ++n == limit) {
			summary(peer, "die-after", now() - t0);
			raise(SIGKILL);
		}
	}
	summary(peer, kind == ECHO_CHECK ? "echo-check" : "echo", now() - t0);
	printf("ipc-peer: echo ended: %s\n", strerror((int)-r));
	free(buf);
	return r == -EPIPE ? 0 : exit_code(r);
}

static int usage(void)
{
	fprintf(stderr, "usage: ipc-peer guest[-poll] DEV|host[-poll] SOCK|vchan-client NAME|vchan-server NAME|tcp-listen ADDR:PORT|tcp-connect ADDR:PORT\n"
		"       send N [WINDOW]|echo|echo-check|die-after N|garbage|rr N BYTES|stream N BYTES BATCH\n"
		"       [--timeout MS] [--max-msg BYTES]\n");
	return 2;
}

/* trailing --timeout MS / --max-msg BYTES; the new argc, or -1 */
static int parse_options(int argc, char **argv, size_t *max_msg)
{
	char *end;
	long v;

	while (argc >= 3 && !strncmp(argv[argc - 2], "--", 2)) {
		v = strtol(argv[argc - 1], &end, 0);
		if (*end || !*argv[argc - 1])
			return -1;
		if (!strcmp(argv[argc - 2], "--timeout") && v >= -1 &&
		    v <= 86400000)
			timeout_ms = (int)v;
		else if (!strcmp(argv[argc - 2], "--max-msg") && v > 0 &&
			 v <= 65536)
			*max_msg = (size_t)v;
		else
			return -1;
		argc -= 2;
	}
	return argc;
}

static int is_ipc(const char *side)
{
	return !strcmp(side, "guest") || !strcmp(side, "host") ||
	       !strcmp(side, "guest-poll") || !strcmp(side, "host-poll");
}

static int is_vchan(const char *side)
{
	return !strcmp(side, "vchan-client") || !strcmp(side, "vchan-server");
}

static int is_tcp(const char *side)
{
	return !strcmp(side, "tcp-listen") || !strcmp(side, "tcp-connect");
}

static int attach(struct peer_link **peer, const char *side,
		  const char *where, size_t max_msg)
{
	if (is_ipc(side))
		return peer_ipc_attach(peer, side, where, timeout_ms);
	if (is_vchan(side))
		return peer_vchan_attach(peer, side, where, timeout_ms);
	return peer_tcp_attach(peer, side, where, max_msg, timeout_ms);
}

static int act(struct peer_link *peer, const char *what, unsigned long n,
	       unsigned long win, unsigned long batch)
{
	size_t max = peer->ops->max_msg(peer);

	if (!strcmp(what, "send"))
		return do_send(peer, n, win);
	if (!strcmp(what, "rr"))
		return win > max ? usage() : do_rr(peer, n, win);
	if (!strcmp(what, "stream"))
		return !win || win > max ? usage() :
		       do_stream(peer, n, win, batch);
	if (!strcmp(what, "garbage"))
		return do_echo(peer, 0, ECHO_GARBAGE);
	return do_echo(peer, n, strcmp(what, "echo-check") ? ECHO : ECHO_CHECK);
}

int main(int argc, char **argv)
{
	struct peer_link *peer;
	const char *what;
	unsigned long n = 0, win = 32, batch = 1;
	size_t max_msg = 65536;
	int err, rc;

	argc = parse_options(argc, argv, &max_msg);
	if (argc < 4)
		return usage();
	what = argv[3];
	if (!strcmp(what, "send") || !strcmp(what, "die-after") ||
	    !strcmp(what, "rr") || !strcmp(what, "stream")) {
		if (argc < 5)
			return usage();
		n = strtoul(argv[4], NULL, 0);
		if (argc > 5)
			win = strtoul(argv[5], NULL, 0);
		if (argc > 6)
			batch = strtoul(argv[6], NULL, 0);
		if (!n || (!win && strcmp(what, "rr")) || !batch)
			return usage();
	} else if (strcmp(what, "echo") && strcmp(what, "echo-check") &&
		   strcmp(what, "garbage")) {
		return usage();
	}
	/* garbage is a vbus-ipc descriptor: no such thing over TCP */
	if (!is_ipc(argv[1]) &&
	    ((!is_tcp(argv[1]) && !is_vchan(argv[1])) || !strcmp(what, "garbage")))
		return usage();
	err = attach(&peer, argv[1], argv[2], max_msg);
	if (err) {
		printf("ipc-peer: attach %s: %s\n", argv[2], strerror(-err));
		/* the session may end before this end got to it */
		return err == -ETIMEDOUT ? 7 : err == -EPIPE ? 3 : 6;
	}
	printf("ipc-peer: attached %s (max message %zu)\n", argv[2],
	       peer->ops->max_msg(peer));
	fflush(stdout);
	rc = act(peer, what, n, win, batch);
	peer->ops->close(peer);
	return rc;
}
