// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The venet backend end to end, minus QEMU: the "venet" device
 * (userspace/hostd/devices/venet/) inside libvbus-hostd, driven by a
 * synthetic guest through hypercalls, doorbells and the eventq (fg_dev.c
 * over fakeguest.c: memfd RAM, rings formatted north by the test) and a
 * real tap inside a network namespace this process creates for itself
 * (unshare(CLONE_NEWNET)): the host's own interfaces are never touched.
 * The "host side" of the wire is an AF_PACKET socket on the tap.
 *
 * Exit code 77 (ctest: skipped, not passed) only when /dev/net/tun is
 * absent.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <cmocka.h>

#include <vbus/venet.h>
#include "venet_frame.h"
#include "fg_dev.h"
#include "venet_wire.h"

/* for what must happen; a loaded CI machine stalls us for seconds */
#define TIMEOUT_MS 10000

static const __u8 guest_mac[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };

/* ---- the fixture ----------------------------------------------------------- */

struct fx {
	struct hostd_dev *dev;
	struct fg_ring rx, tx;
	char tap[IFNAMSIZ];
	__u8 tapmac[6];
	int ps;		/* AF_PACKET on the tap, with vnet header */
	__u32 caps;
	/* guest rx bookkeeping */
	__u64 rxbuf[256];
	__u32 rxlen;
	unsigned int reaped;
	__u64 last_len[512];
	__u64 last_cookie[512];
};

static unsigned int tapno;

/* Device up the way the guest driver brings it up (docs/devices/venet.md order). */
static void fx_up(struct fx *f, const char *extra, __u32 caps_req)
{
	char params[256];
	struct venet_capabilities caps = { VENET_CAP_GROUP_SG, caps_req };
	__u8 mac[6];
	int err;

	memset(f, 0, sizeof(*f));
	f->ps = -1;
	snprintf(f->tap, sizeof(f->tap), "vt%u", tapno++);
	snprintf(params, sizeof(params), "tap=%s,mac=02:11:22:33:44:55%s%s",
		 f->tap, extra ? "," : "", extra ? extra : "");
	f->dev = fgd_dev_create(VENET_TYPE, params, &err);
	assert_non_null(f->dev);
	assert_int_equal(fgd_dev_open(f->dev, VENET_VERSION), 0);
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_NEGCAP, &caps,
				 sizeof(caps)), 0);
	f->caps = caps.bits;
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_MACQUERY, mac, 6), 0);
	assert_memory_equal(mac, guest_mac, 6);
	assert_int_equal(fgd_ring_attach(f->dev, VENET_QUEUE_RX, 64, &f->rx), 0);
	assert_int_equal(fgd_ring_attach(f->dev, VENET_QUEUE_TX, 256, &f->tx),
			 0);
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_LINKUP, NULL, 0), 0);
	assert_int_equal(sh("ip link set %s up", f->tap), 0);
	if_mac(f->tap, f->tapmac);
	f->ps = pkt_sock(f->tap, 1);
	f->rxlen = 1518;
}

static void fx_down(struct fx *f)
{
	if (f->ps >= 0)
		close(f->ps);
	f->ps = -1;
	if (f->dev)
		fgd_dev_destroy(f->dev);
	f->dev = NULL;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || fgd_init())
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	fx_down(f);
	free(f);
	fgd_fini();
	return 0;
}

/* epoll events the device asked for on its tap fd (-1: not watched) */
static long tap_events(struct fx *f)
{
	char path[64], link[64];
	long ev = -1;
	int fd;

	/* of our tun fds, the one the device watches */
	for (fd = 3; fd < 1024 && ev < 0; fd++) {
		ssize_t l;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		l = readlink(path, link, sizeof(link) - 1);
		if (l <= 0)
			continue;
		link[l] = '\0';
		if (!strcmp(link, "/dev/net/tun"))
			ev = hostd_dev_fd_events(f->dev, fd);
	}
	return ev;
}

static bool tap_polled(void *arg)
{
	return tap_events(arg) & EPOLLIN;
}

/* out of rx buffers: counted, and the tap no longer polled */
static bool rx_starved(void *arg)
{
	struct fx *f = arg;

	return fgd_stat(f->dev, "rx_starved") >= 1 &&
	       !(tap_events(f) & EPOLLIN);
}

static bool dev_faulted(void *arg)
{
	struct fx *f = arg;

	return fgd_dev_faulted(f->dev);
}

static bool backend_gone(void *arg)
{
	struct fx *f = arg;

	return fgd_stat(f->dev, "backend_lost") >= 1 &&
	       !strcmp(fgd_stat_str(f->dev, "backend"), "none");
}

/* guest: post @n rx buffers of f->rxlen */
static void rx_post(struct fx *f, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		__u64 gpa = fgd_alloc(f->rxlen, 64);

		assert_int_equal(fgd_post(&f->rx, gpa, f->rxlen, gpa), 0);
	}
}

/* guest: send a flat frame; returns its gpa */
static __u64 tx_flat(struct fx *f, size_t len, __u32 seq)
{
	__u64 gpa = fgd_alloc(len, 64);

	mk_frame(fgd_ram(gpa), len, f->tapmac, guest_mac, seq);
	assert_int_equal(fgd_post(&f->tx, gpa, len, seq), 0);
	return gpa;
}

/* guest: a venet_sg (with room for 18 iovs, as the driver posts it) */
static struct venet_sg *sg_new(__u64 *gpa)
{
	*gpa = fgd_alloc(VENET_SG_SIZE(18), 64);
	return fgd_ram(*gpa);
}

/* guest: the frame in @n pieces behind a venet_sg */
static __u64 tx_sg(struct fx *f, const __u8 *frame, size_t len,
		   unsigned int n, __u64 cookie)
{
	__u64 gpa;
	struct venet_sg *sg = sg_new(&gpa);
	size_t off = 0, piece = (len + n - 1) / n;
	unsigned int i;

	sg->len = (__u32)len;
	for (i = 0; i < n && off < len; i++) {
		size_t l = len - off < piece ? len - off : piece;
		__u64 b = fgd_alloc(l, 1);

		memcpy(fgd_ram(b), frame + off, l);
		sg->iov[i].ptr = b;
		sg->iov[i].len = (__u32)l;
		off += l;
	}
	sg->count = i;
	assert_int_equal(fgd_post(&f->tx, gpa, VENET_SG_SIZE(18), cookie), 0);
	return gpa;
}

struct reap_goal {
	struct fx *f;
	struct fg_ring *r;
	unsigned int want;
};

static bool reap_more(void *arg)
{
	struct reap_goal *g = arg;
	struct fx *f = g->f;
	__u64 len, cookie;

	while (f->reaped < g->want && fgd_reap(g->r, &len, &cookie) == 1) {
		f->last_len[f->reaped % 512] = len;
		f->last_cookie[f->reaped % 512] = cookie;
		f->reaped++;
	}
	return f->reaped >= g->want;
}

