// SPDX-License-Identifier: GPL-2.0
/*
 * The shared shm_signal cases of tests/common, the same file cmocka runs in
 * userspace, built into vbus_selftest.ko through vt_kernel.h (vt.h picks it
 * under __KERNEL__). Its own translation unit: the case tables are static.
 */
#define pr_fmt(fmt) "vbus_selftest: " fmt

#include "../../tests/common/cases_shm_signal.c"
