// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libioq vbus-ipc endpoints (see <vbus/ioq_channel.h>, "vbus-ipc", and
 * core/include/vbus/vbus_ipc.h): the same code runs in the guest process
 * (over /dev/vbus-ipcN) and in the host process (over the fds vbus-hostd
 * passes on the service socket).
 *
 * Each end is north of its tx ring and south of its rx ring. The rings
 * and areas are in the region; the layout is copied out of it once and
 * checked (vbus_ipc_layout_check), and every received descriptor is
 * checked against that copy (vbus_ipc_msg_check) before a byte of the
 * message is read: a bad one faults the endpoint (-EIO from then on).
 *
 * Signals. Both rings' shm-signals share one doorbell per direction (the
 * DATA vector): every inject rings it (8 bytes to doorbell_fd); a readable
 * wait_fd runs the wakeup of both of this end's signals, each of which
 * looks at its ring. The session ends when the header says so (state or
 * session number changed), when the guest driver answers -EPIPE, or when
 * vbus-hostd closes the host's socket.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <vbus/ioq_channel.h>
#include <vbus/poll_window.h>
#include <vbus/vbus_ipc.h>
#include "fd_pass.h"
#include "ipc_priv.h"

struct ipc_dir {
	struct ioq_ring_head *head;
	struct shm_signal signal;
	struct ioq ioq;
	struct ioq_notifier notifier;
	unsigned char *area;
};

struct ioq_ipc {
	enum ioq_ipc_role role;
	int wait_fd, doorbell_fd;	/* the guest: both the device */
	int ctl_fd;		/* the host: the service socket; else -1 */
	int poll_fd;		/* with ctl_fd: epoll of wait_fd + ctl_fd */
	int shm_fd;		/* the host: the region; else -1 */
	void *map;
	size_t map_len;
	struct vbus_ipc_shm *shm;
	struct vbus_ipc_layout lay;	/* checked local copy */
	__u32 session;
	int ended;		/* the session is over: -EPIPE */
	int kicked_self;	/* a deferred notify wants a run */
	int armed;		/* ioq_ipc_arm() unmasked for the caller's loop */
	__u64 poll_cap_ns;	/* IOQ_IPC_POLL_US at attach (0: never poll) */
	__u64 poll_ns;		/* the poll window now (vbus_poll_window_adapt) */
	struct ipc_dir tx, rx;
	struct ioq_ipc_stats st;
};

#define ipc_of(ptr, member) \
	((struct ioq_ipc *)((char *)(ptr) - offsetof(struct ioq_ipc, member)))

/* ---- the doorbell ---------------------------------------------------------- */

static int ring_doorbell(struct ioq_ipc *ipc)
{
	uint64_t one = 1;
	ssize_t n;

	do {
		n = write(ipc->doorbell_fd, &one, sizeof(one));
	} while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(one))
		return 0;
	/* a full eventfd counter: the peer has doorbells it has not read */
	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n < 0 && errno == EPIPE)
		ipc->ended = 1;
	return n < 0 ? -errno : -EIO;
}

static int tx_inject(struct shm_signal *s)
{
	struct ioq_ipc *ipc = ipc_of(s, tx.signal);

	ipc->st.kicks++;	/* the public name of the doorbell count */
	return ring_doorbell(ipc);
}

static int rx_inject(struct shm_signal *s)
{
	struct ioq_ipc *ipc = ipc_of(s, rx.signal);

	ipc->st.kicks++;
	return ring_doorbell(ipc);
}

static const struct shm_signal_ops tx_ops = { .inject = tx_inject };
static const struct shm_signal_ops rx_ops = { .inject = rx_inject };

/* The next ioq_ipc_wait() must not sleep before it runs the notify. */
static void kick_self(void *arg)
{
	((struct ioq_ipc *)arg)->kicked_self = 1;
}

static void dir_notify(struct ioq_notifier *n)
{
	(void)n;	/* the callers look at the rings themselves */
}

