// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The "vbus-ipc" device without QEMU: this process is vbus-hostd's loop
 * (fakeguest.c), QEMU's ivshmem client on the device's qsock= and the
 * guest (the driver's guest_open/guest_close and CTRL doorbell, libioq's
 * guest endpoint over the region and the DATA eventfds); the host process
 * is the real ipc-peer, started per case. Messages carry a sequence
 * number and a checksum; a dead, misbehaving or missing host process, a
 * misbehaving guest and bad parameters must each end in an error for the
 * one channel, never a crash or a hang.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <endian.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <grp.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vbus/ioq_channel.h>
#include <vbus/vbus_ipc.h>
#include "daemon.h"
#include "fakeguest.h"
#include "fake_qemu.h"
#include "../../../ipc/ipc_msg.h"

struct env {
	struct fg fg;
	char dir[64], sock[96], qsock[96];
	int qemu;		/* our end of qsock */
	int shm_fd, db[VBUS_IPC_NR_VECTORS], msix[VBUS_IPC_NR_VECTORS];
	struct vbus_ipc_shm *shm;
	size_t size;
	pid_t host;
};

/* QEMU's side of the handshake, in QEMU 7.2's order. */
static void qemu_connect(struct env *e)
{
	struct stat st;
	int i, fd;

	e->qemu = connect_to(e->qsock);
	fg_pump(&e->fg);
	assert_int_equal(qemu_recv(e->qemu, &fd), 0);
	assert_int_equal(qemu_recv(e->qemu, &fd), 1);
	assert_int_equal(qemu_recv(e->qemu, &e->shm_fd), -1);
	for (i = 0; i < VBUS_IPC_NR_VECTORS; i++)
		assert_int_equal(qemu_recv(e->qemu, &e->db[i]), 0);
	for (i = 0; i < VBUS_IPC_NR_VECTORS; i++)
		assert_int_equal(qemu_recv(e->qemu, &e->msix[i]), 1);
	assert_int_equal(fstat(e->shm_fd, &st), 0);
	e->size = (size_t)st.st_size;
	assert_true((e->size & (e->size - 1)) == 0);	/* a PCI BAR */
	e->shm = mmap(NULL, e->size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      e->shm_fd, 0);
	assert_true(e->shm != MAP_FAILED);
	assert_int_equal(e->shm->magic, VBUS_IPC_MAGIC);
	assert_string_equal(e->shm->service, "echo");
	assert_int_equal(vbus_ipc_layout_check(&e->shm->layout, e->size), 0);
}

/* What vbus_ipc.ko does at open and release. */
static void guest_open(struct env *e)
{
	e->shm->guest_open++;
	kick(e->db[VBUS_IPC_VEC_CTRL]);
	fg_pump(&e->fg);
}

static void guest_close(struct env *e)
{
	e->shm->guest_close = e->shm->guest_open;
	kick(e->db[VBUS_IPC_VEC_CTRL]);
	fg_pump(&e->fg);
}

/* ipc-peer as the host process; @side "host", or "host-poll" (own loop) */
static void host_spawn_side(struct env *e, const char *side, const char *act,
			    const char *arg)
{
	e->host = fork();
	assert_true(e->host >= 0);
	if (!e->host) {
		execl(IPC_PEER, "ipc-peer", side, e->sock, act, arg,
		      (char *)NULL);
		_exit(127);
	}
}

static void host_spawn(struct env *e, const char *act, const char *arg)
{
	host_spawn_side(e, "host", act, arg);
}

/* Pump vbus-hostd's loop until the host process exits: its exit code. */
static int host_exit(struct env *e, double secs)
{
	double t0 = now();
	int st;

	while (now() - t0 < secs) {
		fg_pump(&e->fg);
		if (waitpid(e->host, &st, WNOHANG) == e->host) {
			e->host = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) :
					       128 + WTERMSIG(st);
		}
		usleep(2000);
	}
	return -1;
}

