// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd "vbus-ipc" device, a link (peer=): one channel between two
 * guests instead of a guest and a host process (docs/devices/vbus_ipc.md
 * "Links"). The device's region is served to two QEMUs, each on its own
 * socket: qsock= for the device's guest (the north side, the client) and
 * peer_qsock= for the guest peer= names (the south side, the server).
 * Nothing else can reach the channel: one QEMU per socket, and no host
 * process socket at all.
 *
 * The data path never enters this daemon: each QEMU is given, as peer
 * 0's DATA vector, the eventfd that is the OTHER guest's DATA MSI-X (its
 * irqfd under KVM), so a guest's DATA doorbell is the other guest's
 * interrupt. Peer 0's CTRL vector is this daemon's, per side: a guest
 * rings it when its process opens or closes the device.
 *
 * A session starts when both guests have the device open: fresh rings,
 * session + 1, state ACTIVE, CTRL to both. It ends when either closes,
 * its QEMU goes away (killed, crashed) or its kernel shuts down (the
 * driver closes then): state ENDED, CTRL to both. Both ends then see
 * -EPIPE and must open again; each side's open is served at most once.
 * The MSI-X eventfds live as long as the device: a QEMU that comes back
 * gets the same ones, so the other QEMU's doorbell reaches it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "vbus_ipc_dev.h"

struct link_side {
	struct vbus_ipc_link *l;
	const char *name;	/* "north" or "south", for the log */
	const char *qsock;
	__u32 peer_id;		/* its IVPosition: VBUS_IPC_{NORTH,SOUTH}_PEER */
	int lfd, fd;		/* listening; its QEMU or -1 */
	int db_ctrl;		/* its CTRL doorbell: ours to read */
	int msix[VBUS_IPC_NR_VECTORS];	/* its interrupts */
	__u32 *open_w, *close_w, *served_w;	/* its words in the header */
	__u32 served_open;	/* its open of the last session */
};

struct vbus_ipc_link {
	struct hostd_dev *dev;
	struct vbus_ipc_region *region;
	const char *peer;	/* the south guest's name (peer=) */
	struct link_side side[2];	/* VBUS_IPC_SIDE_NORTH, _SOUTH */
	bool active;
	__u32 session;
	__u64 sessions, refused;
};

static void fd_drop(struct hostd_dev *dev, int *fd, bool polled)
{
	if (*fd < 0)
		return;
	if (polled)
		hostd_fd_del(dev, *fd);
	close(*fd);
	*fd = -1;
}

static void ctrl_all(struct vbus_ipc_link *l)
{
	for (int i = 0; i < 2; i++)
		if (l->side[i].fd >= 0)
			hostd_eventfd_write(l->side[i].msix[VBUS_IPC_VEC_CTRL]);
}

static void session_end(struct vbus_ipc_link *l, const struct link_side *s,
			const char *why)
{
	l->active = false;
	/* release: the state is the last word of the session */
	VBUS_WRITE(l->region->shm->state, VBUS_IPC_STATE_ENDED);
	ctrl_all(l);
	hostd_dev_log(l->dev, "ipc: link session %u ended (%s guest%s%s: %s)",
		      l->session, s->name,
		      s == &l->side[VBUS_IPC_SIDE_SOUTH] ? " " : "",
		      s == &l->side[VBUS_IPC_SIDE_SOUTH] ? l->peer : "", why);
}

static void session_start(struct vbus_ipc_link *l, const __u32 *open)
{
	struct vbus_ipc_shm *shm = l->region->shm;

	if (vbus_ipc_region_format(l->region))
		return;
	l->session++;
	for (int i = 0; i < 2; i++) {
		l->side[i].served_open = open[i];
		*l->side[i].served_w = open[i];
	}
	shm->session = l->session;
	/*
	 * Release: the formatted rings, the session number and both served
	 * opens before the state; pairs with the acquire of state in
	 * ipc_alive() (libioq) and in the guest driver's vbus_ipc_sess().
	 */
	VBUS_WRITE(shm->state, VBUS_IPC_STATE_ACTIVE);
	l->active = true;
	l->sessions++;
	ctrl_all(l);
	hostd_dev_log(l->dev, "ipc: link session %u started (south guest %s)",
		      l->session, l->peer);
}

