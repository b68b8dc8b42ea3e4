// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ipc-peer: one end of a vbus-ipc channel, the same program on both
 * sides (static, so it also runs in the guest's busybox initramfs).
 *
 *   ipc-peer guest DEV  ACTION [--timeout MS]   DEV = /dev/vbus-ipcN
 *   ipc-peer host SOCK  ACTION [--timeout MS]   SOCK = vbus-hostd's sock=
 *
 * ACTION:
 *   send N [WINDOW]  send N test messages (seq, length up to the buffer
 *                    size, checksum), at most WINDOW in flight (32), and
 *                    check each echoed reply
 *   echo             send every message back until the session ends
 *   die-after N      echo N messages, then SIGKILL itself
 *   garbage          after the first message, post a descriptor whose
 *                    offset is outside the area; then wait for the end
 *   rr N BYTES       N round trips of one BYTES message against an echo
 *                    peer (after 100 unmeasured): min/p50/p99 microseconds
 *   stream N BYTES B N messages of BYTES against an echo peer, B sent per
 *                    signal (IOQ_IPC_MORE), B in flight: messages/s, MB/s
 *                    one way, doorbells per message
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

static void summary(struct ioq_ipc *ipc, const char *what, double secs)
{
	struct ioq_ipc_stats st;

	ioq_ipc_stats(ipc, &st);
	printf("ipc-peer: %s: sent %lu received %lu in %.2f s (%.0f msg/s each way); kicks %lu wakeups %lu sleeps %lu faults %lu\n",
	       what, st.sent, st.received, secs,
	       secs > 0 ? st.received / secs : 0.0, st.kicks, st.wakeups,
	       st.sleeps, st.faults);
	fflush(stdout);
}

static int do_send(struct ioq_ipc *ipc, unsigned long n, unsigned long win)
{
	size_t max = ioq_ipc_max_msg(ipc);
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
			r = ioq_ipc_send(ipc, buf, len, IOQ_IPC_MORE);
			if (r == -EAGAIN)
				break;
			if (r < 0)
				goto fail;
			sent++;
			progress = 1;
		}
		if (progress && (r = ioq_ipc_flush(ipc)) < 0)
			goto fail;
		while ((r = ioq_ipc_recv(ipc, rbuf, max)) >= 0) {
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
			r = ioq_ipc_wait(ipc, IOQ_IPC_WAIT_RX, timeout_ms);
			if (r <= 0)
				goto fail;
		}
	}
	summary(ipc, "send", now() - t0);
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

/* One message out, its echo back; the round trip in seconds or < 0. */
static double rr_once(struct ioq_ipc *ipc, unsigned char *buf, size_t len)
{
	double t0 = now();
	long r;

	r = ioq_ipc_send(ipc, buf, len, 0);
	while (r >= 0 && (r = ioq_ipc_recv(ipc, buf, len)) == -EAGAIN)
		r = ioq_ipc_wait(ipc, IOQ_IPC_WAIT_RX, timeout_ms) > 0 ? 0 : -ETIMEDOUT;
	return r < 0 ? (double)r : now() - t0;
}

static int do_rr(struct ioq_ipc *ipc, unsigned long n, size_t len)
{
	unsigned char *buf = calloc(1, len ? len : 1);
	double *t = calloc(n, sizeof(*t)), d = 0;
	struct ioq_ipc_stats a, b;
	unsigned long i;

	for (i = 0; i < 100 && d >= 0; i++)
		d = rr_once(ipc, buf, len);
	ioq_ipc_stats(ipc, &a);
	for (i = 0; i < n && d >= 0; i++)
		d = t[i] = rr_once(ipc, buf, len);
	ioq_ipc_stats(ipc, &b);
	if (d < 0) {
		printf("ipc-peer: rr failed: %s\n", strerror((int)-d));
		return exit_code((long)d);
	}
	qsort(t, n, sizeof(*t), cmp_double);
	printf("ipc-rr bytes=%zu samples=%lu min_us=%.1f p50_us=%.1f p99_us=%.1f max_us=%.1f doorbells_per_msg=%.2f\n",
	       len, n, t[0] * 1e6, t[n / 2] * 1e6, t[n * 99 / 100] * 1e6,
	       t[n - 1] * 1e6,
	       (double)(b.kicks - a.kicks + b.wakeups - a.wakeups) / (2.0 * n));
	free(buf);
	free(t);
	return 0;
}

