// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: per-queue MSI-X vectors (see qvec.h). Everything here is
 * about what the guest may ask; the vectors themselves are ivshmem.c's.
 */
#include <errno.h>
#include "qvec.h"

__u64 hostd_qvec_accept(const struct hostd_ivshmem *iv, __u64 offered)
{
	__u64 caps = 0;

	/* an adopted connection has those the store kept (ivshmem.c) */
	if ((offered & VBUS_PCI_CAP_QVEC) && hostd_ivshmem_qvecs(iv))
		caps |= VBUS_PCI_CAP_QVEC;
	return caps;
}

int hostd_qvec_check(const struct hostd_ivshmem *iv, bool qvec,
		     const struct vbus_pci_deviceshm *s,
		     struct hostd_log_limit *log, const char *who)
{
	const char *why = NULL;

	if (!s->vector)
		return 0;
	if (!qvec)
		why = "per-queue vectors were not negotiated";
	else if (s->signal.offset == VBUS_PCI_SHM_NO_SIGNAL)
		why = "the shm has no signal";
	else if (s->vector < VBUS_PCI_NR_VECTORS ||
		 s->vector >= VBUS_PCI_NR_VECTORS + hostd_ivshmem_qvecs(iv))
		why = "not a queue vector of this guest (vectors=)";
	if (!why)
		return 0;
	hostd_log_limited(log, "%s: DEVSHM id %u asks for MSI-X vector %u (queue vectors %u..%u): %s",
			  who, s->id, s->vector, VBUS_PCI_NR_VECTORS,
			  VBUS_PCI_NR_VECTORS + hostd_ivshmem_qvecs(iv) - 1,
			  why);
	return -EINVAL;
}
