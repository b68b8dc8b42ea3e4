// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The descriptor store's commit marker (fdstore.c; docs/operations.md,
 * "Restarts"): this process is the service manager, a datagram socket in
 * NOTIFY_SOCKET that records what the daemon code sends. A connection is
 * stored with "GUEST/conn" last and removed with it first; a send that
 * fails takes back what was stored (the failure is a descriptor of -1:
 * EBADF, the same path as a send timing out on a full queue);
 * an incomplete set, or one with a name twice, is dropped and removed,
 * never taken over, and costs no other guest its connection. Every
 * vector's eventfd is stored (the queue vectors before the marker) and
 * taken back; a set without queue vectors (an older daemon's) is taken
 * over as it is, and a queue vector after a gap is dropped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "fdstore.h"
#include "logcap.h"

#define MAX_MSGS	16
#define QVECS		4	/* the sets of the queue vector tests: vectors=4 */

struct env {
	char dir[64], path[96];
	int sock;		/* the manager's end */
	int pair[2];		/* pair[0]: the connection */
	struct hostd_ivshmem_fds fds;
	char msg[MAX_MSGS][256];	/* "FDSTORE name" / "REMOVE name" */
	int nmsg;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	assert_non_null(e);
	strcpy(e->dir, "/tmp/vbus-fdstore.XXXXXX");
	assert_non_null(mkdtemp(e->dir));
	snprintf(e->path, sizeof(e->path), "%s/notify", e->dir);
	e->sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(e->sock >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", e->path);
	assert_int_equal(bind(e->sock, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setenv("NOTIFY_SOCKET", e->path, 1);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				    e->pair), 0);
	e->fds.conn = e->pair[0];
	e->fds.bar2 = memfd_create("vbus-test-bar2", MFD_CLOEXEC);
	e->fds.db[0] = eventfd(0, EFD_CLOEXEC);
	e->fds.db[1] = eventfd(0, EFD_CLOEXEC);
	for (int i = 0; i < VBUS_PCI_MAX_VECTORS; i++)
		e->fds.msix[i] = i < QVECS ? eventfd(0, EFD_CLOEXEC) : -1;
	e->fds.nr_msix = VBUS_PCI_NR_VECTORS;
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	int i;

	close(e->sock);
	close(e->pair[1]);
	for (i = 0; i < 2; i++)
		close(e->fds.db[i]);
	for (i = 0; i < QVECS; i++)
		close(e->fds.msix[i]);
	close(e->fds.conn);
	close(e->fds.bar2);
	unlink(e->path);
	rmdir(e->dir);
	unsetenv("NOTIFY_SOCKET");
	free(e);
	return 0;
}

static void field(const char *msg, const char *key, char *out, size_t len)
{
	const char *p = strstr(msg, key);
	size_t n;

	out[0] = 0;
	if (!p)
		return;
	p += strlen(key);
	n = strcspn(p, "\n");
	if (n >= len)
		n = len - 1;
	memcpy(out, p, n);
	out[n] = 0;
}

/* Everything queued, as "FDSTORE name" (its descriptor closed) / "REMOVE name". */
static void collect(struct env *e)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} u;
	char text[512], name[128];
	ssize_t n;

	for (;;) {
		struct iovec iov = { text, sizeof(text) - 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = u.buf,
				     .msg_controllen = sizeof(u.buf) };
		struct cmsghdr *c;

		n = recvmsg(e->sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0)
			break;
		text[n] = 0;
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_type == SCM_RIGHTS) {
				int fd;

				memcpy(&fd, CMSG_DATA(c), sizeof(fd));
				close(fd);
			}
		field(text, "FDNAME=", name, sizeof(name));
		assert_true(e->nmsg < MAX_MSGS);
		snprintf(e->msg[e->nmsg++], sizeof(e->msg[0]), "%s %s",
			 strstr(text, "FDSTOREREMOVE=1") ? "REMOVE" :
			 strstr(text, "FDSTORE=1") ? "FDSTORE" : "OTHER", name);
	}
}

