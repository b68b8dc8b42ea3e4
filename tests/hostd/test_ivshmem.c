// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ivshmem server side of vbus-hostd against a fake QEMU: a unix socket
 * client that receives the messages and checks their order, values and
 * fds, then uses them the way QEMU and the guest would (BAR2 mapping,
 * doorbell eventfds, MSI-X eventfds) with the guest's thread running.
 * Also: a second client is refused, and a disconnect tears the guest
 * down and lets a new QEMU in with a fresh BAR2.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <fcntl.h>
#include <endian.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <grp.h>
#include <time.h>
#include <unistd.h>
#include "daemon.h"

/* for what must happen; a loaded CI machine stalls us for seconds */
#define TIMEOUT_MS 10000

static char dir[] = "/tmp/vbus-hostd-test-XXXXXX";

struct fake_qemu {
	int sock;
	int bar2_fd;
	int host_fd[2];		/* doorbell targets */
	int msix_fd[2];
	struct vbus_pci_shm *shm;
};

static int connect_sock(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	strcpy(sa.sun_path, path);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* One message the way QEMU's ivshmem reads it: 8 bytes, maybe one fd. */
static int recv_msg(int sock, __s64 *val, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	__u64 le;
	struct iovec iov = { .iov_base = &le, .iov_len = sizeof(le) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	ssize_t n = recvmsg(sock, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC);

	if (n != sizeof(le))
		return -1;
	*val = (__s64)le64toh(le);
	*fd = -1;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			/* exactly one fd per message */
			if (c->cmsg_len != CMSG_LEN(sizeof(int)))
				return -2;
			memcpy(fd, CMSG_DATA(c), sizeof(int));
		}
	}
	return 0;
}

static void qemu_connect(struct fake_qemu *q, const char *path)
{
	struct stat st;
	__s64 v;
	int fd, i;

	memset(q, 0, sizeof(*q));
	q->sock = connect_sock(path);
	/* 0: protocol version, no fd */
	assert_int_equal(recv_msg(q->sock, &v, &fd), 0);
	assert_true(v == 0);
	assert_int_equal(fd, -1);
	/* our peer id, no fd */
	assert_int_equal(recv_msg(q->sock, &v, &fd), 0);
	assert_true(v == 1);
	assert_int_equal(fd, -1);
	/* -1 + the shared memory, before any eventfd */
	assert_int_equal(recv_msg(q->sock, &v, &fd), 0);
	assert_true(v == -1);
	assert_true(fd >= 0);
	q->bar2_fd = fd;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, VBUS_PCI_SHM_SIZE);
	/* the host peer's vectors, then our own */
	for (i = 0; i < 2; i++) {
		assert_int_equal(recv_msg(q->sock, &v, &fd), 0);
		assert_true(v == 0);
		assert_true(fd >= 0);
		q->host_fd[i] = fd;
	}
	for (i = 0; i < 2; i++) {
		assert_int_equal(recv_msg(q->sock, &v, &fd), 0);
		assert_true(v == 1);
		assert_true(fd >= 0);
		/* QEMU does this to the eventfds it receives */
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		q->msix_fd[i] = fd;
	}
	/* nothing else follows */
	{
		struct pollfd p = { .fd = q->sock, .events = POLLIN };

		assert_int_equal(poll(&p, 1, 200), 0);
	}
	q->shm = mmap(NULL, VBUS_PCI_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		      q->bar2_fd, 0);
	assert_true(q->shm != MAP_FAILED);
	assert_true(q->shm->magic == VBUS_PCI_ABI_MAGIC);
	assert_true(q->shm->version == VBUS_PCI_ABI_VERSION);
	assert_true(q->shm->size == VBUS_PCI_SHM_SIZE);
	assert_true(q->shm->host_peer == 0);
	/* the size is sealed: nobody can pull it from under the daemon */
	assert_true(ftruncate(q->bar2_fd, 0) < 0);
}

static void qemu_close(struct fake_qemu *q)
{
	int i;

	munmap(q->shm, VBUS_PCI_SHM_SIZE);
	close(q->bar2_fd);
	for (i = 0; i < 2; i++) {
		close(q->host_fd[i]);
		close(q->msix_fd[i]);
	}
	close(q->sock);
}