static bool session_up(struct env *e, double secs)
{
	double t0 = now();

	while (now() - t0 < secs) {
		fg_pump(&e->fg);
		if (e->shm->state == VBUS_IPC_STATE_ACTIVE &&
		    e->shm->session_open == e->shm->guest_open)
			return true;
		usleep(2000);
	}
	return false;
}

static struct ioq_ipc *guest_attach(struct env *e)
{
	struct ioq_ipc_fds fds = {
		.shm_fd = e->shm_fd,
		.wait_fd = e->msix[VBUS_IPC_VEC_DATA],
		.kick_fd = e->db[VBUS_IPC_VEC_DATA],
		.ctl_fd = -1,
	};
	struct ioq_ipc *ipc;

	assert_true(session_up(e, 10));
	fds.session = e->shm->session;
	assert_int_equal(ioq_ipc_attach_fds(&ipc, IOQ_IPC_GUEST, &fds), 0);
	return ipc;
}

/*
 * Send @n checked messages with a window of 32, pumping vbus-hostd's
 * loop whenever nothing moves. Returns the replies verified; *errp the
 * error that stopped it (0: all done).
 */
static unsigned long guest_send(struct env *e, struct ioq_ipc *ipc,
				unsigned long n, long *errp)
{
	size_t max = ioq_ipc_max_msg(ipc);
	unsigned char *buf = malloc(max), *rbuf = malloc(max);
	unsigned long sent = 0, got = 0;
	double last = now();
	long r = 0;

	while (got < n) {
		bool moved = false;

		while (sent < n && sent - got < 32) {
			__u32 len = ipc_msg_len(sent, (__u32)max);

			ipc_msg_fill(buf, sent, len);
			r = ioq_ipc_send(ipc, buf, len, 0);
			if (r == -EAGAIN)
				break;
			if (r < 0)
				goto out;
			sent++;
			moved = true;
		}
		while ((r = ioq_ipc_recv(ipc, rbuf, max)) >= 0) {
			assert_int_equal(ipc_msg_check(rbuf, r, got), 0);
			got++;
			moved = true;
		}
		if (r != -EAGAIN)
			goto out;
		if (moved) {
			last = now();
			continue;
		}
		if (now() - last > 10) {
			r = -ETIMEDOUT;
			goto out;
		}
		r = ioq_ipc_wait(ipc, IOQ_IPC_WAIT_RX, 20);
		if (r < 0)
			goto out;
		fg_pump(&e->fg);
	}
	r = 0;
out:
	free(buf);
	free(rbuf);
	*errp = r;
	return got;
}

/* The device; QEMU connected to its qsock= when @qemu. */
static struct env *up_qemu(bool qemu)
{
	struct env *e = calloc(1, sizeof(*e));
	char spec[512], err[256];

	strcpy(e->dir, "/tmp/vbus-ipc-test.XXXXXX");
	assert_non_null(mkdtemp(e->dir));
	snprintf(e->sock, sizeof(e->sock), "%s/echo.sock", e->dir);
	snprintf(e->qsock, sizeof(e->qsock), "%s/q.sock", e->dir);
	fg_init(&e->fg, "t");
	snprintf(spec, sizeof(spec),
		 "type=vbus-ipc,id=5,service=echo,sock=%s,qsock=%s,count=64,bufsize=1024",
		 e->sock, e->qsock);
	assert_int_equal(fg_add_dev(&e->fg, spec, err, sizeof(err)), 0);
	if (qemu)
		qemu_connect(e);
	return e;
}

static struct env *up(void)
{
	return up_qemu(true);
}

static void down(struct env *e)
{
	if (e->host > 0) {
		kill(e->host, SIGKILL);
		waitpid(e->host, NULL, 0);
	}
	munmap(e->shm, e->size);
	close(e->qemu);
	close(e->shm_fd);
	for (int i = 0; i < VBUS_IPC_NR_VECTORS; i++) {
		close(e->db[i]);
		close(e->msix[i]);
	}
	fg_fini(&e->fg);
	unlink(e->sock);
	unlink(e->qsock);
	rmdir(e->dir);
	free(e);
}

