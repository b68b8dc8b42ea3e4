// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the ivshmem server (see ivshmem.h).
 *
 * QEMU's ivshmem-doorbell reads, on its chardev socket, a series of
 * little-endian int64 messages, each in its own sendmsg with at most one fd
 * (SCM_RIGHTS). The order is fixed (docs/transport.md; QEMU 7.2 segfaults
 * if the guest's own vectors come before the memory fd):
 *
 *   0                      protocol version
 *   guest_peer             the guest's own peer id
 *   -1       + BAR2 fd     the shared memory (QEMU blocks until it has it)
 *   host_peer + eventfd    x2: host vectors DB_HC, DB_SIGNAL; QEMU turns
 *                          them into ioeventfds on Doorbell
 *   guest_peer + eventfd   x vectors=: the guest's MSI-X vectors HC,
 *                          EVENTQ, then the per-queue vectors
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>
#include "eventfd.h"
#include "ivshmem.h"
#include "sock.h"

/* what a BAR2 of ours is sealed with (F_SEAL_SEAL too, at creation) */
#define BAR2_SEALS (F_SEAL_SHRINK | F_SEAL_GROW)

/* ---- the protocol --------------------------------------------------------- */

int hostd_ivshmem_send(int sock, __s64 msg, int fd)
{
	__u64 le = htole64((__u64)msg);

	return hostd_send_fds(sock, &le, sizeof(le), &fd, fd >= 0 ? 1 : 0);
}

static int hostd_ivshmem_handshake(struct hostd_ivshmem *iv, int sock)
{
	int i, ret;

	ret = hostd_ivshmem_send(sock, 0, -1);
	if (!ret)
		ret = hostd_ivshmem_send(sock, iv->guest_peer, -1);
	if (!ret)
		ret = hostd_ivshmem_send(sock, -1, iv->bar2_fd);
	for (i = 0; !ret && i < VBUS_PCI_NR_VECTORS; i++)
		ret = hostd_ivshmem_send(sock, iv->host_peer, iv->db_fd[i]);
	for (i = 0; !ret && i < (int)iv->nr_msix; i++)
		ret = hostd_ivshmem_send(sock, iv->guest_peer, iv->msix_fd[i]);
	return ret;
}

/* ---- BAR2 ------------------------------------------------------------------ */

/* The size is sealed, so nobody can shrink it under our mapping (SIGBUS). */
static int bar2_create(struct hostd_ivshmem *iv)
{
	struct vbus_pci_shm *shm;
	int fd, err;

	fd = memfd_create(iv->name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, VBUS_PCI_SHM_SIZE) < 0 ||
	    fcntl(fd, F_ADD_SEALS, BAR2_SEALS | F_SEAL_SEAL) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	shm = mmap(NULL, VBUS_PCI_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	if (shm == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	/* a new memfd reads as zeros: only line 0 needs filling */
	shm->magic = VBUS_PCI_ABI_MAGIC;
	shm->version = VBUS_PCI_ABI_VERSION;
	shm->size = VBUS_PCI_SHM_SIZE;
	shm->host_peer = iv->host_peer;
	shm->features = 0;
	shm->msix_vectors = iv->vectors;
	iv->bar2_fd = fd;
	iv->shm = shm;
	return 0;
}

static void bar2_destroy(struct hostd_ivshmem *iv)
{
	if (iv->shm)
		munmap(iv->shm, VBUS_PCI_SHM_SIZE);
	if (iv->bar2_fd >= 0)
		close(iv->bar2_fd);
	iv->shm = NULL;
	iv->bar2_fd = -1;
}

/* ---- vectors ------------------------------------------------------------------ */

void hostd_ivshmem_irq(struct hostd_ivshmem *iv, unsigned int vector)
{
	if (vector < iv->nr_msix && iv->msix_fd[vector] >= 0)
		hostd_eventfd_write(iv->msix_fd[vector]);
}

int hostd_ivshmem_set_vectors(struct hostd_ivshmem *iv, unsigned int n)
{
	if (n < VBUS_PCI_NR_VECTORS || n > VBUS_PCI_MAX_VECTORS)
		return -EINVAL;
	if (iv->conn_fd >= 0 || iv->nr_msix)
		return -EBUSY;
	iv->vectors = n;
	/* no QEMU has BAR2 yet: line 0 is still ours to fill */
	if (iv->shm)
		iv->shm->msix_vectors = n;
	return 0;
}

unsigned int hostd_ivshmem_qvecs(const struct hostd_ivshmem *iv)
{
	return iv->nr_msix > VBUS_PCI_NR_VECTORS ?
	       iv->nr_msix - VBUS_PCI_NR_VECTORS : 0;
}

/*
 * Drain first, then tell the owner: a doorbell rung after the drain makes
 * the eventfd readable again, so whatever it announces is never stranded.
 */
static void on_doorbell(struct hostd_ivshmem *iv, int fd, unsigned int v)
{
	hostd_eventfd_drain(fd);
	iv->ops->doorbell(iv->arg, v);
}

static void on_db_hc(void *arg, int fd, __u32 events)
{
	(void)events;
	on_doorbell(arg, fd, VBUS_PCI_DB_HC);
}

static void on_db_signal(void *arg, int fd, __u32 events)
{
	(void)events;
	on_doorbell(arg, fd, VBUS_PCI_DB_SIGNAL);
}

static int vectors_open(struct hostd_ivshmem *iv)
{
	int i, ret;

	for (i = 0; i < VBUS_PCI_NR_VECTORS; i++) {
		iv->db_fd[i] = hostd_eventfd_new();
		if (iv->db_fd[i] < 0)
			return iv->db_fd[i];
	}
	for (i = 0; i < (int)iv->vectors; i++) {
		iv->msix_fd[i] = hostd_eventfd_new();
		if (iv->msix_fd[i] < 0)
			return iv->msix_fd[i];
		iv->nr_msix = (unsigned int)i + 1;
	}
	ret = hostd_loop_add(iv->loop, iv->db_fd[VBUS_PCI_DB_HC], EPOLLIN,
			     on_db_hc, iv);
	if (!ret)
		ret = hostd_loop_add(iv->loop, iv->db_fd[VBUS_PCI_DB_SIGNAL],
				     EPOLLIN, on_db_signal, iv);
	return ret;
}

static void vectors_close(struct hostd_ivshmem *iv)
{
	int i;

	for (i = 0; i < VBUS_PCI_NR_VECTORS; i++) {
		if (iv->db_fd[i] >= 0) {
			hostd_loop_del(iv->loop, iv->db_fd[i]);
			close(iv->db_fd[i]);
		}
		iv->db_fd[i] = -1;
	}
	for (i = 0; i < VBUS_PCI_MAX_VECTORS; i++) {
		if (iv->msix_fd[i] >= 0)
			close(iv->msix_fd[i]);
		iv->msix_fd[i] = -1;
	}
	iv->nr_msix = 0;
}

/* ---- the connection --------------------------------------------------------------- */

int hostd_ivshmem_open(struct hostd_ivshmem *iv)
{
	int ret;

	ret = iv->shm ? 0 : bar2_create(iv);
	if (!ret)
		ret = vectors_open(iv);
	if (ret < 0) {
		vectors_close(iv);
		return ret;
	}
	iv->ops->connect(iv->arg);
	return 0;
}

/* Everything of the connection, BAR2 included. */
static void teardown(struct hostd_ivshmem *iv)
{
	iv->ops->disconnect(iv->arg);
	vectors_close(iv);
	if (iv->conn_fd >= 0) {
		hostd_loop_del(iv->loop, iv->conn_fd);
		close(iv->conn_fd);
		iv->conn_fd = -1;
	}
	bar2_destroy(iv);
}

void hostd_ivshmem_close(struct hostd_ivshmem *iv)
{
	teardown(iv);
	/* be ready for the next QEMU right away (BAR2 exists before it) */
	if (bar2_create(iv) < 0)
		hostd_log_limited(iv->log, "cannot create BAR2");
}

bool hostd_ivshmem_connected(const struct hostd_ivshmem *iv)
{
	return iv->conn_fd >= 0;
}

static void on_conn(void *arg, int fd, __u32 events)
{
	struct hostd_ivshmem *iv = arg;
	char buf[64];
	ssize_t n;

	/* QEMU never sends anything on this socket: read to see EOF */
	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR) &&
		      !(events & (EPOLLHUP | EPOLLERR))))
		return;
	hostd_log("%sQEMU disconnected; bus torn down, waiting for a new connection",
		  iv->log->prefix);
	if (iv->conn_hook)
		iv->conn_hook(iv->conn_hook_arg, false);
	hostd_ivshmem_close(iv);
}

