// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: a guest's bus (see bus.h). Each verb gets the guest's
 * arguments already copied out of guest memory (hc.c); what it hands the
 * devices is checked here: handles, lengths, regions, signal descriptors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bus.h"
#include "devtype.h"
#include "qvec.h"

/* Largest DEVCALL buffer we copy: the calls are small control requests. */
#define HOSTD_CALL_MAX		65536
/* DEVSHM registrations per open device (signals are capped separately). */
#define HOSTD_SHM_MAX		64

/* ---- state ------------------------------------------------------------------ */

bool hostd_bus_faulted(const struct hostd_bus *b)
{
	return b->evq.attached && !hostd_evq_live(&b->evq);
}

bool hostd_bus_negotiated(const struct hostd_bus *b)
{
	return b->negotiated;
}

bool hostd_bus_registered(const struct hostd_bus *b)
{
	return b->busreg;
}

/* ---- events ------------------------------------------------------------------- */

static void post_devadd(struct hostd_bus *b, struct hostd_dev *d)
{
	struct vbus_pci_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.eventid = VBUS_PCI_EVENT_DEVADD;
	ev.data.add.id = d->id;
	/* zero-filled: always NUL-terminated within 128 bytes */
	strncpy(ev.data.add.type, d->type->name, VBUS_MAX_DEVTYPE_LEN - 1);
	hostd_evq_post(&b->evq, &ev);
}

static void post_devdrop(struct hostd_bus *b, __u32 id)
{
	struct vbus_pci_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.eventid = VBUS_PCI_EVENT_DEVDROP;
	ev.data.handle.handle = id;
	hostd_evq_post(&b->evq, &ev);
}

/* ---- signal handles --------------------------------------------------------------- */

/*
 * Lowest free handle. The guest's idea of a handle only matters while the
 * shm is open; a stale bit for a reused handle costs the new owner one
 * spurious wakeup, which every receiver tolerates.
 */
static int handle_alloc(struct hostd_bus *b, struct hostd_shm_ent *e)
{
	__u32 h;

	for (h = 1; h < VBUS_PCI_MAX_SIGNALS; h++) {
		if (!b->sigs[h]) {
			b->sigs[h] = e;
			e->handle = h;
			return (int)h;
		}
	}
	return -ENOSPC;
}

static void handle_release(struct hostd_bus *b, struct hostd_shm_ent *e)
{
	if (e->handle && e->handle < VBUS_PCI_MAX_SIGNALS &&
	    b->sigs[e->handle] == e)
		b->sigs[e->handle] = NULL;
	e->handle = 0;
}

struct hostd_shm_ent *hostd_bus_signal(struct hostd_bus *b, __u32 h)
{
	return h && h < VBUS_PCI_MAX_SIGNALS ? b->sigs[h] : NULL;
}

/* ---- one device ----------------------------------------------------------------------- */

struct hostd_dev *hostd_bus_find(struct hostd_bus *b, __u32 id)
{
	struct hostd_dev *d;

	hostd_list_for_each_entry(d, pos, &b->devs, struct hostd_dev, node)
		if (d->id == id)
			return d;
	return NULL;
}

static struct hostd_dev *dev_by_handle(struct hostd_bus *b, __u64 h)
{
	struct hostd_dev *d;

	if (!h)
		return NULL;
	hostd_list_for_each_entry(d, pos, &b->devs, struct hostd_dev, node)
		if (d->open && d->handle == h)
			return d;
	return NULL;
}

/* The device's close op, then everything hostd built for its shms. */
static void dev_close(struct hostd_bus *b, struct hostd_dev *d)
{
	struct hostd_shm_ent *e;

	if (!d->open)
		return;
	hostd_dev_close(d);
	hostd_list_for_each_entry(e, pos, &d->shms, struct hostd_shm_ent, node) {
		handle_release(b, e);
		hostd_shm_ent_close(e);
	}
}

static void dev_destroy(struct hostd_bus *b, struct hostd_dev *d)
{
	dev_close(b, d);
	hostd_dev_destroy(d);
	b->ndevs--;
}

static void close_all(struct hostd_bus *b)
{
	struct hostd_dev *d;

	hostd_list_for_each_entry(d, pos, &b->devs, struct hostd_dev, node)
		dev_close(b, d);
}