static int do_stream(struct ioq_ipc *ipc, unsigned long n, size_t len,
		     unsigned long batch)
{
	unsigned char *buf = calloc(1, len), *rbuf = calloc(1, len);
	unsigned long sent = 0, got = 0, k;
	struct ioq_ipc_stats a, b;
	double t0;
	long r = 0;

	ioq_ipc_stats(ipc, &a);
	t0 = now();
	while (got < n) {
		for (k = 0; k < batch && sent < n && sent - got < batch; k++) {
			r = ioq_ipc_send(ipc, buf, len, IOQ_IPC_MORE);
			if (r == -EAGAIN)
				break;
			if (r < 0)
				goto fail;
			sent++;
		}
		if (k && (r = ioq_ipc_flush(ipc)) < 0)
			goto fail;
		while ((r = ioq_ipc_recv(ipc, rbuf, len)) >= 0)
			got++;
		if (r != -EAGAIN)
			goto fail;
		if (got < n && (sent - got >= batch || sent == n)) {
			r = ioq_ipc_wait(ipc, IOQ_IPC_WAIT_RX, timeout_ms);
			if (r <= 0)
				goto fail;
		}
	}
	t0 = now() - t0;
	ioq_ipc_stats(ipc, &b);
	printf("ipc-stream bytes=%zu batch=%lu msgs=%lu secs=%.3f msgs_per_s=%.0f mb_per_s=%.1f doorbells_per_msg=%.3f\n",
	       len, batch, n, t0, n / t0, n * (double)len / t0 / 1e6,
	       (double)(b.kicks - a.kicks + b.wakeups - a.wakeups) / (2.0 * n));
	free(buf);
	free(rbuf);
	return 0;
fail:
	printf("ipc-peer: stream failed at %lu/%lu: %s\n", sent, got,
	       r ? strerror((int)-r) : "timeout");
	return exit_code(r);
}

/* Post one descriptor whose offset lies outside the area, on our tx ring. */
static int post_garbage(struct ioq_ipc *ipc)
{
	struct ioq *q = ioq_ipc_ioq(ipc, 1);
	struct ioq_iterator it;
	int err;

	err = ioq_iter_init(q, &it, ioq_idxtype_both, 0);
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

/* echo (limit 0: forever), or garbage after the first message */
static int do_echo(struct ioq_ipc *ipc, unsigned long limit, int garbage)
{
	size_t max = ioq_ipc_max_msg(ipc);
	unsigned char *buf = malloc(max);
	unsigned long n = 0;
	double t0 = now();
	long r;

	for (;;) {
		r = ioq_ipc_recv(ipc, buf, max);
		if (r == -EAGAIN) {
			r = ioq_ipc_wait(ipc, IOQ_IPC_WAIT_RX, -1);
			if (r < 0)
				break;
			continue;
		}
		if (r < 0)
			break;
		if (garbage) {
			r = post_garbage(ipc);
			/* then only wait for the peer to give up on us */
			while (r >= 0)
				r = ioq_ipc_wait(ipc, IOQ_IPC_WAIT_RX, -1);
			break;
		}
		while ((r = ioq_ipc_send(ipc, buf, (size_t)r, 0)) == -EAGAIN)
			if ((r = ioq_ipc_wait(ipc, IOQ_IPC_WAIT_TX, -1)) < 0)
				break;
		if (r < 0)
			break;
		if (limit && ++n == limit) {
			summary(ipc, "die-after", now() - t0);
			raise(SIGKILL);
		}
	}
	summary(ipc, "echo", now() - t0);
	printf("ipc-peer: echo ended: %s\n", strerror((int)-r));
	free(buf);
	return r == -EPIPE ? 0 : exit_code(r);
}

static int usage(void)
{
	fprintf(stderr, "usage: ipc-peer guest DEV|host SOCK send N [WINDOW]|echo|die-after N|garbage|rr N BYTES|stream N BYTES BATCH [--timeout MS]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct ioq_ipc *ipc;
	const char *act;
	unsigned long n = 0, win = 32, batch = 1;
	int err, rc;

	if (argc >= 3 && !strcmp(argv[argc - 2], "--timeout")) {
		timeout_ms = atoi(argv[argc - 1]);
		argc -= 2;
	}
	if (argc < 4)
		return usage();
	act = argv[3];
	if (!strcmp(act, "send") || !strcmp(act, "die-after") ||
	    !strcmp(act, "rr") || !strcmp(act, "stream")) {
		if (argc < 5)
			return usage();
		n = strtoul(argv[4], NULL, 0);
		if (argc > 5)
			win = strtoul(argv[5], NULL, 0);
		if (argc > 6)
			batch = strtoul(argv[6], NULL, 0);
		if (!n || (!win && strcmp(act, "rr")) || !batch)
			return usage();
	} else if (strcmp(act, "echo") && strcmp(act, "garbage")) {
		return usage();
	}
	if (!strcmp(argv[1], "guest"))
		err = ioq_ipc_attach_dev(&ipc, argv[2], timeout_ms);
	else if (!strcmp(argv[1], "host"))
		err = ioq_ipc_attach_host(&ipc, argv[2], timeout_ms);
	else
		return usage();
	if (err) {
		printf("ipc-peer: attach %s: %s\n", argv[2], strerror(-err));
		/* the session may end before this end got to it */
		return err == -ETIMEDOUT ? 7 : err == -EPIPE ? 3 : 6;
	}
	printf("ipc-peer: attached %s (max message %zu)\n", argv[2],
	       ioq_ipc_max_msg(ipc));
	fflush(stdout);
	if (!strcmp(act, "send"))
		rc = do_send(ipc, n, win);
	else if (!strcmp(act, "rr"))
		rc = (win > ioq_ipc_max_msg(ipc)) ? 2 : do_rr(ipc, n, win);
	else if (!strcmp(act, "stream"))
		rc = (!win || win > ioq_ipc_max_msg(ipc)) ? 2 :
		     do_stream(ipc, n, win, batch);
	else
		rc = do_echo(ipc, n, !strcmp(act, "garbage"));
	ioq_ipc_close(ipc);
	return rc;
}
