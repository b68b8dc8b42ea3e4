/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: unix stream sockets: listening (QEMU's, ctl, a device's
 * own) and sending descriptors (declared for devices in device.h).
 */
#ifndef VBUS_HOSTD_SOCK_H
#define VBUS_HOSTD_SOCK_H

#include "device.h"

#endif /* VBUS_HOSTD_SOCK_H */