/* The guest's side of a hypercall, through the real eventfds. */
static int guest_hc(struct fake_qemu *q, unsigned char *ram, __u32 vector,
		    void *data, __u32 len)
{
	struct pollfd p = { .fd = q->msix_fd[VBUS_PCI_MSIX_HC], .events = POLLIN };
	__u32 seq = __atomic_load_n(&q->shm->hc_done, __ATOMIC_ACQUIRE) + 1;
	unsigned long long end = hostd_now_ns() + TIMEOUT_MS * 1000000ull;
	__u64 one = 1, v;

	memcpy(ram + 0x1000, data, len);
	__atomic_store_n(&q->shm->hc.vector, vector, __ATOMIC_RELAXED);
	__atomic_store_n(&q->shm->hc.len, len, __ATOMIC_RELAXED);
	__atomic_store_n(&q->shm->hc.datap, 0x1000, __ATOMIC_RELAXED);
	/* release: the request before its number */
	__atomic_store_n(&q->shm->hc_seq, seq, __ATOMIC_RELEASE);
	/* Doorbell (peer 0, vector HC): QEMU writes the host's eventfd */
	assert_int_equal(write(q->host_fd[VBUS_PCI_DB_HC], &one, 8), 8);
	while (__atomic_load_n(&q->shm->hc_done, __ATOMIC_ACQUIRE) != seq &&
	       hostd_now_ns() < end)
		poll(&p, 1, 100);
	assert_true(__atomic_load_n(&q->shm->hc_done, __ATOMIC_ACQUIRE) == seq);
	/*
	 * The MSI-X vector fires: hostd stores hc_done before it writes the
	 * eventfd (hc.c, hc_answer), so wait for it. O_NONBLOCK: a read
	 * without the wait could be EAGAIN.
	 */
	assert_int_equal(poll(&p, 1, TIMEOUT_MS), 1);
	assert_int_equal(read(q->msix_fd[VBUS_PCI_MSIX_HC], &v, 8), 8);
	memcpy(data, ram + 0x1000, len);
	return __atomic_load_n(&q->shm->hc_result, __ATOMIC_RELAXED);
}

static bool wait_state(struct hostd_guest **gs, const char *want)
{
	unsigned long long end = hostd_now_ns() + TIMEOUT_MS * 1000000ull;
	bool ok;

	do {
		struct hostd_buf out = { 0 };

		daemon_ctl_exec("list", gs, 1, &out);
		ok = out.s && strstr(out.s, want);
		hostd_buf_free(&out);
		if (!ok)
			usleep(20000);
	} while (!ok && hostd_now_ns() < end);
	return ok;
}

