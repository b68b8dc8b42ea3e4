// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: one device and its shms (see dev.h); the device.h calls a
 * device makes on itself.
 *
 * The south signal of a shm is where a device's completion leaves it:
 * ioq_signal() -> core's shm_signal_inject() -> shm_inject() here ->
 * hostd_evq_post() (evq.c) -> the eventq's own signal -> MSI-X
 * (ivshmem.c). Each step is a layer further down; nothing calls back up.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "claim.h"
#include "dev.h"
#include "mem.h"

struct hostd_dev_watch {
	struct hostd_list node;		/* in dev->watches */
	struct hostd_dev *dev;
	int fd;
	hostd_fd_cb cb;
	void *arg;
};

/* ---- accessors ------------------------------------------------------------ */

void *hostd_dev_priv(const struct hostd_dev *dev)
{
	return dev->priv;
}

void hostd_dev_set_priv(struct hostd_dev *dev, void *priv)
{
	dev->priv = priv;
}

void *hostd_dev_gpa(struct hostd_dev *dev, __u64 gpa, __u64 len)
{
	return hostd_mem_gpa(dev->env.mem, gpa, len);
}

void *hostd_dev_data(struct hostd_dev *dev, __u64 gpa, __u64 len)
{
	void *p = hostd_dev_gpa(dev, gpa, len);

	if (!p || hostd_dma_window_admits(&dev->dma, gpa, len))
		return p;
	hostd_dev_log(dev, "data buffer 0x%llx+%llu outside dma_window 0x%llx-0x%llx",
		      (unsigned long long)gpa, (unsigned long long)len,
		      (unsigned long long)dev->dma.lo,
		      (unsigned long long)dev->dma.hi);
	return NULL;
}

bool hostd_dev_faulted(const struct hostd_dev *dev)
{
	return dev->faulted;
}

bool hostd_dev_qemu_peer_ok(struct hostd_dev *dev, int fd, struct ucred *cr)
{
	return hostd_sock_peer_ok(fd, dev->env.qemu, cr);
}

bool hostd_dev_stopping(const struct hostd_dev *dev)
{
	return hostd_loop_stopping(dev->env.loop);
}

void hostd_dev_account(struct hostd_dev *dev, __u64 descs, __u64 bytes)
{
	dev->cnt.descs += descs;
	dev->cnt.bytes += bytes;
}

/* ---- messages ----------------------------------------------------------------- */

static void dev_vlog(struct hostd_dev *dev, const char *what, const char *fmt,
		     va_list ap)
{
	char sub[sizeof(dev->name) + 16];

	snprintf(sub, sizeof(sub), "%s%s", dev->name, what);
	hostd_log_vlimited(dev->env.log, sub, fmt, ap);
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
	struct hostd_shm_ent *e;
	va_list ap;

	if (dev->faulted)
		return;	/* the first reason is the one worth reading */
	dev->faulted = true;
	dev->cnt.faults++;
	va_start(ap, fmt);
	vsnprintf(dev->fault, sizeof(dev->fault), fmt, ap);
	va_end(ap);
	hostd_log_limited(dev->env.log, "%s faulted: %s", dev->name, dev->fault);
	/* stop the device's signals: injects now return -EIO */
	hostd_list_for_each_entry(e, pos, &dev->shms, struct hostd_shm_ent, node)
		if (e->pub.signal)
			VBUS_WRITE(e->signal.faulted, 1);
}

int hostd_dev_fail(struct hostd_dev *dev, int err, const char *fmt, ...)
{
	va_list ap;

	if (dev->err && dev->errlen) {
		va_start(ap, fmt);
		vsnprintf(dev->err, dev->errlen, fmt, ap);
		va_end(ap);
	} else if (dev->pending) {
		/* outside create and ctl: why a pending device gives up */
		va_start(ap, fmt);
		vsnprintf(dev->why, sizeof(dev->why), fmt, ap);
		va_end(ap);
	}
	return err;
}

/*
 * Claim @key for @dev; messages name the resource @what @name, and the
 * holder as "device N of guest G" (plus " (as @as)" when given).
 */
