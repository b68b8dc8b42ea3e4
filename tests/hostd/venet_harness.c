// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * See venet_harness.h. This file is the daemon's side of device.h, cut
 * down to one guest and one device at a time.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include <vbus/shm_signal.h>
#include "venet_harness.h"

/* ---- guest memory ---- */

struct hostd_guest {
	int memfd;
	unsigned char *ram;
	__u64 brk;
};

static struct hostd_guest guest = { .memfd = -1 };

int vh_init(void)
{
	guest.memfd = memfd_create("vh-ram", MFD_CLOEXEC);
	if (guest.memfd < 0)
		return -errno;
	if (ftruncate(guest.memfd, VH_RAM_SIZE) < 0)
		return -errno;
	guest.ram = mmap(NULL, VH_RAM_SIZE, PROT_READ | PROT_WRITE,
			 MAP_SHARED, guest.memfd, 0);
	if (guest.ram == MAP_FAILED)
		return -errno;
	guest.brk = 4096;
	return 0;
}

void vh_fini(void)
{
	if (guest.ram && guest.ram != MAP_FAILED)
		munmap(guest.ram, VH_RAM_SIZE);
	if (guest.memfd >= 0)
		close(guest.memfd);
	guest.ram = NULL;
	guest.memfd = -1;
}

void *vh_ram(__u64 gpa)
{
	return guest.ram + gpa;
}

__u64 vh_alloc(size_t len, size_t align)
{
	__u64 p = (guest.brk + align - 1) & ~(__u64)(align - 1);

	if (p + len > VH_RAM_SIZE)
		abort();	/* a test bug, not a device bug */
	guest.brk = p + len;
	memset(guest.ram + p, 0, len);
	return p;
}

void *hostd_gpa(struct hostd_guest *g, __u64 gpa, __u64 len)
{
	if (!len || gpa >= VH_RAM_SIZE || len > VH_RAM_SIZE - gpa)
		return NULL;
	return g->ram + gpa;
}

/* ---- devices ---- */

#define VH_MAX_PARAMS 16
#define VH_MAX_STATS 64

struct hostd_dev {
	const struct hostd_dev_type *type;
	void *priv;
	bool open;
	bool faulted;
	char last_fault[256];
	struct hostd_param pv[VH_MAX_PARAMS];
	struct hostd_params params;
	char *strbuf;
	struct vh_ring *rings[2];
	__u64 descs, bytes;
};

struct hostd_stats_out {
	unsigned int n;
	char key[VH_MAX_STATS][48];
	char val[VH_MAX_STATS][200];
};

static unsigned long log_lines;

const char *hostd_param_get(const struct hostd_params *p, const char *key)
{
	unsigned int i;

	for (i = 0; i < p->count; i++)
		if (!strcmp(p->v[i].key, key))
			return p->v[i].value;
	return NULL;
}

struct hostd_guest *hostd_dev_guest(struct hostd_dev *dev)
{
	(void)dev;
	return &guest;
}

__u32 hostd_dev_id(const struct hostd_dev *dev)
{
	(void)dev;
	return 1;
}

const char *hostd_dev_guest_name(const struct hostd_dev *dev)
{
	(void)dev;
	return "vh";
}

void *hostd_dev_priv(const struct hostd_dev *dev)
{
	return dev->priv;
}

void hostd_dev_set_priv(struct hostd_dev *dev, void *priv)
{
	dev->priv = priv;
}

