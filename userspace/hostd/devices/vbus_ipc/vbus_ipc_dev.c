// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the "vbus-ipc" device (ABI <vbus/vbus_ipc.h>, protocol in
 * docs/devices/vbus_ipc.md). It never reads a message: it owns the
 * channel's region, serves it to QEMU as a second ivshmem-doorbell
 * (qsock=), and hands it with the two DATA eventfds to the one host
 * process attached on the service socket (sock=), so guest and host
 * signal each other without this daemon in the path.
 *
 * A session starts when a guest process has /dev/vbus-ipcN open (the
 * guest driver bumps guest_open and rings CTRL) and a host process is
 * connected: fresh rings, session + 1, state ACTIVE, the attach message.
 * It ends when either leaves (guest_close, QEMU gone, EOF on the host's
 * socket): state ENDED, the host's socket closed, CTRL to the guest. Both
 * ends then see -EPIPE and must attach again; a guest open is served at
 * most once. What one host process does touches only its own channel.
 *
 * On the vbus the device answers GETCONFIG (region id, service), so a
 * guest can match the bus device with its ivshmem region.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "vbus_ipc_dev.h"

struct vbus_ipc {
	struct hostd_dev *dev;
	struct vbus_ipc_region region;
	const char *sock_path, *qsock_path;
	uid_t peer_uid;			/* peer_uid=, or the daemon's */
	int host_lfd, qemu_lfd;		/* listening */
	int host_fd, qemu_fd;		/* connected, or -1 */
	int db_fd[VBUS_IPC_NR_VECTORS];	  /* guest -> host doorbells */
	int msix_fd[VBUS_IPC_NR_VECTORS]; /* host -> guest interrupts */
	struct vbus_ipc_link *link;	/* peer=: a link, none of the above */
	bool active;
	__u32 session;
	__u32 served_open;	/* guest_open of the last session */
	__u64 sessions, refused;
};

/* ---- params ---------------------------------------------------------------- */

static int parse_u32(struct hostd_dev *dev, const struct hostd_params *p,
		     const char *key, __u32 def, __u32 min, __u32 max,
		     __u32 *out)
{
	const char *s = hostd_param_get(p, key);
	char *end;
	unsigned long v;

	if (!s) {
		*out = def;
		return 0;
	}
	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max)
		return hostd_dev_fail(dev, -EINVAL, "%s=%s: not a number in %u..%u",
				      key, s, min, max);
	*out = (__u32)v;
	return 0;
}

static bool service_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= VBUS_IPC_SERVICE_LEN)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789._-") == n;
}

/* ---- connections --------------------------------------------------------------- */

static void fd_drop(struct vbus_ipc *c, int *fd)
{
	if (*fd < 0)
		return;
	hostd_fd_del(c->dev, *fd);
	close(*fd);
	*fd = -1;
}

static void vectors_close(struct vbus_ipc *c)
{
	for (int i = 0; i < VBUS_IPC_NR_VECTORS; i++) {
		fd_drop(c, &c->db_fd[i]);
		if (c->msix_fd[i] >= 0)
			close(c->msix_fd[i]);
		c->msix_fd[i] = -1;
	}
}

static void session_eval(struct vbus_ipc *c);

static void session_end(struct vbus_ipc *c, const char *why)
{
	c->active = false;
	/* release: the state is the last word of the session */
	VBUS_WRITE(c->region.shm->state, VBUS_IPC_STATE_ENDED);
	fd_drop(c, &c->host_fd);
	if (c->msix_fd[VBUS_IPC_VEC_CTRL] >= 0)
		hostd_eventfd_write(c->msix_fd[VBUS_IPC_VEC_CTRL]);
	hostd_dev_log(c->dev, "ipc: session %u ended (%s)", c->session, why);
}