static int dev_claim(struct hostd_dev *dev, const char *what,
		     const char *name, const char *key, const char *as)
{
	char desc[160], holder[192];
	int ret;

	snprintf(desc, sizeof(desc), "device %u of guest %s%s%s%s", dev->id,
		 dev->env.guest, as ? " (as " : "", as ? as : "",
		 as ? ")" : "");
	ret = hostd_claim(what, key, dev, desc, holder, sizeof(holder));
	if (ret == -EBUSY)
		return hostd_dev_fail(dev, ret, "%s %s is already used by %s",
				      what, name, holder);
	if (ret < 0)
		return hostd_dev_fail(dev, ret, "%s %s: %s", what, name,
				      strerror(-ret));
	return 0;
}

int hostd_dev_claim(struct hostd_dev *dev, const char *what,
		    const char *name)
{
	return dev_claim(dev, what, name, name, NULL);
}

int hostd_dev_claim_file(struct hostd_dev *dev, const char *what,
			 const char *path, int fd, bool writable)
{
	char key[64], holder[192];
	struct stat st;
	int ret;

	if (fstat(fd, &st) < 0)
		return hostd_dev_fail(dev, -errno, "%s %s: %s", what, path,
				      strerror(errno));
	/* the inode, not the name: a hard link is the same disk */
	snprintf(key, sizeof(key), "inode %llx:%llx",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	ret = dev_claim(dev, what, path, key, path);
	if (ret < 0)
		return ret;
	ret = hostd_file_lock(fd, writable, holder, sizeof(holder));
	if (ret == -EBUSY)
		return hostd_dev_fail(dev, ret,
				      "%s %s is in use: locked by %s (a guest's RAM file, or a file another program holds)",
				      what, path, holder);
	if (ret < 0)
		return hostd_dev_fail(dev, ret, "%s %s: cannot lock it: %s",
				      what, path, strerror(-ret));
	return 0;
}

/* ---- guest memory ---------------------------------------------------------------- */

void *hostd_desc_buf(struct hostd_dev *dev, const struct ioq_ring_desc *desc,
		     __u64 *lenp)
{
	__u64 ptr = VBUS_READ(desc->ptr);
	__u64 len = VBUS_READ(desc->len);
	void *p;

	*lenp = 0;
	if (!len)
		return NULL;
	p = hostd_dev_gpa(dev, ptr, len);
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
	__u32 ver = 0;
	long n;

	if (!shm->signal)
		return -EINVAL;
	/* descriptors hold 64-bit fields we access in place */
	if ((uintptr_t)shm->ptr & 7)
		return -EINVAL;
	/* the version checked is the one used: the guest may rewrite it */
	n = ioq_ring_check_ver(shm->ptr, shm->len, count, &ver);
	if (n < 0)
		return (int)n;
	if (shm->sigoff != offsetof(struct ioq_ring_head, signal))
		return -EINVAL;
	/* ioq_init takes over this reference; ioq_put drops it */
	shm_signal_get(shm->signal);
	if (ioq_init_ver(ioq, ops, ioq_locality_south, shm->ptr, shm->signal,
			 (__u32)n, ver)) {
		shm_signal_put(shm->signal);
		return -EINVAL;
	}
	return 0;
}

/* ---- fd watches ------------------------------------------------------------------- */

static struct hostd_dev_watch *watch_find(struct hostd_dev *dev, int fd)
{
	struct hostd_dev_watch *w;

	hostd_list_for_each_entry(w, pos, &dev->watches, struct hostd_dev_watch,
				  node)
		if (w->fd == fd)
			return w;
	return NULL;
}

static void watch_fire(void *arg, int fd, __u32 events)
{
	struct hostd_dev_watch *w = arg;

	w->cb(w->dev, fd, events, w->arg);
}

int hostd_fd_add(struct hostd_dev *dev, int fd, __u32 events, hostd_fd_cb cb,
		 void *arg)
{
	struct hostd_dev_watch *w;
	int ret;

	if (!cb)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct hostd_dev_watch){ .dev = dev, .fd = fd, .cb = cb,
				       .arg = arg };
	ret = hostd_loop_add(dev->env.loop, fd, events, watch_fire, w);
	if (ret < 0) {
		free(w);
		return ret;
	}
	hostd_list_add_tail(&w->node, &dev->watches);
	return 0;
}

