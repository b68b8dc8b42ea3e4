// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Issue 26.3: an index that cannot be true faults the channel. The peer
 * (south, from its own mapping) writes a counter in a way no honest run
 * can produce; from then on every call on the channel fails with -EIO
 * and nothing more is published. Two corruptions, each on a fresh
 * channel:
 *
 *   tail rewound   the peer writes north's tail back to valid_head (a
 *                  counter only north writes): north counts with its
 *                  own shadow of the tail (3, issue 20.5), and its next
 *                  publish sees the rewrite; at 5e8fef9 ioq_count()
 *                  answered 0 and the push published.
 *   head behind    the peer moves valid_head behind inuse_head (it
 *                  "un-consumes" what north has already reaped): at
 *                  5e8fef9 ioq_count() answered 3 and the push published.
 */
#include "peer.h"
#include <stddef.h>

#define OFF(f) offsetof(struct ioq_ring_head_v6, f)

static struct ioq_ring_head_v6 *v6(struct ioq *q)
{
	return (struct ioq_ring_head_v6 *)q->head_desc;
}

static void push(struct ioq *q, int n)
{
	struct ioq_ring_desc d[4] = { { .cookie = 1 } };

	CHECK(ioq_push_bulk(q, d, (unsigned int)n, 0) == n, "push %d", n);
}

/* Everything after the fault: -EIO, and the tail stays where it is. */
static void all_faulted(struct ioq_channel *n, const char *what)
{
	struct ioq *q = ioq_channel_ioq(n);
	struct ioq_ring_desc d = { .cookie = 2 };
	struct ioq_iterator it;
	__u32 tail = __atomic_load_n(&v6(q)->tail, __ATOMIC_ACQUIRE);
	__u32 pos;

	CHECK(shm_signal_faulted(q->signal), "%s: not faulted", what);
	CHECK(ioq_count(q, ioq_idx_consume) == -EIO, "%s: count", what);
	CHECK(ioq_count(q, ioq_idx_reap) == -EIO, "%s: count reap", what);
	CHECK(ioq_push_bulk(q, &d, 1, 0) == -EIO, "%s: push_bulk", what);
	CHECK(ioq_post_begin(q, 1, &pos) == -EIO, "%s: post_begin", what);
	CHECK(ioq_reap_begin(q, 1, &pos) == -EIO, "%s: reap_begin", what);
	ioq_iter_init(q, &it, ioq_idx_push, 0);
	ioq_iter_seek(&it, ioq_seek_tail, 0, 0);
	CHECK(ioq_iter_push(&it, 0) == -EIO, "%s: iter_push", what);
	CHECK(ioq_signal(q, 0) == -EIO, "%s: signal", what);
	CHECK(ioq_channel_wait(n, 0) == -EIO, "%s: wait", what);
	CHECK(__atomic_load_n(&v6(q)->tail, __ATOMIC_ACQUIRE) == tail,
	      "%s: a push on the faulted channel published", what);
}

int main(void)
{
	struct ioq_channel_fds fds;
	struct ioq_ring_desc out[4] = { { .cookie = 0 } };
	struct ioq_channel *n;
	struct ioq *q;
	__u32 tail;
	int c, rc;

	/* tail rewound: only north's next publish can tell */
	CHECK(ioq_channel_create(&n, 16, NULL) == 0, "create");
	ioq_channel_fds(n, &fds);
	q = ioq_channel_ioq(n);
	push(q, 3);
	peer_write_u32(fds.shm_fd, OFF(tail), 0);	/* = valid_head */
	c = ioq_count(q, ioq_idx_consume);
	CHECK(c == 3, "tail rewound: count %d (want 3, north's own)", c);
	rc = ioq_push_bulk(q, out, 1, 0);
	tail = __atomic_load_n(&v6(q)->tail, __ATOMIC_ACQUIRE);
	CHECK(rc == -EIO && tail == 0, "tail rewound: count %d, then the push "
	      "gave %d and the tail is %u (want -EIO, 0)", c, rc, tail);
	all_faulted(n, "tail rewound");
	printf("tail rewound: count %d, push -EIO, channel faulted\n", c);
	ioq_channel_destroy(n);

	/* valid_head behind inuse_head: a query sees it */
	CHECK(ioq_channel_create(&n, 16, NULL) == 0, "create");
	ioq_channel_fds(n, &fds);
	q = ioq_channel_ioq(n);
	push(q, 4);
	peer_write_u32(fds.shm_fd, OFF(valid_head), 4);	/* consumed: fine */
	CHECK(ioq_reap_burst(q, out, 4, 0) == 4, "reap");
	peer_write_u32(fds.shm_fd, OFF(valid_head), 1);	/* behind inuse */
	c = ioq_count(q, ioq_idx_consume);
	rc = ioq_push_bulk(q, out, 1, 0);
	CHECK(c == -EIO && rc == -EIO, "valid head behind inuse head: count "
	      "%d, push %d (want -EIO, -EIO)", c, rc);
	all_faulted(n, "head behind");
	printf("valid head behind inuse head: count -EIO, channel faulted\n");
	ioq_channel_destroy(n);

	printf("ok: impossible indexes fault the channel\n");
	return 0;
}
