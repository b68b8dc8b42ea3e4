// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Per-queue MSI-X vectors on the host (docs/transport.md, "Per-queue
 * vectors"; userspace/hostd/lib/qvec.c): vectors= wires the guest's
 * vectors and says so in BAR2, NEGOTIATE accepts VBUS_PCI_CAP_QVEC only
 * when there are queue vectors and the guest offered it, a shm bound to
 * a vector is signalled on that vector's eventfd and not on the eventq,
 * and every bad vector a guest names is refused without losing anything;
 * a daemon restarted under the guest keeps the vectors the descriptor
 * store kept, and one whose store has none (an older daemon's) declines
 * them with a log line that says so.
 * The guest is fakeguest.c (the in-memory transport).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include "fakeguest.h"
#include "logcap.h"
#include "qvec.h"

#define COOKIE 0xc0ffee

/* NEGOTIATE offering @offer; the capabilities the host answered. */
static __u64 negotiate(struct fg *f, __u64 offer)
{
	struct vbus_pci_negotiate n = {
		.magic = VBUS_PCI_ABI_MAGIC,
		.version = VBUS_PCI_HC_VERSION,
		.capabilities = offer,
	};

	assert_int_equal(fg_hc(f, VBUS_PCI_HC_NEGOTIATE, &n, sizeof(n)), 0);
	return n.capabilities;
}

/* A vbus-test added, the bus negotiated with @offer (the answer), open. */
static __u64 attach(struct fg *f, __u64 offer, __u64 *h)
{
	char err[256];
	__u64 caps;
	int ret;

	assert_int_equal(fg_add_dev(f, "type=vbus-test,id=1", err,
				    sizeof(err)), 0);
	caps = negotiate(f, offer);
	assert_int_equal(fg_busreg(f, 64, 64), 0);
	*h = fg_devopen(f, 1, VBUS_TEST_VERSION, &ret);
	assert_int_equal(ret, 0);
	return caps;
}

/* A guest with vectors=@vectors, negotiated with @offer, a vbus-test open. */
static struct fg *up(unsigned int vectors, __u64 offer, __u64 *h)
{
	struct fg *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	fg_init_vectors(f, "q", vectors);
	attach(f, offer, h);
	return f;
}

static void down(struct fg *f)
{
	fg_fini(f);
	free(f);
}

/* SHMSIGNALs for our cookie the host posted on the eventq. */
static unsigned int shmsignals(struct fg *f)
{
	struct vbus_pci_event ev[64];
	unsigned int n, i, got = 0;

	n = fg_events(f, ev, 64, true);
	for (i = 0; i < n; i++)
		if (ev[i].eventid == VBUS_PCI_EVENT_SHMSIGNAL &&
		    ev[i].data.handle.handle == COOKIE)
			got++;
	return got;
}

/* One buffer through the ring with a signal; the host echoes it. */
static void traffic(struct fg *f, struct fg_ring *r)
{
	__u64 buf = fg_alloc(f, 64);

	assert_int_equal(fg_ring_post(r, buf, 64, true), 0);
	fg_pump(f);
	assert_int_equal(fg_ring_reap(r), 1);
}

/* vectors= wires that many eventfds and says so in BAR2 line 0. */
static void test_bar2_says_vectors(void **state)
{
	struct fg f;

	(void)state;
	fg_init_vectors(&f, "q", 4);
	assert_int_equal(f.g.iv.shm->msix_vectors, 4);
	assert_int_equal(f.g.iv.nr_msix, 4);
	assert_true(f.g.iv.msix_fd[2] >= 0 && f.g.iv.msix_fd[3] >= 0);
	assert_int_equal(f.g.iv.msix_fd[4], -1);
	assert_int_equal(hostd_ivshmem_qvecs(&f.g.iv), 2);
	/* not while a QEMU (here: the in-memory one) has the vectors */
	assert_int_equal(hostd_ivshmem_set_vectors(&f.g.iv, 8), -EBUSY);
	fg_fini(&f);

	/* the default: HC and EVENTQ only */
	fg_init(&f, "q");
	assert_int_equal(f.g.iv.shm->msix_vectors, VBUS_PCI_NR_VECTORS);
	assert_int_equal(hostd_ivshmem_qvecs(&f.g.iv), 0);
	fg_fini(&f);
}

static void nop(void *arg)
{
	(void)arg;
}

static void nop_doorbell(void *arg, unsigned int v)
{
	(void)arg;
	(void)v;
}

static const struct hostd_ivshmem_ops nops = {
	.connect = nop, .disconnect = nop, .doorbell = nop_doorbell,
};

/* hostd_ivshmem_set_vectors() outside 2..VBUS_PCI_MAX_VECTORS. */
static void test_set_vectors_range(void **state)
{
	struct hostd_ivshmem iv;
	struct hostd_loop loop;
	struct hostd_log_limit log;

	(void)state;
	hostd_log_limit_init(&log, "q");
	assert_int_equal(hostd_loop_init(&loop), 0);
	assert_int_equal(hostd_ivshmem_init(&iv, &loop, &log, "q", &nops,
					    NULL), 0);
	assert_int_equal(hostd_ivshmem_set_vectors(&iv, 0), -EINVAL);
	assert_int_equal(hostd_ivshmem_set_vectors(&iv, 1), -EINVAL);
	assert_int_equal(hostd_ivshmem_set_vectors(&iv, VBUS_PCI_MAX_VECTORS + 1),
			 -EINVAL);
	assert_int_equal(iv.shm->msix_vectors, VBUS_PCI_NR_VECTORS);
	assert_int_equal(hostd_ivshmem_set_vectors(&iv, VBUS_PCI_MAX_VECTORS), 0);
	assert_int_equal(iv.shm->msix_vectors, VBUS_PCI_MAX_VECTORS);
	hostd_ivshmem_fini(&iv);
	hostd_loop_fini(&loop);
}

/* The capability only with queue vectors, and only when offered. */
static void test_negotiate(void **state)
{
	struct fg f;

	(void)state;
	fg_init_vectors(&f, "q", 4);
	assert_true(negotiate(&f, VBUS_PCI_CAP_QVEC) == VBUS_PCI_CAP_QVEC);
	/* bits nobody defined are not echoed */
	assert_true(negotiate(&f, ~0ull) == VBUS_PCI_CAP_QVEC);
	/* an older guest offers nothing and gets nothing */
	assert_true(negotiate(&f, 0) == 0);
	fg_fini(&f);

	/* a host without queue vectors (vectors=2) declines */
	fg_init_vectors(&f, "q", 2);
	assert_true(negotiate(&f, VBUS_PCI_CAP_QVEC) == 0);
	fg_fini(&f);
}

/* A shm bound to a vector: its signals write that vector, not the eventq. */
static void test_signal_on_vector(void **state)
{
	struct fg_ring r;
	struct fg *f;
	__u64 h;
	int ret;

	(void)state;
	f = up(4, VBUS_PCI_CAP_QVEC, &h);
	shmsignals(f);		/* DEVADD & co. */
	ret = fg_ring_open_vector(f, &r, h, VBUS_TEST_SHM_RING, 32, COOKIE, 3);
	assert_true(ret >= 1 && ret < VBUS_PCI_MAX_SIGNALS);
	traffic(f, &r);
	assert_true(fg_msix(f, 3) >= 1);
	assert_int_equal(fg_msix(f, 2), 0);
	assert_int_equal(shmsignals(f), 0);

	/* a signal on demand (north enabled, idle) takes the same way */
	r.sig.desc->irq[shm_locality_north].pending = 0;
	assert_int_equal(fg_devcall(f, h, VBUS_TEST_FUNC_SIGNAL, NULL, 0), 0);
	assert_int_equal(fg_msix(f, 3), 1);
	assert_int_equal(shmsignals(f), 0);
	fg_ring_close(&r);
	down(f);
}

/* An older guest on a host with vectors: SHMSIGNAL on the eventq as ever. */
static void test_old_guest_eventq(void **state)
{
	struct fg_ring r;
	struct fg *f;
	__u64 h;
	int ret;

	(void)state;
	f = up(4, 0, &h);
	shmsignals(f);
	ret = fg_ring_open(f, &r, h, VBUS_TEST_SHM_RING, 32, COOKIE);
	assert_true(ret >= 1);
	traffic(f, &r);
	assert_true(shmsignals(f) >= 1);
	assert_int_equal(fg_msix(f, 2), 0);
	assert_int_equal(fg_msix(f, 3), 0);
	fg_ring_close(&r);
	down(f);
}

/* DEVSHM @vector refused with -EINVAL; nothing registered. */
static void refused(struct fg *f, __u64 h, __u32 vector)
{
	struct fg_ring r;

	assert_int_equal(fg_ring_open_vector(f, &r, h, VBUS_TEST_SHM_RING, 8,
					     COOKIE, vector), -EINVAL);
	fg_ring_close(&r);
}

/* Every vector the guest may not name; the device stays usable. */
static void test_bad_vector(void **state)
{
	struct vbus_pci_deviceshm s;
	struct fg_ring r;
	struct fg *f;
	__u64 h;

	(void)state;
	f = up(4, VBUS_PCI_CAP_QVEC, &h);
	refused(f, h, VBUS_PCI_MSIX_EVENTQ);	/* 0 is "none", 1 is not ours */
	refused(f, h, 4);		/* past vectors= */
	refused(f, h, VBUS_PCI_MAX_VECTORS);
	refused(f, h, 0xffffffffu);

	/* a vector for a shm without a signal */
	memset(&s, 0, sizeof(s));
	s.devh = h;
	s.id = VBUS_TEST_SHM_RING;
	s.len = 4096;
	s.signal.offset = VBUS_PCI_SHM_NO_SIGNAL;
	s.vector = 2;
	s.datap = fg_alloc(f, 4096);
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVSHM, &s, sizeof(s)), -EINVAL);

	/* nothing was taken: the ring id is still free, the device works */
	assert_false(hostd_dev_faulted(hostd_bus_find(&f->g.bus, 1)));
	assert_true(fg_ring_open_vector(f, &r, h, VBUS_TEST_SHM_RING, 32,
					COOKIE, 2) >= 1);
	traffic(f, &r);
	assert_true(fg_msix(f, 2) >= 1);
	fg_ring_close(&r);
	down(f);

	/* vectors wired but the capability not negotiated */
	f = up(4, 0, &h);
	refused(f, h, 2);
	down(f);
}

