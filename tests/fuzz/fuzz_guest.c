// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The fake guest of the fuzz targets (fuzz_guest.h): guest set-up, the
 * generic hostile-guest operations (RAM, rings, signals, BAR2,
 * hypercalls, QEMU restarts) and the ctl output check.
 *
 * Built with -fsanitize=fuzzer,address,undefined by tests/fuzz (clang),
 * and as plain replay programs (replay.c) in every build.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "fuzz_guest.h"

struct hostd_guest fuzz_guest;
uint64_t fuzz_handles[FUZZ_NHANDLES];

#define G fuzz_guest

static bool ready;
static uint32_t seq;
static struct {
	uint64_t gpa;
	uint32_t count;
	uint32_t ver;	/* 5 or 6: the layout the raw ops below write */
} rings[FUZZ_NRINGS];

/* ---- the input ---------------------------------------------------------- */

uint8_t fuzz_u8(struct fuzz_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

uint16_t fuzz_u16(struct fuzz_in *in)
{
	return (uint16_t)(fuzz_u8(in) | (fuzz_u8(in) << 8));
}

uint32_t fuzz_u32(struct fuzz_in *in)
{
	return (uint32_t)fuzz_u16(in) | ((uint32_t)fuzz_u16(in) << 16);
}

uint64_t fuzz_u64(struct fuzz_in *in)
{
	return (uint64_t)fuzz_u32(in) | ((uint64_t)fuzz_u32(in) << 32);
}

uint64_t fuzz_gpa(struct fuzz_in *in)
{
	uint8_t sel = fuzz_u8(in);

	switch (sel & 3) {
	case 0:
	case 1:
		return fuzz_u16(in) & ~7u;			/* low, aligned */
	case 2:
		return FUZZ_HIGH_GPA + (fuzz_u16(in) & ~7u);	/* high */
	default:
		return sel & 4 ? fuzz_u64(in) : (uint64_t)fuzz_u32(in);
	}
}

/* ---- the guest -------------------------------------------------------------- */

void *fuzz_ptr(uint64_t gpa, uint64_t len)
{
	return hostd_mem_gpa(&G.mem, gpa, len);
}

void fuzz_add_dev(const char *spec)
{
	struct daemon_dev_cfg dc;
	char err[256];

	if (!daemon_parse_dev_spec(spec, G.name, &dc, err, sizeof(err))) {
		hostd_bus_add(&G.bus, dc.type, dc.id, &dc.params, err,
			      sizeof(err));
		daemon_dev_cfg_free(&dc);
	}
}

static void setup_once(const struct fuzz_target *t)
{
	/*
	 * vectors=4: two queue vectors for VBUS_PCI_CAP_QVEC and DEVSHM's
	 * vector (the socket targets' fake QEMU checks a 2-vector handshake)
	 */
	struct hostd_guest_cfg cfg = { .name = "fuzz",
				       .size = FUZZ_RAM_LOW + FUZZ_RAM_HIGH,
				       .vectors = t->socket_transport ? 0 : 4 };
	int fd = memfd_create("fuzz-ram", MFD_CLOEXEC);
	char err[256];

	if (t->setup)
		t->setup();
	if (fd < 0 || hostd_guest_init(&G, &cfg, fd, err, sizeof(err)))
		abort();
	hostd_mem_layout(&G.mem, cfg.size, FUZZ_RAM_LOW);
	ready = true;
}

/* A fresh bus over the same RAM and loop: no device, no counter kept. */
static void reset(const struct fuzz_target *t)
{
	const char *const *d;

	hostd_ivshmem_close(&G.iv);
	hostd_bus_fini(&G.bus);
	memset(G.mem.base, 0, G.mem.size);
	hostd_bus_init(&G.bus, G.name, &G.log, &G.mem, &G.iv, &G.loop);
	hostd_hc_init(&G.hc, &G.bus, &G.iv, &G.mem);
	hostd_sig_init(&G.sig, &G.bus, &G.iv);
	if (!t->socket_transport && hostd_ivshmem_open(&G.iv))
		abort();
	for (d = t->devices; d && *d; d++)
		fuzz_add_dev(*d);
	memset(rings, 0, sizeof(rings));
	memset(fuzz_handles, 0, sizeof(fuzz_handles));
	seq = 0;
	if (t->reset)
		t->reset();
}

void fuzz_pump(void)
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
	fuzz_pump();
	return VBUS_READ(shm->hc_result);
}

