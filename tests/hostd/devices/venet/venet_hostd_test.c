// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The venet backend inside the real libvbus-hostd, driven
 * through the hypercall mailbox, the doorbells and the eventq by the
 * synthetic guest of fakeguest.c, with a real tap in a private network
 * namespace. venet_tap_test.c covers the device's corner cases (through
 * fg_dev.c); this one checks the plumbing between the two: DEVADD,
 * DEVOPEN, DEVCALLs, DEVSHM with signals, guest doorbells reaching the
 * device, the device's signals reaching the guest as SHMSIGNAL events,
 * DEVCLOSE releasing everything, a fault isolated to the device.
 *
 * Exit 77 (skipped) only when /dev/net/tun is absent.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/if_ether.h>
#include <cmocka.h>

#include <vbus/venet.h>
#include "fakeguest.h"
#include "venet_frame.h"
#include "venet_wire.h"

#define DEV_ID 3
/* for what must happen; a loaded CI machine stalls us for seconds */
#define TIMEOUT_MS 10000

static const __u8 gmac[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0x01 };


/* north reaps one completion with its length */
static int reap_len(struct fg_ring *r, __u64 *len, __u64 *ptr)
{
	struct ioq_ring_desc d;
	int n = fg_ring_reap_bulk(r, &d, 1);

	/* defined either way: callers compare them after asserting n */
	*len = n == 1 ? d.len : 0;
	*ptr = n == 1 ? d.ptr : 0;
	return n;
}

/* pump the host for up to TIMEOUT_MS until @r has a completion */
static int wait_reap(struct fg *f, struct fg_ring *r, __u64 *len, __u64 *ptr)
{
	unsigned long long end = hostd_now_ns() + TIMEOUT_MS * 1000000ull;
	int ret;

	do {
		fg_pump(f);
		ret = reap_len(r, len, ptr);
		if (ret)
			return ret;
		usleep(5000);
	} while (hostd_now_ns() < end);
	fg_pump(f);
	return reap_len(r, len, ptr);
}

static unsigned int shmsignals(struct fg *f, __u64 cookie)
{
	struct vbus_pci_event ev[64];
	unsigned int n, i, hits = 0;

	n = fg_events(f, ev, 64, true);
	for (i = 0; i < n; i++)
		if (ev[i].eventid == VBUS_PCI_EVENT_SHMSIGNAL &&
		    ev[i].data.handle.handle == cookie)
			hits++;
	return hits;
}

