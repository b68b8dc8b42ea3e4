// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target over vbus-hostd's guest-facing entry points: hypercall
 * dispatch (the BAR2 mailbox and structs in a fuzzed guest memory image),
 * ring consumption (vbus-test rings and the eventq, with descriptors and
 * indexes the fuzzer writes), sigpending processing, and the vbus-blk
 * device (device 3, over a small temporary backing file and a real
 * io_uring): its calls and its request parsing, with requests, segment
 * lists and descriptors the fuzzer writes.
 *
 * The input is a program for a hostile guest: a sequence of operations,
 * each an opcode byte and its operands. Raw operations write anything
 * anywhere in guest RAM or the mailbox; "helper" operations build
 * well-formed requests (a formatted ring, a NEGOTIATE, a DEVSHM naming a
 * ring the input formatted earlier) so the fuzzer gets deep quickly and
 * then corrupts from there. Every iteration starts from a fresh bus.
 *
 * Built with -fsanitize=fuzzer,address,undefined by tests/fuzz (clang), and
 * also as a plain replay program (replay.c) that runs the corpus as a
 * regression test in any build.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <vbus/vbus_blk.h>
#include "daemon.h"

#define RAM_LOW		(64u << 10)
#define RAM_HIGH	(64u << 10)
#define HIGH_GPA	(4ull << 30)
#define SCRATCH		0x100ull	/* default hypercall argument gpa */
#define NRINGS		4

struct in {
	const uint8_t *p;
	size_t n;
};

static uint8_t u8(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint16_t u16(struct in *in)
{
	return (uint16_t)(u8(in) | (u8(in) << 8));
}

static uint32_t u32(struct in *in)
{
	return (uint32_t)u16(in) | ((uint32_t)u16(in) << 16);
}

static uint64_t u64(struct in *in)
{
	return (uint64_t)u32(in) | ((uint64_t)u32(in) << 32);
}

/* A guest-physical address: mostly in or near RAM, sometimes anything. */
static uint64_t gpa(struct in *in)
{
	uint8_t sel = u8(in);

	switch (sel & 3) {
	case 0:
	case 1:
		return u16(in) & ~7u;			/* low block, aligned */
	case 2:
		return HIGH_GPA + (u16(in) & ~7u);	/* high block */
	default:
		return sel & 4 ? u64(in) : (uint64_t)u32(in);
	}
}

static struct hostd_guest G;
static bool ready;
/* vbus-blk's backing file: 64 KiB, 128 sectors */
#define DISK_SIZE	(64u << 10)
static char disk_path[256];
static char disk_spec[400];
static struct {
	uint64_t gpa;
	uint32_t count;
	uint32_t ver;	/* 5 or 6: the layout the raw ops below write */
} rings[NRINGS];

/* Where the counters and descriptors of ring k live, in either layout. */
static uint32_t *ring_tail(struct ioq_ring_head *h, unsigned int k)
{
	return rings[k].ver == IOQ_RING_VER_V6 ?
	       &((struct ioq_ring_head_v6 *)h)->tail :
	       &h->idx[ioq_idx_consume].tail;
}

static uint32_t *ring_head(struct ioq_ring_head *h, unsigned int k,
			   enum ioq_idx_type t)
{
	struct ioq_ring_head_v6 *h6 = (struct ioq_ring_head_v6 *)h;

	if (rings[k].ver != IOQ_RING_VER_V6)
		return &h->idx[t].head;
	return t == ioq_idx_consume ? &h6->valid_head : &h6->inuse_head;
}

static struct ioq_ring_desc *ring_desc(struct ioq_ring_head *h,
				       unsigned int k, uint32_t pos)
{
	struct ioq_ring_desc *d = rings[k].ver == IOQ_RING_VER_V6 ?
		((struct ioq_ring_head_v6 *)h)->ring : h->ring;

	return &d[pos & (rings[k].count - 1)];
}
static uint64_t handles[4];
static uint32_t seq;

static void *ptr(uint64_t a, uint64_t len)
{
	return hostd_mem_gpa(&G.mem, a, len);
}

static void add_dev(const char *spec)
{
	struct daemon_dev_cfg dc;
	char err[256];

	if (!daemon_parse_dev_spec(spec, G.name, &dc, err, sizeof(err))) {
		hostd_bus_add(&G.bus, dc.type, dc.id, &dc.params, err, sizeof(err));
		daemon_dev_cfg_free(&dc);
	}
}

static void disk_unlink(void)
{
	unlink(disk_path);
}

static void disk_create(void)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(disk_path, sizeof(disk_path), "%s/vbus-fuzz-disk-%d.img",
		 dir && *dir ? dir : "/tmp", (int)getpid());
	fd = open(disk_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, DISK_SIZE) < 0)
		abort();
	close(fd);
	atexit(disk_unlink);
	/* buffered: the fuzzer wants iterations, not the disk's latency */
	snprintf(disk_spec, sizeof(disk_spec),
		 "type=vbus-blk,id=3,file=%s,queues=2,depth=64,segs=4,"
		 "max_sectors=32,direct=0", disk_path);
}

