// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the descriptor store (docs/operations.md, "Restarts").
 *
 * Stock QEMU takes an ivshmem server's set-up only once, so a restarted
 * daemon must serve the very connection the previous one had. Whoever
 * supervises us (systemd with FileDescriptorStoreMax=, or vbus-fdkeeper)
 * keeps a copy of each descriptor we send with FDSTORE=1 and hands them
 * to the next daemon the sd_listen_fds way: fds 3 .. 3+LISTEN_FDS-1,
 * named in order by the colon-separated LISTEN_FDNAMES, for the process
 * LISTEN_PID. A guest's connection is six names, "GUEST/KIND" with the
 * KINDs below, and one more per queue vector: "GUEST/msix2" up to
 * "GUEST/msixN-1" for vectors=N. They are stored once QEMU connected and
 * removed when it disconnects; a taken-over connection stays stored as
 * it was.
 *
 * The datagrams are not one step: a crash, or a send that times out on a
 * full queue, can cut a store or a removal short. So "GUEST/conn" is the
 * commit marker: stored last, removed first. A set without it is what
 * such a cut left behind, and a set with it lacks none of the six unless
 * an older daemon (which stored conn first) was cut short: either way
 * the guest is not taken over, its leftovers are closed and removed, and
 * the other guests are taken over as usual. So is a set with a name
 * twice. Queue vectors are optional (an older daemon stored none): the
 * guest is taken over with those stored from msix2 on without a gap,
 * and one after a gap is dropped (logged).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fdstore.h"
#include "sd_notify.h"

#define LISTEN_FDS_START	3

/*
 * K_NR kinds every set has; then K_QVEC + i is queue vector
 * VBUS_PCI_NR_VECTORS + i ("msix2" ...), optional.
 */
enum { K_CONN, K_BAR2, K_DB0, K_DB1, K_MSIX0, K_MSIX1, K_NR };
#define K_QVEC	K_NR
#define K_ALL	(K_NR + VBUS_PCI_MAX_VECTORS - VBUS_PCI_NR_VECTORS)

static const char *const kinds[K_NR] = {
	[K_CONN] = "conn", [K_BAR2] = "bar2", [K_DB0] = "db0",
	[K_DB1] = "db1", [K_MSIX0] = "msix0", [K_MSIX1] = "msix1",
};

/* The commit marker last: a set is complete once it is stored. */
static const int store_order[K_NR] = {
	K_BAR2, K_DB0, K_DB1, K_MSIX0, K_MSIX1, K_CONN,
};

/* "conn" ... "msix1", "msix2" ...: in @buf (at least 8 bytes) */
static const char *kind_name(int kind, char *buf, size_t len)
{
	if (kind < K_NR)
		return kinds[kind];
	snprintf(buf, len, "msix%d", kind - K_QVEC + VBUS_PCI_NR_VECTORS);
	return buf;
}

/* "msixN" for a queue vector N (2 .. 63, no leading zero): its kind */
static int qvec_kind(const char *s)
{
	char *end;
	long n;

	if (strncmp(s, "msix", 4) || s[4] < '1' || s[4] > '9')
		return -1;
	n = strtol(s + 4, &end, 10);
	if (*end || n < VBUS_PCI_NR_VECTORS || n >= VBUS_PCI_MAX_VECTORS)
		return -1;
	return K_QVEC + (int)n - VBUS_PCI_NR_VECTORS;
}

/* ---- loading ------------------------------------------------------------ */

static int kind_of(const char *name)
{
	const char *slash = strrchr(name, '/');
	int k;

	if (!slash || slash == name)
		return -1;
	for (k = 0; k < K_NR; k++)
		if (!strcmp(slash + 1, kinds[k]))
			return k;
	return qvec_kind(slash + 1);
}

/* LISTEN_FDS as a count; -1 when it is not one. */
static long parse_count(const char *v)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < 0)
		return -1;
	return n;
}

/* Split LISTEN_FDNAMES into s->name[]; the number of names, or -1. */
static long split_names(struct daemon_fdstore *s, const char *names)
{
	const char *p = names;
	long n = 0;

	for (;;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);

		if (n == HOSTD_FDSTORE_MAX || len >= HOSTD_FDNAME_MAX)
			return -1;
		memcpy(s->name[n], p, len);
		s->name[n][len] = 0;
		n++;
		if (!colon)
			return n;
		p = colon + 1;
	}
}