/*
 * A daemon restarted under a running guest (vectors=4) takes over every
 * vector the store kept: the re-attached guest is granted the capability
 * again and a ring bound to a queue vector is signalled on it, not on
 * the eventq.
 */
static void test_adopted_keeps_vectors(void **state)
{
	struct fg_ring r;
	struct fg *f = calloc(1, sizeof(*f));
	int peer, ret;
	__u64 h;

	(void)state;
	assert_non_null(f);
	fg_init_vectors(f, "q", 4);
	fg_restart(f, 4, 4, &peer);
	assert_int_equal(hostd_ivshmem_qvecs(&f->g.iv), 2);
	assert_true(attach(f, VBUS_PCI_CAP_QVEC, &h) == VBUS_PCI_CAP_QVEC);
	shmsignals(f);
	ret = fg_ring_open_vector(f, &r, h, VBUS_TEST_SHM_RING, 32, COOKIE, 3);
	assert_true(ret >= 1 && ret < VBUS_PCI_MAX_SIGNALS);
	fg_msix(f, 3);		/* the new epoch's interrupts are not ours */
	traffic(f, &r);
	assert_true(fg_msix(f, 3) >= 1);
	assert_int_equal(shmsignals(f), 0);
	fg_ring_close(&r);
	close(peer);
	down(f);
}