/* run the host until the guest reaped @want completions in total on @r */
static bool run_reap(struct fx *f, struct fg_ring *r, unsigned int want)
{
	struct reap_goal g = { f, r, want };

	return fgd_run_until(reap_more, &g, TIMEOUT_MS);
}

/* the guest has had a completion signal on its tx ring */
static bool tx_signalled(void *arg)
{
	struct fx *f = arg;

	return fgd_irqs(&f->tx) >= 1;
}

/* ---- tests ----------------------------------------------------------------- */

static void tx_plain(void **state)
{
	struct fx *f = *state;
	__u8 buf[2048];
	unsigned int i, got = 0;
	struct virtio_net_hdr vh;

	fx_up(f, NULL, 0);
	assert_int_equal(f->caps, 0);
	for (i = 0; i < 16; i++)
		tx_flat(f, 60 + i * 96, i);
	assert_true(run_reap(f, &f->tx, 16));

	while (got < 16) {
		ssize_t n = pkt_recv(f->ps, 1, &vh, buf, sizeof(buf),
				     TIMEOUT_MS);

		assert_true(n > 0);
		if (!is_test_frame(buf, (size_t)n))
			continue;
		assert_int_equal(n, 60 + got * 96);
		check_frame(buf, (size_t)n, got);
		assert_int_equal(vh.gso_type, VIRTIO_NET_HDR_GSO_NONE);
		got++;
	}
	assert_int_equal(fgd_stat(f->dev, "tx_packets"), 16);
	assert_int_equal(fgd_stat(f->dev, "tx_bad"), 0);
	assert_false(fgd_dev_faulted(f->dev));
	/*
	 * tx completion was signalled to the guest: at once, or when a hold
	 * (doorbell_mask_us, venet_tx_hold.c) ends
	 */
	assert_true(fgd_run_until(tx_signalled, f, TIMEOUT_MS));
}

/* IPv4/UDP frame with a partial checksum (pseudo-header sum in place) */
static size_t mk_udp(__u8 *b, size_t paylen, const __u8 dst[6])
{
	const __u8 ga[4] = { 10, 0, 0, 2 }, ha[4] = { 10, 0, 0, 1 };
	size_t len = 14 + 20 + 8 + paylen, i;

	mk_ipv4_udp(b, len, dst, guest_mac, ga, ha, 7, 9);
	for (i = 42; i < len; i++)
		b[i] = (__u8)i;
	return len;
}

static void tx_sg_csum(void **state)
{
	struct fx *f = *state;
	__u8 frame[1600], buf[2048];
	struct virtio_net_hdr vh;
	struct venet_sg *sg;
	size_t len;
	ssize_t n;
	__u64 gpa;

	fx_up(f, NULL, VENET_CAP_SG | VENET_CAP_TSO4 | VENET_CAP_TSO6 |
		       VENET_CAP_ECN | VENET_CAP_UFO);
	/* everything but UFO granted, never a bit not requested */
	assert_int_equal(f->caps, VENET_CAP_SG | VENET_CAP_TSO4 |
				  VENET_CAP_TSO6 | VENET_CAP_ECN);

	/* a plain test frame in 3 pieces */
	mk_frame(frame, 1000, f->tapmac, guest_mac, 77);
	tx_sg(f, frame, 1000, 3, 1);

	/* a UDP frame in 4 pieces, checksum left to the host kernel */
	len = mk_udp(frame, 1200, f->tapmac);
	gpa = tx_sg(f, frame, len, 4, 2);
	sg = fgd_ram(gpa);
	sg->flags = VENET_SG_FLAG_NEEDS_CSUM;
	sg->csum.start = 34;
	sg->csum.offset = 6;

	assert_true(run_reap(f, &f->tx, 2));

	do {
		n = pkt_recv(f->ps, 1, &vh, buf, sizeof(buf), TIMEOUT_MS);
		assert_true(n > 0);
	} while (!is_test_frame(buf, (size_t)n));
	assert_int_equal(n, 1000);
	check_frame(buf, 1000, 77);

	do {
		n = pkt_recv(f->ps, 1, &vh, buf, sizeof(buf), TIMEOUT_MS);
		assert_true(n > 0);
	} while (buf[12] != 0x08 || buf[23] != 17);
	assert_int_equal(n, (ssize_t)len);
	/* the tap took our checksum request as such */
	assert_true(vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM);
	assert_int_equal(vh.csum_start, 34);
	assert_int_equal(vh.csum_offset, 6);
	assert_int_equal(fgd_stat(f->dev, "tx_csum"), 1);
	assert_int_equal(fgd_stat(f->dev, "tx_packets"), 2);
}

/* ---- GSO: a 64 KiB TSO frame, segmented by the host kernel ---- */

static __u16 csum16(const __u8 *p, size_t len, __u32 sum)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (__u32)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

#define GSO_PAY 65000u
#define GSO_MSS 1448u

static size_t mk_tso(__u8 *b, const __u8 dst[6])
{
	const size_t hl = 14 + 20 + 20, len = hl + GSO_PAY;
	__u16 c;
	size_t i;
	__u8 ph[12];

	memset(b, 0, hl);
	memcpy(b, dst, 6);
	memcpy(b + 6, guest_mac, 6);
	b[12] = 0x08;
	/* IPv4 10.1.0.2 -> 10.2.0.2, DF, TTL 64, TCP */
	b[14] = 0x45;
	b[16] = (__u8)((len - 14) >> 8);
	b[17] = (__u8)(len - 14);
	b[20] = 0x40;
	b[22] = 64;
	b[23] = 6;
	b[26] = 10; b[27] = 1; b[29] = 2;
	b[30] = 10; b[31] = 2; b[33] = 2;
	c = (__u16)~csum16(b + 14, 20, 0);
	b[24] = (__u8)(c >> 8);
	b[25] = (__u8)c;
	/* TCP 40000 -> 5001, seq 1000, ACK|PSH, doff 5 */
	b[34] = 40000 >> 8; b[35] = 40000 & 0xff;
	b[36] = 5001 >> 8; b[37] = 5001 & 0xff;
	b[40] = 0x03; b[41] = 0xe8;
	b[46] = 0x50;
	b[47] = 0x18;
	b[48] = 0xff; b[49] = 0xff;
	/* partial checksum: the pseudo header, not complemented */
	memcpy(ph, b + 26, 8);
	ph[8] = 0;
	ph[9] = 6;
	ph[10] = (__u8)((20 + GSO_PAY) >> 8);
	ph[11] = (__u8)(20 + GSO_PAY);
	c = csum16(ph, 12, 0);
	b[50] = (__u8)(c >> 8);
	b[51] = (__u8)c;
	for (i = hl; i < len; i++)
		b[i] = (__u8)((i - hl) * 7 + 3);
	return len;
}

