// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ioq-dump: print a ring from a channel file (ioq_channel_create(path)):
 * header, indexes, per-slot ownership, signal flags.
 *
 *   ioq-dump [--json] [--slots] [--strict] FILE
 *
 * The file is untrusted: every field is validated before it is used, in
 * the order that gives the clearest message (is it a ring at all, which
 * version, does the size fit), and any failure is one line on stderr and
 * exit 1, never a crash. A file that shrinks while we read it would raise
 * SIGBUS on the mapping; that is caught and reported the same way.
 *
 * Exit: 0 ok; 1 not a valid ring (or usage/IO error); 2 with --strict when
 * the ring state breaks the protocol's invariants (warnings). A live ring
 * can show such a state for an instant, hence only with --strict.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ioq-dump.h"

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

__attribute__((format(printf, 2, 3)))
static void dump_warn(struct dump *d, const char *fmt, ...)
{
	va_list ap;

	if (d->nwarn >= DUMP_MAX_WARN)
		return;
	va_start(ap, fmt);
	vsnprintf(d->warn[d->nwarn++], sizeof(d->warn[0]), fmt, ap);
	va_end(ap);
}

/* Copy @len bytes out of the mapping; false if the file shrank under us. */
static int copy_guarded(void *dst, const void *src, size_t len)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	volatile int ok = 0;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old);
	if (!sigsetjmp(bus_jmp, 1)) {
		memcpy(dst, src, len);
		ok = 1;
	}
	sigaction(SIGBUS, &old, NULL);
	return ok;
}

/*
 * Validate the copied header against the file size. Returns NULL or the
 * reason the file is not a usable ring.
 */
static const char *check_header(const struct dump *d, char *buf, size_t n)
{
	const struct ioq_ring_head *h = d->head;

	if (h->magic != IOQ_RING_MAGIC) {
		snprintf(buf, n, "bad ring magic 0x%08x (expected 0x%08x): "
			 "not an IOQ ring", h->magic, IOQ_RING_MAGIC);
		return buf;
	}
	if (h->ver != IOQ_RING_VER_V5 && h->ver != IOQ_RING_VER_V6) {
		snprintf(buf, n, "unsupported ring version %u (expected "
			 "version 5 or 6%s)", h->ver,
			 h->ver == 4 ? "; version 4 is the 2009 layout" : "");
		return buf;
	}
	if (h->signal.magic != SHM_SIGNAL_MAGIC) {
		snprintf(buf, n, "bad shm-signal magic 0x%08x (expected "
			 "0x%08x)", h->signal.magic, SHM_SIGNAL_MAGIC);
		return buf;
	}
	if (h->signal.ver != SHM_SIGNAL_VER) {
		snprintf(buf, n, "unsupported shm-signal version %u "
			 "(expected %u)", h->signal.ver,
			 (unsigned int)SHM_SIGNAL_VER);
		return buf;
	}
	if (!ioq_count_valid(h->count)) {
		snprintf(buf, n, "bad descriptor count %u (must be a power of "
			 "two, 1 .. %u)", h->count, IOQ_RING_MAX_COUNT);
		return buf;
	}
	if (d->size < IOQ_RING_SIZE(h->ver, (__u64)h->count)) {
		snprintf(buf, n, "truncated: %u descriptors need %llu bytes, "
			 "the file has %llu", h->count,
			 (unsigned long long)IOQ_RING_SIZE(h->ver,
							   (__u64)h->count),
			 (unsigned long long)d->size);
		return buf;
	}
	/* the library's check is what a peer attaching would run */
	if (ioq_ring_check(h, d->size, 0) != (long)h->count) {
		snprintf(buf, n, "rejected by ioq_ring_check()");
		return buf;
	}
	return NULL;
}

/*
 * v6: the counters (one line each) go into the v5 view the printers and
 * analyse() read: valid = [valid_head, tail), inuse = [inuse_head, tail).
 * v6 has no ownership bytes: analyse() skips them.
 */
static const char *load_v6(struct dump *d, const void *map)
{
	struct ioq_ring_head_v6 v6;
	struct ioq_ring_head *h = d->head;

	if (!copy_guarded(&v6, map, sizeof(v6)) ||
	    !copy_guarded(d->desc, (const char *)map + sizeof(v6),
			  h->count * sizeof(*d->desc)))
		return "file shrank while reading it";
	memset(h->idx, 0, sizeof(h->idx));
	h->idx[ioq_idx_consume].head = v6.valid_head;
	h->idx[ioq_idx_consume].tail = v6.tail;
	h->idx[ioq_idx_reap].head = v6.inuse_head;
	h->idx[ioq_idx_reap].tail = v6.tail;
	return NULL;
}

/*
 * Open, map read-only, snapshot, validate. Returns NULL or an error
 * message (in @buf).
 */