/* ---- cases ------------------------------------------------------------------- */

static void test_ipc_echo(void **state)
{
	struct env *e = up();
	struct ioq_ipc *ipc;
	struct ioq_ipc_stats st;
	long err;

	(void)state;
	host_spawn(e, "echo", NULL);
	guest_open(e);
	ipc = guest_attach(e);
	assert_int_equal(guest_send(e, ipc, 20000, &err), 20000);
	assert_int_equal(err, 0);
	ioq_ipc_stats(ipc, &st);
	assert_int_equal(st.received, 20000);
	assert_int_equal(st.faults, 0);
	printf("# 20000 messages each way: %lu doorbells rung, %lu handled\n",
	       st.kicks, st.wakeups);
	ioq_ipc_close(ipc);
	/* the guest process leaves: the host process gets -EPIPE, exits 0 */
	guest_close(e);
	assert_int_equal(host_exit(e, 10), 0);
	assert_int_not_equal(e->shm->state, VBUS_IPC_STATE_ACTIVE);
	down(e);
}

/*
 * A host process sleeping in a poll loop of its own (ioq_ipc_arm +
 * ioq_ipc_pollfd): every message echoed, and the guest's leaving wakes
 * that loop (the descriptor holds vbus-hostd's socket too), so it exits 0
 * instead of sleeping for ever.
 */
static void test_ipc_echo_own_loop(void **state)
{
	struct env *e = up();
	struct ioq_ipc *ipc;
	long err;

	(void)state;
	host_spawn_side(e, "host-poll", "echo-check", NULL);
	guest_open(e);
	ipc = guest_attach(e);
	assert_int_equal(guest_send(e, ipc, 20000, &err), 20000);
	assert_int_equal(err, 0);
	ioq_ipc_close(ipc);
	guest_close(e);
	assert_int_equal(host_exit(e, 10), 0);
	down(e);
}

static void test_ipc_host_killed_then_reopen(void **state)
{
	struct env *e = up();
	struct ioq_ipc *ipc;
	long err;
	unsigned long got;

	(void)state;
	host_spawn(e, "die-after", "500");
	guest_open(e);
	ipc = guest_attach(e);
	got = guest_send(e, ipc, 5000, &err);
	assert_true(got >= 400 && got <= 500);
	assert_int_equal(err, -EPIPE);
	assert_int_equal(host_exit(e, 10), 128 + SIGKILL);
	assert_int_equal(e->shm->state, VBUS_IPC_STATE_ENDED);
	/* every call says so from now on */
	assert_int_equal(ioq_ipc_send(ipc, "x", 1, 0), -EPIPE);
	ioq_ipc_close(ipc);
	guest_close(e);

	/* reopen with a new host process: a fresh session works */
	host_spawn(e, "echo", NULL);
	guest_open(e);
	ipc = guest_attach(e);
	assert_int_equal(guest_send(e, ipc, 1000, &err), 1000);
	assert_int_equal(err, 0);
	ioq_ipc_close(ipc);
	guest_close(e);
	assert_int_equal(host_exit(e, 10), 0);
	down(e);
}

static void test_ipc_host_garbage_faults_guest(void **state)
{
	struct env *e = up();
	struct ioq_ipc *ipc;
	struct ioq_ipc_stats st;
	char buf[1024];
	long r;
	double t0 = now();

	(void)state;
	host_spawn(e, "garbage", NULL);
	guest_open(e);
	ipc = guest_attach(e);
	assert_int_equal(ioq_ipc_send(ipc, "hello", 5, 0), 0);
	do {
		ioq_ipc_wait(ipc, IOQ_IPC_WAIT_RX, 20);
		r = ioq_ipc_recv(ipc, buf, sizeof(buf));
	} while (r == -EAGAIN && now() - t0 < 10);
	assert_int_equal(r, -EIO);
	ioq_ipc_stats(ipc, &st);
	assert_int_equal(st.faults, 1);
	assert_int_equal(ioq_ipc_recv(ipc, buf, sizeof(buf)), -EIO);
	ioq_ipc_close(ipc);
	guest_close(e);
	assert_int_equal(host_exit(e, 10), 0);
	down(e);
}