/* ---- the registry ------------------------------------------------------------------------ */

static int add_check(struct hostd_bus *b, const char *type, __u32 id,
		     const struct hostd_dev_type **t, char *err, size_t errlen)
{
	char why[192];

	if (b->ndevs >= HOSTD_MAX_DEVS) {
		snprintf(err, errlen, "guest %s: device %u: the guest has %d devices already",
			 b->env.guest, id, HOSTD_MAX_DEVS);
		return -ENOSPC;
	}
	if (hostd_bus_find(b, id)) {
		snprintf(err, errlen, "guest %s: device %u: id already in use",
			 b->env.guest, id);
		return -EEXIST;
	}
	*t = hostd_dev_type_lookup(type, why, sizeof(why));
	if (!*t) {
		snprintf(err, errlen, "guest %s: device %u: %s", b->env.guest, id,
			 why);
		return -ENOENT;
	}
	return 0;
}

int hostd_bus_add(struct hostd_bus *b, const char *type, __u32 id,
		  const struct hostd_params *p, char *err, size_t errlen)
{
	const struct hostd_dev_type *t;
	struct hostd_dev *d;
	char why[256];
	int ret;

	ret = add_check(b, type, id, &t, err, errlen);
	if (ret < 0)
		return ret;
	d = hostd_dev_new(&b->env, t, id, p);
	if (!d) {
		snprintf(err, errlen, "guest %s: device %u: out of memory",
			 b->env.guest, id);
		return -ENOMEM;
	}
	hostd_list_add_tail(&d->node, &b->devs);
	b->ndevs++;
	d->hot = b->live;
	ret = hostd_dev_create(d, why, sizeof(why));
	if (ret < 0) {
		snprintf(err, errlen, "guest %s: %s: %s", b->env.guest, d->name,
			 why);
		dev_destroy(b, d);
		return ret;
	}
	/* pending: announced once ready (hostd_bus_run_deferred) */
	if (ret != HOSTD_DEV_PENDING && b->busreg)
		post_devadd(b, d);
	return ret;
}

void hostd_bus_set_live(struct hostd_bus *b)
{
	b->live = true;
}

/* the guest knows of @d: announced, or to be announced by a BUSREG */
static bool dev_seen(const struct hostd_dev *d)
{
	return !d->pending && !d->announce;
}

/* After a pass: DEVADD the devices that got ready, drop those that gave up. */
static void run_pending(struct hostd_bus *b)
{
	struct hostd_dev *d;

	hostd_list_for_each_entry(d, pos, &b->devs, struct hostd_dev, node) {
		if (d->doomed) {
			snprintf(b->add_error, sizeof(b->add_error),
				 "guest %s: %s: %s", b->env.guest, d->name,
				 d->why);
			hostd_log("%s", b->add_error);
			dev_destroy(b, d);
		} else if (d->announce) {
			d->announce = false;
			if (b->busreg)
				post_devadd(b, d);
		}
	}
}

int hostd_bus_drop(struct hostd_bus *b, __u32 id, char *err, size_t errlen)
{
	struct hostd_dev *d = hostd_bus_find(b, id);

	if (!d) {
		snprintf(err, errlen, "guest %s has no device %u", b->env.guest,
			 id);
		return -ENOENT;
	}
	dev_close(b, d);
	if (b->busreg && dev_seen(d))
		post_devdrop(b, id);
	dev_destroy(b, d);
	return 0;
}

int hostd_bus_ctl(struct hostd_bus *b, __u32 id, const char *verb,
		  const char *arg, char *msg, size_t len)
{
	struct hostd_dev *d = hostd_bus_find(b, id);

	if (!d) {
		snprintf(msg, len, "guest %s has no device %u", b->env.guest,
			 id);
		return -ENOENT;
	}
	return hostd_dev_ctl(d, verb, arg, msg, len);
}

/* ---- bus state ------------------------------------------------------------------------------ */

void hostd_bus_reset(struct hostd_bus *b)
{
	/*
	 * The eventq first: its memory may belong to a bridge that is gone
	 * (module reload, reboot), so nothing may be written to it anymore,
	 * not even the SHMCLOSEs of the close below.
	 */
	hostd_evq_detach(&b->evq);
	close_all(b);
	b->busreg = false;
}