static void tx_gso(void **state)
{
	struct fx *f = *state;
	static __u8 frame[70000], buf[70000];
	struct virtio_net_hdr vh;
	struct venet_sg *sg;
	size_t len;
	ssize_t n;
	__u64 gpa;
	int cap = -1, fwd = 0;
	unsigned int segs = 0, pay = 0, next = 0;

	fx_up(f, NULL, VENET_CAP_SG | VENET_CAP_TSO4 | VENET_CAP_TSO6 |
		       VENET_CAP_ECN);

	/*
	 * Host-side plumbing, all inside our namespace: 10.1.0.0/24 on the
	 * tap, a veth pair with 10.2.0.0/24 and TSO off on the sending end,
	 * forwarding on. A TSO frame from the guest is then forwarded out
	 * vfa and segmented in software on the way; we count segments on
	 * vfb.
	 */
	if (sh("ip addr add 10.1.0.1/24 dev %s", f->tap) == 0 &&
	    sh("ip link add vfa type veth peer name vfb") == 0 &&
	    sh("ip addr add 10.2.0.1/24 dev vfa") == 0 &&
	    sh("ip link set vfa up && ip link set vfb up") == 0 &&
	    sh("ethtool -K vfa tso off >/dev/null 2>&1") == 0 &&
	    sh("ethtool -K vfb gro off >/dev/null 2>&1 || true") == 0 &&
	    sh("ip neigh replace 10.2.0.2 lladdr 02:00:00:00:00:bb dev vfa "
	       "nud permanent") == 0) {
		write_file("/proc/sys/net/ipv4/ip_forward", "1");
		cap = pkt_sock("vfb", 0);
		fwd = 1;
	} else {
		fprintf(stderr, "[test] no veth/ethtool: checking only that "
			"the tap accepts the TSO frame\n");
	}

	len = mk_tso(frame, f->tapmac);
	gpa = tx_sg(f, frame, len, 17, 9);
	sg = fgd_ram(gpa);
	sg->flags = VENET_SG_FLAG_NEEDS_CSUM | VENET_SG_FLAG_GSO;
	sg->csum.start = 34;
	sg->csum.offset = 16;
	sg->gso.type = VENET_GSO_TYPE_TCPV4;
	sg->gso.hdrlen = 54;
	sg->gso.size = GSO_MSS;

	assert_true(run_reap(f, &f->tx, 1));
	assert_int_equal(fgd_stat(f->dev, "tx_errors"), 0);
	assert_int_equal(fgd_stat(f->dev, "tx_gso"), 1);
	assert_int_equal(fgd_stat(f->dev, "tx_packets"), 1);

	/* the tap accepted it whole, with its GSO metadata */
	do {
		n = pkt_recv(f->ps, 1, &vh, buf, sizeof(buf), TIMEOUT_MS);
		assert_true(n > 0);
	} while (buf[12] != 0x08 || buf[23] != 6);
	assert_int_equal(n, (ssize_t)len);
	assert_int_equal(vh.gso_type & ~VIRTIO_NET_HDR_GSO_ECN,
			 VIRTIO_NET_HDR_GSO_TCPV4);
	assert_int_equal(vh.gso_size, GSO_MSS);
	assert_memory_equal(buf + 54, frame + 54, GSO_PAY);

	if (!fwd)
		return;
	/* ... and arrived as MSS-sized segments on the far side */
	while (pay < GSO_PAY &&
	       (n = pkt_recv(cap, 0, NULL, buf, sizeof(buf), TIMEOUT_MS)) > 0) {
		__u32 seq;
		size_t l;

		if (buf[12] != 0x08 || buf[23] != 6)
			continue;
		assert_true(n <= 14 + 1500);
		l = (size_t)n - 54;
		assert_true(l <= GSO_MSS);
		seq = (__u32)buf[38] << 24 | (__u32)buf[39] << 16 |
		      (__u32)buf[40] << 8 | buf[41];
		assert_int_equal(seq, 1000 + next);
		assert_memory_equal(buf + 54, frame + 54 + next, l);
		next += (unsigned int)l;
		pay += (unsigned int)l;
		segs++;
	}
	close(cap);
	sh("ip link del vfa");
	fprintf(stderr, "[test] 64 KiB TSO frame -> %u segments\n", segs);
	assert_int_equal(pay, GSO_PAY);
	assert_int_equal(segs, (GSO_PAY + GSO_MSS - 1) / GSO_MSS);
}

/* guest, RXSG: post a venet_sg over @pages 4 KiB pages; cookie = its gpa */
static __u64 rx_post_sg(struct fx *f, unsigned int pages)
{
	__u64 gpa = fgd_alloc(VENET_SG_SIZE(pages), 64);
	struct venet_sg *sg = fgd_ram(gpa);
	unsigned int i;

	memset(sg, 0, VENET_SG_SIZE(pages));
	sg->count = pages;
	sg->len = pages * 4096;
	for (i = 0; i < pages; i++) {
		sg->iov[i].ptr = fgd_alloc(4096, 4096);
		sg->iov[i].len = 4096;
	}
	assert_int_equal(fgd_post(&f->rx, gpa, VENET_SG_SIZE(pages), gpa), 0);
	return gpa;
}

/* the frame in a completed RXSG buffer matches @want */
static void check_rx_sg(__u64 gpa, const __u8 *want, size_t len)
{
	struct venet_sg *sg = fgd_ram(gpa);
	size_t off = 0;
	__u32 i;

	for (i = 0; i < sg->count && off < len; i++) {
		size_t l = len - off < sg->iov[i].len ? len - off :
							 sg->iov[i].len;

		assert_memory_equal(fgd_ram(sg->iov[i].ptr), want + off, l);
		off += l;
	}
	assert_int_equal(off, len);
}

/*
 * RXSG: the tap's offloads are on, a 64 KiB TCP GSO frame from the host's
 * stack reaches the guest whole, with its checksum/GSO state in the
 * guest's venet_sg; a small frame comes without; a too-small buffer drops.
 */