static void test_ipc_guest_garbage_faults_host(void **state)
{
	struct env *e = up();
	struct ioq_ipc *ipc;
	struct ioq_ring_desc bad = { 0 };
	struct ioq *q;
	char buf[8];

	(void)state;
	host_spawn(e, "echo", NULL);
	guest_open(e);
	ipc = guest_attach(e);
	q = ioq_ipc_ioq(ipc, 1);
	bad.ptr = e->shm->layout.area_len - 8;
	bad.len = 64;	/* runs past the end of the area */
	assert_int_equal(ioq_push_bulk(q, &bad, 1, 0), 1);
	assert_int_equal(ioq_signal(q, 0), 0);
	/* the host process faults (exit 4) and leaves: the session ends */
	assert_int_equal(host_exit(e, 10), 4);
	assert_int_equal(ioq_ipc_recv(ipc, buf, sizeof(buf)), -EPIPE);
	ioq_ipc_close(ipc);
	guest_close(e);
	down(e);
}

static void test_ipc_one_host_process(void **state)
{
	struct env *e = up();
	struct ioq_ipc *ipc;
	pid_t first;
	long err;

	(void)state;
	host_spawn(e, "echo", NULL);
	guest_open(e);
	ipc = guest_attach(e);
	first = e->host;
	/* a second host process is refused: its attach fails (exit 6) */
	host_spawn(e, "echo", NULL);
	assert_int_equal(host_exit(e, 10), 6);
	e->host = first;
	assert_int_equal(guest_send(e, ipc, 100, &err), 100);
	ioq_ipc_close(ipc);
	guest_close(e);
	assert_int_equal(host_exit(e, 10), 0);
	down(e);
}

static void test_ipc_no_host_process(void **state)
{
	struct env *e = up();

	(void)state;
	guest_open(e);
	assert_false(session_up(e, 0.2));
	assert_int_equal(e->shm->state, VBUS_IPC_STATE_IDLE);
	guest_close(e);
	down(e);
}

static void test_ipc_qemu_gone_ends_session(void **state)
{
	struct env *e = up();
	struct ioq_ipc *ipc;
	int rc;

	(void)state;
	host_spawn(e, "echo", NULL);
	guest_open(e);
	ipc = guest_attach(e);
	close(e->qemu);
	e->qemu = -1;
	/* 0: it saw the end while echoing; 3: before it finished attaching */
	rc = host_exit(e, 10);
	assert_true(rc == 0 || rc == 3);
	assert_int_equal(e->shm->state, VBUS_IPC_STATE_ENDED);
	ioq_ipc_close(ipc);
	down(e);
}

/*
 * The header's service field is the guest's to overwrite: ctl stats and
 * GETCONFIG answer with the device's own copy, never a read of it (a
 * field filled to the brim without a NUL was read on into the region).
 */
static void test_ipc_stats_ignore_guest_service(void **state)
{
	struct env *e = up();
	struct hostd_guest *gs[] = { &e->fg.g };
	struct hostd_buf out = { 0 };

	(void)state;
	memset(e->shm->service, 'A', sizeof(e->shm->service));
	memset(e->shm + 1, 'B', 4096 - sizeof(*e->shm));
	daemon_ctl_exec("stats t 5", gs, 1, &out);
	assert_non_null(out.s);
	assert_non_null(strstr(out.s, " service=echo "));
	assert_null(strstr(out.s, "AAAA"));
	assert_true(strlen(out.s) < 1024);
	hostd_buf_free(&out);
	down(e);
}

/*
 * The host process gets the channel's memory: one of another uid than
 * root, the daemon's or peer_uid= is refused, counted, and gets nothing
 * (5e8fef9 handed the first connector whatever its uid).
 */
