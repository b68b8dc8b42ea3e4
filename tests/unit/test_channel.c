// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libioq channels (userspace/lib/channel*.c): regions, eventfd doorbells,
 * attach validation, fd passing, and the push/consume/reap protocol run
 * end to end between two threads and between two processes. A lost
 * wakeup shows up as a side that waits WAIT_LIMIT_MS without progress.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vbus/ioq_channel.h>

/*
 * libioq 1's deprecated names (docs/libioq.md, "The next SONAME") keep
 * compiling with the values of the role names until libioq.so.2; the rest
 * of the tree uses only the role names.
 */
_Static_assert(ioq_idxtype_valid == ioq_idx_consume &&
	       ioq_idxtype_inuse == ioq_idx_reap &&
	       ioq_idxtype_both == ioq_idx_push &&
	       ioq_idxtype_invalid == ioq_idx_invalid &&
	       IOQ_ITER_NOFLIPOWNER == IOQ_ITER_REAP,
	       "deprecated ring names");

/* long: a peer whose vCPU a loaded CI machine steals for seconds is no hang */
#define WAIT_LIMIT_MS 20000

struct counter {
	int calls;
};

static void count_notify(struct ioq_channel *ch, void *arg)
{
	(void)ch;
	((struct counter *)arg)->calls++;
}

/* north: push @cookie on both indexes at the tail */
static int post(struct ioq_channel *ch, __u64 cookie, int flags)
{
	struct ioq_iterator it;
	int err;

	err = ioq_iter_init(ioq_channel_ioq(ch), &it, ioq_idx_push, flags);
	if (!err)
		err = ioq_iter_seek(&it, ioq_seek_tail, 0, 0);
	if (err)
		return err;
	if (ioq_remain(ioq_channel_ioq(ch), ioq_idx_reap) > 0)
		it.desc->cookie = cookie;
	return ioq_iter_push(&it, 0);
}

/* south: pop the head of valid, returning its cookie */
static int consume(struct ioq_channel *ch, __u64 *cookie, int flags)
{
	struct ioq_iterator it;
	int err;

	err = ioq_iter_init(ioq_channel_ioq(ch), &it, ioq_idx_consume,
			    flags);
	if (!err)
		err = ioq_iter_seek(&it, ioq_seek_head, 0, 0);
	if (err)
		return err;
	/* counted first: once the index says so, the slot must be ours */
	err = ioq_count(ioq_channel_ioq(ch), ioq_idx_consume);
	if (err <= 0)
		return err ? err : -ENOENT;
	if (!ioq_iter_owned(&it))
		return -EPROTO;
	*cookie = it.desc->cookie;
	it.desc->len = ~*cookie;	/* the completion north checks */
	return ioq_iter_pop(&it, 0);
}