static void rx_sg_gso(void **state)
{
	struct fx *f = *state;
	static __u8 frame[70000];
	struct virtio_net_hdr vh = { 0 };
	struct iovec iov[2];
	struct venet_sg *sg;
	__u8 small[200];
	size_t len;
	__u64 g1, g2, g3;

	fx_up(f, NULL, VENET_CAP_SG | VENET_CAP_TSO4 | VENET_CAP_RXSG);
	assert_int_equal(f->caps, VENET_CAP_SG | VENET_CAP_TSO4 |
				  VENET_CAP_RXSG);

	g1 = rx_post_sg(f, 17);
	g2 = rx_post_sg(f, 17);

	len = mk_tso(frame, guest_mac);
	memcpy(frame + 6, f->tapmac, 6);
	vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	vh.csum_start = 34;
	vh.csum_offset = 16;
	vh.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	vh.gso_size = GSO_MSS;
	vh.hdr_len = 54;
	iov[0].iov_base = &vh;
	iov[0].iov_len = sizeof(vh);
	iov[1].iov_base = frame;
	iov[1].iov_len = len;
	/* into the tap through its xmit path: segmented unless TSO is on */
	assert_int_equal(writev(f->ps, iov, 2), (ssize_t)(sizeof(vh) + len));
	mk_frame(small, sizeof(small), guest_mac, f->tapmac, 7);
	pkt_send(f->ps, small, sizeof(small));

	assert_true(run_reap(f, &f->rx, 2));
	assert_int_equal(f->last_cookie[0], g1);
	assert_int_equal(f->last_len[0], len);
	sg = fgd_ram(g1);
	assert_int_equal(sg->len, len);
	assert_true(sg->flags & VENET_SG_FLAG_GSO);
	assert_true(sg->flags & VENET_SG_FLAG_NEEDS_CSUM);
	assert_int_equal(sg->csum.start, 34);
	assert_int_equal(sg->csum.offset, 16);
	assert_int_equal(sg->gso.type, VENET_GSO_TYPE_TCPV4);
	assert_int_equal(sg->gso.size, GSO_MSS);
	assert_true(sg->gso.hdrlen <= len);
	assert_int_equal(sg->count, 17);
	check_rx_sg(g1, frame, len);

	assert_int_equal(f->last_cookie[1], g2);
	assert_int_equal(f->last_len[1], sizeof(small));
	sg = fgd_ram(g2);
	assert_int_equal(sg->len, sizeof(small));
	assert_int_equal(sg->flags & VENET_SG_FLAG_GSO, 0);
	check_rx_sg(g2, small, sizeof(small));
	assert_int_equal(fgd_stat(f->dev, "rx_gso"), 1);
	assert_int_equal(fgd_stat(f->dev, "rx_packets"), 2);

	/* a buffer too small for the GSO frame: dropped, kept for the next */
	g3 = rx_post_sg(f, 2);
	assert_int_equal(writev(f->ps, iov, 2), (ssize_t)(sizeof(vh) + len));
	pkt_send(f->ps, small, sizeof(small));
	assert_true(run_reap(f, &f->rx, 3));
	assert_int_equal(f->last_cookie[2], g3);
	assert_int_equal(f->last_len[2], sizeof(small));
	check_rx_sg(g3, small, sizeof(small));
	assert_int_equal(fgd_stat(f->dev, "rx_too_big"), 1);
}

/* RXSG: a malformed rx venet_sg goes back empty, never overflows */
static void rx_sg_malformed(void **state)
{
	struct fx *f = *state;
	__u64 gpa = fgd_alloc(VENET_SG_SIZE(4), 64);
	struct venet_sg *sg = fgd_ram(gpa);

	fx_up(f, NULL, VENET_CAP_SG | VENET_CAP_RXSG);
	memset(sg, 0, VENET_SG_SIZE(4));
	sg->count = 100000;
	assert_int_equal(fgd_post(&f->rx, gpa, VENET_SG_SIZE(4), 1), 0);
	assert_true(run_reap(f, &f->rx, 1));
	assert_int_equal(f->last_len[0], 0);
	assert_int_equal(fgd_stat(f->dev, "rx_bad"), 1);
}

/* ---- rx ---- */

static void check_rx(struct fx *f, unsigned int from, unsigned int to,
		     __u32 seq0, size_t len)
{
	unsigned int i;

	for (i = from; i < to; i++) {
		assert_int_equal(f->last_len[i], len);
		check_frame(fgd_ram(f->last_cookie[i]), len, seq0 + i - from);
	}
}

static void rx_backpressure(void **state)
{
	struct fx *f = *state;
	__u8 frame[600];
	unsigned int i;

	fx_up(f, NULL, 0);
	/* no buffers yet: the tap is not polled */
	fgd_run_for(20);
	assert_int_equal(tap_events(f) & EPOLLIN, 0);
	rx_post(f, 8);
	/* buffers, nothing to read: polling the tap */
	assert_true(fgd_run_until(tap_polled, f, TIMEOUT_MS));

	for (i = 0; i < 20; i++) {
		mk_frame(frame, 600, guest_mac, f->tapmac, i);
		pkt_send(f->ps, frame, 600);
	}
	assert_true(run_reap(f, &f->rx, 8));
	check_rx(f, 0, 8, 0, 600);
	/* out of buffers: counted; backpressure: the tap is no longer polled */
	assert_true(fgd_run_until(rx_starved, f, TIMEOUT_MS));
	fgd_run_for(50);
	/* nothing more arrived, nothing was dropped, still not polled */
	assert_int_equal(fgd_reap(&f->rx, NULL, NULL), 0);
	assert_int_equal(tap_events(f) & EPOLLIN, 0);
	assert_int_equal(fgd_stat(f->dev, "rx_packets"), 8);
	/* the guest was told (batched: at most one signal per frame) */
	i = (unsigned int)fgd_irqs(&f->rx);
	assert_true(i >= 1 && i <= 8);

	/* the guest re-posts: delivery resumes where it stopped */
	rx_post(f, 8);
	assert_true(run_reap(f, &f->rx, 16));
	check_rx(f, 8, 16, 8, 600);
	rx_post(f, 8);
	assert_true(run_reap(f, &f->rx, 20));
	check_rx(f, 16, 20, 16, 600);
	assert_int_equal(fgd_stat(f->dev, "rx_packets"), 20);
	assert_int_equal(fgd_stat(f->dev, "rx_bytes"), 20 * 600);
	assert_int_equal(fgd_stat(f->dev, "rx_too_big"), 0);
}

static void rx_too_big(void **state)
{
	struct fx *f = *state;
	__u8 frame[600];

	fx_up(f, NULL, 0);
	f->rxlen = 100;
	rx_post(f, 2);
	mk_frame(frame, 500, guest_mac, f->tapmac, 1);
	pkt_send(f->ps, frame, 500);
	mk_frame(frame, 101, guest_mac, f->tapmac, 2);
	pkt_send(f->ps, frame, 101);
	mk_frame(frame, 100, guest_mac, f->tapmac, 3);
	pkt_send(f->ps, frame, 100);
	mk_frame(frame, 60, guest_mac, f->tapmac, 4);
	pkt_send(f->ps, frame, 60);
	assert_true(run_reap(f, &f->rx, 2));
	/* too big by 400 and by 1: dropped, the buffers kept for the next */
	check_rx(f, 0, 1, 3, 100);	/* an exact fit is not "too big" */
	check_rx(f, 1, 2, 4, 60);
	assert_int_equal(fgd_stat(f->dev, "rx_too_big"), 2);
}