void hostd_bus_connect(struct hostd_bus *b)
{
	b->negotiated = false;
	b->qvec = false;
}

void hostd_bus_run_deferred(struct hostd_bus *b)
{
	unsigned int h;

	hostd_evq_run_deferred(&b->evq);
	run_pending(b);
	for (h = 1; h < VBUS_PCI_MAX_SIGNALS; h++) {
		struct hostd_shm_ent *e = b->sigs[h];

		/* a queue thread's shm: its thread runs it (dev.c) */
		if (!e || e->thr)
			continue;
		shm_signal_get(&e->signal);
		vbus_defer_run(&e->signal.deferred_notify);
		shm_signal_put(&e->signal);
	}
	/* a faulted bus: let go of everything the guest gave us */
	if (hostd_bus_faulted(b))
		close_all(b);
	if (b->faults && b->faults->deferred)
		b->faults->deferred(b);
}

/* ---- the verbs ------------------------------------------------------------------------------- */

int hostd_bus_negotiate(struct hostd_bus *b, const struct vbus_pci_negotiate *n,
			__u64 *caps)
{
	if (n->magic != VBUS_PCI_ABI_MAGIC || n->version != VBUS_PCI_HC_VERSION)
		return -EPROTO;
	/* a new bridge instance: whatever the previous one had is gone */
	hostd_bus_reset(b);
	b->negotiated = true;
	*caps = hostd_qvec_accept(b->evq.iv, n->capabilities);
	b->qvec = *caps & VBUS_PCI_CAP_QVEC;
	return 0;
}

int hostd_bus_register(struct hostd_bus *b, const struct vbus_pci_busreg *r)
{
	struct hostd_dev *d;
	int ret;

	if (r->count != 1)
		return -EINVAL;
	hostd_bus_reset(b);
	ret = hostd_evq_attach(&b->evq, &r->eventq[0]);
	if (ret < 0)
		return ret;
	b->busreg = true;
	if (b->faults && b->faults->busreg)
		b->faults->busreg(b);
	hostd_list_for_each_entry(d, pos, &b->devs, struct hostd_dev, node) {
		if (d->pending)
			continue;	/* announced once ready */
		d->announce = false;
		post_devadd(b, d);
	}
	return 0;
}

int hostd_bus_open(struct hostd_bus *b, const struct vbus_pci_deviceopen *o,
		   __u64 *handle)
{
	struct hostd_dev *d = hostd_bus_find(b, o->devid);
	int ret;

	/* a pending device is not there for the guest yet */
	if (!d || !dev_seen(d))
		return -ENODEV;
	if (d->open)
		return -EBUSY;
	ret = hostd_dev_open(d, o->version);
	if (ret < 0)
		return ret;
	d->handle = *handle = ++b->next_handle;
	return 0;
}

int hostd_bus_close(struct hostd_bus *b, __u64 handle)
{
	struct hostd_dev *d = dev_by_handle(b, handle);

	if (!d)
		return -EINVAL;
	dev_close(b, d);
	return 0;
}

int hostd_bus_call(struct hostd_bus *b, const struct vbus_pci_devicecall *c)
{
	struct hostd_dev *d = dev_by_handle(b, c->devh);
	__u32 len = c->len;
	void *gbuf = NULL, *buf = NULL;
	int ret;

	if (!d)
		return -EINVAL;
	if (hostd_dev_faulted(d))
		return -EIO;
	if (!d->type->call || len > HOSTD_CALL_MAX)
		return -EINVAL;
	if (len) {
		gbuf = hostd_mem_gpa(b->env.mem, c->datap, len);
		if (!gbuf)
			return -EFAULT;
		buf = malloc(len);
		if (!buf)
			return -ENOMEM;
		/* the device works on our copy, never on guest memory */
		memcpy(buf, gbuf, len);
	}
	ret = hostd_dev_call(d, c->func, buf, len);
	if (ret >= 0 && len && !hostd_dev_faulted(d))
		memcpy(gbuf, buf, len);
	free(buf);
	return ret;
}