/*
 * The only place link sessions start or end: after anything that may
 * change the answer (a CTRL doorbell of either guest, a QEMU coming or
 * going). The header words are the guests' (hostile): each is read once
 * here and only decides whether a session runs.
 */
static void session_eval(struct vbus_ipc_link *l)
{
	__u32 open[2], closed[2];
	bool here[2];
	int i;

	for (i = 0; i < 2; i++) {
		struct link_side *s = &l->side[i];

		open[i] = VBUS_READ(*s->open_w);
		closed[i] = VBUS_READ(*s->close_w);
		here[i] = s->fd >= 0 && open[i] != closed[i] &&
			  open[i] != s->served_open;
	}
	for (i = 0; l->active && i < 2; i++) {
		struct link_side *s = &l->side[i];

		if (s->fd < 0)
			session_end(l, s, "its QEMU is gone");
		else if (open[i] != s->served_open || closed[i] == open[i])
			session_end(l, s, "its process closed the channel");
	}
	if (!l->active && here[0] && here[1])
		session_start(l, open);
}

static void on_ctrl(struct hostd_dev *dev, int fd, __u32 events, void *arg)
{
	struct link_side *s = arg;

	(void)dev;
	(void)events;
	/* drain first: a doorbell after it stays readable for the next run */
	hostd_eventfd_drain(fd);
	session_eval(s->l);
}

