// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: one device and its shms (see dev.h); the device.h calls a
 * device makes on itself.
 *
 * The south signal of a shm is where a device's completion leaves it:
 * ioq_signal() -> core's shm_signal_inject() -> shm_inject() here ->
 * hostd_evq_post() (evq.c) -> the eventq's own signal -> MSI-X
 * (ivshmem.c). Each step is a layer further down; nothing calls back up.
 *
 * Queue threads (threads=N, device.h). A device's queue may run on a
 * thread of the device's (struct hostd_devthread) instead of the guest's.
 * What crosses between them, and the rule for each:
 *  - the guest's doorbell for a homed shm: the guest's thread writes the
 *    shm's db_fd (an eventfd), the queue thread runs the wakeup
 *    (shm_db_fire); the eventfd's read/write order it
 *  - a homed shm's SHMSIGNAL: the eventq is the guest thread's, so the
 *    queue thread sets post_pending (an exchange) and writes post_fd;
 *    the guest's thread exchanges it back and posts (posts_fire)
 *  - faulted, fault[], cnt.faults and the shms and watches lists:
 *    dev->lock (faulted is also read without it, atomically)
 *  - the counters: relaxed atomics
 *  - e->thr and db_fd: set on the queue thread inside the device's shm
 *    op, which the guest's thread waits for (hostd_devthread_call)
 *    before it can ring the shm; never changed until the shm is freed
 *  - a thread's shms list and loop: the thread's alone (devthread.h)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>
#include "claim.h"
#include "dev.h"
#include "mem.h"

struct hostd_dev_watch {
	struct hostd_list node;		/* in dev->watches */
	struct hostd_dev *dev;
	struct hostd_loop *loop;	/* the adding thread's (device.h) */
	struct hostd_devthread *thr;	/* NULL: the guest's thread */
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
	/* acquire: pairs with the release in hostd_dev_fault */
	return __atomic_load_n(&dev->faulted, __ATOMIC_ACQUIRE);
}

bool hostd_dev_qemu_peer_ok(struct hostd_dev *dev, int fd, struct ucred *cr)
{
	return hostd_sock_peer_ok(fd, dev->env.qemu, cr);
}

bool hostd_dev_stopping(const struct hostd_dev *dev)
{
	return hostd_loop_stopping(dev->env.loop);
}

/* A counter any thread of the device adds to (dev.h) */
static void cnt_add(__u64 *c, __u64 v)
{
	__atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}