/* ---- attach ------------------------------------------------------------------ */

/*
 * The bound of ioq_ipc_wait's poll window (ioq_ipc(3), "Waiting"): the
 * environment's IOQ_IPC_POLL_US if it is a number of microseconds up to
 * IPC_POLL_MAX_US, else IPC_POLL_DEFAULT_US.
 */
#define IPC_POLL_DEFAULT_US 200
#define IPC_POLL_MAX_US 10000
static __u64 poll_cap_from_env(void)
{
	const char *v = getenv("IOQ_IPC_POLL_US");
	unsigned long us = IPC_POLL_DEFAULT_US;
	char *end;

	if (v && *v) {
		errno = 0;
		us = strtoul(v, &end, 10);
		if (errno || *end || us > IPC_POLL_MAX_US)
			us = IPC_POLL_DEFAULT_US;
	}
	return (__u64)us * 1000;
}

/* the narrowest window: a quarter of the bound (0 with it: no polling) */
static __u64 poll_floor(const struct ioq_ipc *ipc)
{
	return ipc->poll_cap_ns / 4;
}

static struct ioq_ipc *ipc_alloc(enum ioq_ipc_role role)
{
	struct ioq_ipc *ipc = calloc(1, sizeof(*ipc));

	if (!ipc)
		return NULL;
	ipc->role = role;
	ipc->poll_cap_ns = poll_cap_from_env();
	ipc->poll_ns = poll_floor(ipc);
	ipc->wait_fd = ipc->doorbell_fd = ipc->ctl_fd = ipc->shm_fd = -1;
	ipc->poll_fd = -1;
	return ipc;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void ipc_free(struct ioq_ipc *ipc)
{
	if (ipc->map)
		munmap(ipc->map, ipc->map_len);
	if (ipc->doorbell_fd != ipc->wait_fd)
		close_fd(&ipc->doorbell_fd);
	close_fd(&ipc->wait_fd);
	close_fd(&ipc->ctl_fd);
	close_fd(&ipc->poll_fd);
	close_fd(&ipc->shm_fd);
	free(ipc);
}

/*
 * The one descriptor a caller's own loop polls (ioq_ipc_pollfd): with a
 * control socket, an epoll of it and the doorbell, so that the session's
 * end (the socket's EOF) wakes that loop as a doorbell does.
 */
static int ipc_poll_fd(struct ioq_ipc *ipc)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd;

	if (ipc->ctl_fd < 0)
		return 0;
	fd = epoll_create1(EPOLL_CLOEXEC);
	if (fd < 0)
		return -errno;
	ipc->poll_fd = fd;
	if (epoll_ctl(fd, EPOLL_CTL_ADD, ipc->wait_fd, &ev) < 0)
		return -errno;
	ev.events = EPOLLIN | EPOLLRDHUP;
	if (epoll_ctl(fd, EPOLL_CTL_ADD, ipc->ctl_fd, &ev) < 0)
		return -errno;
	return 0;
}

/* Bind one direction: check the ring vbus-hostd formatted, then init. */
static int dir_bind(struct ioq_ipc *ipc, struct ipc_dir *d, int dir,
		    enum ioq_locality locale, const struct shm_signal_ops *ops)
{
	const struct vbus_ipc_layout *l = &ipc->lay;
	struct ioq_ring_head *head;
	__u32 ver;
	long n;
	int err;

	head = (struct ioq_ring_head *)((char *)ipc->map + l->ring_off[dir]);
	d->area = (unsigned char *)ipc->map + l->area_off[dir];
	/* bind the version we checked, never a second read of the header */
	n = ioq_ring_check_ver(head, IOQ_HEAD_DESC_SIZE(l->count), l->count,
			       &ver);
	if (n < 0)
		return (int)n;
	shm_signal_init(&d->signal, (enum shm_signal_locality)locale, ops,
			&head->signal);
	vbus_defer_set_kick(&d->signal.deferred_notify, kick_self, ipc);
	/* the ioq takes over the signal's initial reference */
	err = ioq_init_ver(&d->ioq, NULL, locale, head, &d->signal, l->count,
			   ver);
	if (err)
		return err;
	d->head = head;	/* from here on ioq_ipc_close() puts the ioq */
	d->notifier.signal = dir_notify;
	d->ioq.notifier = &d->notifier;
	return 0;
}

