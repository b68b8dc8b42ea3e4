// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: one guest's thread and event loop, and its ivshmem
 * connection.
 *
 * The loop watches: the guest socket (accept QEMU), the connection (EOF =
 * QEMU gone), the two host doorbell eventfds (hypercall, signal), a wake
 * eventfd (control commands from the main thread) and whatever fds its
 * devices registered. Everything of the guest happens here, so its state
 * needs no locks; the only cross-thread structure is the command list.
 *
 * When QEMU disconnects, the guest's bus is torn down (devices closed,
 * eventq detached, fresh BAR2 and eventfds for the next QEMU) and the
 * socket accepts again; the other guests never notice.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "hostd.h"

struct hostd_cmd {
	int (*fn)(struct hostd_guest *g, void *arg);
	void *arg;
	int ret;
	bool done;
	pthread_cond_t cond;
	struct hostd_cmd *next;
};

void hostd_eventfd_kick(int fd)
{
	__u64 one = 1;

	/*
	 * The fd is non-blocking (ours, and QEMU sets O_NONBLOCK on the
	 * shared file description too). EAGAIN means the counter is at its
	 * maximum: an interrupt is pending anyway, and counters coalesce.
	 */
	while (write(fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

bool hostd_eventfd_drain(int fd)
{
	__u64 v;
	ssize_t n;

	do {
		n = read(fd, &v, sizeof(v));
	} while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(v) && v;
}

/* ---- fd watches ----------------------------------------------------------- */

static struct hostd_fdwatch *watch_find(struct hostd_guest *g, int fd)
{
	struct hostd_list *pos, *tmp;

	hostd_list_for_each_safe(pos, tmp, &g->fdwatches) {
		struct hostd_fdwatch *w =
			hostd_container_of(pos, struct hostd_fdwatch, node);

		if (w->fd == fd && !w->dead)
			return w;
	}
	return NULL;
}

int hostd_watch_add(struct hostd_guest *g, struct hostd_dev *dev, int fd,
		    __u32 events, hostd_fd_cb cb,
		    void (*gcb)(struct hostd_guest *, __u32), void *arg)
{
	struct epoll_event ev = { .events = events };
	struct hostd_fdwatch *w;

	if (fd < 0 || watch_find(g, fd))
		return -EEXIST;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->dev = dev;
	w->fd = fd;
	w->cb = cb;
	w->gcb = gcb;
	w->arg = arg;
	ev.data.ptr = w;
	if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int err = -errno;

		free(w);
		return err;
	}
	hostd_list_add_tail(&w->node, &g->fdwatches);
	return 0;
}

void hostd_watch_del(struct hostd_guest *g, int fd)
{
	struct hostd_fdwatch *w = watch_find(g, fd);

	if (!w)
		return;
	epoll_ctl(g->epfd, EPOLL_CTL_DEL, fd, NULL);
	if (g->dispatch_depth) {
		/* an event for it may still sit in this batch */
		w->dead = true;
		return;
	}
	hostd_list_del(&w->node);
	free(w);
}

static void watch_reap(struct hostd_guest *g)
{
	struct hostd_list *pos, *tmp;

	hostd_list_for_each_safe(pos, tmp, &g->fdwatches) {
		struct hostd_fdwatch *w =
			hostd_container_of(pos, struct hostd_fdwatch, node);

		if (w->dead) {
			hostd_list_del(&w->node);
			free(w);
		}
	}
}

int hostd_fd_add(struct hostd_dev *dev, int fd, __u32 events, hostd_fd_cb cb,
		 void *arg)
{
	if (!cb)
		return -EINVAL;
	return hostd_watch_add(dev->guest, dev, fd, events, cb, NULL, arg);
}

int hostd_fd_mod(struct hostd_dev *dev, int fd, __u32 events)
{
	struct hostd_fdwatch *w = watch_find(dev->guest, fd);
	struct epoll_event ev = { .events = events };

	if (!w || w->dev != dev)
		return -ENOENT;
	ev.data.ptr = w;
	return epoll_ctl(dev->guest->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

void hostd_fd_del(struct hostd_dev *dev, int fd)
{
	struct hostd_fdwatch *w = watch_find(dev->guest, fd);

	if (w && w->dev == dev)
		hostd_watch_del(dev->guest, fd);
}

/* ---- the connection ---------------------------------------------------------- */

static void on_hc(struct hostd_guest *g, __u32 events)
{
	(void)events;
	hostd_hc_doorbell(g);
}

static void on_sig(struct hostd_guest *g, __u32 events)
{
	(void)events;
	hostd_sig_doorbell(g);
}

int hostd_guest_conn_setup(struct hostd_guest *g)
{
	int i, ret;

	for (i = 0; i < VBUS_PCI_NR_VECTORS; i++) {
		g->db_fd[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		g->msix_fd[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (g->db_fd[i] < 0 || g->msix_fd[i] < 0) {
			ret = -errno;
			goto out_fail;
		}
	}
	if (!g->shm) {
		ret = hostd_bar2_create(g);
		if (ret < 0)
			goto out_fail;
	}
	ret = hostd_watch_add(g, NULL, g->db_fd[VBUS_PCI_DB_HC], EPOLLIN, NULL,
			      on_hc, NULL);
	if (!ret)
		ret = hostd_watch_add(g, NULL, g->db_fd[VBUS_PCI_DB_SIGNAL],
				      EPOLLIN, NULL, on_sig, NULL);
	if (ret < 0)
		goto out_fail;
	g->negotiated = false;
	g->last_seq = 0;
	return 0;

out_fail:
	hostd_guest_conn_teardown(g);
	return ret;
}

void hostd_guest_conn_teardown(struct hostd_guest *g)
{
	int i;

	hostd_bus_reset(g);
	g->negotiated = false;
	for (i = 0; i < VBUS_PCI_NR_VECTORS; i++) {
		if (g->db_fd[i] >= 0) {
			hostd_watch_del(g, g->db_fd[i]);
			close(g->db_fd[i]);
		}
		if (g->msix_fd[i] >= 0)
			close(g->msix_fd[i]);
		g->db_fd[i] = g->msix_fd[i] = -1;
	}
	if (g->conn_fd >= 0) {
		hostd_watch_del(g, g->conn_fd);
		close(g->conn_fd);
		g->conn_fd = -1;
	}
	/* the next QEMU gets a fresh BAR2 (created lazily on connect) */
	hostd_bar2_destroy(g);
}

static void on_conn(struct hostd_guest *g, __u32 events)
{
	char buf[64];
	ssize_t n;

	/* QEMU never sends anything on this socket: read to see EOF */
	n = recv(g->conn_fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR) &&
		      !(events & (EPOLLHUP | EPOLLERR))))
		return;
	hostd_log("[%s] QEMU disconnected; bus torn down, waiting for a new connection",
		  g->name);
	hostd_guest_conn_teardown(g);
	/* be ready for the next QEMU right away (BAR2 exists before it) */
	if (!g->shm && hostd_bar2_create(g) < 0)
		hostd_log("[%s] cannot create BAR2", g->name);
}

static void on_accept(struct hostd_guest *g, __u32 events)
{
	struct timeval tv = { .tv_sec = 2 };
	int fd, ret;

	(void)events;
	fd = accept4(g->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (g->conn_fd >= 0) {
		hostd_glog(g, "second connection on %s refused (one QEMU per guest)",
			   g->cfg.sock);
		close(fd);
		return;
	}
	/* a client that does not read cannot stall the loop for long */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	g->conn_fd = fd;
	ret = hostd_guest_conn_setup(g);
	if (ret < 0) {
		hostd_log("[%s] connection setup: %s", g->name, strerror(-ret));
		hostd_guest_conn_teardown(g);
		return;
	}
	ret = hostd_ivshmem_handshake(g, fd);
	if (!ret)
		ret = hostd_watch_add(g, NULL, fd, EPOLLIN | EPOLLRDHUP, NULL,
				      on_conn, NULL);
	if (ret < 0) {
		hostd_log("[%s] ivshmem handshake: %s", g->name, strerror(-ret));
		hostd_guest_conn_teardown(g);
		if (!g->shm)
			hostd_bar2_create(g);
		return;
	}
	g->connections++;
	hostd_log("[%s] QEMU connected (connection %llu)", g->name,
		  (unsigned long long)g->connections);
}

/* ---- commands from other threads -------------------------------------------- */

static void on_wake(struct hostd_guest *g, __u32 events)
{
	struct hostd_cmd *list, *c, *next;

	(void)events;
	hostd_eventfd_drain(g->wake_fd);
	pthread_mutex_lock(&g->cmd_lock);
	list = g->cmds;
	g->cmds = NULL;
	pthread_mutex_unlock(&g->cmd_lock);
	/* oldest first */
	for (c = list, list = NULL; c; c = next) {
		next = c->next;
		c->next = list;
		list = c;
	}
	for (c = list; c; c = next) {
		int ret;

		next = c->next;
		ret = c->fn(g, c->arg);
		pthread_mutex_lock(&g->cmd_lock);
		c->ret = ret;
		c->done = true;
		pthread_cond_signal(&c->cond);
		pthread_mutex_unlock(&g->cmd_lock);
	}
}

int hostd_guest_call(struct hostd_guest *g,
		     int (*fn)(struct hostd_guest *g, void *arg), void *arg)
{
	struct hostd_cmd c = { .fn = fn, .arg = arg };
	int ret;

	if (!g->thread_started || pthread_equal(pthread_self(), g->thread))
		return fn(g, arg);

	pthread_cond_init(&c.cond, NULL);
	pthread_mutex_lock(&g->cmd_lock);
	c.next = g->cmds;
	g->cmds = &c;
	pthread_mutex_unlock(&g->cmd_lock);
	hostd_eventfd_kick(g->wake_fd);
	/*
	 * No timeout: @c lives on this stack until the loop is done with it,
	 * and the loop never blocks (non-blocking fds, bounded work).
	 */
	pthread_mutex_lock(&g->cmd_lock);
	while (!c.done)
		pthread_cond_wait(&c.cond, &g->cmd_lock);
	ret = c.ret;
	pthread_mutex_unlock(&g->cmd_lock);
	pthread_cond_destroy(&c.cond);
	return ret;
}

/* ---- the loop --------------------------------------------------------------- */

void hostd_guest_run_deferred(struct hostd_guest *g)
{
	struct hostd_list *pos, *tmp;
	unsigned int h;

	if (g->defer_pending) {
		/*
		 * One pass per loop iteration: a wakeup that runs out of
		 * budget schedules itself again, and that must not starve
		 * the other fds of this guest.
		 */
		g->defer_pending = false;
		if (g->evq.attached)
			vbus_defer_run(&g->evq.signal.deferred_notify);
		for (h = 1; h < VBUS_PCI_MAX_SIGNALS; h++) {
			struct hostd_shm_ent *e = g->sigs[h];

			if (!e)
				continue;
			shm_signal_get(&e->signal);
			vbus_defer_run(&e->signal.deferred_notify);
			shm_signal_put(&e->signal);
		}
	}
	if (g->faulted) {
		/* a faulted bus: let go of everything the guest gave us */
		hostd_list_for_each_safe(pos, tmp, &g->devs)
			hostd_dev_close(hostd_container_of(pos, struct hostd_dev,
							   node));
	}
	if (!g->dispatch_depth)
		watch_reap(g);
}

int hostd_guest_poll(struct hostd_guest *g, int timeout_ms)
{
	struct epoll_event evs[16];
	int i, n;

	if (g->defer_pending)
		timeout_ms = 0;
	n = epoll_wait(g->epfd, evs, 16, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	g->dispatch_depth++;
	for (i = 0; i < n; i++) {
		struct hostd_fdwatch *w = evs[i].data.ptr;

		if (w->dead)
			continue;
		if (w->gcb)
			w->gcb(g, evs[i].events);
		else if (w->dev && !w->dead)
			w->cb(w->dev, w->fd, evs[i].events, w->arg);
	}
	g->dispatch_depth--;
	hostd_guest_run_deferred(g);
	return n;
}

static void *guest_thread(void *arg)
{
	struct hostd_guest *g = arg;

	while (!__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE)) {
		int ret = hostd_guest_poll(g, 1000);

		if (ret < 0) {
			/*
			 * Never leave the loop: control commands wait for it.
			 * Not expected to happen; don't spin if it does.
			 */
			hostd_glog(g, "epoll: %s", strerror(-ret));
			usleep(100000);
		}
	}
	return NULL;
}

/* ---- lifetime --------------------------------------------------------------- */

int hostd_guest_init(struct hostd_guest *g, const struct hostd_guest_cfg *cfg,
		     int mem_fd)
{
	int i, ret;

	memset(g, 0, sizeof(*g));
	g->cfg = *cfg;
	g->name = g->cfg.name;
	g->listen_fd = g->conn_fd = g->bar2_fd = -1;
	g->epfd = g->wake_fd = -1;
	for (i = 0; i < VBUS_PCI_NR_VECTORS; i++)
		g->db_fd[i] = g->msix_fd[i] = -1;
	g->host_peer = 0;
	g->guest_peer = 1;
	hostd_list_init(&g->devs);
	hostd_list_init(&g->fdwatches);
	pthread_mutex_init(&g->cmd_lock, NULL);
	g->mem.fd = -1;

	ret = hostd_mem_open(&g->mem, cfg->mem, mem_fd, cfg->size, cfg->machine);
	if (ret < 0) {
		hostd_log("[%s] guest RAM %s: %s", g->name,
			  mem_fd >= 0 ? "(fd)" : cfg->mem, strerror(-ret));
		goto out_fail;
	}
	ret = hostd_bar2_create(g);
	if (ret < 0) {
		hostd_log("[%s] BAR2 memfd: %s", g->name, strerror(-ret));
		goto out_fail;
	}
	g->epfd = epoll_create1(EPOLL_CLOEXEC);
	g->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (g->epfd < 0 || g->wake_fd < 0) {
		ret = -errno;
		goto out_fail;
	}
	ret = hostd_watch_add(g, NULL, g->wake_fd, EPOLLIN, NULL, on_wake, NULL);
	if (ret < 0)
		goto out_fail;
	return 0;

out_fail:
	hostd_guest_fini(g);
	return ret;
}

int hostd_unix_listen(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, probe, e;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "%s: socket path too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = -errno;
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return e;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EADDRINUSE)
			goto out_err;
		/* stale (a previous daemon died) or live (one still runs)? */
		if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a socket", path);
			close(fd);
			return -EEXIST;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 &&
		    connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(probe);
			snprintf(err, errlen, "%s is in use by another process", path);
			close(fd);
			return -EADDRINUSE;
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			goto out_err;
	}
	if (listen(fd, 8) < 0)
		goto out_err;
	return fd;

out_err:
	e = -errno;
	snprintf(err, errlen, "%s: %s", path, strerror(errno));
	close(fd);
	return e ? e : -EIO;
}

int hostd_guest_listen(struct hostd_guest *g)
{
	char err[256];
	int fd, ret;

	fd = hostd_unix_listen(g->cfg.sock, err, sizeof(err));
	if (fd < 0) {
		hostd_log("[%s] %s", g->name, err);
		return fd;
	}
	g->listen_fd = fd;
	ret = hostd_watch_add(g, NULL, fd, EPOLLIN, NULL, on_accept, NULL);
	if (ret < 0)
		return ret;
	return 0;
}

int hostd_guest_start(struct hostd_guest *g)
{
	int ret = pthread_create(&g->thread, NULL, guest_thread, g);

	if (ret)
		return -ret;
	g->thread_started = true;
	return 0;
}

void hostd_guest_stop(struct hostd_guest *g)
{
	if (!g->thread_started)
		return;
	__atomic_store_n(&g->stop, 1, __ATOMIC_RELEASE);
	hostd_eventfd_kick(g->wake_fd);
	pthread_join(g->thread, NULL);
	g->thread_started = false;
}

void hostd_guest_fini(struct hostd_guest *g)
{
	struct hostd_list *pos, *tmp;

	hostd_guest_stop(g);
	hostd_guest_conn_teardown(g);
	hostd_dev_free_all(g);
	if (g->listen_fd >= 0) {
		hostd_watch_del(g, g->listen_fd);
		close(g->listen_fd);
		unlink(g->cfg.sock);
		g->listen_fd = -1;
	}
	hostd_bar2_destroy(g);
	hostd_mem_close(&g->mem);
	free(g->evq.backlog);
	g->evq.backlog = NULL;
	hostd_list_for_each_safe(pos, tmp, &g->fdwatches) {
		hostd_list_del(pos);
		free(hostd_container_of(pos, struct hostd_fdwatch, node));
	}
	if (g->wake_fd >= 0)
		close(g->wake_fd);
	if (g->epfd >= 0)
		close(g->epfd);
	g->wake_fd = g->epfd = -1;
	pthread_mutex_destroy(&g->cmd_lock);
}
