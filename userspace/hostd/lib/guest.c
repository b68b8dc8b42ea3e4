// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: one guest (see guest.h): it builds its parts in dependency
 * order and wires them: the ivshmem server's doorbells to the hypercall
 * mailbox and the signal scan, its connect/disconnect to the bus, the
 * loop's deferred hook to the bus.
 *
 * When QEMU disconnects, the guest's bus is torn down (devices closed,
 * eventq detached, fresh BAR2 and eventfds for the next QEMU) and the
 * socket accepts again; the other guests never notice.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "guest.h"

/* ---- wiring --------------------------------------------------------------- */

static void on_connect(void *arg)
{
	struct hostd_guest *g = arg;

	hostd_bus_connect(&g->bus);
	hostd_hc_connect(&g->hc);
}

static void on_disconnect(void *arg)
{
	struct hostd_guest *g = arg;

	hostd_bus_reset(&g->bus);
	hostd_bus_connect(&g->bus);
}

static void on_doorbell(void *arg, unsigned int vector)
{
	struct hostd_guest *g = arg;

	if (vector == VBUS_PCI_DB_HC)
		hostd_hc_doorbell(&g->hc);
	else
		hostd_sig_doorbell(&g->sig);
}

static const struct hostd_ivshmem_ops guest_ivshmem_ops = {
	.connect = on_connect,
	.disconnect = on_disconnect,
	.doorbell = on_doorbell,
};

static void on_deferred(void *arg)
{
	struct hostd_guest *g = arg;

	hostd_bus_run_deferred(&g->bus);
}

/* ---- lifetime ---------------------------------------------------------------- */

int hostd_guest_init(struct hostd_guest *g, const struct hostd_guest_cfg *cfg,
		     int mem_fd, char *err, size_t errlen)
{
	int ret;

	memset(g, 0, sizeof(*g));
	g->cfg = *cfg;
	g->name = g->cfg.name;
	g->mem.fd = -1;
	hostd_log_limit_init(&g->log, g->name);
	ret = hostd_mem_open(&g->mem, cfg->mem, mem_fd, cfg->size,
			     cfg->machine, err, errlen);
	if (ret < 0)
		goto out_fail;
	ret = hostd_loop_init(&g->loop);
	if (ret < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-ret));
		goto out_fail;
	}
	hostd_loop_set_deferred(&g->loop, on_deferred, g);
	hostd_bus_init(&g->bus, g->name, &g->log, &g->mem, &g->iv, &g->loop);
	/* the default threads= of its devices whose type takes it */
	g->bus.env.threads = cfg->threads;
	hostd_hc_init(&g->hc, &g->bus, &g->iv, &g->mem);
	hostd_sig_init(&g->sig, &g->bus, &g->iv);
	ret = hostd_ivshmem_init(&g->iv, &g->loop, &g->log, g->name,
				 &guest_ivshmem_ops, g);
	if (ret < 0) {
		snprintf(err, errlen, "BAR2 memfd: %s", strerror(-ret));
		goto out_fail;
	}
	if (cfg->vectors) {
		ret = hostd_ivshmem_set_vectors(&g->iv, cfg->vectors);
		if (ret < 0) {
			snprintf(err, errlen, "vectors=%u: must be %d..%d",
				 cfg->vectors, VBUS_PCI_NR_VECTORS,
				 VBUS_PCI_MAX_VECTORS);
			goto out_fail;
		}
	}
	return 0;

out_fail:
	hostd_guest_fini(g);
	return ret;
}

void hostd_guest_fini(struct hostd_guest *g)
{
	hostd_guest_stop(g);
	hostd_ivshmem_fini(&g->iv);
	hostd_bus_fini(&g->bus);
	hostd_loop_fini(&g->loop);
	hostd_mem_close(&g->mem);
}

int hostd_guest_listen(struct hostd_guest *g, char *err, size_t errlen)
{
	return hostd_ivshmem_listen(&g->iv, g->cfg.sock, &g->cfg.qemu, err,
				    errlen);
}

int hostd_guest_start(struct hostd_guest *g)
{
	char name[16];

	/* "g:NAME": one thread per guest, each findable by its guest's name */
	snprintf(name, sizeof(name), "g:%s", g->name);
	hostd_bus_set_live(&g->bus);
	return hostd_loop_start(&g->loop, name);
}

void hostd_guest_stop(struct hostd_guest *g)
{
	hostd_loop_stop(&g->loop);
}