int hostd_fd_mod(struct hostd_dev *dev, int fd, __u32 events)
{
	if (!watch_find(dev, fd))
		return -ENOENT;
	return hostd_loop_mod(dev->env.loop, fd, events);
}

static void watch_del(struct hostd_dev_watch *w)
{
	/* the loop skips a batched event for it: @w may go at once */
	hostd_loop_del(w->dev->env.loop, w->fd);
	hostd_list_del(&w->node);
	free(w);
}

void hostd_fd_del(struct hostd_dev *dev, int fd)
{
	struct hostd_dev_watch *w = watch_find(dev, fd);

	if (w)
		watch_del(w);
}

long hostd_dev_fd_events(struct hostd_dev *dev, int fd)
{
	return watch_find(dev, fd) ? hostd_loop_events(dev->env.loop, fd) : -1;
}

/* ---- shms ---------------------------------------------------------------------------- */

static struct hostd_shm_ent *to_ent(struct shm_signal *s)
{
	return hostd_container_of(s, struct hostd_shm_ent, signal);
}

static void post_handle_event(struct hostd_evq *q, __u32 id, __u64 h)
{
	struct vbus_pci_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.eventid = id;
	ev.data.handle.handle = h;
	hostd_evq_post(q, &ev);
}

/*
 * South inject: the shm's own MSI-X vector (DEVSHM bound one, qvec.h), or
 * a SHMSIGNAL{cookie} event on the eventq. The eventfd write is a system
 * call: the device's ring stores are visible before the guest's vector
 * fires, as for the eventq's own vector (evq.c).
 */
static int shm_inject(struct shm_signal *s)
{
	struct hostd_shm_ent *e = to_ent(s);

	/* a device that kept a reference past close signals nobody */
	if (e->closed)
		return 0;
	e->pub.dev->cnt.notify_out++;
	if (e->vector)
		hostd_ivshmem_irq(e->evq->iv, e->vector);
	else
		post_handle_event(e->evq, VBUS_PCI_EVENT_SHMSIGNAL, e->cookie);
	return 0;
}

static void shm_fault(struct shm_signal *s, const char *msg)
{
	struct hostd_shm_ent *e = to_ent(s);

	if (!e->closed)
		hostd_dev_fault(e->pub.dev, "%s", msg);
}

static void shm_release(struct shm_signal *s)
{
	free(to_ent(s));
}

static const struct shm_signal_ops shm_ops = {
	.inject = shm_inject,
	.fault = shm_fault,
	.release = shm_release,
};

struct hostd_shm_ent *hostd_shm_ent_new(struct hostd_dev *dev,
					const struct vbus_pci_deviceshm *s,
					void *ptr)
{
	struct hostd_shm_ent *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	hostd_list_init(&e->node);
	e->evq = dev->env.evq;
	e->pub.dev = dev;
	e->pub.id = s->id;
	e->pub.flags = s->flags;
	e->pub.prio = s->signal.prio;
	e->pub.len = s->len;
	e->pub.gpa = s->datap;
	e->pub.ptr = ptr;
	e->cookie = s->signal.cookie;
	e->vector = s->vector;	/* checked by the bus (hostd_qvec_check) */
	return e;
}

void hostd_shm_ent_signal(struct hostd_shm_ent *e,
			  struct shm_signal_desc *desc)
{
	shm_signal_init(&e->signal, shm_locality_south, &shm_ops, desc);
	vbus_defer_set_kick(&e->signal.deferred_notify, hostd_loop_defer_kick,
			    e->pub.dev->env.loop);
	e->pub.signal = &e->signal;
	e->pub.sigoff = (__u32)((char *)desc - (char *)e->pub.ptr);
}

int hostd_shm_ent_add(struct hostd_shm_ent *e)
{
	struct hostd_dev *dev = e->pub.dev;
	int ret = dev->type->shm(dev, &e->pub);

	if (ret < 0)
		return ret;
	hostd_list_add_tail(&e->node, &dev->shms);
	return 0;
}

/* The last reference is ours unless the device leaked one. */
static void shm_ent_put(struct hostd_shm_ent *e)
{
	e->closed = true;
	hostd_list_del(&e->node);
	if (!e->pub.signal) {
		free(e);
		return;
	}
	vbus_defer_cancel(&e->signal.deferred_notify);
	shm_signal_put(&e->signal);
}