static void rx_flush(void **state)
{
	struct fx *f = *state;
	unsigned int i;

	fx_up(f, NULL, 0);
	rx_post(f, 16);
	fgd_run_for(20);
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_FLUSHRX, NULL, 0), 0);
	/* all returned by the time the call returns */
	for (i = 0; i < 16; i++)
		assert_int_equal(fgd_reap(&f->rx, &f->last_len[i], NULL), 1);
	for (i = 0; i < 16; i++)
		assert_int_equal(f->last_len[i], 0);
	assert_int_equal(fgd_reap(&f->rx, NULL, NULL), 0);
	assert_int_equal(fgd_stat(f->dev, "rx_flushed"), 16);
	assert_true(fgd_irqs(&f->rx) >= 1);
}

/*
 * rx_coalesce_us (venet_rx_coalesce.c). The periods here are the most
 * (10 ms), so a stalled test machine does not end one before the check.
 */
#define COALESCE_MAX "rx_coalesce_us=10000,doorbell_mask_us=10000"

/* @n frames of @len into the tap at once: one rx batch on the host */
static void rx_send(struct fx *f, unsigned int n, size_t len, __u32 seq)
{
	__u8 frame[1500];
	unsigned int i;

	for (i = 0; i < n; i++) {
		mk_frame(frame, len, guest_mac, f->tapmac, seq + i);
		pkt_send(f->ps, frame, len);
	}
}

static bool rx_signalled(void *arg)
{
	struct fx *f = arg;

	return fgd_irqs(&f->rx) >= 1;
}

/* guest: @n rx buffers posted, and the host reading the tap for them */
static void rx_ready(struct fx *f, unsigned int n)
{
	rx_post(f, n);
	assert_true(fgd_run_until(tap_polled, f, TIMEOUT_MS));
}

/* a stream's batch (16 x 1400 bytes) signals, then starts a period */
static void rx_stream_period(struct fx *f)
{
	rx_ready(f, 32);
	rx_send(f, 16, 1400, 0);
	assert_true(run_reap(f, &f->rx, 16));
	assert_true(fgd_irqs(&f->rx) >= 1);
}

static void rx_stream_coalesced(void **state)
{
	struct fx *f = *state;

	fx_up(f, COALESCE_MAX, 0);
	assert_int_equal(fgd_stat(f->dev, "rx_coalesce_us"), 10000);
	rx_stream_period(f);
	/* within the period: published, the signal waits */
	rx_send(f, 1, 60, 16);
	assert_true(run_reap(f, &f->rx, 17));
	assert_int_equal(fgd_irqs(&f->rx), 0);
	assert_int_equal(fgd_stat(f->dev, "rx_coalesced"), 1);
	/* the period's end brings it */
	assert_true(fgd_run_until(rx_signalled, f, TIMEOUT_MS));
}

static void rx_small_not_coalesced(void **state)
{
	struct fx *f = *state;

	fx_up(f, COALESCE_MAX, 0);
	rx_ready(f, 4);
	rx_send(f, 1, 60, 0);
	assert_true(run_reap(f, &f->rx, 1));
	assert_int_equal(fgd_irqs(&f->rx), 1);
	rx_send(f, 1, 60, 1);
	assert_true(run_reap(f, &f->rx, 2));
	assert_int_equal(fgd_irqs(&f->rx), 1);
	assert_int_equal(fgd_stat(f->dev, "rx_coalesced"), 0);
}

static void rx_coalesce_zero(void **state)
{
	struct fx *f = *state;

	fx_up(f, "rx_coalesce_us=0", 0);
	rx_stream_period(f);
	rx_send(f, 1, 60, 16);
	assert_true(run_reap(f, &f->rx, 17));
	assert_int_equal(fgd_irqs(&f->rx), 1);
	assert_int_equal(fgd_stat(f->dev, "rx_coalesced"), 0);
}

/* the guest sends a stream on the pair: the ACKs coming back wait too */
static void rx_acks_of_tx_stream(void **state)
{
	struct fx *f = *state;
	unsigned int i;

	fx_up(f, COALESCE_MAX, 0);
	rx_ready(f, 4);
	for (i = 0; i < 12; i++)
		tx_flat(f, 1400, i);
	assert_true(run_reap(f, &f->tx, 12));
	/* the tx ring is held (16800 bytes since it slept) */
	assert_false(fgd_host_unmasked(&f->tx));
	/* the first ACK signals at once and starts a period */
	rx_send(f, 1, 60, 0);
	f->reaped = 0;
	assert_true(run_reap(f, &f->rx, 1));
	assert_true(fgd_irqs(&f->rx) >= 1);
	/* the next waits for its end */
	rx_send(f, 1, 60, 1);
	assert_true(run_reap(f, &f->rx, 2));
	assert_int_equal(fgd_irqs(&f->rx), 0);
	assert_int_equal(fgd_stat(f->dev, "rx_coalesced"), 1);
	assert_true(fgd_run_until(rx_signalled, f, TIMEOUT_MS));
}

/* the guest receives a stream on the pair: its ACKs are held */
static void tx_acks_of_rx_stream(void **state)
{
	struct fx *f = *state;

	fx_up(f, COALESCE_MAX, 0);
	rx_stream_period(f);
	tx_flat(f, 60, 0);
	f->reaped = 0;
	assert_true(run_reap(f, &f->tx, 1));
	assert_false(fgd_host_unmasked(&f->tx));
	assert_int_equal(fgd_stat(f->dev, "tx_packets"), 1);
}

/*
 * After a transfer, small frames a millisecond apart (a request/response
 * exchange) fall in every 2 ms period; they must not keep the period
 * going (else an ACK hold and an ACK coalescing could renew each other
 * for ever): within a few periods each signals at once again.
 */
static void rx_period_ends_without_stream(void **state)
{
	struct fx *f = *state;
	__u64 coalesced = 0;
	unsigned int i;

	fx_up(f, "rx_coalesce_us=2000", 0);
	rx_stream_period(f);
	rx_post(f, 32);
	for (i = 0; i < 20; i++) {
		rx_send(f, 1, 60, 16 + i);
		assert_true(run_reap(f, &f->rx, 17 + i));
		fgd_run_for(1);
		if (i == 14)
			coalesced = fgd_stat(f->dev, "rx_coalesced");
	}
	/* 14 ms and more after the transfer nothing waited any more */
	assert_int_equal(fgd_stat(f->dev, "rx_coalesced"), coalesced);
}