static void setup_once(void)
{
	struct hostd_guest_cfg cfg = { .name = "fuzz", .size = RAM_LOW + RAM_HIGH };
	int fd = memfd_create("fuzz-ram", MFD_CLOEXEC);
	char err[256];

	disk_create();
	if (fd < 0 || hostd_guest_init(&G, &cfg, fd, err, sizeof(err)))
		abort();
	hostd_mem_layout(&G.mem, cfg.size, RAM_LOW);
	ready = true;
}

/* A fresh bus over the same RAM and loop: no device, no counter kept. */
static void reset(void)
{
	hostd_ivshmem_close(&G.iv);
	hostd_bus_fini(&G.bus);
	memset(G.mem.base, 0, G.mem.size);
	hostd_bus_init(&G.bus, G.name, &G.log, &G.mem, &G.iv, &G.loop);
	hostd_hc_init(&G.hc, &G.bus, &G.iv, &G.mem);
	hostd_sig_init(&G.sig, &G.bus, &G.iv);
	if (hostd_ivshmem_open(&G.iv))
		abort();
	add_dev("type=vbus-test,id=1");
	add_dev("type=vbus-test,id=2");
	add_dev(disk_spec);
	memset(rings, 0, sizeof(rings));
	memset(handles, 0, sizeof(handles));
	seq = 0;
}

static void pump(void)
{
	int i;

	/* bounded: the daemon must go idle; if it does not, that is a bug */
	for (i = 0; i < 64; i++) {
		hostd_loop_poll(&G.loop, 0);
		if (!hostd_loop_deferred(&G.loop))
			return;
	}
	abort();
}

static int hypercall(uint32_t vector, uint32_t len, uint64_t datap)
{
	struct vbus_pci_shm *shm = G.iv.shm;

	VBUS_WRITE(shm->hc.vector, vector);
	VBUS_WRITE(shm->hc.len, len);
	VBUS_WRITE(shm->hc.datap, datap);
	vbus_wmb();
	if (!++seq)
		seq = 1;
	VBUS_WRITE(shm->hc_seq, seq);
	hostd_hc_doorbell(&G.hc);
	pump();
	return VBUS_READ(shm->hc_result);
}

/* A struct at SCRATCH (or at a fuzzed gpa) and its hypercall. */
static int hc_struct(struct in *in, uint32_t vector, void *s, uint32_t len)
{
	uint64_t at = (u8(in) & 7) ? SCRATCH : gpa(in);
	void *p = ptr(at, len);
	int ret;

	if (p)
		memcpy(p, s, len);
	ret = hypercall(vector, len, at);
	if (p && vector == VBUS_PCI_HC_DEVOPEN && ret == 0)
		memcpy(s, p, len);
	return ret;
}

static void op_format_ring(struct in *in)
{
	unsigned int k = u8(in) % NRINGS;
	uint8_t c = u8(in);
	uint32_t count = 1u << (c % 7);	/* 1 .. 64 */
	uint64_t at = gpa(in);
	struct ioq_ring_head *h = ptr(at, IOQ_HEAD_DESC_SIZE(count));

	if (!h || (at & 7))
		return;
	/* both layouts: a v6 host must still take a v5 guest's rings */
	rings[k].ver = (c & 0x40) ? IOQ_RING_VER_V5 : IOQ_RING_VER_V6;
	ioq_ring_format_ver(h, count, rings[k].ver);
	/* the guest wants notifications, unless told otherwise */
	if (!(c & 0x80))
		h->signal.irq[shm_locality_north].enabled = 1;
	rings[k].gpa = at;
	rings[k].count = count;
}

