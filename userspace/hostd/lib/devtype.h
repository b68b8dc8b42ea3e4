/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: the device-type registry. Types register themselves before
 * main() (HOSTD_DEV_TYPE, device.h); afterwards the registry is read-only,
 * so every thread may look types up without a lock.
 */
#ifndef VBUS_HOSTD_DEVTYPE_H
#define VBUS_HOSTD_DEVTYPE_H

#include <stddef.h>
#include "buf.h"
#include "device.h"

/* By name or alias; NULL, with "unknown device type ..." in @err. */
const struct hostd_dev_type *hostd_dev_type_lookup(const char *name,
						   char *err, size_t errlen);

#endif /* VBUS_HOSTD_DEVTYPE_H */
