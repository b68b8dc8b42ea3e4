// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd without QEMU: the hypercall, eventq, signal and ring handlers
 * driven by a synthetic guest (fakeguest.c), well-formed and malformed.
 * Every malformed case must give an error, fault the device or the bus
 * (and only that), and never crash or hang.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fakeguest.h"

static int add_dev(struct fg *f, const char *spec)
{
	char err[256];

	return fg_add_dev(f, spec, err, sizeof(err));
}

static int drop_dev(struct fg *f, __u32 id)
{
	char err[256];

	return hostd_bus_drop(&f->g.bus, id, err, sizeof(err));
}

/* A guest with device 1 (vbus-test), negotiated and bus-registered. */
static struct fg *up(void)
{
	struct fg *f = calloc(1, sizeof(*f));

	fg_init(f, "t");
	assert_int_equal(add_dev(f, "type=vbus-test,id=1"), 0);
	assert_int_equal(fg_negotiate(f), 0);
	assert_int_equal(fg_busreg(f, 64, 64), 0);
	return f;
}

static void down(struct fg *f)
{
	fg_fini(f);
	free(f);
}

/* ---- guest memory -------------------------------------------------------- */

static void test_lowmem_rules(void **state)
{
	const __u64 G = 1ull << 30, M = 1ull << 20;

	(void)state;
	assert_true(hostd_mem_lowmem(HOSTD_MACHINE_Q35, 1 * G) == 1 * G);
	assert_true(hostd_mem_lowmem(HOSTD_MACHINE_Q35, 2 * G + 767 * M) == 2 * G + 767 * M);
	assert_true(hostd_mem_lowmem(HOSTD_MACHINE_Q35, 2 * G + 768 * M) == 2 * G);
	assert_true(hostd_mem_lowmem(HOSTD_MACHINE_Q35, 8 * G) == 2 * G);
	assert_true(hostd_mem_lowmem(HOSTD_MACHINE_PC, 3 * G + 511 * M) == 3 * G + 511 * M);
	assert_true(hostd_mem_lowmem(HOSTD_MACHINE_PC, 3 * G + 512 * M) == 3 * G);
	assert_true(hostd_mem_lowmem(HOSTD_MACHINE_PC, 16 * G) == 3 * G);
}

static void test_gpa_table(void **state)
{
	struct hostd_mem m = { .base = (unsigned char *)0x100000, .fd = -1 };
	const __u64 G = 1ull << 30;

	(void)state;
	hostd_mem_layout(&m, 3 * G, 2 * G);	/* q35, 3 GiB */
	assert_int_equal(m.nblocks, 2);
	assert_ptr_equal(hostd_mem_gpa(&m, 0, 1), m.base);
	assert_ptr_equal(hostd_mem_gpa(&m, 2 * G - 4096, 4096), m.base + 2 * G - 4096);
	/* crossing from lowmem into the hole */
	assert_null(hostd_mem_gpa(&m, 2 * G - 4096, 4097));
	/* inside the hole */
	assert_null(hostd_mem_gpa(&m, 2 * G, 1));
	assert_null(hostd_mem_gpa(&m, 4 * G - 1, 2));
	/* above 4G maps after lowmem in the file */
	assert_ptr_equal(hostd_mem_gpa(&m, 4 * G, 1), m.base + 2 * G);
	assert_ptr_equal(hostd_mem_gpa(&m, 5 * G - 1, 1), m.base + 3 * G - 1);
	/* past the end, and wrapping lengths */
	assert_null(hostd_mem_gpa(&m, 5 * G, 1));
	assert_null(hostd_mem_gpa(&m, 5 * G - 1, 2));
	assert_null(hostd_mem_gpa(&m, 4096, ~0ull));
	assert_null(hostd_mem_gpa(&m, ~0ull, 2));
	assert_null(hostd_mem_gpa(&m, ~0ull - 4095, 4096));
	assert_null(hostd_mem_gpa(&m, 0, 0));
	/* small guest: no high block */
	hostd_mem_layout(&m, G, hostd_mem_lowmem(HOSTD_MACHINE_Q35, G));
	assert_int_equal(m.nblocks, 1);
	assert_null(hostd_mem_gpa(&m, 4 * G, 1));
	assert_null(hostd_mem_gpa(&m, G - 1, 2));
}

/* The RAM file belongs to one open: locked, never shrunk, freed on close. */
static void test_mem_ownership(void **state)
{
	char path[] = "/tmp/vbus-hostd-mem-XXXXXX", err[512], want[64];
	struct hostd_mem a, b;
	struct stat st;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(hostd_mem_open(&a, path, -1, 1 << 20, HOSTD_MACHINE_Q35,
					err, sizeof(err)), 0);
	/* a second open, even by the same process, is another holder */
	assert_int_equal(hostd_mem_open(&b, path, -1, 1 << 20, HOSTD_MACHINE_Q35,
					err, sizeof(err)), -EBUSY);
	snprintf(want, sizeof(want), "locked by this vbus-hostd (pid %d)",
		 (int)getpid());
	assert_non_null(strstr(err, want));
	hostd_mem_close(&a);
	/* free again; and grown, never shrunk */
	assert_int_equal(hostd_mem_open(&a, path, -1, 2 << 20, HOSTD_MACHINE_Q35,
					err, sizeof(err)), 0);
	hostd_mem_close(&a);
	assert_int_equal(hostd_mem_open(&a, path, -1, 1 << 20, HOSTD_MACHINE_Q35,
					err, sizeof(err)), -EFBIG);
	assert_non_null(strstr(err, "refusing to shrink"));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 2 << 20);
	unlink(path);
}

