/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: guest -> host signals. The guest sets bit h of BAR2
 * sigpending and rings DB_SIGNAL; bit 0 is the eventq, the others are the
 * signal handles DEVSHM handed out (bus.c). Host -> guest signals leave
 * through the eventq (dev.c, evq.c).
 */
#ifndef VBUS_HOSTD_SIG_H
#define VBUS_HOSTD_SIG_H

#include "bus.h"
#include "ivshmem.h"

struct hostd_sig {
	struct hostd_bus *bus;
	struct hostd_ivshmem *iv;
	__u64 doorbells;		/* DB_SIGNAL rings seen */
	__u64 unknown;			/* bits for no live handle */
};

void hostd_sig_init(struct hostd_sig *s, struct hostd_bus *bus,
		    struct hostd_ivshmem *iv);
/* DB_SIGNAL fired (its eventfd already drained): scan sigpending. */
void hostd_sig_doorbell(struct hostd_sig *s);

#endif /* VBUS_HOSTD_SIG_H */
