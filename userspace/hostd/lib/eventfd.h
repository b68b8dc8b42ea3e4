/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* vbus-hostd: eventfd helpers (declared for devices in device.h). */
#ifndef VBUS_HOSTD_EVENTFD_H
#define VBUS_HOSTD_EVENTFD_H

#include "device.h"

#endif /* VBUS_HOSTD_EVENTFD_H */