/* ---- hypercall framing ------------------------------------------------------ */

/*
 * A guest whose RAM is laid out otherwise than size= (QEMU's -m differs)
 * fails NEGOTIATE with -EFAULT; the host's log says why (5e8fef9 said
 * nothing at all).
 */
static void test_negotiate_outside_ram_says_size(void **state)
{
	struct fg *f = calloc(1, sizeof(*f));
	char log[4096] = "";
	int saved, fd;
	ssize_t n;

	(void)state;
	fg_init(f, "t");
	fd = memfd_create("log", 0);
	assert_true(fd >= 0);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	assert_int_equal(fg_hc_raw(f, VBUS_PCI_HC_NEGOTIATE, 16, 5ull << 32),
			 -EFAULT);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, log, sizeof(log) - 1, 0);
	close(fd);
	assert_true(n > 0);
	fprintf(stderr, "%s", log);
	assert_non_null(strstr(log, "NEGOTIATE's buffer at guest-physical 0x500000000 is outside guest RAM as size="));
	assert_non_null(strstr(log, "QEMU's -m and its memory-backend size must equal size="));
	fg_fini(f);
	free(f);
}

static void test_hc_framing(void **state)
{
	struct fg *f = calloc(1, sizeof(*f));
	struct vbus_pci_negotiate n = { .magic = VBUS_PCI_ABI_MAGIC,
					.version = VBUS_PCI_HC_VERSION };
	static const __u32 lens[] = { 16, 32, 16, 8, 32, 48 };
	__u32 v;

	(void)state;
	fg_init(f, "t");
	/* before NEGOTIATE everything else is refused */
	assert_int_equal(fg_hc_raw(f, VBUS_PCI_HC_DEVOPEN, 16, f->scratch), -EPROTO);
	/* wrong magic / version */
	n.magic = 0x12345678;
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_NEGOTIATE, &n, sizeof(n)), -EPROTO);
	n.magic = VBUS_PCI_ABI_MAGIC;
	n.version = 99;
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_NEGOTIATE, &n, sizeof(n)), -EPROTO);
	assert_int_equal(fg_negotiate(f), 0);

	/* vectors out of range */
	assert_int_equal(fg_hc_raw(f, VBUS_PCI_HC_MAX, 16, f->scratch), -EINVAL);
	assert_int_equal(fg_hc_raw(f, 0xffffffffu, 16, f->scratch), -EINVAL);
	/* truncated / oversized structs */
	for (v = 0; v < VBUS_PCI_HC_MAX; v++) {
		assert_int_equal(fg_hc_raw(f, v, lens[v] - 1, f->scratch), -EINVAL);
		assert_int_equal(fg_hc_raw(f, v, lens[v] + 1, f->scratch), -EINVAL);
		assert_int_equal(fg_hc_raw(f, v, 0, f->scratch), -EINVAL);
		assert_int_equal(fg_hc_raw(f, v, 0xffffffffu, f->scratch), -EINVAL);
		/* datap outside RAM, into the hole, across the boundary */
		assert_int_equal(fg_hc_raw(f, v, lens[v], FG_LOW + FG_HIGH + (8ull << 30)),
				 -EFAULT);
		assert_int_equal(fg_hc_raw(f, v, lens[v], FG_LOW), -EFAULT);
		assert_int_equal(fg_hc_raw(f, v, lens[v], FG_LOW - 4), -EFAULT);
		assert_int_equal(fg_hc_raw(f, v, lens[v], FG_HIGH_GPA + FG_HIGH - 4),
				 -EFAULT);
		assert_int_equal(fg_hc_raw(f, v, lens[v], ~0ull - 3), -EFAULT);
	}
	/* the same request number again is not answered twice */
	{
		__u64 before = f->g.hc.calls, one = 1;

		assert_int_equal(write(f->g.iv.db_fd[VBUS_PCI_DB_HC], &one, 8), 8);
		fg_pump(f);
		assert_true(f->g.hc.calls == before);
	}
	/* the high block works for arguments */
	{
		struct vbus_pci_negotiate *hn = fg_ptr(f, FG_HIGH_GPA + 64, 16);

		*hn = (struct vbus_pci_negotiate){ VBUS_PCI_ABI_MAGIC, VBUS_PCI_HC_VERSION, 5 };
		assert_int_equal(fg_hc_raw(f, VBUS_PCI_HC_NEGOTIATE, 16, FG_HIGH_GPA + 64), 0);
		assert_true(hn->capabilities == 0);
	}
	/* every answer raised MSI-X vector 0 */
	assert_true(fg_msix(f, VBUS_PCI_MSIX_HC) > 0);
	fg_fini(f);
	free(f);
}

/* ---- BUSREG and events ---------------------------------------------------------- */