/* A name passed twice is the guest's problem (daemon_fdstore_take). */
static int check_names(struct daemon_fdstore *s, char *err, size_t errlen)
{
	unsigned int i;

	for (i = 0; i < s->n; i++)
		if (kind_of(s->name[i]) < 0) {
			snprintf(err, errlen,
				 "stored descriptor %u is named '%s', not GUEST/{conn,bar2,db0,db1,msix0,msix1,msix2..msix%d}",
				 LISTEN_FDS_START + i, s->name[i],
				 VBUS_PCI_MAX_VECTORS - 1);
			return -1;
		}
	return 0;
}

static int check_open(struct daemon_fdstore *s, char *err, size_t errlen)
{
	unsigned int i;

	for (i = 0; i < s->n; i++) {
		int fd = LISTEN_FDS_START + (int)i;

		if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
			snprintf(err, errlen,
				 "stored descriptor %d ('%s') is not open (LISTEN_FDS=%u)",
				 fd, s->name[i], s->n);
			return -1;
		}
		s->fd[i] = fd;
	}
	return 0;
}

static void unset_env(void)
{
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
}

int daemon_fdstore_load(struct daemon_fdstore *s, char *err, size_t errlen)
{
	const char *pid = getenv("LISTEN_PID");
	const char *fds = getenv("LISTEN_FDS");
	const char *names = getenv("LISTEN_FDNAMES");
	long n, nn;

	memset(s, 0, sizeof(*s));
	/*
	 * As sd_listen_fds(): descriptors are ours only when LISTEN_PID says
	 * so. Without it they may be a parent's, inherited by accident.
	 */
	if (!fds || !pid || parse_count(pid) != (long)getpid()) {
		if (fds && !pid)
			hostd_log("LISTEN_FDS without LISTEN_PID: not ours to take, ignored");
		else if (fds)
			hostd_log("LISTEN_FDS is for process %s, not us: ignored",
				  pid);
		unset_env();
		return 0;
	}
	n = parse_count(fds);
	if (n < 0 || n > HOSTD_FDSTORE_MAX) {
		snprintf(err, errlen, "LISTEN_FDS=%s: not a count of 0 .. %d",
			 fds, HOSTD_FDSTORE_MAX);
		return -1;
	}
	if (n && !names) {
		snprintf(err, errlen,
			 "LISTEN_FDS=%ld without LISTEN_FDNAMES: the stored descriptors cannot be told apart",
			 n);
		return -1;
	}
	nn = n ? split_names(s, names) : 0;
	if (nn != n) {
		snprintf(err, errlen,
			 "LISTEN_FDNAMES names %ld descriptor(s), LISTEN_FDS says %ld",
			 nn, n);
		return -1;
	}
	s->n = (unsigned int)n;
	unset_env();
	if (check_names(s, err, errlen) < 0 || check_open(s, err, errlen) < 0)
		return -1;
	return 0;
}

/* ---- a guest's connection ------------------------------------------------ */

/* The first "GUEST/KIND" not taken after index @after; -1 if none. */
static int find(const struct daemon_fdstore *s, const char *guest, int kind,
		int after)
{
	char want[HOSTD_FDNAME_MAX], buf[16];
	unsigned int i;

	snprintf(want, sizeof(want), "%s/%s", guest,
		 kind_name(kind, buf, sizeof(buf)));
	for (i = (unsigned int)(after + 1); i < s->n; i++)
		if (!s->taken[i] && !strcmp(s->name[i], want))
			return (int)i;
	return -1;
}

static bool is_eventfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return false;
	link[n] = 0;
	return !strcmp(link, "anon_inode:[eventfd]");
}

static int check_kind(int fd, int kind, const char *guest, char *err,
		      size_t errlen)
{
	struct stat st;
	char buf[16];
	bool ok;

	if (fstat(fd, &st) < 0)
		ok = false;
	else if (kind == K_CONN)
		ok = S_ISSOCK(st.st_mode);
	else if (kind == K_BAR2)
		ok = S_ISREG(st.st_mode);	/* its content: ivshmem.c */
	else
		ok = is_eventfd(fd);
	if (!ok)
		snprintf(err, errlen, "stored descriptor '%s/%s' (fd %d) is not %s",
			 guest, kind_name(kind, buf, sizeof(buf)), fd,
			 kind == K_CONN ? "a socket" :
			 kind == K_BAR2 ? "a memfd" : "an eventfd");
	return ok ? 0 : -1;
}

