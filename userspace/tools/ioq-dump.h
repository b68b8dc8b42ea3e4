/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* ioq-dump: a validated snapshot of a ring file, and its two printers. */
#ifndef VBUS_IOQ_DUMP_H
#define VBUS_IOQ_DUMP_H

#include <stdio.h>
#include <vbus/ioq.h>

#define DUMP_MAX_WARN 16

/*
 * Everything is printed from this private copy, taken once: the file may
 * be a live ring that the two sides keep changing, and a field read twice
 * could give two answers.
 */
struct dump {
	const char *path;
	__u64 size;			/* of the file */
	/* the copy: header, then (once it is valid) head->count descriptors */
	struct ioq_ring_head *head;
	struct ioq_ring_desc *desc;	/* head->ring */
	/* derived */
	__u32 idx_count[2];		/* tail - head of valid, inuse */
	__u32 owned[2];			/* slots owned by north, south */
	__u32 bad_owner;		/* sown neither 0 nor 1 */
	__u32 valid_set;		/* slots with the valid flag */
	__u32 misplaced;		/* owner disagrees with the indexes */
	unsigned int nwarn;
	char warn[DUMP_MAX_WARN][128];
};

/* ioq-dump-print.c */
void dump_print_text(FILE *f, const struct dump *d, int slots);
void dump_print_json(FILE *f, const struct dump *d, int slots);
void dump_json_string(FILE *f, const char *s);

#endif /* VBUS_IOQ_DUMP_H */