/* A new QEMU: vectors, handshake, then watch for its EOF. */
static int conn_start(struct hostd_ivshmem *iv, int fd)
{
	struct timeval tv = { .tv_sec = 2 };
	int ret;

	/* a client that does not read cannot stall the loop for long */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	iv->conn_fd = fd;
	ret = hostd_ivshmem_open(iv);
	if (ret < 0) {
		hostd_log("%sconnection setup: %s", iv->log->prefix, strerror(-ret));
		return ret;
	}
	ret = hostd_ivshmem_handshake(iv, fd);
	if (!ret)
		ret = hostd_loop_add(iv->loop, fd, EPOLLIN | EPOLLRDHUP, on_conn,
				     iv);
	if (ret < 0)
		hostd_log("%sivshmem handshake: %s", iv->log->prefix,
			  strerror(-ret));
	return ret;
}

static void on_accept(void *arg, int lfd, __u32 events)
{
	struct hostd_ivshmem *iv = arg;
	struct ucred cr;
	int fd;

	(void)events;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	/* BAR2 and the guest's vectors go to whoever this is: check who */
	if (!hostd_sock_peer_ok(fd, &iv->peer, &cr)) {
		iv->refused++;
		hostd_log_limited(iv->log, "%s: refused a connection from uid %d gid %d (pid %d): QEMU must run as root, as the daemon's uid %u or as the guest's qemu_uid=/qemu_gid=",
				  iv->sock, (int)cr.uid, (int)cr.gid,
				  (int)cr.pid, (unsigned int)geteuid());
		close(fd);
		return;
	}
	if (iv->conn_fd >= 0) {
		iv->refused++;
		hostd_log_limited(iv->log, "second connection on %s refused (one QEMU per guest)",
				  iv->sock);
		close(fd);
		return;
	}
	if (conn_start(iv, fd) < 0) {
		hostd_ivshmem_close(iv);
		return;
	}
	iv->connections++;
	hostd_log("%sQEMU connected (connection %llu)", iv->log->prefix,
		  (unsigned long long)iv->connections);
	if (iv->conn_hook)
		iv->conn_hook(iv->conn_hook_arg, true);
}