/* Close stored descriptor @i and remove it from the store. */
static void drop(struct daemon_fdstore *s, unsigned int i)
{
	daemon_sd_notifyf("FDSTOREREMOVE=1\nFDNAME=%s", s->name[i]);
	close(s->fd[i]);
	s->taken[i] = true;
}

/*
 * A set lacking one of its six: the leftovers of a store or removal cut
 * short. One line says what was found; then they go.
 */
static void drop_incomplete(struct daemon_fdstore *s, const char *guest,
			    const int idx[K_ALL])
{
	char found[512] = "", buf[16];
	size_t len = 0;
	int k, missing = -1;

	for (k = 0; k < K_ALL; k++) {
		if (idx[k] < 0) {
			if (missing < 0)
				missing = k;
			continue;
		}
		if (len < sizeof(found))
			len += (size_t)snprintf(found + len, sizeof(found) - len,
						"%s%s", len ? "," : "",
						kind_name(k, buf, sizeof(buf)));
	}
	hostd_log("stored connection of guest %s is incomplete: no '%s/%s' (found %s; a store or removal was cut short): dropped, guest %s is not taken over (a QEMU that connects again is a new guest)",
		  guest, guest, kinds[missing], found, guest);
	for (k = 0; k < K_ALL; k++)
		if (idx[k] >= 0)
			drop(s, (unsigned int)idx[k]);
}

/*
 * A name passed twice (a manager that keeps both when a name is stored
 * again, e.g. after a failed removal): which is the live one cannot be
 * told, so none is taken.
 */
static bool drop_ambiguous(struct daemon_fdstore *s, const char *guest,
			   const int idx[K_ALL])
{
	char buf[16];
	int k, again = -1;

	for (k = 0; k < K_ALL; k++)
		if (idx[k] >= 0 && (again = find(s, guest, k, idx[k])) >= 0)
			break;
	if (k == K_ALL)
		return false;
	hostd_log("stored connection of guest %s is ambiguous: '%s/%s' passed twice (fds %d and %d): dropped, guest %s is not taken over (a QEMU that connects again is a new guest)",
		  guest, guest, kind_name(k, buf, sizeof(buf)),
		  LISTEN_FDS_START + idx[k], LISTEN_FDS_START + again, guest);
	for (k = 0; k < K_ALL; k++)
		while ((again = find(s, guest, k, -1)) >= 0)
			drop(s, (unsigned int)again);
	return true;
}

/*
 * Queue vectors after a gap (msix3 without msix2: a store cut short,
 * or a manager that lost one) cannot be numbered: dropped, logged. The
 * number of those before the gap.
 */
static int drop_after_gap(struct daemon_fdstore *s, const char *guest,
			  int idx[K_ALL])
{
	char buf[16];
	int k, nq = 0;

	while (K_QVEC + nq < K_ALL && idx[K_QVEC + nq] >= 0)
		nq++;
	for (k = K_QVEC + nq; k < K_ALL; k++) {
		if (idx[k] < 0)
			continue;
		hostd_log("stored connection of guest %s: '%s/%s' without '%s/msix%d': queue vectors from msix%d on dropped",
			  guest, guest, kind_name(k, buf, sizeof(buf)), guest,
			  nq + VBUS_PCI_NR_VECTORS, nq + VBUS_PCI_NR_VECTORS);
		drop(s, (unsigned int)idx[k]);
		idx[k] = -1;
	}
	return nq;
}

int daemon_fdstore_take(struct daemon_fdstore *s, const char *guest,
		       struct hostd_ivshmem_fds *fds, char *err, size_t errlen)
{
	int idx[K_ALL], k, have = 0, all = 0, nq, i;

