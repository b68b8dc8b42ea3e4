/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A tap for venet without /dev/net/tun (fake_tap.c replaces tap.c in the
 * fuzz targets): tap_open() makes a SOCK_SEQPACKET socketpair per queue,
 * which keeps frame boundaries as a tap does; the device gets one end of
 * each, the fuzzer the other (fake_tap_peer[], one slot per queue of
 * every tap open): it reads the frames venet transmits (each a
 * virtio_net_hdr and the frame) and writes the frames venet receives.
 * tap_set_queue() only flips the queue's bit, as the kernel's flags
 * would: frames the fuzzer sends to a detached queue still arrive (more
 * hostile than the kernel, which drops them).
 */
#ifndef VBUS_FUZZ_FAKE_TAP_H
#define VBUS_FUZZ_FAKE_TAP_H

#include <stdbool.h>

#define FAKE_TAP_FDS	8		/* tap queues open at once */
/* the fuzzer's ends, -1 while that slot is not open */
extern int fake_tap_peer[FAKE_TAP_FDS];
extern bool fake_tap_refuse;		/* tap_open/offload/queue fail */

#endif /* VBUS_FUZZ_FAKE_TAP_H */