int hostd_ivshmem_listen(struct hostd_ivshmem *iv, const char *path,
			 const struct hostd_peer_rule *peer, char *err,
			 size_t errlen)
{
	int fd, ret;

	if (strlen(path) >= sizeof(iv->sock)) {
		snprintf(err, errlen, "%s: socket path too long", path);
		return -ENAMETOOLONG;
	}
	fd = hostd_sock_listen(path, err, errlen);
	if (fd < 0)
		return fd;
	ret = hostd_loop_add(iv->loop, fd, EPOLLIN, on_accept, iv);
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		close(fd);
		unlink(path);
		return ret;
	}
	iv->listen_fd = fd;
	iv->peer = *peer;
	strcpy(iv->sock, path);
	return 0;
}

/* ---- restarts (docs/transport.md, "Host restarts") ------------------------------ */

bool hostd_ivshmem_fds(const struct hostd_ivshmem *iv,
		       struct hostd_ivshmem_fds *fds)
{
	int i;

	if (iv->conn_fd < 0)
		return false;
	fds->conn = iv->conn_fd;
	fds->bar2 = iv->bar2_fd;
	for (i = 0; i < VBUS_PCI_NR_VECTORS; i++)
		fds->db[i] = iv->db_fd[i];
	for (i = 0; i < VBUS_PCI_MAX_VECTORS; i++)
		fds->msix[i] = i < (int)iv->nr_msix ? iv->msix_fd[i] : -1;
	fds->nr_msix = iv->nr_msix;
	return true;
}