static void test_busreg_and_devadd(void **state)
{
	struct fg *f = calloc(1, sizeof(*f));
	struct vbus_pci_event ev[8];

	(void)state;
	fg_init(f, "t");
	assert_int_equal(add_dev(f, "type=vbus-test,id=1"), 0);
	assert_int_equal(add_dev(f, "type=vbus-test,id=77"), 0);
	assert_int_equal(fg_negotiate(f), 0);
	assert_int_equal(fg_busreg(f, 16, 16), 0);
	assert_int_equal(fg_events(f, ev, 8, true), 2);
	assert_int_equal(ev[0].eventid, VBUS_PCI_EVENT_DEVADD);
	assert_true(ev[0].data.add.id == 1);
	assert_string_equal(ev[0].data.add.type, "vbus-test");
	assert_true(ev[1].data.add.id == 77);
	assert_true(fg_msix(f, VBUS_PCI_MSIX_EVENTQ) > 0);

	/* a device added at runtime is announced; dropping it too */
	assert_int_equal(add_dev(f, "type=vbus-test,id=5"), 0);
	assert_int_equal(drop_dev(f, 5), 0);
	assert_int_equal(drop_dev(f, 5), -ENOENT);
	assert_int_equal(fg_events(f, ev, 8, true), 2);
	assert_int_equal(ev[0].eventid, VBUS_PCI_EVENT_DEVADD);
	assert_int_equal(ev[1].eventid, VBUS_PCI_EVENT_DEVDROP);
	assert_true(ev[1].data.handle.handle == 5);
	/* duplicate ids, unknown types and parameters are refused */
	assert_int_equal(add_dev(f, "type=vbus-test,id=1"), -EEXIST);
	assert_int_equal(add_dev(f, "type=nope,id=9"), -ENOENT);
	assert_int_equal(add_dev(f, "type=vbus-test,id=9,bogus=1"), -EINVAL);
	fg_fini(f);
	free(f);
}

static void test_busreg_malformed(void **state)
{
	struct fg *f = calloc(1, sizeof(*f));
	struct vbus_pci_busreg br;
	struct ioq_ring_head *head;
	__u64 ring, data;

	(void)state;
	fg_init(f, "t");
	assert_int_equal(fg_negotiate(f), 0);
	ring = fg_alloc(f, IOQ_HEAD_DESC_SIZE(64));
	data = fg_alloc(f, 64 * sizeof(struct vbus_pci_event));
	head = fg_ptr(f, ring, IOQ_HEAD_DESC_SIZE(64));
	assert_int_equal(ioq_ring_format_ver(head, 64, fg_ring_ver), 0);

#define BR(cnt, qc, r, d) do {					\
		memset(&br, 0, sizeof(br));				\
		br.count = (cnt);					\
		br.eventq[0].count = (qc);				\
		br.eventq[0].ring = (r);				\
		br.eventq[0].data = (d);				\
	} while (0)

	BR(2, 64, ring, data);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), -EINVAL);
	BR(3, 64, ring, data);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), -EINVAL);
	BR(1, 0, ring, data);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), -EINVAL);
	BR(1, 48, ring, data);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), -EINVAL);
	BR(1, 2048, ring, data);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), -EINVAL);
	/* count disagrees with the ring's */
	BR(1, 32, ring, data);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), -EINVAL);
	/* ring outside RAM, in the hole, straddling, misaligned */
	BR(1, 64, 1ull << 40, data);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), -EFAULT);
	BR(1, 64, FG_LOW - 64, data);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), -EFAULT);
	BR(1, 64, ring + 4, data);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), -EINVAL);
	/* data that does not hold count events */
	BR(1, 64, ring, FG_LOW - 100);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), -EFAULT);
	/* bad magic, version, signal */
	BR(1, 64, ring, data);
	head->magic = 0;
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), -EINVAL);
	head->magic = IOQ_RING_MAGIC;
	head->ver = 4;
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), -EPROTO);
	head->ver = IOQ_RING_VER;
	head->signal.magic = 1;
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), -EPROTO);
	head->signal.magic = SHM_SIGNAL_MAGIC;
	head->count = 128;
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), -EINVAL);
	head->count = 64;
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), 0);
	/* and again: replaces the first */
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), 0);
	assert_true(f->g.bus.busreg);
	fg_fini(f);
	free(f);
}

/* ---- devices ------------------------------------------------------------------ */

static void test_devopen_call(void **state)
{
	struct fg *f = up();
	unsigned char buf[300], big[8];
	__u64 h, h2;
	int ret, i;

	(void)state;
	fg_events(f, (struct vbus_pci_event[4]){ 0 }, 4, true);
	h = fg_devopen(f, 2, VBUS_TEST_VERSION, &ret);
	assert_int_equal(ret, -ENODEV);
	h = fg_devopen(f, 1, 2, &ret);
	assert_int_equal(ret, -EPROTO);
	h = fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
	assert_int_equal(ret, 0);
	assert_true(h != 0);
	h2 = fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
	assert_int_equal(ret, -EBUSY);
	(void)h2;

	for (i = 0; i < (int)sizeof(buf); i++)
		buf[i] = (unsigned char)i;
	assert_int_equal(fg_devcall(f, h, VBUS_TEST_FUNC_ECHO, buf, sizeof(buf)), 0);
	for (i = 0; i < (int)sizeof(buf); i++)
		assert_int_equal(buf[i], (unsigned char)(i ^ 0x5a));
	assert_int_equal(fg_devcall(f, h, VBUS_TEST_FUNC_ECHO, NULL, 0), 0);
	assert_int_equal(fg_devcall(f, h, 99, big, sizeof(big)), -EINVAL);
	assert_int_equal(fg_devcall(f, h + 1, VBUS_TEST_FUNC_ECHO, big, sizeof(big)), -EINVAL);
	assert_int_equal(fg_devcall(f, 0, VBUS_TEST_FUNC_ECHO, big, sizeof(big)), -EINVAL);
	/* no ring yet */
	assert_int_equal(fg_devcall(f, h, VBUS_TEST_FUNC_SIGNAL, NULL, 0), -ENOENT);
	{
		struct vbus_pci_devicecall c = { .devh = h, .func = VBUS_TEST_FUNC_ECHO };

		/* buffer outside RAM / across the hole / absurd length */
		c.len = 16;
		c.datap = FG_LOW - 8;
		assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVCALL, &c, sizeof(c)), -EFAULT);
		c.datap = 1ull << 50;
		assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVCALL, &c, sizeof(c)), -EFAULT);
		c.len = 0xffffffffu;
		c.datap = 0;
		assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVCALL, &c, sizeof(c)), -EINVAL);
	}
	/* close: unknown handles refused, then the old handle is dead */
	{
		__u64 bad = h + 1000;

		assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVCLOSE, &bad, 8), -EINVAL);
		assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVCLOSE, &h, 8), 0);
		assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVCLOSE, &h, 8), -EINVAL);
		assert_int_equal(fg_devcall(f, h, VBUS_TEST_FUNC_ECHO, buf, 4), -EINVAL);
	}
	/* reopen: a new handle */
	h2 = fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
	assert_int_equal(ret, 0);
	assert_true(h2 != h);
	down(f);
}

