// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* One device through the real library (see fg_dev.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fg_dev.h"

#define FGD_MAX_RINGS 16

static struct fg *fg;
/* attached rings, for fgd_irqs and fgd_dev_close */
static struct {
	struct fg_ring *r;
	struct hostd_dev *dev;
} rings[FGD_MAX_RINGS];
static __u32 next_id = 1;
static __u64 next_cookie = 0x1000;

static void die(const char *what)
{
	fprintf(stderr, "fg_dev: %s\n", what);
	abort();
}

int fgd_init(void)
{
	fg = calloc(1, sizeof(*fg));
	if (!fg)
		return -ENOMEM;
	fg_init_ram(fg, "fgd", FGD_RAM_SIZE, 64 << 10);
	if (fg_negotiate(fg) || fg_busreg(fg, 64, 64))
		return -EIO;
	/* the test's thread runs the loop: adds are a running guest's */
	hostd_bus_set_live(&fg->g.bus);
	fg->lazy = true;
	return 0;
}

void fgd_stopping(void)
{
	hostd_guest_stop(&fg->g);
}

int fgd_host_start(void)
{
	return hostd_guest_start(&fg->g);
}

int fgd_wait_irq(int timeout_ms)
{
	struct pollfd p = {
		.fd = fg->g.iv.msix_fd[VBUS_PCI_MSIX_EVENTQ], .events = POLLIN,
	};

	if (poll(&p, 1, timeout_ms) <= 0 || !fg_msix(fg, VBUS_PCI_MSIX_EVENTQ))
		return 0;
	/*
	 * The bridge's handler: take the eventq's signal (pending cleared,
	 * so the host's next event raises the vector again), then the
	 * caller reaps the events (fgd_irqs()).
	 */
	_shm_signal_wakeup(&fg->evq_sig);
	return 1;
}

void fgd_fini(void)
{
	unsigned int i;

	for (i = 0; i < FGD_MAX_RINGS; i++)
		if (rings[i].r)
			fg_ring_close(rings[i].r);
	memset(rings, 0, sizeof(rings));
	fg_fini(fg);
	free(fg);
	fg = NULL;
}

void *fgd_ram(__u64 gpa)
{
	return fg_ptr(fg, gpa, 1);
}

__u64 fgd_alloc(size_t len, size_t align)
{
	return fg_alloc_align(fg, len, align);
}

/* ---- the device ------------------------------------------------------------ */

static char last_error[512];

const char *fgd_last_error(void)
{
	return last_error;
}

struct hostd_dev *fgd_dev_add(const char *type, const char *params, int *err)
{
	char spec[4200];
	__u32 id = next_id++;
	int ret;

	snprintf(spec, sizeof(spec), "type=%s,id=%u%s%s", type, id,
		 params && *params ? "," : "", params ? params : "");
	last_error[0] = '\0';
	ret = fg_add_dev(fg, spec, last_error, sizeof(last_error));
	*err = ret < 0 ? ret : 0;
	if (ret < 0) {
		fprintf(stderr, "[fgd] %s\n", last_error);
		return NULL;
	}
	return hostd_bus_find(&fg->g.bus, id);
}

bool fgd_dev_pending(struct hostd_dev *dev)
{
	return dev->pending;
}

const char *fgd_add_error(void)
{
	return fg->g.bus.add_error;
}

static bool settled(void *arg)
{
	struct hostd_dev *d = hostd_bus_find(&fg->g.bus, *(__u32 *)arg);

	return !d || !d->pending;
}

struct hostd_dev *fgd_dev_create(const char *type, const char *params,
				 int *err)
{
	struct hostd_dev *d = fgd_dev_add(type, params, err);
	__u32 id;

	if (!d || !d->pending)
		return d;
	/* pending: ready or given up on the loop, as after a `ctl add` */
	id = d->id;
	fgd_run_until(settled, &id, FGD_PENDING_MS);
	d = hostd_bus_find(&fg->g.bus, id);
	if (d && !d->pending)
		return d;
	if (d) {
		snprintf(last_error, sizeof(last_error), "still pending after "
			 "%u ms", FGD_PENDING_MS);
		fgd_dev_destroy(d);
	} else {
		snprintf(last_error, sizeof(last_error), "%s",
			 fg->g.bus.add_error);
	}
	*err = -EIO;
	fprintf(stderr, "[fgd] %s\n", last_error);
	return NULL;
}

/* The guest lets go of its side of @dev's rings (the host closed them). */
static void rings_release(struct hostd_dev *dev)
{
	unsigned int i;

	for (i = 0; i < FGD_MAX_RINGS; i++) {
		if (rings[i].r && rings[i].dev == dev) {
			fg_ring_close(rings[i].r);
			rings[i].r = NULL;
		}
	}
}

void fgd_dev_destroy(struct hostd_dev *dev)
{
	char why[256];
	__u32 id = dev->id;

	fgd_dev_close(dev);
	if (hostd_bus_drop(&fg->g.bus, id, why, sizeof(why)))
		die(why);
}

int fgd_dev_ctl(struct hostd_dev *dev, const char *verb, const char *arg,
		char *msg, size_t len)
{
	return hostd_bus_ctl(&fg->g.bus, dev->id, verb, arg, msg, len);
}

int fgd_dev_open(struct hostd_dev *dev, __u32 version)
{
	int ret;

	fg_devopen(fg, dev->id, version, &ret);
	return ret;
}