/* north: reap the head of inuse */
static int reap(struct ioq_channel *ch, __u64 *cookie, __u64 *len)
{
	struct ioq_iterator it;
	int err;

	err = ioq_iter_init(ioq_channel_ioq(ch), &it, ioq_idx_reap,
			    IOQ_ITER_REAP);
	if (!err)
		err = ioq_iter_seek(&it, ioq_seek_head, 0, 0);
	if (err)
		return err;
	if (!ioq_iter_owned(&it))
		return -ENOENT;
	*cookie = it.desc->cookie;
	*len = it.desc->len;
	return ioq_iter_pop(&it, 0);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Wait for the peer; -ETIMEDOUT when WAIT_LIMIT_MS pass without anything
 * to do (a spurious doorbell returns 0 and is fine if work shows up).
 */
static int wait_for(struct ioq_channel *ch, int (*ready)(struct ioq_channel *),
		    long long *idle_since)
{
	int rc = ioq_channel_wait(ch, 100);

	if (rc < 0)
		return rc;
	if (ready(ch) || rc > 0) {
		*idle_since = now_ms();
		return 0;
	}
	return now_ms() - *idle_since > WAIT_LIMIT_MS ? -ETIMEDOUT : 0;
}

static int has_valid(struct ioq_channel *ch)
{
	return ioq_count(ioq_channel_ioq(ch), ioq_idx_consume) > 0;
}

static int has_completion(struct ioq_channel *ch)
{
	struct ioq_iterator it;

	return !ioq_iter_init(ioq_channel_ioq(ch), &it, ioq_idx_reap, 0) &&
	       !ioq_iter_seek(&it, ioq_seek_head, 0, 0) &&
	       ioq_count(ioq_channel_ioq(ch), ioq_idx_reap) > 0 &&
	       ioq_iter_owned(&it);
}

/* The south loop: consume @msgs messages in order; 0 or -errno. */
static int run_south(struct ioq_channel *ch, __u64 msgs)
{
	long long idle = now_ms();
	__u64 next = 0, c;
	int rc, batch;

	ioq_notify_enable(ioq_channel_ioq(ch), 0);
	while (next < msgs) {
		for (batch = 0; (rc = consume(ch, &c, 0)) == 0; batch++) {
			if (c != next)
				return -EBADMSG;
			next++;
		}
		if (rc != -ENOENT)
			return rc;
		/* one doorbell per drained batch */
		if (batch && (rc = ioq_signal(ioq_channel_ioq(ch), 0)))
			return rc;
		if (next < msgs && !batch &&
		    (rc = wait_for(ch, has_valid, &idle)))
			return rc;
	}
	return 0;
}

/* The north loop: post @msgs messages, reap their completions in order. */
static int run_north(struct ioq_channel *ch, __u64 msgs)
{
	long long idle = now_ms();
	__u64 posted = 0, reaped = 0, c, len;
	int rc, progress;

	ioq_notify_enable(ioq_channel_ioq(ch), 0);
	while (reaped < msgs) {
		progress = 0;
		while ((rc = reap(ch, &c, &len)) == 0) {
			if (c != reaped || len != ~c)
				return -EBADMSG;
			reaped++;
			progress++;
		}
		if (rc != -ENOENT)
			return rc;
		while (posted < msgs &&
		       !ioq_full(ioq_channel_ioq(ch), ioq_idx_reap)) {
			rc = post(ch, posted, IOQ_ITER_AUTOUPDATE);
			if (rc)
				return rc;
			posted++;
			progress++;
		}
		if (!progress && (rc = wait_for(ch, has_completion, &idle)))
			return rc;
	}
	return 0;
}

/* ---- cases ---- */

static void create_rejects_bad_count(void **state)
{
	struct ioq_channel *ch = (void *)1;

	(void)state;
	assert_int_equal(ioq_channel_create(&ch, 0, NULL), -EINVAL);
	assert_null(ch);
	assert_int_equal(ioq_channel_create(&ch, 24, NULL), -EINVAL);
	assert_int_equal(ioq_channel_create(&ch, IOQ_RING_MAX_COUNT * 2,
					    NULL), -EINVAL);
}

static void create_formats_and_attach_checks(void **state)
{
	struct ioq_channel *n, *s;
	struct ioq_channel_fds fds;
	struct stat st;

	(void)state;
	assert_int_equal(ioq_channel_create(&n, 64, NULL), 0);
	ioq_channel_fds(n, &fds);
	assert_int_equal(fds.count, 64);
	assert_int_equal(fstat(fds.shm_fd, &st), 0);
	assert_true((size_t)st.st_size >= IOQ_HEAD_DESC_SIZE(64));
	assert_int_equal(st.st_size % sysconf(_SC_PAGESIZE), 0);
	/* a sealed memfd: the peer cannot shrink it under us */
	assert_int_equal(ftruncate(fds.shm_fd, 0), -1);

	assert_int_equal(ioq_channel_attach(&s, ioq_locality_south, &fds), 0);
	assert_int_equal(ioq_size(ioq_channel_ioq(s)), 64);
	assert_int_not_equal(ioq_channel_pollfd(s), ioq_channel_pollfd(n));
	ioq_channel_destroy(s);
	ioq_channel_destroy(n);
}

static void create_named_file_is_exclusive(void **state)
{
	char dir[] = "/tmp/ioq-test-XXXXXX", path[64];
	struct ioq_channel *a, *b = NULL;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ring", dir);
	assert_int_equal(ioq_channel_create(&a, 16, path), 0);
	assert_int_equal(ioq_channel_create(&b, 16, path), -EEXIST);
	assert_null(b);
	ioq_channel_destroy(a);
	unlink(path);
	rmdir(dir);
}

static void attach_rejects_corrupt_ring(void **state)
{
	struct ioq_channel *n, *s = NULL;
	struct ioq_channel_fds fds;
	struct ioq_ring_head *h;

	(void)state;
	assert_int_equal(ioq_channel_create(&n, 16, NULL), 0);
	ioq_channel_fds(n, &fds);
	h = ioq_channel_ioq(n)->head_desc;

	h->magic ^= 1;
	assert_int_equal(ioq_channel_attach(&s, ioq_locality_south, &fds),
			 -EINVAL);
	h->magic ^= 1;
	/* a header claiming more descriptors than the region holds */
	h->count = 1u << 12;
	assert_int_equal(ioq_channel_attach(&s, ioq_locality_south, &fds),
			 -EINVAL);	/* fds.count (16) disagrees */
	fds.count = 0;
	assert_int_equal(ioq_channel_attach(&s, ioq_locality_south, &fds),
			 -EMSGSIZE);
	h->count = 16;
	fds.count = 32;
	assert_int_equal(ioq_channel_attach(&s, ioq_locality_south, &fds),
			 -EINVAL);
	assert_null(s);
	ioq_channel_destroy(n);
}

static void attach_rejects_short_region_and_bad_fds(void **state)
{
	struct ioq_channel *n, *s = NULL;
	struct ioq_channel_fds fds, bad;
	int small, p[2];

	(void)state;
	assert_int_equal(ioq_channel_create(&n, 16, NULL), 0);
	ioq_channel_fds(n, &fds);

	/* sealed: an unsealed memfd is refused before its size is looked at */
	small = memfd_create("small", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(small >= 0);
	assert_int_equal(ftruncate(small, 16), 0);
	assert_int_equal(fcntl(small, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	bad = fds;
	bad.shm_fd = small;
	assert_int_equal(ioq_channel_attach(&s, ioq_locality_south, &bad),
			 -EMSGSIZE);

	assert_int_equal(pipe(p), 0);
	bad = fds;
	bad.kick_north_fd = p[0];
	assert_int_equal(ioq_channel_attach(&s, ioq_locality_south, &bad),
			 -EINVAL);
	bad = fds;
	bad.kick_south_fd = -1;
	assert_int_equal(ioq_channel_attach(&s, ioq_locality_south, &bad),
			 -EBADF);
	assert_int_equal(ioq_channel_attach(&s, 7, &fds), -EINVAL);
	assert_null(s);
	close(p[0]);
	close(p[1]);
	close(small);
	ioq_channel_destroy(n);
}

static void wait_times_out(void **state)
{
	struct ioq_channel *n, *s;
	struct ioq_channel_fds fds;
	struct ioq_channel_stats st;

	(void)state;
	assert_int_equal(ioq_channel_create(&n, 16, NULL), 0);
	ioq_channel_fds(n, &fds);
	assert_int_equal(ioq_channel_attach(&s, ioq_locality_south, &fds), 0);
	assert_int_equal(ioq_channel_wait(s, 10), 0);
	assert_int_equal(ioq_channel_wait(s, 0), 0);
	ioq_channel_stats(s, &st);
	assert_int_equal(st.sleeps, 1);
	assert_int_equal(st.wakeups, 0);
	ioq_channel_destroy(s);
	ioq_channel_destroy(n);
}

static void doorbell_runs_notifier(void **state)
{
	struct ioq_channel *n, *s;
	struct ioq_channel_fds fds;
	struct ioq_channel_stats st;
	struct counter cnt = { 0 };
	__u64 c;

	(void)state;
	assert_int_equal(ioq_channel_create(&n, 16, NULL), 0);
	ioq_channel_fds(n, &fds);
	assert_int_equal(ioq_channel_attach(&s, ioq_locality_south, &fds), 0);
	ioq_channel_set_notifier(s, count_notify, &cnt);
	ioq_notify_enable(ioq_channel_ioq(s), 0);

	for (int i = 0; i < 3; i++)
		assert_int_equal(post(n, 100 + i, IOQ_ITER_AUTOUPDATE), 0);
	ioq_channel_stats(n, &st);
	assert_int_equal(st.injects, 1);	/* one doorbell for three */

	assert_int_equal(ioq_channel_wait(s, 1000), 1);
	assert_int_equal(cnt.calls, 1);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(consume(s, &c, 0), 0);
		assert_int_equal(c, 100 + i);
	}
	ioq_channel_destroy(s);
	ioq_channel_destroy(n);
}

static void saturated_eventfd_counts_as_delivered(void **state)
{
	struct ioq_channel *n, *s;
	struct ioq_channel_fds fds;
	struct counter cnt = { 0 };
	uint64_t max = 0xfffffffffffffffeull;

	(void)state;
	assert_int_equal(ioq_channel_create(&n, 16, NULL), 0);
	ioq_channel_fds(n, &fds);
	assert_int_equal(ioq_channel_attach(&s, ioq_locality_south, &fds), 0);
	ioq_channel_set_notifier(s, count_notify, &cnt);
	ioq_notify_enable(ioq_channel_ioq(s), 0);

	assert_int_equal(write(fds.kick_south_fd, &max, sizeof(max)),
			 sizeof(max));
	/* the doorbell write hits EAGAIN: still success */
	assert_int_equal(post(n, 1, IOQ_ITER_AUTOUPDATE), 0);
	assert_int_equal(ioq_channel_wait(s, 1000), 1);
	assert_int_equal(cnt.calls, 1);
	ioq_channel_destroy(s);
	ioq_channel_destroy(n);
}

static void enable_kicks_own_eventfd(void **state)
{
	struct ioq_channel *n, *s;
	struct ioq_channel_fds fds;
	struct counter cnt = { 0 };

	(void)state;
	assert_int_equal(ioq_channel_create(&n, 16, NULL), 0);
	ioq_channel_fds(n, &fds);
	assert_int_equal(ioq_channel_attach(&s, ioq_locality_south, &fds), 0);
	ioq_channel_set_notifier(s, count_notify, &cnt);

	/* south masked: the post marks it dirty, no doorbell */
	assert_int_equal(post(n, 1, IOQ_ITER_AUTOUPDATE), 0);
	assert_int_equal(ioq_channel_wait(s, 0), 0);
	/* enabling finds the work and rings our own eventfd */
	ioq_notify_enable(ioq_channel_ioq(s), 0);
	assert_int_equal(cnt.calls, 0);
	assert_int_equal(ioq_channel_wait(s, 0), 1);
	assert_int_equal(cnt.calls, 1);
	ioq_channel_destroy(s);
	ioq_channel_destroy(n);
}

static void fds_travel_over_unix_socket(void **state)
{
	struct ioq_channel *n, *s;
	struct ioq_channel_fds fds, got;
	int sv[2];
	__u64 c;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(ioq_channel_create(&n, 32, NULL), 0);
	ioq_channel_fds(n, &fds);
	assert_int_equal(ioq_channel_send_fds(sv[0], &fds), 0);
	assert_int_equal(ioq_channel_recv_fds(sv[1], &got), 0);
	assert_int_equal(got.count, 32);
	assert_true(got.shm_fd != fds.shm_fd);
	assert_true(fcntl(got.shm_fd, F_GETFD) & FD_CLOEXEC);

	assert_int_equal(ioq_channel_attach(&s, ioq_locality_south, &got), 0);
	close(got.shm_fd);
	close(got.kick_south_fd);
	close(got.kick_north_fd);
	assert_int_equal(post(n, 9, 0), 0);
	assert_int_equal(consume(s, &c, 0), 0);
	assert_int_equal(c, 9);

	ioq_channel_destroy(s);
	ioq_channel_destroy(n);
	close(sv[0]);
	close(sv[1]);
}

static void recv_rejects_message_without_fds(void **state)
{
	struct ioq_channel_fds got;
	__u32 junk[2] = { 1, 2 };
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(write(sv[0], junk, sizeof(junk)), sizeof(junk));
	assert_int_equal(ioq_channel_recv_fds(sv[1], &got), -EPROTO);
	close(sv[0]);
	assert_int_equal(ioq_channel_recv_fds(sv[1], &got), -ECONNRESET);
	close(sv[1]);
}

struct south_thread {
	struct ioq_channel *ch;
	__u64 msgs;
	int rc;
};

static void *south_main(void *arg)
{
	struct south_thread *t = arg;

	t->rc = run_south(t->ch, t->msgs);
	return NULL;
}

static void protocol_between_threads(void **state)
{
	struct south_thread t = { .msgs = 20000 };
	struct ioq_channel *n;
	struct ioq_channel_fds fds;
	pthread_t th;

	(void)state;
	assert_int_equal(ioq_channel_create(&n, 16, NULL), 0);
	ioq_channel_fds(n, &fds);
	assert_int_equal(ioq_channel_attach(&t.ch, ioq_locality_south, &fds),
			 0);
	assert_int_equal(pthread_create(&th, NULL, south_main, &t), 0);
	assert_int_equal(run_north(n, t.msgs), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(t.rc, 0);
	ioq_channel_destroy(t.ch);
	ioq_channel_destroy(n);
}

static void protocol_between_processes(void **state)
{
	const __u64 msgs = 20000;
	struct ioq_channel *n;
	struct ioq_channel_fds fds;
	int sv[2], status;
	pid_t pid;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				    sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* an unrelated process would get the fds the same way */
		struct ioq_channel *s = NULL;
		struct ioq_channel_fds got;
		int rc;

		close(sv[0]);
		rc = ioq_channel_recv_fds(sv[1], &got);
		if (!rc)
			rc = ioq_channel_attach(&s, ioq_locality_south, &got);
		if (!rc)
			rc = run_south(s, msgs);
		ioq_channel_destroy(s);
		if (rc)
			fprintf(stderr, "south process: %s\n", strerror(-rc));
		_exit(rc ? 1 : 0);
	}
	close(sv[1]);
	assert_int_equal(ioq_channel_create(&n, 16, NULL), 0);
	ioq_channel_fds(n, &fds);
	assert_int_equal(ioq_channel_send_fds(sv[0], &fds), 0);
	assert_int_equal(run_north(n, msgs), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	ioq_channel_destroy(n);
	close(sv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(create_rejects_bad_count),
		cmocka_unit_test(create_formats_and_attach_checks),
		cmocka_unit_test(create_named_file_is_exclusive),
		cmocka_unit_test(attach_rejects_corrupt_ring),
		cmocka_unit_test(attach_rejects_short_region_and_bad_fds),
		cmocka_unit_test(wait_times_out),
		cmocka_unit_test(doorbell_runs_notifier),
		cmocka_unit_test(saturated_eventfd_counts_as_delivered),
		cmocka_unit_test(enable_kicks_own_eventfd),
		cmocka_unit_test(fds_travel_over_unix_socket),
		cmocka_unit_test(recv_rejects_message_without_fds),
		cmocka_unit_test(protocol_between_threads),
		cmocka_unit_test(protocol_between_processes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