static void test_ring_echo(void **state)
{
	struct fg *f = up();
	struct vbus_pci_event ev[64];
	struct fg_ring r;
	struct hostd_dev *d;
	__u64 h, buf, hbuf;
	unsigned char *p;
	unsigned int n, i, got = 0;
	int ret;

	(void)state;
	fg_events(f, ev, 64, true);
	h = fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
	assert_int_equal(ret, 0);
	ret = fg_ring_open(f, &r, h, VBUS_TEST_SHM_RING, 32, 0xc0ffee);
	assert_true(ret >= 1 && ret < VBUS_PCI_MAX_SIGNALS);
	/* the layout asked for is the one the host took */
	assert_int_equal(r.ioq.head_desc->ver, fg_ring_ver);
	d = hostd_bus_find(&f->g.bus, 1);
	assert_non_null(d);

	buf = fg_alloc(f, 4096);
	p = fg_ptr(f, buf, 4096);
	memset(p, 0x11, 4096);
	/* a buffer in the high block too */
	hbuf = FG_HIGH_GPA + 8192;
	memset(fg_ptr(f, hbuf, 100), 0x22, 100);

	/* post 20, signal once (the last push signals) */
	for (i = 0; i < 19; i++)
		assert_int_equal(fg_ring_post(&r, buf + i * 100, 100, false), 0);
	assert_int_equal(fg_ring_post(&r, hbuf, 100, true), 0);
	n = fg_ring_reap(&r);
	assert_int_equal(n, 20);
	for (i = 0; i < 1900; i++)
		assert_int_equal(p[i], 0x11 ^ 0x5a);
	assert_int_equal(p[1900], 0x11);
	assert_int_equal(((unsigned char *)fg_ptr(f, hbuf, 1))[0], 0x22 ^ 0x5a);
	/* the host signalled: a SHMSIGNAL with our cookie on the eventq */
	n = fg_events(f, ev, 64, true);
	for (i = 0; i < n; i++)
		if (ev[i].eventid == VBUS_PCI_EVENT_SHMSIGNAL &&
		    ev[i].data.handle.handle == 0xc0ffee)
			got++;
	assert_true(got >= 1);

	/* func 1: a SHMSIGNAL on demand (north side enabled and idle) */
	r.sig.desc->irq[shm_locality_north].pending = 0;
	assert_int_equal(fg_devcall(f, h, VBUS_TEST_FUNC_SIGNAL, NULL, 0), 0);
	n = fg_events(f, ev, 64, true);
	assert_true(n >= 1);
	assert_int_equal(ev[n - 1].eventid, VBUS_PCI_EVENT_SHMSIGNAL);

	d = hostd_bus_find(&f->g.bus, 1);
	assert_true(d->cnt.descs == 20);
	assert_true(d->cnt.bytes == 2000);
	assert_true(d->cnt.notify_in >= 1);
	assert_true(d->cnt.notify_out >= 1);

	/* a second ring with the same id, and an unknown id */
	{
		struct fg_ring r2;

		assert_int_equal(fg_ring_open(f, &r2, h, VBUS_TEST_SHM_RING, 8, 1), -EBUSY);
		fg_ring_close(&r2);
		assert_int_equal(fg_ring_open(f, &r2, h, 7, 8, 1), -EINVAL);
		fg_ring_close(&r2);
	}

	/* more posted than fit in one pass still all complete */
	for (i = 0; i < 32; i++)
		assert_int_equal(fg_ring_post(&r, buf, 1, i == 31), 0);
	fg_pump(f);
	assert_int_equal(fg_ring_reap(&r), 32);

	/* DEVCLOSE sends SHMCLOSE for the ring's cookie */
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVCLOSE, &h, 8), 0);
	n = fg_events(f, ev, 64, true);
	assert_true(n >= 1);
	assert_int_equal(ev[n - 1].eventid, VBUS_PCI_EVENT_SHMCLOSE);
	assert_true(ev[n - 1].data.handle.handle == 0xc0ffee);
	/* its signal bit is now unknown */
	{
		__u64 before = f->g.sig.unknown;

		fg_signal(f, r.handle);
		assert_true(f->g.sig.unknown == before + 1);
	}
	fg_ring_close(&r);
	down(f);
}

/*
 * test_ring_echo again with the fake guest on ring v6 (its eventq and its
 * device ring): vbus-hostd checks the version and binds it. The default
 * (v5) runs of every other test are the v5 guest against the same host.
 */
static int ring_v6(void **state)
{
	(void)state;
	fg_ring_ver = IOQ_RING_VER_V6;
	return 0;
}

