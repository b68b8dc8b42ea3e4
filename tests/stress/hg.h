/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Happens-before annotations for valgrind's race detectors.
 *
 * The ring hands descriptors over with single-copy accesses and barriers
 * (liburcu volatile + fences, or C11 atomics in the TSan build). Helgrind
 * and DRD only know the synchronisation of pthreads and a few syscalls:
 * they cannot see an edge made of plain (or atomic) loads and stores, so
 * every descriptor hand-over looks like a race to them. The test therefore
 * (a) tells them the ring's own control words (indexes, ownership bytes,
 * signal flags) are synchronisation variables, racy by design, and (b) marks
 * each hand-over with a happens-before edge at exactly the point the ring
 * protocol defines one: after the writer fills a descriptor and before it
 * publishes it, and after the reader's claim saw it (ioq_consume_begin,
 * ioq_reap_begin; --iter: ioq_iter_owned). The
 * payload stays checked, so a side that touches a buffer it does not own is
 * still reported.
 *
 * The edges are tagged with the payload slot's address, not the
 * descriptor's: each side maps the ring on its own, so the same descriptor
 * has a different address on each side (for the same reason the tools
 * cannot check the descriptor bodies: they see two unrelated addresses).
 *
 * Outside valgrind each call is a few no-op instructions. These live in the
 * test, never in core/.
 */
#ifndef VBUS_STRESS_HG_H
#define VBUS_STRESS_HG_H

#include <stddef.h>

void stress_hb_before(const void *obj);
void stress_hb_after(const void *obj);

/* The two hand-over directions of payload slot @slot. */
#define STRESS_HB_POST(slot) ((const char *)(slot))
#define STRESS_HB_DONE(slot) ((const char *)(slot) + 1)
void stress_race_ok(void *addr, size_t len);

/* drd.c: the same requests for DRD (its header clashes with helgrind's) */
void stress_drd_hb_before(const void *obj);
void stress_drd_hb_after(const void *obj);
void stress_drd_race_ok(void *addr, size_t len);

#endif /* VBUS_STRESS_HG_H */
