// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: test-only fault injection (see fault.h). It acts through the
 * bus's hooks (struct hostd_bus_faults), which are NULL unless
 * hostd_fault_enable() set them, and through the verbs below. Everything
 * runs on the guest's thread, like the rest of the guest's state.
 *
 * What it writes into guest memory it writes only into regions the guest
 * registered and has not closed: the faults are the host's lies about
 * shared state, never stray writes into memory the guest took back (no
 * guest can defend against those; docs/threat-model.md).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vbus/ioq.h>
#include "fault.h"
#include "log.h"

struct hostd_fault {
	struct hostd_bus_faults hooks;	/* first: the bus holds &hooks */
	struct hostd_guest *g;
	unsigned int phantoms;		/* announced at every BUSREG */
	bool busreg_quiet, quiet_held;	/* BUSREG's DEVADDs without an irq */
	bool shm_armed, shm_storm;	/* on-devshm */
	__u32 shm_dev, shm_off, shm_val;
	bool storm, storm_enable;
	__u32 storm_dev;
	unsigned int hc_delay_ms, hc_delay_n;
	/* what was done, for `status` and the tests */
	__u64 phantoms_posted, shm_pokes, pokes, completes, storm_passes;
	__u64 storms_ended;
	__u64 hc_delayed;
};

static struct hostd_fault *to_fault(struct hostd_bus *b)
{
	return b->faults ? b->faults->arg : NULL;
}