static int ring_v5(void **state)
{
	(void)state;
	fg_ring_ver = IOQ_RING_VER_V5;
	return 0;
}

static void test_ring_bad_descriptors(void **state)
{
	static const struct { __u64 ptr, len; } bad[] = {
		{ FG_LOW - 10, 20 },			/* into the hole */
		{ FG_LOW + 4096, 1 },			/* in the hole */
		{ FG_HIGH_GPA + FG_HIGH - 1, 2 },	/* past the end */
		{ 1ull << 62, 4096 },
		{ 0, ~0ull },				/* wrapping length */
		{ 4096, 1ull << 40 },
		{ 4096, 0 },				/* vbus-test: len 1..65536 */
		{ 4096, 65537 },
	};
	unsigned int k;

	(void)state;
	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct fg *f = up();
		struct fg_ring r;
		struct hostd_dev *d;
		unsigned char b[4] = { 1, 2, 3, 4 };
		__u64 h, ok;
		int ret;

		h = fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
		assert_int_equal(ret, 0);
		assert_true(fg_ring_open(f, &r, h, VBUS_TEST_SHM_RING, 8, 9) > 0);
		ok = fg_alloc(f, 64);
		assert_int_equal(fg_ring_post(&r, ok, 64, false), 0);
		assert_int_equal(fg_ring_post(&r, bad[k].ptr, bad[k].len, true), 0);
		d = hostd_bus_find(&f->g.bus, 1);
		assert_true(d->faulted);
		assert_true(d->cnt.faults == 1);
		/* the good one before it was completed, the bad one not */
		assert_int_equal(fg_ring_reap(&r), 1);
		/* a faulted device refuses work */
		assert_int_equal(fg_devcall(f, h, VBUS_TEST_FUNC_ECHO, b, 4), -EIO);
		/* ... the bus still works, and a reopen starts clean */
		assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVCLOSE, &h, 8), 0);
		h = fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
		assert_int_equal(ret, 0);
		assert_false(d->faulted);
		assert_int_equal(fg_devcall(f, h, VBUS_TEST_FUNC_ECHO, b, 4), 0);
		assert_int_equal(b[0], 1 ^ 0x5a);
		fg_ring_close(&r);
		down(f);
	}
}

static void test_busreg_detach(void **state)
{
	struct fg *f = up();
	struct vbus_pci_busreg br = { .count = 0 };
	struct vbus_pci_event *evmem;
	struct fg_ring r;
	__u64 h;
	int ret;

	(void)state;
	h = fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
	assert_true(fg_ring_open(f, &r, h, VBUS_TEST_SHM_RING, 8, 5) > 0);
	/* detach: devices closed, and not a byte written to the eventq */
	evmem = fg_ptr(f, f->evq_data, 64 * sizeof(*evmem));
	memset(evmem, 0xee, 64 * sizeof(*evmem));
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), 0);
	assert_false(f->g.bus.busreg);
	assert_false(hostd_bus_find(&f->g.bus, 1)->open);
	assert_int_equal(add_dev(f, "type=vbus-test,id=2"), 0);
	assert_int_equal(((unsigned char *)evmem)[0], 0xee);
	assert_int_equal(((unsigned char *)evmem)[64 * sizeof(*evmem) - 1], 0xee);
	/* the old handle is dead; a detach twice is fine */
	assert_int_equal(fg_devcall(f, h, VBUS_TEST_FUNC_ECHO, NULL, 0), -EINVAL);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br)), 0);
	/* a new bridge registers again and sees both devices */
	fg_ring_close(&r);
	assert_int_equal(fg_busreg(f, 8, 8), 0);
	{
		struct vbus_pci_event ev[8];

		assert_int_equal(fg_events(f, ev, 8, true), 2);
	}
	down(f);
}

static void test_ring_limits(void **state)
{
	struct fg *f = up();
	struct fg_ring r;
	__u64 h;
	int ret;

	(void)state;
	h = fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
	/* vbus-test rings are at most 4096 descriptors */
	assert_int_equal(fg_ring_open(f, &r, h, VBUS_TEST_SHM_RING, 8192, 5), -EINVAL);
	fg_ring_close(&r);
	assert_true(fg_ring_open(f, &r, h, VBUS_TEST_SHM_RING, 4096, 5) > 0);
	fg_ring_close(&r);
	down(f);
}

static void test_ring_corrupt_indexes(void **state)
{
	struct fg *f = up();
	struct ioq_ring_head *head;
	struct fg_ring r;
	struct hostd_dev *d;
	__u64 h;
	int ret;

	(void)state;
	h = fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
	assert_true(fg_ring_open(f, &r, h, VBUS_TEST_SHM_RING, 8, 9) > 0);
	head = fg_ptr(f, r.gpa, IOQ_HEAD_DESC_SIZE(8));
	/* more in flight than the ring holds */
	head->idx[ioq_idx_consume].tail = head->idx[ioq_idx_consume].head + 5000;
	/* a real signal: dirty=1, then the doorbell (a bare doorbell with
	 * nothing dirty runs no notifier, by the shm-signal protocol) */
	ioq_signal(&r.ioq, 0);
	d = hostd_bus_find(&f->g.bus, 1);
	assert_true(d->faulted);
	/* signalling a faulted device does nothing (and nothing breaks) */
	fg_signal(f, r.handle);
	fg_signal(f, r.handle);
	assert_true(d->cnt.faults == 1);
	assert_false(hostd_bus_faulted(&f->g.bus));
	fg_ring_close(&r);
	down(f);
}