static void session_start(struct vbus_ipc *c, __u32 open)
{
	int fds[VBUS_IPC_ATTACH_NFDS] = {
		c->region.fd, c->db_fd[VBUS_IPC_VEC_DATA],
		c->msix_fd[VBUS_IPC_VEC_DATA],
	};

	if (vbus_ipc_region_format(&c->region))
		return;
	hostd_eventfd_drain(c->db_fd[VBUS_IPC_VEC_DATA]);
	c->session++;
	c->served_open = open;
	c->region.shm->session = c->session;
	c->region.shm->session_open = open;
	/*
	 * Release: the formatted rings and the session number before the
	 * state; pairs with the acquire of state in ipc_alive() (libioq) and
	 * in the guest driver's session check.
	 */
	VBUS_WRITE(c->region.shm->state, VBUS_IPC_STATE_ACTIVE);
	c->active = true;
	c->sessions++;
	if (vbus_ipc_attach_send(c->host_fd, c->session, fds) < 0) {
		session_end(c, "attach message failed");
		return;
	}
	hostd_eventfd_write(c->msix_fd[VBUS_IPC_VEC_CTRL]);
}

/*
 * The only place sessions start or end: called after anything that may
 * change the answer (a guest CTRL doorbell, a connection coming or going).
 */
static void session_eval(struct vbus_ipc *c)
{
	struct vbus_ipc_shm *shm = c->region.shm;
	__u32 open = VBUS_READ(shm->guest_open);
	__u32 closed = VBUS_READ(shm->guest_close);
	bool guest = c->qemu_fd >= 0 && open != closed;

	if (c->active) {
		if (c->host_fd < 0)
			session_end(c, "host process left");
		else if (c->qemu_fd < 0)
			session_end(c, "guest gone");
		else if (open != c->served_open || closed == open)
			session_end(c, "guest process closed");
	}
	if (!c->active && guest && open != c->served_open && c->host_fd >= 0)
		session_start(c, open);
}

static void on_ctrl(struct hostd_dev *dev, int fd, __u32 events, void *arg)
{
	(void)dev;
	(void)events;
	/* drain first: a doorbell after it stays readable for the next run */
	hostd_eventfd_drain(fd);
	session_eval(arg);
}

/* QEMU never writes on its socket; the host process must not either. */
static bool conn_gone(int fd)
{
	char b[64];
	ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);

	return !(n < 0 && (errno == EAGAIN || errno == EINTR));
}

static void on_host(struct hostd_dev *dev, int fd, __u32 events, void *arg)
{
	struct vbus_ipc *c = arg;

	(void)dev;
	if (!(events & (EPOLLHUP | EPOLLERR)) && !conn_gone(fd))
		return;
	fd_drop(c, &c->host_fd);
	session_eval(c);
}

static void on_qemu(struct hostd_dev *dev, int fd, __u32 events, void *arg)
{
	struct vbus_ipc *c = arg;

	(void)dev;
	if (!(events & (EPOLLHUP | EPOLLERR)) && !conn_gone(fd))
		return;
	fd_drop(c, &c->qemu_fd);
	session_eval(c);
	vectors_close(c);
	/* an open the old guest never closed is not served again */
	c->served_open = VBUS_READ(c->region.shm->guest_open);
}

static int vectors_open(struct vbus_ipc *c)
{
	for (int i = 0; i < VBUS_IPC_NR_VECTORS; i++) {
		c->db_fd[i] = hostd_eventfd_new();
		c->msix_fd[i] = hostd_eventfd_new();
		if (c->db_fd[i] < 0 || c->msix_fd[i] < 0)
			return -EMFILE;
	}
	return hostd_fd_add(c->dev, c->db_fd[VBUS_IPC_VEC_CTRL], EPOLLIN,
			    on_ctrl, c);
}

