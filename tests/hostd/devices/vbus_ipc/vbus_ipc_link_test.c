// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A "vbus-ipc" link (peer=) without QEMU: this process is vbus-hostd's
 * loop (fakeguest.c), both guests' QEMUs (the ivshmem client on qsock=
 * and peer_qsock=) and both guests (the driver's open/close words and
 * CTRL doorbell, libioq endpoints over the region and the eventfds each
 * QEMU was given). Messages carry a sequence number and a checksum and
 * are checked at both ends; a peer that leaves, a third QEMU and a peer
 * that writes garbage must each end in a clear error for this channel.
 * The test_vchan_ cases run libioq's vchan-style calls over the link.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vbus/ioq_channel.h>
#include <vbus/vbus_ipc.h>
#include "daemon.h"
#include "fakeguest.h"
#include "fake_qemu.h"
#include "../../../ipc/ipc_msg.h"

#define N VBUS_IPC_SIDE_NORTH
#define S VBUS_IPC_SIDE_SOUTH

struct qside {
	int qemu;			/* our end of its qsock, or -1 */
	int shm_fd;
	int peer0[VBUS_IPC_NR_VECTORS];	/* its doorbells */
	int own[VBUS_IPC_NR_VECTORS];	/* its interrupts */
	struct vbus_ipc_shm *shm;
	size_t size;
};

struct env {
	struct fg fg;
	char dir[64], qs[2][96];
	struct qside s[2];
};

static const __u32 peer_id[2] = { VBUS_IPC_NORTH_PEER, VBUS_IPC_SOUTH_PEER };

static void qside_close(struct qside *q)
{
	if (q->qemu < 0)
		return;
	munmap(q->shm, q->size);
	close(q->qemu);
	close(q->shm_fd);
	for (int i = 0; i < VBUS_IPC_NR_VECTORS; i++) {
		close(q->peer0[i]);
		close(q->own[i]);
	}
	q->qemu = -1;
}

/* QEMU's side of the handshake on side @i's socket, in QEMU 7.2's order. */
static void qemu_connect(struct env *e, int i)
{
	struct qside *q = &e->s[i];
	struct stat st;
	int v, fd;

	q->qemu = connect_to(e->qs[i]);
	fg_pump(&e->fg);
	assert_int_equal(qemu_recv(q->qemu, &fd), 0);
	assert_int_equal(qemu_recv(q->qemu, &fd), peer_id[i]);
	assert_int_equal(qemu_recv(q->qemu, &q->shm_fd), -1);
	for (v = 0; v < VBUS_IPC_NR_VECTORS; v++)
		assert_int_equal(qemu_recv(q->qemu, &q->peer0[v]),
				 0);	/* peer 0: where its doorbells go */
	for (v = 0; v < VBUS_IPC_NR_VECTORS; v++)
		assert_int_equal(qemu_recv(q->qemu, &q->own[v]), peer_id[i]);
	assert_int_equal(fstat(q->shm_fd, &st), 0);
	q->size = (size_t)st.st_size;
	q->shm = mmap(NULL, q->size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      q->shm_fd, 0);
	assert_true(q->shm != MAP_FAILED);
	assert_int_equal(q->shm->magic, VBUS_IPC_MAGIC);
}

static __u32 *open_word(struct env *e, int i)
{
	return i == S ? &e->s[i].shm->south_open : &e->s[i].shm->guest_open;
}

/* What vbus_ipc.ko does at open and release, on side @i. */
static void side_open(struct env *e, int i)
{
	(*open_word(e, i))++;
	kick(e->s[i].peer0[VBUS_IPC_VEC_CTRL]);
	fg_pump(&e->fg);
}

static void side_close(struct env *e, int i)
{
	struct vbus_ipc_shm *shm = e->s[i].shm;

	if (i == S)
		shm->south_close = shm->south_open;
	else
		shm->guest_close = shm->guest_open;
	kick(e->s[i].peer0[VBUS_IPC_VEC_CTRL]);
	fg_pump(&e->fg);
}

static bool session_up(struct env *e)
{
	struct vbus_ipc_shm *shm = e->s[N].shm;

	fg_pump(&e->fg);
	return shm->state == VBUS_IPC_STATE_ACTIVE &&
	       shm->session_open == shm->guest_open &&
	       shm->south_session_open == shm->south_open;
}