static void test_protocol(void **state)
{
	struct hostd_guest_cfg cfg = { .name = "q", .size = 4 << 20 };
	struct hostd_guest *g = calloc(1, sizeof(*g)), *gs[1] = { g };
	struct vbus_pci_negotiate n = { VBUS_PCI_ABI_MAGIC, VBUS_PCI_HC_VERSION, 7 };
	struct fake_qemu q, q2;
	struct hostd_buf out = { 0 };
	unsigned char *ram;
	char err[256];
	int ramfd, extra;
	__s64 v;

	(void)state;
	snprintf(cfg.sock, sizeof(cfg.sock), "%s/q.sock", dir);
	snprintf(cfg.mem, sizeof(cfg.mem), "%s/q.ram", dir);
	assert_int_equal(hostd_guest_init(g, &cfg, -1, err, sizeof(err)), 0);
	assert_int_equal(hostd_guest_listen(g, err, sizeof(err)), 0);
	assert_int_equal(hostd_bus_add(&g->bus, "vbus-test", 1, NULL, err,
				       sizeof(err)), 0);
	assert_int_equal(hostd_guest_start(g), 0);

	/* the RAM file exists, sized, before any QEMU */
	ramfd = open(cfg.mem, O_RDWR);
	assert_true(ramfd >= 0);
	ram = mmap(NULL, cfg.size, PROT_READ | PROT_WRITE, MAP_SHARED, ramfd, 0);
	assert_true(ram != MAP_FAILED);

	qemu_connect(&q, cfg.sock);
	assert_true(wait_state(gs, "connected"));

	/* a second QEMU on the same socket is turned away */
	extra = connect_sock(cfg.sock);
	{
		int fd;

		assert_int_equal(recv_msg(extra, &v, &fd), -1);
		close(extra);
	}

	assert_int_equal(guest_hc(&q, ram, VBUS_PCI_HC_NEGOTIATE, &n, sizeof(n)), 0);
	assert_true(n.capabilities == 0);
	n.magic = 1;
	assert_int_equal(guest_hc(&q, ram, VBUS_PCI_HC_NEGOTIATE, &n, sizeof(n)), -EPROTO);

	/* the control path reaches into the guest's thread */
	daemon_ctl_exec("stats q --json", gs, 1, &out);
	assert_non_null(strstr(out.s, "\"hypercalls\": 2"));
	hostd_buf_free(&out);
	daemon_ctl_exec("add q type=vbus-test,id=9", gs, 1, &out);
	assert_non_null(strstr(out.s, "OK"));
	hostd_buf_free(&out);
	daemon_ctl_exec("drop q 9", gs, 1, &out);
	assert_non_null(strstr(out.s, "OK"));
	hostd_buf_free(&out);

	/* QEMU exits; the guest goes back to waiting and takes a new one */
	qemu_close(&q);
	assert_true(wait_state(gs, "waiting"));
	qemu_connect(&q2, cfg.sock);
	assert_true(q2.shm->hc_done == 0);	/* a fresh BAR2 */
	n.magic = VBUS_PCI_ABI_MAGIC;
	assert_int_equal(guest_hc(&q2, ram, VBUS_PCI_HC_NEGOTIATE, &n, sizeof(n)), 0);
	qemu_close(&q2);

	munmap(ram, cfg.size);
	close(ramfd);
	hostd_guest_fini(g);
	free(g);
	/* the daemon's socket is gone, the RAM file stays for QEMU */
	assert_int_equal(access(cfg.sock, F_OK), -1);
	unlink(cfg.mem);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Holds the guest's thread until *arg is set: a stuck loop. */
static int hold_loop(struct hostd_guest *g, void *arg)
{
	volatile int *go = arg;

	(void)g;
	while (!__atomic_load_n(go, __ATOMIC_ACQUIRE))
		usleep(1000);
	return 0;
}

static void *stuck_thread(void *arg)
{
	void **a = arg;

	hostd_guest_call(a[0], hold_loop, a[1]);
	return NULL;
}

/*
 * The control path never waits without limit on a guest: with the
 * guest's thread stuck, ctl answers "busy" within about a second (list:
 * the guest's state is busy) and nothing of the request runs later
 * (5e8fef9 waited for as long as the thread was stuck).
 */
static void test_ctl_busy_guest(void **state)
{
	struct hostd_guest_cfg cfg = { .name = "b", .size = 4 << 20 };
	struct hostd_guest *g = calloc(1, sizeof(*g)), *gs[1] = { g };
	struct hostd_buf out = { 0 };
	static volatile int go;
	void *args[2] = { g, (void *)&go };
	char err[256];
	pthread_t t;
	double t0;

	(void)state;
	snprintf(cfg.sock, sizeof(cfg.sock), "%s/b.sock", dir);
	snprintf(cfg.mem, sizeof(cfg.mem), "%s/b.ram", dir);
	assert_int_equal(hostd_guest_init(g, &cfg, -1, err, sizeof(err)), 0);
	assert_int_equal(hostd_guest_start(g), 0);
	go = 0;
	assert_int_equal(pthread_create(&t, NULL, stuck_thread, args), 0);
	usleep(100000);		/* the loop takes hold_loop first */

	t0 = now_s();
	daemon_ctl_exec("add b type=vbus-test,id=9", gs, 1, &out);
	assert_true(now_s() - t0 < 10);
	assert_non_null(strstr(out.s, "ERR guest b is busy"));
	hostd_buf_free(&out);
	daemon_ctl_exec("list", gs, 1, &out);
	assert_non_null(strstr(out.s, "guest=b state=busy"));
	hostd_buf_free(&out);

	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	/* the abandoned add never ran; the next one does */
	daemon_ctl_exec("list", gs, 1, &out);
	assert_null(strstr(out.s, "id=9"));
	hostd_buf_free(&out);
	daemon_ctl_exec("add b type=vbus-test,id=9", gs, 1, &out);
	assert_non_null(strstr(out.s, "OK"));
	hostd_buf_free(&out);
	hostd_guest_fini(g);
	free(g);
	unlink(cfg.mem);
}

/* A device type whose create waits for slow_go: a disk's open that hangs. */
static int slow_go;

static int slow_create(struct hostd_dev *dev, const struct hostd_params *p)
{
	(void)dev;
	(void)p;
	while (!__atomic_load_n(&slow_go, __ATOMIC_ACQUIRE))
		usleep(1000);
	return 0;
}

static void slow_destroy(struct hostd_dev *dev)
{
	(void)dev;
}

static const struct hostd_dev_type slow_type = {
	.name = "test-slow",
	.create = slow_create,
	.destroy = slow_destroy,
};

HOSTD_DEV_TYPE(slow_type);

/*
 * An add the guest's thread took but did not finish (its device's create
 * hangs) is answered "busy ... did not finish" within about a second,
 * ctl goes on serving (list: state=busy), and the add completes on the
 * guest's thread later (the device is there); the request's memory went
 * with it (ASan, TSan). 3dc2f00 waited for it without limit.
 */
static void test_ctl_left_request(void **state)
{
	struct hostd_guest_cfg cfg = { .name = "s", .size = 4 << 20 };
	struct hostd_guest *g = calloc(1, sizeof(*g)), *gs[1] = { g };
	struct hostd_buf out = { 0 };
	char err[256];
	double t0;

	(void)state;
	snprintf(cfg.sock, sizeof(cfg.sock), "%s/s.sock", dir);
	snprintf(cfg.mem, sizeof(cfg.mem), "%s/s.ram", dir);
	assert_int_equal(hostd_guest_init(g, &cfg, -1, err, sizeof(err)), 0);
	assert_int_equal(hostd_guest_start(g), 0);
	__atomic_store_n(&slow_go, 0, __ATOMIC_RELEASE);

	t0 = now_s();
	daemon_ctl_exec("add s type=test-slow,id=3", gs, 1, &out);
	assert_true(now_s() - t0 < 10);
	assert_non_null(strstr(out.s, "ERR guest s is busy: the request did not finish"));
	hostd_buf_free(&out);
	daemon_ctl_exec("list", gs, 1, &out);
	assert_non_null(strstr(out.s, "guest=s state=busy"));
	hostd_buf_free(&out);

	__atomic_store_n(&slow_go, 1, __ATOMIC_RELEASE);
	assert_true(wait_state(gs, "id=3"));	/* it finished there */
	hostd_guest_fini(g);
	free(g);
	unlink(cfg.mem);
}

/*
 * A process of @uid, @gid (and @group as its one supplementary group)
 * connects to @path and reports on @report: 'R' when the daemon closes on
 * it without a message, 'S' when the handshake comes. It keeps its
 * connection until @hold's write end closes.
 */
static pid_t stranger(const char *path, uid_t uid, gid_t gid, gid_t group,
		      int report, const int hold[2])
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = TIMEOUT_MS / 1000 };
	pid_t pid = fork();
	char c = 'E', buf[8];
	ssize_t n;
	int fd;

	if (pid)
		return pid;
	close(hold[1]);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (setgroups(1, &group) || setgid(gid) || setuid(uid))
		_exit(2);
	if (fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		n = recv(fd, buf, sizeof(buf), MSG_WAITALL);
		c = n == 0 ? 'R' : n > 0 ? 'S' : 'E';
	}
	if (write(report, &c, 1) != 1)
		_exit(3);
	while (read(hold[0], buf, 1) > 0)
		;
	_exit(0);
}