/* The session this end attached to is still the region's live one. */
static int ipc_alive(struct ioq_ipc *ipc)
{
	__u32 state = VBUS_READ(ipc->shm->state);
	__u32 session = VBUS_READ(ipc->shm->session);

	if (state != VBUS_IPC_STATE_ACTIVE || session != ipc->session)
		ipc->ended = 1;
	return !ipc->ended;
}

/*
 * Map-independent part of every attach: copy and check the layout, bind
 * both directions (the guest sends on G2H, the host on H2G) and let the
 * peer's signals in.
 */
static int ipc_bind(struct ioq_ipc *ipc, size_t size)
{
	int tx = ipc->role == IOQ_IPC_GUEST ? VBUS_IPC_G2H : VBUS_IPC_H2G;
	int err;

	if (size < VBUS_IPC_HDR_SIZE)
		return -EMSGSIZE;
	ipc->shm = ipc->map;
	if (VBUS_READ(ipc->shm->magic) != VBUS_IPC_MAGIC ||
	    VBUS_READ(ipc->shm->version) != VBUS_IPC_ABI_VERSION)
		return -EPROTO;
	memcpy(&ipc->lay, &ipc->shm->layout, sizeof(ipc->lay));
	if (vbus_ipc_layout_check(&ipc->lay, size))
		return -EINVAL;
	if (!ipc_alive(ipc))
		return -EPIPE;
	err = dir_bind(ipc, &ipc->tx, tx, ioq_locality_north, &tx_ops);
	if (!err)
		err = dir_bind(ipc, &ipc->rx, !tx, ioq_locality_south, &rx_ops);
	if (err)
		return err;
	/* the rx ring's notifications are wanted only while we sleep */
	ioq_notify_disable(&ipc->rx.ioq, 0);
	ioq_notify_disable(&ipc->tx.ioq, 0);
	return 0;
}

static int ipc_map(struct ioq_ipc *ipc, int fd, size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	ipc->map = p;
	ipc->map_len = size;
	return 0;
}

int ioq_ipc_attach_fds(struct ioq_ipc **ipcp, enum ioq_ipc_role role,
		       const struct ioq_ipc_fds *fds)
{
	struct ioq_ipc *ipc;
	struct stat st;
	int err;

	if (!ipcp || !fds || (role != IOQ_IPC_GUEST && role != IOQ_IPC_HOST))
		return -EINVAL;
	*ipcp = NULL;
	ipc = ipc_alloc(role);
	if (!ipc)
		return -ENOMEM;
	ipc->shm_fd = fcntl(fds->shm_fd, F_DUPFD_CLOEXEC, 0);
	ipc->wait_fd = fcntl(fds->wait_fd, F_DUPFD_CLOEXEC, 0);
	ipc->doorbell_fd = fcntl(fds->kick_fd, F_DUPFD_CLOEXEC, 0);
	if (fds->ctl_fd >= 0)
		ipc->ctl_fd = fcntl(fds->ctl_fd, F_DUPFD_CLOEXEC, 0);
	if (ipc->shm_fd < 0 || ipc->wait_fd < 0 || ipc->doorbell_fd < 0 ||
	    (fds->ctl_fd >= 0 && ipc->ctl_fd < 0)) {
		err = -errno;
		goto fail;
	}
	ipc->session = fds->session;
	if (fstat(ipc->shm_fd, &st) < 0) {
		err = -errno;
		goto fail;
	}
	if (st.st_size < VBUS_IPC_HDR_SIZE ||
	    (__u64)st.st_size > VBUS_IPC_MAX_SIZE) {
		err = -EMSGSIZE;
		goto fail;
	}
	err = ipc_map(ipc, ipc->shm_fd, (size_t)st.st_size);
	if (!err)
		err = ipc_bind(ipc, (size_t)st.st_size);
	if (!err)
		err = ipc_poll_fd(ipc);
	if (err)
		goto fail;
	*ipcp = ipc;
	return 0;
fail:
	ipc_free(ipc);
	return err;
}