/* Side @i's libioq endpoint, as ioq_ipc_attach_dev() builds it. */
static struct ioq_ipc *side_attach(struct env *e, int i)
{
	struct qside *q = &e->s[i];
	struct ioq_ipc_fds fds = {
		.shm_fd = q->shm_fd,
		.wait_fd = q->own[VBUS_IPC_VEC_DATA],
		.kick_fd = q->peer0[VBUS_IPC_VEC_DATA],
		.ctl_fd = -1,
		.session = q->shm->session,
	};
	struct ioq_ipc *ipc;

	assert_int_equal(ioq_ipc_attach_fds(&ipc, i == S ? IOQ_IPC_HOST :
							      IOQ_IPC_GUEST,
					    &fds),
			 0);
	return ipc;
}

/* Both sides open and attach: the session is up. */
static void both_attach(struct env *e, struct ioq_ipc **ipc)
{
	side_open(e, N);
	side_open(e, S);
	assert_true(session_up(e));
	ipc[N] = side_attach(e, N);
	ipc[S] = side_attach(e, S);
}

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

/*
 * @n checked messages north -> south, each echoed back and checked again
 * (the south end checks sequence and checksum on the way): 0, or the
 * error that stopped it.
 */
static long exchange(struct ioq_ipc **ipc, unsigned long n)
{
	size_t max = ioq_ipc_max_msg(ipc[N]);
	unsigned char *buf = malloc(max);
	unsigned long sent = 0, echoed = 0, got = 0, idle = 0;
	long r = 0;

	while (got < n && idle < 1000) {
		bool moved = false;

		while (sent < n && sent - got < 32) {
			__u32 len = ipc_msg_len(sent, (__u32)max);

			ipc_msg_fill(buf, sent, len);
			r = ioq_ipc_send(ipc[N], buf, len, 0);
			if (r == -EAGAIN)
				break;
			if (r < 0)
				goto out;
			sent++;
			moved = true;
		}
		while ((r = ioq_ipc_recv(ipc[S], buf, max)) >= 0) {
			assert_int_equal(ipc_msg_check(buf, r, echoed), 0);
			assert_int_equal(ioq_ipc_send(ipc[S], buf, (size_t)r, 0), 0);
			echoed++;
			moved = true;
		}
		if (r != -EAGAIN)
			goto out;
		while ((r = ioq_ipc_recv(ipc[N], buf, max)) >= 0) {
			assert_int_equal(ipc_msg_check(buf, r, got), 0);
			got++;
			moved = true;
		}
		if (r != -EAGAIN)
			goto out;
		idle = moved ? 0 : idle + 1;
	}
	r = got == n ? 0 : -ETIMEDOUT;
out:
	free(buf);
	return r;
}

static struct env *up(void)
{
	struct env *e = calloc(1, sizeof(*e));
	char spec[512], err[256];

	strcpy(e->dir, "/tmp/vbus-ipc-link.XXXXXX");
	assert_non_null(mkdtemp(e->dir));
	snprintf(e->qs[N], sizeof(e->qs[N]), "%s/n.sock", e->dir);
	snprintf(e->qs[S], sizeof(e->qs[S]), "%s/s.sock", e->dir);
	fg_init(&e->fg, "g1");
	snprintf(spec, sizeof(spec),
		 "type=vbus-ipc,id=7,service=chat,qsock=%s,peer=g2,peer_qsock=%s,count=64,bufsize=1024",
		 e->qs[N], e->qs[S]);
	assert_int_equal(fg_add_dev(&e->fg, spec, err, sizeof(err)), 0);
	e->s[N].qemu = e->s[S].qemu = -1;
	qemu_connect(e, N);
	qemu_connect(e, S);
	return e;
}

static void down(struct env *e)
{
	qside_close(&e->s[N]);
	qside_close(&e->s[S]);
	fg_fini(&e->fg);
	unlink(e->qs[N]);
	unlink(e->qs[S]);
	rmdir(e->dir);
	free(e);
}

static void stats_has(struct env *e, const char *want)
{
	struct hostd_guest *gs[] = { &e->fg.g };
	struct hostd_buf out = { 0 };

	daemon_ctl_exec("stats g1 7", gs, 1, &out);
	assert_non_null(out.s);
	if (!strstr(out.s, want))
		fail_msg("stats: '%s' lacks '%s'", out.s, want);
	hostd_buf_free(&out);
}

