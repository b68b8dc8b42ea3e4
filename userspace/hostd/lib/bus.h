/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: one guest's bus: the registry of its devices (ids, open
 * handles, signal handles), its state (NEGOTIATE, BUSREG, faulted) and the
 * bus verbs the hypercalls and the control socket map to.
 *
 * Faults. A device the guest misuses is faulted alone (hostd_dev_fault):
 * it refuses calls and shms until the guest closes and reopens it. A
 * broken eventq faults the bus (hostd_bus_faulted): every hypercall but
 * NEGOTIATE/BUSREG answers -EIO, doorbells are dropped and the loop closes
 * all devices; a new NEGOTIATE + BUSREG (the guest's bridge probing again)
 * starts it clean. Neither stops the other guests.
 */
#ifndef VBUS_HOSTD_BUS_H
#define VBUS_HOSTD_BUS_H

#include <stdbool.h>
#include <stddef.h>
#include <vbus/vbus_pci.h>
#include "dev.h"
#include "evq.h"
#include "list.h"
#include "stat.h"

#define HOSTD_MAX_DEVS		64	/* per bus */

struct hostd_bus;

/*
 * Test-only fault injection (fault.c, docs/fault-injection.md): a
 * misbehaving host on purpose. NULL in normal operation; only vbus-hostd
 * --test-faults sets it. The bus and the mailbox call these where a
 * hostile host would act; each may be NULL.
 */
struct hostd_bus_faults {
	/* BUSREG: the eventq is attached, the real DEVADDs not yet posted */
	void (*busreg)(struct hostd_bus *b);
	/* DEVSHM of @d accepted (region @ptr, @len bytes), not yet answered */
	void (*shm)(struct hostd_bus *b, struct hostd_dev *d,
		    struct hostd_shm_ent *e);
	/* the loop's deferred pass */
	void (*deferred)(struct hostd_bus *b);
	/* a hypercall arrived, not yet dispatched (nor answered) */
	void (*hc)(struct hostd_bus *b, __u32 vector);
	void *arg;
};

struct hostd_bus {
	struct hostd_dev_env env;	/* handed to every device */
	struct hostd_evq evq;
	bool negotiated;
	bool qvec;			/* VBUS_PCI_CAP_QVEC accepted (qvec.h) */
	bool busreg;
	bool live;			/* the guest runs: adds may be pending */
	char add_error[320];		/* the last pending add that gave up */
	__u64 next_handle;
	struct hostd_list devs;		/* struct hostd_dev */
	unsigned int ndevs;
	struct hostd_shm_ent *sigs[VBUS_PCI_MAX_SIGNALS];
	const struct hostd_bus_faults *faults;	/* tests only; else NULL */
};

void hostd_bus_init(struct hostd_bus *b, const char *name,
		    struct hostd_log_limit *log, struct hostd_mem *mem,
		    struct hostd_ivshmem *iv, struct hostd_loop *loop);
/* Every device destroyed, the eventq let go. */
void hostd_bus_fini(struct hostd_bus *b);

bool hostd_bus_faulted(const struct hostd_bus *b);
bool hostd_bus_negotiated(const struct hostd_bus *b);
bool hostd_bus_registered(const struct hostd_bus *b);
/* A new peer (QEMU connected): nothing negotiated yet. */
void hostd_bus_connect(struct hostd_bus *b);
/* Close every device and detach the eventq (the guest's bridge is gone). */
void hostd_bus_reset(struct hostd_bus *b);
/*
 * From now on a device may be added pending (HOSTD_DEV_PENDING): the
 * guest's loop runs (hostd_guest_start).
 */
void hostd_bus_set_live(struct hostd_bus *b);
/*
 * The loop's deferred hook: signals' deferred notifies, fault cleanup,
 * the DEVADD of a device that got ready, the drop of one that gave up.
 */
void hostd_bus_run_deferred(struct hostd_bus *b);

/* ---- the verbs of the hypercalls (hc.c); 0 / >= 0 or -errno ---- */
int hostd_bus_negotiate(struct hostd_bus *b, const struct vbus_pci_negotiate *n,
			__u64 *caps);
int hostd_bus_register(struct hostd_bus *b, const struct vbus_pci_busreg *r);
int hostd_bus_open(struct hostd_bus *b, const struct vbus_pci_deviceopen *o,
		   __u64 *handle);
int hostd_bus_close(struct hostd_bus *b, __u64 handle);
int hostd_bus_call(struct hostd_bus *b, const struct vbus_pci_devicecall *c);
/* DEVSHM: the signal handle (0: none) or -errno. */
int hostd_bus_shm(struct hostd_bus *b, const struct vbus_pci_deviceshm *s);
/* The shm that owns signal handle @h (1..), or NULL. */
struct hostd_shm_ent *hostd_bus_signal(struct hostd_bus *b, __u32 h);

/* ---- the registry (the daemon's --device and ctl add/drop) ---- */
/* 0, or -errno with "guest g1: device 3 ...: why" in @err. */
int hostd_bus_add(struct hostd_bus *b, const char *type, __u32 id,
		  const struct hostd_params *p, char *err, size_t errlen);
int hostd_bus_drop(struct hostd_bus *b, __u32 id, char *err, size_t errlen);
/* Device @id's control verb (hostd_dev_ctl); @msg as there. */
int hostd_bus_ctl(struct hostd_bus *b, __u32 id, const char *verb,
		  const char *arg, char *msg, size_t len);
struct hostd_dev *hostd_bus_find(struct hostd_bus *b, __u32 id);

/*
 * A "devices" list: every device (or only @id when @one) with its
 * counters (@counters) or just id/type/state. -ENOENT when @one is absent.
 */
int hostd_bus_stats(struct hostd_bus *b, struct hostd_stats_out *out,
		    bool one, __u32 id, bool counters);

#endif /* VBUS_HOSTD_BUS_H */