static void fault_log(struct hostd_fault *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fault_log(struct hostd_fault *f, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	hostd_log("[%s] test fault: %s", f->g->name, msg);
}

/* ---- the hooks ----------------------------------------------------------- */

static void post_phantom(struct hostd_bus *b, __u32 eventid, unsigned int i)
{
	struct vbus_pci_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.eventid = eventid;
	if (eventid == VBUS_PCI_EVENT_DEVADD) {
		ev.data.add.id = HOSTD_FAULT_PHANTOM_BASE + i;
		strcpy(ev.data.add.type, HOSTD_FAULT_PHANTOM_TYPE);
	} else {
		ev.data.handle.handle = HOSTD_FAULT_PHANTOM_BASE + i;
	}
	hostd_evq_post(&b->evq, &ev);
}

/* The guest's irq record of its eventq (it receives there). */
static struct shm_signal_irq *evq_irq(struct hostd_bus *b)
{
	return &b->evq.signal.desc->irq[shm_locality_north];
}

static void on_busreg(struct hostd_bus *b)
{
	struct hostd_fault *f = to_fault(b);
	unsigned int i;

	/* a re-attach only: host_epoch 0 is the guest's first host */
	if (f->busreg_quiet && f->g->iv.shm &&
	    VBUS_READ(f->g->iv.shm->host_epoch)) {
		/*
		 * "a notification is on its way": our inject sends no MSI-X
		 * for the DEVADDs below, the guest finds them only by looking
		 */
		VBUS_WRITE(evq_irq(b)->pending, 1);
		f->quiet_held = true;
		f->busreg_quiet = false;	/* once */
		fault_log(f, "re-attach BUSREG: its DEVADDs posted without an interrupt");
	}
	for (i = 0; i < f->phantoms; i++)
		post_phantom(b, VBUS_PCI_EVENT_DEVADD, i);
	f->phantoms_posted += f->phantoms;
	if (f->phantoms)
		fault_log(f, "BUSREG: %u phantom devices announced ahead of the real ones",
			  f->phantoms);
}

static void poke(void *region, __u32 off, __u32 val, unsigned int width)
{
	char *p = (char *)region + off;

	if (width == 1)
		VBUS_WRITE(*(__u8 *)p, (__u8)val);
	else if (width == 2)
		VBUS_WRITE(*(__u16 *)p, (__u16)val);
	else
		VBUS_WRITE(*(__u32 *)p, val);
}

static void on_shm(struct hostd_bus *b, struct hostd_dev *d,
		   struct hostd_shm_ent *e)
{
	struct hostd_fault *f = to_fault(b);

	if (!f->shm_armed || d->id != f->shm_dev ||
	    (__u64)f->shm_off + 4 > e->pub.len)
		return;
	f->shm_armed = false;
	poke(e->pub.ptr, f->shm_off, f->shm_val, 4);
	/* and a signal, so the guest looks at what it has now */
	if (e->pub.signal)
		shm_signal_inject(&e->signal, 0);
	f->shm_pokes++;
	fault_log(f, "device %u: DEVSHM %u accepted, then %#x written at byte %u and signalled",
		  d->id, e->pub.id, f->shm_val, f->shm_off);
	if (f->shm_storm) {
		f->storm = true;
		f->storm_dev = d->id;
		f->storm_enable = false;
		/* the guest's next hypercall (its reaction) waits in the storm */
		f->hc_delay_ms = 200;
		f->hc_delay_n = 1;
		hostd_loop_defer(b->env.loop);
	}
}

/* The guest's irq record of each open signal of @d, up to @max. */
static unsigned int storm_irqs(struct hostd_dev *d, struct shm_signal_irq **irq,
			       unsigned int max)
{
	struct hostd_shm_ent *e;
	unsigned int n = 0;

	hostd_list_for_each_entry(e, pos, &d->shms, struct hostd_shm_ent,
				  node) {
		if (e->closed || !e->pub.signal || n == max)
			continue;
		irq[n++] = &e->signal.desc->irq[shm_locality_north];
	}
	return n;
}

#define STORM_SIGNALS	8
#define STORM_HOLD_NS	200000ull	/* dirty held between two posts */

/*
 * One storm pass over @d's open signals: a SHMSIGNAL posted whether or not
 * pending says one is on its way (a host that ignores the protocol's
 * suppression), then dirty=1 (and enabled=1 with storm_enable) stored
 * again and again for STORM_HOLD_NS: whenever the guest's wakeup reloads
 * dirty after its notifier it finds it set, so it runs until its budget
 * is spent and re-arms its deferred notify.
 */
static void storm_dev(struct hostd_fault *f, struct hostd_dev *d)
{
	struct shm_signal_irq *irq[STORM_SIGNALS];
	struct hostd_shm_ent *e;
	struct vbus_pci_event ev;
	unsigned long long end = hostd_now_ns() + STORM_HOLD_NS;
	unsigned int i, n;

	hostd_list_for_each_entry(e, pos, &d->shms, struct hostd_shm_ent,
				  node) {
		if (e->closed || !e->pub.signal)
			continue;
		memset(&ev, 0, sizeof(ev));
		ev.eventid = VBUS_PCI_EVENT_SHMSIGNAL;
		ev.data.handle.handle = e->cookie;
		hostd_evq_post(e->evq, &ev);
	}
	n = storm_irqs(d, irq, STORM_SIGNALS);
	do {
		for (i = 0; i < n; i++) {
			if (f->storm_enable)
				VBUS_WRITE(irq[i]->enabled, 1);
			VBUS_WRITE(irq[i]->dirty, 1);
		}
	} while (n && hostd_now_ns() < end);
}

/* Each pass of the loop while storming (the hook asks for the next). */
static void on_deferred(struct hostd_bus *b)
{
	struct hostd_fault *f = to_fault(b);
	struct hostd_dev *d;

	if (!f->storm)
		return;
	d = hostd_bus_find(b, f->storm_dev);
	if (!d || !d->open) {
		/* closed (SHMCLOSE sent) or dropped: not one write more */
		f->storm = false;
		f->storms_ended++;
		fault_log(f, "storm on device %u ended: the device closed (%llu passes so far)",
			  f->storm_dev, (unsigned long long)f->storm_passes);
		return;
	}
	storm_dev(f, d);
	f->storm_passes++;
	/*
	 * As fast as the loop turns: dirty must be set again within the
	 * guest's notifier run for its wakeup to use up its budget. The
	 * loop still polls its fds (timeout 0) between passes, so the
	 * hypercalls (the guest's close) are still answered.
	 */
	hostd_loop_defer(b->env.loop);
}

/* The next hypercall acted on @ms late, storming meanwhile if storming. */
static void on_hc(struct hostd_bus *b, __u32 vector)
{
	struct hostd_fault *f = to_fault(b);
	unsigned long long end;

	if (f->quiet_held && hostd_evq_live(&b->evq)) {
		/* the guest's next call: the interrupt it was owed */
		f->quiet_held = false;
		VBUS_WRITE(evq_irq(b)->pending, 0);
		shm_signal_inject(&b->evq.signal, 0);
		fault_log(f, "hypercall %u: the eventq interrupt sent at last",
			  vector);
	}
	if (!f->hc_delay_n)
		return;
	f->hc_delay_n--;
	f->hc_delayed++;
	fault_log(f, "hypercall %u: acting on it %u ms late", vector,
		  f->hc_delay_ms);
	end = hostd_now_ns() + f->hc_delay_ms * 1000000ull;
	while (hostd_now_ns() < end) {
		struct hostd_dev *d = f->storm ?
				      hostd_bus_find(b, f->storm_dev) : NULL;

		if (d && d->open) {
			storm_dev(f, d);
			f->storm_passes++;
		} else {
			usleep(1000);
		}
	}
}

/* ---- the verbs ----------------------------------------------------------- */


/* A decimal or 0x number up to @max into *@v; 0 or -EINVAL. */
static int num(const char *s, __u64 max, __u32 *v)
{
	unsigned long long x;
	char *end;

	errno = 0;
	x = strtoull(s, &end, 0);
	if (*s < '0' || *s > '9' || errno || *end || x > max)
		return -EINVAL;
	*v = (__u32)x;
	return 0;
}

struct verb_args {
	struct hostd_fault *f;
	struct hostd_bus *b;
	char **argv;
	unsigned int argc;
	struct hostd_buf *out;
	char *err;
	size_t errlen;
};

/* argv[i] as a number, or the one wording of a bad one */
static int arg_num(struct verb_args *a, unsigned int i, __u64 max, __u32 *v)
{
	if (num(a->argv[i], max, v))
		return hostd_errf(a->err, a->errlen, -EINVAL,
			    "fault %s: bad number '%s' (0..%llu)", a->argv[0],
			    a->argv[i], (unsigned long long)max);
	return 0;
}

/* The open region of device @id with DEVSHM id @shm. */
static struct hostd_shm_ent *find_shm(struct verb_args *a, __u32 id,
				      __u32 shm, __u32 off, unsigned int w)
{
	struct hostd_dev *d = hostd_bus_find(a->b, id);
	struct hostd_shm_ent *e;

	if (!d || !d->open) {
		hostd_errf(a->err, a->errlen, -ENOENT, "fault %s: device %u is %s",
		     a->argv[0], id, d ? "not open" : "absent");
		return NULL;
	}
	hostd_list_for_each_entry(e, pos, &d->shms, struct hostd_shm_ent,
				  node) {
		if (e->closed || e->pub.id != shm)
			continue;
		if ((__u64)off + w > e->pub.len || off % w) {
			hostd_errf(a->err, a->errlen, -EINVAL,
			     "fault %s: byte %u (%u wide) is outside device %u's region %u (%u bytes) or unaligned",
			     a->argv[0], off, w, id, shm, e->pub.len);
			return NULL;
		}
		return e;
	}
	hostd_errf(a->err, a->errlen, -ENOENT, "fault %s: device %u has no region %u",
	     a->argv[0], id, shm);
	return NULL;
}

static int verb_phantoms(struct verb_args *a)
{
	struct hostd_fault *f = a->f;
	__u32 n;
	unsigned int i;

	if (arg_num(a, 1, 1000, &n))
		return -EINVAL;
	if (hostd_bus_registered(a->b)) {
		for (i = n; i < f->phantoms; i++)
			post_phantom(a->b, VBUS_PCI_EVENT_DEVDROP, i);
		for (i = f->phantoms; i < n; i++)
			post_phantom(a->b, VBUS_PCI_EVENT_DEVADD, i);
		if (n > f->phantoms)
			f->phantoms_posted += n - f->phantoms;
	}
	f->phantoms = n;
	fault_log(f, "%u phantom devices, announced at every BUSREG", n);
	hostd_buf_printf(a->out, "%u phantom devices (ids %u..)\n", n,
			 HOSTD_FAULT_PHANTOM_BASE);
	return 0;
}

static int verb_busreg_quiet(struct verb_args *a)
{
	bool on = !strcmp(a->argv[1], "on");

	if (!on && strcmp(a->argv[1], "off"))
		return hostd_errf(a->err, a->errlen, -EINVAL,
			    "fault busreg-quiet: '%s' (want on or off)",
			    a->argv[1]);
	a->f->busreg_quiet = on;
	hostd_buf_printf(a->out, "busreg-quiet %s\n", on ? "on" : "off");
	return 0;
}

static int verb_on_devshm(struct verb_args *a)
{
	struct hostd_fault *f = a->f;
	__u32 id, off, val;

	if (arg_num(a, 1, 0xffffffffull, &id) ||
	    arg_num(a, 2, 1u << 20, &off) ||
	    arg_num(a, 3, 0xffffffffull, &val))
		return -EINVAL;
	if (off % 4)
		return hostd_errf(a->err, a->errlen, -EINVAL,
			    "fault on-devshm: byte %u is not 4-aligned", off);
	if (a->argc == 5 && strcmp(a->argv[4], "storm"))
		return hostd_errf(a->err, a->errlen, -EINVAL,
			    "fault on-devshm: '%s' (want: on-devshm ID OFF VALUE [storm])",
			    a->argv[4]);
	f->shm_storm = a->argc == 5;
	f->shm_armed = true;
	f->shm_dev = id;
	f->shm_off = off;
	f->shm_val = val;
	hostd_buf_printf(a->out, "armed: device %u's next DEVSHM gets %#x at byte %u\n",
			 id, val, off);
	return 0;
}

static int verb_poke(struct verb_args *a)
{
	__u32 id, shm, off, val, w = 4;
	struct hostd_shm_ent *e;

	if (arg_num(a, 1, 0xffffffffull, &id) ||
	    arg_num(a, 2, 0xffffffffull, &shm) ||
	    arg_num(a, 3, 0xffffffffull, &off) ||
	    arg_num(a, 4, 0xffffffffull, &val) ||
	    (a->argc == 6 && arg_num(a, 5, 4, &w)))
		return -EINVAL;
	if (w != 1 && w != 2 && w != 4)
		return hostd_errf(a->err, a->errlen, -EINVAL,
			    "fault poke: width %u (1, 2 or 4)", w);
	e = find_shm(a, id, shm, off, w);
	if (!e)
		return -ENOENT;
	poke(e->pub.ptr, off, val, w);
	a->f->pokes++;
	fault_log(a->f, "device %u region %u: %#x written at byte %u (%u wide)",
		  id, shm, val, off, w);
	hostd_buf_printf(a->out, "poked %#x at byte %u of device %u's region %u\n",
			 val, off, id, shm);
	return 0;
}

static int verb_peek(struct verb_args *a)
{
	__u32 id, shm, off;
	struct hostd_shm_ent *e;

	if (arg_num(a, 1, 0xffffffffull, &id) ||
	    arg_num(a, 2, 0xffffffffull, &shm) ||
	    arg_num(a, 3, 0xffffffffull, &off))
		return -EINVAL;
	e = find_shm(a, id, shm, off, 4);
	if (!e)
		return -ENOENT;
	hostd_buf_printf(a->out, "%u\n",
			 VBUS_READ(*(__u32 *)((char *)e->pub.ptr + off)));
	return 0;
}

/*
 * complete ID SHM K: on device ID's ring v6 region SHM, the tail (the
 * guest's own counter) and valid_head (ours) both moved K on: K slots the
 * guest already reaped (or never posted) are completed again.
 */
static int verb_complete(struct verb_args *a)
{
	struct ioq_ring_head_v6 *h;
	struct hostd_shm_ent *e;
	__u32 id, shm, k, tail;

	if (arg_num(a, 1, 0xffffffffull, &id) ||
	    arg_num(a, 2, 0xffffffffull, &shm) ||
	    arg_num(a, 3, IOQ_RING_MAX_COUNT, &k))
		return -EINVAL;
	e = find_shm(a, id, shm, 0, sizeof(*h));
	if (!e)
		return -ENOENT;
	h = e->pub.ptr;
	if (VBUS_READ(h->magic) != IOQ_RING_MAGIC ||
	    VBUS_READ(h->ver) != IOQ_RING_VER_V6)
		return hostd_errf(a->err, a->errlen, -EINVAL,
			    "fault complete: device %u's region %u is not a ring v6",
			    id, shm);
	tail = VBUS_READ(h->tail);
	VBUS_WRITE(h->tail, tail + k);
	VBUS_WRITE(h->valid_head, tail + k);
	a->f->completes++;
	fault_log(a->f, "device %u region %u: tail and valid head %u -> %u (%u slots completed again)",
		  id, shm, tail, tail + k, k);
	hostd_buf_printf(a->out, "completed %u slots again on device %u's ring %u\n",
			 k, id, shm);
	return 0;
}

/*
 * shmclose ID: a SHMCLOSE for every open region of device ID, and nothing
 * else: the host says it let go of them and goes on acting on them (a
 * storm goes on); the guest's own DEVCLOSE later closes them for real.
 */
static int verb_shmclose(struct verb_args *a)
{
	struct vbus_pci_event ev;
	struct hostd_shm_ent *e;
	struct hostd_dev *d;
	unsigned int n = 0;
	__u32 id;

	if (arg_num(a, 1, 0xffffffffull, &id))
		return -EINVAL;
	d = hostd_bus_find(a->b, id);
	if (!d || !d->open)
		return hostd_errf(a->err, a->errlen, -ENOENT,
			    "fault shmclose: device %u is %s", id,
			    d ? "not open" : "absent");
	hostd_list_for_each_entry(e, pos, &d->shms, struct hostd_shm_ent,
				  node) {
		if (e->closed || !e->pub.signal)
			continue;
		memset(&ev, 0, sizeof(ev));
		ev.eventid = VBUS_PCI_EVENT_SHMCLOSE;
		ev.data.handle.handle = e->cookie;
		hostd_evq_post(e->evq, &ev);
		n++;
	}
	fault_log(a->f, "device %u: SHMCLOSE for %u regions it still uses", id,
		  n);
	hostd_buf_printf(a->out, "SHMCLOSE sent for %u regions of device %u\n",
			 n, id);
	return 0;
}

static int verb_storm(struct verb_args *a)
{
	struct hostd_fault *f = a->f;
	struct hostd_dev *d;
	__u32 id;

	if (!strcmp(a->argv[1], "off")) {
		f->storm = false;
		hostd_buf_printf(a->out, "storm off\n");
		return 0;
	}
	if (arg_num(a, 1, 0xffffffffull, &id))
		return -EINVAL;
	if (a->argc == 3 && strcmp(a->argv[2], "enable"))
		return hostd_errf(a->err, a->errlen, -EINVAL,
			    "fault storm: '%s' (want: storm ID [enable] | storm off)",
			    a->argv[2]);
	d = hostd_bus_find(a->b, id);
	if (!d || !d->open)
		return hostd_errf(a->err, a->errlen, -ENOENT,
			    "fault storm: device %u is %s", id,
			    d ? "not open" : "absent");
	f->storm = true;
	f->storm_dev = id;
	f->storm_enable = a->argc == 3;
	fault_log(f, "storm on device %u%s", id,
		  f->storm_enable ? " (and its guest's enabled held 1)" : "");
	hostd_loop_defer(a->b->env.loop);
	hostd_buf_printf(a->out, "storm on device %u\n", id);
	return 0;
}

static int verb_hc_delay(struct verb_args *a)
{
	__u32 ms = 0, n = 0;	/* gcc -O2 cannot see arg_num() set both */

	if (arg_num(a, 1, 60000, &ms) || arg_num(a, 2, 1000000, &n))
		return -EINVAL;
	a->f->hc_delay_ms = ms;
	a->f->hc_delay_n = n;
	hostd_buf_printf(a->out, "the next %u hypercalls are answered %u ms late\n",
			 n, ms);
	return 0;
}

static int verb_status(struct verb_args *a)
{
	struct hostd_fault *f = a->f;

	hostd_buf_printf(a->out,
			 "phantoms %u posted %llu busreg-quiet %s\non_devshm %s shm_pokes %llu\npokes %llu completes %llu\nstorm %s passes %llu ended %llu\nhc_delay_left %u delayed %llu\n",
			 f->phantoms, (unsigned long long)f->phantoms_posted,
			 f->busreg_quiet ? "on" : "off", f->shm_armed ? "armed" : "idle",
			 (unsigned long long)f->shm_pokes,
			 (unsigned long long)f->pokes,
			 (unsigned long long)f->completes,
			 f->storm ? "on" : "off",
			 (unsigned long long)f->storm_passes,
			 (unsigned long long)f->storms_ended,
			 f->hc_delay_n, (unsigned long long)f->hc_delayed);
	return 0;
}

static const struct {
	const char *name;
	unsigned int min, max;		/* words, the verb included */
	int (*run)(struct verb_args *a);
} verbs[] = {
	{ "phantoms", 2, 2, verb_phantoms },
	{ "busreg-quiet", 2, 2, verb_busreg_quiet },
	{ "on-devshm", 4, 5, verb_on_devshm },
	{ "complete", 4, 4, verb_complete },
	{ "poke", 5, 6, verb_poke },
	{ "peek", 4, 4, verb_peek },
	{ "storm", 2, 3, verb_storm },
	{ "shmclose", 2, 2, verb_shmclose },
	{ "hc-delay", 3, 3, verb_hc_delay },
	{ "status", 1, 1, verb_status },
};

#define FAULT_USAGE "fault NAME phantoms N | busreg-quiet on|off | on-devshm ID OFF VALUE [storm] | complete ID SHM K | poke ID SHM OFF VALUE [1|2|4] | peek ID SHM OFF | storm ID [enable] | storm off | shmclose ID | hc-delay MS N | status"

int hostd_fault_exec(struct hostd_guest *g, char **argv, unsigned int argc,
		     struct hostd_buf *out, char *err, size_t errlen)
{
	struct verb_args a = {
		.f = to_fault(&g->bus), .b = &g->bus, .argv = argv,
		.argc = argc, .out = out, .err = err, .errlen = errlen,
	};
	unsigned int i;

	if (!a.f)
		return hostd_errf(err, errlen, -EPERM,
			    "fault injection is off: vbus-hostd was not started with --test-faults (test-only)");
	for (i = 0; argc && i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(argv[0], verbs[i].name) &&
		    argc >= verbs[i].min && argc <= verbs[i].max)
			return verbs[i].run(&a);
	return hostd_errf(err, errlen, -EINVAL, "usage: %s", FAULT_USAGE);
}

/* ---- on and off ---------------------------------------------------------- */

int hostd_fault_enable(struct hostd_guest *g)
{
	struct hostd_fault *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->g = g;
	f->hooks.busreg = on_busreg;
	f->hooks.shm = on_shm;
	f->hooks.deferred = on_deferred;
	f->hooks.hc = on_hc;
	f->hooks.arg = f;
	g->bus.faults = &f->hooks;
	return 0;
}

void hostd_fault_disable(struct hostd_guest *g)
{
	struct hostd_fault *f = to_fault(&g->bus);

	g->bus.faults = NULL;
	free(f);
}

bool hostd_fault_enabled(const struct hostd_guest *g)
{
	return g->bus.faults != NULL;
}
