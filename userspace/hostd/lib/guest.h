/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: one guest = one bus, the unit the library hands its user.
 *
 * A guest owns its RAM mapping, its event loop (and, started, the thread
 * that runs it), its ivshmem server, the hypercall mailbox, the signal
 * doorbell and the bus with its devices. Everything of a guest happens on
 * its loop's thread, so its state needs no locks; another thread reaches
 * it only through hostd_guest_call(). Why a thread per guest and not one
 * loop for all: a guest that floods doorbells, or a device backend that is
 * slow (a tap write, a big echo buffer), then costs only its own thread,
 * and guests spread over cores.
 */
#ifndef VBUS_HOSTD_GUEST_H
#define VBUS_HOSTD_GUEST_H

#include <limits.h>
#include "bus.h"
#include "hc.h"
#include "ivshmem.h"
#include "log.h"
#include "loop.h"
#include "mem.h"
#include "sig.h"
#include "stat.h"

#define HOSTD_NAME_MAX		32

struct hostd_guest_cfg {
	char name[HOSTD_NAME_MAX + 1];
	char sock[108];			/* sun_path */
	char mem[PATH_MAX];
	__u64 size;
	enum hostd_machine machine;
	struct hostd_peer_rule qemu;	/* qemu_uid=, qemu_gid= */
	unsigned int vectors;		/* vectors= (QEMU's); 0: the default 2 */
	unsigned int threads;		/* threads=: its devices' default */
};

struct hostd_guest {
	struct hostd_guest_cfg cfg;
	const char *name;		/* = cfg.name */
	struct hostd_log_limit log;
	struct hostd_mem mem;
	struct hostd_loop loop;
	struct hostd_ivshmem iv;
	struct hostd_bus bus;
	struct hostd_hc hc;
	struct hostd_sig sig;
};

/*
 * RAM (the file of @cfg, or @mem_fd when >= 0), loop, BAR2, bus. 0, or
 * -errno with the reason in @err ("RAM file ...: ...").
 */
int hostd_guest_init(struct hostd_guest *g, const struct hostd_guest_cfg *cfg,
		     int mem_fd, char *err, size_t errlen);
void hostd_guest_fini(struct hostd_guest *g);
/* Listen on cfg.sock for QEMU. */
int hostd_guest_listen(struct hostd_guest *g, char *err, size_t errlen);
int hostd_guest_start(struct hostd_guest *g);	/* the thread */
void hostd_guest_stop(struct hostd_guest *g);
/* Run @fn on the guest's thread (inline when it has none) and wait. */
int hostd_guest_call(struct hostd_guest *g,
		     int (*fn)(struct hostd_guest *g, void *arg), void *arg);
/* The same, @fn's result in *@ret and 0; -ETIMEDOUT (and @fn never runs)
 * if the thread has not taken the call within @ms: the control path never
 * waits without limit on a guest. */
int hostd_guest_call_within(struct hostd_guest *g,
			    int (*fn)(struct hostd_guest *g, void *arg),
			    void *arg, unsigned int ms, int *ret);
/*
 * The same, but also a call that started and has not returned within @ms
 * is left (-EINPROGRESS; hostd_loop_call_or_leave): @release(@arg, ret)
 * then runs on the guest's thread once it is done with @arg.
 */
int hostd_guest_call_or_leave(struct hostd_guest *g,
			      int (*fn)(struct hostd_guest *g, void *arg),
			      void (*release)(void *arg, int ret), void *arg,
			      unsigned int ms, int *ret);
/*
 * Restarts (docs/operations.md, "Restarts"). @fn runs on the guest's
 * thread when QEMU connected (@up) or went away for good; set before
 * hostd_guest_start().
 */
void hostd_guest_set_conn_hook(struct hostd_guest *g,
			       void (*fn)(void *arg, bool up), void *arg);
/* Take over a stored QEMU connection (before hostd_guest_start()). */
int hostd_guest_adopt(struct hostd_guest *g,
		      const struct hostd_ivshmem_fds *fds,
		      char *err, size_t errlen);
/* Tell the guest the host goes away on purpose; after hostd_guest_stop(). */
void hostd_guest_going_down(struct hostd_guest *g);
/*
 * The guest's object for `ctl stats` (with @counters) or `ctl list`:
 * its counters and a "devices" list (only device @id when @one). -ENOENT
 * when @one and there is no such device (nothing emitted).
 */
int hostd_guest_stats(struct hostd_guest *g, struct hostd_stats_out *out,
		      bool counters, bool one, __u32 id);

#endif /* VBUS_HOSTD_GUEST_H */