/* the same for a tx hold: small frames after a stream end it */
static void tx_hold_ends_without_stream(void **state)
{
	struct fx *f = *state;
	__u64 holds = 0;
	unsigned int i;

	fx_up(f, "doorbell_mask_us=2000", 0);
	for (i = 0; i < 12; i++)
		tx_flat(f, 1400, i);
	assert_true(run_reap(f, &f->tx, 12));
	for (i = 0; i < 20; i++) {
		tx_flat(f, 60, 12 + i);
		assert_true(run_reap(f, &f->tx, 13 + i));
		fgd_run_for(1);
		if (i == 14)
			holds = fgd_stat(f->dev, "tx_holds");
	}
	assert_int_equal(fgd_stat(f->dev, "tx_holds"), holds);
	assert_true(fgd_host_unmasked(&f->tx));
}

static void link_down(void **state)
{
	struct fx *f = *state;
	__u8 frame[200];

	fx_up(f, NULL, 0);
	rx_post(f, 4);
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_LINKDOWN, NULL, 0), 0);
	/* tx is still consumed (so the guest can reap), but not sent */
	tx_flat(f, 100, 1);
	assert_true(run_reap(f, &f->tx, 1));
	assert_int_equal(fgd_stat(f->dev, "tx_dropped"), 1);
	assert_int_equal(fgd_stat(f->dev, "tx_packets"), 0);
	/* nothing delivered while down; the posted buffers stay posted */
	f->reaped = 0;
	fgd_run_for(50);
	assert_int_equal(fgd_reap(&f->rx, NULL, NULL), 0);
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_LINKUP, NULL, 0), 0);
	mk_frame(frame, 200, guest_mac, f->tapmac, 5);
	pkt_send(f->ps, frame, 200);
	assert_true(run_reap(f, &f->rx, 1));
	check_rx(f, 0, 1, 5, 200);
}

/* many frames, one doorbell: the device polls, it doesn't sleep */
static void tx_burst_polls(void **state)
{
	struct fx *f = *state;
	__u8 buf[2048];
	unsigned int i, got = 0;

	fx_up(f, NULL, 0);
	for (i = 0; i < 200; i++)
		tx_flat(f, 100, i);
	assert_true(run_reap(f, &f->tx, 200));
	while (got < 200) {
		ssize_t n = pkt_recv(f->ps, 1, NULL, buf, sizeof(buf),
				     TIMEOUT_MS);

		assert_true(n > 0);
		if (!is_test_frame(buf, (size_t)n))
			continue;
		check_frame(buf, (size_t)n, got);
		got++;
	}
	fprintf(stderr, "[test] 200 frames: %llu doorbells in, %llu kicks, "
		"%llu completion signals\n",
		(unsigned long long)fgd_stat(f->dev, "tx_notify_in"),
		(unsigned long long)fgd_stat(f->dev, "kicks"),
		(unsigned long long)fgd_stat(f->dev, "tx_notify_out"));
	/* 200 posts rang the doorbell once; the rest was polling */
	assert_true(fgd_stat(f->dev, "tx_notify_in") <= 2);
	assert_true(fgd_stat(f->dev, "kicks") >= 3);
}

/*
 * tx_poll_us is the cap of an adaptive window (device.h, struct
 * hostd_poll_window): a frame that comes within the cap after the device
 * slept opens it, one that comes after the cap closes it again. The gaps
 * (1 ms against a 10 ms cap, then 30 ms) leave room for a slow machine;
 * a stall past the cap is retried (below).
 */
static void tx_window_adapts(void **state)
{
	struct fx *f = *state;
	unsigned int sent;

	fx_up(f, "tx_poll_us=10000", 0);
	assert_int_equal(fgd_stat(f->dev, "tx_poll_us"), 10000);
	tx_flat(f, 100, 0);
	assert_true(run_reap(f, &f->tx, 1));
	/* the first frame comes after "forever": the window stays shut */
	assert_int_equal(fgd_stat(f->dev, "tx_window_us"), 0);
	assert_int_equal(fgd_stat(f->dev, "tx_window_grows"), 0);

	/*
	 * A stall of this process past the cap makes the gap a long one: the
	 * shut window stays shut, nothing is counted, and a next frame tries
	 * again. Five stalls in a row would be a broken machine.
	 */
	for (sent = 1; sent < 6; sent++) {
		usleep(1000);
		tx_flat(f, 100, sent);
		assert_true(run_reap(f, &f->tx, sent + 1));
		if (fgd_stat(f->dev, "tx_window_grows"))
			break;
		assert_int_equal(fgd_stat(f->dev, "tx_window_us"), 0);
		assert_int_equal(fgd_stat(f->dev, "tx_window_shrinks"), 0);
	}
	assert_int_equal(fgd_stat(f->dev, "tx_window_grows"), 1);
	assert_int_equal(fgd_stat(f->dev, "tx_window_us"),
			 HOSTD_POLL_WINDOW_START_NS / 1000);

	/* let the 10 us window pass, then post after the cap */
	fgd_run_for(5);
	usleep(30000);
	tx_flat(f, 100, ++sent);
	assert_true(run_reap(f, &f->tx, sent + 1));
	assert_int_equal(fgd_stat(f->dev, "tx_window_shrinks"), 1);
	assert_int_equal(fgd_stat(f->dev, "tx_window_us"), 0);
	assert_int_equal(fgd_stat(f->dev, "tx_packets"), sent + 1);
}

/* ---- hostile guests ---- */

