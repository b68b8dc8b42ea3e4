// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The synthetic guest of the host-side tests (see fakeguest.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include "fakeguest.h"

unsigned int fg_ring_ver = IOQ_RING_VER_V5;

static void die(const char *what)
{
	fprintf(stderr, "fakeguest: %s\n", what);
	abort();
}

void *fg_ptr(struct fg *f, __u64 gpa, __u64 len)
{
	void *p = hostd_mem_gpa(&f->g.mem, gpa, len);

	if (!p)
		die("fg_ptr outside RAM");
	return p;
}

__u64 fg_alloc_align(struct fg *f, __u64 size, __u64 align)
{
	__u64 gpa = (f->brk + align - 1) & ~(align - 1);

	if (gpa + size > f->low)
		die("fg_alloc: out of low memory");
	f->brk = gpa + size;
	if (size)
		memset(fg_ptr(f, gpa, size), 0, size);
	return gpa;
}

__u64 fg_alloc(struct fg *f, __u64 size)
{
	return fg_alloc_align(f, size, 64);
}

/* The guest's hostd side, its RAM and scratch; no QEMU connection yet. */
static void fg_init_guest(struct fg *f, const char *name, __u64 low,
			  __u64 high, unsigned int vectors)
{
	struct hostd_guest_cfg cfg;
	char err[256];
	int fd;

	memset(f, 0, sizeof(*f));
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.name, sizeof(cfg.name), "%s", name);
	cfg.size = low + high;
	cfg.machine = HOSTD_MACHINE_Q35;
	cfg.vectors = vectors;
	fd = memfd_create("fg-ram", MFD_CLOEXEC);
	if (fd < 0)
		die("memfd");
	if (hostd_guest_init(&f->g, &cfg, fd, err, sizeof(err)))
		die(err);
	/* QEMU's rule would put a small RAM all below 4G: make a hole */
	hostd_mem_layout(&f->g.mem, cfg.size, low);
	f->low = low;
	f->brk = 0x1000;
	f->scratch = fg_alloc(f, 4096);
}

static void fg_init_cfg(struct fg *f, const char *name, __u64 low,
			__u64 high, unsigned int vectors)
{
	fg_init_guest(f, name, low, high, vectors);
	if (hostd_ivshmem_open(&f->g.iv))
		die("hostd_ivshmem_open");
}

static int dup_fd(int fd)
{
	int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	if (d < 0)
		die("dup");
	return d;
}

void fg_restart(struct fg *f, unsigned int vectors, unsigned int nr_msix,
		int *conn_peer)
{
	struct hostd_ivshmem_fds fds = { .nr_msix = nr_msix };
	char name[sizeof(f->g.name)], err[256];
	unsigned int i;
	int sv[2];

	if (nr_msix > f->g.iv.nr_msix)
		die("fg_restart: more vectors than the connection has");
	fds.bar2 = dup_fd(f->g.iv.bar2_fd);
	for (i = 0; i < VBUS_PCI_NR_VECTORS; i++)
		fds.db[i] = dup_fd(f->g.iv.db_fd[i]);
	for (i = 0; i < VBUS_PCI_MAX_VECTORS; i++)
		fds.msix[i] = i < nr_msix ? dup_fd(f->g.iv.msix_fd[i]) : -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		die("socketpair");
	fds.conn = sv[0];
	*conn_peer = sv[1];
	snprintf(name, sizeof(name), "%s", f->g.name);
	fg_fini(f);
	fg_init_guest(f, name, FG_LOW, FG_HIGH, vectors);
	if (hostd_guest_adopt(&f->g, &fds, err, sizeof(err)))
		die(err);
}

void fg_init_ram(struct fg *f, const char *name, __u64 low, __u64 high)
{
	fg_init_cfg(f, name, low, high, 0);
}

void fg_init_vectors(struct fg *f, const char *name, unsigned int vectors)
{
	fg_init_cfg(f, name, FG_LOW, FG_HIGH, vectors);
}

void fg_init(struct fg *f, const char *name)
{
	fg_init_ram(f, name, FG_LOW, FG_HIGH);
}