/* A struct at FUZZ_SCRATCH (or at a fuzzed gpa) and its hypercall. */
static int hc_struct(struct fuzz_in *in, uint32_t vector, void *s,
		     uint32_t len)
{
	uint64_t at = (fuzz_u8(in) & 7) ? FUZZ_SCRATCH : fuzz_gpa(in);
	void *p = fuzz_ptr(at, len);
	int ret;

	if (p)
		memcpy(p, s, len);
	ret = hypercall(vector, len, at);
	if (p && vector == VBUS_PCI_HC_DEVOPEN && ret == 0)
		memcpy(s, p, len);
	return ret;
}

int fuzz_devcall(struct fuzz_in *in, unsigned int slot, uint32_t func,
		 const void *buf, uint32_t len, bool bad_len)
{
	struct vbus_pci_devicecall c = {
		.devh = fuzz_handles[slot % FUZZ_NHANDLES]
	};
	void *p = fuzz_ptr(FUZZ_CALLBUF, len);

	if (p && len)
		memcpy(p, buf, len);
	c.func = func;
	c.len = bad_len ? fuzz_u8(in) : len;
	c.datap = FUZZ_CALLBUF;
	return hc_struct(in, VBUS_PCI_HC_DEVCALL, &c, sizeof(c));
}

/* ---- rings ------------------------------------------------------------------ */

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

static struct ioq_ring_head *ring(unsigned int k)
{
	if (!rings[k].count)
		return NULL;
	return fuzz_ptr(rings[k].gpa, IOQ_HEAD_DESC_SIZE(rings[k].count));
}