/* The signal descriptor at @off of a region, checked. */
static int shm_signal_at(void *p, __u32 len, __u32 off,
			 struct shm_signal_desc **desc)
{
	if ((__u64)off + sizeof(**desc) > len)
		return -EINVAL;
	*desc = (struct shm_signal_desc *)((char *)p + off);
	/* 32-bit fields, accessed in place */
	if ((uintptr_t)*desc & 3)
		return -EINVAL;
	return shm_signal_desc_check(*desc);
}

static struct hostd_shm_ent *shm_ent_for(struct hostd_bus *b,
					 struct hostd_dev *d,
					 const struct vbus_pci_deviceshm *s,
					 int *ret)
{
	unsigned int n = 0;
	struct hostd_list *pos, *tmp;
	struct hostd_shm_ent *e;
	void *p;

	*ret = -EINVAL;
	if (!d->type->shm || !s->len)
		return NULL;
	hostd_list_for_each_safe(pos, tmp, &d->shms)
		n++;
	*ret = -ENOSPC;
	if (n >= HOSTD_SHM_MAX)
		return NULL;
	*ret = -EFAULT;
	p = hostd_mem_gpa(b->env.mem, s->datap, s->len);
	if (!p)
		return NULL;
	*ret = -ENOMEM;
	e = hostd_shm_ent_new(d, s, p);
	if (e)
		*ret = 0;
	return e;
}

int hostd_bus_shm(struct hostd_bus *b, const struct vbus_pci_deviceshm *s)
{
	struct hostd_dev *d = dev_by_handle(b, s->devh);
	struct shm_signal_desc *desc;
	struct hostd_shm_ent *e;
	int ret, handle = 0;

	if (!d)
		return -EINVAL;
	if (hostd_dev_faulted(d))
		return -EIO;
	ret = hostd_qvec_check(b->evq.iv, b->qvec, s, b->env.log, d->name);
	if (ret < 0)
		return ret;
	e = shm_ent_for(b, d, s, &ret);
	if (!e)
		return ret;
	if (s->signal.offset != VBUS_PCI_SHM_NO_SIGNAL) {
		handle = shm_signal_at(e->pub.ptr, s->len, s->signal.offset,
				       &desc);
		if (!handle)
			handle = handle_alloc(b, e);
		if (handle < 0) {
			hostd_shm_ent_drop(e);
			return handle;
		}
		hostd_shm_ent_signal(e, desc);
	}
	ret = hostd_shm_ent_add(e);
	if (ret < 0) {
		handle_release(b, e);
		hostd_shm_ent_drop(e);
		return ret;
	}
	if (b->faults && b->faults->shm)
		b->faults->shm(b, d, e);
	return handle;
}

/* ---- stats ------------------------------------------------------------------------------------- */

int hostd_bus_stats(struct hostd_bus *b, struct hostd_stats_out *out,
		    bool one, __u32 id, bool counters)
{
	struct hostd_dev *d;

	if (one && !hostd_bus_find(b, id))
		return -ENOENT;
	hostd_stat_list(out, "devices");
	hostd_list_for_each_entry(d, pos, &b->devs, struct hostd_dev, node)
		if (!one || d->id == id)
			hostd_dev_stats(d, out, counters);
	hostd_stat_list_end(out);
	return 0;
}

/* ---- lifetime ------------------------------------------------------------------------------------ */

void hostd_bus_init(struct hostd_bus *b, const char *name,
		    struct hostd_log_limit *log, struct hostd_mem *mem,
		    struct hostd_ivshmem *iv, struct hostd_loop *loop)
{
	memset(b, 0, sizeof(*b));
	hostd_list_init(&b->devs);
	hostd_evq_init(&b->evq, mem, iv, loop, log);
	b->env = (struct hostd_dev_env){ .guest = name, .log = log, .mem = mem,
					 .loop = loop, .evq = &b->evq,
					 .qemu = &iv->peer };
}

void hostd_bus_fini(struct hostd_bus *b)
{
	if (!b->env.guest)
		return;		/* never initialised */
	hostd_bus_reset(b);
	while (!hostd_list_empty(&b->devs))
		dev_destroy(b, hostd_container_of(b->devs.next, struct hostd_dev,
						  node));
	hostd_evq_fini(&b->evq);
}
