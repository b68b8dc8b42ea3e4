/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-test device ABI ("vbus-test" on the vbus): the bus's test and
 * measuring device. Shared by the host device (userspace/hostd/devices/
 * vbus_test/) and the guest driver (kernel/vbus_test/vbus_test_main.c); the
 * protocol is docs/devices/vbus_test.md.
 */
#ifndef VBUS_VBUS_TEST_H
#define VBUS_VBUS_TEST_H

#define VBUS_TEST_TYPE		"vbus-test"
#define VBUS_TEST_VERSION	1

/* DEVCALL funcs */
#define VBUS_TEST_FUNC_ECHO	0	/* buffer comes back XORed */
#define VBUS_TEST_FUNC_SIGNAL	1	/* inject the ring's signal once */

/* DEVSHM ids */
#define VBUS_TEST_SHM_RING	0	/* an IOQ ring, its embedded signal */

/* every payload byte b comes back as b ^ VBUS_TEST_XOR */
#define VBUS_TEST_XOR		0x5a
/* limits the host enforces */
#define VBUS_TEST_MAX_RING	4096	/* descriptors in the ring */
#define VBUS_TEST_MAX_BUF	65536	/* bytes per descriptor or ECHO */

#endif /* VBUS_VBUS_TEST_H */