/* What the stranger of @uid/@gid/@group got, with QEMU let in after it. */
static char stranger_then_qemu(struct hostd_guest_cfg *cfg, uid_t uid,
			       gid_t gid, gid_t group, bool qemu_served)
{
	struct hostd_guest *g = calloc(1, sizeof(*g)), *gs[1] = { g };
	struct fake_qemu q;
	int rep[2], hold[2], st;
	char err[256], c = 0;
	pid_t pid;

	assert_int_equal(hostd_guest_init(g, cfg, -1, err, sizeof(err)), 0);
	assert_int_equal(hostd_guest_listen(g, err, sizeof(err)), 0);
	assert_int_equal(hostd_guest_start(g), 0);
	/* the mode lets anyone connect: the check must be the daemon's */
	assert_int_equal(chmod(cfg->sock, 0666), 0);
	assert_int_equal(pipe(rep), 0);
	assert_int_equal(pipe(hold), 0);
	pid = stranger(cfg->sock, uid, gid, group, rep[1], hold);
	assert_true(pid > 0);
	assert_int_equal(read(rep[0], &c, 1), 1);
	if (qemu_served) {
		/* the stranger still holds its connection: QEMU is served */
		qemu_connect(&q, cfg->sock);
		assert_true(wait_state(gs, "connected"));
		qemu_close(&q);
	}
	close(hold[1]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	close(hold[0]);
	close(rep[0]);
	close(rep[1]);
	hostd_guest_fini(g);
	free(g);
	unlink(cfg->mem);
	return c;
}

/*
 * Only the QEMU user connects to a guest's socket: a process of another
 * uid is closed on without a message and without taking the guest's one
 * connection, and QEMU, connecting after it, is served (5e8fef9 served
 * the first to connect, and refused QEMU). Without qemu_uid= and
 * qemu_gid=, a process in the daemon's group may (the unit's sockets are
 * the group's); qemu_uid= lets a uid in, qemu_gid= a process with that
 * group, primary or supplementary.
 */
static void test_qemu_peer(void **state)
{
	struct hostd_guest_cfg cfg = { .name = "p", .size = 4 << 20 };

	(void)state;
	if (geteuid()) {
		fprintf(stderr, "[test] not root: no other uid to connect as\n");
		skip();
	}
	snprintf(cfg.sock, sizeof(cfg.sock), "%s/p.sock", dir);
	snprintf(cfg.mem, sizeof(cfg.mem), "%s/p.ram", dir);
	assert_int_equal(chmod(dir, 0711), 0);
	assert_int_equal(stranger_then_qemu(&cfg, 65534, 65534, 65534, true),
			 'R');
	/* neither given: the daemon's own group (root's, here) may */
	assert_int_equal(stranger_then_qemu(&cfg, 65534, 65534, getegid(),
					    false), 'S');
	cfg.qemu.uid_set = true;
	cfg.qemu.uid = 65533;
	assert_int_equal(stranger_then_qemu(&cfg, 65534, 65534, 65534, true),
			 'R');
	assert_int_equal(stranger_then_qemu(&cfg, 65533, 65534, 65534, false),
			 'S');
	cfg.qemu.uid_set = false;
	cfg.qemu.gid_set = true;
	cfg.qemu.gid = 65532;
	assert_int_equal(stranger_then_qemu(&cfg, 65534, 65532, 65534, false),
			 'S');
	assert_int_equal(stranger_then_qemu(&cfg, 65534, 65534, 65532, false),
			 'S');
	assert_int_equal(stranger_then_qemu(&cfg, 65534, 65534, 65534, true),
			 'R');
	assert_int_equal(chmod(dir, 0700), 0);
}

static void test_send_framing(void **state)
{
	int sv[2], fd;
	__s64 v;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(hostd_ivshmem_send(sv[0], -1, sv[0]), 0);
	assert_int_equal(hostd_ivshmem_send(sv[0], 0x123456789abcll, -1), 0);
	assert_int_equal(recv_msg(sv[1], &v, &fd), 0);
	assert_true(v == -1);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(recv_msg(sv[1], &v, &fd), 0);
	assert_true(v == 0x123456789abcll);
	assert_int_equal(fd, -1);
	close(sv[1]);
	/* a peer that went away: an error, no SIGPIPE */
	assert_true(hostd_ivshmem_send(sv[0], 0, -1) < 0);
	close(sv[0]);
}

static void test_socket_in_use(void **state)
{
	char path[256], err[256];
	int a, b;

	(void)state;
	snprintf(path, sizeof(path), "%s/busy.sock", dir);
	a = hostd_sock_listen(path, err, sizeof(err));
	assert_true(a >= 0);
	b = hostd_sock_listen(path, err, sizeof(err));
	assert_true(b < 0);
	assert_non_null(strstr(err, "in use"));
	close(a);
	/* now stale: taken over */
	b = hostd_sock_listen(path, err, sizeof(err));
	assert_true(b >= 0);
	close(b);
	unlink(path);
	/* not a socket: refused */
	close(open(path, O_CREAT | O_WRONLY, 0600));
	b = hostd_sock_listen(path, err, sizeof(err));
	assert_true(b < 0);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_framing),
		cmocka_unit_test(test_socket_in_use),
		cmocka_unit_test(test_protocol),
		cmocka_unit_test(test_ctl_busy_guest),
		cmocka_unit_test(test_ctl_left_request),
		cmocka_unit_test(test_qemu_peer),
	};
	int ret;

	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(dir))
		return 1;
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return ret;
}