void hostd_shm_ent_close(struct hostd_shm_ent *e)
{
	/* the guest drops the reference it held for us */
	if (e->pub.signal)
		post_handle_event(e->evq, VBUS_PCI_EVENT_SHMCLOSE, e->cookie);
	shm_ent_put(e);
}

void hostd_shm_ent_drop(struct hostd_shm_ent *e)
{
	shm_ent_put(e);
}

void hostd_shm_ent_wakeup(struct hostd_shm_ent *e)
{
	e->pub.dev->cnt.notify_in++;
	if (e->pub.dev->faulted)
		return;
	/* the notifier may close the ring: keep the signal alive meanwhile */
	shm_signal_get(&e->signal);
	_shm_signal_wakeup(&e->signal);
	shm_signal_put(&e->signal);
}

/* ---- lifetime ------------------------------------------------------------------------ */

/* Our copy of @p: the key/value strings in one buffer. */
static int params_copy(struct hostd_dev *dev, const struct hostd_params *p)
{
	size_t total = 0, used = 0;
	unsigned int i;

	for (i = 0; p && i < p->count; i++)
		total += strlen(p->v[i].key) + strlen(p->v[i].value) + 2;
	dev->strbuf = malloc(total ? total : 1);
	dev->pv = calloc(p && p->count ? p->count : 1, sizeof(*dev->pv));
	if (!dev->strbuf || !dev->pv)
		return -ENOMEM;
	for (i = 0; p && i < p->count; i++) {
		size_t kl = strlen(p->v[i].key) + 1, vl = strlen(p->v[i].value) + 1;

		memcpy(dev->strbuf + used, p->v[i].key, kl);
		memcpy(dev->strbuf + used + kl, p->v[i].value, vl);
		dev->pv[i].key = dev->strbuf + used;
		dev->pv[i].value = dev->strbuf + used + kl;
		used += kl + vl;
	}
	dev->params.count = p ? p->count : 0;
	dev->params.v = dev->pv;
	return 0;
}

static void dev_free(struct hostd_dev *dev)
{
	free(dev->strbuf);
	free(dev->pv);
	free(dev);
}

struct hostd_dev *hostd_dev_new(const struct hostd_dev_env *env,
				const struct hostd_dev_type *t, __u32 id,
				const struct hostd_params *p)
{
	struct hostd_dev *dev = calloc(1, sizeof(*dev));

	if (!dev)
		return NULL;
	dev->env = *env;
	dev->type = t;
	dev->id = id;
	snprintf(dev->name, sizeof(dev->name), "device %u (%s)", id, t->name);
	hostd_list_init(&dev->node);
	hostd_list_init(&dev->shms);
	hostd_list_init(&dev->watches);
	if (params_copy(dev, p) < 0) {
		dev_free(dev);
		return NULL;
	}
	return dev;
}

/* The test-only dma_window= of every device (dma_window.c). */
static int dev_dma_window(struct hostd_dev *dev)
{
	const char *v;

	if (!hostd_dma_window_setup(&dev->dma, &dev->params, &v))
		return 0;
	return hostd_dev_fail(dev, -EINVAL,
			      "dma_window=%s: want START-END, guest addresses with START < END (e.g. 0x34500000-0x3c500000)",
			      v);
}

int hostd_dev_create(struct hostd_dev *dev, char *err, size_t errlen)
{
	int ret;

	err[0] = 0;
	dev->err = err;
	dev->errlen = errlen;
	ret = dev_dma_window(dev);
	if (!ret)
		ret = dev->type->create(dev, &dev->params);
	dev->err = NULL;
	dev->errlen = 0;
	if (ret < 0) {
		if (!err[0])	/* the device did not say why */
			snprintf(err, errlen, "%s", strerror(-ret));
		return ret;
	}
	dev->created = true;
	if (ret != HOSTD_DEV_PENDING)
		return 0;
	dev->pending = true;
	return HOSTD_DEV_PENDING;
}

bool hostd_dev_hot(const struct hostd_dev *dev)
{
	return dev->hot;
}