/* How many of @fds' vectors count: HC and EVENTQ at least, at most all. */
static unsigned int fds_nr_msix(const struct hostd_ivshmem_fds *fds)
{
	if (fds->nr_msix < VBUS_PCI_NR_VECTORS)
		return VBUS_PCI_NR_VECTORS;
	if (fds->nr_msix > VBUS_PCI_MAX_VECTORS)
		return VBUS_PCI_MAX_VECTORS;
	return fds->nr_msix;
}

static void fds_close(const struct hostd_ivshmem_fds *fds)
{
	unsigned int i;

	close(fds->conn);
	close(fds->bar2);
	for (i = 0; i < VBUS_PCI_NR_VECTORS; i++)
		close(fds->db[i]);
	for (i = 0; i < fds_nr_msix(fds); i++)
		close(fds->msix[i]);
}

/*
 * The adopted connection has the vectors that were stored; vectors= may
 * have wanted more (a store of an older daemon, HC and EVENTQ only, or
 * vectors= raised since QEMU started). Said once, at adoption.
 */
static void adopt_vectors_log(const struct hostd_ivshmem *iv)
{
	if (iv->nr_msix >= iv->vectors)
		return;
	if (iv->nr_msix == VBUS_PCI_NR_VECTORS)
		hostd_log("%sthe stored connection has no queue vector eventfds (vectors=%u; stored by an older vbus-hostd, or vectors= raised since QEMU started): per-queue vectors declined, the guest's queues are signalled through the eventq until QEMU connects again",
			  iv->log->prefix, iv->vectors);
	else
		hostd_log("%sthe stored connection has %u MSI-X eventfds, vectors= says %u: %u queue vectors until QEMU connects again",
			  iv->log->prefix, iv->nr_msix, iv->vectors,
			  iv->nr_msix - VBUS_PCI_NR_VECTORS);
}

/* Map a BAR2 an earlier daemon made; it must carry our line 0. */
static int bar2_adopt(struct hostd_ivshmem *iv, int fd, char *err,
		      size_t errlen)
{
	struct vbus_pci_shm *shm;
	struct stat st;
	__u32 magic;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size != VBUS_PCI_SHM_SIZE) {
		snprintf(err, errlen, "stored BAR2 is not a %d-byte memfd",
			 VBUS_PCI_SHM_SIZE);
		return -EINVAL;
	}
	/*
	 * Ours were sealed against shrinking and growing (bar2_create): one
	 * without those seals could be truncated under our mapping, and the
	 * next access would be a SIGBUS.
	 */
	if ((fcntl(fd, F_GET_SEALS) & BAR2_SEALS) != BAR2_SEALS) {
		snprintf(err, errlen,
			 "stored BAR2 is not sealed against shrinking and growing: not one this daemon made");
		return -EINVAL;
	}
	shm = mmap(NULL, VBUS_PCI_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	if (shm == MAP_FAILED) {
		snprintf(err, errlen, "stored BAR2: mmap: %s", strerror(errno));
		return -errno;
	}
	magic = VBUS_READ(shm->magic);
	if (magic != VBUS_PCI_ABI_MAGIC ||
	    VBUS_READ(shm->version) != VBUS_PCI_ABI_VERSION ||
	    VBUS_READ(shm->host_peer) != iv->host_peer) {
		munmap(shm, VBUS_PCI_SHM_SIZE);
		snprintf(err, errlen, "stored BAR2 is not a vbus BAR2 (magic %#x)",
			 magic);
		return -EINVAL;
	}
	bar2_destroy(iv);
	iv->bar2_fd = fd;
	iv->shm = shm;
	return 0;
}

