// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One fake guest (QEMU's ivshmem-doorbell side and the guest's bridge)
 * against a real vbus-hostd, for bench/hostd-fairness.sh.
 *
 *   hostd-fairness-guest SOCK RAMFILE
 *
 * Connects to SOCK like QEMU (docs/transport.md's handshake), maps RAMFILE
 * (a small guest: all of it below 4 GiB, gpa == file offset) and BAR2,
 * negotiates, registers the bus, opens vbus-test device 1 and gives it a
 * ring. Then it reads commands on stdin, one a line, and answers each on
 * stdout:
 *   echo SEC      FUNC_ECHO round trips for SEC s: "echo N RATE" (per s)
 *   doorbell      start storming DB_SIGNAL doorbells (no bit set): "ok"
 *   pending       start storming the ring's signal (pending, dirty,
 *                 its sigpending bit, DB_SIGNAL): "ok"
 *   idle          stop storming: "ok"
 * A hypercall waits on the HC MSI-X eventfd, never spins.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <vbus/ioq.h>
#include <vbus/shm_signal.h>
#include <vbus/vbus_pci.h>
#include <vbus/vbus_test.h>

#define RING_COUNT	64
#define ECHO_LEN	64

static struct vbus_pci_shm *shm;
static unsigned char *ram;
static __u64 ram_size, ram_brk = 0x1000;
static int db_fd[VBUS_PCI_NR_VECTORS], msix_fd[VBUS_PCI_NR_VECTORS];
static __u32 seq;
static __u64 scratch;
static struct shm_signal_desc *ring_sig;
static __u32 ring_handle;
static int storm;	/* 0 idle, 1 doorbell, 2 pending; __atomic */

static void die(const char *what)
{
	fprintf(stderr, "hostd-fairness-guest: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void *gpa_ptr(__u64 gpa, __u64 len)
{
	if (gpa > ram_size || len > ram_size - gpa)
		die("gpa outside RAM");
	return ram + gpa;
}

static __u64 alloc(__u64 len)
{
	__u64 gpa = (ram_brk + 63) & ~63ull;

	ram_brk = gpa + len;
	memset(gpa_ptr(gpa, len), 0, len);
	return gpa;
}

/* QEMU's side of the handshake: 7 int64 messages, 5 with an fd. */
static void handshake(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s, i, fds[5], nfd = 0, bar2;

	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)))
		die(path);
	for (i = 0; i < 7; i++) {
		char cbuf[CMSG_SPACE(sizeof(int))];
		__s64 msg;
		struct iovec iov = { &msg, sizeof(msg) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *c;

		if (recvmsg(s, &mh, MSG_WAITALL) != sizeof(msg))
			die("handshake");
		c = CMSG_FIRSTHDR(&mh);
		if (c && c->cmsg_type == SCM_RIGHTS && nfd < 5)
			memcpy(&fds[nfd++], CMSG_DATA(c), sizeof(int));
	}
	if (nfd != 5)
		die("handshake: not 5 fds");
	bar2 = fds[0];
	for (i = 0; i < VBUS_PCI_NR_VECTORS; i++) {
		db_fd[i] = fds[1 + i];
		msix_fd[i] = fds[3 + i];
	}
	shm = mmap(NULL, VBUS_PCI_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   bar2, 0);
	if (shm == MAP_FAILED)
		die("mmap BAR2");
	/* the socket stays open: closing it is QEMU going away */
}

static void map_ram(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st))
		die(path);
	ram_size = (__u64)st.st_size;
	ram = mmap(NULL, ram_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ram == MAP_FAILED)
		die("mmap RAM");
}

static void kick(unsigned int db)
{
	__u64 one = 1;

	if (write(db_fd[db], &one, sizeof(one)) != sizeof(one))
		die("doorbell");
}

/* As the bridge: the mailbox, then hc_seq, then the doorbell. */
static int hc(__u32 vector, void *data, __u32 len)
{
	__u64 v;

	memcpy(gpa_ptr(scratch, len), data, len);
	VBUS_WRITE(shm->hc.vector, vector);
	VBUS_WRITE(shm->hc.len, len);
	VBUS_WRITE(shm->hc.datap, scratch);
	/* the request before its number; pairs with the host's rmb */
	vbus_wmb();
	if (!seq)
		seq = VBUS_READ(shm->hc_done);
	VBUS_WRITE(shm->hc_seq, ++seq);
	kick(VBUS_PCI_DB_HC);
	while (VBUS_READ(shm->hc_done) != seq) {
		struct pollfd p = { msix_fd[VBUS_PCI_MSIX_HC], POLLIN, 0 };

		/* the eventfd is non-blocking (it is QEMU's) */
		if (poll(&p, 1, -1) < 0 ||
		    (read(p.fd, &v, sizeof(v)) < 0 && errno != EAGAIN))
			die("MSI-X");
	}
	/* hc_done before the result; pairs with the host's wmb */
	vbus_rmb();
	memcpy(data, gpa_ptr(scratch, len), len);
	return VBUS_READ(shm->hc_result);
}