/* ---- cases ------------------------------------------------------------------- */

/*
 * Each QEMU gets its own peer id and the one region; a guest's DATA
 * doorbell IS the other guest's DATA interrupt (no run of vbus-hostd's
 * loop in between), its CTRL doorbell is vbus-hostd's.
 */
static void test_link_doorbells_cross_wired(void **state)
{
	struct env *e = up();
	__u64 v;

	(void)state;
	memcpy((char *)e->s[N].shm + VBUS_IPC_HDR_SIZE, "north", 6);
	assert_string_equal((char *)e->s[S].shm + VBUS_IPC_HDR_SIZE, "north");
	kick(e->s[N].peer0[VBUS_IPC_VEC_DATA]);
	assert_true(readable(e->s[S].own[VBUS_IPC_VEC_DATA]));
	assert_int_equal(read(e->s[S].own[VBUS_IPC_VEC_DATA], &v, 8), 8);
	kick(e->s[S].peer0[VBUS_IPC_VEC_DATA]);
	assert_true(readable(e->s[N].own[VBUS_IPC_VEC_DATA]));
	assert_false(readable(e->s[S].own[VBUS_IPC_VEC_DATA]));
	kick(e->s[N].peer0[VBUS_IPC_VEC_CTRL]);
	assert_false(readable(e->s[S].own[VBUS_IPC_VEC_CTRL]));
	assert_false(readable(e->s[S].own[VBUS_IPC_VEC_DATA]));
	down(e);
}

/* No session until both guests have the device open. */
static void test_link_waits_for_both(void **state)
{
	struct env *e = up();

	(void)state;
	side_open(e, N);
	assert_false(session_up(e));
	assert_int_equal(e->s[N].shm->state, VBUS_IPC_STATE_IDLE);
	side_open(e, S);
	assert_true(session_up(e));
	/* both were told: CTRL interrupt on each side */
	assert_true(readable(e->s[N].own[VBUS_IPC_VEC_CTRL]));
	assert_true(readable(e->s[S].own[VBUS_IPC_VEC_CTRL]));
	stats_has(e, " peer=g2 ");
	down(e);
}

static void test_link_exchange_both_ways(void **state)
{
	struct env *e = up();
	struct ioq_ipc *ipc[2];
	struct ioq_ipc_stats st;

	(void)state;
	both_attach(e, ipc);
	assert_int_equal(exchange(ipc, 20000), 0);
	ioq_ipc_stats(ipc[S], &st);
	assert_int_equal(st.received, 20000);
	assert_int_equal(st.sent, 20000);
	assert_int_equal(st.faults, 0);
	ioq_ipc_close(ipc[N]);
	ioq_ipc_close(ipc[S]);
	down(e);
}

/*
 * The south guest's QEMU dies mid-session: the north side is told (CTRL)
 * and gets -EPIPE; when the south guest comes back (a new QEMU on its
 * socket) and both open again, a new session works, and the north QEMU's
 * old doorbell reaches the new south QEMU.
 */
static void test_link_peer_killed_then_back(void **state)
{
	struct env *e = up();
	struct ioq_ipc *ipc[2];
	__u64 v;

	(void)state;
	both_attach(e, ipc);
	assert_int_equal(exchange(ipc, 100), 0);
	assert_int_equal(read(e->s[N].own[VBUS_IPC_VEC_CTRL], &v, 8), 8);
	qside_close(&e->s[S]);
	ioq_ipc_close(ipc[S]);
	fg_pump(&e->fg);
	assert_int_equal(e->s[N].shm->state, VBUS_IPC_STATE_ENDED);
	assert_true(readable(e->s[N].own[VBUS_IPC_VEC_CTRL]));
	assert_int_equal(ioq_ipc_send(ipc[N], "x", 1, 0), -EPIPE);
	assert_int_equal(ioq_ipc_recv(ipc[N], &v, sizeof(v)), -EPIPE);
	ioq_ipc_close(ipc[N]);
	side_close(e, N);
	stats_has(e, " peer_qemu=0 ");

	qemu_connect(e, S);
	kick(e->s[N].peer0[VBUS_IPC_VEC_DATA]);
	assert_true(readable(e->s[S].own[VBUS_IPC_VEC_DATA]));
	both_attach(e, ipc);
	assert_int_equal(exchange(ipc, 1000), 0);
	stats_has(e, " sessions=2 ");
	ioq_ipc_close(ipc[N]);
	ioq_ipc_close(ipc[S]);
	down(e);
}

