// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Helgrind side of hg.h; see there for why the test annotates at all. */
#include "stress.h"
#include "hg.h"

#ifdef VBUS_HAVE_VALGRIND
#include <valgrind/helgrind.h>
#else
#define ANNOTATE_HAPPENS_BEFORE(obj) ((void)(obj))
#define ANNOTATE_HAPPENS_AFTER(obj) ((void)(obj))
#define VALGRIND_HG_DISABLE_CHECKING(a, l) ((void)(a), (void)(l))
#endif

void stress_hb_before(const void *obj)
{
	ANNOTATE_HAPPENS_BEFORE(obj);
	stress_drd_hb_before(obj);
}

void stress_hb_after(const void *obj)
{
	ANNOTATE_HAPPENS_AFTER(obj);
	stress_drd_hb_after(obj);
}

void stress_race_ok(void *addr, size_t len)
{
	VALGRIND_HG_DISABLE_CHECKING(addr, len);
	stress_drd_race_ok(addr, len);
}

/*
 * The ring's synchronisation words: the whole header (magic .. indexes and
 * the shm-signal flags; v6: the counters' lines too) and each descriptor's
 * valid/sown bytes. Descriptor
 * bodies (cookie, ptr, len) are data and stay checked.
 */
void stress_hg_ignore_ring(struct ioq *q)
{
	__u32 i;

	stress_race_ok(q->head_desc, IOQ_RING_SIZE(q->ver, 0));
	for (i = 0; i < q->count; i++)
		stress_race_ok(&q->ring[i].valid,
			       sizeof(struct ioq_ring_desc) -
			       VBUS_OFFSETOF(struct ioq_ring_desc, valid));
}