static void test_devshm_malformed(void **state)
{
	struct fg *f = up();
	struct vbus_pci_deviceshm s;
	struct ioq_ring_head *head;
	__u64 h, ring;
	int ret;

	(void)state;
	h = fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
	ring = fg_alloc(f, IOQ_HEAD_DESC_SIZE(8));
	head = fg_ptr(f, ring, IOQ_HEAD_DESC_SIZE(8));
	assert_int_equal(ioq_ring_format_ver(head, 8, fg_ring_ver), 0);

#define SHM(handle, id_, len_, off, datap_) do {		\
		memset(&s, 0, sizeof(s));			\
		s.devh = (handle);				\
		s.id = (id_);					\
		s.len = (len_);					\
		s.signal.offset = (off);			\
		s.datap = (datap_);				\
	} while (0)
	const __u32 L = (__u32)IOQ_HEAD_DESC_SIZE(8);

	SHM(h + 1, 0, L, 8, ring);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVSHM, &s, sizeof(s)), -EINVAL);
	SHM(h, 0, 0, 8, ring);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVSHM, &s, sizeof(s)), -EINVAL);
	SHM(h, 0, L, L - 15, ring);		/* signal desc past the end */
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVSHM, &s, sizeof(s)), -EINVAL);
	SHM(h, 0, L, 0xfffffff0u, ring);	/* offset + 16 wraps in 32 bits */
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVSHM, &s, sizeof(s)), -EINVAL);
	SHM(h, 0, L, 9, ring);			/* misaligned */
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVSHM, &s, sizeof(s)), -EINVAL);
	SHM(h, 0, L, 0, ring);			/* not a signal desc */
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVSHM, &s, sizeof(s)), -EINVAL);
	SHM(h, 0, L, 8, FG_LOW - 64);		/* region across the hole */
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVSHM, &s, sizeof(s)), -EFAULT);
	SHM(h, 0, L, VBUS_PCI_SHM_NO_SIGNAL, ring);	/* ring needs a signal */
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVSHM, &s, sizeof(s)), -EINVAL);
	SHM(h, 0, 100, 8, ring);		/* too short for 8 descriptors */
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVSHM, &s, sizeof(s)), -EMSGSIZE);
	SHM(h, 0, L, 24, ring);			/* a signal that is not the ring's */
	memcpy((char *)head + 24 + 0, &(__u32){ SHM_SIGNAL_MAGIC }, 4);
	memcpy((char *)head + 24 + 4, &(__u32){ SHM_SIGNAL_VER }, 4);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVSHM, &s, sizeof(s)), -EINVAL);
	assert_int_equal(ioq_ring_format_ver(head, 8, fg_ring_ver), 0);
	head->count = 6;
	SHM(h, 0, L, 8, ring);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVSHM, &s, sizeof(s)), -EINVAL);
	head->count = 8;
	/* no handle leaked by the failures: the first good one gets 1 */
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVSHM, &s, sizeof(s)), 1);
	assert_false(hostd_bus_find(&f->g.bus, 1)->faulted);
	down(f);
}

/* ---- signals ------------------------------------------------------------------ */

static void test_sigpending_garbage(void **state)
{
	struct fg *f = up();
	unsigned int w;
	__u64 one = 1;

	(void)state;
	/* every bit set: the eventq wakes, the rest is unknown */
	for (w = 0; w < VBUS_PCI_MAX_SIGNALS / 64; w++)
		f->g.iv.shm->sigpending[w] = ~0ull;
	assert_int_equal(write(f->g.iv.db_fd[VBUS_PCI_DB_SIGNAL], &one, 8), 8);
	fg_pump(f);
	assert_true(f->g.sig.unknown == VBUS_PCI_MAX_SIGNALS - 1);
	for (w = 0; w < VBUS_PCI_MAX_SIGNALS / 64; w++)
		assert_true(f->g.iv.shm->sigpending[w] == 0);
	/* a doorbell with nothing set is harmless */
	assert_int_equal(write(f->g.iv.db_fd[VBUS_PCI_DB_SIGNAL], &one, 8), 8);
	fg_pump(f);
	down(f);
}

/* ---- the eventq ------------------------------------------------------------------ */

static void test_eventq_not_serviced(void **state)
{
	struct fg *f = calloc(1, sizeof(*f));
	struct vbus_pci_event ev[64];
	unsigned int i, n, total = 0;
	__u32 expect = 1000;

	(void)state;
	fg_init(f, "t");
	assert_int_equal(fg_negotiate(f), 0);
	/* a queue with no descriptor posted: the guest never services it */
	assert_int_equal(fg_busreg(f, 64, 0), 0);
	for (i = 0; i < 400; i++) {
		char spec[64];

		snprintf(spec, sizeof(spec), "type=vbus-test,id=%u", 1000 + i);
		assert_int_equal(add_dev(f, spec), 0);
		assert_int_equal(drop_dev(f, 1000 + i), 0);
	}
	/* 800 events, bounded: the rest was dropped and counted */
	assert_int_equal(f->g.bus.evq.bl_len, HOSTD_EVQ_BACKLOG);
	assert_true(f->g.bus.evq.dropped == 800 - HOSTD_EVQ_BACKLOG);
	assert_true(f->g.bus.evq.posted == 0);

	/* the guest wakes up: post the descriptors, signal handle 0 */
	assert_int_equal(fg_evq_post(f, 64), 0);
	ioq_signal(&f->evq, 0);
	/* and drain, in order: ADD 1000, DROP 1000, ADD 1001, ... */
	while ((n = fg_events(f, ev, 64, true)) > 0) {
		for (i = 0; i < n; i++, total++) {
			if (total % 2 == 0) {
				assert_int_equal(ev[i].eventid, VBUS_PCI_EVENT_DEVADD);
				assert_true(ev[i].data.add.id == expect);
			} else {
				assert_int_equal(ev[i].eventid, VBUS_PCI_EVENT_DEVDROP);
				assert_true(ev[i].data.handle.handle == expect++);
			}
		}
	}
	assert_int_equal(total, HOSTD_EVQ_BACKLOG);
	assert_int_equal(f->g.bus.evq.bl_len, 0);
	assert_false(hostd_bus_faulted(&f->g.bus));
	fg_fini(f);
	free(f);
}

