// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-blk's NBD backend, the connection (see vbus_blk_nbd.h).
 *
 * libnbd runs the protocol; the guest's loop runs libnbd: the handle's
 * socket is watched for what nbd_aio_get_direction() asks, and
 * nbd_aio_notify_read/_write move its state machine. A connection starts
 * with nbd_aio_connect_uri(); it is UP once nbd_aio_is_ready().
 *
 * The first connection is made at create (`ctl add`, the config): the
 * device's limits come from the server (size, block sizes, flags), so
 * the guest sees no device without it. On a running guest (`ctl add`:
 * hostd_dev_hot) create only starts it: the device is pending
 * (HOSTD_DEV_PENDING, nothing blocks the guest's loop), its handshake
 * runs on the loop like a reconnect's, and once up the device is ready
 * (hostd_dev_ready: the guest gets DEVADD); a handshake that fails or
 * does not finish within nbd_timeout gives the device up
 * (hostd_dev_give_up: dropped, the why logged and in `ctl stats`'s
 * add_error), with the message create would have given. At the daemon's
 * start (the config) create waits for it instead (a guest that
 * re-attaches after a restart drops a device not announced at once):
 * that wait polls the socket with the remaining time of nbd_timeout. A
 * refused or unreachable server fails at once with libnbd's reason
 * either way. A server that advertises multi-conn
 * gets more connections, one per queue (nbd_conns=, default the
 * device's queues), started then and made on the loop like a
 * reconnect: a queue whose connection is not up yet parks its requests.
 * Without multi-conn a FLUSH on one connection need not cover writes
 * answered on another, so there is one connection.
 *
 * Later a connection may die (the server exits or crashes: the socket
 * closes), stall (a request older than nbd_timeout: the connection is
 * dropped, the only way NBD has to give up a request) or be refused on
 * reconnect. Then it is DOWN: its requests park (vbus_blk_nbd.c), and a
 * reconnect is tried after a backoff (NBD_BACKOFF_MIN_MS doubling to
 * NBD_BACKOFF_MAX_MS) on the tick, never in a loop here. A request that
 * is still parked at its deadline fails with S_IOERR; the reconnects go
 * on, so the disk comes back when the server does. A server that comes
 * back with a smaller export fails the requests past its new end; one
 * with different limits is the same disk (its limits were given to the
 * guest already: a stricter server fails what it refuses).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include "vbus_blk_image.h"
#include "vbus_blk_nbd.h"

#define SECTOR 512u

const char *nbd_conn_state_name(const struct vbus_blk_nbd *n)
{
	enum nbd_conn_state worst = NBD_UP;
	unsigned int i;

	/* DOWN < CONNECTING < UP */
	for (i = 0; i < n->nconns; i++)
		if (n->conn[i].state < worst)
			worst = n->conn[i].state;
	switch (worst) {
	case NBD_UP: return "up";
	case NBD_CONNECTING: return "connecting";
	default: return "down";
	}
}

unsigned int nbd_conns_up(const struct vbus_blk_nbd *n)
{
	unsigned int i, up = 0;

	for (i = 0; i < n->nconns; i++)
		up += n->conn[i].state == NBD_UP;
	return up;
}

static void set_why(struct vbus_blk_nbd *n, const char *what, const char *err)
{
	snprintf(n->why, sizeof(n->why), "%s%s%s", what, err ? ": " : "",
		 err ? err : "");
}

/* ---- the socket's watch ------------------------------------------------------ */

static __u32 wanted_events(struct nbd_conn *k)
{
	unsigned int dir = nbd_aio_get_direction(k->h);
	__u32 ev = 0;

	if (dir & LIBNBD_AIO_DIRECTION_READ)
		ev |= EPOLLIN;
	if (dir & LIBNBD_AIO_DIRECTION_WRITE)
		ev |= EPOLLOUT;
	return ev;
}

static void on_socket(struct hostd_dev *dev, int fd, __u32 events, void *arg);

static void watch_update(struct nbd_conn *k)
{
	__u32 ev = wanted_events(k);

	if (k->fd >= 0 && ev != k->fd_events &&
	    hostd_fd_mod(k->n->b->dev, k->fd, ev) == 0)
		k->fd_events = ev;
}

static int watch_start(struct nbd_conn *k)
{
	int ret;

	k->fd = nbd_aio_get_fd(k->h);
	if (k->fd < 0)
		return -EIO;
	k->fd_events = wanted_events(k);
	ret = hostd_fd_add(k->n->b->dev, k->fd, k->fd_events, on_socket, k);
	if (ret < 0)
		k->fd = -1;
	return ret;
}

/* the handle and its watch go; its commands were parked by the caller */
static void handle_drop(struct nbd_conn *k)
{
	if (k->fd >= 0)
		hostd_fd_del(k->n->b->dev, k->fd);
	k->fd = -1;
	k->state = NBD_DOWN;
	if (k->h)
		nbd_close(k->h);
	k->h = NULL;
}

/* DOWN: the next connect after a backoff that doubles up to its max */
static void backoff(struct nbd_conn *k)
{
	k->backoff_ms = k->backoff_ms ? k->backoff_ms * 2 : NBD_BACKOFF_MIN_MS;
	if (k->backoff_ms > NBD_BACKOFF_MAX_MS)
		k->backoff_ms = NBD_BACKOFF_MAX_MS;
	k->retry_ns = hostd_now_ns() + k->backoff_ms * 1000000ull;
}

/* ---- connect ---------------------------------------------------------------- */

static int conn_start(struct nbd_conn *k)
{
	struct vbus_blk_nbd *n = k->n;
	struct nbd_handle *h = nbd_create();

	if (!h) {
		set_why(n, "cannot create an NBD handle", nbd_get_error());
		return -ENOMEM;
	}
	/*
	 * TCP and unix sockets only: a URI must not make the daemon run a
	 * program (nbd+ssh) or open a file it names; the block sizes the
	 * server prefers are what the guest's limits are made of.
	 */
	if (nbd_set_uri_allow_transports(h, LIBNBD_ALLOW_TRANSPORT_TCP |
					    LIBNBD_ALLOW_TRANSPORT_UNIX) == -1 ||
	    nbd_set_uri_allow_local_file(h, false) == -1 ||
	    nbd_set_request_block_size(h, true) == -1 ||
	    nbd_aio_connect_uri(h, n->b->path) == -1) {
		int err = nbd_get_errno();

		set_why(n, "cannot connect", nbd_get_error());
		nbd_close(h);
		return -(err ? err : ECONNREFUSED);
	}
	k->h = h;
	k->state = NBD_CONNECTING;
	k->connect_deadline_ns = hostd_now_ns() +
				 n->b->nbd_timeout_s * 1000000000ull;
	return 0;
}

static bool pow2(__u64 v)
{
	return v && !(v & (v - 1));
}

/*
 * How many connections: one per queue (at most nbd_conns=, 0: as many
 * as queues) if the server advertises multi-conn, else one.
 */
static void take_conns(struct nbd_conn *k)
{
	struct vbus_blk *b = k->n->b;
	unsigned int want = b->nbd_conns ? b->nbd_conns : b->max_queues;

	if (want > b->max_queues)
		want = b->max_queues;
	if (want > 1 && nbd_can_multi_conn(k->h) != 1) {
		if (b->nbd_conns > 1)
			hostd_dev_log(b->dev, "vbus-blk: nbd=%s: the server does "
				      "not advertise multi-conn: one connection, "
				      "not nbd_conns=%u", b->path, b->nbd_conns);
		want = 1;
	}
	k->n->nconns = want ? want : 1;
}

/* the export's sizes and flags as the guest's limits (first connect) */
static int take_limits(struct nbd_conn *k)
{
	struct vbus_blk_nbd *n = k->n;
	struct vbus_blk *b = n->b;
	int64_t min = nbd_get_block_size(k->h, LIBNBD_SIZE_MINIMUM);
	int64_t pref = nbd_get_block_size(k->h, LIBNBD_SIZE_PREFERRED);
	int64_t max = nbd_get_block_size(k->h, LIBNBD_SIZE_MAXIMUM);
	__u64 lbs = min > SECTOR ? (__u64)min : SECTOR;

	if (!pow2(lbs) || lbs > 4096)
		return hostd_dev_fail(b->dev, -EINVAL,
				      "nbd=%s: the server's minimum block size %lld "
				      "is not a power of two up to 4096", b->path,
				      (long long)min);
	b->lbs = (__u32)lbs;
	b->pbs = pref > 0 && pow2((__u64)pref) && (__u64)pref >= lbs &&
		 pref <= 65536 ? (__u32)pref : b->lbs;
	if (max > 0) {
		/* whole logical blocks, and at least a page (the guest's floor) */
		__u64 bytes = (__u64)max / lbs * lbs;

		if (bytes < 4096)
			return hostd_dev_fail(b->dev, -EINVAL,
					      "nbd=%s: the server's maximum block size "
					      "%lld is below 4096", b->path,
					      (long long)max);
		if (bytes / SECTOR < b->max_sectors)
			b->max_sectors = (__u32)(bytes / SECTOR);
	}
	if (n->size < lbs)
		return hostd_dev_fail(b->dev, -EINVAL,
				      "nbd=%s: the export is smaller than one block "
				      "(%llu < %llu bytes)", b->path,
				      (unsigned long long)n->size,
				      (unsigned long long)lbs);
	b->capacity = n->size / lbs * (lbs / SECTOR);
	if (nbd_is_read_only(k->h) == 1 && !b->ro) {
		hostd_dev_log(b->dev, "vbus-blk: nbd=%s: the export is read-only: "
			      "so is the disk", b->path);
		b->ro = true;
	}
	b->be_features = 0;
	if (nbd_can_flush(k->h) == 1)
		b->be_features |= VBUS_BLK_F_FLUSH;
	if (nbd_can_fua(k->h) == 1)
		b->be_features |= VBUS_BLK_F_FUA;
	if (nbd_can_trim(k->h) == 1)
		b->be_features |= VBUS_BLK_F_DISCARD;
	if (nbd_can_zero(k->h) == 1)
		b->be_features |= VBUS_BLK_F_WRITE_ZEROES;
	take_conns(k);
	return 0;
}

static void reconnect(struct nbd_conn *k);

/* a pending device's handshake is done: its limits, the others, DEVADD */
static int first_ready(struct nbd_conn *k)
{
	struct vbus_blk_nbd *n = k->n;
	unsigned int i;
	int ret = take_limits(k);

	if (ret < 0)
		return ret;
	/* the server's preferred block, as vbus_blk_create would have it */
	n->b->topo.io_min = n->b->pbs;
	n->pending = false;
	for (i = 1; i < n->nconns; i++)
		reconnect(&n->conn[i]);
	hostd_dev_log(n->b->dev, "vbus-blk: nbd=%s: connected, the guest is "
		      "told of the disk", n->b->path);
	hostd_dev_ready(n->b->dev);
	return 0;
}

/* a pending device's first connect failed (hostd_dev_fail said why) */
static void first_give_up(struct nbd_conn *k)
{
	struct vbus_blk_nbd *n = k->n;

	handle_drop(k);
	n->gave_up = true;
	n->st.connect_failures++;
	hostd_dev_give_up(n->b->dev);
}

/* handshake done: the first time the limits, later the parked go again */
static int conn_up(struct nbd_conn *k)
{
	struct vbus_blk_nbd *n = k->n;
	int64_t size = nbd_get_size(k->h);
	bool first = !n->st.connects, again = k->ever_up;
	unsigned int i, count = k->parked.n;
	bool broke = false;

	if (size < 0) {
		set_why(n, "the export has no size", nbd_get_error());
		return first ? hostd_dev_fail(n->b->dev, -EIO, "nbd=%s: %s",
					      n->b->path, n->why) : -EIO;
	}
	if (!first && (__u64)size < n->size)
		hostd_dev_log(n->b->dev, "vbus-blk: nbd=%s: the export shrank from "
			      "%llu to %lld bytes: requests past its end fail",
			      n->b->path, (unsigned long long)n->size,
			      (long long)size);
	n->size = (__u64)size;
	k->state = NBD_UP;
	k->ever_up = true;
	k->backoff_ms = 0;
	n->st.connects++;
	if (first)
		return n->pending ? first_ready(k) : take_limits(k);
	if (again) {
		n->st.reconnects++;
		hostd_dev_log(n->b->dev, "vbus-blk: nbd=%s: connection %u "
			      "reconnected, %u requests sent again", n->b->path,
			      k->idx, k->parked.n);
	}
	/* a larger export is the same disk, grown (a resize); never shrunk */
	if (n->size / n->b->lbs * (n->b->lbs / SECTOR) > n->b->capacity)
		vbus_blk_capacity_set(n->b,
				      n->size / n->b->lbs * (n->b->lbs / SECTOR));
	/*
	 * In the order they came: each goes to the tail of its list, and a
	 * loss meanwhile parks it (and the rest) again, still in order.
	 */
	for (i = 0; i < count; i++) {
		n->st.resent += again;
		if (!nbd_cmd_issue(k->parked.head.next))
			broke = true;
	}
	return broke ? -EPIPE : 0;
}

/*
 * Move the handshake or the protocol along after a notify or an issue;
 * @why: what the failed libnbd call said, if one failed.
 */
static void conn_progress(struct nbd_conn *k, const char *why)
{
	struct vbus_blk *b = k->n->b;

	if (!k->h)
		return;
	if (nbd_aio_is_dead(k->h) || nbd_aio_is_closed(k->h)) {
		if (k->n->pending) {
			/* as first_wait() says it */
			hostd_dev_fail(b->dev, -ECONNREFUSED,
				       "nbd=%s: cannot connect: %s", b->path,
				       why ? why : "the server closed the connection");
			first_give_up(k);
			return;
		}
		nbd_conn_lost(k, why ? why : "the server closed the connection");
		return;
	}
	if (k->state == NBD_CONNECTING && nbd_aio_is_ready(k->h) &&
	    conn_up(k) < 0) {
		if (k->n->pending)
			first_give_up(k);	/* conn_up said why */
		else
			nbd_conn_lost(k, k->n->why);
		return;
	}
	watch_update(k);
}

void nbd_conn_check(struct vbus_blk_nbd *n)
{
	unsigned int i;

	for (i = 0; i < n->nconns; i++)
		conn_progress(&n->conn[i], NULL);
}

void nbd_conn_lost(struct nbd_conn *k, const char *why)
{
	struct vbus_blk_nbd *n = k->n;
	struct vbus_blk *b = n->b;
	bool was_up = k->state == NBD_UP;

	if (!k->h)
		return;
	if (why != n->why)
		set_why(n, was_up ? "connection lost" : "cannot connect", why);
	handle_drop(k);
	/* what the server had: again on the next connection, in order */
	while (k->sent.n) {
		struct nbd_cmd *c = k->sent.head.next;

		if (c->orphan) {
			nbd_cmd_free(c);
			continue;
		}
		n->st.parked++;
		nbd_list_move(c, &k->parked, NBD_CMD_PARKED);
	}
	if (was_up) {
		n->st.losses++;
		hostd_dev_log(b->dev, "vbus-blk: nbd=%s: %s; reconnecting "
			      "(requests wait up to nbd_timeout=%u s)", b->path,
			      n->why, b->nbd_timeout_s);
	} else {
		n->st.connect_failures++;
	}
	backoff(k);
	nbd_tick_update(n);
}

/* more to read now: libnbd wants to read and the socket has bytes */
static bool readable(struct nbd_conn *k)
{
	struct pollfd p = { .fd = k->fd, .events = POLLIN };

	if (nbd_aio_is_dead(k->h) || nbd_aio_is_closed(k->h) ||
	    !(nbd_aio_get_direction(k->h) & LIBNBD_AIO_DIRECTION_READ))
		return false;
	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/*
 * Every reply the socket holds, in one wakeup. libnbd's state machine
 * takes one reply per nbd_aio_notify_read (it stops at READY after each),
 * so reading once per wakeup answered each reply in a pass of its own:
 * one hand-back and one signal to the guest per request, at any queue
 * depth. Reading on while the socket has bytes gathers them all, then
 * nbd_settle() hands them back together: one publication and one signal
 * per queue per pass, like the io_uring path's reap. Only while there
 * are bytes: libnbd must never be asked to read into EAGAIN outside
 * READY. Bounded (NBD_READS_PER_WAKE): a server that keeps answering
 * cannot keep the loop from its other fds; the socket stays readable,
 * so the rest comes on the next pass.
 */
static int notify_read_all(struct nbd_conn *k)
{
	unsigned int i = 0;
	int r;

	do
		r = nbd_aio_notify_read(k->h);
	while (r != -1 && ++i < NBD_READS_PER_WAKE && readable(k));
	return r;
}

static void on_socket(struct hostd_dev *dev, int fd, __u32 events, void *arg)
{
	struct nbd_conn *k = arg;
	char why[256] = "";
	unsigned int dir;
	int r = 0;

	(void)dev;
	(void)fd;
	if (!k->h)
		return;
	dir = nbd_aio_get_direction(k->h);
	/* a hang-up or an error is read as such by the state machine */
	if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) &&
	    (dir & LIBNBD_AIO_DIRECTION_READ))
		r = notify_read_all(k);
	if (r != -1 && (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) &&
	    (dir & LIBNBD_AIO_DIRECTION_WRITE) && !nbd_aio_is_dead(k->h))
		r = nbd_aio_notify_write(k->h);
	if (r == -1)
		snprintf(why, sizeof(why), "%s", nbd_get_error());
	conn_progress(k, why[0] ? why : NULL);
	nbd_settle(k->n);
}

/* ---- the first connection ------------------------------------------------------ */

/* DOWN and due: a new connection; UP at once when the server is local */
static void reconnect(struct nbd_conn *k)
{
	if (conn_start(k) < 0 || watch_start(k) < 0) {
		if (k->h)
			handle_drop(k);
		k->n->st.connect_failures++;
		backoff(k);
		return;
	}
	conn_progress(k, NULL);
}

/* the handshake of conn[0], waited for (create); its limits taken */
static int first_wait(struct nbd_conn *k)
{
	struct vbus_blk_nbd *n = k->n;
	struct vbus_blk *b = n->b;

	while (k->state == NBD_CONNECTING && !nbd_aio_is_ready(k->h)) {
		__u64 now = hostd_now_ns();
		struct pollfd p = { .fd = -1 };
		unsigned int dir = nbd_aio_get_direction(k->h);
		int r = 0;

		if (nbd_aio_is_dead(k->h) || nbd_aio_is_closed(k->h))
			return hostd_dev_fail(b->dev, -ECONNREFUSED,
					      "nbd=%s: cannot connect: %s", b->path,
					      n->why[0] ? n->why :
					      "the server closed the connection");
		p.fd = nbd_aio_get_fd(k->h);
		if (now >= k->connect_deadline_ns)
			return hostd_dev_fail(b->dev, -ETIMEDOUT,
					      "nbd=%s: no answer from the server "
					      "within nbd_timeout=%u s", b->path,
					      b->nbd_timeout_s);
		p.events = (dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
			   (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0);
		r = poll(&p, 1, (int)((k->connect_deadline_ns - now) / 1000000 + 1));
		if (r < 0 && errno != EINTR)
			return hostd_dev_fail(b->dev, -errno, "nbd=%s: poll: %s",
					      b->path, strerror(errno));
		if (r > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) &&
		    (dir & LIBNBD_AIO_DIRECTION_READ))
			r = nbd_aio_notify_read(k->h);
		else if (r > 0 && (dir & LIBNBD_AIO_DIRECTION_WRITE))
			r = nbd_aio_notify_write(k->h);
		if (r == -1)
			snprintf(n->why, sizeof(n->why), "%s", nbd_get_error());
	}
	return 0;
}

/* a pending device's first connect: started, watched, bounded (tick) */
static int first_connect(struct nbd_conn *k)
{
	struct vbus_blk_nbd *n = k->n;
	int ret = conn_start(k);

	if (ret < 0)
		return hostd_dev_fail(n->b->dev, ret, "nbd=%s: %s", n->b->path,
				      n->why);
	ret = watch_start(k);
	if (ret < 0) {
		handle_drop(k);
		return hostd_dev_fail(n->b->dev, ret, "nbd=%s: cannot watch "
				      "the connection: %s", n->b->path,
				      strerror(-ret));
	}
	nbd_tick_update(n);	/* bounds the handshake (tick_conn) */
	return 0;
}

/* image=, pending: its storage daemon's start ended (vbus_blk_image.c) */
static void image_started(struct vbus_blk *b, const char *why)
{
	struct vbus_blk_nbd *n = b->be_priv;
	struct nbd_conn *k = &n->conn[0];

	if (!n->pending || n->gave_up || k->h)
		return;
	if (why)	/* as start_first() in vbus_blk_image.c says it */
		hostd_dev_fail(b->dev, -EIO, "image=%s: %s", b->image->image,
			       why);
	if (why || first_connect(k) < 0)
		first_give_up(k);
}

/*
 * On a running guest: create returns HOSTD_DEV_PENDING once the first
 * connect is under way, or (image=) once its storage daemon is starting
 * (image_started() connects when its export is up).
 */
static int first_start(struct nbd_conn *k)
{
	struct vbus_blk_nbd *n = k->n;
	struct vbus_blk *b = n->b;
	int ret = nbd_tick_init(n);

	if (ret < 0)
		return hostd_dev_fail(b->dev, ret, "nbd=%s: cannot watch "
				      "the connection: %s", b->path,
				      strerror(-ret));
	n->pending = true;
	if (b->image && !vbus_blk_image_up(b)) {
		n->start_deadline_ns = hostd_now_ns() +
				       b->nbd_timeout_s * 1000000000ull;
		b->image->started = image_started;
		nbd_tick_update(n);	/* bounds the start (tick_conn) */
		return HOSTD_DEV_PENDING;
	}
	ret = first_connect(k);
	return ret < 0 ? ret : HOSTD_DEV_PENDING;
}

int nbd_conn_first(struct vbus_blk_nbd *n)
{
	struct vbus_blk *b = n->b;
	struct nbd_conn *k = &n->conn[0];
	unsigned int i;
	int ret;

	if (hostd_dev_hot(b->dev))
		return first_start(k);
	ret = conn_start(k);
	if (ret < 0)
		return hostd_dev_fail(b->dev, ret, "nbd=%s: %s", b->path, n->why);
	ret = first_wait(k);
	if (ret < 0)
		return ret;
	ret = conn_up(k);
	if (ret < 0)
		return n->why[0] && ret == -EIO ?
		       hostd_dev_fail(b->dev, ret, "nbd=%s: %s", b->path, n->why) :
		       ret;
	ret = watch_start(k);
	if (!ret)
		ret = nbd_tick_init(n);
	if (ret < 0)
		return hostd_dev_fail(b->dev, ret, "nbd=%s: cannot watch "
				      "the connection: %s", b->path,
				      strerror(-ret));
	/* multi-conn: the others on the loop, like reconnects (due now) */
	for (i = 1; i < n->nconns; i++)
		reconnect(&n->conn[i]);
	nbd_tick_update(n);
	return 0;
}

/* ---- the tick ------------------------------------------------------------------ */

/* a request the server has that is overdue: give the connection up */
static bool overdue(const struct nbd_cmd_list *l, __u64 now)
{
	const struct nbd_cmd *c;

	for (c = l->head.next; c != &l->head; c = c->next)
		if (!c->orphan && now >= c->deadline_ns)
			return true;
	return false;
}

static void fail_overdue(struct nbd_conn *k, __u64 now)
{
	struct nbd_cmd *c = k->parked.head.next;

	while (c != &k->parked.head) {
		struct nbd_cmd *next = c->next;

		if (now >= c->deadline_ns)
			nbd_cmd_fail(k->n, c, ETIMEDOUT);
		c = next;
	}
}

static void tick_conn(struct nbd_conn *k, __u64 now)
{
	struct vbus_blk *b = k->n->b;

	if (k->n->gave_up)
		return;		/* the device goes after this pass */
	if (k->n->pending && !k->h) {
		/* image=: its storage daemon still starting (first_start) */
		if (now < k->n->start_deadline_ns)
			return;
		/* as start_first() in vbus_blk_image.c says it */
		hostd_dev_fail(b->dev, -ETIMEDOUT, "image=%s: qemu-storage-daemon "
			       "did not start within %u s", b->image->image,
			       b->nbd_timeout_s);
		first_give_up(k);
		return;
	}
	if (k->n->pending && k->state == NBD_CONNECTING &&
	    now >= k->connect_deadline_ns) {
		/* as first_wait() says it */
		hostd_dev_fail(b->dev, -ETIMEDOUT, "nbd=%s: no answer from the "
			       "server within nbd_timeout=%u s", b->path,
			       b->nbd_timeout_s);
		first_give_up(k);
		return;
	}
	if (k->state == NBD_UP && overdue(&k->sent, now)) {
		k->n->st.stalls++;
		nbd_conn_lost(k, "the server did not answer within nbd_timeout");
	}
	if (k->state == NBD_CONNECTING && now >= k->connect_deadline_ns)
		nbd_conn_lost(k, "no handshake within nbd_timeout");
	fail_overdue(k, now);
	if (k->state == NBD_DOWN && now >= k->retry_ns)
		reconnect(k);
}

static void on_tick(struct hostd_dev *dev, int fd, __u32 events, void *arg)
{
	struct vbus_blk_nbd *n = arg;
	__u64 now = hostd_now_ns();
	unsigned int i;

	(void)dev;
	(void)events;
	hostd_eventfd_drain(fd);	/* a timerfd reads like one */
	for (i = 0; i < n->nconns; i++)
		tick_conn(&n->conn[i], now);
	nbd_settle(n);
}

int nbd_tick_init(struct vbus_blk_nbd *n)
{
	int ret;

	n->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (n->tfd < 0)
		return -errno;
	ret = hostd_fd_add(n->b->dev, n->tfd, EPOLLIN, on_tick, n);
	if (!ret)
		n->tfd_watched = true;
	return ret;
}

void nbd_tick_update(struct vbus_blk_nbd *n)
{
	bool want = false;
	struct itimerspec its;
	unsigned int i;

	for (i = 0; i < n->nconns; i++) {
		const struct nbd_conn *k = &n->conn[i];

		want |= k->state != NBD_UP || k->sent.n || k->parked.n;
	}
	if (n->tfd < 0 || want == n->ticking)
		return;
	memset(&its, 0, sizeof(its));
	if (want) {
		its.it_interval.tv_nsec = NBD_TICK_MS * 1000000L;
		its.it_value = its.it_interval;
	}
	if (timerfd_settime(n->tfd, 0, &its, NULL) == 0)
		n->ticking = want;
}

void nbd_conn_fini(struct vbus_blk_nbd *n)
{
	unsigned int i;

	for (i = 0; i < VBUS_BLK_MAX_QUEUES; i++)
		handle_drop(&n->conn[i]);
	if (n->tfd_watched)
		hostd_fd_del(n->b->dev, n->tfd);
	if (n->tfd >= 0)
		close(n->tfd);
	n->tfd = -1;
	n->tfd_watched = false;
}