static __u64 cnt_get(const __u64 *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

void hostd_dev_account(struct hostd_dev *dev, __u64 descs, __u64 bytes)
{
	cnt_add(&dev->cnt.descs, descs);
	cnt_add(&dev->cnt.bytes, bytes);
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
	char why[sizeof(dev->fault)];
	va_list ap;

	pthread_mutex_lock(&dev->lock);
	if (dev->faulted) {
		pthread_mutex_unlock(&dev->lock);
		return;	/* the first reason is the one worth reading */
	}
	va_start(ap, fmt);
	vsnprintf(dev->fault, sizeof(dev->fault), fmt, ap);
	va_end(ap);
	memcpy(why, dev->fault, sizeof(why));
	dev->cnt.faults++;
	/* stop the device's signals: injects now return -EIO */
	hostd_list_for_each_entry(e, pos, &dev->shms, struct hostd_shm_ent, node)
		if (e->pub.signal)
			VBUS_WRITE(e->signal.faulted, 1);
	/* release: a thread that sees it sees the signals' faulted too */
	__atomic_store_n(&dev->faulted, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&dev->lock);
	hostd_log_limited(dev->env.log, "%s faulted: %s", dev->name, why);
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

/* Under dev->lock. */
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

	if (w->thr)
		hostd_devthread_count(w->thr);
	w->cb(w->dev, fd, events, w->arg);
}

/* The queue thread calling, or NULL on the guest's (or any other). */
static struct hostd_devthread *dev_thread_current(struct hostd_dev *dev)
{
	return hostd_devthread_current(dev->threads, dev->nthreads);
}

struct hostd_loop *hostd_dev_loop(struct hostd_dev *dev)
{
	struct hostd_devthread *t = dev_thread_current(dev);

	return t ? &t->loop : dev->env.loop;
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
	/* in the loop of the thread that adds it: a queue thread's, or ours */
	*w = (struct hostd_dev_watch){ .dev = dev, .fd = fd, .cb = cb,
				       .arg = arg,
				       .thr = dev_thread_current(dev) };
	w->loop = hostd_dev_loop(dev);
	ret = hostd_loop_add(w->loop, fd, events, watch_fire, w);
	if (ret < 0) {
		free(w);
		return ret;
	}
	pthread_mutex_lock(&dev->lock);
	hostd_list_add_tail(&w->node, &dev->watches);
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

/* The watch of @fd (its loop is its thread's: only that thread uses it). */
static struct hostd_dev_watch *watch_get(struct hostd_dev *dev, int fd)
{
	struct hostd_dev_watch *w;

	pthread_mutex_lock(&dev->lock);
	w = watch_find(dev, fd);
	pthread_mutex_unlock(&dev->lock);
	return w;
}

int hostd_fd_mod(struct hostd_dev *dev, int fd, __u32 events)
{
	struct hostd_dev_watch *w = watch_get(dev, fd);

	if (!w)
		return -ENOENT;
	return hostd_loop_mod(w->loop, fd, events);
}

static void watch_del(struct hostd_dev_watch *w)
{
	/* the loop skips a batched event for it: @w may go at once */
	hostd_loop_del(w->loop, w->fd);
	pthread_mutex_lock(&w->dev->lock);
	hostd_list_del(&w->node);
	pthread_mutex_unlock(&w->dev->lock);
	free(w);
}

static int watch_del_call(void *arg)
{
	watch_del(arg);
	return 0;
}

/* From any thread: a queue thread's watch goes on its thread (its loop's) */
static void watch_del_any(struct hostd_dev_watch *w)
{
	if (w->thr && dev_thread_current(w->dev) != w->thr)
		hostd_loop_call(w->loop, watch_del_call, w);
	else
		watch_del(w);
}

void hostd_fd_del(struct hostd_dev *dev, int fd)
{
	struct hostd_dev_watch *w = watch_get(dev, fd);

	if (w)
		watch_del(w);
}

long hostd_dev_fd_events(struct hostd_dev *dev, int fd)
{
	struct hostd_dev_watch *w = watch_get(dev, fd);

	return w ? hostd_loop_events(w->loop, fd) : -1;
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
	if (__atomic_load_n(&e->closed, __ATOMIC_ACQUIRE))
		return 0;
	cnt_add(&e->pub.dev->cnt.notify_out, 1);
	/*
	 * A vector's eventfd is written from any thread: the fds stay open
	 * until the bus closed the devices (ivshmem.c's teardown).
	 */
	if (e->vector) {
		hostd_ivshmem_irq(e->evq->iv, e->vector);
	} else if (e->thr) {
		/*
		 * The eventq is the guest thread's: it posts (posts_fire).
		 * The exchange (acq_rel) orders the ring stores and dirty=1
		 * of shm_signal_inject() before it; pairs with the one in
		 * posts_fire, which posts after it.
		 */
		if (!__atomic_exchange_n(&e->post_pending, 1, __ATOMIC_ACQ_REL))
			hostd_eventfd_write(e->pub.dev->post_fd);
	} else {
		post_handle_event(e->evq, VBUS_PCI_EVENT_SHMSIGNAL, e->cookie);
	}
	return 0;
}

static void shm_fault(struct shm_signal *s, const char *msg)
{
	struct hostd_shm_ent *e = to_ent(s);

	if (!__atomic_load_n(&e->closed, __ATOMIC_ACQUIRE))
		hostd_dev_fault(e->pub.dev, "%s", msg);
}

static void shm_release(struct shm_signal *s)
{
	struct hostd_shm_ent *e = to_ent(s);

	if (e->db_fd >= 0)
		close(e->db_fd);
	free(e);
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
	hostd_list_init(&e->tnode);
	e->db_fd = -1;
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
	pthread_mutex_lock(&dev->lock);
	hostd_list_add_tail(&e->node, &dev->shms);
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

/* The last reference is ours unless the device leaked one. */
static void shm_ent_put(struct hostd_shm_ent *e)
{
	struct hostd_dev *dev = e->pub.dev;

	__atomic_store_n(&e->closed, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&dev->lock);
	hostd_list_del(&e->node);
	pthread_mutex_unlock(&dev->lock);
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
	cnt_add(&e->pub.dev->cnt.notify_in, 1);
	if (hostd_dev_faulted(e->pub.dev))
		return;
	if (e->thr) {
		/* its queue thread runs the wakeup (shm_db_fire) */
		hostd_eventfd_write(e->db_fd);
		return;
	}
	/* the notifier may close the ring: keep the signal alive meanwhile */
	shm_signal_get(&e->signal);
	_shm_signal_wakeup(&e->signal);
	shm_signal_put(&e->signal);
}

/* ---- queue threads ------------------------------------------------------------------ */

/* On a queue thread: the guest rang a homed shm (hostd_shm_ent_wakeup). */
static void shm_db_fire(void *arg, int fd, __u32 events)
{
	struct hostd_shm_ent *e = arg;

	(void)events;
	hostd_eventfd_drain(fd);
	hostd_devthread_count(e->thr);
	if (hostd_dev_faulted(e->pub.dev))
		return;
	shm_signal_get(&e->signal);
	_shm_signal_wakeup(&e->signal);
	shm_signal_put(&e->signal);
}

int hostd_shm_home(struct hostd_shm *shm)
{
	struct hostd_shm_ent *e = hostd_container_of(shm, struct hostd_shm_ent,
						     pub);
	struct hostd_devthread *t = dev_thread_current(shm->dev);
	int ret;

	if (!t || !shm->signal)
		return 0;	/* the guest's thread's, as without threads= */
	if (e->thr)
		return e->thr == t ? 0 : -EBUSY;
	e->db_fd = hostd_eventfd_new();
	if (e->db_fd < 0)
		return e->db_fd;
	ret = hostd_loop_add(&t->loop, e->db_fd, EPOLLIN, shm_db_fire, e);
	if (ret < 0) {
		close(e->db_fd);
		e->db_fd = -1;
		return ret;
	}
	/* the core's deferred notify (an unmask that found work) runs here */
	vbus_defer_set_kick(&e->signal.deferred_notify, hostd_loop_defer_kick,
			    &t->loop);
	hostd_list_add_tail(&e->tnode, &t->shms);
	e->thr = t;
	return 0;
}

void hostd_signal_unhome(struct shm_signal *s)
{
	struct hostd_shm_ent *e = to_ent(s);

	/*
	 * On its thread. db_fd stays open (the guest's thread may still
	 * write it until the bus lets go of the shm: nothing reads it now);
	 * shm_release closes it.
	 */
	if (!e->thr || hostd_list_empty(&e->tnode))
		return;
	hostd_loop_del(&e->thr->loop, e->db_fd);
	hostd_list_del(&e->tnode);
	hostd_list_init(&e->tnode);
	vbus_defer_cancel(&e->signal.deferred_notify);
}

/* A queue thread's deferred hook: its shms' deferred notifies. */
static void thread_deferred(void *arg)
{
	struct hostd_devthread *t = arg;
	struct hostd_shm_ent *e;

	hostd_list_for_each_entry(e, pos, &t->shms, struct hostd_shm_ent,
				  tnode) {
		shm_signal_get(&e->signal);
		vbus_defer_run(&e->signal.deferred_notify);
		shm_signal_put(&e->signal);
	}
}

/* On the guest's thread: the SHMSIGNALs the queue threads asked for. */
static void posts_fire(void *arg, int fd, __u32 events)
{
	struct hostd_dev *dev = arg;
	struct hostd_shm_ent *e;

	(void)events;
	hostd_eventfd_drain(fd);
	/* the list changes only on this thread: no lock to read it here */
	hostd_list_for_each_entry(e, pos, &dev->shms, struct hostd_shm_ent,
				  node) {
		/* acq_rel: pairs with the exchange in shm_inject */
		if (__atomic_exchange_n(&e->post_pending, 0, __ATOMIC_ACQ_REL) &&
		    !__atomic_load_n(&e->closed, __ATOMIC_ACQUIRE))
			post_handle_event(e->evq, VBUS_PCI_EVENT_SHMSIGNAL,
					  e->cookie);
	}
}

unsigned int hostd_dev_threads(const struct hostd_dev *dev)
{
	return dev->nthreads;
}

struct hostd_devthread *hostd_dev_thread(struct hostd_dev *dev,
					 unsigned int q)
{
	return dev->nthreads ? &dev->threads[q % dev->nthreads] : NULL;
}

int hostd_devthread_call(struct hostd_devthread *t, int (*fn)(void *arg),
			 void *arg)
{
	if (!t)
		return fn(arg);
	return hostd_loop_call(&t->loop, fn, arg);
}

int hostd_devthread_call_within(struct hostd_devthread *t,
				int (*fn)(void *arg), void *arg,
				unsigned int ms, int *ret)
{
	if (!t) {
		*ret = fn(arg);
		return 0;
	}
	return hostd_loop_call_within(&t->loop, fn, arg, ms, ret);
}

static void threads_stop(struct hostd_dev *dev)
{
	unsigned int i;

	for (i = 0; i < dev->nthreads; i++)
		hostd_devthread_stop(&dev->threads[i]);
}

static void threads_fini(struct hostd_dev *dev)
{
	unsigned int i;

	for (i = 0; i < dev->nthreads; i++)
		hostd_devthread_fini(&dev->threads[i]);
	free(dev->threads);
	dev->threads = NULL;
	dev->nthreads = 0;
	if (dev->post_fd >= 0) {
		hostd_loop_del(dev->env.loop, dev->post_fd);
		close(dev->post_fd);
	}
	dev->post_fd = -1;
}

/* threads=N: the value, or -1 after hostd_dev_fail */
static int threads_param(struct hostd_dev *dev, unsigned int *n)
{
	const char *v = NULL;
	unsigned long x;
	unsigned int i;
	char *end;

	/* not hostd_param_get(): param.c is a layer above (check_layers.py) */
	for (i = 0; !v && i < dev->params.count; i++)
		if (!strcmp(dev->params.v[i].key, "threads"))
			v = dev->params.v[i].value;
	*n = 0;
	if (!v) {
		/* the guest's threads=, for a type that takes it */
		*n = dev->type->threads ? dev->env.threads : 0;
		return 0;
	}
	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-' || v[0] == '+' ||
	    x > HOSTD_DEV_MAX_THREADS)
		return hostd_dev_fail(dev, -EINVAL,
				      "threads=%s: want a number in 0..%d (0: the guest's thread serves every queue)",
				      v, HOSTD_DEV_MAX_THREADS);
	if (x && !dev->type->threads)
		return hostd_dev_fail(dev, -EINVAL,
				      "threads=%s: %s serves its queues from the guest's thread only",
				      v, dev->type->name);
	*n = (unsigned int)x;
	return 0;
}

/* threads=N: N queue threads and the post eventfd, before create */
static int threads_start(struct hostd_dev *dev)
{
	unsigned int n, i;
	int ret = threads_param(dev, &n);

	if (ret < 0 || !n)
		return ret;
	dev->threads = calloc(n, sizeof(*dev->threads));
	if (!dev->threads)
		return -ENOMEM;
	dev->post_fd = hostd_eventfd_new();
	if (dev->post_fd < 0)
		return hostd_dev_fail(dev, dev->post_fd, "threads=%u: eventfd: %s",
				      n, strerror(-dev->post_fd));
	ret = hostd_loop_add(dev->env.loop, dev->post_fd, EPOLLIN, posts_fire,
			     dev);
	if (ret < 0) {
		close(dev->post_fd);
		dev->post_fd = -1;
		return hostd_dev_fail(dev, ret, "threads=%u: %s", n,
				      strerror(-ret));
	}
	for (i = 0; i < n; i++) {
		char name[16];

		/* "d3.t0:g1": device 3's thread 0 of guest g1 (cut to 15) */
		snprintf(name, sizeof(name), "d%u.t%u:%s", dev->id, i,
			 dev->env.guest);
		ret = hostd_devthread_start(&dev->threads[i], i, name,
					    thread_deferred, &dev->threads[i]);
		if (ret < 0)
			return hostd_dev_fail(dev, ret, "threads=%u: thread %u: %s",
					      n, i, strerror(-ret));
		dev->nthreads = i + 1;
	}
	return 0;
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
	threads_fini(dev);
	pthread_mutex_destroy(&dev->lock);
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
	pthread_mutex_init(&dev->lock, NULL);
	dev->post_fd = -1;
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
		ret = threads_start(dev);
	if (!ret)
		ret = dev->type->create(dev, &dev->params);
	dev->err = NULL;
	dev->errlen = 0;
	if (ret < 0) {
		if (!err[0])	/* the device did not say why */
			snprintf(err, errlen, "%s", strerror(-ret));
		threads_stop(dev);	/* freed with the device */
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
		watch_del_any(hostd_container_of(dev->watches.next,
						 struct hostd_dev_watch, node));
	if (dev->created)
		dev->type->destroy(dev);
	/*
	 * Joined before anything they could touch goes: the destroy op let
	 * go of what it ran on them (hostd_devthread_call); the join orders
	 * their last writes before what we free now.
	 */
	threads_stop(dev);
	/* what destroy added, on a stopped thread's loop: ours now */
	while (!hostd_list_empty(&dev->watches))
		watch_del(hostd_container_of(dev->watches.next,
					     struct hostd_dev_watch, node));
	hostd_claim_release(dev);
	hostd_list_del(&dev->node);
	dev_free(dev);
}

int hostd_dev_open(struct hostd_dev *dev, __u32 version)
{
	int ret;

	pthread_mutex_lock(&dev->lock);
	/* a fresh open starts clean (no queue is attached: no thread reads) */
	__atomic_store_n(&dev->faulted, false, __ATOMIC_RELEASE);
	dev->fault[0] = 0;
	pthread_mutex_unlock(&dev->lock);
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
	return hostd_dev_faulted(dev) ? "faulted" : dev->open ? "open" :
	       "closed";
}

/* threads=N: each thread's name and the events it served */
static void threads_stats(struct hostd_dev *dev, struct hostd_stats_out *out)
{
	unsigned int i;

	if (!dev->nthreads)
		return;		/* threads=0: the lines read as they always did */
	hostd_stat_u64(out, "threads", dev->nthreads);
	hostd_stat_list(out, "queue_threads");
	for (i = 0; i < dev->nthreads; i++) {
		struct hostd_devthread *t = &dev->threads[i];

		hostd_stat_begin(out, NULL);
		hostd_stat_u64(out, "thread", t->index);
		hostd_stat_str(out, "comm", t->name);
		hostd_stat_u64(out, "events",
			       __atomic_load_n(&t->events, __ATOMIC_RELAXED));
		hostd_stat_end(out);
	}
	hostd_stat_list_end(out);
}

void hostd_dev_stats(struct hostd_dev *dev, struct hostd_stats_out *out,
		     bool counters)
{
	hostd_stat_begin(out, NULL);
	hostd_stat_u64(out, "id", dev->id);
	hostd_stat_str(out, "type", dev->type->name);
	hostd_stat_str(out, "state", hostd_dev_state(dev));
	if (counters) {
		char fault[sizeof(dev->fault)];
		__u64 faults;

		pthread_mutex_lock(&dev->lock);
		memcpy(fault, dev->fault, sizeof(fault));
		faults = dev->cnt.faults;
		pthread_mutex_unlock(&dev->lock);
		hostd_stat_u64(out, "calls", dev->cnt.calls);
		hostd_stat_u64(out, "descs", cnt_get(&dev->cnt.descs));
		hostd_stat_u64(out, "bytes", cnt_get(&dev->cnt.bytes));
		hostd_stat_u64(out, "notify_in", cnt_get(&dev->cnt.notify_in));
		hostd_stat_u64(out, "notify_out", cnt_get(&dev->cnt.notify_out));
		hostd_stat_u64(out, "faults", faults);
		if (dev->dma.on) {
			hostd_stat_u64(out, "dma_in", cnt_get(&dev->dma.in));
			hostd_stat_u64(out, "dma_out", cnt_get(&dev->dma.out));
		}
		if (fault[0])
			hostd_stat_str(out, "fault", fault);
		hostd_stat_begin(out, "device");
		if (dev->type->stats && dev->created)
			dev->type->stats(dev, out);
		hostd_stat_end(out);
		/* after the device's: text keeps the device's on its line */
		threads_stats(dev, out);
	}
	hostd_stat_end(out);
}