static void tx_malformed(void **state)
{
	struct fx *f = *state;
	__u8 frame[200], buf[2048];
	struct venet_sg *sg;
	__u64 gpa, rxgpa;
	ssize_t n;

	fx_up(f, NULL, VENET_CAP_SG | VENET_CAP_TSO4);
	mk_frame(frame, 200, f->tapmac, guest_mac, 3);

	/* count huge */
	gpa = tx_sg(f, frame, 200, 2, 1);
	((struct venet_sg *)fgd_ram(gpa))->count = 0xffffffffu;
	/* lens not summing */
	gpa = tx_sg(f, frame, 200, 2, 2);
	((struct venet_sg *)fgd_ram(gpa))->len = 300;
	/* an iov past the end of RAM */
	gpa = tx_sg(f, frame, 200, 2, 3);
	((struct venet_sg *)fgd_ram(gpa))->iov[1].ptr = FGD_RAM_SIZE - 8;
	/* unknown GSO type */
	gpa = tx_sg(f, frame, 200, 2, 4);
	sg = fgd_ram(gpa);
	sg->flags = VENET_SG_FLAG_NEEDS_CSUM | VENET_SG_FLAG_GSO;
	sg->gso.type = 9;
	sg->gso.size = 100;
	/* the venet_sg itself outside RAM */
	assert_int_equal(fgd_post(&f->tx, (__u64)FGD_RAM_SIZE << 4, 320, 5), 0);
	/* then a good one */
	tx_sg(f, frame, 200, 2, 6);

	assert_true(run_reap(f, &f->tx, 6));
	assert_false(fgd_dev_faulted(f->dev));
	assert_int_equal(fgd_stat(f->dev, "tx_bad"), 5);
	assert_int_equal(fgd_stat(f->dev, "tx_packets"), 1);
	do {
		n = pkt_recv(f->ps, 1, NULL, buf, sizeof(buf), TIMEOUT_MS);
		assert_true(n > 0);
	} while (!is_test_frame(buf, (size_t)n));
	check_frame(buf, (size_t)n, 3);
	/* and nothing else from the bad ones */
	while ((n = pkt_recv(f->ps, 1, NULL, buf, sizeof(buf), 50)) > 0)
		assert_false(is_test_frame(buf, (size_t)n));

	/* an rx buffer outside RAM comes back empty, the next one works */
	f->reaped = 0;
	assert_int_equal(fgd_post(&f->rx, FGD_RAM_SIZE - 100, 1518, 1), 0);
	rxgpa = fgd_alloc(1518, 64);
	assert_int_equal(fgd_post(&f->rx, rxgpa, 1518, rxgpa), 0);
	mk_frame(frame, 120, guest_mac, f->tapmac, 8);
	pkt_send(f->ps, frame, 120);
	assert_true(run_reap(f, &f->rx, 2));
	assert_int_equal(f->last_len[0], 0);
	check_rx(f, 1, 2, 8, 120);
	assert_int_equal(fgd_stat(f->dev, "rx_bad"), 1);
	assert_false(fgd_dev_faulted(f->dev));
}

static void strict_faults(void **state)
{
	struct fx *f = *state;
	__u8 frame[200];
	__u64 gpa;

	fx_up(f, "strict=1", VENET_CAP_SG);
	rx_post(f, 4);
	mk_frame(frame, 200, f->tapmac, guest_mac, 3);
	gpa = tx_sg(f, frame, 200, 2, 1);
	((struct venet_sg *)fgd_ram(gpa))->count = 1000;
	tx_sg(f, frame, 200, 2, 2);
	assert_true(fgd_run_until(dev_faulted, f, TIMEOUT_MS));
	assert_non_null(strstr(fgd_dev_last_fault(f->dev), "count"));
	/* it stopped: the good frame after the bad one was not consumed */
	assert_int_equal(fgd_stat(f->dev, "tx_packets"), 0);
	/* and it does not poll the tap any more */
	assert_int_equal(tap_events(f) & EPOLLIN, 0);
	mk_frame(frame, 100, guest_mac, f->tapmac, 1);
	pkt_send(f->ps, frame, 100);
	fgd_run_for(50);
	assert_int_equal(fgd_stat(f->dev, "rx_packets"), 0);
	/* a fresh open (driver reload) starts it clean */
	fgd_dev_close(f->dev);
	assert_int_equal(fgd_dev_open(f->dev, VENET_VERSION), 0);
	assert_false(fgd_dev_faulted(f->dev));
}

static void ring_corrupt(void **state)
{
	struct fx *f = *state;
	struct ioq_ring_head *h;

	fx_up(f, NULL, 0);
	h = fgd_ram(f->tx.gpa);
	/* 5000 in flight on a 256 ring: garbage */
	h->idx[ioq_idx_consume].tail = h->idx[ioq_idx_consume].head + 5000;
	ioq_signal(&f->tx.ioq, 0);
	assert_true(fgd_run_until(dev_faulted, f, TIMEOUT_MS));
	h = fgd_ram(f->rx.gpa);
	h->idx[ioq_idx_consume].tail = 77777;
	ioq_signal(&f->rx.ioq, 0);
	fgd_run_for(20);
}

/* ---- control plane ---- */

static void calls_and_params(void **state)
{
	struct fx *f = *state;
	struct venet_capabilities caps;
	struct hostd_dev *d;
	__u8 mac[8];
	int err;

	fx_up(f, NULL, VENET_CAP_SG);
	/* caps fixed once the tx ring is there */
	caps.gid = VENET_CAP_GROUP_SG;
	caps.bits = VENET_CAP_SG;
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_NEGCAP, &caps,
				 sizeof(caps)), -EBUSY);
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_MACQUERY, mac, 8), -EINVAL);
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_LINKUP, mac, 4), -EINVAL);
	assert_int_equal(fgd_call(f->dev, 99, NULL, 0), -EINVAL);
	/* a second ring with the same id, an unknown id */
	{
		struct fg_ring r;

		assert_int_equal(fgd_ring_attach(f->dev, VENET_QUEUE_RX, 8, &r),
				 -EBUSY);
		assert_int_equal(fgd_ring_attach(f->dev, 7, 8, &r), -EINVAL);
	}
	fx_down(f);

	/* a fresh device: unknown gid, version, defaults */
	d = fgd_dev_create(VENET_TYPE, "tap=vtx0", &err);
	assert_non_null(d);
	assert_int_equal(fgd_dev_open(d, 2), -EPROTO);
	assert_int_equal(fgd_dev_open(d, VENET_VERSION), 0);
	caps.gid = 5;
	caps.bits = ~0u;
	assert_int_equal(fgd_call(d, VENET_FUNC_NEGCAP, &caps, sizeof(caps)), 0);
	assert_int_equal(caps.bits, 0);
	caps.gid = VENET_CAP_GROUP_SG;
	caps.bits = VENET_CAP_TSO4;	/* TSO without SG: nothing */
	assert_int_equal(fgd_call(d, VENET_FUNC_NEGCAP, &caps, sizeof(caps)), 0);
	assert_int_equal(caps.bits, 0);
	caps.bits = VENET_CAP_RXSG;	/* RXSG without SG: nothing */
	assert_int_equal(fgd_call(d, VENET_FUNC_NEGCAP, &caps, sizeof(caps)), 0);
	assert_int_equal(caps.bits, 0);
	assert_int_equal(fgd_call(d, VENET_FUNC_MACQUERY, mac, 6), 0);
	/* random default: locally administered unicast */
	assert_int_equal(mac[0] & 0x03, 0x02);
	assert_string_equal(fgd_stat_str(d, "backend"), "vtx0");
	fgd_dev_destroy(d);

	assert_null(fgd_dev_create(VENET_TYPE, "mac=01:00:5e:00:00:01", &err));
	assert_int_equal(err, -EINVAL);
	assert_null(fgd_dev_create(VENET_TYPE, "mac=02:00:00:00:00", &err));
	assert_int_equal(err, -EINVAL);
	assert_null(fgd_dev_create(VENET_TYPE, "bogus=1", &err));
	assert_int_equal(err, -EINVAL);
	assert_null(fgd_dev_create(VENET_TYPE,
				  "tap=a_name_far_too_long_for_ifnamsiz",
				  &err));
	assert_int_equal(err, -EINVAL);
}