static const char *load(struct dump *d, char *buf, size_t n)
{
	struct ioq_ring_head *h;
	struct stat st;
	size_t maplen;
	void *map;
	const char *err = NULL;
	/* O_NONBLOCK: a FIFO must not hang us before fstat() says "not a file" */
	int fd = open(d->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		snprintf(buf, n, "cannot open: %s", strerror(errno));
		return buf;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(buf, n, "not a regular file");
		return buf;
	}
	d->size = (__u64)st.st_size;
	if (d->size < sizeof(struct ioq_ring_head)) {
		close(fd);
		snprintf(buf, n, "too small for a ring header: %llu bytes, "
			 "need at least %zu", (unsigned long long)d->size,
			 sizeof(struct ioq_ring_head));
		return buf;
	}
	/* never more than the largest ring a peer may have: bounds the copy */
	maplen = d->size < IOQ_HEAD_DESC_SIZE((__u64)IOQ_RING_MAX_COUNT) ?
		 (size_t)d->size : IOQ_HEAD_DESC_SIZE((size_t)IOQ_RING_MAX_COUNT);
	map = mmap(NULL, maplen, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		snprintf(buf, n, "cannot map: %s", strerror(errno));
		return buf;
	}

	d->head = malloc(sizeof(*d->head));
	if (!d->head) {
		err = "out of memory";
		goto out;
	}
	if (!copy_guarded(d->head, map, sizeof(*d->head))) {
		err = "file shrank while reading it";
		goto out;
	}
	err = check_header(d, buf, n);
	if (err)
		goto out;
	/* count is validated: the size is bounded by IOQ_RING_MAX_COUNT */
	h = realloc(d->head, IOQ_HEAD_DESC_SIZE((size_t)d->head->count));
	if (!h) {
		err = "out of memory";
		goto out;
	}
	d->head = h;
	d->desc = h->ring;
	if (h->ver == IOQ_RING_VER_V6)
		err = load_v6(d, map);
	else if (!copy_guarded(d->desc, (const char *)map + sizeof(*h),
			       h->count * sizeof(*d->desc)))
		err = "file shrank while reading it";
out:
	munmap(map, maplen);
	return err;
}

/*
 * What the usage protocol (core/ioq.c) says must hold, checked on the
 * snapshot: in-flight counts within the ring, the two tails together, and
 * each slot owned by the side the indexes say.
 */
static void analyse(struct dump *d)
{
	const struct ioq_ring_idx *valid = &d->head->idx[ioq_idx_consume];
	const struct ioq_ring_idx *inuse = &d->head->idx[ioq_idx_reap];
	__u32 count = d->head->count, mask = count - 1, i;
	int consistent = 1;

	for (i = 0; i < 2; i++) {
		const struct ioq_ring_idx *x = &d->head->idx[i];
		const char *name = i ? "inuse" : "valid";

		d->idx_count[i] = x->tail - x->head;
		if (d->idx_count[i] > count) {
			dump_warn(d, "%s index out of range: tail %u - head %u "
				  "> %u", name, x->tail, x->head, count);
			consistent = 0;
		}
		if (x->reserved_full || x->reserved[0] || x->reserved[1] ||
		    x->reserved[2])
			dump_warn(d, "%s index: reserved bytes not zero", name);
	}
	if (valid->tail != inuse->tail)
		dump_warn(d, "valid.tail %u != inuse.tail %u (north posts on "
			  "both)", valid->tail, inuse->tail);
	if ((__u32)(valid->head - inuse->head) > d->idx_count[1]) {
		dump_warn(d, "valid.head %u outside inuse [%u, %u)",
			  valid->head, inuse->head, inuse->tail);
		consistent = 0;
	}
	if (d->head->reserved || d->head->signal.reserved[0] ||
	    d->head->signal.reserved[1])
		dump_warn(d, "header: reserved bytes not zero");
	for (i = 0; i < 2; i++) {
		const struct shm_signal_irq *q = &d->head->signal.irq[i];

		if (q->enabled > 1 || q->pending > 1 || q->dirty > 1)
			dump_warn(d, "signal %s: flag values other than 0/1",
				  i ? "south" : "north");
	}

	for (i = 0; i < count; i++) {
		const struct ioq_ring_desc *x = &d->desc[i];
		__u32 pos = inuse->head + ((i - inuse->head) & mask);
		int want;

		if (x->sown > 1)
			d->bad_owner++;
		else
			d->owned[x->sown]++;
		d->valid_set += x->valid != 0;
		if (!consistent || x->sown > 1 || d->head->ver != IOQ_RING_VER_V5)
			continue;
		/*
		 * pos: this slot's position in the current lap, counted from
		 * inuse.head. Posted and not consumed ([valid.head,
		 * valid.tail)) is south's; everything else is north's.
		 */
		want = (__u32)(pos - valid->head) < d->idx_count[0];
		d->misplaced += x->sown != want;
	}
	if (d->bad_owner)
		dump_warn(d, "%u slots with an owner byte other than 0/1",
			  d->bad_owner);
	if (d->misplaced)
		dump_warn(d, "%u slots owned by the side the indexes do not "
			  "say", d->misplaced);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ioq-dump [--json] [--slots] [--strict] FILE\n"
		"  print an IOQ ring file (header, indexes, ownership, signal)\n"
		"  --json    machine-readable output\n"
		"  --slots   list every descriptor\n"
		"  --strict  exit 2 when the ring state breaks an invariant\n");
	exit(1);
}

int main(int argc, char **argv)
{
	struct dump d = { 0 };
	int json = 0, slots = 0, strict = 0, i;
	const char *err;
	char buf[256];

	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--slots"))
			slots = 1;
		else if (!strcmp(argv[i], "--strict"))
			strict = 1;
		else if (!strcmp(argv[i], "--"))
			{ i++; break; }
		else
			usage();
	}
	if (i != argc - 1)
		usage();
	d.path = argv[i];

	err = load(&d, buf, sizeof(buf));
	if (err) {
		fprintf(stderr, "ioq-dump: %s: %s\n", d.path, err);
		if (json) {
			printf("{\"file\": ");
			dump_json_string(stdout, d.path);
			printf(", \"ok\": false, \"error\": ");
			dump_json_string(stdout, err);
			printf("}\n");
		}
		free(d.head);
		return 1;
	}
	analyse(&d);
	if (json)
		dump_print_json(stdout, &d, slots);
	else
		dump_print_text(stdout, &d, slots);
	free(d.head);
	if (fflush(stdout))
		return 1;
	return strict && d.nwarn ? 2 : 0;
}