int fg_add_dev(struct fg *f, const char *spec, char *err, size_t errlen)
{
	struct daemon_dev_cfg dc;
	int ret;

	if (daemon_parse_dev_spec(spec, f->g.name, &dc, err, errlen))
		return -EINVAL;
	ret = hostd_bus_add(&f->g.bus, dc.type, dc.id, &dc.params, err, errlen);
	daemon_dev_cfg_free(&dc);
	return ret;
}

void fg_fini(struct fg *f)
{
	if (f->evq_live) {
		f->evq_live = false;
		ioq_put(&f->evq);
	}
	hostd_guest_fini(&f->g);
}

void fg_pump(struct fg *f)
{
	int i;

	for (i = 0; i < 10000; i++) {
		int n = hostd_loop_poll(&f->g.loop, 0);

		if (n <= 0 && !hostd_loop_deferred(&f->g.loop))
			return;
	}
	die("fg_pump: the guest's loop never went idle");
}

__u64 fg_msix(struct fg *f, unsigned int v)
{
	__u64 val = 0;

	if (f->g.iv.msix_fd[v] < 0 ||
	    read(f->g.iv.msix_fd[v], &val, sizeof(val)) != sizeof(val))
		return 0;
	return val;
}

int fg_hc_raw(struct fg *f, __u32 vector, __u32 len, __u64 datap)
{
	struct vbus_pci_shm *shm = f->g.iv.shm;
	__u64 one = 1;

	VBUS_WRITE(shm->hc.vector, vector);
	VBUS_WRITE(shm->hc.len, len);
	VBUS_WRITE(shm->hc.datap, datap);
	/* the request before its number; pairs with the host's rmb */
	vbus_wmb();
	/* a guest starts from the hc_done it finds (docs/transport.md) */
	if (!f->seq)
		f->seq = VBUS_READ(shm->hc_done);
	VBUS_WRITE(shm->hc_seq, ++f->seq);
	if (write(f->g.iv.db_fd[VBUS_PCI_DB_HC], &one, sizeof(one)) != sizeof(one))
		die("doorbell");
	fg_pump(f);
	if (VBUS_READ(shm->hc_done) != f->seq)
		return -ETIMEDOUT;
	/* hc_done before the result; pairs with the host's wmb */
	vbus_rmb();
	return VBUS_READ(shm->hc_result);
}

int fg_hc(struct fg *f, __u32 vector, void *data, __u32 len)
{
	int ret;

	if (len > 4096)
		die("fg_hc: too long");
	memcpy(fg_ptr(f, f->scratch, 4096), data, len);
	ret = fg_hc_raw(f, vector, len, f->scratch);
	memcpy(data, fg_ptr(f, f->scratch, 4096), len);
	return ret;
}

void fg_signal(struct fg *f, __u32 h)
{
	__u64 one = 1;

	__atomic_fetch_or(&f->g.iv.shm->sigpending[h / 64], 1ull << (h % 64),
			  __ATOMIC_SEQ_CST);
	if (write(f->g.iv.db_fd[VBUS_PCI_DB_SIGNAL], &one, sizeof(one)) != sizeof(one))
		die("doorbell");
	if (!f->lazy)
		fg_pump(f);
}

int fg_negotiate(struct fg *f)
{
	struct vbus_pci_negotiate n = {
		.magic = VBUS_PCI_ABI_MAGIC,
		.version = VBUS_PCI_HC_VERSION,
		.capabilities = ~0ull,
	};
	int ret = fg_hc(f, VBUS_PCI_HC_NEGOTIATE, &n, sizeof(n));

	if (!ret && n.capabilities)
		return -EPROTO;
	return ret;
}

static struct fg *evq_fg(struct shm_signal *s)
{
	return hostd_container_of(s, struct fg, evq_sig);
}

static int evq_inject(struct shm_signal *s)
{
	fg_signal(evq_fg(s), VBUS_PCI_EVENTQ_HANDLE);
	return 0;
}

static const struct shm_signal_ops evq_ops = { .inject = evq_inject };

int fg_evq_post(struct fg *f, __u32 n)
{
	unsigned int i;
	__u32 pos;

	if (ioq_post_begin(&f->evq, n, &pos) != (int)n)
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		struct ioq_ring_desc *d = ioq_desc(&f->evq, pos + i);
		__u32 slot = i % f->evq_count;

		d->cookie = slot;
		d->ptr = f->evq_data + (__u64)slot * sizeof(struct vbus_pci_event);
		d->len = sizeof(struct vbus_pci_event);
	}
	/* [R1] inside: the descriptors before the tail */
	return n ? ioq_post_end(&f->evq, n, 0) : 0;
}