void hostd_dev_ready(struct hostd_dev *dev)
{
	if (!dev->pending)
		return;
	dev->pending = false;
	dev->announce = true;	/* the bus posts DEVADD after this pass */
	hostd_loop_defer(dev->env.loop);
}

void hostd_dev_give_up(struct hostd_dev *dev)
{
	if (!dev->pending || dev->doomed)
		return;
	if (!dev->why[0])
		snprintf(dev->why, sizeof(dev->why), "%s", "not ready");
	/* not destroyed here: the device's own code is still on the stack */
	dev->doomed = true;
	hostd_loop_defer(dev->env.loop);
}

int hostd_dev_ctl(struct hostd_dev *dev, const char *verb, const char *arg,
		  char *msg, size_t len)
{
	char err[512];
	int ret = -EOPNOTSUPP;

	msg[0] = 0;
	err[0] = 0;
	dev->err = err;
	dev->errlen = sizeof(err);
	if (dev->type->ctl)
		ret = dev->type->ctl(dev, verb, arg, msg, len);
	dev->err = NULL;
	dev->errlen = 0;
	if (ret == -EOPNOTSUPP && !err[0])
		snprintf(err, sizeof(err), "no verb '%s'", verb);
	/* as create's refusals read: guest, device, why */
	if (ret < 0)
		snprintf(msg, len, "guest %s: %s: %s", dev->env.guest,
			 dev->name, err[0] ? err : strerror(-ret));
	return ret;
}

void hostd_dev_destroy(struct hostd_dev *dev)
{
	/* fds the device forgot: out of our epoll before it closes them */
	while (!hostd_list_empty(&dev->watches))
		watch_del(hostd_container_of(dev->watches.next,
					     struct hostd_dev_watch, node));
	if (dev->created)
		dev->type->destroy(dev);
	hostd_claim_release(dev);
	hostd_list_del(&dev->node);
	dev_free(dev);
}

int hostd_dev_open(struct hostd_dev *dev, __u32 version)
{
	int ret;

	dev->faulted = false;	/* a fresh open starts clean */
	dev->fault[0] = 0;
	ret = dev->type->open ? dev->type->open(dev, version) : 0;
	if (ret < 0)
		return ret;
	dev->open = true;
	return 0;
}

void hostd_dev_close(struct hostd_dev *dev)
{
	if (!dev->open)
		return;
	/* the device lets go of the shms first (ioq_put) */
	if (dev->type->close)
		dev->type->close(dev);
	dev->open = false;
	dev->handle = 0;
}

int hostd_dev_call(struct hostd_dev *dev, __u32 func, void *buf, __u32 len)
{
	dev->cnt.calls++;
	return dev->type->call(dev, func, buf, len);
}

/* ---- stats ------------------------------------------------------------------------- */

static const char *hostd_dev_state(const struct hostd_dev *dev)
{
	if (dev->pending)
		return "pending";
	return dev->faulted ? "faulted" : dev->open ? "open" : "closed";
}

void hostd_dev_stats(struct hostd_dev *dev, struct hostd_stats_out *out,
		     bool counters)
{
	hostd_stat_begin(out, NULL);
	hostd_stat_u64(out, "id", dev->id);
	hostd_stat_str(out, "type", dev->type->name);
	hostd_stat_str(out, "state", hostd_dev_state(dev));
	if (counters) {
		hostd_stat_u64(out, "calls", dev->cnt.calls);
		hostd_stat_u64(out, "descs", dev->cnt.descs);
		hostd_stat_u64(out, "bytes", dev->cnt.bytes);
		hostd_stat_u64(out, "notify_in", dev->cnt.notify_in);
		hostd_stat_u64(out, "notify_out", dev->cnt.notify_out);
		hostd_stat_u64(out, "faults", dev->cnt.faults);
		if (dev->dma.on) {
			hostd_stat_u64(out, "dma_in", dev->dma.in);
			hostd_stat_u64(out, "dma_out", dev->dma.out);
		}
		if (dev->fault[0])
			hostd_stat_str(out, "fault", dev->fault);
		hostd_stat_begin(out, "device");
		if (dev->type->stats && dev->created)
			dev->type->stats(dev, out);
		hostd_stat_end(out);
	}
	hostd_stat_end(out);
}