/* North posts one descriptor on ring k, raw (like a guest would). */
static void op_post(struct in *in)
{
	unsigned int k = u8(in) % NRINGS;
	uint8_t how = u8(in);
	struct ioq_ring_head *h;
	struct ioq_ring_desc *d;
	uint32_t tail;

	if (!rings[k].count)
		return;
	h = ptr(rings[k].gpa, IOQ_HEAD_DESC_SIZE(rings[k].count));
	if (!h)
		return;
	tail = *ring_tail(h, k);
	d = ring_desc(h, k, tail);
	d->cookie = tail;
	d->ptr = (how & 1) ? gpa(in) : 0x8000 + (uint64_t)(u8(in)) * 64;
	d->len = (how & 2) ? u64(in) : (uint64_t)(u8(in) + 1);
	if (k == 0 && (how & 4))
		d->len = sizeof(struct vbus_pci_event);
	d->valid = 1;
	d->sown = (how & 8) ? u8(in) : 1;
	*ring_tail(h, k) = tail + 1;
	if (rings[k].ver == IOQ_RING_VER_V5)
		h->idx[ioq_idx_reap].tail = tail + 1;
	if (!(how & 16))
		h->signal.irq[shm_locality_south].dirty = 1;
}

/* North reaps what the host handed back on ring k. */
static void op_reap(struct in *in)
{
	unsigned int k = u8(in) % NRINGS;
	struct ioq_ring_head *h;
	uint32_t n = 0;

	if (!rings[k].count)
		return;
	h = ptr(rings[k].gpa, IOQ_HEAD_DESC_SIZE(rings[k].count));
	if (!h)
		return;
	/* v5: handed back = sown north; v6: behind valid's head */
	while (n++ < rings[k].count &&
	       *ring_head(h, k, ioq_idx_reap) !=
	       *ring_head(h, k, ioq_idx_consume) &&
	       (rings[k].ver == IOQ_RING_VER_V6 ||
		!ring_desc(h, k, *ring_head(h, k, ioq_idx_reap))->sown))
		(*ring_head(h, k, ioq_idx_reap))++;
	h->signal.irq[shm_locality_north].pending = 0;
}

static void op_signal(struct in *in)
{
	uint8_t w = u8(in);
	uint64_t bits;

	switch (w & 3) {
	case 0:		/* one handle */
		bits = 1ull << (u8(in) % 64);
		w = (uint8_t)(u8(in) % 4);
		break;
	case 1:		/* the eventq */
		bits = 1;
		w = 0;
		break;
	default:	/* garbage */
		bits = u64(in);
		w = (uint8_t)((w >> 2) % (VBUS_PCI_MAX_SIGNALS / 64));
		break;
	}
	__atomic_fetch_or(&G.iv.shm->sigpending[w], bits, __ATOMIC_SEQ_CST);
	hostd_sig_doorbell(&G.sig);
	pump();
}