/* A process closing its end ends the session for the other side too. */
static void test_link_close_ends_for_peer(void **state)
{
	struct env *e = up();
	struct ioq_ipc *ipc[2];
	char b[8];

	(void)state;
	both_attach(e, ipc);
	ioq_ipc_close(ipc[N]);
	side_close(e, N);
	assert_int_equal(ioq_ipc_recv(ipc[S], b, sizeof(b)), -EPIPE);
	/* the south's open is not served again: it must reopen */
	side_open(e, N);
	assert_false(session_up(e));
	ioq_ipc_close(ipc[S]);
	side_close(e, S);
	side_open(e, S);
	assert_true(session_up(e));
	down(e);
}

/*
 * Only the two QEMUs the configuration names: a third connection on
 * either socket is refused (EOF, no region, no eventfd) and counted; the
 * session goes on.
 */
static void test_link_third_qemu_refused(void **state)
{
	struct env *e = up();
	struct ioq_ipc *ipc[2];
	char b;

	(void)state;
	both_attach(e, ipc);
	for (int i = 0; i < 2; i++) {
		int fd = connect_to(e->qs[i]);

		fg_pump(&e->fg);
		assert_int_equal(recv(fd, &b, 1, 0), 0);
		close(fd);
	}
	stats_has(e, " refused=2");
	assert_int_equal(exchange(ipc, 100), 0);
	ioq_ipc_close(ipc[N]);
	ioq_ipc_close(ipc[S]);
	down(e);
}

/*
 * A process of another uid (and none of the daemon's groups) on a link's
 * socket is refused before the handshake: it gets neither the region nor
 * the other guest's interrupt, and the named guest's QEMU still connects.
 */
static void test_link_stranger_refused(void **state)
{
	struct env *e = up();

	(void)state;
	if (geteuid() != 0) {
		fprintf(stderr, "[test] not root: cannot play another uid\n");
		down(e);
		skip();
	}
	qside_close(&e->s[S]);
	fg_pump(&e->fg);
	stranger_refused(&e->fg, e->dir, e->qs[S]);
	stats_has(e, " refused=1");
	qemu_connect(e, S);
	down(e);
}

/*
 * The south guest posts a descriptor outside the area: the north end
 * faults (-EIO) and closes, the south end then sees -EPIPE; vbus-hostd
 * stays up and a fresh session works.
 */
static void test_link_garbage_faults_channel(void **state)
{
	struct env *e = up();
	struct ioq_ipc *ipc[2];
	struct ioq_ring_desc bad = { 0 };
	struct ioq *q;
	char b[8];

	(void)state;
	both_attach(e, ipc);
	q = ioq_ipc_ioq(ipc[S], 1);
	bad.ptr = e->s[S].shm->layout.area_len - 8;
	bad.len = 64;	/* runs past the end of the area */
	assert_int_equal(ioq_push_bulk(q, &bad, 1, 0), 1);
	assert_int_equal(ioq_ipc_recv(ipc[N], b, sizeof(b)), -EIO);
	assert_int_equal(ioq_ipc_send(ipc[N], "x", 1, 0), -EIO);
	ioq_ipc_close(ipc[N]);
	side_close(e, N);
	assert_int_equal(ioq_ipc_recv(ipc[S], b, sizeof(b)), -EPIPE);
	ioq_ipc_close(ipc[S]);
	side_close(e, S);
	both_attach(e, ipc);
	assert_int_equal(exchange(ipc, 100), 0);
	ioq_ipc_close(ipc[N]);
	ioq_ipc_close(ipc[S]);
	down(e);
}

/* ---- the vchan-style calls over a link (ioq_vchan(3)) ---------------------- */

static void vchan_pair(struct env *e, struct ioq_vchan **v)
{
	struct ioq_ipc *ipc[2];

	both_attach(e, ipc);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ioq_vchan_attach_ipc(&v[i], ipc[i]), 0);
		ioq_vchan_set_blocking(v[i], 0);
	}
}

static bool select_ready(struct ioq_vchan *v)
{
	return readable(ioq_vchan_fd_for_select(v));
}