int fg_busreg(struct fg *f, __u32 count, __u32 posted)
{
	struct vbus_pci_busreg br;
	struct ioq_ring_head *head;

	if (f->evq_live) {
		f->evq_live = false;
		ioq_put(&f->evq);
	}
	f->evq_count = count;
	f->evq_gpa = fg_alloc(f, IOQ_HEAD_DESC_SIZE(count));
	f->evq_data = fg_alloc(f, (__u64)count * sizeof(struct vbus_pci_event));
	head = fg_ptr(f, f->evq_gpa, IOQ_HEAD_DESC_SIZE(count));
	if (ioq_ring_format_ver(head, count, fg_ring_ver))
		die("format");
	shm_signal_init(&f->evq_sig, shm_locality_north, &evq_ops, &head->signal);
	if (ioq_init(&f->evq, NULL, ioq_locality_north, head, &f->evq_sig, count))
		die("ioq_init");
	f->evq_live = true;
	if (fg_evq_post(f, posted))
		die("eventq post");
	ioq_notify_enable(&f->evq, 0);

	memset(&br, 0, sizeof(br));
	br.count = 1;
	br.eventq[0].count = count;
	br.eventq[0].ring = f->evq_gpa;
	br.eventq[0].data = f->evq_data;
	return fg_hc(f, VBUS_PCI_HC_BUSREG, &br, sizeof(br));
}

/*
 * Reap up to @max events with one inuse-head publication (the bridge's
 * way); with @repost their buffers go back as they were posted (cookie,
 * ptr) with one tail publication and one signal.
 */
unsigned int fg_events(struct fg *f, struct vbus_pci_event *out,
		       unsigned int max, bool repost)
{
	struct ioq_ring_desc d[64];
	unsigned int n, i;
	__u32 pos;
	int avail;

	if (!f->evq_live)
		return 0;
	if (max > 64)
		max = 64;
	/* [A2] inside: valid's head before the events it covers */
	avail = ioq_reap_begin(&f->evq, max, &pos);
	if (avail <= 0)
		return 0;
	n = (unsigned int)avail;
	for (i = 0; i < n; i++) {
		d[i].cookie = VBUS_READ(ioq_desc(&f->evq, pos + i)->cookie);
		d[i].ptr = VBUS_READ(ioq_desc(&f->evq, pos + i)->ptr);
		memcpy(&out[i], fg_ptr(f, d[i].ptr, sizeof(*out)), sizeof(*out));
	}
	if (ioq_reap_end(&f->evq, n, 0))
		die("eventq reap");
	f->events_seen += n;
	if (!repost)
		return n;
	if (ioq_post_begin(&f->evq, n, &pos) != (int)n)
		die("eventq repost");
	for (i = 0; i < n; i++) {
		struct ioq_ring_desc *slot = ioq_desc(&f->evq, pos + i);

		slot->cookie = d[i].cookie;
		slot->ptr = d[i].ptr;
		slot->len = sizeof(struct vbus_pci_event);
	}
	if (ioq_post_end(&f->evq, n, 0))
		die("eventq repost publish");
	ioq_signal(&f->evq, 0);
	return n;
}

__u64 fg_devopen(struct fg *f, __u32 id, __u32 version, int *ret)
{
	struct vbus_pci_deviceopen o = { .devid = id, .version = version };

	*ret = fg_hc(f, VBUS_PCI_HC_DEVOPEN, &o, sizeof(o));
	return o.handle;
}

int fg_devcall(struct fg *f, __u64 h, __u32 func, void *buf, __u32 len)
{
	struct vbus_pci_devicecall c = { .devh = h, .func = func, .len = len };
	__u64 gpa = 0;
	int ret;

	if (len) {
		gpa = fg_alloc(f, len);
		memcpy(fg_ptr(f, gpa, len), buf, len);
	}
	c.datap = gpa;
	ret = fg_hc(f, VBUS_PCI_HC_DEVCALL, &c, sizeof(c));
	if (len)
		memcpy(buf, fg_ptr(f, gpa, len), len);
	return ret;
}

