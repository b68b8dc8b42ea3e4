// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* ioq-dump's output: a table for people, JSON for scripts. */
#include "ioq-dump.h"

/* Runs of equal ownership, printed as "first-last owner". */
#define TEXT_MAX_RUNS 32

static const char *owner_name(__u8 sown)
{
	return sown == 0 ? "north" : sown == 1 ? "south" : "invalid";
}

/* Length of the run of equal owners starting at slot @i. */
static __u32 run_len(const struct dump *d, __u32 i)
{
	__u32 j = i + 1;

	while (j < d->head->count && d->desc[j].sown == d->desc[i].sown)
		j++;
	return j - i;
}

void dump_print_text(FILE *f, const struct dump *d, int slots)
{
	const struct ioq_ring_head *h = d->head;
	__u32 i, n, runs = 0;

	fprintf(f, "ring %s (%llu bytes)\n", d->path,
		(unsigned long long)d->size);
	fprintf(f, "  magic 0x%08x  version %u  count %u  descriptors at "
		"offset %zu\n", h->magic, h->ver, h->count,
		(size_t)IOQ_RING_SIZE(h->ver, 0));
	fprintf(f, "signal magic 0x%08x  version %u\n", h->signal.magic,
		h->signal.ver);
	fprintf(f, "           enabled  pending  dirty\n");
	for (i = 0; i < 2; i++)
		fprintf(f, "  %-7s  %7u  %7u  %5u\n", i ? "south" : "north",
			h->signal.irq[i].enabled, h->signal.irq[i].pending,
			h->signal.irq[i].dirty);
	fprintf(f, "index          head        tail   in flight\n");
	for (i = 0; i < 2; i++)
		fprintf(f, "  %-5s  %10u  %10u  %10u\n", i ? "inuse" : "valid",
			h->idx[i].head, h->idx[i].tail, d->idx_count[i]);
	if (h->ver != IOQ_RING_VER_V5) {
		/* v6 hands descriptors over by the counters alone */
		fprintf(f, "slots: no ownership bytes in v%u (the counters "
			"say whose each slot is)\n", h->ver);
		goto slots;
	}
	fprintf(f, "slots: north-owned %u, south-owned %u, bad owner %u, "
		"valid flag set %u\n", d->owned[0], d->owned[1], d->bad_owner,
		d->valid_set);
	fprintf(f, "  ownership:");
	for (i = 0; i < h->count; i += n, runs++) {
		n = run_len(d, i);
		if (runs == TEXT_MAX_RUNS) {
			fprintf(f, " ...");
			break;
		}
		fprintf(f, "%s %u-%u %s", runs ? "," : "", i, i + n - 1,
			owner_name(d->desc[i].sown));
	}
	fprintf(f, "\n");
slots:
	if (slots) {
		fprintf(f, "slot   owner  valid              cookie"
			"                 ptr                 len\n");
		for (i = 0; i < h->count; i++)
			fprintf(f, "%5u  %-6s %5u  %#18llx  %#18llx  %#18llx\n",
				i, owner_name(d->desc[i].sown),
				d->desc[i].valid,
				(unsigned long long)d->desc[i].cookie,
				(unsigned long long)d->desc[i].ptr,
				(unsigned long long)d->desc[i].len);
	}
	fprintf(f, "warnings:%s\n", d->nwarn ? "" : " none");
	for (i = 0; i < d->nwarn; i++)
		fprintf(f, "  %s\n", d->warn[i]);
}

void dump_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			/* bytes, not code points: keeps any path valid JSON */
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_irq(FILE *f, const struct shm_signal_irq *q)
{
	fprintf(f, "{\"enabled\": %u, \"pending\": %u, \"dirty\": %u}",
		q->enabled, q->pending, q->dirty);
}

static void json_idx(FILE *f, const struct ioq_ring_idx *x, __u32 n)
{
	fprintf(f, "{\"head\": %u, \"tail\": %u, \"count\": %u}", x->head,
		x->tail, n);
}

void dump_print_json(FILE *f, const struct dump *d, int slots)
{
	const struct ioq_ring_head *h = d->head;
	__u32 i, n;

	fprintf(f, "{\"file\": ");
	dump_json_string(f, d->path);
	fprintf(f, ", \"ok\": true, \"size\": %llu, \"magic\": %u, "
		"\"version\": %u, \"count\": %u,\n", (unsigned long long)d->size,
		h->magic, h->ver, h->count);
	fprintf(f, " \"signal\": {\"magic\": %u, \"version\": %u, \"north\": ",
		h->signal.magic, h->signal.ver);
	json_irq(f, &h->signal.irq[0]);
	fprintf(f, ", \"south\": ");
	json_irq(f, &h->signal.irq[1]);
	fprintf(f, "},\n \"indexes\": {\"valid\": ");
	json_idx(f, &h->idx[0], d->idx_count[0]);
	fprintf(f, ", \"inuse\": ");
	json_idx(f, &h->idx[1], d->idx_count[1]);
	fprintf(f, "},\n \"slots\": {\"north_owned\": %u, \"south_owned\": %u, "
		"\"bad_owner\": %u, \"valid_set\": %u, \"misplaced\": %u, "
		"\"runs\": [", d->owned[0], d->owned[1], d->bad_owner,
		d->valid_set, d->misplaced);
	for (i = 0; i < h->count; i += n) {
		n = run_len(d, i);
		fprintf(f, "%s{\"first\": %u, \"last\": %u, \"owner\": \"%s\"}",
			i ? ", " : "", i, i + n - 1,
			owner_name(d->desc[i].sown));
	}
	fprintf(f, "]}");
	if (slots) {
		fprintf(f, ",\n \"descriptors\": [");
		for (i = 0; i < h->count; i++)
			fprintf(f, "%s\n  {\"slot\": %u, \"owner\": \"%s\", "
				"\"valid\": %u, \"cookie\": %llu, \"ptr\": %llu, "
				"\"len\": %llu}", i ? "," : "", i,
				owner_name(d->desc[i].sown), d->desc[i].valid,
				(unsigned long long)d->desc[i].cookie,
				(unsigned long long)d->desc[i].ptr,
				(unsigned long long)d->desc[i].len);
		fprintf(f, "]");
	}
	fprintf(f, ",\n \"warnings\": [");
	for (i = 0; i < d->nwarn; i++) {
		fprintf(f, "%s", i ? ", " : "");
		dump_json_string(f, d->warn[i]);
	}
	fprintf(f, "]}\n");
}
