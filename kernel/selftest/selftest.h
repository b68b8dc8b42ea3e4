/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vbus_selftest.ko: in-kernel tests of core/ (shm-signal, IOQ), run inside
 * the QEMU guest. Every result is one dmesg line that the guest script
 * (tests/qemu/guest/kernel-tests.sh) turns into a VBUS-TEST line:
 *
 *   vbus_selftest: PASS <name>
 *   vbus_selftest: FAIL <name> <why>
 *   vbus_selftest: STRESS msgs=... secs=... msgs_per_sec=... notifies_per_msg=...
 *   vbus_selftest: DONE passed=N failed=N
 *
 * Names never contain spaces: the guest protocol splits on them.
 */
#ifndef VBUS_SELFTEST_H
#define VBUS_SELFTEST_H

#include <linux/types.h>

struct vst_stress_cfg {
	unsigned long msgs;		/* messages to move north -> south */
	unsigned int ring;		/* ring size, a power of two */
	unsigned int timeout_s;		/* whole run; then it fails */
	int producer_cpu;
	int consumer_cpu;
};

/* Result bookkeeping of one run (selftest_main.c). */
void vst_pass(const char *name);
__printf(2, 3) void vst_fail(const char *name, const char *fmt, ...);

/* The shared cases of tests/common (selftest_cases.c). */
void vst_run_cases(void);

/* vbus_driver_ioq_alloc() against a hostile host (selftest_proxy.c). */
void vst_run_proxy_cases(void);

/* The cross-CPU producer/consumer stress (selftest_stress.c). */
void vst_run_stress(const struct vst_stress_cfg *cfg);

#endif /* VBUS_SELFTEST_H */