static struct ioq_ring_head *ring_new(__u64 *gpa, __u32 count)
{
	struct ioq_ring_head *head;

	*gpa = alloc(IOQ_HEAD_DESC_SIZE(count));
	head = gpa_ptr(*gpa, IOQ_HEAD_DESC_SIZE(count));
	if (ioq_ring_format_ver(head, count, IOQ_RING_VER_V5))
		die("ring format");
	return head;
}

static __u64 attach(void)
{
	struct vbus_pci_negotiate n = { .magic = VBUS_PCI_ABI_MAGIC,
					.version = VBUS_PCI_HC_VERSION };
	struct vbus_pci_busreg br = { .count = 1 };
	struct vbus_pci_deviceopen o = { .devid = 1,
					 .version = VBUS_TEST_VERSION };
	struct vbus_pci_deviceshm s = { 0 };
	struct ioq_ring_head *head;
	__u64 gpa;
	int ret;

	scratch = alloc(4096);
	if (hc(VBUS_PCI_HC_NEGOTIATE, &n, sizeof(n)))
		die("NEGOTIATE");
	ring_new(&gpa, RING_COUNT);
	br.eventq[0].count = RING_COUNT;
	br.eventq[0].ring = gpa;
	br.eventq[0].data = alloc(RING_COUNT * sizeof(struct vbus_pci_event));
	if (hc(VBUS_PCI_HC_BUSREG, &br, sizeof(br)))
		die("BUSREG");
	if (hc(VBUS_PCI_HC_DEVOPEN, &o, sizeof(o)))
		die("DEVOPEN vbus-test id=1");
	head = ring_new(&gpa, RING_COUNT);
	s.devh = o.handle;
	s.id = VBUS_TEST_SHM_RING;
	s.len = (__u32)IOQ_HEAD_DESC_SIZE(RING_COUNT);
	s.signal.offset = offsetof(struct ioq_ring_head, signal);
	s.datap = gpa;
	ret = hc(VBUS_PCI_HC_DEVSHM, &s, sizeof(s));
	if (ret <= 0 || ret >= VBUS_PCI_MAX_SIGNALS)
		die("DEVSHM");
	ring_handle = (__u32)ret;
	ring_sig = &head->signal;
	return o.handle;
}

/* Guest A's storm: what a hostile or buggy guest can do without stopping. */
static void *storm_thread(void *arg)
{
	(void)arg;
	for (;;) {
		switch (__atomic_load_n(&storm, __ATOMIC_RELAXED)) {
		case 1:
			kick(VBUS_PCI_DB_SIGNAL);
			break;
		case 2:
			VBUS_WRITE(ring_sig->irq[shm_locality_south].pending, 1);
			VBUS_WRITE(ring_sig->irq[shm_locality_south].dirty, 1);
			__atomic_fetch_or(&shm->sigpending[ring_handle / 64],
					  1ull << (ring_handle % 64),
					  __ATOMIC_SEQ_CST);
			kick(VBUS_PCI_DB_SIGNAL);
			break;
		default:
			usleep(1000);
		}
	}
	return NULL;
}

static void set_storm(int mode)
{
	__atomic_store_n(&storm, mode, __ATOMIC_RELAXED);
	printf("ok\n");
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void echo(__u64 devh, double sec)
{
	struct vbus_pci_devicecall c = { .devh = devh,
					 .func = VBUS_TEST_FUNC_ECHO,
					 .len = ECHO_LEN };
	unsigned char *buf;
	double t0 = now(), t;
	unsigned long n = 0;

	c.datap = alloc(ECHO_LEN);
	buf = gpa_ptr(c.datap, ECHO_LEN);
	do {
		struct vbus_pci_devicecall cc = c;

		memset(buf, 0x11, ECHO_LEN);
		if (hc(VBUS_PCI_HC_DEVCALL, &cc, sizeof(cc)) ||
		    buf[ECHO_LEN - 1] != (0x11 ^ VBUS_TEST_XOR))
			die("ECHO");
		n++;
		t = now();
	} while (t - t0 < sec);
	printf("echo %lu %.1f\n", n, n / (t - t0));
}

int main(int argc, char **argv)
{
	char line[64];
	pthread_t th;
	__u64 devh;
	double sec;

	if (argc != 3) {
		fprintf(stderr, "usage: %s SOCK RAMFILE\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	map_ram(argv[2]);
	handshake(argv[1]);
	devh = attach();
	if (pthread_create(&th, NULL, storm_thread, NULL))
		die("pthread_create");
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "echo %lf", &sec) == 1)
			echo(devh, sec);
		else if (!strcmp(line, "doorbell\n"))
			set_storm(1);
		else if (!strcmp(line, "pending\n"))
			set_storm(2);
		else if (!strcmp(line, "idle\n"))
			set_storm(0);
		else
			printf("error: unknown command\n");
	}
	return 0;
}
