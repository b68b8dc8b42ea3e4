// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The host side of the wire for the venet device tests (venet_wire.h). */
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
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <cmocka.h>

#include "venet_wire.h"

int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st != 0)
		fprintf(stderr, "[test] `%s` -> %d\n", cmd, st);
	return st;
}

void write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, s, strlen(s)) < 0)
			perror(path);
		close(fd);
	}
}

int wire_netns(void)
{
	if (access("/dev/net/tun", R_OK | W_OK) != 0) {
		printf("SKIP: /dev/net/tun is absent (%s): no tap to test "
		       "against\n", strerror(errno));
		return 77;
	}
	/* a private network namespace: the host's interfaces stay untouched */
	if (unshare(CLONE_NEWNET) != 0) {
		printf("FAIL: unshare(CLONE_NEWNET): %s (needs root / "
		       "CAP_SYS_ADMIN)\n", strerror(errno));
		return 1;
	}
	/* no IPv6 chatter (RS, DAD, MLD) on our interfaces */
	write_file("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
	write_file("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
	sh("ip link set lo up");
	return 0;
}

int if_index(const char *name)
{
	return (int)if_nametoindex(name);
}

void if_mac(const char *name, __u8 mac[6])
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	assert_int_equal(ioctl(s, SIOCGIFHWADDR, &ifr), 0);
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(s);
}

/*
 * AF_PACKET on @ifname. With @vnet, frames carry a virtio_net_hdr both
 * ways (so we can see what checksum/GSO metadata the tap accepted).
 *
 * Our sends skip the host's qdisc (PACKET_QDISC_BYPASS) and go straight
 * to the tap's driver, gated by the carrier bit alone: the device's
 * TUNSETCARRIER sets it before its LINKUP returns, and a send while it
 * is off fails at once (pkt_send's check). Through the qdisc they would
 * race the host kernel: when its linkwatch work sees the carrier off it
 * swaps the tap's qdisc for noop (which drops, counted as the tap's tx
 * dropped, and writev still succeeds), and after the carrier comes back
 * on it swaps the real one in again only when that work runs next, from
 * a kworker, some time after LINKUP returned; a frame sent in between is
 * lost and the guest waits for it in vain (link_down did, once, on a
 * loaded machine).
 */
int pkt_sock(const char *ifname, int vnet)
{
	struct sockaddr_ll sll;
	int one = 1;
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
			htons(ETH_P_ALL));

	assert_true(fd >= 0);
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = if_index(ifname);
	assert_true(sll.sll_ifindex > 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sll, sizeof(sll)), 0);
	/* our own sends are not captures */
	setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	assert_int_equal(setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one,
				    sizeof(one)), 0);
	if (vnet)
		assert_int_equal(setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR,
					    &one, sizeof(one)), 0);
	return fd;
}

/* Receive one frame (waiting up to @ms); returns its length or -1. */
ssize_t pkt_recv(int fd, int vnet, struct virtio_net_hdr *vh,
			void *buf, size_t len, int ms)
{
	struct virtio_net_hdr dummy;
	struct iovec iov[2] = {
		{ .iov_base = vh ? vh : &dummy, .iov_len = sizeof(dummy) },
		{ .iov_base = buf, .iov_len = len },
	};
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return -1;
	n = readv(fd, vnet ? iov : iov + 1, vnet ? 2 : 1);
	if (n < 0)
		return -1;
	return vnet ? n - (ssize_t)sizeof(dummy) : n;
}

/* Send one frame into the tap (the host transmitting to it, see pkt_sock). */
void pkt_send(int fd, const void *buf, size_t len)
{
	struct virtio_net_hdr vh = { .gso_type = VIRTIO_NET_HDR_GSO_NONE };
	struct iovec iov[2] = {
		{ .iov_base = &vh, .iov_len = sizeof(vh) },
		{ .iov_base = (void *)buf, .iov_len = len },
	};

	assert_int_equal(writev(fd, iov, 2), (ssize_t)(sizeof(vh) + len));
}

void mk_frame(__u8 *b, size_t len, const __u8 dst[6],
		     const __u8 src[6], __u32 seq)
{
	size_t i;

	memcpy(b, dst, 6);
	memcpy(b + 6, src, 6);
	b[12] = ETH_TEST >> 8;
	b[13] = ETH_TEST & 0xff;
	memcpy(b + 14, &seq, 4);
	for (i = 18; i < len; i++)
		b[i] = (__u8)(seq * 31 + i);
}

void mk_ipv4_udp(__u8 *b, size_t len, const __u8 dst[6], const __u8 src[6],
		 const __u8 saddr[4], const __u8 daddr[4], __u16 sport,
		 __u16 dport)
{
	memset(b, 0, len);
	memcpy(b, dst, 6);
	memcpy(b + 6, src, 6);
	b[12] = 0x08;			/* IPv4 */
	b[14] = 0x45;
	b[16] = (__u8)((len - 14) >> 8);
	b[17] = (__u8)(len - 14);
	b[22] = 64;			/* TTL */
	b[23] = 17;			/* UDP */
	memcpy(b + 26, saddr, 4);
	memcpy(b + 30, daddr, 4);
	b[34] = (__u8)(sport >> 8);
	b[35] = (__u8)sport;
	b[36] = (__u8)(dport >> 8);
	b[37] = (__u8)dport;
	b[38] = (__u8)((len - 34) >> 8);
	b[39] = (__u8)(len - 34);
}

bool is_test_frame(const __u8 *b, size_t len)
{
	return len >= 18 && b[12] == (ETH_TEST >> 8) &&
	       b[13] == (ETH_TEST & 0xff);
}

__u32 frame_seq(const __u8 *b)
{
	__u32 seq;

	memcpy(&seq, b + 14, 4);
	return seq;
}

void check_frame(const __u8 *b, size_t len, __u32 seq)
{
	size_t i;

	assert_true(is_test_frame(b, len));
	assert_int_equal(frame_seq(b), seq);
	for (i = 18; i < len; i++)
		if (b[i] != (__u8)(seq * 31 + i))
			fail_msg("frame %u: byte %zu differs", seq, i);
}
