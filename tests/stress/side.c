// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* What both sides share: sleeping on notifications, and giving up. */
#include <time.h>

#include "stress.h"

/*
 * Work pending this long with no notification is a lost wakeup: a peer
 * preempted between publishing and signalling (a vCPU stolen for seconds
 * on a loaded CI machine, valgrind serialising threads) signals late, a
 * lost wakeup never does. Only that case waits so long.
 */
#define STRESS_LOST_MS 10000L

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

void stress_abort(struct stress_shared *sh)
{
	__atomic_store_n(&sh->abort, 1, __ATOMIC_RELEASE);
}

void stress_count_notifier(struct ioq_channel *ch, void *arg)
{
	struct stress_result *res = arg;

	(void)ch;
	res->notifier_runs++;
}

int stress_wait(const struct stress_cfg *cfg, struct ioq_channel *ch,
		struct stress_shared *sh, struct stress_result *res,
		int (*work)(void *), void *arg, int (*peer_alive)(void))
{
	long pending_since = 0;
	int strikes = 0;

	for (;;) {
		long t0 = now_ms();
		int rc;

		res->waits++;
		rc = ioq_channel_wait(ch, cfg->timeout_ms);
		if (rc < 0) {
			stress_fail(res, "ioq_channel_wait: %d", rc);
			return rc;
		}
		if (rc > 0)
			return 0;
		if (__atomic_load_n(&sh->abort, __ATOMIC_ACQUIRE) ||
		    (peer_alive && !peer_alive()))
			return -ECANCELED;
		/*
		 * Woken without the notifier running. Only a wait that ran
		 * its whole slice counts, and only full slices in a row with
		 * work pending for STRESS_LOST_MS after the first ended: a
		 * peer preempted between publishing and signalling ends them.
		 */
		if (now_ms() - t0 < cfg->timeout_ms * 9L / 10)
			return 0;
		if (!work(arg)) {
			strikes = 0;
			continue;
		}
		if (!strikes++)
			pending_since = now_ms();
		if (now_ms() - pending_since < STRESS_LOST_MS)
			continue;
		res->lost_wakeups++;
		stress_fail(res, "lost wakeup: work pending for %ld ms (%d slices of %d ms), no notification",
			    now_ms() - pending_since + cfg->timeout_ms, strikes,
			    cfg->timeout_ms);
		return 0;
	}
}