/*
 * The guest's signal after re-posting event descriptors crosses only while
 * the host has a backlog (evq.c): without one it would cost a doorbell per
 * host->guest interrupt for nothing.
 */
static void test_eventq_repost_signal_only_for_backlog(void **state)
{
	struct fg *f = calloc(1, sizeof(*f));
	struct vbus_pci_event ev[16];
	unsigned long crossed;
	unsigned int i;

	(void)state;
	fg_init(f, "t");
	assert_int_equal(fg_negotiate(f), 0);
	assert_int_equal(fg_busreg(f, 16, 16), 0);
	for (i = 0; i < 20; i++) {
		char spec[64];

		snprintf(spec, sizeof(spec), "type=vbus-test,id=%u", 2000 + i);
		assert_int_equal(add_dev(f, spec), 0);
		/* reap and re-post: the host has room, it wants no signal */
		assert_int_equal(fg_events(f, ev, 16, true), 1);
	}
	assert_true(f->evq_sig.injects == 0);
	assert_int_equal(f->g.bus.evq.bl_len, 0);

	/* 20 events with 16 slots and nothing reaped: a backlog of 4 */
	for (i = 0; i < 20; i++)
		assert_int_equal(drop_dev(f, 2000 + i), 0);
	assert_int_equal(f->g.bus.evq.bl_len, 4);
	crossed = f->evq_sig.injects;
	/* the re-post now signals, and the host delivers the rest */
	assert_int_equal(fg_events(f, ev, 16, true), 16);
	assert_true(f->evq_sig.injects > crossed);
	fg_pump(f);
	assert_int_equal(fg_events(f, ev, 16, true), 4);
	assert_int_equal(f->g.bus.evq.bl_len, 0);
	/* drained: masked again */
	crossed = f->evq_sig.injects;
	assert_int_equal(add_dev(f, "type=vbus-test,id=2100"), 0);
	assert_int_equal(fg_events(f, ev, 16, true), 1);
	assert_true(f->evq_sig.injects == crossed);
	assert_false(hostd_bus_faulted(&f->g.bus));
	fg_fini(f);
	free(f);
}

static void test_eventq_shmsignal_coalesces(void **state)
{
	struct fg *f = calloc(1, sizeof(*f));
	struct fg_ring r;
	struct vbus_pci_event ev[64];
	unsigned int i, n;
	__u64 h;
	int ret;

	(void)state;
	fg_init(f, "t");
	assert_int_equal(add_dev(f, "type=vbus-test,id=1"), 0);
	assert_int_equal(fg_negotiate(f), 0);
	/* a guest that posts no event descriptors */
	assert_int_equal(fg_busreg(f, 64, 0), 0);
	h = fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
	assert_true(fg_ring_open(f, &r, h, VBUS_TEST_SHM_RING, 8, 42) > 0);
	for (i = 0; i < 5000; i++) {
		/* the guest acks; the host signals again */
		r.sig.desc->irq[shm_locality_north].pending = 0;
		assert_int_equal(fg_devcall(f, h, VBUS_TEST_FUNC_SIGNAL, NULL, 0), 0);
	}
	/* DEVADD + one SHMSIGNAL: coalesced, nothing dropped */
	assert_int_equal(f->g.bus.evq.bl_len, 2);
	assert_true(f->g.bus.evq.dropped == 0);
	assert_true(hostd_bus_find(&f->g.bus, 1)->cnt.notify_out == 5000);
	/* the guest posts: both arrive */
	assert_int_equal(fg_evq_post(f, 64), 0);
	ioq_signal(&f->evq, 0);
	n = fg_events(f, ev, 64, true);
	assert_int_equal(n, 2);
	assert_int_equal(ev[0].eventid, VBUS_PCI_EVENT_DEVADD);
	assert_int_equal(ev[1].eventid, VBUS_PCI_EVENT_SHMSIGNAL);
	assert_true(ev[1].data.handle.handle == 42);
	fg_ring_close(&r);
	fg_fini(f);
	free(f);
}

