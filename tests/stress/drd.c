// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* DRD side of hg.h (drd.h and helgrind.h define the same macro names). */
#include "hg.h"

#ifdef VBUS_HAVE_VALGRIND
#include <valgrind/drd.h>
#else
#define ANNOTATE_HAPPENS_BEFORE(obj) ((void)(obj))
#define ANNOTATE_HAPPENS_AFTER(obj) ((void)(obj))
#define ANNOTATE_BENIGN_RACE_SIZED(a, l, d) ((void)(a), (void)(l))
#endif

void stress_drd_hb_before(const void *obj)
{
	ANNOTATE_HAPPENS_BEFORE(obj);
}

void stress_drd_hb_after(const void *obj)
{
	ANNOTATE_HAPPENS_AFTER(obj);
}

void stress_drd_race_ok(void *addr, size_t len)
{
	ANNOTATE_BENIGN_RACE_SIZED(addr, len, "ring control word");
}