static void op_format_ring(struct fuzz_in *in)
{
	unsigned int k = fuzz_u8(in) % FUZZ_NRINGS;
	uint8_t c = fuzz_u8(in);
	uint32_t count = 1u << (c % 7);	/* 1 .. 64 */
	uint64_t at = fuzz_gpa(in);
	struct ioq_ring_head *h = fuzz_ptr(at, IOQ_HEAD_DESC_SIZE(count));

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

/* North posts one descriptor on ring k (like a guest would). */
static void post(struct ioq_ring_head *h, unsigned int k, uint64_t ptr,
		 uint64_t len, uint8_t sown, bool dirty)
{
	uint32_t tail = *ring_tail(h, k);
	struct ioq_ring_desc *d = ring_desc(h, k, tail);

	d->cookie = tail;
	d->ptr = ptr;
	d->len = len;
	d->valid = 1;
	d->sown = sown;
	*ring_tail(h, k) = tail + 1;
	if (rings[k].ver == IOQ_RING_VER_V5)
		h->idx[ioq_idx_reap].tail = tail + 1;
	if (dirty)
		h->signal.irq[shm_locality_south].dirty = 1;
}

bool fuzz_ring_post(unsigned int k, uint64_t ptr, uint64_t len)
{
	struct ioq_ring_head *h = ring(k % FUZZ_NRINGS);

	if (!h)
		return false;
	post(h, k % FUZZ_NRINGS, ptr, len, 1, true);
	return true;
}

static void op_post(struct fuzz_in *in)
{
	unsigned int k = fuzz_u8(in) % FUZZ_NRINGS;
	uint8_t how = fuzz_u8(in);
	struct ioq_ring_head *h = ring(k);
	uint64_t ptr, len;

	if (!h)
		return;
	ptr = (how & 1) ? fuzz_gpa(in) : 0x8000 + (uint64_t)(fuzz_u8(in)) * 64;
	len = (how & 2) ? fuzz_u64(in) : (uint64_t)(fuzz_u8(in) + 1);
	if (k == 0 && (how & 4))
		len = sizeof(struct vbus_pci_event);
	post(h, k, ptr, len, (how & 8) ? fuzz_u8(in) : 1, !(how & 16));
}

/* North reaps what the host handed back on ring k. */
static void op_reap(struct fuzz_in *in)
{
	unsigned int k = fuzz_u8(in) % FUZZ_NRINGS;
	struct ioq_ring_head *h = ring(k);
	uint32_t n = 0;

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

/* ---- signals, BAR2, hypercalls ---------------------------------------------- */

static void op_signal(struct fuzz_in *in)
{
	uint8_t w = fuzz_u8(in);
	uint64_t bits;

	switch (w & 3) {
	case 0:		/* one handle */
		bits = 1ull << (fuzz_u8(in) % 64);
		w = (uint8_t)(fuzz_u8(in) % 4);
		break;
	case 1:		/* the eventq */
		bits = 1;
		w = 0;
		break;
	default:	/* garbage */
		bits = fuzz_u64(in);
		w = (uint8_t)((w >> 2) % (VBUS_PCI_MAX_SIGNALS / 64));
		break;
	}
	__atomic_fetch_or(&G.iv.shm->sigpending[w], bits, __ATOMIC_SEQ_CST);
	hostd_sig_doorbell(&G.sig);
	fuzz_pump();
}

static void op_mailbox(struct fuzz_in *in)
{
	/* garbage anywhere in BAR2 but line 0 (which the guest cannot make
	 * the host re-read anyway) */
	uint16_t off = (uint16_t)(64 + fuzz_u16(in) % (VBUS_PCI_SHM_SIZE - 64 - 8));

	memcpy((char *)G.iv.shm + off, &(uint64_t){ fuzz_u64(in) }, 8);
	if (fuzz_u8(in) & 1) {
		hostd_hc_doorbell(&G.hc);
		fuzz_pump();
	}
}

static void hc_busreg(struct fuzz_in *in, uint8_t v)
{
	struct vbus_pci_busreg b = { .count = 1 };
	unsigned int k = fuzz_u8(in) % FUZZ_NRINGS;

	b.eventq[0].count = rings[k].count;
	b.eventq[0].ring = rings[k].gpa;
	b.eventq[0].data = 0x8000;
	if (v & 8)
		b.count = fuzz_u8(in) % 3;
	if (v & 16)
		b.eventq[0].count = fuzz_u32(in);
	if (v & 32)
		b.eventq[0].ring = fuzz_gpa(in);
	if (v & 64)
		b.eventq[0].data = fuzz_gpa(in);
	hc_struct(in, VBUS_PCI_HC_BUSREG, &b, sizeof(b));
}

static void hc_devshm(struct fuzz_in *in, uint8_t v)
{
	struct vbus_pci_deviceshm s = {
		.devh = fuzz_handles[fuzz_u8(in) % FUZZ_NHANDLES]
	};
	unsigned int k = fuzz_u8(in) % FUZZ_NRINGS;

	/* 0..7: a device's first ids (venet's pairs 0..3) */
	s.id = fuzz_u8(in) % 8;
	s.datap = rings[k].gpa;
	s.len = (__u32)IOQ_HEAD_DESC_SIZE(rings[k].count);
	s.signal.offset = offsetof(struct ioq_ring_head, signal);
	s.signal.cookie = fuzz_u8(in);
	if (v & 8)
		s.len = fuzz_u32(in);
	if (v & 16)
		s.signal.offset = fuzz_u32(in);
	if (v & 32)
		s.datap = fuzz_gpa(in);
	if (v & 64)
		s.devh = fuzz_u64(in);
	/* a queue vector, mostly in range, sometimes anything */
	if (v & 128)
		s.vector = (v & 1) ? fuzz_u32(in) : fuzz_u8(in) % 6;
	hc_struct(in, VBUS_PCI_HC_DEVSHM, &s, sizeof(s));
}

static void op_hc(struct fuzz_in *in)
{
	uint8_t v = fuzz_u8(in);

	switch (v % 8) {
	case 0: {
		struct vbus_pci_negotiate n = { VBUS_PCI_ABI_MAGIC,
						VBUS_PCI_HC_VERSION, 0 };

		if (v & 8)
			n.magic = fuzz_u32(in);
		if (v & 16)
			n.version = fuzz_u32(in);
		if (v & 32)
			n.capabilities = fuzz_u64(in);
		hc_struct(in, VBUS_PCI_HC_NEGOTIATE, &n, sizeof(n));
		break;
	}
	case 1:
		hc_busreg(in, v);
		break;
	case 2: {
		struct vbus_pci_deviceopen o = { .devid = 1 + fuzz_u8(in) % 4,
						 .version = 1 };
		unsigned int k = fuzz_u8(in) % FUZZ_NHANDLES;

		if (v & 8)
			o.version = fuzz_u32(in);
		if (hc_struct(in, VBUS_PCI_HC_DEVOPEN, &o, sizeof(o)) == 0)
			fuzz_handles[k] = o.handle;
		break;
	}
	case 3: {
		__u64 h = (v & 8) ? fuzz_u64(in) :
			  fuzz_handles[fuzz_u8(in) % FUZZ_NHANDLES];

		hc_struct(in, VBUS_PCI_HC_DEVCLOSE, &h, sizeof(h));
		break;
	}
	case 4: {
		struct vbus_pci_devicecall c = {
			.devh = fuzz_handles[fuzz_u8(in) % FUZZ_NHANDLES]
		};

		c.func = fuzz_u8(in) % 6;
		c.len = fuzz_u8(in);
		c.datap = (v & 8) ? fuzz_gpa(in) : FUZZ_CALLBUF;
		if (v & 16)
			c.len = fuzz_u32(in);
		if (v & 32)
			c.devh = fuzz_u64(in);
		hc_struct(in, VBUS_PCI_HC_DEVCALL, &c, sizeof(c));
		break;
	}
	case 5:
		hc_devshm(in, v);
		break;
	default:
		/* a raw mailbox */
		hypercall(fuzz_u32(in), fuzz_u32(in), fuzz_gpa(in));
		break;
	}
}

static void op_write(struct fuzz_in *in)
{
	uint64_t at = fuzz_gpa(in);
	uint8_t len = fuzz_u8(in);
	uint8_t *p = fuzz_ptr(at, len ? len : 1);
	unsigned int i;

	for (i = 0; i < len; i++) {
		uint8_t b = fuzz_u8(in);

		if (p)
			p[i] = b;
	}
}

/* ---- the program ------------------------------------------------------------ */

void fuzz_guest_run(const struct fuzz_target *t, const uint8_t *data,
		    size_t size)
{
	struct fuzz_in in = { data, size };
	unsigned int ops = 0;

	if (!ready)
		setup_once(t);
	reset(t);
	while (in.n && ops++ < FUZZ_MAX_OPS) {
		switch (fuzz_u8(&in) % 12) {
		case 0: op_write(&in); break;
		case 1: op_format_ring(&in); break;
		case 2: op_post(&in); break;
		case 3: op_reap(&in); break;
		case 4: op_signal(&in); break;
		case 5: op_mailbox(&in); break;
		case 6: if (t->op_a) t->op_a(&in); break;
		case 7: fuzz_pump(); break;
		case 8:		/* QEMU restarts */
			hostd_ivshmem_close(&G.iv);
			if (!t->socket_transport && hostd_ivshmem_open(&G.iv))
				abort();
			seq = 0;
			break;
		case 11: if (t->op_b) t->op_b(&in); break;
		default: op_hc(&in); break;
		}
	}
	if (t->done)
		t->done();
}

/* ---- ctl output ------------------------------------------------------------- */

/* The longest line of @s (a text reply: one line per guest or device). */
static size_t longest_line(const char *s)
{
	size_t max = 0, n;

	for (; s && *s; s += n + (s[n] == '\n')) {
		n = strcspn(s, "\n");
		if (n > max)
			max = n;
	}
	return max;
}

static void ctl_check_one(const char *line, bool text)
{
	struct hostd_buf b = { 0 };
	size_t longest;

	daemon_ctl_exec(line, (struct hostd_guest *[]){ &G }, 1, &b);
	longest = text ? longest_line(b.s) : 0;
	if (b.len > FUZZ_CTL_REPLY_MAX || (b.s && strlen(b.s) != b.len) ||
	    longest > FUZZ_CTL_LINE_MAX) {
		fprintf(stderr, "ctl '%s': a reply of %zu bytes (at most %u), its longest line %zu (at most %u)\n",
			line, b.len, FUZZ_CTL_REPLY_MAX, longest,
			FUZZ_CTL_LINE_MAX);
		abort();
	}
	hostd_buf_free(&b);
}

void fuzz_ctl_check(void)
{
	ctl_check_one("stats fuzz", true);
	ctl_check_one("stats fuzz --json", false);
	ctl_check_one("list", true);
}

void fuzz_guest_report(FILE *f)
{
	struct hostd_buf b = { 0 };

	if (!ready)
		return;
	daemon_ctl_exec("stats fuzz", (struct hostd_guest *[]){ &G }, 1, &b);
	fprintf(f, "%s", b.s ? b.s : "");
	hostd_buf_free(&b);
}
