// SPDX-License-Identifier: GPL-2.0
/*
 * The shared ring v6 / v5 interop cases of tests/common, the same file
 * cmocka runs in userspace, built into vbus_selftest.ko through
 * vt_kernel.h. Its own translation unit: the case tables are static.
 */
#define pr_fmt(fmt) "vbus_selftest: " fmt

#include "../../tests/common/cases_ioq_v6.c"