/*
 * An older daemon's store kept HC and EVENTQ only: the restarted daemon
 * says so, declines the capability, and the guest's ring is signalled
 * through the eventq.
 */
static void test_adopted_without_vector_fds_declines(void **state)
{
	struct logcap log;
	struct fg_ring r;
	struct fg *f = calloc(1, sizeof(*f));
	const char *text;
	int peer;
	__u64 h;

	(void)state;
	assert_non_null(f);
	fg_init_vectors(f, "q", 4);
	logcap_begin(&log);
	fg_restart(f, 4, VBUS_PCI_NR_VECTORS, &peer);
	text = logcap_end(&log);
	assert_non_null(strstr(text, "the stored connection has no queue vector eventfds (vectors=4; stored by an older vbus-hostd"));
	assert_non_null(strstr(text, "per-queue vectors declined, the guest's queues are signalled through the eventq until QEMU connects again"));
	assert_int_equal(hostd_ivshmem_qvecs(&f->g.iv), 0);
	assert_true(attach(f, VBUS_PCI_CAP_QVEC, &h) == 0);
	shmsignals(f);
	assert_true(fg_ring_open(f, &r, h, VBUS_TEST_SHM_RING, 32, COOKIE) >= 1);
	traffic(f, &r);
	assert_true(shmsignals(f) >= 1);
	fg_ring_close(&r);
	close(peer);
	down(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bar2_says_vectors),
		cmocka_unit_test(test_set_vectors_range),
		cmocka_unit_test(test_negotiate),
		cmocka_unit_test(test_signal_on_vector),
		cmocka_unit_test(test_old_guest_eventq),
		cmocka_unit_test(test_bad_vector),
		cmocka_unit_test(test_adopted_keeps_vectors),
		cmocka_unit_test(test_adopted_without_vector_fds_declines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