static void venet_through_hostd(void **state)
{
	struct fg *f = calloc(1, sizeof(*f));
	struct vbus_pci_event ev[8];
	struct venet_capabilities caps = { VENET_CAP_GROUP_SG,
		VENET_CAP_SG | VENET_CAP_TSO4 | VENET_CAP_TSO6 | VENET_CAP_ECN };
	struct fg_ring rx, tx;
	struct hostd_dev *d;
	__u8 mac[6], tapmac[6], buf[2048];
	__u64 h, len, ptr, sgpa, fgpa;
	struct venet_sg *sg;
	char err[256];
	int ret, ps, i;
	ssize_t n;

	(void)state;
	fg_init(f, "vn");
	/* the seed's name for the type is an alias of venet */
	assert_int_equal(fg_add_dev(f, "type=virtual-ethernet,id=3,tap=vh0,"
				    "mac=02:aa:bb:cc:dd:01", err, sizeof(err)), 0);
	assert_int_equal(fg_negotiate(f), 0);
	assert_int_equal(fg_busreg(f, 64, 64), 0);
	assert_int_equal(fg_events(f, ev, 8, true), 1);
	assert_int_equal(ev[0].eventid, VBUS_PCI_EVENT_DEVADD);
	assert_string_equal(ev[0].data.add.type, VENET_TYPE);

	/* probe, in the driver's order */
	h = fg_devopen(f, DEV_ID, VENET_VERSION + 1, &ret);
	assert_int_equal(ret, -EPROTO);
	h = fg_devopen(f, DEV_ID, VENET_VERSION, &ret);
	assert_int_equal(ret, 0);
	assert_int_equal(fg_devcall(f, h, VENET_FUNC_NEGCAP, &caps,
				    sizeof(caps)), 0);
	assert_int_equal(caps.bits, VENET_CAP_SG | VENET_CAP_TSO4 |
				    VENET_CAP_TSO6 | VENET_CAP_ECN);
	assert_int_equal(fg_devcall(f, h, VENET_FUNC_MACQUERY, mac, 6), 0);
	assert_memory_equal(mac, gmac, 6);
	assert_true(fg_ring_open(f, &rx, h, VENET_QUEUE_RX, 16, 0x100) > 0);
	assert_true(fg_ring_open(f, &tx, h, VENET_QUEUE_TX, 16, 0x101) > 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(fg_ring_post(&rx, fg_alloc(f, 1518), 1518,
					      i == 3), 0);
	assert_int_equal(fg_devcall(f, h, VENET_FUNC_LINKUP, NULL, 0), 0);
	assert_int_equal(system("ip link set vh0 up"), 0);
	ps = pkt_sock("vh0", 0);
	if_mac("vh0", tapmac);

	/* guest -> host: an SG frame, doorbell via sigpending */
	fgpa = fg_alloc(f, 300);
	mk_frame(fg_ptr(f, fgpa, 300), 300, tapmac, gmac, 11);
	sgpa = fg_alloc(f, VENET_SG_SIZE(18));
	sg = fg_ptr(f, sgpa, VENET_SG_SIZE(18));
	sg->len = 300;
	sg->count = 2;
	sg->iov[0].ptr = fgpa;
	sg->iov[0].len = 100;
	sg->iov[1].ptr = fgpa + 100;
	sg->iov[1].len = 200;
	assert_int_equal(fg_ring_post(&tx, sgpa, VENET_SG_SIZE(18), true), 0);
	assert_int_equal(wait_reap(f, &tx, &len, &ptr), 1);
	/* the completion reached the guest as SHMSIGNAL(tx cookie) */
	assert_true(shmsignals(f, 0x101) >= 1);
	for (;;) {
		struct pollfd p = { .fd = ps, .events = POLLIN };

		assert_int_equal(poll(&p, 1, TIMEOUT_MS), 1);
		n = read(ps, buf, sizeof(buf));
		if (n >= 18 && buf[12] == (ETH_TEST >> 8))
			break;
	}
	assert_int_equal(n, 300);
	assert_memory_equal(buf, fg_ptr(f, fgpa, 300), 300);

	/* host -> guest */
	mk_frame(buf, 200, gmac, tapmac, 12);
	assert_int_equal(write(ps, buf, 200), 200);
	assert_int_equal(wait_reap(f, &rx, &len, &ptr), 1);
	assert_int_equal(len, 200);
	assert_memory_equal(fg_ptr(f, ptr, 200), buf, 200);
	assert_true(shmsignals(f, 0x100) >= 1);

	/* FLUSHRX: the 3 left come back empty before the call returns */
	assert_int_equal(fg_devcall(f, h, VENET_FUNC_FLUSHRX, NULL, 0), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(reap_len(&rx, &len, &ptr), 1);
		assert_int_equal(len, 0);
	}

	/* garbage in the tx ring faults the device, not the bus */
	d = hostd_bus_find(&f->g.bus, DEV_ID);
	{
		struct ioq_ring_head *head = fg_ptr(f, tx.gpa, 64);

		head->idx[ioq_idx_consume].tail += 1000;
		ioq_signal(&tx.ioq, 0);	/* dirty=1, then the doorbell */
	}
	assert_true(d->faulted);
	assert_int_equal(fg_devcall(f, h, VENET_FUNC_LINKUP, NULL, 0), -EIO);

	/* DEVCLOSE releases it all; a reopen starts clean and works */
	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVCLOSE, &h, 8), 0);
	fg_ring_close(&rx);
	fg_ring_close(&tx);
	fg_events(f, (struct vbus_pci_event[64]){ 0 }, 64, true);
	h = fg_devopen(f, DEV_ID, VENET_VERSION, &ret);
	assert_int_equal(ret, 0);
	assert_false(d->faulted);
	caps.bits = 0;
	assert_int_equal(fg_devcall(f, h, VENET_FUNC_NEGCAP, &caps,
				    sizeof(caps)), 0);
	assert_true(fg_ring_open(f, &rx, h, VENET_QUEUE_RX, 16, 0x200) > 0);
	assert_true(fg_ring_open(f, &tx, h, VENET_QUEUE_TX, 16, 0x201) > 0);
	assert_int_equal(fg_devcall(f, h, VENET_FUNC_LINKUP, NULL, 0), 0);
	/* plain tx this time (no SG negotiated) */
	fgpa = fg_alloc(f, 80);
	mk_frame(fg_ptr(f, fgpa, 80), 80, tapmac, gmac, 13);
	assert_int_equal(fg_ring_post(&tx, fgpa, 80, true), 0);
	assert_int_equal(wait_reap(f, &tx, &len, &ptr), 1);
	for (;;) {
		struct pollfd p = { .fd = ps, .events = POLLIN };

		assert_int_equal(poll(&p, 1, TIMEOUT_MS), 1);
		n = read(ps, buf, sizeof(buf));
		if (n >= 18 && buf[12] == (ETH_TEST >> 8))
			break;
	}
	assert_int_equal(n, 80);
	/* the device accounted its work with hostd */
	assert_true(d->cnt.descs >= 3);

	assert_int_equal(fg_hc(f, VBUS_PCI_HC_DEVCLOSE, &h, 8), 0);
	fg_ring_close(&rx);
	fg_ring_close(&tx);
	close(ps);
	fg_fini(f);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(venet_through_hostd),
	};
	int rc = wire_netns();

	if (rc)
		return rc;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