static void expect_msgs(struct env *e, const char *const *want, int n)
{
	int i;

	collect(e);
	for (i = 0; i < e->nmsg && i < n; i++)
		assert_string_equal(e->msg[i], want[i]);
	assert_int_equal(e->nmsg, n);
}

/* The six go in with the marker, g1/conn, last. */
static void test_publish_marker_last(void **state)
{
	static const char *const want[] = {
		"FDSTORE g1/bar2", "FDSTORE g1/db0", "FDSTORE g1/db1",
		"FDSTORE g1/msix0", "FDSTORE g1/msix1", "FDSTORE g1/conn",
	};
	struct env *e = *state;

	assert_int_equal(daemon_fdstore_publish("g1", &e->fds), 0);
	expect_msgs(e, want, 6);
}

/* A send fails at msix0: the marker is never sent, the three stored go. */
static void test_publish_failure_takes_back(void **state)
{
	static const char *const want[] = {
		"FDSTORE g1/bar2", "FDSTORE g1/db0", "FDSTORE g1/db1",
		"REMOVE g1/db1", "REMOVE g1/db0", "REMOVE g1/bar2",
	};
	struct env *e = *state;
	int open_msix0 = e->fds.msix[0];

	e->fds.msix[0] = -1;		/* sendmsg says EBADF */
	assert_int_equal(daemon_fdstore_publish("g1", &e->fds), -1);
	e->fds.msix[0] = open_msix0;
	expect_msgs(e, want, 6);
}

/* Removal: the marker first, so a cut leaves a set without it. */
static void test_unpublish_marker_first(void **state)
{
	static const char *const want[] = {
		"REMOVE g1/conn", "REMOVE g1/msix1", "REMOVE g1/msix0",
		"REMOVE g1/db1", "REMOVE g1/db0", "REMOVE g1/bar2",
	};
	struct env *e = *state;

	daemon_fdstore_unpublish("g1", VBUS_PCI_NR_VECTORS);
	expect_msgs(e, want, 6);
}

/* vectors=4: both queue vectors' eventfds too, before the marker. */
static void test_publish_queue_vectors_before_marker(void **state)
{
	static const char *const want[] = {
		"FDSTORE g1/bar2", "FDSTORE g1/db0", "FDSTORE g1/db1",
		"FDSTORE g1/msix0", "FDSTORE g1/msix1", "FDSTORE g1/msix2",
		"FDSTORE g1/msix3", "FDSTORE g1/conn",
	};
	struct env *e = *state;

	e->fds.nr_msix = QVECS;
	assert_int_equal(daemon_fdstore_publish("g1", &e->fds), 0);
	expect_msgs(e, want, 8);
}

/* ... and removed after the marker. */
static void test_unpublish_queue_vectors(void **state)
{
	static const char *const want[] = {
		"REMOVE g1/conn", "REMOVE g1/msix3", "REMOVE g1/msix2",
		"REMOVE g1/msix1", "REMOVE g1/msix0", "REMOVE g1/db1",
		"REMOVE g1/db0", "REMOVE g1/bar2",
	};
	struct env *e = *state;

	daemon_fdstore_unpublish("g1", QVECS);
	expect_msgs(e, want, 8);
}

static void put(struct daemon_fdstore *s, const char *name, int fd)
{
	s->fd[s->n] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	assert_true(s->fd[s->n] >= 0);
	snprintf(s->name[s->n], sizeof(s->name[0]), "%s", name);
	s->n++;
}