int ioq_ipc_attach_dev(struct ioq_ipc **ipcp, const char *path,
		       int timeout_ms)
{
	struct vbus_ipc_info info;
	struct ioq_ipc *ipc;
	int err;

	if (!ipcp || !path)
		return -EINVAL;
	*ipcp = NULL;
	ipc = ipc_alloc(IOQ_IPC_GUEST);
	if (!ipc)
		return -ENOMEM;
	ipc->wait_fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (ipc->wait_fd < 0) {
		err = -errno;
		goto fail;
	}
	ipc->doorbell_fd = ipc->wait_fd;
	if (ioctl(ipc->wait_fd, VBUS_IPC_IOC_WAIT_SESSION,
		  (unsigned long)(timeout_ms < 0 ? 0xffffffffu :
					(unsigned int)timeout_ms)) < 0 ||
	    ioctl(ipc->wait_fd, VBUS_IPC_IOC_INFO, &info) < 0) {
		err = -errno;
		goto fail;
	}
	ipc->session = info.session;
	/* a link's south guest sends on H2G, as a host process does */
	if (info.side == VBUS_IPC_SIDE_SOUTH)
		ipc->role = IOQ_IPC_HOST;
	err = ipc_map(ipc, ipc->wait_fd, info.size);
	if (!err)
		err = ipc_bind(ipc, info.size);
	if (err)
		goto fail;
	*ipcp = ipc;
	return 0;
fail:
	ipc_free(ipc);
	return err;
}