/* Packets: @n checked messages north -> south, echoed and checked back. */
static void test_vchan_packets_both_ways(void **state)
{
	struct env *e = up();
	struct ioq_vchan *v[2];
	unsigned char buf[1024];
	unsigned long sent = 0, echoed = 0, got = 0, idle = 0, n = 10000;
	long r;

	(void)state;
	vchan_pair(e, v);
	assert_int_equal(ioq_vchan_max_packet(v[N]), sizeof(buf));
	while (got < n && idle < 1000) {
		bool moved = false;

		if (sent < n && sent - got < 32) {
			__u32 len = ipc_msg_len(sent, sizeof(buf));

			ipc_msg_fill(buf, sent, len);
			r = ioq_vchan_send(v[N], buf, len);
			assert_true(r == 0 || r == (long)len);
			sent += r > 0;
			moved |= r > 0;
		}
		while ((r = ioq_vchan_recv(v[S], buf, sizeof(buf))) > 0) {
			assert_int_equal(ipc_msg_check(buf, r, echoed), 0);
			assert_int_equal(ioq_vchan_send(v[S], buf, (size_t)r), r);
			echoed++;
			moved = true;
		}
		assert_int_equal(r, 0);
		while ((r = ioq_vchan_recv(v[N], buf, sizeof(buf))) > 0) {
			assert_int_equal(ipc_msg_check(buf, r, got), 0);
			got++;
			moved = true;
		}
		assert_int_equal(r, 0);
		idle = moved ? 0 : idle + 1;
	}
	assert_int_equal(got, n);
	ioq_vchan_close(v[N]);
	ioq_vchan_close(v[S]);
	down(e);
}

static unsigned char stream_byte(size_t i)
{
	return (unsigned char)((i * 31 + 7) % 251);
}

/*
 * The byte stream, both ways at once: writes and reads of sizes that do
 * not match each other nor the buffer size; every byte checked in order.
 */
static void test_vchan_stream_both_ways(void **state)
{
	struct env *e = up();
	struct ioq_vchan *v[2];
	unsigned char buf[3000];
	size_t total = 300000, wpos[2] = { 0 }, rpos[2] = { 0 }, step = 0;
	unsigned long idle = 0;

	(void)state;
	vchan_pair(e, v);
	while ((rpos[0] < total || rpos[1] < total) && idle < 1000) {
		bool moved = false;

		for (int i = 0; i < 2; i++) {
			size_t wn = 1 + (step * 977) % sizeof(buf);
			size_t rn = 1 + (step * 1409) % sizeof(buf);
			long r;

			step++;
			if (wn > total - wpos[i])
				wn = total - wpos[i];
			for (size_t k = 0; k < wn; k++)
				buf[k] = stream_byte(wpos[i] + k);
			r = wn ? ioq_vchan_write(v[i], buf, wn) : 0;
			assert_true(r >= 0 && (size_t)r <= wn);
			wpos[i] += (size_t)r;
			moved |= r > 0;
			r = ioq_vchan_read(v[!i], buf, rn);
			assert_true(r >= 0 && (size_t)r <= rn);
			for (long k = 0; k < r; k++)
				assert_int_equal(buf[k], stream_byte(rpos[i] + (size_t)k));
			rpos[i] += (size_t)r;
			moved |= r > 0;
		}
		idle = moved ? 0 : idle + 1;
	}
	assert_int_equal(rpos[0], total);
	assert_int_equal(rpos[1], total);
	ioq_vchan_close(v[N]);
	ioq_vchan_close(v[S]);
	down(e);
}

/*
 * data_ready, buffer_space and the select descriptor say what a call
 * would find: readable on a packet, not after it was taken.
 */
