// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Issue 26.2: a peer cannot SIGBUS us through the region. The peer makes
 * the channel itself, in a memfd it did not seal, and hands the fds over;
 * once we attached it shrinks the memfd to 0. Our next ring access would
 * be SIGBUS (libioq at 5e8fef9 attached, and died), so ioq_channel_attach()
 * must refuse a memfd without F_SEAL_SHRINK (-EPERM). A memfd sealed
 * against shrinking is accepted, and the peer then cannot shrink it.
 *
 * The honest side runs in a child process, so that a SIGBUS is reported
 * instead of ending the test.
 */
#include "peer.h"
#include <fcntl.h>
#include <sys/eventfd.h>

/* The peer's channel: a v6 ring in a memfd, sealed with @seals (or not). */
static struct ioq_channel_fds peer_channel(unsigned int seals)
{
	struct ioq_channel_fds fds;
	size_t len = 4096;
	void *p;

	fds.count = 16;
	fds.shm_fd = memfd_create("peer-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK(fds.shm_fd >= 0, "memfd_create");
	CHECK(ftruncate(fds.shm_fd, (off_t)len) == 0, "ftruncate");
	p = peer_map(fds.shm_fd);
	CHECK(ioq_ring_format((struct ioq_ring_head *)p, fds.count) == 0,
	      "format");
	munmap(p, len);
	if (seals)
		CHECK(fcntl(fds.shm_fd, F_ADD_SEALS, seals) == 0, "seal");
	fds.kick_south_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	fds.kick_north_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(fds.kick_south_fd >= 0 && fds.kick_north_fd >= 0, "eventfd");
	return fds;
}

/*
 * Attach as south in a child; once attached, the peer (we) tries to
 * shrink the region, then the child reads the ring. Returns the child's
 * attach result (or 1 when it attached and survived), and *@shrunk
 * whether the shrink worked.
 */
static int honest_attach(const struct ioq_channel_fds *fds, int *shrunk)
{
	int up[2], down[2], st, rc = 0;
	char c = 0;
	pid_t pid;

	CHECK(pipe(up) == 0 && pipe(down) == 0, "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct ioq_channel *s = NULL;
		int err = ioq_channel_attach(&s, ioq_locality_south, fds);
		signed char r = (signed char)err;

		if (write(up[1], &r, 1) != 1)
			_exit(3);
		if (err)
			_exit(0);
		if (read(down[0], &c, 1) != 1)
			_exit(3);
		/* the next ring access: SIGBUS if the region shrank */
		if (ioq_count(ioq_channel_ioq(s), ioq_idx_consume) < 0)
			_exit(4);
		ioq_channel_destroy(s);
		_exit(0);
	}
	CHECK(read(up[0], &c, 1) == 1, "the honest side died attaching");
	rc = (signed char)c;
	*shrunk = 0;
	if (rc == 0) {
		*shrunk = ftruncate(fds->shm_fd, 0) == 0;
		CHECK(write(down[1], "g", 1) == 1, "pipe");
		rc = 1;
	}
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	if (WIFSIGNALED(st))
		FAIL("the honest side died of %s after the peer shrank the "
		     "region", strsignal(WTERMSIG(st)));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the honest side exited %d", WEXITSTATUS(st));
	close(up[0]); close(up[1]); close(down[0]); close(down[1]);
	return rc;
}

int main(void)
{
	struct ioq_channel_fds fds;
	int rc, shrunk;

	/* unsealed: refused before the first access */
	fds = peer_channel(0);
	rc = honest_attach(&fds, &shrunk);
	CHECK(rc == -EPERM, "an unsealed memfd: attach gave %d%s, want -EPERM",
	      rc < 1 ? rc : 0, shrunk ? " and the peer shrank it" : "");
	printf("unsealed memfd: attach -EPERM\n");

	/* F_SEAL_GROW alone does not do */
	fds = peer_channel(F_SEAL_GROW);
	rc = honest_attach(&fds, &shrunk);
	CHECK(rc == -EPERM, "a memfd sealed against growing only: %d", rc);

	/* sealed against shrinking: attached, and the shrink fails */
	fds = peer_channel(F_SEAL_SHRINK);
	rc = honest_attach(&fds, &shrunk);
	CHECK(rc == 1, "a memfd sealed with F_SEAL_SHRINK: attach gave %d", rc);
	CHECK(!shrunk, "the peer shrank a region sealed with F_SEAL_SHRINK");
	printf("ok: an unsealed memfd is refused, a sealed one is safe\n");
	return 0;
}
