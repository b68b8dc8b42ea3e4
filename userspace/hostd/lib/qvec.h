/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: per-queue MSI-X vectors (docs/transport.md, "Per-queue
 * vectors"). The guest offers VBUS_PCI_CAP_QVEC in NEGOTIATE; we accept
 * it when this connection wired queue vectors (vectors= above 2). Then a
 * DEVSHM may name one of them, and that shm's signal writes the vector's
 * eventfd (dev.c) instead of posting SHMSIGNAL on the eventq.
 */
#ifndef VBUS_HOSTD_QVEC_H
#define VBUS_HOSTD_QVEC_H

#include <stdbool.h>
#include <vbus/vbus_pci.h>
#include "ivshmem.h"
#include "log.h"

/* NEGOTIATE: the capabilities we accept of those @offered. */
__u64 hostd_qvec_accept(const struct hostd_ivshmem *iv, __u64 offered);

/*
 * DEVSHM's vector field, from the guest: 0 (SHMSIGNAL on the eventq), or
 * with VBUS_PCI_CAP_QVEC accepted (@qvec) and a signal, a queue vector
 * this connection has. 0 or -EINVAL, logged (rate-limited) as "@who:
 * DEVSHM ... vector N ...: why".
 */
int hostd_qvec_check(const struct hostd_ivshmem *iv, bool qvec,
		     const struct vbus_pci_deviceshm *s,
		     struct hostd_log_limit *log, const char *who);

#endif /* VBUS_HOSTD_QVEC_H */
