// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: guest -> host signals (see sig.h).
 *
 * We take each 64-bit word of sigpending with an atomic exchange against
 * 0, so a bit the guest sets while we scan is either in the word we took
 * or stays for the next doorbell; none is lost and none is seen twice. A
 * bit for a handle we don't know (closed, never opened, garbage) is
 * counted and ignored; on a faulted bus every bit is dropped.
 */
#include <string.h>
#include "sig.h"

void hostd_sig_init(struct hostd_sig *s, struct hostd_bus *bus,
		    struct hostd_ivshmem *iv)
{
	memset(s, 0, sizeof(*s));
	s->bus = bus;
	s->iv = iv;
}

static void deliver(struct hostd_sig *s, __u32 h)
{
	struct hostd_evq *q = &s->bus->evq;
	struct hostd_shm_ent *e;

	if (h == VBUS_PCI_EVENTQ_HANDLE) {
		if (q->attached)
			_shm_signal_wakeup(&q->signal);
		else
			s->unknown++;
		return;
	}
	e = hostd_bus_signal(s->bus, h);
	if (e)
		hostd_shm_ent_wakeup(e);
	else
		s->unknown++;
}

void hostd_sig_doorbell(struct hostd_sig *s)
{
	struct vbus_pci_shm *shm = s->iv->shm;
	unsigned int w;

	s->doorbells++;
	if (!shm)
		return;
	for (w = 0; w < VBUS_PCI_MAX_SIGNALS / 64; w++) {
		/*
		 * Full-barrier exchange: clears the word and orders the
		 * clear before we read the rings the bits stand for. Pairs
		 * with the guest's ring updates -> set_bit (a locked RMW) ->
		 * doorbell.
		 */
		__u64 bits = __atomic_exchange_n(&shm->sigpending[w], 0,
						 __ATOMIC_SEQ_CST);

		while (bits) {
			unsigned int b = (unsigned int)__builtin_ctzll(bits);

			bits &= bits - 1;
			if (!hostd_bus_faulted(s->bus))
				deliver(s, w * 64 + b);
		}
	}
}