static void test_eventq_bad_descriptor_faults_bus(void **state)
{
	struct fg *f = calloc(1, sizeof(*f));
	struct ioq_ring_head *head;
	struct vbus_pci_event ev[4];
	__u64 h;
	int ret, k;

	(void)state;
	for (k = 0; k < 3; k++) {
		fg_init(f, "t");
		assert_int_equal(add_dev(f, "type=vbus-test,id=1"), 0);
		assert_int_equal(fg_negotiate(f), 0);
		/* register with nothing posted, then post one bad descriptor */
		assert_int_equal(fg_busreg(f, 4, 0), 0);
		head = fg_ptr(f, f->evq_gpa, IOQ_HEAD_DESC_SIZE(4));
		{
			struct ioq_ring_desc bad = {
				.ptr = k == 0 ? FG_LOW - 8 : k == 1 ? f->evq_data : 1ull << 45,
				.len = k == 1 ? 100 : 144,	/* k==1: too short */
			};

			assert_int_equal(ioq_push_bulk(&f->evq, &bad, 1, 0), 1);
		}
		ioq_signal(&f->evq, 0);
		assert_true(hostd_bus_faulted(&f->g.bus));
		assert_true(f->g.bus.evq.faults == 1);
		(void)head;
		/* an inert bus: device hypercalls fail, nothing crashes */
		fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
		assert_int_equal(ret, -EIO);
		fg_signal(f, 0);
		/* the bridge probing again recovers */
		assert_int_equal(fg_negotiate(f), 0);
		assert_int_equal(fg_busreg(f, 4, 4), 0);
		assert_false(hostd_bus_faulted(&f->g.bus));
		assert_int_equal(fg_events(f, ev, 4, true), 1);
		h = fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
		assert_int_equal(ret, 0);
		assert_true(h != 0);
		fg_fini(f);
	}
	free(f);
}

static void test_eventq_corrupt_index_faults_bus(void **state)
{
	struct fg *f = up();
	struct ioq_ring_head *head;

	(void)state;
	head = fg_ptr(f, f->evq_gpa, IOQ_HEAD_DESC_SIZE(64));
	head->idx[ioq_idx_consume].tail += 1000;
	assert_int_equal(add_dev(f, "type=vbus-test,id=2"), 0);
	assert_true(hostd_bus_faulted(&f->g.bus));
	down(f);
}

/* ---- isolation and teardown ------------------------------------------------------- */

static void test_two_guests_isolated(void **state)
{
	struct fg *a = up(), *b = up();
	unsigned char buf[4] = { 0 };
	__u64 hb;
	int ret;

	(void)state;
	/* fault a's bus */
	((struct ioq_ring_head *)fg_ptr(a, a->evq_gpa, 64))->idx[0].tail += 999;
	assert_int_equal(add_dev(a, "type=vbus-test,id=2"), 0);
	assert_true(hostd_bus_faulted(&a->g.bus));
	/* b does not notice */
	hb = fg_devopen(b, 1, VBUS_TEST_VERSION, &ret);
	assert_int_equal(ret, 0);
	assert_int_equal(fg_devcall(b, hb, VBUS_TEST_FUNC_ECHO, buf, 4), 0);
	assert_int_equal(buf[0], 0x5a);
	/* and handles do not cross guests */
	fg_devopen(a, 1, VBUS_TEST_VERSION, &ret);
	assert_int_equal(ret, -EIO);
	down(a);
	down(b);
}

static void test_teardown_with_open_rings(void **state)
{
	struct fg *f = up();
	struct fg_ring r0, r1;
	__u64 h;
	int ret;

	(void)state;
	h = fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
	assert_true(fg_ring_open(f, &r0, h, VBUS_TEST_SHM_RING, 8, 1) > 0);
	/* QEMU goes away: everything closed, a new connection starts clean */
	assert_true(f->g.iv.shm->hc_done != 0);
	hostd_ivshmem_close(&f->g.iv);
	assert_false(hostd_bus_find(&f->g.bus, 1)->open);
	assert_true(f->g.iv.db_fd[VBUS_PCI_DB_HC] < 0);
	/* a fresh BAR2 waits for the next QEMU */
	assert_true(f->g.iv.shm->hc_done == 0);
	assert_int_equal(hostd_ivshmem_open(&f->g.iv), 0);
	f->seq = 0;
	assert_int_equal(fg_negotiate(f), 0);
	assert_int_equal(fg_busreg(f, 8, 8), 0);
	h = fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
	assert_int_equal(ret, 0);
	assert_true(fg_ring_open(f, &r1, h, VBUS_TEST_SHM_RING, 8, 1) > 0);
	/* NEGOTIATE again (a reloaded bridge) closes it too */
	assert_int_equal(fg_negotiate(f), 0);
	assert_false(hostd_bus_find(&f->g.bus, 1)->open);
	fg_ring_close(&r0);
	fg_ring_close(&r1);
	down(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lowmem_rules),
		cmocka_unit_test(test_gpa_table),
		cmocka_unit_test(test_mem_ownership),
		cmocka_unit_test(test_hc_framing),
		cmocka_unit_test(test_busreg_and_devadd),
		cmocka_unit_test(test_busreg_malformed),
		cmocka_unit_test(test_negotiate_outside_ram_says_size),
		cmocka_unit_test(test_devopen_call),
		cmocka_unit_test(test_ring_echo),
		cmocka_unit_test_setup_teardown(test_ring_echo, ring_v6,
						ring_v5),
		cmocka_unit_test_setup_teardown(test_eventq_shmsignal_coalesces,
						ring_v6, ring_v5),
		cmocka_unit_test(test_ring_bad_descriptors),
		cmocka_unit_test(test_busreg_detach),
		cmocka_unit_test(test_ring_limits),
		cmocka_unit_test(test_ring_corrupt_indexes),
		cmocka_unit_test(test_devshm_malformed),
		cmocka_unit_test(test_sigpending_garbage),
		cmocka_unit_test(test_eventq_not_serviced),
		cmocka_unit_test(test_eventq_repost_signal_only_for_backlog),
		cmocka_unit_test(test_eventq_shmsignal_coalesces),
		cmocka_unit_test(test_eventq_bad_descriptor_faults_bus),
		cmocka_unit_test(test_eventq_corrupt_index_faults_bus),
		cmocka_unit_test(test_two_guests_isolated),
		cmocka_unit_test(test_teardown_with_open_rings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
