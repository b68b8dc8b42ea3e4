// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One device queue (devq.h, struct hostd_devq), one test per promise,
 * over a real ring in local memory: the guest is a north ioq (core/) on
 * the same ring, its doorbell and the device's signal are counters.
 *   - unmask looks again: a post that landed while masked (no doorbell)
 *     is "more arrived"
 *   - unmask on an empty ring says sleep, and the guest's next post rings
 *   - the look counts only beyond what the device holds
 *   - a drain stops at its budget, hands back with one store, one signal
 *   - a drain callback that stops leaves that descriptor posted
 *   - the first drain after a sleep teaches the poll window, others don't
 *   - a guest that rewrites valid's head makes the hand-back fail
 *   - the poll window spins on the ring: it returns once the guest
 *     posts, says "unmask" once the window closes, and yields at once
 *     to another ready fd or queued kick on the loop (its fairness rule)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "dev.h"
#include "devq.h"

#define COUNT 8

struct fx {
	struct ioq_ring_head *head;
	struct hostd_dev dev;		/* its fault flag and loop */
	struct hostd_loop loop;		/* what the poll window yields to */
	struct hostd_shm shm;
	struct shm_signal south_sig, north_sig;
	struct ioq north;		/* the guest */
	struct hostd_devq q;		/* the device's */
	unsigned int doorbells;		/* north -> south injects */
	unsigned int signals;		/* south -> north injects */
	unsigned int seen;		/* descriptors a drain callback saw */
	unsigned int stop_at;		/* the callback stops at this one */
};

static struct fx *fx_of(struct shm_signal *s, size_t off)
{
	return (struct fx *)((char *)s - off);
}

static int north_inject(struct shm_signal *s)
{
	fx_of(s, offsetof(struct fx, north_sig))->doorbells++;
	return 0;
}

static int south_inject(struct shm_signal *s)
{
	fx_of(s, offsetof(struct fx, south_sig))->signals++;
	return 0;
}

static const struct shm_signal_ops north_ops = { .inject = north_inject };
static const struct shm_signal_ops south_ops = { .inject = south_inject };

static void on_signal(struct hostd_devq *q)
{
	(void)q;
}

