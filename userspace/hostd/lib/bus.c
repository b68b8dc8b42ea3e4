// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the bus of one guest: hypercalls, devices, shms.
 *
 * The hypercall mailbox (BAR2 line 1) is the guest's; we read hc_seq once,
 * copy hc, check the vector and the exact length of its struct, translate
 * datap, copy the struct in, act on the copy, copy only the output fields
 * back, then answer in line 2 (hc_result, then hc_done). See
 * docs/transport.md for each vector.
 *
 * Faults. A device the guest misuses is faulted alone (hostd_dev_fault):
 * it refuses calls and shms until the guest closes and reopens it. A broken
 * eventq faults the bus: every hypercall but NEGOTIATE/BUSREG answers -EIO,
 * doorbells are dropped and the loop closes all devices; a new NEGOTIATE +
 * BUSREG (the guest's bridge probing again) starts it clean. Neither stops
 * the other guests.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "hostd.h"

/* Largest DEVCALL buffer we copy: the calls are small control requests. */
#define HOSTD_CALL_MAX		65536
/* DEVSHM registrations per open device (signals are capped separately). */
#define HOSTD_SHM_MAX		64

static const __u32 hc_len[VBUS_PCI_HC_MAX] = {
	[VBUS_PCI_HC_NEGOTIATE] = sizeof(struct vbus_pci_negotiate),
	[VBUS_PCI_HC_BUSREG] = sizeof(struct vbus_pci_busreg),
	[VBUS_PCI_HC_DEVOPEN] = sizeof(struct vbus_pci_deviceopen),
	[VBUS_PCI_HC_DEVCLOSE] = sizeof(__u64),
	[VBUS_PCI_HC_DEVCALL] = sizeof(struct vbus_pci_devicecall),
	[VBUS_PCI_HC_DEVSHM] = sizeof(struct vbus_pci_deviceshm),
};

/* ---- device accessors (device.h) ---------------------------------------- */

struct hostd_guest *hostd_dev_guest(struct hostd_dev *dev)
{
	return dev->guest;
}

__u32 hostd_dev_id(const struct hostd_dev *dev)
{
	return dev->id;
}

const char *hostd_dev_guest_name(const struct hostd_dev *dev)
{
	return dev->guest->name;
}

void *hostd_dev_priv(const struct hostd_dev *dev)
{
	return dev->priv;
}

void hostd_dev_set_priv(struct hostd_dev *dev, void *priv)
{
	dev->priv = priv;
}

int hostd_dev_faulted(const struct hostd_dev *dev)
{
	return dev->faulted;
}

void hostd_dev_account(struct hostd_dev *dev, __u64 descs, __u64 bytes)
{
	dev->cnt.descs += descs;
	dev->cnt.bytes += bytes;
}

static void dev_vlog(struct hostd_dev *dev, const char *what, const char *fmt,
		     va_list ap)
{
	char prefix[HOSTD_NAME_MAX + 64];

	snprintf(prefix, sizeof(prefix), "[%s] device %u (%s)%s", dev->guest->name,
		 dev->id, dev->type->name, what);
	hostd_vlog_rl(&dev->guest->rl, prefix, fmt, ap);
}

void hostd_dev_log(struct hostd_dev *dev, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dev_vlog(dev, ": ", fmt, ap);
	va_end(ap);
}

void hostd_dev_fault(struct hostd_dev *dev, const char *fmt, ...)
{
	struct hostd_list *pos, *tmp;
	va_list ap;

	if (dev->faulted)
		return;	/* the first reason is the one worth reading */
	dev->faulted = true;
	dev->cnt.faults++;
	va_start(ap, fmt);
	dev_vlog(dev, " faulted: ", fmt, ap);
	va_end(ap);
	/* stop the device's signals: injects now return -EIO */
	hostd_list_for_each_safe(pos, tmp, &dev->shms) {
		struct hostd_shm_ent *e =
			hostd_container_of(pos, struct hostd_shm_ent, node);

		if (e->pub.signal)
			VBUS_WRITE(e->signal.faulted, 1);
	}
}

void *hostd_desc_buf(struct hostd_dev *dev, const struct ioq_ring_desc *desc,
		     __u64 *lenp)
{
	__u64 ptr = VBUS_READ(desc->ptr);
	__u64 len = VBUS_READ(desc->len);
	void *p;

	*lenp = 0;
	if (!len)
		return NULL;
	p = hostd_gpa(dev->guest, ptr, len);
	if (!p) {
		hostd_dev_fault(dev, "descriptor 0x%llx+%llu outside guest RAM",
				(unsigned long long)ptr, (unsigned long long)len);
		return NULL;
	}
	*lenp = len;
	return p;
}

int hostd_shm_ioq(struct hostd_shm *shm, struct ioq *ioq,
		  const struct ioq_ops *ops, __u32 count)
{
	long n;

	if (!shm->signal)
		return -EINVAL;
	/* descriptors hold 64-bit fields we access in place */
	if ((uintptr_t)shm->ptr & 7)
		return -EINVAL;
	n = ioq_ring_check(shm->ptr, shm->len, count);
	if (n < 0)
		return (int)n;
	if (shm->sigoff != offsetof(struct ioq_ring_head, signal))
		return -EINVAL;
	/* ioq_init takes over this reference; ioq_put drops it */
	shm_signal_get(shm->signal);
	if (ioq_init(ioq, ops, ioq_locality_south, shm->ptr, shm->signal,
		     (__u32)n)) {
		shm_signal_put(shm->signal);
		return -EINVAL;
	}
	return 0;
}

/* ---- bus fault ------------------------------------------------------------- */

void hostd_bus_fault(struct hostd_guest *g, const char *fmt, ...)
{
	char prefix[HOSTD_NAME_MAX + 32];
	va_list ap;

	if (g->faulted)
		return;
	g->faulted = true;
	g->bus_faults++;
	snprintf(prefix, sizeof(prefix), "[%s] bus faulted: ", g->name);
	va_start(ap, fmt);
	hostd_vlog_rl(&g->rl, prefix, fmt, ap);
	va_end(ap);
	if (g->evq.attached)
		VBUS_WRITE(g->evq.signal.faulted, 1);
	/* the loop closes the devices once the current handler returned */
	g->defer_pending = true;
}

/* ---- devices ---------------------------------------------------------------- */

struct hostd_dev *hostd_dev_find(struct hostd_guest *g, __u32 id)
{
	struct hostd_list *pos, *tmp;

	hostd_list_for_each_safe(pos, tmp, &g->devs) {
		struct hostd_dev *d = hostd_container_of(pos, struct hostd_dev, node);

		if (d->id == id)
			return d;
	}
	return NULL;
}

static struct hostd_dev *dev_by_handle(struct hostd_guest *g, __u64 h)
{
	struct hostd_list *pos, *tmp;

	if (!h)
		return NULL;
	hostd_list_for_each_safe(pos, tmp, &g->devs) {
		struct hostd_dev *d = hostd_container_of(pos, struct hostd_dev, node);

		if (d->open && d->handle == h)
			return d;
	}
	return NULL;
}

static void post_handle_event(struct hostd_guest *g, __u32 id, __u64 h)
{
	struct vbus_pci_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.eventid = id;
	ev.data.handle.handle = h;
	hostd_evq_post(g, &ev);
}

static void post_devadd(struct hostd_guest *g, struct hostd_dev *d)
{
	struct vbus_pci_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.eventid = VBUS_PCI_EVENT_DEVADD;
	ev.data.add.id = d->id;
	/* zero-filled: always NUL-terminated within 128 bytes */
	strncpy(ev.data.add.type, d->type->name, VBUS_MAX_DEVTYPE_LEN - 1);
	hostd_evq_post(g, &ev);
}

static void shm_ent_close(struct hostd_guest *g, struct hostd_shm_ent *e)
{
	hostd_list_del(&e->node);
	e->closed = true;
	if (!e->pub.signal) {
		free(e);
		return;
	}
	hostd_sig_release_handle(g, e);
	vbus_defer_cancel(&e->signal.deferred_notify);
	/* the guest drops the reference it held for us */
	post_handle_event(g, VBUS_PCI_EVENT_SHMCLOSE, e->cookie);
	/* ours; frees e unless the device leaked one */
	shm_signal_put(&e->signal);
}

void hostd_dev_close(struct hostd_dev *dev)
{
	struct hostd_list *pos, *tmp;

	if (!dev->open)
		return;
	/* the device lets go of the shms first (ioq_put) */
	if (dev->type->close)
		dev->type->close(dev);
	hostd_list_for_each_safe(pos, tmp, &dev->shms)
		shm_ent_close(dev->guest,
			      hostd_container_of(pos, struct hostd_shm_ent, node));
	dev->open = false;
	dev->handle = 0;
}

static void dev_destroy(struct hostd_dev *dev)
{
	struct hostd_guest *g = dev->guest;
	struct hostd_list *pos, *tmp;

	hostd_dev_close(dev);
	/* fds the device forgot: out of our epoll before it closes them */
	hostd_list_for_each_safe(pos, tmp, &g->fdwatches) {
		struct hostd_fdwatch *w =
			hostd_container_of(pos, struct hostd_fdwatch, node);

		if (w->dev == dev && !w->dead)
			hostd_watch_del(g, w->fd);
	}
	if (dev->created && dev->type->destroy)
		dev->type->destroy(dev);
	hostd_list_del(&dev->node);
	g->ndevs--;
	hostd_dev_cfg_free(&dev->cfg);
	free(dev);
}

int hostd_dev_add(struct hostd_guest *g, struct hostd_dev_cfg *dc,
		  char *err, size_t errlen)
{
	const struct hostd_dev_type *t;
	struct hostd_dev *d;
	int ret;

	if (g->ndevs >= HOSTD_MAX_DEVS) {
		snprintf(err, errlen, "guest %s already has %d devices", g->name,
			 HOSTD_MAX_DEVS);
		return -ENOSPC;
	}
	if (hostd_dev_find(g, dc->id)) {
		snprintf(err, errlen, "guest %s: device id %u exists", g->name,
			 dc->id);
		return -EEXIST;
	}
	t = hostd_dev_type_find(dc->type);
	if (!t) {
		snprintf(err, errlen, "unknown device type '%s'", dc->type);
		return -ENOENT;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	d->guest = g;
	d->type = t;
	d->id = dc->id;
	d->cfg = *dc;
	d->cfg.params.v = d->cfg.pv;
	dc->strbuf = NULL;	/* ours now */
	dc->params.count = 0;
	hostd_list_init(&d->shms);
	hostd_list_add_tail(&d->node, &g->devs);
	g->ndevs++;

	ret = t->create(d, &d->cfg.params);
	if (ret < 0) {
		snprintf(err, errlen, "guest %s: device %u (%s): %s", g->name,
			 d->id, t->name, strerror(-ret));
		dev_destroy(d);
		return ret;
	}
	d->created = true;
	if (g->busreg)
		post_devadd(g, d);
	return 0;
}

int hostd_dev_drop(struct hostd_guest *g, __u32 id)
{
	struct hostd_dev *d = hostd_dev_find(g, id);

	if (!d)
		return -ENOENT;
	hostd_dev_close(d);
	if (g->busreg)
		post_handle_event(g, VBUS_PCI_EVENT_DEVDROP, id);
	dev_destroy(d);
	return 0;
}

void hostd_dev_free_all(struct hostd_guest *g)
{
	while (!hostd_list_empty(&g->devs))
		dev_destroy(hostd_container_of(g->devs.next, struct hostd_dev,
					       node));
}

void hostd_bus_reset(struct hostd_guest *g)
{
	struct hostd_list *pos, *tmp;

	/*
	 * The eventq first: its memory may belong to a bridge that is gone
	 * (module reload, reboot), so nothing may be written to it anymore,
	 * not even the SHMCLOSEs of the close below.
	 */
	hostd_evq_detach(g);
	hostd_list_for_each_safe(pos, tmp, &g->devs)
		hostd_dev_close(hostd_container_of(pos, struct hostd_dev, node));
	g->busreg = false;
	g->faulted = false;
}

/* ---- hypercalls -------------------------------------------------------------- */

union hc_args {
	struct vbus_pci_negotiate neg;
	struct vbus_pci_busreg busreg;
	struct vbus_pci_deviceopen open;
	__u64 handle;
	struct vbus_pci_devicecall call;
	struct vbus_pci_deviceshm shm;
};

static int hc_negotiate(struct hostd_guest *g, union hc_args *a, void *gp)
{
	__u64 caps = 0;

	if (a->neg.magic != VBUS_PCI_ABI_MAGIC ||
	    a->neg.version != VBUS_PCI_HC_VERSION)
		return -EPROTO;
	/* a new bridge instance: whatever the previous one had is gone */
	hostd_bus_reset(g);
	g->negotiated = true;
	memcpy((char *)gp + offsetof(struct vbus_pci_negotiate, capabilities),
	       &caps, sizeof(caps));
	return 0;
}

static int hc_busreg(struct hostd_guest *g, union hc_args *a)
{
	struct hostd_list *pos, *tmp;
	int ret;

	if (a->busreg.count != 1)
		return -EINVAL;
	hostd_bus_reset(g);
	ret = hostd_evq_attach(g, &a->busreg.eventq[0]);
	if (ret < 0)
		return ret;
	g->busreg = true;
	hostd_list_for_each_safe(pos, tmp, &g->devs)
		post_devadd(g, hostd_container_of(pos, struct hostd_dev, node));
	return 0;
}

static int hc_devopen(struct hostd_guest *g, union hc_args *a, void *gp)
{
	struct hostd_dev *d = hostd_dev_find(g, a->open.devid);
	__u64 h;
	int ret;

	if (!d)
		return -ENODEV;
	if (d->open)
		return -EBUSY;
	d->faulted = false;	/* a fresh open starts clean */
	ret = d->type->open ? d->type->open(d, a->open.version) : 0;
	if (ret < 0)
		return ret;
	h = ++g->next_handle;
	d->open = true;
	d->handle = h;
	memcpy((char *)gp + offsetof(struct vbus_pci_deviceopen, handle), &h,
	       sizeof(h));
	return 0;
}

static int hc_devclose(struct hostd_guest *g, union hc_args *a)
{
	struct hostd_dev *d = dev_by_handle(g, a->handle);

	if (!d)
		return -EINVAL;
	hostd_dev_close(d);
	return 0;
}

static int hc_devcall(struct hostd_guest *g, union hc_args *a)
{
	struct hostd_dev *d = dev_by_handle(g, a->call.devh);
	__u32 len = a->call.len;
	void *gbuf = NULL, *buf = NULL;
	int ret;

	if (!d)
		return -EINVAL;
	if (d->faulted)
		return -EIO;
	if (!d->type->call)
		return -EINVAL;
	if (len > HOSTD_CALL_MAX)
		return -EINVAL;
	if (len) {
		gbuf = hostd_gpa(g, a->call.datap, len);
		if (!gbuf)
			return -EFAULT;
		buf = malloc(len);
		if (!buf)
			return -ENOMEM;
		/* the device works on our copy, never on guest memory */
		memcpy(buf, gbuf, len);
	}
	d->cnt.calls++;
	ret = d->type->call(d, a->call.func, buf, len);
	if (ret >= 0 && len && !d->faulted)
		memcpy(gbuf, buf, len);
	free(buf);
	return ret;
}

static int hc_devshm(struct hostd_guest *g, union hc_args *a)
{
	struct hostd_dev *d = dev_by_handle(g, a->shm.devh);
	struct hostd_list *pos, *tmp;
	struct hostd_shm_ent *e;
	__u32 off = a->shm.signal.offset;
	unsigned int n = 0;
	void *p;
	int ret, handle = 0;

	if (!d)
		return -EINVAL;
	if (d->faulted)
		return -EIO;
	if (!d->type->shm || !a->shm.len)
		return -EINVAL;
	hostd_list_for_each_safe(pos, tmp, &d->shms)
		n++;
	if (n >= HOSTD_SHM_MAX)
		return -ENOSPC;
	p = hostd_gpa(g, a->shm.datap, a->shm.len);
	if (!p)
		return -EFAULT;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	hostd_list_init(&e->node);
	e->guest = g;
	e->pub.dev = d;
	e->pub.id = a->shm.id;
	e->pub.flags = a->shm.flags;
	e->pub.prio = a->shm.signal.prio;
	e->pub.len = a->shm.len;
	e->pub.gpa = a->shm.datap;
	e->pub.ptr = p;

	if (off != VBUS_PCI_SHM_NO_SIGNAL) {
		struct shm_signal_desc *desc;

		ret = -EINVAL;
		if ((__u64)off + sizeof(*desc) > a->shm.len)
			goto out_free;
		desc = (struct shm_signal_desc *)((char *)p + off);
		/* 32-bit fields, accessed in place */
		if ((uintptr_t)desc & 3)
			goto out_free;
		ret = shm_signal_desc_check(desc);
		if (ret < 0)
			goto out_free;
		handle = hostd_sig_alloc(g, e);
		if (handle < 0) {
			ret = handle;
			goto out_free;
		}
		e->cookie = a->shm.signal.cookie;
		e->pub.sigoff = off;
		hostd_shm_ent_signal_init(e, desc);
	}

	ret = d->type->shm(d, &e->pub);
	if (ret < 0) {
		e->closed = true;
		if (e->pub.signal) {
			hostd_sig_release_handle(g, e);
			vbus_defer_cancel(&e->signal.deferred_notify);
			shm_signal_put(&e->signal);	/* frees e */
			return ret;
		}
		goto out_free;
	}
	hostd_list_add_tail(&e->node, &d->shms);
	return handle;

out_free:
	free(e);
	return ret;
}

int hostd_hc_dispatch(struct hostd_guest *g, const struct vbus_pci_hypercall *hc)
{
	union hc_args a;
	void *gp;

	if (hc->vector >= VBUS_PCI_HC_MAX)
		return -EINVAL;
	if (hc->len != hc_len[hc->vector])
		return -EINVAL;
	gp = hostd_gpa(g, hc->datap, hc->len);
	if (!gp)
		return -EFAULT;
	/* one copy: the guest may change its buffer while we work */
	memset(&a, 0, sizeof(a));
	memcpy(&a, gp, hc->len);

	if (hc->vector == VBUS_PCI_HC_NEGOTIATE)
		return hc_negotiate(g, &a, gp);
	if (hc->vector == VBUS_PCI_HC_BUSREG && a.busreg.count == 0) {
		/*
		 * Detach: the bridge is going away and frees the eventq once
		 * we answer. Allowed in any state (nothing to drop is fine).
		 */
		hostd_bus_reset(g);
		return 0;
	}
	if (!g->negotiated)
		return -EPROTO;
	if (hc->vector == VBUS_PCI_HC_BUSREG)
		return hc_busreg(g, &a);
	if (g->faulted)
		return -EIO;

	switch (hc->vector) {
	case VBUS_PCI_HC_DEVOPEN:
		return hc_devopen(g, &a, gp);
	case VBUS_PCI_HC_DEVCLOSE:
		return hc_devclose(g, &a);
	case VBUS_PCI_HC_DEVCALL:
		return hc_devcall(g, &a);
	case VBUS_PCI_HC_DEVSHM:
		return hc_devshm(g, &a);
	default:
		return -EINVAL;
	}
}

void hostd_hc_doorbell(struct hostd_guest *g)
{
	struct vbus_pci_hypercall hc;
	__u32 seq;
	int ret;

	/* drain first: a doorbell rung after this is seen next time round */
	if (g->db_fd[VBUS_PCI_DB_HC] >= 0)
		hostd_eventfd_drain(g->db_fd[VBUS_PCI_DB_HC]);
	if (!g->shm)
		return;

	seq = VBUS_READ(g->shm->hc_seq);
	if (seq == g->last_seq)
		return;		/* spurious, or already answered */
	/*
	 * hc_seq before the request it announces. Pairs with the guest's
	 * wmb between writing hc and bumping hc_seq.
	 */
	vbus_rmb();
	hc.vector = VBUS_READ(g->shm->hc.vector);
	hc.len = VBUS_READ(g->shm->hc.len);
	hc.datap = VBUS_READ(g->shm->hc.datap);

	g->hypercalls++;
	ret = hostd_hc_dispatch(g, &hc);
	if (ret < 0) {
		g->hc_errors++;
		hostd_dbg("[%s] hypercall %u len %u: %d", g->name, hc.vector,
			  hc.len, ret);
	}

	VBUS_WRITE(g->shm->hc_result, ret);
	/*
	 * The result (and the output fields copied into the guest's buffer)
	 * before hc_done. Pairs with the guest's rmb after it sees
	 * hc_done == seq and before it reads hc_result and its buffer.
	 */
	vbus_wmb();
	VBUS_WRITE(g->shm->hc_done, seq);
	g->last_seq = seq;
	if (g->msix_fd[VBUS_PCI_MSIX_HC] >= 0)
		hostd_eventfd_kick(g->msix_fd[VBUS_PCI_MSIX_HC]);
}