/* Wait up to @timeout_ms for @fd to be readable: 1, 0 on timeout, -errno. */
static int poll_in(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n;

	do {
		n = poll(&p, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* One attach message and exactly its fds, or -EPROTO (all closed). */
static int recv_attach(int sock, struct vbus_ipc_attach *m, int *fdv)
{
	int err;

	err = ioq_recv_fds(sock, m, sizeof(*m), fdv, VBUS_IPC_ATTACH_NFDS);
	if (err)
		return err;
	if (m->magic != VBUS_IPC_ATTACH_MAGIC ||
	    m->version != VBUS_IPC_ABI_VERSION) {
		ioq_close_fds(fdv, VBUS_IPC_ATTACH_NFDS);
		return -EPROTO;
	}
	return 0;
}

int ioq_ipc_attach_host(struct ioq_ipc **ipcp, const char *sock_path,
			int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct vbus_ipc_attach m;
	struct ioq_ipc_fds fds;
	int sock, fdv[VBUS_IPC_ATTACH_NFDS] = { -1, -1, -1 }, err;

	if (!ipcp || !sock_path || strlen(sock_path) >= sizeof(sa.sun_path))
		return -EINVAL;
	*ipcp = NULL;
	strcpy(sa.sun_path, sock_path);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -errno;
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		goto out;
	}
	/* vbus-hostd answers once a guest process has the channel open */
	err = poll_in(sock, timeout_ms);
	if (err == 0)
		err = -ETIMEDOUT;
	if (err < 0)
		goto out;
	err = recv_attach(sock, &m, fdv);
	if (err)
		goto out;
	fds = (struct ioq_ipc_fds){ .shm_fd = fdv[0], .wait_fd = fdv[1],
				    .kick_fd = fdv[2], .ctl_fd = sock,
				    .session = m.session };
	err = ioq_ipc_attach_fds(ipcp, IOQ_IPC_HOST, &fds);
	ioq_close_fds(fdv, VBUS_IPC_ATTACH_NFDS);
out:
	close(sock);
	return err;
}

/* ---- state ------------------------------------------------------------------- */

/* One check for the whole endpoint: faulted, or its session is over. */
static int ipc_state(struct ioq_ipc *ipc)
{
	if (shm_signal_faulted(&ipc->tx.signal) ||
	    shm_signal_faulted(&ipc->rx.signal))
		return -EIO;
	return ipc_alive(ipc) ? 0 : -EPIPE;
}

/* A peer's mistake: stop using this endpoint for good. */
static int ipc_fault(struct ioq_ipc *ipc, const char *why)
{
	ipc->st.faults++;
	shm_signal_fault(&ipc->rx.signal, why);
	return -EIO;
}

/* ---- send ---------------------------------------------------------------------- */

/*
 * Take back the tx buffers the peer has consumed (in ring order): one
 * claim and one publication of inuse's head for all of them. Nothing of
 * the descriptors is read: slot i's buffer is fixed.
 */
static int tx_reap(struct ioq_ipc *ipc)
{
	__u32 pos;
	int k, err;

	/* [A2] inside: valid's head before the completions */
	k = ioq_reap_begin(&ipc->tx.ioq, ipc->lay.count, &pos);
	if (k <= 0)
		return k;
	/* [R3] inside: inuse's head */
	err = ioq_reap_end(&ipc->tx.ioq, (unsigned int)k, 0);
	return err < 0 ? err : k;
}

/* Something posted by the peer and not consumed yet (a claim of one) */
static int rx_pending(struct ioq_ipc *ipc, __u32 *pos)
{
	return ioq_consume_begin(&ipc->rx.ioq, 1, pos) > 0;
}

/* Completions the peer handed back and we have not reaped yet */
static int tx_pending(struct ioq_ipc *ipc)
{
	__u32 pos;

	return ioq_reap_begin(&ipc->tx.ioq, 1, &pos) > 0;
}

int ioq_ipc_send(struct ioq_ipc *ipc, const void *buf, size_t len, int flags)
{
	struct ioq_ring_desc *d;
	__u64 off;
	__u32 pos;
	int err;

	err = ipc_state(ipc);
	if (err)
		return err;
	if (len > ipc->lay.buf_size)
		return -EMSGSIZE;
	err = tx_reap(ipc);
	if (err < 0)
		return err;
	/* a caller may also push through ioq_ipc_ioq(): post at the tail */
	err = ioq_post_begin(&ipc->tx.ioq, 1, &pos);
	if (err <= 0)
		return err < 0 ? err : -EAGAIN;
	/* the buffer of a slot is fixed: slot i owns [i * buf_size, +buf_size) */
	off = (__u64)(pos & (ipc->lay.count - 1)) * ipc->lay.buf_size;
	memcpy(ipc->tx.area + off, buf, len);
	d = ioq_desc(&ipc->tx.ioq, pos);
	d->cookie = ipc->st.sent;
	d->ptr = off;
	d->len = len;
	d->valid = 1;
	/* [R1] inside: the message and the descriptor before the tail */
	err = ioq_post_end(&ipc->tx.ioq, 1, 0);
	if (err)
		return err;
	ipc->st.sent++;
	if (!(flags & IOQ_IPC_MORE))
		return ioq_signal(&ipc->tx.ioq, 0);
	return 0;
}

int ioq_ipc_flush(struct ioq_ipc *ipc)
{
	int err = ipc_state(ipc);

	return err ? err : ioq_signal(&ipc->tx.ioq, 0);
}

/* ---- receive ---------------------------------------------------------------------- */

long ioq_ipc_recv(struct ioq_ipc *ipc, void *buf, size_t cap)
{
	struct ioq_ring_desc *d;
	__u64 ptr, len;
	__u32 pos;
	int err;

	err = ipc_state(ipc);
	if (err)
		return err;
	/* [A1] inside: the tail before the descriptor and message */
	if (!rx_pending(ipc, &pos))
		return ipc_state(ipc) ? ipc_state(ipc) : -EAGAIN;
	d = ioq_desc(&ipc->rx.ioq, pos);
	ptr = VBUS_READ(d->ptr);
	len = VBUS_READ(d->len);
	if (vbus_ipc_msg_check(&ipc->lay, ptr, len))
		return ipc_fault(ipc, "vbus-ipc: message outside the area");
	if (len > cap)
		return -EMSGSIZE;	/* left on the ring */
	memcpy(buf, ipc->rx.area + ptr, len);
	/* hands the buffer back ([R2] inside); the peer reaps it */
	err = ioq_consume_end(&ipc->rx.ioq, 1, 0);
	if (err)
		return err;
	ipc->st.received++;
	/* batch the "consumed" signal: one per run of receives */
	if (!rx_pending(ipc, &pos)) {
		err = ioq_signal(&ipc->rx.ioq, 0);
		if (err)
			return err;
	}
	return (long)len;
}

long ipc_next_len(struct ioq_ipc *ipc)
{
	struct ioq_ring_desc *d;
	__u64 ptr, len;
	__u32 pos;
	int err = ipc_state(ipc);

	if (err)
		return err;
	if (!rx_pending(ipc, &pos))
		return -EAGAIN;
	d = ioq_desc(&ipc->rx.ioq, pos);
	ptr = VBUS_READ(d->ptr);
	len = VBUS_READ(d->len);
	if (vbus_ipc_msg_check(&ipc->lay, ptr, len))
		return ipc_fault(ipc, "vbus-ipc: message outside the area");
	return (long)len;
}

long ipc_tx_room(struct ioq_ipc *ipc)
{
	int err = ipc_state(ipc);

	if (!err)
		err = tx_reap(ipc);
	if (err < 0)
		return err;
	return ioq_remain(&ipc->tx.ioq, ioq_idx_reap);
}

/* ---- wait --------------------------------------------------------------------------- */

static int ipc_ready(struct ioq_ipc *ipc, int events)
{
	__u32 pos;

	if ((events & IOQ_IPC_WAIT_RX) && rx_pending(ipc, &pos))
		return 1;
	if ((events & IOQ_IPC_WAIT_TX) && tx_pending(ipc))
		return 1;
	return 0;
}

/* One doorbell: consume it first, then look at both rings. */
static int ipc_doorbell(struct ioq_ipc *ipc)
{
	uint64_t v;

	if (read(ipc->wait_fd, &v, sizeof(v)) < 0 && errno != EAGAIN &&
	    errno != EINTR) {
		if (errno == EPIPE)
			ipc->ended = 1;
		return -errno;
	}
	ipc->kicked_self = 0;
	ipc->st.wakeups++;
	_shm_signal_wakeup(&ipc->rx.signal);
	_shm_signal_wakeup(&ipc->tx.signal);
	vbus_defer_run(&ipc->rx.signal.deferred_notify);
	vbus_defer_run(&ipc->tx.signal.deferred_notify);
	return 0;
}

static int sleep_once(struct ioq_ipc *ipc, int timeout_ms)
{
	struct pollfd p[2] = {
		{ .fd = ipc->wait_fd, .events = POLLIN },
		{ .fd = ipc->ctl_fd, .events = POLLIN },
	};
	int n;

	ipc->st.sleeps++;
	do {
		n = poll(p, ipc->ctl_fd >= 0 ? 2 : 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* vbus-hostd never writes the socket after attach: EOF = ended */
	if (ipc->ctl_fd >= 0 && p[1].revents) {
		ipc->ended = 1;
		return -EPIPE;
	}
	if (p[0].revents & (POLLERR | POLLHUP)) {
		ipc->ended = 1;
		return -EPIPE;
	}
	if (p[0].revents & POLLNVAL)
		return -EBADF;
	return n;
}

/*
 * Mask this end's notifications (no barrier, as shm_signal_disable: a
 * doorbell already on its way costs one spurious wakeup, nothing else).
 */
static void ipc_mask(struct ioq_ipc *ipc)
{
	ioq_notify_disable(&ipc->rx.ioq, 0);
	ioq_notify_disable(&ipc->tx.ioq, 0);
}

/*
 * Unmask for @events, then look again: a post made before the unmask rang
 * nothing, and either the enable's own re-check ([B2] in
 * shm_signal_enable against the peer's [B1]) ran the notifier or we see
 * the post here. 1: ready (masked again); 0: unmasked, nothing ready.
 */
static int ipc_unmask(struct ioq_ipc *ipc, int events)
{
	if (events & IOQ_IPC_WAIT_RX)
		ioq_notify_enable(&ipc->rx.ioq, 0);
	if (events & IOQ_IPC_WAIT_TX)
		ioq_notify_enable(&ipc->tx.ioq, 0);
	/*
	 * An enable that found work, or a wakeup out of budget, left a
	 * deferred notify: run it before deciding to sleep.
	 */
	if (ipc->kicked_self) {
		ipc->kicked_self = 0;
		vbus_defer_run(&ipc->rx.signal.deferred_notify);
		vbus_defer_run(&ipc->tx.signal.deferred_notify);
	}
	if (ipc_ready(ipc, events)) {
		ipc_mask(ipc);
		return 1;
	}
	return 0;
}

/*
 * After an arm the caller's loop may have been woken by our doorbell: take
 * it (else the descriptor stays readable), then the rings are looked at
 * anyway. Only then: a busy channel makes no system call.
 */
static int ipc_disarm(struct ioq_ipc *ipc)
{
	if (!ipc->armed)
		return 0;
	ipc->armed = 0;
	ipc_mask(ipc);
	return poll_in(ipc->wait_fd, 0) > 0 ? ipc_doorbell(ipc) : 0;
}

int ioq_ipc_arm(struct ioq_ipc *ipc, int events)
{
	int err = ipc_state(ipc);

	if (!err)
		err = ipc_disarm(ipc);
	if (err)
		return err;
	if (ipc_ready(ipc, events))
		return 1;
	if (ipc_unmask(ipc, events))
		return 1;
	ipc->armed = 1;
	return 0;
}

static __u64 now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (__u64)t.tv_sec * 1000000000ULL + (__u64)t.tv_nsec;
}

#define IPC_POLL_SPINS 16
static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/*
 * Look at the rings, masked (the peer rings no doorbell), until the poll
 * window from @t0 (the start of the wait) is over, or @limit_ns (the
 * caller's timeout): 1 ready, 0 not, or the session's end. A peer that
 * answers within the window costs neither end a doorbell nor this one a
 * sleep (ioq_ipc(3), "Waiting").
 */
static int poll_rings(struct ioq_ipc *ipc, int events, __u64 t0,
		      __u64 limit_ns)
{
	__u64 w = ipc->poll_ns < limit_ns ? ipc->poll_ns : limit_ns;
	unsigned int i;
	int err;

	while (w && now_ns() - t0 < w) {
		err = ipc_state(ipc);
		if (err)
			return err;
		/* the clock less often than the ring: a guest's may be slow */
		for (i = 0; i < IPC_POLL_SPINS; i++) {
			if (ipc_ready(ipc, events))
				return 1;
			cpu_relax();
		}
		/*
		 * Between looks the CPU goes to whoever else wants it: on a host
		 * with more runnable threads than cores (a TCG guest's vCPUs, its
		 * QEMU, the peer) a spin that kept its core could be keeping the
		 * very peer it waits for off it.
		 */
		sched_yield();
	}
	return 0;
}

/*
 * After a sleep that ended with work the window learns from the gap by
 * vbus-hostd's rule (vbus_poll_window_adapt), with two changes, because the
 * gap after a sleep includes this end's own wakeup, which under TCG (an
 * interrupt into a halted vCPU, an IPI to the one the process slept on)
 * exceeds the bound while the peer answers in microseconds once awake:
 * it learns from gaps up to IPC_POLL_LEARN bounds (two ends that both fell
 * asleep open their windows again instead of waking each other for good),
 * and never closes below the floor. The window itself stays within the
 * bound (the bimodal round trip: docs/devices/vbus_ipc.md, "Waiting").
 */
#define IPC_POLL_LEARN 8
static void poll_adapt(struct ioq_ipc *ipc, __u64 t0)
{
	__u64 ns = vbus_poll_window_adapt(ipc->poll_ns,
					  IPC_POLL_LEARN * ipc->poll_cap_ns,
					  now_ns() - t0);

	if (ns > ipc->poll_cap_ns)
		ns = ipc->poll_cap_ns;
	ipc->poll_ns = ns > poll_floor(ipc) ? ns : poll_floor(ipc);
}

int ioq_ipc_wait(struct ioq_ipc *ipc, int events, int timeout_ms)
{
	struct timespec t0, t1;
	int n, err, left = timeout_ms;
	__u64 start;

	err = ipc_disarm(ipc);
	if (err)
		return err;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	start = now_ns();
	for (;;) {
		err = ipc_state(ipc);
		if (err)
			return err;
		if (ipc_ready(ipc, events))
			return 1;
		/* a zero timeout is a caller's own loop asking: never spin */
		if (timeout_ms != 0) {
			n = poll_rings(ipc, events, start,
				       timeout_ms < 0 ? UINT64_MAX :
				       (__u64)timeout_ms * 1000000);
			if (n)
				return n;
		}
		n = ipc_unmask(ipc, events) ? 0 : sleep_once(ipc, left);
		ipc_mask(ipc);
		if (n < 0)
			return n;
		if (n > 0) {
			err = ipc_doorbell(ipc);
			if (err)
				return err;
			if (ipc_ready(ipc, events)) {
				poll_adapt(ipc, start);
				return 1;
			}
		}
		/* doorbells that bring nothing we wait for still use up time */
		if (timeout_ms >= 0) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			left = timeout_ms - (int)((t1.tv_sec - t0.tv_sec) * 1000 +
						  (t1.tv_nsec - t0.tv_nsec) /
							  1000000);
			if (left <= 0)
				return ipc_ready(ipc, events);
		}
	}
}

/* ---- the rest -------------------------------------------------------------------------- */

int ioq_ipc_pollfd(const struct ioq_ipc *ipc)
{
	return ipc->poll_fd >= 0 ? ipc->poll_fd : ipc->wait_fd;
}

size_t ioq_ipc_max_msg(const struct ioq_ipc *ipc)
{
	return ipc->lay.buf_size;
}

struct ioq *ioq_ipc_ioq(struct ioq_ipc *ipc, int tx)
{
	return tx ? &ipc->tx.ioq : &ipc->rx.ioq;
}

void ioq_ipc_stats(const struct ioq_ipc *ipc, struct ioq_ipc_stats *st)
{
	*st = ipc->st;
	st->injects = ipc->tx.signal.injects + ipc->rx.signal.injects;
}

void ioq_ipc_close(struct ioq_ipc *ipc)
{
	if (!ipc)
		return;
	if (ipc->tx.head) {
		vbus_defer_cancel(&ipc->tx.signal.deferred_notify);
		ioq_put(&ipc->tx.ioq);
	}
	if (ipc->rx.head) {
		vbus_defer_cancel(&ipc->rx.signal.deferred_notify);
		ioq_put(&ipc->rx.ioq);
	}
	ipc_free(ipc);
}