void hostd_guest_set_conn_hook(struct hostd_guest *g,
			       void (*fn)(void *arg, bool up), void *arg)
{
	g->iv.conn_hook = fn;
	g->iv.conn_hook_arg = arg;
}

int hostd_guest_adopt(struct hostd_guest *g,
		      const struct hostd_ivshmem_fds *fds,
		      char *err, size_t errlen)
{
	return hostd_ivshmem_adopt(&g->iv, fds, err, errlen);
}

void hostd_guest_going_down(struct hostd_guest *g)
{
	hostd_ivshmem_going_down(&g->iv);
}

struct guest_call {
	struct hostd_guest *g;
	int (*fn)(struct hostd_guest *g, void *arg);
	void (*release)(void *arg, int ret);
	void *arg;
};

static int guest_call_fn(void *arg)
{
	struct guest_call *c = arg;

	return c->fn(c->g, c->arg);
}

int hostd_guest_call_within(struct hostd_guest *g,
			    int (*fn)(struct hostd_guest *g, void *arg),
			    void *arg, unsigned int ms, int *ret)
{
	/* on our stack even if we give up: the loop never runs a call then */
	struct guest_call c = { .g = g, .fn = fn, .arg = arg };

	return hostd_loop_call_within(&g->loop, guest_call_fn, &c, ms, ret);
}

/* A call its caller left: the caller's release, then the wrapper. */
static void guest_call_release(void *arg, int ret)
{
	struct guest_call *c = arg;

	c->release(c->arg, ret);
	free(c);
}

int hostd_guest_call_or_leave(struct hostd_guest *g,
			      int (*fn)(struct hostd_guest *g, void *arg),
			      void (*release)(void *arg, int ret), void *arg,
			      unsigned int ms, int *ret)
{
	/* on the heap: if we leave, the loop may still run it */
	struct guest_call *c = malloc(sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	*c = (struct guest_call){ .g = g, .fn = fn, .release = release,
				  .arg = arg };
	err = hostd_loop_call_or_leave(&g->loop, guest_call_fn,
				       guest_call_release, c, ms, ret);
	if (err != -EINPROGRESS)
		free(c);	/* else the loop's (guest_call_release) */
	return err;
}

int hostd_guest_call(struct hostd_guest *g,
		     int (*fn)(struct hostd_guest *g, void *arg), void *arg)
{
	struct guest_call c = { .g = g, .fn = fn, .arg = arg };

	return hostd_loop_call(&g->loop, guest_call_fn, &c);
}

/* ---- state and counters --------------------------------------------------------- */

/* "faulted", "registered", "connected" or "waiting" */
static const char *hostd_guest_state(const struct hostd_guest *g)
{
	if (hostd_bus_faulted(&g->bus))
		return "faulted";
	if (hostd_bus_registered(&g->bus))
		return "registered";
	if (hostd_ivshmem_connected(&g->iv))
		return "connected";
	return "waiting";
}

static void guest_counters(struct hostd_guest *g, struct hostd_stats_out *out)
{
	const struct hostd_evq *q = &g->bus.evq;

	hostd_stat_u64(out, "connections", g->iv.connections);
	hostd_stat_u64(out, "refused", g->iv.refused);
	hostd_stat_u64(out, "hypercalls", g->hc.calls);
	hostd_stat_u64(out, "hc_errors", g->hc.errors);
	hostd_stat_u64(out, "doorbells", g->sig.doorbells);
	hostd_stat_u64(out, "unknown_signals", g->sig.unknown);
	hostd_stat_u64(out, "events_posted", q->posted);
	hostd_stat_u64(out, "events_backlog", q->bl_len);
	hostd_stat_u64(out, "events_dropped", q->dropped);
	hostd_stat_u64(out, "bus_faults", q->faults);
}

int hostd_guest_stats(struct hostd_guest *g, struct hostd_stats_out *out,
		      bool counters, bool one, __u32 id)
{
	if (one && !hostd_bus_find(&g->bus, id))
		return -ENOENT;
	hostd_stat_begin(out, NULL);
	hostd_stat_str(out, "guest", g->name);
	hostd_stat_str(out, "state", hostd_guest_state(g));
	/* a pending `ctl add` that gave up (HOSTD_DEV_PENDING): why */
	if (g->bus.add_error[0])
		hostd_stat_str(out, "add_error", g->bus.add_error);
	if (counters)
		guest_counters(g, out);
	else
		hostd_stat_str(out, "sock", g->cfg.sock);
	hostd_bus_stats(&g->bus, out, one, id, counters);
	hostd_stat_end(out);
	return 0;
}