static void op_hc(struct in *in)
{
	uint8_t v = u8(in);

	switch (v % 8) {
	case 0: {
		struct vbus_pci_negotiate n = { VBUS_PCI_ABI_MAGIC, VBUS_PCI_HC_VERSION, 0 };

		if (v & 8)
			n.magic = u32(in);
		if (v & 16)
			n.version = u32(in);
		hc_struct(in, VBUS_PCI_HC_NEGOTIATE, &n, sizeof(n));
		break;
	}
	case 1: {
		struct vbus_pci_busreg b = { .count = 1 };
		unsigned int k = u8(in) % NRINGS;

		b.eventq[0].count = rings[k].count;
		b.eventq[0].ring = rings[k].gpa;
		b.eventq[0].data = 0x8000;
		if (v & 8)
			b.count = u8(in) % 3;
		if (v & 16)
			b.eventq[0].count = u32(in);
		if (v & 32)
			b.eventq[0].ring = gpa(in);
		if (v & 64)
			b.eventq[0].data = gpa(in);
		hc_struct(in, VBUS_PCI_HC_BUSREG, &b, sizeof(b));
		break;
	}
	case 2: {
		struct vbus_pci_deviceopen o = { .devid = 1 + u8(in) % 3,
						 .version = 1 };
		unsigned int k = u8(in) % 4;

		if (v & 8)
			o.version = u32(in);
		if (hc_struct(in, VBUS_PCI_HC_DEVOPEN, &o, sizeof(o)) == 0)
			handles[k] = o.handle;
		break;
	}
	case 3: {
		__u64 h = (v & 8) ? u64(in) : handles[u8(in) % 4];

		hc_struct(in, VBUS_PCI_HC_DEVCLOSE, &h, sizeof(h));
		break;
	}
	case 4: {
		struct vbus_pci_devicecall c = { .devh = handles[u8(in) % 4] };

		c.func = u8(in) % 3;
		c.len = u8(in);
		c.datap = (v & 8) ? gpa(in) : 0x4000;
		if (v & 16)
			c.len = u32(in);
		if (v & 32)
			c.devh = u64(in);
		hc_struct(in, VBUS_PCI_HC_DEVCALL, &c, sizeof(c));
		break;
	}
	case 5: {
		struct vbus_pci_deviceshm s = { .devh = handles[u8(in) % 4] };
		unsigned int k = u8(in) % NRINGS;

		s.id = u8(in) % 2;
		s.datap = rings[k].gpa;
		s.len = (__u32)IOQ_HEAD_DESC_SIZE(rings[k].count);
		s.signal.offset = offsetof(struct ioq_ring_head, signal);
		s.signal.cookie = u8(in);
		if (v & 8)
			s.len = u32(in);
		if (v & 16)
			s.signal.offset = u32(in);
		if (v & 32)
			s.datap = gpa(in);
		if (v & 64)
			s.devh = u64(in);
		hc_struct(in, VBUS_PCI_HC_DEVSHM, &s, sizeof(s));
		break;
	}
	default:
		/* a raw mailbox */
		hypercall(u32(in), u32(in), gpa(in));
		break;
	}
}

static void op_write(struct in *in)
{
	uint64_t at = gpa(in);
	uint8_t len = u8(in);
	uint8_t *p = ptr(at, len ? len : 1);
	unsigned int i;

	for (i = 0; i < len; i++) {
		uint8_t b = u8(in);

		if (p)
			p[i] = b;
	}
}

static void op_mailbox(struct in *in)
{
	/* garbage anywhere in BAR2 but line 0 (which the guest cannot make
	 * the host re-read anyway) */
	uint16_t off = (uint16_t)(64 + u16(in) % (VBUS_PCI_SHM_SIZE - 64 - 8));

	memcpy((char *)G.iv.shm + off, &(uint64_t){ u64(in) }, 8);
	if (u8(in) & 1) {
		hostd_hc_doorbell(&G.hc);
		pump();
	}
}

static void op_ctl(struct in *in)
{
	char spec[64];
	uint8_t b = u8(in);

	if (b & 1) {
		snprintf(spec, sizeof(spec), "type=vbus-test,id=%u", 1 + b % 5);
		add_dev(spec);
	} else {
		char err[256];

		hostd_bus_drop(&G.bus, 1 + (uint32_t)(b >> 1) % 5, err,
			       sizeof(err));
	}
	pump();
}

/* vbus-blk (device 3): well-formed calls and requests to corrupt from */
static void blk_call(struct in *in, uint8_t sub, uint32_t func, void *buf,
		     uint32_t len)
{
	struct vbus_pci_devicecall c = { .devh = handles[u8(in) % 4] };
	void *p = ptr(0x4000, len);

	if (p)
		memcpy(p, buf, len);
	c.func = func;
	c.len = (sub & 8) ? u8(in) : len;
	c.datap = 0x4000;
	hc_struct(in, VBUS_PCI_HC_DEVCALL, &c, sizeof(c));
}

