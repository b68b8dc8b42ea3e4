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
	fprintf(stderr, "usage: ipc-peer guest DEV|host SOCK send N [WINDOW]|echo|die-after N|garbage [--timeout MS]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct ioq_ipc *ipc;
	const char *act;
	unsigned long n = 0, win = 32;
	int err, rc;

	if (argc >= 3 && !strcmp(argv[argc - 2], "--timeout")) {
		timeout_ms = atoi(argv[argc - 1]);
		argc -= 2;
	}
	if (argc < 4)
		return usage();
	act = argv[3];
	if (!strcmp(act, "send") || !strcmp(act, "die-after")) {
		if (argc < 5)
			return usage();
		n = strtoul(argv[4], NULL, 0);
		if (argc > 5)
			win = strtoul(argv[5], NULL, 0);
		if (!n || !win)
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
	else
		rc = do_echo(ipc, n, !strcmp(act, "garbage"));
	ioq_ipc_close(ipc);
	return rc;
}