/* A backend that cannot be had: the device exists, carries nothing. */
static void no_backend(void **state)
{
	struct fx *f = *state;
	struct hostd_dev *d;
	int err;

	(void)f;
	/* "lo" exists and is not a tap: TUNSETIFF refuses it */
	d = fgd_dev_create(VENET_TYPE, "tap=lo", &err);
	assert_non_null(d);
	assert_string_equal(fgd_stat_str(d, "backend"), "none");
	fprintf(stderr, "[test] backend_error: %s\n",
		fgd_stat_str(d, "backend_error"));
	assert_true(strlen(fgd_stat_str(d, "backend_error")) > 0);
	assert_int_equal(fgd_dev_open(d, VENET_VERSION), 0);
	f->dev = d;
	f->ps = -1;
	assert_int_equal(fgd_ring_attach(d, VENET_QUEUE_RX, 16, &f->rx), 0);
	assert_int_equal(fgd_ring_attach(d, VENET_QUEUE_TX, 16, &f->tx), 0);
	assert_int_equal(fgd_call(d, VENET_FUNC_LINKUP, NULL, 0), 0);
	rx_post(f, 2);
	{
		__u64 gpa = fgd_alloc(100, 64);

		memset(fgd_ram(gpa), 0, 100);
		assert_int_equal(fgd_post(&f->tx, gpa, 100, 1), 0);
	}
	assert_true(run_reap(f, &f->tx, 1));
	assert_int_equal(fgd_stat(d, "tx_dropped"), 1);
	assert_false(fgd_dev_faulted(d));
}

/* backend=null (benchmarks): tx frames are taken and sent nowhere. */
static void null_backend_sinks_tx(void **state)
{
	struct fx *f = *state;
	struct hostd_dev *d;
	__u64 gpa;
	int err;

	d = fgd_dev_create(VENET_TYPE, "backend=null", &err);
	assert_non_null(d);
	assert_string_equal(fgd_stat_str(d, "backend"), "null");
	assert_int_equal(fgd_dev_open(d, VENET_VERSION), 0);
	f->dev = d;
	f->ps = -1;
	assert_int_equal(fgd_ring_attach(d, VENET_QUEUE_RX, 16, &f->rx), 0);
	assert_int_equal(fgd_ring_attach(d, VENET_QUEUE_TX, 16, &f->tx), 0);
	assert_int_equal(fgd_call(d, VENET_FUNC_LINKUP, NULL, 0), 0);
	gpa = fgd_alloc(100, 64);
	memset(fgd_ram(gpa), 0x5a, 100);
	assert_int_equal(fgd_post(&f->tx, gpa, 100, 1), 0);
	assert_true(run_reap(f, &f->tx, 1));
	assert_int_equal(fgd_stat(d, "tx_packets"), 1);
	assert_int_equal(fgd_stat(d, "tx_bytes"), 100);
	assert_int_equal(fgd_stat(d, "tx_dropped"), 0);
	assert_false(fgd_dev_faulted(d));
}

/* backend= refusals say why, as `ctl add` prints them. */
static void null_backend_refusals(void **state)
{
	int err;

	(void)state;
	assert_null(fgd_dev_create(VENET_TYPE, "backend=null,tap=vtn0", &err));
	assert_int_equal(err, -EINVAL);
	assert_non_null(strstr(fgd_last_error(), "backend=null takes no tap="));
	assert_null(fgd_dev_create(VENET_TYPE, "backend=pcap", &err));
	assert_int_equal(err, -EINVAL);
	assert_non_null(strstr(fgd_last_error(), "backend=pcap: want tap or null"));
}

/* The tap deleted under a running device: survive, then recover. */
static void backend_lost(void **state)
{
	struct fx *f = *state;
	__u8 frame[200];

	fx_up(f, NULL, 0);
	rx_post(f, 4);
	fgd_run_for(10);
	close(f->ps);
	f->ps = -1;
	assert_int_equal(sh("ip link del %s", f->tap), 0);
	fgd_run_for(50);
	tx_flat(f, 100, 1);
	assert_true(run_reap(f, &f->tx, 1));
	assert_true(fgd_run_until(backend_gone, f, TIMEOUT_MS));
	assert_false(fgd_dev_faulted(f->dev));

	/* the guest's next LINKUP brings a new tap */
	assert_int_equal(fgd_call(f->dev, VENET_FUNC_LINKUP, NULL, 0), 0);
	assert_string_equal(fgd_stat_str(f->dev, "backend"), f->tap);
	assert_int_equal(sh("ip link set %s up", f->tap), 0);
	if_mac(f->tap, f->tapmac);
	f->ps = pkt_sock(f->tap, 1);
	mk_frame(frame, 200, guest_mac, f->tapmac, 4);
	pkt_send(f->ps, frame, 200);
	f->reaped = 0;
	assert_true(run_reap(f, &f->rx, 1));
	check_rx(f, 0, 1, 4, 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(calls_and_params, setup,
						teardown),
		cmocka_unit_test_setup_teardown(tx_plain, setup, teardown),
		cmocka_unit_test_setup_teardown(tx_sg_csum, setup, teardown),
		cmocka_unit_test_setup_teardown(tx_gso, setup, teardown),
		cmocka_unit_test_setup_teardown(tx_window_adapts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(tx_burst_polls, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rx_backpressure, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rx_too_big, setup, teardown),
		cmocka_unit_test_setup_teardown(rx_sg_gso, setup, teardown),
		cmocka_unit_test_setup_teardown(rx_sg_malformed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rx_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(rx_stream_coalesced, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rx_small_not_coalesced, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rx_coalesce_zero, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rx_acks_of_tx_stream, setup,
						teardown),
		cmocka_unit_test_setup_teardown(tx_acks_of_rx_stream, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rx_period_ends_without_stream,
						setup, teardown),
		cmocka_unit_test_setup_teardown(tx_hold_ends_without_stream,
						setup, teardown),
		cmocka_unit_test_setup_teardown(link_down, setup, teardown),
		cmocka_unit_test_setup_teardown(tx_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(strict_faults, setup,
						teardown),
		cmocka_unit_test_setup_teardown(ring_corrupt, setup, teardown),
		cmocka_unit_test_setup_teardown(no_backend, setup, teardown),
		cmocka_unit_test_setup_teardown(null_backend_sinks_tx, setup,
						teardown),
		cmocka_unit_test_setup_teardown(null_backend_refusals, setup,
						teardown),
		cmocka_unit_test_setup_teardown(backend_lost, setup, teardown),
	};
	int rc = wire_netns();

	if (rc)
		return rc;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