static void on_qemu(struct hostd_dev *dev, int fd, __u32 events, void *arg)
{
	struct link_side *s = arg;
	char b[64];
	ssize_t n;

	/* QEMU never writes on its socket: anything but EAGAIN is its end */
	n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
	if (!(events & (EPOLLHUP | EPOLLERR)) &&
	    n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	fd_drop(dev, &s->fd, true);
	hostd_dev_log(dev, "ipc: link: the %s guest's QEMU left %s", s->name,
		      s->qsock);
	session_eval(s->l);
	/* an open the old guest never closed is not served again */
	s->served_open = VBUS_READ(*s->open_w);
}

/*
 * docs/transport.md "ivshmem server", with this side's peer id: peer 0's
 * DATA vector is the other guest's DATA interrupt, its CTRL vector ours.
 */
static int link_handshake(struct link_side *s, int fd)
{
	const struct link_side *o = &s->l->side[s == &s->l->side[0]];
	int ret, i;

	/* what a QEMU that is gone left unread must not look new */
	for (i = 0; i < VBUS_IPC_NR_VECTORS; i++)
		hostd_eventfd_drain(s->msix[i]);
	ret = hostd_ivshmem_send(fd, 0, -1);
	if (!ret)
		ret = hostd_ivshmem_send(fd, s->peer_id, -1);
	if (!ret)
		ret = hostd_ivshmem_send(fd, -1, s->l->region->fd);
	if (!ret)
		ret = hostd_ivshmem_send(fd, VBUS_IPC_HOST_PEER,
					 o->msix[VBUS_IPC_VEC_DATA]);
	if (!ret)
		ret = hostd_ivshmem_send(fd, VBUS_IPC_HOST_PEER, s->db_ctrl);
	for (i = 0; !ret && i < VBUS_IPC_NR_VECTORS; i++)
		ret = hostd_ivshmem_send(fd, s->peer_id, s->msix[i]);
	return ret;
}

static void on_listen(struct hostd_dev *dev, int lfd, __u32 events, void *arg)
{
	struct link_side *s = arg;
	/* both sockets take the QEMUs the device's guest allows */
	int fd = vbus_ipc_qemu_accept(dev, lfd, s->qsock, &s->l->refused);

	(void)events;
	if (fd < 0)
		return;
	if (s->fd >= 0) {
		/* the isolation rule: the side is its named guest's alone */
		hostd_dev_log(dev, "ipc: link: a second QEMU on %s (the %s side) refused",
			      s->qsock, s->name);
		s->l->refused++;
		close(fd);
		return;
	}
	if (link_handshake(s, fd) < 0 ||
	    hostd_fd_add(dev, fd, EPOLLIN, on_qemu, s) < 0) {
		hostd_dev_log(dev, "ipc: link: QEMU handshake on %s failed",
			      s->qsock);
		close(fd);
		return;
	}
	s->fd = fd;
	session_eval(s->l);
}

void vbus_ipc_link_free(struct vbus_ipc_link *l)
{
	if (!l)
		return;
	for (int i = 0; i < 2; i++) {
		struct link_side *s = &l->side[i];

		fd_drop(l->dev, &s->fd, true);
		fd_drop(l->dev, &s->lfd, true);
		fd_drop(l->dev, &s->db_ctrl, true);
		for (int v = 0; v < VBUS_IPC_NR_VECTORS; v++)
			fd_drop(l->dev, &s->msix[v], false);
		if (s->qsock)
			unlink(s->qsock);
	}
	free(l);
}

static int side_init(struct vbus_ipc_link *l, int i, const char *key,
		     const char *qsock)
{
	struct vbus_ipc_shm *shm = l->region->shm;
	struct link_side *s = &l->side[i];
	char why[256];
	int ret, v;

	s->db_ctrl = hostd_eventfd_new();
	for (v = 0; v < VBUS_IPC_NR_VECTORS; v++)
		s->msix[v] = hostd_eventfd_new();
	if (s->db_ctrl < 0 || s->msix[0] < 0 || s->msix[1] < 0)
		return hostd_dev_fail(l->dev, -EMFILE, "eventfd: out of fds");
	ret = hostd_fd_add(l->dev, s->db_ctrl, EPOLLIN, on_ctrl, s);
	if (ret < 0) {
		close(s->db_ctrl);
		s->db_ctrl = -1;
		return hostd_dev_fail(l->dev, ret, "epoll");
	}
	ret = hostd_dev_claim(l->dev, "ipc socket", qsock);
	if (ret < 0)
		return ret;
	s->lfd = hostd_sock_listen(qsock, why, sizeof(why));
	if (s->lfd < 0)
		return hostd_dev_fail(l->dev, s->lfd, "%s: cannot listen: %s",
				      key, why);
	s->qsock = qsock;
	ret = hostd_fd_add(l->dev, s->lfd, EPOLLIN, on_listen, s);
	if (ret < 0) {
		close(s->lfd);
		s->lfd = -1;
		return hostd_dev_fail(l->dev, ret, "%s: epoll", key);
	}
	if (i == VBUS_IPC_SIDE_SOUTH) {
		s->peer_id = VBUS_IPC_SOUTH_PEER;
		s->open_w = &shm->south_open;
		s->close_w = &shm->south_close;
		s->served_w = &shm->south_session_open;
	} else {
		s->peer_id = VBUS_IPC_NORTH_PEER;
		s->open_w = &shm->guest_open;
		s->close_w = &shm->guest_close;
		s->served_w = &shm->session_open;
	}
	return 0;
}

int vbus_ipc_link_create(struct hostd_dev *dev, struct vbus_ipc_region *r,
			 const char *peer, const char *qsock,
			 const char *peer_qsock, struct vbus_ipc_link **out)
{
	struct vbus_ipc_link *l = calloc(1, sizeof(*l));
	int ret, i;

	*out = NULL;
	if (!l)
		return -ENOMEM;
	l->dev = dev;
	l->region = r;
	l->peer = peer;
	for (i = 0; i < 2; i++) {
		struct link_side *s = &l->side[i];

		s->l = l;
		s->name = i == VBUS_IPC_SIDE_SOUTH ? "south" : "north";
		s->lfd = s->fd = s->db_ctrl = -1;
		s->msix[0] = s->msix[1] = -1;
	}
	ret = side_init(l, VBUS_IPC_SIDE_NORTH, "qsock", qsock);
	if (!ret)
		ret = side_init(l, VBUS_IPC_SIDE_SOUTH, "peer_qsock", peer_qsock);
	if (ret < 0) {
		vbus_ipc_link_free(l);
		return ret;
	}
	*out = l;
	return 0;
}

void vbus_ipc_link_stats(const struct vbus_ipc_link *l,
			 struct hostd_stats_out *out)
{
	hostd_stat_str(out, "peer", l->peer);
	hostd_stat_u64(out, "qemu", l->side[VBUS_IPC_SIDE_NORTH].fd >= 0);
	hostd_stat_u64(out, "peer_qemu", l->side[VBUS_IPC_SIDE_SOUTH].fd >= 0);
	hostd_stat_u64(out, "session", l->active ? l->session : 0);
	hostd_stat_u64(out, "sessions", l->sessions);
	hostd_stat_u64(out, "refused", l->refused);
}