static void vlog(const char *what, const char *fmt, va_list ap)
{
	/* the tests provoke plenty on purpose: show the first few only */
	if (++log_lines <= 40) {
		fprintf(stderr, "[vh %s] ", what);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
}

void hostd_dev_fault(struct hostd_dev *dev, const char *fmt, ...)
{
	va_list ap;
	int i;

	va_start(ap, fmt);
	vsnprintf(dev->last_fault, sizeof(dev->last_fault), fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	vlog("fault", fmt, ap);
	va_end(ap);
	dev->faulted = true;
	/* like hostd: every signal of the device faulted, injects stop */
	for (i = 0; i < 2; i++)
		if (dev->rings[i] && dev->rings[i]->ssig)
			VBUS_WRITE(dev->rings[i]->ssig->faulted, 1);
}

int hostd_dev_faulted(const struct hostd_dev *dev)
{
	return dev->faulted;
}

void hostd_dev_log(struct hostd_dev *dev, const char *fmt, ...)
{
	va_list ap;

	(void)dev;
	va_start(ap, fmt);
	vlog("log", fmt, ap);
	va_end(ap);
}

void hostd_dev_account(struct hostd_dev *dev, __u64 descs, __u64 bytes)
{
	dev->descs += descs;
	dev->bytes += bytes;
}

void hostd_stat_u64(struct hostd_stats_out *out, const char *key, __u64 v)
{
	if (out->n >= VH_MAX_STATS)
		return;
	snprintf(out->key[out->n], sizeof(out->key[0]), "%s", key);
	snprintf(out->val[out->n], sizeof(out->val[0]), "%llu",
		 (unsigned long long)v);
	out->n++;
}

void hostd_stat_str(struct hostd_stats_out *out, const char *key,
		    const char *v)
{
	if (out->n >= VH_MAX_STATS)
		return;
	snprintf(out->key[out->n], sizeof(out->key[0]), "%s", key);
	snprintf(out->val[out->n], sizeof(out->val[0]), "%s", v);
	out->n++;
}

/* ---- types ---- */

static const struct hostd_dev_type *types[8];
static unsigned int ntypes;

void hostd_dev_type_register(const struct hostd_dev_type *type)
{
	if (ntypes < 8)
		types[ntypes++] = type;
}

const struct hostd_dev_type *hostd_dev_type_find(const char *name)
{
	unsigned int i;

	for (i = 0; i < ntypes; i++)
		if (!strcmp(types[i]->name, name))
			return types[i];
	return NULL;
}

/* ---- the loop ---- */

struct vh_watch {
	bool used;
	int fd;
	__u32 events;
	struct hostd_dev *dev;
	hostd_fd_cb cb;
	void *arg;
	struct vh_ring *ring;	/* the harness's own: a doorbell */
};

#define VH_MAX_WATCH 16
static struct vh_watch watches[VH_MAX_WATCH];
static int epfd = -1;

static int ep(void)
{
	if (epfd < 0)
		epfd = epoll_create1(EPOLL_CLOEXEC);
	return epfd;
}

static struct vh_watch *watch_find(int fd)
{
	int i;

	for (i = 0; i < VH_MAX_WATCH; i++)
		if (watches[i].used && watches[i].fd == fd)
			return &watches[i];
	return NULL;
}

static int watch_add(int fd, __u32 events, struct hostd_dev *dev,
		     hostd_fd_cb cb, void *arg, struct vh_ring *ring)
{
	struct epoll_event e = { .events = events };
	int i;

	if (watch_find(fd))
		return -EEXIST;
	for (i = 0; i < VH_MAX_WATCH; i++)
		if (!watches[i].used)
			break;
	if (i == VH_MAX_WATCH)
		return -ENOSPC;
	e.data.u32 = (__u32)i;
	if (epoll_ctl(ep(), EPOLL_CTL_ADD, fd, &e) < 0)
		return -errno;
	watches[i] = (struct vh_watch){ .used = true, .fd = fd,
		.events = events, .dev = dev, .cb = cb, .arg = arg,
		.ring = ring };
	return 0;
}

static void watch_del(int fd)
{
	struct vh_watch *w = watch_find(fd);

	if (!w)
		return;
	epoll_ctl(ep(), EPOLL_CTL_DEL, fd, NULL);
	w->used = false;
}

int hostd_fd_add(struct hostd_dev *dev, int fd, __u32 events, hostd_fd_cb cb,
		 void *arg)
{
	return watch_add(fd, events, dev, cb, arg, NULL);
}

int hostd_fd_mod(struct hostd_dev *dev, int fd, __u32 events)
{
	struct vh_watch *w = watch_find(fd);
	struct epoll_event e = { .events = events };

	if (!w || w->dev != dev)
		return -ENOENT;
	e.data.u32 = (__u32)(w - watches);
	if (epoll_ctl(ep(), EPOLL_CTL_MOD, fd, &e) < 0)
		return -errno;
	w->events = events;
	return 0;
}

void hostd_fd_del(struct hostd_dev *dev, int fd)
{
	struct vh_watch *w = watch_find(fd);

	if (w && w->dev == dev)
		watch_del(fd);
}

long vh_fd_events(int fd)
{
	struct vh_watch *w = watch_find(fd);

	return w ? (long)w->events : -1;
}

int vh_dev_fds(struct hostd_dev *dev, int *fds, int max)
{
	int i, n = 0;

	for (i = 0; i < VH_MAX_WATCH && n < max; i++)
		if (watches[i].used && watches[i].dev == dev)
			fds[n++] = watches[i].fd;
	return n;
}

static void run_deferred(void)
{
	int i, j;

	/* the signals' deferred notify (vbus_defer has no kick here) */
	for (i = 0; i < VH_MAX_WATCH; i++) {
		struct vh_ring *r = watches[i].used ? watches[i].ring : NULL;

		for (j = 0; r && j < 8 && r->ssig &&
		     vbus_defer_run(&r->ssig->deferred_notify); j++)
			;
	}
}

static bool deferred_pending(void)
{
	int i;

	for (i = 0; i < VH_MAX_WATCH; i++) {
		struct vh_ring *r = watches[i].used ? watches[i].ring : NULL;

		if (r && r->ssig && vbus_defer_pending(&r->ssig->deferred_notify))
			return true;
	}
	return false;
}

void vh_poll(int timeout_ms)
{
	struct epoll_event ev[VH_MAX_WATCH];
	int n, i;

	if (deferred_pending())
		timeout_ms = 0;
	n = epoll_wait(ep(), ev, VH_MAX_WATCH, timeout_ms);
	for (i = 0; i < n; i++) {
		struct vh_watch *w = &watches[ev[i].data.u32];

		if (!w->used)
			continue;	/* removed by an earlier callback */
		if (w->ring) {
			__u64 cnt;

			/* a guest doorbell: run the south signal's wakeup */
			if (read(w->fd, &cnt, sizeof(cnt)) < 0)
				continue;
			_shm_signal_wakeup(w->ring->ssig);
		} else {
			w->cb(w->dev, w->fd, ev[i].events, w->arg);
		}
	}
	run_deferred();
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

bool vh_run_until(bool (*done)(void *arg), void *arg, int timeout_ms)
{
	long long end = now_ms() + timeout_ms;

	while (!done(arg)) {
		if (now_ms() >= end)
			return done(arg);
		vh_poll(10);
	}
	return true;
}

void vh_run_for(int ms)
{
	long long end = now_ms() + ms;

	while (now_ms() < end)
		vh_poll(5);
}

/* ---- signals ---- */

static int north_inject(struct shm_signal *s)
{
	struct vh_ring *r = (struct vh_ring *)((char *)s -
				offsetof(struct vh_ring, nsig));
	__u64 one = 1;

	return write(r->db_fd, &one, sizeof(one)) < 0 ? -errno : 0;
}

static const struct shm_signal_ops north_ops = { .inject = north_inject };

struct south_sig {
	struct shm_signal s;
	struct vh_ring *r;
	struct hostd_dev *dev;
};

static int south_inject(struct shm_signal *s)
{
	struct south_sig *ss = (struct south_sig *)s;
	__u64 one = 1;

	return write(ss->r->irq_fd, &one, sizeof(one)) < 0 ? -errno : 0;
}

static void south_fault(struct shm_signal *s, const char *msg)
{
	struct south_sig *ss = (struct south_sig *)s;

	hostd_dev_fault(ss->dev, "%s", msg);
}

static void south_release(struct shm_signal *s)
{
	free(s);
}

static const struct shm_signal_ops south_ops = {
	.inject = south_inject,
	.fault = south_fault,
	.release = south_release,
};

int hostd_shm_ioq(struct hostd_shm *shm, struct ioq *ioq,
		  const struct ioq_ops *ops, __u32 count)
{
	long n = ioq_ring_check(shm->ptr, shm->len, count);

	if (n < 0)
		return (int)n;
	if (!shm->signal ||
	    shm->sigoff != offsetof(struct ioq_ring_head, signal))
		return -EINVAL;
	shm_signal_get(shm->signal);
	return ioq_init(ioq, ops, ioq_locality_south, shm->ptr, shm->signal,
			(__u32)n);
}

void *hostd_desc_buf(struct hostd_dev *dev, const struct ioq_ring_desc *desc,
		     __u64 *lenp)
{
	__u64 ptr = VBUS_READ(desc->ptr), len = VBUS_READ(desc->len);
	void *p;

	*lenp = len;
	if (!len)
		return NULL;
	p = hostd_gpa(&guest, ptr, len);
	if (!p)
		hostd_dev_fault(dev, "descriptor outside guest RAM");
	return p;
}

/* ---- harness API ---- */

struct hostd_dev *vh_dev_create(const char *type, const char *params,
				int *err)
{
	struct hostd_dev *dev = calloc(1, sizeof(*dev));
	char *s, *save = NULL, *tok;
	int ret;

	dev->type = hostd_dev_type_find(type);
	if (!dev->type) {
		free(dev);
		*err = -ENOENT;
		return NULL;
	}
	dev->strbuf = strdup(params ? params : "");
	for (s = dev->strbuf; (tok = strtok_r(s, ",", &save)); s = NULL) {
		char *eq = strchr(tok, '=');

		if (dev->params.count == VH_MAX_PARAMS)
			break;
		dev->pv[dev->params.count].key = tok;
		dev->pv[dev->params.count].value = eq ? eq + 1 : "";
		if (eq)
			*eq = '\0';
		dev->params.count++;
	}
	dev->params.v = dev->pv;
	ret = dev->type->create(dev, &dev->params);
	if (ret) {
		free(dev->strbuf);
		free(dev);
		*err = ret;
		return NULL;
	}
	*err = 0;
	return dev;
}

int vh_dev_open(struct hostd_dev *dev, __u32 version)
{
	int ret = dev->type->open(dev, version);

	if (!ret) {
		dev->open = true;
		dev->faulted = false;
	}
	return ret;
}

static void ring_release(struct hostd_dev *dev, struct vh_ring *r)
{
	if (!r->attached)
		return;
	watch_del(r->db_fd);
	close(r->db_fd);
	close(r->irq_fd);
	r->ssig->notifier = NULL;
	/* hostd's own reference; the device dropped its (ioq_put) */
	shm_signal_put(r->ssig);
	r->ssig = NULL;
	r->attached = false;
	(void)dev;
}

void vh_dev_close(struct hostd_dev *dev)
{
	int i;

	if (!dev->open)
		return;
	dev->type->close(dev);
	dev->open = false;
	for (i = 0; i < 2; i++) {
		if (dev->rings[i])
			ring_release(dev, dev->rings[i]);
		dev->rings[i] = NULL;
	}
}

void vh_dev_destroy(struct hostd_dev *dev)
{
	int i;

	vh_dev_close(dev);
	/* like hostd: the device's remaining fds go before destroy */
	for (i = 0; i < VH_MAX_WATCH; i++)
		if (watches[i].used && watches[i].dev == dev)
			watch_del(watches[i].fd);
	dev->type->destroy(dev);
	free(dev->strbuf);
	free(dev);
}

int vh_call(struct hostd_dev *dev, __u32 func, void *buf, __u32 len)
{
	unsigned char copy[256];
	int ret;

	if (!dev->open || dev->faulted)
		return -EIO;	/* hostd refuses calls to a faulted device */
	if (len > sizeof(copy))
		return -EINVAL;
	if (len)
		memcpy(copy, buf, len);
	ret = dev->type->call(dev, func, len ? copy : NULL, len);
	if (ret >= 0 && len)
		memcpy(buf, copy, len);
	return ret;
}

int vh_ring_attach(struct hostd_dev *dev, __u32 id, __u32 count,
		   struct vh_ring *r)
{
	struct ioq_ring_head *head;
	struct south_sig *ss;
	int ret;

	if (!dev->open || dev->faulted)
		return -EIO;
	memset(r, 0, sizeof(*r));
	r->count = count;
	r->gpa = vh_alloc(IOQ_HEAD_DESC_SIZE(count), 64);
	head = vh_ram(r->gpa);
	ret = ioq_ring_format(head, count);
	if (ret)
		return ret;

	r->db_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	r->irq_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	/* guest side: north ioq and signal */
	shm_signal_init(&r->nsig, shm_locality_north, &north_ops,
			&head->signal);
	ioq_init(&r->ioq, NULL, ioq_locality_north, head, &r->nsig, count);
	/* the guest wants to hear completions (the irq eventfd counts them) */
	shm_signal_enable(&r->nsig, 0);

	/* host side: the south signal hostd would build for DEVSHM */
	ss = calloc(1, sizeof(*ss));
	shm_signal_init(&ss->s, shm_locality_south, &south_ops,
			&head->signal);
	ss->r = r;
	ss->dev = dev;
	r->ssig = &ss->s;

	r->shm.dev = dev;
	r->shm.id = id;
	r->shm.len = (__u32)IOQ_HEAD_DESC_SIZE(count);
	r->shm.gpa = r->gpa;
	r->shm.ptr = head;
	r->shm.signal = r->ssig;
	r->shm.sigoff = offsetof(struct ioq_ring_head, signal);

	watch_add(r->db_fd, EPOLLIN, NULL, NULL, NULL, r);
	r->attached = true;

	ret = dev->type->shm(dev, &r->shm);
	if (ret)
		ring_release(dev, r);	/* hostd drops a refused shm */
	else if (id < 2 && !dev->rings[id])
		dev->rings[id] = r;
	return ret;
}

int vh_post(struct vh_ring *r, __u64 ptr, __u64 len, __u64 cookie)
{
	struct ioq_iterator iter;

	ioq_iter_init(&r->ioq, &iter, ioq_idxtype_both, IOQ_ITER_AUTOUPDATE);
	ioq_iter_seek(&iter, ioq_seek_tail, 0, 0);
	if (VBUS_READ(iter.desc->sown) != ioq_locality_north ||
	    ioq_full(&r->ioq, ioq_idxtype_inuse))
		return -ENOSPC;
	iter.desc->cookie = cookie;
	iter.desc->ptr = ptr;
	iter.desc->len = len;
	iter.desc->valid = 1;
	return ioq_iter_push(&iter, 0);
}

int vh_reap(struct vh_ring *r, __u64 *len, __u64 *cookie)
{
	struct ioq_iterator iter;

	ioq_iter_init(&r->ioq, &iter, ioq_idxtype_inuse, IOQ_ITER_NOFLIPOWNER);
	ioq_iter_seek(&iter, ioq_seek_head, 0, 0);
	if (!ioq_iter_owned(&iter))
		return 0;
	if (len)
		*len = VBUS_READ(iter.desc->len);
	if (cookie)
		*cookie = iter.desc->cookie;
	iter.desc->valid = 0;
	if (ioq_iter_pop(&iter, 0))
		return -EIO;
	return 1;
}

__u64 vh_irqs(struct vh_ring *r)
{
	__u64 cnt = 0;

	if (read(r->irq_fd, &cnt, sizeof(cnt)) < 0)
		cnt = 0;
	/*
	 * The guest "took the interrupt": acknowledge like a north wakeup
	 * would (pending=0), so the host's next inject crosses again.
	 */
	VBUS_WRITE(r->nsig.desc->irq[shm_locality_north].dirty, 0);
	VBUS_WRITE(r->nsig.desc->irq[shm_locality_north].pending, 0);
	return cnt;
}

bool vh_dev_faulted(struct hostd_dev *dev)
{
	return dev->faulted;
}

const char *vh_dev_last_fault(struct hostd_dev *dev)
{
	return dev->last_fault;
}

static struct hostd_stats_out stats_out;

static const char *stat_lookup(struct hostd_dev *dev, const char *key)
{
	unsigned int i;

	memset(&stats_out, 0, sizeof(stats_out));
	if (dev->type->stats)
		dev->type->stats(dev, &stats_out);
	for (i = 0; i < stats_out.n; i++)
		if (!strcmp(stats_out.key[i], key))
			return stats_out.val[i];
	return NULL;
}

__u64 vh_stat(struct hostd_dev *dev, const char *key)
{
	const char *v = stat_lookup(dev, key);

	return v ? strtoull(v, NULL, 0) : ~0ull;
}

const char *vh_stat_str(struct hostd_dev *dev, const char *key)
{
	const char *v = stat_lookup(dev, key);

	return v ? v : "";
}

unsigned long vh_log_lines(void)
{
	return log_lines;
}