/* docs/transport.md "ivshmem server": never the guest's vectors first */
static int ivshmem_handshake(struct vbus_ipc *c, int fd)
{
	int i, ret;

	ret = hostd_ivshmem_send(fd, 0, -1);
	if (!ret)
		ret = hostd_ivshmem_send(fd, VBUS_IPC_GUEST_PEER, -1);
	if (!ret)
		ret = hostd_ivshmem_send(fd, -1, c->region.fd);
	for (i = 0; !ret && i < VBUS_IPC_NR_VECTORS; i++)
		ret = hostd_ivshmem_send(fd, VBUS_IPC_HOST_PEER, c->db_fd[i]);
	for (i = 0; !ret && i < VBUS_IPC_NR_VECTORS; i++)
		ret = hostd_ivshmem_send(fd, VBUS_IPC_GUEST_PEER, c->msix_fd[i]);
	return ret;
}

static void on_qemu_listen(struct hostd_dev *dev, int lfd, __u32 events,
			   void *arg)
{
	struct vbus_ipc *c = arg;
	int fd = vbus_ipc_qemu_accept(dev, lfd, c->qsock_path, &c->refused);

	(void)events;
	if (fd < 0)
		return;
	if (c->qemu_fd >= 0) {
		hostd_dev_log(dev, "ipc: a second QEMU on %s refused",
			      c->qsock_path);
		close(fd);
		return;
	}
	if (vectors_open(c) < 0 || ivshmem_handshake(c, fd) < 0 ||
	    hostd_fd_add(dev, fd, EPOLLIN, on_qemu, c) < 0) {
		hostd_dev_log(dev, "ipc: QEMU handshake failed");
		vectors_close(c);
		close(fd);
		return;
	}
	c->qemu_fd = fd;
	session_eval(c);
}

static void on_host_listen(struct hostd_dev *dev, int lfd, __u32 events,
			   void *arg)
{
	struct vbus_ipc *c = arg;
	int fd = vbus_ipc_sock_accept(lfd);
	uid_t uid;

	(void)events;
	if (fd < 0)
		return;
	/* the channel's memory goes to whoever this is: check who */
	if (!vbus_ipc_sock_peer(fd, c->peer_uid, &uid)) {
		hostd_dev_log(dev, "ipc: a host process of uid %u on %s refused (peer_uid=%u)",
			      (unsigned int)uid, c->sock_path,
			      (unsigned int)c->peer_uid);
		c->refused++;
		close(fd);
		return;
	}
	if (c->host_fd >= 0 || hostd_fd_add(dev, fd, EPOLLIN, on_host, c) < 0) {
		/* one host process per channel: the next one sees EOF */
		c->refused++;
		close(fd);
		return;
	}
	c->host_fd = fd;
	session_eval(c);
}

/* ---- the type ------------------------------------------------------------------ */

static void vbus_ipc_free(struct vbus_ipc *c)
{
	vbus_ipc_link_free(c->link);
	fd_drop(c, &c->host_fd);
	fd_drop(c, &c->qemu_fd);
	vectors_close(c);
	fd_drop(c, &c->host_lfd);
	fd_drop(c, &c->qemu_lfd);
	if (c->sock_path)
		unlink(c->sock_path);
	if (c->qsock_path)
		unlink(c->qsock_path);
	vbus_ipc_region_destroy(&c->region);
	free(c);
}

static int listen_on(struct vbus_ipc *c, const char *key, const char *path,
		     int *lfd, hostd_fd_cb cb)
{
	char why[256];
	int fd, ret;

	ret = hostd_dev_claim(c->dev, "ipc socket", path);
	if (ret < 0)
		return ret;
	fd = hostd_sock_listen(path, why, sizeof(why));
	if (fd < 0)
		return hostd_dev_fail(c->dev, fd, "%s: cannot listen: %s",
				      key, why);
	*lfd = fd;
	ret = hostd_fd_add(c->dev, fd, EPOLLIN, cb, c);
	return ret < 0 ? hostd_dev_fail(c->dev, ret, "%s: epoll", key) : 0;
}

/* A guest name: what --guest accepts, in the log and stats of a link. */
static bool guest_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n && n < 64 &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789._-") == n;
}

