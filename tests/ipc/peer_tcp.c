// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ipc-peer's TCP link: the messages of a vbus-ipc session over one
 * TCP_NODELAY connection, each framed by its length (32 bits, little
 * endian), so bench/ipc-vs-tcp.sh runs the same pattern over venet and
 * virtio-net. PEER_MORE messages are queued and written by one send() at
 * flush, as vbus-ipc rings one doorbell for them.
 *
 * Non-blocking socket: while a flush waits for room it also reads, so two
 * ends that both write (a stream against an echo) never wait on each
 * other's full buffers. The received bytes are buffered without bound
 * other than RX_LIMIT: the sender bounds what it has in flight.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "peer_link.h"

#define HDR 4u
#define RX_LIMIT (256u << 20)

struct buf {
	unsigned char *p;
	size_t start, end, cap;
};

struct tcp_link {
	struct peer_link link;
	int fd;
	int timeout_ms;
	size_t max;
	struct buf in, out;
	int eof;		/* the peer closed its end */
	int err;		/* the link is dead: -errno */
	struct peer_stats st;
};

static struct tcp_link *tl(struct peer_link *l)
{
	return (struct tcp_link *)l;
}

/* room for @n more bytes at the end of @b (compacting, then growing) */
static int buf_reserve(struct buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 65536;
	unsigned char *p;

	if (b->start && b->cap - b->end < n) {
		memmove(b->p, b->p + b->start, b->end - b->start);
		b->end -= b->start;
		b->start = 0;
	}
	if (b->cap - b->end >= n)
		return 0;
	while (cap - b->end < n)
		cap *= 2;
	if (cap > RX_LIMIT + 2 * (HDR + 65536ul))
		return -ENOBUFS;
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

static void fail(struct tcp_link *t, int err)
{
	if (!t->err)
		t->err = err;
	t->st.faults += err == -EIO;
}

/* read what the socket has; sets eof/err */
static void fill_in(struct tcp_link *t)
{
	ssize_t n;
	int err;

	while (!t->eof && !t->err) {
		err = buf_reserve(&t->in, 65536);
		if (err) {
			fail(t, err);
			return;
		}
		n = read(t->fd, t->in.p + t->in.end, t->in.cap - t->in.end);
		if (n > 0) {
			t->in.end += (size_t)n;
		} else if (n == 0) {
			t->eof = 1;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			return;
		} else if (errno != EINTR) {
			fail(t, errno == ECONNRESET ? -EPIPE : -errno);
		}
	}
}

/* the length of the next whole message in, -EAGAIN if not all there */
static long next_frame(struct tcp_link *t)
{
	size_t avail = t->in.end - t->in.start;
	const unsigned char *h;
	uint32_t len;

	if (avail < HDR)
		return -EAGAIN;
	h = t->in.p + t->in.start;
	len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
	      (uint32_t)h[3] << 24;
	if (len > t->max) {
		/* the peer speaks another protocol or a bigger size */
		fail(t, -EIO);
		return -EIO;
	}
	return avail - HDR >= len ? (long)len : -EAGAIN;
}

static long tcp_recv(struct peer_link *l, void *buf, size_t max)
{
	struct tcp_link *t = tl(l);
	long len = next_frame(t);

	if (len == -EAGAIN) {
		fill_in(t);
		len = next_frame(t);
	}
	if (len == -EAGAIN)
		return t->err ? t->err : t->eof ? -EPIPE : -EAGAIN;
	if (len < 0)
		return len;
	if ((size_t)len > max)
		return -EMSGSIZE;
	memcpy(buf, t->in.p + t->in.start + HDR, (size_t)len);
	t->in.start += HDR + (size_t)len;
	t->st.received++;
	return len;
}

/* poll @events (plus what a dead peer raises); > 0, 0 timeout, -errno */
static int wait_fd(struct tcp_link *t, short events, short *revents)
{
	struct pollfd p = { .fd = t->fd, .events = events };
	int r;

	t->st.sleeps++;
	do
		r = poll(&p, 1, t->timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	*revents = p.revents;
	return r;
}

static long tcp_flush(struct peer_link *l)
{
	struct tcp_link *t = tl(l);
	struct buf *o = &t->out;
	short rev = 0;
	ssize_t n;
	int r;

	while (!t->err && o->start < o->end) {
		n = send(t->fd, o->p + o->start, o->end - o->start,
			 MSG_NOSIGNAL);
		if (n >= 0) {
			o->start += (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			fail(t, errno == ECONNRESET ? -EPIPE : -errno);
			break;
		}
		/* no room: take in what the peer sends meanwhile */
		r = wait_fd(t, t->eof ? POLLOUT : POLLOUT | POLLIN, &rev);
		if (r <= 0)
			return r ? r : -ETIMEDOUT;
		if (rev & POLLIN)
			fill_in(t);
	}
	o->start = o->end = 0;
	return t->err;
}

static long tcp_send(struct peer_link *l, const void *buf, size_t len,
		     int flags)
{
	struct tcp_link *t = tl(l);
	unsigned char *h;
	int err;

	if (len > t->max)
		return -EMSGSIZE;
	if (t->err)
		return t->err;
	err = buf_reserve(&t->out, HDR + len);
	if (err)
		return err;
	h = t->out.p + t->out.end;
	h[0] = (unsigned char)len;
	h[1] = (unsigned char)(len >> 8);
	h[2] = (unsigned char)(len >> 16);
	h[3] = (unsigned char)(len >> 24);
	memcpy(h + HDR, buf, len);
	t->out.end += HDR + len;
	t->st.sent++;
	return (flags & PEER_MORE) ? 0 : tcp_flush(l);
}

static long tcp_wait(struct peer_link *l, enum peer_wait what, int timeout_ms)
{
	struct tcp_link *t = tl(l);
	int saved = t->timeout_ms, r;
	short rev = 0;

	/* the out buffer grows: there is always room to send */
	if (what == PEER_WAIT_TX || next_frame(t) >= 0)
		return t->err ? t->err : 1;
	if (t->err)
		return t->err;
	if (t->eof)
		return -EPIPE;
	t->timeout_ms = timeout_ms;
	r = wait_fd(t, POLLIN, &rev);
	t->timeout_ms = saved;
	if (r > 0)
		fill_in(t);
	return r;
}

static size_t tcp_max_msg(struct peer_link *l)
{
	return tl(l)->max;
}

static void tcp_stats(struct peer_link *l, struct peer_stats *st)
{
	*st = tl(l)->st;
}

static void tcp_close(struct peer_link *l)
{
	struct tcp_link *t = tl(l);

	close(t->fd);
	free(t->in.p);
	free(t->out.p);
	free(t);
}

static const struct peer_link_ops tcp_ops = {
	.send = tcp_send, .flush = tcp_flush, .recv = tcp_recv,
	.wait = tcp_wait, .max_msg = tcp_max_msg, .stats = tcp_stats,
	.close = tcp_close,
};

/* "A.B.C.D:PORT" into @sa; 0 or -EINVAL */
static int parse_addr(const char *where, struct sockaddr_in *sa)
{
	const char *colon = strrchr(where, ':');
	char host[64];
	char *end;
	unsigned long port;

	if (!colon || (size_t)(colon - where) >= sizeof(host))
		return -EINVAL;
	memcpy(host, where, (size_t)(colon - where));
	host[colon - where] = 0;
	port = strtoul(colon + 1, &end, 10);
	if (*end || !port || port > 65535)
		return -EINVAL;
	*sa = (struct sockaddr_in){ .sin_family = AF_INET,
				    .sin_port = htons((uint16_t)port) };
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -EINVAL;
}

static int do_listen(const struct sockaddr_in *sa, int timeout_ms)
{
	struct pollfd p = { .events = POLLIN };
	int one = 1, fd, c = -1, r;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) ||
	    listen(fd, 1)) {
		c = -errno;
		goto out;
	}
	p.fd = fd;
	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		c = r ? -errno : -ETIMEDOUT;
		goto out;
	}
	c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		c = -errno;
out:
	close(fd);
	return c;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* the listener may not be up yet: retry until @timeout_ms (< 0: forever) */
static int do_connect(const struct sockaddr_in *sa, int timeout_ms)
{
	double end = now_ms() + timeout_ms;
	int fd, err;

	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (!connect(fd, (const struct sockaddr *)sa, sizeof(*sa)))
			return fd;
		err = errno;
		close(fd);
		if (err != ECONNREFUSED && err != ETIMEDOUT &&
		    err != EHOSTUNREACH && err != ENETUNREACH && err != EINTR)
			return -err;
		if (timeout_ms >= 0 && now_ms() >= end)
			return -ETIMEDOUT;
		usleep(20000);
	}
}

int peer_tcp_attach(struct peer_link **l, const char *side, const char *where,
		    size_t max_msg, int timeout_ms)
{
	struct sockaddr_in sa;
	struct tcp_link *t;
	int one = 1, fd;

	if (parse_addr(where, &sa) || !max_msg || max_msg > 65536)
		return -EINVAL;
	fd = !strcmp(side, "tcp-listen") ? do_listen(&sa, timeout_ms) :
					    do_connect(&sa, timeout_ms);
	if (fd < 0)
		return fd;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)) {
		close(fd);
		return -errno;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		close(fd);
		return -ENOMEM;
	}
	t->link = (struct peer_link){ .ops = &tcp_ops, .name = "tcp" };
	t->fd = fd;
	t->max = max_msg;
	t->timeout_ms = timeout_ms;
	*l = &t->link;
	return 0;
}