static void put_set(struct env *e, struct daemon_fdstore *s, const char *guest,
		    const char *skip)
{
	const char *kind[] = { "bar2", "db0", "db1", "msix0", "msix1", "conn" };
	const int fd[] = { e->fds.bar2, e->fds.db[0], e->fds.db[1],
			   e->fds.msix[0], e->fds.msix[1], e->fds.conn };
	char name[HOSTD_FDNAME_MAX];
	int k;

	for (k = 0; k < 6; k++) {
		if (skip && strstr(skip, kind[k]))
			continue;
		snprintf(name, sizeof(name), "%s/%s", guest, kind[k]);
		put(s, name, fd[k]);
	}
}

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/*
 * g1's set was cut short (here @skip is what it lacks): not taken over,
 * its descriptors closed and removed from the store; g2 is taken over.
 */
static void take_with_leftovers(struct env *e, const char *skip,
				const char *const *want, int nwant)
{
	struct daemon_fdstore *s = calloc(1, sizeof(*s));
	struct hostd_ivshmem_fds got;
	char err[256] = "";
	unsigned int i, g1_n;

	assert_non_null(s);
	put_set(e, s, "g1", skip);
	g1_n = s->n;
	put_set(e, s, "g2", NULL);
	assert_int_equal(daemon_fdstore_take(s, "g1", &got, err, sizeof(err)), 0);
	for (i = 0; i < g1_n; i++) {
		assert_true(s->taken[i]);
		assert_false(is_open(s->fd[i]));
	}
	expect_msgs(e, want, nwant);
	assert_int_equal(daemon_fdstore_take(s, "g2", &got, err, sizeof(err)), 1);
	assert_int_equal(got.conn, s->fd[s->n - 1]);
	for (i = g1_n; i < s->n; i++) {
		assert_true(s->taken[i]);
		close(s->fd[i]);
	}
	daemon_fdstore_drop_rest(s);	/* nothing left: sends nothing */
	expect_msgs(e, want, nwant);
	free(s);
}

/* A store cut before the marker: three of six, no g1/conn. */
static void test_take_store_cut_before_marker(void **state)
{
	static const char *const want[] = {
		"REMOVE g1/bar2", "REMOVE g1/db0", "REMOVE g1/db1",
	};

	take_with_leftovers(*state, "msix0 msix1 conn", want, 3);
}

/* A removal cut after the marker: everything but g1/conn. */
static void test_take_removal_cut_after_marker(void **state)
{
	static const char *const want[] = {
		"REMOVE g1/bar2", "REMOVE g1/db0", "REMOVE g1/db1",
		"REMOVE g1/msix0", "REMOVE g1/msix1",
	};

	take_with_leftovers(*state, "conn", want, 5);
}

/* The marker but not bar2: an older daemon's store (conn first) cut short. */
static void test_take_marker_without_the_rest(void **state)
{
	static const char *const want[] = { "REMOVE g1/conn" };

	take_with_leftovers(*state, "bar2 db0 db1 msix0 msix1", want, 1);
}

/* g1's complete set and a second g1/bar2: none of the seven is taken. */
static void test_take_name_twice(void **state)
{
	static const char *const want[] = {
		"REMOVE g1/conn", "REMOVE g1/bar2", "REMOVE g1/bar2",
		"REMOVE g1/db0", "REMOVE g1/db1", "REMOVE g1/msix0",
		"REMOVE g1/msix1",
	};
	struct env *e = *state;
	struct daemon_fdstore *s = calloc(1, sizeof(*s));
	struct hostd_ivshmem_fds got;
	char err[256] = "";
	unsigned int i;

	assert_non_null(s);
	put_set(e, s, "g1", NULL);
	put(s, "g1/bar2", e->fds.bar2);
	put_set(e, s, "g2", NULL);
	assert_int_equal(daemon_fdstore_take(s, "g1", &got, err, sizeof(err)), 0);
	for (i = 0; i < 7; i++)
		assert_false(is_open(s->fd[i]));
	expect_msgs(e, want, 7);
	assert_int_equal(daemon_fdstore_take(s, "g2", &got, err, sizeof(err)), 1);
	for (i = 7; i < s->n; i++)
		close(s->fd[i]);
	free(s);
}

