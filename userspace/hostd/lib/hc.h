/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: the hypercall mailbox (BAR2 lines 1 and 2). The guest writes
 * a request, bumps hc_seq and rings DB_HC; we answer in hc_result, then
 * hc_done, then MSI-X HC. docs/transport.md has each vector.
 */
#ifndef VBUS_HOSTD_HC_H
#define VBUS_HOSTD_HC_H

#include "bus.h"
#include "ivshmem.h"
#include "mem.h"

struct hostd_hc {
	struct hostd_bus *bus;
	struct hostd_ivshmem *iv;
	struct hostd_mem *mem;
	__u32 last_seq;			/* last hc_seq answered */
	__u64 calls, errors;
};

void hostd_hc_init(struct hostd_hc *hc, struct hostd_bus *bus,
		   struct hostd_ivshmem *iv, struct hostd_mem *mem);
/* A new peer with a fresh BAR2: its first hc_seq is 1. */
/* A connection starts: continue from BAR2's hc_done (see hc.c). */
void hostd_hc_connect(struct hostd_hc *hc);
/* DB_HC fired (eventfd drained): answer the request, if there is one. */
void hostd_hc_doorbell(struct hostd_hc *hc);

#endif /* VBUS_HOSTD_HC_H */