/*
 * peer=GUEST peer_qsock=PATH make a link (vbus_ipc_link.c): the other end
 * is a guest, so there is no host process and no sock=/peer_uid=.
 */
static int link_params_check(struct hostd_dev *dev,
			     const struct hostd_params *p)
{
	const char *peer = hostd_param_get(p, "peer");
	bool pq = hostd_param_get(p, "peer_qsock");

	if (!peer && !pq)
		return 0;
	if (!peer || !pq)
		return hostd_dev_fail(dev, -EINVAL,
				      "peer= (the other guest) and peer_qsock= (its QEMU's ivshmem chardev) go together");
	if (!guest_name_ok(peer))
		return hostd_dev_fail(dev, -EINVAL,
				      "peer=%s: not a guest name (1..63 of [A-Za-z0-9._-])",
				      peer);
	if (hostd_param_get(p, "sock") || hostd_param_get(p, "peer_uid"))
		return hostd_dev_fail(dev, -EINVAL,
				      "peer= links two guests: sock= and peer_uid= (a host process) do not apply");
	if (!hostd_param_get(p, "qsock"))
		return hostd_dev_fail(dev, -EINVAL,
				      "qsock= (this guest's QEMU's ivshmem chardev) is required");
	if (!strcmp(hostd_param_get(p, "qsock"), hostd_param_get(p, "peer_qsock")))
		return hostd_dev_fail(dev, -EINVAL,
				      "qsock= and peer_qsock= must differ: one QEMU each");
	return 0;
}

static int vbus_ipc_create(struct hostd_dev *dev, const struct hostd_params *p)
{
	static const char *const known[] = {
		"service", "sock", "qsock", "count", "bufsize", "peer_uid",
		"peer", "peer_qsock", NULL
	};
	const char *peer = hostd_param_get(p, "peer");
	const char *service = hostd_param_get(p, "service");
	__u32 count = 0, buf_size = 0, peer_uid = 0;
	struct vbus_ipc *c;
	int ret, i;

	ret = hostd_params_check(dev, p, known);
	if (ret < 0)
		return ret;
	if (!service || !service_ok(service))
		return hostd_dev_fail(dev, -EINVAL,
				      "service= is required: 1..%d of [A-Za-z0-9._-]",
				      VBUS_IPC_SERVICE_LEN - 1);
	ret = link_params_check(dev, p);
	if (ret < 0)
		return ret;
	if (!peer && (!hostd_param_get(p, "sock") || !hostd_param_get(p, "qsock")))
		return hostd_dev_fail(dev, -EINVAL,
				      "sock= (host processes) and qsock= (QEMU's ivshmem chardev) are required");
	ret = parse_u32(dev, p, "peer_uid", (__u32)geteuid(), 0,
			UINT32_MAX - 1, &peer_uid);
	if (!ret)
		ret = parse_u32(dev, p, "count", 256, 1, VBUS_IPC_MAX_COUNT,
				&count);
	if (!ret)
		ret = parse_u32(dev, p, "bufsize", 4096, VBUS_IPC_MIN_BUF,
				VBUS_IPC_MAX_BUF, &buf_size);
	if (ret < 0)
		return ret;
	if ((count & (count - 1)) || (buf_size & 7))
		return hostd_dev_fail(dev, -EINVAL,
				      "count=%u must be a power of two, bufsize=%u a multiple of 8",
				      count, buf_size);
	if (vbus_ipc_region_size(count, buf_size) > VBUS_IPC_MAX_SIZE)
		return hostd_dev_fail(dev, -EINVAL,
				      "count=%u x bufsize=%u = %llu bytes a direction: the region (both directions, rings and header, rounded up to a power of two) would be %llu bytes, over its limit of %llu; count x bufsize must be at most %llu",
				      count, buf_size,
				      (unsigned long long)count * buf_size,
				      (unsigned long long)vbus_ipc_region_size(count, buf_size),
				      (unsigned long long)VBUS_IPC_MAX_SIZE,
				      (unsigned long long)vbus_ipc_region_max_area(count));
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->dev = dev;
	c->peer_uid = (uid_t)peer_uid;
	c->host_lfd = c->qemu_lfd = c->host_fd = c->qemu_fd = -1;
	c->region.fd = -1;
	for (i = 0; i < VBUS_IPC_NR_VECTORS; i++)
		c->db_fd[i] = c->msix_fd[i] = -1;
	ret = vbus_ipc_region_create(&c->region, service, count, buf_size);
	if (ret < 0) {
		ret = hostd_dev_fail(dev, ret, "count=%u bufsize=%u: region: %s",
				     count, buf_size, strerror(-ret));
		goto fail;
	}
	if (peer) {
		ret = vbus_ipc_link_create(dev, &c->region, peer,
					   hostd_param_get(p, "qsock"),
					   hostd_param_get(p, "peer_qsock"),
					   &c->link);
		if (ret < 0)
			goto fail;
		hostd_dev_set_priv(dev, c);
		return 0;
	}
	ret = listen_on(c, "qsock", hostd_param_get(p, "qsock"), &c->qemu_lfd,
			on_qemu_listen);
	if (!ret)
		c->qsock_path = hostd_param_get(p, "qsock");
	if (!ret)
		ret = listen_on(c, "sock", hostd_param_get(p, "sock"),
				&c->host_lfd, on_host_listen);
	if (!ret)
		c->sock_path = hostd_param_get(p, "sock");
	if (ret < 0)
		goto fail;
	hostd_dev_set_priv(dev, c);
	return 0;
fail:
	vbus_ipc_free(c);
	return ret;
}