static int setup(void **state)
{
	size_t len = IOQ_HEAD_DESC_SIZE(COUNT);
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->head = aligned_alloc(IOQ_RING_LINE, len);
	assert_non_null(f->head);
	memset(f->head, 0, len);
	assert_int_equal(ioq_ring_format(f->head, COUNT), 0);
	shm_signal_init(&f->north_sig, shm_locality_north, &north_ops,
			&f->head->signal);
	assert_int_equal(ioq_init_ver(&f->north, NULL, ioq_locality_north,
				      f->head, &f->north_sig, COUNT,
				      IOQ_RING_VER_V6), 0);
	/* the guest hears completions: its side unmasked */
	ioq_notify_enable(&f->north, 0);
	shm_signal_init(&f->south_sig, shm_locality_south, &south_ops,
			&f->head->signal);
	hostd_list_init(&f->dev.shms);
	assert_int_equal(hostd_loop_init(&f->loop), 0);
	f->dev.env.loop = &f->loop;
	f->shm = (struct hostd_shm){
		.dev = &f->dev, .len = (__u32)len, .ptr = f->head,
		.signal = &f->south_sig,
		.sigoff = offsetof(struct ioq_ring_head, signal),
	};
	assert_int_equal(hostd_devq_attach(&f->q, &f->shm, COUNT, on_signal),
			 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	hostd_devq_detach(&f->q);
	hostd_loop_fini(&f->loop);
	free(f->head);
	free(f);
	return 0;
}

/* The guest posts @n descriptors, cookie = position; @ring: its doorbell */
static void guest_post(struct fx *f, unsigned int n, bool ring)
{
	unsigned int i;
	__u32 pos;

	assert_int_equal(ioq_post_begin(&f->north, n, &pos), (int)n);
	for (i = 0; i < n; i++)
		ioq_desc(&f->north, pos + i)->cookie = pos + i;
	assert_int_equal(ioq_post_end(&f->north, n,
				      ring ? IOQ_ITER_AUTOUPDATE : 0), 0);
}

/* completions the guest can reap */
static int guest_completions(struct fx *f)
{
	__u32 pos;

	return ioq_reap_begin(&f->north, COUNT, &pos);
}

static enum hostd_devq_verdict count_one(struct hostd_devq *q,
					 struct ioq_ring_desc *desc, void *arg)
{
	struct fx *f = arg;

	(void)q;
	(void)desc;
	if (f->seen == f->stop_at)
		return HOSTD_DEVQ_STOP;
	f->seen++;
	return HOSTD_DEVQ_CONSUMED;
}

static void unmask_sees_a_post_made_while_masked(void **state)
{
	struct fx *f = *state;

	guest_post(f, 1, true);		/* masked: no doorbell */
	assert_int_equal(f->doorbells, 0);
	assert_true(hostd_devq_unmask(&f->q, 0));
	assert_true(f->q.unmasked);
}

static void unmask_on_empty_sleeps_and_the_next_post_rings(void **state)
{
	struct fx *f = *state;

	assert_false(hostd_devq_unmask(&f->q, 0));
	guest_post(f, 1, true);
	assert_int_equal(f->doorbells, 1);
}

static void the_look_counts_beyond_what_is_held(void **state)
{
	struct fx *f = *state;
	__u32 pos;

	guest_post(f, 2, false);
	assert_int_equal(hostd_devq_claim(&f->q, 2, &pos), 2);
	assert_false(hostd_devq_unmask(&f->q, 2));
	assert_true(hostd_devq_unmask(&f->q, 1));
}

static void drain_stops_at_budget_one_store_one_signal(void **state)
{
	struct fx *f = *state;

	f->stop_at = COUNT;
	guest_post(f, 5, false);
	assert_int_equal(hostd_devq_drain(&f->q, 3, count_one, f,
					  HOSTD_DEVQ_SIGNAL), 3);
	assert_int_equal(f->seen, 3);
	assert_int_equal(f->signals, 1);
	assert_int_equal(guest_completions(f), 3);
	/* the rest is still posted */
	assert_true(hostd_devq_more(&f->q, 1));
}

static void a_stopped_descriptor_stays_posted(void **state)
{
	struct fx *f = *state;
	__u32 pos;

	f->stop_at = 1;
	guest_post(f, 3, false);
	assert_int_equal(hostd_devq_drain(&f->q, COUNT, count_one, f,
					  HOSTD_DEVQ_SIGNAL), 1);
	assert_int_equal(guest_completions(f), 1);
	assert_int_equal(hostd_devq_claim(&f->q, COUNT, &pos), 2);
	assert_int_equal(hostd_devq_desc(&f->q, pos)->cookie, 1);
}

static void no_signal_for_an_empty_batch(void **state)
{
	struct fx *f = *state;

	f->stop_at = COUNT;
	assert_int_equal(hostd_devq_drain(&f->q, COUNT, count_one, f,
					  HOSTD_DEVQ_SIGNAL), 0);
	assert_int_equal(f->signals, 0);
}

static void the_drain_after_a_sleep_teaches_the_window(void **state)
{
	struct fx *f = *state;

	f->stop_at = COUNT;
	f->q.window.cap_ns = 60ULL * 1000000000ULL;	/* any gap fits */
	guest_post(f, 1, false);
	assert_int_equal(hostd_devq_drain(&f->q, COUNT, count_one, f, 0), 1);
	assert_int_equal(f->q.window.grows, 0);	/* no sleep before it */
	assert_false(hostd_devq_unmask(&f->q, 0));	/* asleep */
	guest_post(f, 1, true);
	assert_int_equal(hostd_devq_drain(&f->q, COUNT, count_one, f, 0), 1);
	assert_int_equal(f->q.window.grows, 1);
	assert_int_equal(f->q.window.ns, HOSTD_POLL_WINDOW_START_NS);
	guest_post(f, 1, false);		/* polled, not slept */
	assert_int_equal(hostd_devq_drain(&f->q, COUNT, count_one, f, 0), 1);
	assert_int_equal(f->q.window.grows, 1);
}

static void a_rewritten_head_fails_the_hand_back(void **state)
{
	struct fx *f = *state;
	struct ioq_ring_head_v6 *h = (struct ioq_ring_head_v6 *)f->head;

	f->stop_at = COUNT;
	guest_post(f, 2, false);
	/* the guest moves the device's counter under it */
	VBUS_WRITE(h->valid_head, 1);
	assert_int_equal(hostd_devq_drain(&f->q, COUNT, count_one, f,
					  HOSTD_DEVQ_SIGNAL), -1);
	assert_int_equal(f->signals, 0);
}

/* A window of @ns opened by a batch just now. */
static void window_open(struct fx *f, __u64 ns)
{
	f->q.window.cap_ns = f->q.window.ns = ns;
	f->q.last_ns = hostd_now_ns();
}

/* An idle ring inside its window: the spin ends only when it closes. */
static void polling_spins_until_the_window_closes(void **state)
{
	struct fx *f = *state;

	window_open(f, 2000000);	/* 2 ms */
	assert_false(hostd_devq_polling(&f->q));
	assert_true(hostd_now_ns() - f->q.last_ns >= f->q.window.ns);
}

static void *post_one(void *arg)
{
	guest_post(arg, 1, false);
	return NULL;
}

/* A post during the spin ends it: "come back", with the post there. */
static void polling_returns_when_the_guest_posts(void **state)
{
	struct fx *f = *state;
	pthread_t t;

	window_open(f, 10ULL * 1000000000ULL);
	assert_int_equal(pthread_create(&t, NULL, post_one, f), 0);
	assert_true(hostd_devq_polling(&f->q));
	assert_true(hostd_devq_more(&f->q, 0));
	pthread_join(t, NULL);
}

static void nop_fd(void *arg, int fd, __u32 events)
{
	(void)arg;
	(void)fd;
	(void)events;
}

/* Fairness: another fd of the loop ready ends the spin, ring empty. */
static void polling_yields_to_a_ready_fd(void **state)
{
	struct fx *f = *state;
	int efd = hostd_eventfd_new();

	assert_true(efd >= 0);
	assert_int_equal(hostd_loop_add(&f->loop, efd, EPOLLIN, nop_fd, NULL),
			 0);
	hostd_eventfd_write(efd);
	window_open(f, 2ULL * 1000000000ULL);	/* a mutant's bound */
	assert_true(hostd_devq_polling(&f->q));
	assert_false(hostd_devq_more(&f->q, 0));
	hostd_loop_del(&f->loop, efd);
	close(efd);
}

static void nop_soon(void *arg)
{
	(void)arg;
}

/* Fairness: another device's kick (soon work) ends the spin too. */
static void polling_yields_to_a_queued_kick(void **state)
{
	struct fx *f = *state;
	struct hostd_loop_soon other = { .fn = nop_soon };

	hostd_loop_soon(&f->loop, &other);
	window_open(f, 2ULL * 1000000000ULL);	/* a mutant's bound */
	assert_true(hostd_devq_polling(&f->q));
	assert_false(hostd_devq_more(&f->q, 0));
	hostd_loop_soon_cancel(&other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			unmask_sees_a_post_made_while_masked, setup, teardown),
		cmocka_unit_test_setup_teardown(
			unmask_on_empty_sleeps_and_the_next_post_rings, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			the_look_counts_beyond_what_is_held, setup, teardown),
		cmocka_unit_test_setup_teardown(
			drain_stops_at_budget_one_store_one_signal, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			a_stopped_descriptor_stays_posted, setup, teardown),
		cmocka_unit_test_setup_teardown(
			no_signal_for_an_empty_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(
			the_drain_after_a_sleep_teaches_the_window, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			a_rewritten_head_fails_the_hand_back, setup, teardown),
		cmocka_unit_test_setup_teardown(
			polling_spins_until_the_window_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(
			polling_returns_when_the_guest_posts, setup, teardown),
		cmocka_unit_test_setup_teardown(
			polling_yields_to_a_ready_fd, setup, teardown),
		cmocka_unit_test_setup_teardown(
			polling_yields_to_a_queued_kick, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