static void test_ipc_peer_uid_checked(void **state)
{
	struct env *e = up();
	struct hostd_guest *gs[] = { &e->fg.g };
	struct hostd_buf out = { 0 };
	int sv[2], status;
	pid_t pid, w = 0;
	char b;

	(void)state;
	if (geteuid() != 0) {
		fprintf(stderr, "[test] not root: cannot play another uid\n");
		down(e);
		skip();
	}
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		/* the stranger: connect, then tell the parent what came */
		int fd;
		ssize_t n;

		close(sv[0]);
		chmod(e->dir, 0711);
		chmod(e->sock, 0666);
		if (setgid(65534) || setuid(65534))
			_exit(2);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		strcpy(sa.sun_path, e->sock);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			_exit(3);
		if (write(sv[1], "c", 1) != 1)
			_exit(4);
		n = recv(fd, &b, 1, 0);
		_exit(n == 0 ? 0 : 5);	/* EOF, no attach message */
	}
	close(sv[1]);
	assert_int_equal(read(sv[0], &b, 1), 1);
	for (int i = 0; i < 2000 && (w = waitpid(pid, &status, WNOHANG)) == 0;
	     i++) {
		fg_pump(&e->fg);
		usleep(10000);
	}
	assert_int_equal(w, pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	daemon_ctl_exec("stats t 5", gs, 1, &out);
	assert_non_null(out.s);
	assert_non_null(strstr(out.s, " refused=1"));
	assert_non_null(strstr(out.s, " host_process=0 "));
	hostd_buf_free(&out);
	close(sv[0]);
	down(e);
}

static void test_ipc_bad_params(void **state)
{
	static const char *const bad[] = {
		"type=vbus-ipc,id=5,sock=/tmp/x.sock,qsock=/tmp/y.sock",
		"type=vbus-ipc,id=5,service=a/b,sock=/tmp/x.sock,qsock=/tmp/y.sock",
		"type=vbus-ipc,id=5,service=echo,qsock=/tmp/y.sock",
		"type=vbus-ipc,id=5,service=echo,sock=/tmp/x.sock,qsock=/tmp/y.sock,count=3",
		"type=vbus-ipc,id=5,service=echo,sock=/tmp/x.sock,qsock=/tmp/y.sock,count=4096",
		"type=vbus-ipc,id=5,service=echo,sock=/tmp/x.sock,qsock=/tmp/y.sock,bufsize=12",
		"type=vbus-ipc,id=5,service=echo,sock=/tmp/x.sock,qsock=/tmp/y.sock,color=red",
	};
	struct fg f;
	char err[256];

	(void)state;
	fg_init(&f, "t");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_not_equal(fg_add_dev(&f, bad[i], err, sizeof(err)), 0);
		assert_true(err[0] != '\0');
	}
	fg_fini(&f);
}

/*
 * QEMU's socket (qsock=) serves the guest's QEMU user only: a process
 * of another uid connecting first is closed on without a message, and
 * QEMU, connecting after it, gets the handshake (5e8fef9 handed the
 * first connector the region and the vectors, and turned QEMU away).
 */
static void test_ipc_qemu_peer_checked(void **state)
{
	struct env *e = up_qemu(false);

	(void)state;
	if (geteuid() != 0) {
		fprintf(stderr, "[test] not root: cannot play another uid\n");
		down(e);
		skip();
	}
	stranger_refused(&e->fg, e->dir, e->qsock);
	qemu_connect(e);
	down(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipc_echo),
		cmocka_unit_test(test_ipc_echo_own_loop),
		cmocka_unit_test(test_ipc_host_killed_then_reopen),
		cmocka_unit_test(test_ipc_host_garbage_faults_guest),
		cmocka_unit_test(test_ipc_guest_garbage_faults_host),
		cmocka_unit_test(test_ipc_one_host_process),
		cmocka_unit_test(test_ipc_no_host_process),
		cmocka_unit_test(test_ipc_qemu_gone_ends_session),
		cmocka_unit_test(test_ipc_stats_ignore_guest_service),
		cmocka_unit_test(test_ipc_peer_uid_checked),
		cmocka_unit_test(test_ipc_qemu_peer_checked),
		cmocka_unit_test(test_ipc_bad_params),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