/* g1's six and the queue vectors named in @qvecs ("msix2 msix3"). */
static struct daemon_fdstore *store_with(struct env *e, const char *qvecs)
{
	struct daemon_fdstore *s = calloc(1, sizeof(*s));
	char name[HOSTD_FDNAME_MAX];
	int v;

	assert_non_null(s);
	put_set(e, s, "g1", NULL);
	for (v = VBUS_PCI_NR_VECTORS; v < QVECS; v++) {
		snprintf(name, sizeof(name), "msix%d", v);
		if (!strstr(qvecs, name))
			continue;
		snprintf(name, sizeof(name), "g1/msix%d", v);
		put(s, name, e->fds.msix[v]);
	}
	return s;
}

static void release(struct hostd_ivshmem_fds *got)
{
	unsigned int i;

	close(got->conn);
	close(got->bar2);
	close(got->db[0]);
	close(got->db[1]);
	for (i = 0; i < got->nr_msix; i++)
		close(got->msix[i]);
}

/* A set stored with vectors=4 comes back with both queue vectors. */
static void test_take_keeps_queue_vectors(void **state)
{
	struct env *e = *state;
	struct daemon_fdstore *s = store_with(e, "msix2 msix3");
	struct hostd_ivshmem_fds got;
	char err[256] = "";
	unsigned int i;

	assert_int_equal(daemon_fdstore_take(s, "g1", &got, err, sizeof(err)), 1);
	assert_int_equal(got.nr_msix, QVECS);
	assert_int_equal(got.msix[2], s->fd[6]);
	assert_int_equal(got.msix[3], s->fd[7]);
	assert_int_equal(got.msix[4], -1);
	for (i = 0; i < s->n; i++)
		assert_true(s->taken[i]);
	daemon_fdstore_drop_rest(s);	/* nothing left: sends nothing */
	expect_msgs(e, NULL, 0);
	release(&got);
	free(s);
}

/* An older daemon's set, HC and EVENTQ only: taken over as it is. */
static void test_take_old_store_without_queue_vectors(void **state)
{
	struct env *e = *state;
	struct daemon_fdstore *s = store_with(e, "");
	struct hostd_ivshmem_fds got;
	char err[256] = "";

	assert_int_equal(daemon_fdstore_take(s, "g1", &got, err, sizeof(err)), 1);
	assert_int_equal(got.nr_msix, VBUS_PCI_NR_VECTORS);
	assert_int_equal(got.msix[2], -1);
	expect_msgs(e, NULL, 0);
	release(&got);
	free(s);
}

/*
 * msix3 without msix2 (a store cut short, a manager that lost one):
 * it cannot be numbered, so it is dropped and removed, said in the log;
 * the connection is taken over without queue vectors.
 */
static void test_take_queue_vector_after_gap_dropped(void **state)
{
	static const char *const want[] = { "REMOVE g1/msix3" };
	struct env *e = *state;
	struct daemon_fdstore *s = store_with(e, "msix3");
	struct hostd_ivshmem_fds got;
	struct logcap log;
	char err[256] = "";
	const char *text;

	logcap_begin(&log);
	assert_int_equal(daemon_fdstore_take(s, "g1", &got, err, sizeof(err)), 1);
	text = logcap_end(&log);
	assert_non_null(strstr(text, "stored connection of guest g1: 'g1/msix3' without 'g1/msix2': queue vectors from msix2 on dropped"));
	assert_int_equal(got.nr_msix, VBUS_PCI_NR_VECTORS);
	assert_false(is_open(s->fd[6]));
	expect_msgs(e, want, 1);
	release(&got);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_publish_marker_last, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_publish_failure_takes_back,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_unpublish_marker_first,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_take_store_cut_before_marker,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_take_removal_cut_after_marker,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_take_marker_without_the_rest,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_take_name_twice, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_publish_queue_vectors_before_marker, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_unpublish_queue_vectors,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_take_keeps_queue_vectors,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_take_old_store_without_queue_vectors, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_take_queue_vector_after_gap_dropped, setup,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