void fgd_dev_close(struct hostd_dev *dev)
{
	__u64 h = dev->handle;

	if (!dev->open)
		return;
	if (fg_hc(fg, VBUS_PCI_HC_DEVCLOSE, &h, sizeof(h)))
		die("DEVCLOSE");
	rings_release(dev);
}

int fgd_call(struct hostd_dev *dev, __u32 func, void *buf, __u32 len)
{
	return fg_devcall(fg, dev->handle, func, buf, len);
}

int fgd_ring_attach(struct hostd_dev *dev, __u32 id, __u32 count,
		    struct fg_ring *r)
{
	unsigned int i;
	int ret = fg_ring_open(fg, r, dev->handle, id, count, next_cookie++);

	if (ret <= 0) {
		fg_ring_close(r);
		return ret ? ret : -EINVAL;
	}
	for (i = 0; i < FGD_MAX_RINGS && rings[i].r; i++)
		;
	if (i == FGD_MAX_RINGS)
		die("too many rings");
	rings[i].r = r;
	rings[i].dev = dev;
	return 0;
}

/* ---- the guest's side of a ring --------------------------------------------- */

/* One descriptor with the guest drivers' role calls (fakeguest.h). */
int fgd_post(struct fg_ring *r, __u64 ptr, __u64 len, __u64 cookie)
{
	struct ioq_ring_desc d = { .cookie = cookie, .ptr = ptr, .len = len };
	int ret = fg_ring_post_bulk(r, &d, 1, true);

	return ret == 1 ? 0 : ret ? ret : -ENOSPC;
}

int fgd_reap(struct fg_ring *r, __u64 *len, __u64 *cookie)
{
	struct ioq_ring_desc d;
	int ret = fg_ring_reap_bulk(r, &d, 1);

	if (ret != 1)
		return ret;
	if (len)
		*len = d.len;
	if (cookie)
		*cookie = d.cookie;
	return 1;
}

/*
 * The guest's eventq: every SHMSIGNAL is counted on its ring, whose north
 * signal then takes it like the bridge would (_shm_signal_wakeup: pending
 * cleared, so the host's next inject crosses again).
 */
bool fgd_host_unmasked(const struct fg_ring *r)
{
	return VBUS_READ(r->sig.desc->irq[shm_locality_south].enabled);
}

__u64 fgd_irqs(struct fg_ring *r)
{
	struct vbus_pci_event ev[64];
	unsigned int n, i, k;
	__u64 cnt;

	while ((n = fg_events(fg, ev, 64, true)) > 0) {
		for (i = 0; i < n; i++) {
			if (ev[i].eventid != VBUS_PCI_EVENT_SHMSIGNAL)
				continue;
			for (k = 0; k < FGD_MAX_RINGS; k++) {
				struct fg_ring *rk = rings[k].r;

				if (!rk || rk->cookie != ev[i].data.handle.handle)
					continue;
				rk->irqs++;
				_shm_signal_wakeup(&rk->sig);
			}
		}
	}
	cnt = r->irqs;
	r->irqs = 0;
	return cnt;
}

/* ---- the host's loop ------------------------------------------------------------ */

void fgd_poll(int timeout_ms)
{
	hostd_loop_poll(&fg->g.loop, timeout_ms);
}

bool fgd_run_until(bool (*done)(void *arg), void *arg, int timeout_ms)
{
	unsigned long long end = hostd_now_ns() + timeout_ms * 1000000ull;

	while (!done(arg)) {
		if (hostd_now_ns() >= end)
			return done(arg);
		fgd_poll(10);
	}
	return true;
}

/* At least one pass: a stall before the first check must not skip the loop. */
void fgd_run_for(int ms)
{
	unsigned long long end = hostd_now_ns() + ms * 1000000ull;

	do
		fgd_poll(5);
	while (hostd_now_ns() < end);
}

/* ---- what ctl stats says ---------------------------------------------------------- */

bool fgd_dev_faulted(struct hostd_dev *dev)
{
	return hostd_dev_faulted(dev);
}

const char *fgd_dev_last_fault(struct hostd_dev *dev)
{
	return dev->fault;
}

/* The value of @key in the device's text stats line, unquoted. */
static const char *stat_lookup(struct hostd_dev *dev, const char *key)
{
	static char val[256];
	struct hostd_buf b = { 0 };
	struct hostd_stats_out out;
	char pat[64];
	const char *p, *found = NULL;
	size_t n;

	hostd_stat_init(&out, &b, false);
	hostd_dev_stats(dev, &out, true);
	snprintf(pat, sizeof(pat), " %s=", key);
	p = b.s ? strstr(b.s, pat) : NULL;
	if (p) {
		p += strlen(pat);
		if (*p == '"') {
			p++;
			n = strcspn(p, "\"");
		} else {
			n = strcspn(p, " \n");
		}
		snprintf(val, sizeof(val), "%.*s", (int)n, p);
		found = val;
	}
	hostd_buf_free(&b);
	return found;
}

__u64 fgd_stat(struct hostd_dev *dev, const char *key)
{
	const char *v = stat_lookup(dev, key);

	return v ? strtoull(v, NULL, 0) : ~0ull;
}

const char *fgd_stat_str(struct hostd_dev *dev, const char *key)
{
	const char *v = stat_lookup(dev, key);

	return v ? v : "";
}