static void epoch_set(struct hostd_ivshmem *iv, __u32 epoch)
{
	/*
	 * Everything we wrote before (the -ENOTCONN answer, and on the way
	 * down: nothing after) is visible before the epoch. Pairs with the
	 * guest's rmb between reading host_epoch and acting on it.
	 */
	vbus_wmb();
	VBUS_WRITE(iv->shm->host_epoch, epoch);
	hostd_ivshmem_irq(iv, VBUS_PCI_MSIX_HC);
	hostd_ivshmem_irq(iv, VBUS_PCI_MSIX_EVENTQ);
}

int hostd_ivshmem_adopt(struct hostd_ivshmem *iv,
			const struct hostd_ivshmem_fds *fds,
			char *err, size_t errlen)
{
	int i, ret;

	ret = bar2_adopt(iv, fds->bar2, err, errlen);
	if (ret < 0) {
		fds_close(fds);
		return ret;
	}
	iv->conn_fd = fds->conn;
	for (i = 0; i < VBUS_PCI_NR_VECTORS; i++)
		iv->db_fd[i] = fds->db[i];
	/*
	 * Every stored vector: QEMU has them all, and NEGOTIATE accepts
	 * VBUS_PCI_CAP_QVEC again when there are queue vectors among them.
	 */
	iv->nr_msix = fds_nr_msix(fds);
	for (i = 0; i < (int)iv->nr_msix; i++)
		iv->msix_fd[i] = fds->msix[i];
	ret = hostd_loop_add(iv->loop, iv->db_fd[VBUS_PCI_DB_HC], EPOLLIN,
			     on_db_hc, iv);
	if (!ret)
		ret = hostd_loop_add(iv->loop, iv->db_fd[VBUS_PCI_DB_SIGNAL],
				     EPOLLIN, on_db_signal, iv);
	if (!ret)
		ret = hostd_loop_add(iv->loop, iv->conn_fd,
				     EPOLLIN | EPOLLRDHUP, on_conn, iv);
	if (ret < 0) {
		snprintf(err, errlen, "stored connection: %s", strerror(-ret));
		teardown(iv);
		bar2_create(iv);
		return ret;
	}
	iv->ops->connect(iv->arg);
	iv->connections++;
	epoch_set(iv, (VBUS_READ(iv->shm->host_epoch) | 1) + 1);
	hostd_log("%sQEMU connection taken over (host epoch %u)",
		  iv->log->prefix, VBUS_READ(iv->shm->host_epoch));
	adopt_vectors_log(iv);
	return 0;
}

void hostd_ivshmem_going_down(struct hostd_ivshmem *iv)
{
	if (iv->conn_fd < 0 || !iv->shm)
		return;
	epoch_set(iv, VBUS_READ(iv->shm->host_epoch) | 1);
}

/* ---- lifetime ---------------------------------------------------------------------- */

int hostd_ivshmem_init(struct hostd_ivshmem *iv, struct hostd_loop *loop,
		       struct hostd_log_limit *log, const char *name,
		       const struct hostd_ivshmem_ops *ops, void *arg)
{
	int i;

	memset(iv, 0, sizeof(*iv));
	iv->loop = loop;
	iv->log = log;
	iv->ops = ops;
	iv->arg = arg;
	snprintf(iv->name, sizeof(iv->name), "vbus-bar2-%s", name);
	iv->listen_fd = iv->conn_fd = iv->bar2_fd = -1;
	for (i = 0; i < VBUS_PCI_NR_VECTORS; i++)
		iv->db_fd[i] = -1;
	for (i = 0; i < VBUS_PCI_MAX_VECTORS; i++)
		iv->msix_fd[i] = -1;
	iv->vectors = VBUS_PCI_NR_VECTORS;
	iv->host_peer = 0;
	iv->guest_peer = 1;
	return bar2_create(iv);
}

void hostd_ivshmem_fini(struct hostd_ivshmem *iv)
{
	if (!iv->loop)
		return;		/* never initialised */
	teardown(iv);
	if (iv->listen_fd >= 0) {
		hostd_loop_del(iv->loop, iv->listen_fd);
		close(iv->listen_fd);
		unlink(iv->sock);
		iv->listen_fd = -1;
	}
}