/* A request at a low address and its descriptor on ring k. */
static void blk_post(struct in *in, uint8_t sub)
{
	unsigned int k = u8(in) % NRINGS;
	uint64_t at = (sub & 8) ? gpa(in) : 0x6000 + (uint64_t)(u8(in) % 16) * 256;
	struct vbus_blk_req r = { 0 };
	struct vbus_blk_seg seg[6];
	struct ioq_ring_head *h;
	struct ioq_ring_desc *d;
	uint32_t i, tail;
	uint8_t *p;

	r.op = u8(in) % 7;
	r.flags = u8(in) % 4;
	r.sector = (sub & 16) ? u64(in) : u8(in);
	r.nr_sectors = u8(in) % 32;
	r.nr_segs = u8(in) % 6;
	r.status = VBUS_BLK_S_PENDING;
	for (i = 0; i < r.nr_segs; i++) {
		uint8_t sel = u8(in);

		seg[i].addr = (sel & 1) ? gpa(in) : (uint64_t)(u8(in) % 128) * 512;
		seg[i].len = (sel & 2) ? u32(in) : (1u + u8(in) % 8) * 512;
		seg[i].reserved = 0;
	}
	p = ptr(at, VBUS_BLK_REQ_SIZE(r.nr_segs));
	if (p) {
		memcpy(p, &r, sizeof(r));
		memcpy(p + sizeof(r), seg, sizeof(seg[0]) * r.nr_segs);
	}
	if (!rings[k].count)
		return;
	h = ptr(rings[k].gpa, IOQ_HEAD_DESC_SIZE(rings[k].count));
	if (!h)
		return;
	tail = h->idx[ioq_idx_consume].tail;
	d = &h->ring[tail & (rings[k].count - 1)];
	d->cookie = tail;
	d->ptr = at;
	d->len = (sub & 32) ? u64(in) : VBUS_BLK_REQ_SIZE(r.nr_segs);
	d->valid = 1;
	d->sown = 1;
	h->idx[ioq_idx_consume].tail = tail + 1;
	h->idx[ioq_idx_reap].tail = tail + 1;
	h->signal.irq[shm_locality_south].dirty = 1;
}

static void op_blk(struct in *in)
{
	uint8_t sub = u8(in);

	switch (sub % 4) {
	case 0: {
		struct vbus_blk_negotiate n = { 0 };
		unsigned int k = u8(in) % NRINGS;

		n.features = u8(in);
		n.nr_queues = 1 + u8(in) % 2;
		n.queue_depth = (sub & 16) ? u32(in) : rings[k].count;
		blk_call(in, sub, VBUS_BLK_FUNC_NEGOTIATE, &n, sizeof(n));
		break;
	}
	case 1: {
		struct vbus_blk_config c = { 0 };

		blk_call(in, sub, VBUS_BLK_FUNC_GETCONFIG, &c, sizeof(c));
		break;
	}
	case 2:
		blk_post(in, sub);
		break;
	default:
		/*
		 * let io_uring's completions come in (buffered I/O on a
		 * cached 64 KiB file completes at submission; never sleep:
		 * the fuzzer wants iterations, close drains the rest)
		 */
		hostd_loop_poll(&G.loop, 0);
		pump();
		break;
	}
}

/* For replay -v: what the last input did. */
void fuzz_hostd_report(FILE *f)
{
	struct hostd_buf b = { 0 };

	daemon_ctl_exec("stats fuzz", (struct hostd_guest *[]){ &G }, 1, &b);
	fprintf(f, "%s", b.s ? b.s : "");
	hostd_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	unsigned int ops = 0;

	if (!ready)
		setup_once();
	reset();
	while (in.n && ops++ < 256) {
		switch (u8(&in) % 12) {
		case 0: op_write(&in); break;
		case 1: op_format_ring(&in); break;
		case 2: op_post(&in); break;
		case 3: op_reap(&in); break;
		case 4: op_signal(&in); break;
		case 5: op_mailbox(&in); break;
		case 6: op_ctl(&in); break;
		case 7: pump(); break;
		case 8:		/* QEMU restarts */
			hostd_ivshmem_close(&G.iv);
			if (hostd_ivshmem_open(&G.iv))
				abort();
			seq = 0;
			break;
		case 11: op_blk(&in); break;
		default: op_hc(&in); break;
		}
	}
	return 0;
}