static void test_vchan_ready_space_select(void **state)
{
	struct env *e = up();
	struct ioq_vchan *v[2];
	char buf[1024];
	long space;

	(void)state;
	vchan_pair(e, v);
	space = ioq_vchan_buffer_space(v[N]);
	assert_int_equal(space, 64 * 1024);
	assert_false(select_ready(v[S]));
	assert_int_equal(ioq_vchan_data_ready(v[S]), 0);
	assert_int_equal(ioq_vchan_send(v[N], "0123456789", 10), 10);
	assert_true(select_ready(v[S]));
	assert_int_equal(ioq_vchan_data_ready(v[S]), 10);
	assert_int_equal(ioq_vchan_buffer_space(v[N]), space - 1024);
	assert_int_equal(ioq_vchan_wait(v[S]), 0);
	assert_int_equal(ioq_vchan_read(v[S], buf, 4), 4);
	assert_int_equal(ioq_vchan_data_ready(v[S]), 6);
	assert_true(select_ready(v[S]));	/* 6 bytes left */
	assert_int_equal(ioq_vchan_read(v[S], buf, sizeof(buf)), 6);
	assert_false(select_ready(v[S]));
	assert_int_equal(ioq_vchan_buffer_space(v[N]), space);
	assert_int_equal(ioq_vchan_send(v[N], buf, sizeof(buf) + 1), -EMSGSIZE);
	assert_true(ioq_vchan_is_open(v[N]) && ioq_vchan_is_open(v[S]));
	ioq_vchan_close(v[N]);
	ioq_vchan_close(v[S]);
	down(e);
}

/* The peer guest is gone: is_open 0, every call says -EPIPE. */
static void test_vchan_peer_gone(void **state)
{
	struct env *e = up();
	struct ioq_vchan *v[2];
	char buf[8];

	(void)state;
	vchan_pair(e, v);
	ioq_vchan_close(v[S]);
	qside_close(&e->s[S]);
	fg_pump(&e->fg);
	assert_false(ioq_vchan_is_open(v[N]));
	assert_int_equal(ioq_vchan_read(v[N], buf, sizeof(buf)), -EPIPE);
	assert_int_equal(ioq_vchan_write(v[N], buf, sizeof(buf)), -EPIPE);
	assert_int_equal(ioq_vchan_data_ready(v[N]), -EPIPE);
	assert_int_equal(ioq_vchan_buffer_space(v[N]), -EPIPE);
	assert_int_equal(ioq_vchan_wait(v[N]), -EPIPE);
	ioq_vchan_close(v[N]);
	down(e);
}

static void test_link_bad_params(void **state)
{
	static const char *const bad[][2] = {
		{ "type=vbus-ipc,id=5,service=e,qsock=/tmp/a.sock,peer=g2",
		  "peer= (the other guest) and peer_qsock= (its QEMU's ivshmem chardev) go together" },
		{ "type=vbus-ipc,id=5,service=e,qsock=/tmp/a.sock,peer_qsock=/tmp/b.sock",
		  "peer= (the other guest) and peer_qsock= (its QEMU's ivshmem chardev) go together" },
		{ "type=vbus-ipc,id=5,service=e,qsock=/tmp/a.sock,peer=g/2,peer_qsock=/tmp/b.sock",
		  "peer=g/2: not a guest name" },
		{ "type=vbus-ipc,id=5,service=e,sock=/tmp/c.sock,qsock=/tmp/a.sock,peer=g2,peer_qsock=/tmp/b.sock",
		  "peer= links two guests: sock= and peer_uid= (a host process) do not apply" },
		{ "type=vbus-ipc,id=5,service=e,peer=g2,peer_qsock=/tmp/b.sock",
		  "qsock= (this guest's QEMU's ivshmem chardev) is required" },
		{ "type=vbus-ipc,id=5,service=e,qsock=/tmp/a.sock,peer=g2,peer_qsock=/tmp/a.sock",
		  "qsock= and peer_qsock= must differ" },
	};
	struct fg f;
	char err[256];

	(void)state;
	fg_init(&f, "g1");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_not_equal(fg_add_dev(&f, bad[i][0], err, sizeof(err)), 0);
		if (!strstr(err, bad[i][1]))
			fail_msg("%s: '%s' lacks '%s'", bad[i][0], err, bad[i][1]);
	}
	fg_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_link_doorbells_cross_wired),
		cmocka_unit_test(test_link_waits_for_both),
		cmocka_unit_test(test_link_exchange_both_ways),
		cmocka_unit_test(test_link_peer_killed_then_back),
		cmocka_unit_test(test_link_close_ends_for_peer),
		cmocka_unit_test(test_link_third_qemu_refused),
		cmocka_unit_test(test_link_stranger_refused),
		cmocka_unit_test(test_link_garbage_faults_channel),
		cmocka_unit_test(test_link_bad_params),
		cmocka_unit_test(test_vchan_packets_both_ways),
		cmocka_unit_test(test_vchan_stream_both_ways),
		cmocka_unit_test(test_vchan_ready_space_select),
		cmocka_unit_test(test_vchan_peer_gone),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