static void vbus_ipc_destroy(struct hostd_dev *dev)
{
	vbus_ipc_free(hostd_dev_priv(dev));
}

static int vbus_ipc_open(struct hostd_dev *dev, __u32 version)
{
	(void)dev;
	return version == VBUS_IPC_VERSION ? 0 : -EPROTO;
}

static int vbus_ipc_call(struct hostd_dev *dev, __u32 func, void *buf, __u32 len)
{
	struct vbus_ipc *c = hostd_dev_priv(dev);
	struct vbus_ipc_config cfg;

	if (func != VBUS_IPC_FUNC_GETCONFIG || len != sizeof(cfg))
		return -EINVAL;
	memset(&cfg, 0, sizeof(cfg));
	/* our copies: the header is the guest's to overwrite */
	cfg.region_id = c->region.region_id;
	memcpy(cfg.service, c->region.service, sizeof(cfg.service));
	memcpy(buf, &cfg, sizeof(cfg));
	return 0;
}

static void vbus_ipc_stats(struct hostd_dev *dev, struct hostd_stats_out *out)
{
	struct vbus_ipc *c = hostd_dev_priv(dev);

	hostd_stat_str(out, "service", c->region.service);
	hostd_stat_u64(out, "region_size", c->region.size);
	if (c->link) {
		vbus_ipc_link_stats(c->link, out);
		return;
	}
	hostd_stat_u64(out, "qemu", c->qemu_fd >= 0);
	hostd_stat_u64(out, "host_process", c->host_fd >= 0);
	hostd_stat_u64(out, "session", c->active ? c->session : 0);
	hostd_stat_u64(out, "sessions", c->sessions);
	hostd_stat_u64(out, "refused", c->refused);
}

static const struct hostd_dev_type vbus_ipc_type = {
	.name = VBUS_IPC_TYPE,
	.alias = VBUS_IPC_TYPE_ALIAS,
	.create = vbus_ipc_create,
	.destroy = vbus_ipc_destroy,
	.open = vbus_ipc_open,
	.call = vbus_ipc_call,
	.stats = vbus_ipc_stats,
};

HOSTD_DEV_TYPE(vbus_ipc_type);
