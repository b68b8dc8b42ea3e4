/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The host side of the wire for the venet device tests (venet_tap_test.c,
 * venet_mq_test.c, venet_hostd_test.c): their network namespace, shell commands in the test's network namespace, an
 * AF_PACKET socket on a tap, test frames (ethertype ETH_TEST, a sequence
 * number, a pattern derived from it).
 */
#ifndef VBUS_TESTS_VENET_WIRE_H
#define VBUS_TESTS_VENET_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include <linux/virtio_net.h>

#define ETH_TEST 0x88b5		/* IEEE local experimental ethertype */

/* system(printf(@fmt)); its status, logged when not 0 */
int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void write_file(const char *path, const char *s);
/*
 * Enter the test's own network namespace (IPv6 off, lo up): 0, or the
 * test's exit status: 77 (skipped) without /dev/net/tun, 1 when it
 * cannot unshare
 */
int wire_netns(void);
int if_index(const char *name);
void if_mac(const char *name, __u8 mac[6]);
/*
 * AF_PACKET on @ifname; with @vnet frames carry a virtio_net_hdr. Its
 * sends skip the host's qdisc: they reach the tap whenever its carrier
 * is on (see venet_wire.c)
 */
int pkt_sock(const char *ifname, int vnet);
/* one frame (waiting up to @ms): its length, or -1 */
ssize_t pkt_recv(int fd, int vnet, struct virtio_net_hdr *vh, void *buf,
		 size_t len, int ms);
/* one frame into the tap (the host transmitting to it) */
void pkt_send(int fd, const void *buf, size_t len);
void mk_frame(__u8 *b, size_t len, const __u8 dst[6], const __u8 src[6],
	      __u32 seq);
/*
 * Ethernet + IPv4 + UDP headers of a @len-byte frame (the rest zeroed):
 * checksums 0, which the flow dissector and the tap do not look at
 */
void mk_ipv4_udp(__u8 *b, size_t len, const __u8 dst[6], const __u8 src[6],
		 const __u8 saddr[4], const __u8 daddr[4], __u16 sport,
		 __u16 dport);
bool is_test_frame(const __u8 *b, size_t len);
__u32 frame_seq(const __u8 *b);
void check_frame(const __u8 *b, size_t len, __u32 seq);

#endif /* VBUS_TESTS_VENET_WIRE_H */