static int ring_inject(struct shm_signal *s)
{
	struct fg_ring *r = hostd_container_of(s, struct fg_ring, sig);

	fg_signal(r->fg, r->handle);
	return 0;
}

static const struct shm_signal_ops ring_ops = { .inject = ring_inject };

int fg_ring_open(struct fg *f, struct fg_ring *r, __u64 h, __u32 id,
		 __u32 count, __u64 cookie)
{
	return fg_ring_open_vector(f, r, h, id, count, cookie, 0);
}

int fg_ring_open_vector(struct fg *f, struct fg_ring *r, __u64 h, __u32 id,
			__u32 count, __u64 cookie, __u32 vector)
{
	struct vbus_pci_deviceshm s;
	struct ioq_ring_head *head;
	int ret;

	memset(r, 0, sizeof(*r));
	r->fg = f;
	r->count = count;
	r->cookie = cookie;
	r->gpa = fg_alloc(f, IOQ_HEAD_DESC_SIZE(count));
	head = fg_ptr(f, r->gpa, IOQ_HEAD_DESC_SIZE(count));
	if (ioq_ring_format_ver(head, count, fg_ring_ver))
		die("format");
	shm_signal_init(&r->sig, shm_locality_north, &ring_ops, &head->signal);
	if (ioq_init(&r->ioq, NULL, ioq_locality_north, head, &r->sig, count))
		die("ioq_init");
	r->live = true;
	ioq_notify_enable(&r->ioq, 0);

	memset(&s, 0, sizeof(s));
	s.devh = h;
	s.id = id;
	s.len = (__u32)IOQ_HEAD_DESC_SIZE(count);
	s.signal.offset = offsetof(struct ioq_ring_head, signal);
	s.signal.cookie = cookie;
	s.vector = vector;
	s.datap = r->gpa;
	ret = fg_hc(f, VBUS_PCI_HC_DEVSHM, &s, sizeof(s));
	if (ret > 0)
		r->handle = (__u32)ret;
	return ret;
}

void fg_ring_close(struct fg_ring *r)
{
	if (r->live) {
		r->live = false;
		ioq_put(&r->ioq);
	}
}

int fg_ring_post_bulk(struct fg_ring *r, const struct ioq_ring_desc *d,
		      unsigned int n, bool sig)
{
	unsigned int i;
	__u32 pos;
	int room;

	room = ioq_post_begin(&r->ioq, n, &pos);
	if (room <= 0)
		return room;
	for (i = 0; i < (unsigned int)room; i++) {
		struct ioq_ring_desc *slot = ioq_desc(&r->ioq, pos + i);

		slot->cookie = d[i].cookie;
		slot->ptr = d[i].ptr;
		slot->len = d[i].len;
	}
	/* [R1] inside: the bodies (and the buffers) before the tail */
	if (ioq_post_end(&r->ioq, (unsigned int)room,
			 sig ? IOQ_ITER_AUTOUPDATE : 0))
		return -EIO;
	return room;
}

int fg_ring_post(struct fg_ring *r, __u64 gpa, __u64 len, bool sig)
{
	struct ioq_ring_desc d = { .ptr = gpa, .len = len };
	int ret = fg_ring_post_bulk(r, &d, 1, sig);

	return ret == 1 ? 0 : ret ? ret : -ENOSPC;
}

int fg_ring_reap_bulk(struct fg_ring *r, struct ioq_ring_desc *out,
		      unsigned int max)
{
	unsigned int i;
	__u32 pos;
	int avail;

	/* [A2] inside: valid's head before the completions */
	avail = ioq_reap_begin(&r->ioq, max, &pos);
	if (avail <= 0)
		return avail;
	for (i = 0; out && i < (unsigned int)avail; i++) {
		const struct ioq_ring_desc *slot = ioq_desc(&r->ioq, pos + i);

		out[i].cookie = VBUS_READ(slot->cookie);
		out[i].ptr = VBUS_READ(slot->ptr);
		out[i].len = VBUS_READ(slot->len);
	}
	if (ioq_reap_end(&r->ioq, (unsigned int)avail, 0))
		return -EIO;
	return avail;
}

unsigned int fg_ring_reap(struct fg_ring *r)
{
	int n = fg_ring_reap_bulk(r, NULL, r->count);

	return n > 0 ? (unsigned int)n : 0;
}