	for (k = 0; k < K_ALL; k++) {
		idx[k] = find(s, guest, k, -1);
		have += k < K_NR && idx[k] >= 0;
		all += idx[k] >= 0;
	}
	if (!all || drop_ambiguous(s, guest, idx))
		return 0;
	if (have < K_NR) {
		drop_incomplete(s, guest, idx);
		return 0;
	}
	for (k = 0; k < K_ALL; k++)
		if (idx[k] >= 0 &&
		    check_kind(s->fd[idx[k]], k, guest, err, errlen) < 0)
			return -1;
	nq = drop_after_gap(s, guest, idx);
	for (k = 0; k < K_NR + nq; k++)
		s->taken[idx[k]] = true;
	fds->conn = s->fd[idx[K_CONN]];
	fds->bar2 = s->fd[idx[K_BAR2]];
	fds->db[0] = s->fd[idx[K_DB0]];
	fds->db[1] = s->fd[idx[K_DB1]];
	fds->msix[0] = s->fd[idx[K_MSIX0]];
	fds->msix[1] = s->fd[idx[K_MSIX1]];
	for (i = VBUS_PCI_NR_VECTORS; i < VBUS_PCI_MAX_VECTORS; i++)
		fds->msix[i] = i - VBUS_PCI_NR_VECTORS < nq ?
			       s->fd[idx[K_QVEC + i - VBUS_PCI_NR_VECTORS]] : -1;
	fds->nr_msix = (unsigned int)(VBUS_PCI_NR_VECTORS + nq);
	return 1;
}

void daemon_fdstore_drop_rest(struct daemon_fdstore *s)
{
	unsigned int i;

	for (i = 0; i < s->n; i++) {
		if (s->taken[i])
			continue;
		hostd_log("stored descriptor '%s' belongs to no configured guest: dropped",
			  s->name[i]);
		drop(s, i);
	}
}

/* ---- storing -------------------------------------------------------------- */

/*
 * The kinds of a set with @nr_msix vectors, in the order they are
 * stored: store_order with the queue vectors before the marker. The
 * count.
 */
static int set_order(unsigned int nr_msix, int order[K_ALL])
{
	int i, n = 0, nq = 0;

	if (nr_msix > VBUS_PCI_NR_VECTORS)
		nq = (int)(nr_msix > VBUS_PCI_MAX_VECTORS ? VBUS_PCI_MAX_VECTORS :
			   nr_msix) - VBUS_PCI_NR_VECTORS;
	for (i = 0; i < K_NR - 1; i++)
		order[n++] = store_order[i];
	for (i = 0; i < nq; i++)
		order[n++] = K_QVEC + i;
	order[n++] = K_CONN;
	return n;
}

static int fd_of(const struct hostd_ivshmem_fds *fds, int kind)
{
	switch (kind) {
	case K_CONN: return fds->conn;
	case K_BAR2: return fds->bar2;
	case K_DB0: return fds->db[0];
	case K_DB1: return fds->db[1];
	default: return fds->msix[kind - K_MSIX0];
	}
}

/*
 * One message per name: FDNAME= names every fd of its message. FDPOLL=0:
 * a memfd cannot be polled, and the store must not drop an eventfd or
 * the socket on its own; we remove them when QEMU goes. In set_order():
 * when a send fails, the marker has not been sent, so what was stored is
 * removed again (a removal that fails too leaves leftovers without the
 * marker, which the next daemon drops) and the connection, still served,
 * just does not survive a restart.
 */
int daemon_fdstore_publish(const char *guest,
			  const struct hostd_ivshmem_fds *fds)
{
	int order[K_ALL], n = set_order(fds->nr_msix, order), i, fd;
	char msg[160], buf[16];

	for (i = 0; i < n; i++) {
		fd = fd_of(fds, order[i]);
		snprintf(msg, sizeof(msg), "FDSTORE=1\nFDPOLL=0\nFDNAME=%s/%s",
			 guest, kind_name(order[i], buf, sizeof(buf)));
		if (daemon_sd_notify_fds(msg, &fd, 1) < 0)
			break;
	}
	if (i == n)
		return 0;
	hostd_log("guest %s: storing '%s/%s' failed: its connection is not stored and will not survive a restart",
		  guest, guest, kind_name(order[i], buf, sizeof(buf)));
	while (i-- > 0)
		daemon_sd_notifyf("FDSTOREREMOVE=1\nFDNAME=%s/%s", guest,
				 kind_name(order[i], buf, sizeof(buf)));
	return -1;
}

/* The reverse of set_order(): the marker goes first. */
void daemon_fdstore_unpublish(const char *guest, unsigned int nr_msix)
{
	int order[K_ALL], i = set_order(nr_msix, order);
	char buf[16];

	while (i-- > 0)
		daemon_sd_notifyf("FDSTOREREMOVE=1\nFDNAME=%s/%s", guest,
				 kind_name(order[i], buf, sizeof(buf)));
}
