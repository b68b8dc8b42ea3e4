/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * libvbus-hostd, the host device-model library of vbus: everything its
 * users (the vbus-hostd daemon, tests/hostd, tests/fuzz) may call, in the
 * library's dependency order (docs/design.md, tests/hostd/check_layers.py):
 * each header only includes headers above it in this list. Devices use
 * device.h only.
 */
#ifndef VBUS_HOSTD_H
#define VBUS_HOSTD_H

#include "device.h"	/* the device-type interface */
#include "list.h"
#include "log.h"
#include "buf.h"
#include "stat.h"
#include "eventfd.h"
#include "sock.h"
#include "claim.h"
#include "devtype.h"
#include "loop.h"
#include "mem.h"
#include "ivshmem.h"
#include "evq.h"
#include "dev.h"
#include "bus.h"
#include "sig.h"
#include "hc.h"
#include "guest.h"
#include "fault.h"	/* tests only: --test-faults */

#endif /* VBUS_HOSTD_H */
