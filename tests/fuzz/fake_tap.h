/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A tap for venet without /dev/net/tun (fake_tap.c replaces tap.c in the
 * fuzz targets): tap_open() makes a SOCK_SEQPACKET socketpair, which keeps
 * frame boundaries as a tap does; the device gets one end, the fuzzer the
 * other (fake_tap_peer): it reads the frames venet transmits (each a
 * virtio_net_hdr and the frame) and writes the frames venet receives.
 */
#ifndef VBUS_FUZZ_FAKE_TAP_H
#define VBUS_FUZZ_FAKE_TAP_H

#include <stdbool.h>

#define FAKE_TAPS	2		/* taps open at once */
/* the fuzzer's ends, -1 while that tap is not open */
extern int fake_tap_peer[FAKE_TAPS];
extern bool fake_tap_refuse;		/* tap_open/offload fail */

#endif /* VBUS_FUZZ_FAKE_TAP_H */
