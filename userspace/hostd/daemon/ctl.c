// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the control socket.
 *
 * One request per connection: a line "list", "add NAME SPEC", "drop NAME
 * ID", "stats NAME [ID]" or "resize NAME ID SIZE" (a device's own verb:
 * the type's ctl op), optionally with "--json"; and, only in a
 * daemon started with --test-faults, "fault NAME VERB ARGS" (the library's
 * test-only fault injection, fault.h; refused otherwise). The reply's first
 * line is "OK" or "ERR <message>", the body follows; then the server
 * closes. Guest state is only touched on the guest's own thread
 * (hostd_guest_call), so the control path needs no locks of its own.
 * `add` goes through the same parser and the same hostd_bus_add() as
 * --device, so a mistake reads the same either way.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "daemon.h"

#define CTL_LINE_MAX 4096
#define CTL_MAX_TOKENS 8
#define CTL_USAGE "usage: list | add NAME SPEC | drop NAME ID | stats NAME [ID] [--json] | resize NAME ID SIZE | fault NAME VERB ... (--test-faults only)"

struct ctl_req {
	char *tok[CTL_MAX_TOKENS];
	unsigned int nt;
	bool json;
	struct hostd_guest **guests;
	unsigned int n;
	struct hostd_guest *g;		/* tok[1], when a guest is named */
	struct hostd_buf body;
	struct hostd_stats_out out;
	bool one;			/* stats: of device id only */
	__u32 id;
	struct daemon_dev_cfg dc;
	bool pending;			/* add: HOSTD_DEV_PENDING */
	char err[512];
};

static int ctl_fail(struct ctl_req *r, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int ctl_fail(struct ctl_req *r, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return ret;
}

static int parse_id(struct ctl_req *r, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*s < '0' || *s > '9' || errno || *end || v > 0xffffffffull)
		return ctl_fail(r, -EINVAL, "bad device id '%s'", s);
	r->id = (__u32)v;
	return 0;
}

/* ---- on the guest's thread ------------------------------------------------ */

static int on_list(struct hostd_guest *g, void *arg)
{
	struct ctl_req *r = arg;

	return hostd_guest_stats(g, &r->out, false, false, 0);
}

static int on_stats(struct hostd_guest *g, void *arg)
{
	struct ctl_req *r = arg;
	int ret = hostd_guest_stats(g, &r->out, true, r->one, r->id);

	if (ret == -ENOENT)
		ctl_fail(r, ret, "guest %s has no device %u", g->name, r->id);
	return ret;
}

static int on_add(struct hostd_guest *g, void *arg)
{
	struct ctl_req *r = arg;

	int ret = hostd_bus_add(&g->bus, r->dc.type, r->dc.id, &r->dc.params,
				r->err, sizeof(r->err));

	/* created, not ready: not CTL_LEFT, whatever the value */
	r->pending = ret == HOSTD_DEV_PENDING;
	return ret < 0 ? ret : 0;
}

static int on_drop(struct hostd_guest *g, void *arg)
{
	struct ctl_req *r = arg;

	return hostd_bus_drop(&g->bus, r->id, r->err, sizeof(r->err));
}

/* a device's own verb: tok[0] with the argument tok[3] */
static int on_dev_verb(struct hostd_guest *g, void *arg)
{
	struct ctl_req *r = arg;
	char msg[512];
	int ret = hostd_bus_ctl(&g->bus, r->id, r->tok[0], r->tok[3], msg,
				sizeof(msg));

	if (ret < 0)
		return ctl_fail(r, ret, "%s", msg);
	hostd_buf_printf(&r->body, "%s\n", msg);
	return 0;
}

static int on_fault(struct hostd_guest *g, void *arg)
{
	struct ctl_req *r = arg;

	return hostd_fault_exec(g, r->tok + 2, r->nt - 2, &r->body, r->err,
				sizeof(r->err));
}

/* ---- the commands ------------------------------------------------------------ */

/*
 * A guest whose thread has not taken the request within this is busy (a
 * device's long close, a stuck loop): ctl says so instead of waiting, so
 * neither the client nor SIGTERM (same thread) waits on a guest.
 */
#define CTL_GUEST_MS 1000

#define CTL_BUSY "guest %s is busy: its thread did not take the request within %u ms; try again"

static int on_guest(struct ctl_req *r, struct hostd_guest *g,
		    int (*fn)(struct hostd_guest *g, void *arg))
{
	int ret = 0, err = hostd_guest_call_within(g, fn, r, CTL_GUEST_MS,
						  &ret);

	if (err == -ETIMEDOUT)
		return ctl_fail(r, -EBUSY, CTL_BUSY, g->name, CTL_GUEST_MS);
	return err ? err : ret;
}

static void ctl_req_free(struct ctl_req *r)
{
	daemon_dev_cfg_free(&r->dc);
	hostd_buf_free(&r->body);
	free(r);
}

/* On the guest's thread: a request ctl left (on_guest_or_leave) ended. */
static void ctl_late(void *arg, int ret)
{
	struct ctl_req *r = arg;

	hostd_log("control socket: guest %s: a request answered 'busy' after %u ms has finished: %s",
		  r->g->name, CTL_GUEST_MS,
		  ret >= 0 ? "OK" : r->err[0] ? r->err : strerror(-ret));
	ctl_req_free(r);
}

/*
 * For what can block on the guest's thread (a device's open or close):
 * a request still running after CTL_GUEST_MS is left to finish there.
 * CTL_LEFT: @r is the guest thread's now (ctl_late frees it).
 */
#define CTL_LEFT 1

static int on_guest_or_leave(struct ctl_req *r,
			     int (*fn)(struct hostd_guest *g, void *arg))
{
	int ret = 0, err = hostd_guest_call_or_leave(r->g, fn, ctl_late, r,
						    CTL_GUEST_MS, &ret);

	if (err == -ETIMEDOUT)
		return ctl_fail(r, -EBUSY, CTL_BUSY, r->g->name, CTL_GUEST_MS);
	if (err == -EINPROGRESS)
		return CTL_LEFT;
	return err ? err : ret;
}

static int cmd_list(struct ctl_req *r)
{
	/* one wait for all: busy guests cost CTL_GUEST_MS together, not each */
	__u64 deadline = hostd_now_ns() + CTL_GUEST_MS * 1000000ull;
	unsigned int i;

	hostd_stat_begin(&r->out, NULL);
	hostd_stat_list(&r->out, "guests");
	for (i = 0; i < r->n; i++) {
		int ret;

		__u64 now = hostd_now_ns();
		/* at least 1 ms: 0 would be no limit */
		unsigned int ms = now < deadline ?
				  (unsigned int)((deadline - now) / 1000000) + 1 : 1;

		if (hostd_guest_call_within(r->guests[i], on_list, r, ms,
					    &ret) != -ETIMEDOUT)
			continue;
		hostd_stat_begin(&r->out, NULL);
		hostd_stat_str(&r->out, "guest", r->guests[i]->name);
		hostd_stat_str(&r->out, "state", "busy");
		hostd_stat_end(&r->out);
	}
	hostd_stat_list_end(&r->out);
	hostd_stat_end(&r->out);
	return 0;
}

static int cmd_add(struct ctl_req *r)
{
	int ret;

	if (daemon_parse_dev_spec(r->tok[2], r->g->name, &r->dc, r->err,
				 sizeof(r->err)))
		return -EINVAL;
	ret = on_guest_or_leave(r, on_add);
	if (ret == CTL_LEFT)
		return ret;
	if (!ret && r->pending)
		hostd_buf_printf(&r->body, "adding %s device %u to %s: pending "
				 "until its backend is ready, then the guest "
				 "sees it (ctl stats %s %u: state; if it gives "
				 "up, the log and the guest's add_error say "
				 "why)\n", r->dc.type, r->dc.id, r->g->name,
				 r->g->name, r->dc.id);
	else if (!ret)
		hostd_buf_printf(&r->body, "added %s device %u to %s\n",
				 r->dc.type, r->dc.id, r->g->name);
	daemon_dev_cfg_free(&r->dc);
	return ret;
}

static int cmd_drop(struct ctl_req *r)
{
	int ret = parse_id(r, r->tok[2]);

	if (!ret)
		ret = on_guest_or_leave(r, on_drop);
	if (ret == CTL_LEFT)
		return ret;
	if (!ret)
		hostd_buf_printf(&r->body, "dropped device %u from %s\n", r->id,
				 r->g->name);
	return ret;
}

static int cmd_stats(struct ctl_req *r)
{
	int ret = 0;

	r->one = r->nt == 3;
	if (r->one)
		ret = parse_id(r, r->tok[2]);
	return ret ? ret : on_guest(r, r->g, on_stats);
}

/* resize NAME ID SIZE: the device's ctl op (vbus-blk grows its disk) */
static int cmd_dev_verb(struct ctl_req *r)
{
	int ret = parse_id(r, r->tok[2]);

	return ret ? ret : on_guest(r, r->g, on_dev_verb);
}

/* Test-only (fault.h): refused by the library unless --test-faults. */
static int cmd_fault(struct ctl_req *r)
{
	return on_guest(r, r->g, on_fault);
}

static const struct {
	const char *name;
	unsigned int min, max;		/* words, the command included */
	int (*run)(struct ctl_req *r);
} ctl_cmds[] = {
	{ "list", 1, 1, cmd_list },
	{ "add", 3, 3, cmd_add },
	{ "drop", 3, 3, cmd_drop },
	{ "stats", 2, 3, cmd_stats },
	{ "resize", 4, 4, cmd_dev_verb },
	{ "fault", 3, CTL_MAX_TOKENS, cmd_fault },
};

/* Split @buf into words (and --json); 0, or -1 with the reason. */
static int ctl_tokens(struct ctl_req *r, char *buf)
{
	char *save = NULL, *t;

	for (t = strtok_r(buf, " \t\r\n", &save); t;
	     t = strtok_r(NULL, " \t\r\n", &save)) {
		if (!strcmp(t, "--json")) {
			r->json = true;
			continue;
		}
		if (r->nt == CTL_MAX_TOKENS)
			return ctl_fail(r, -1, "too many arguments");
		r->tok[r->nt++] = t;
	}
	if (!r->nt)
		return ctl_fail(r, -1, "empty request (list, add, drop, stats, resize)");
	return 0;
}

static struct hostd_guest *find_guest(struct ctl_req *r, const char *name)
{
	unsigned int i;

	for (i = 0; i < r->n; i++)
		if (!strcmp(r->guests[i]->name, name))
			return r->guests[i];
	return NULL;
}

/* @g: the guest the request names, if any (it outlives @r) */
static int ctl_dispatch(struct ctl_req *r, struct hostd_guest **g)
{
	unsigned int i;

	for (i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++) {
		if (strcmp(r->tok[0], ctl_cmds[i].name) ||
		    r->nt < ctl_cmds[i].min || r->nt > ctl_cmds[i].max)
			continue;
		if (r->nt >= 2) {
			r->g = find_guest(r, r->tok[1]);
			if (!r->g)
				return ctl_fail(r, -ENOENT, HOSTD_ERR_NO_GUEST,
						r->tok[1]);
			*g = r->g;
		}
		return ctl_cmds[i].run(r);
	}
	return ctl_fail(r, -EINVAL, CTL_USAGE);
}

void daemon_ctl_exec(const char *line, struct hostd_guest **guests,
		    unsigned int n, struct hostd_buf *out)
{
	struct ctl_req *r = calloc(1, sizeof(*r));
	struct hostd_guest *g = NULL;
	char buf[CTL_LINE_MAX];
	int ret;

	if (!r) {
		hostd_buf_printf(out, "ERR out of memory\n");
		return;
	}
	r->guests = guests;
	r->n = n;
	if (strlen(line) >= sizeof(buf)) {
		ret = ctl_fail(r, -EINVAL, "request too long");
	} else {
		strcpy(buf, line);
		ret = ctl_tokens(r, buf);
	}
	if (!ret) {
		hostd_stat_init(&r->out, &r->body, r->json);
		ret = ctl_dispatch(r, &g);
	}
	if (ret == CTL_LEFT) {
		/* @r is no longer ours: the guest's thread frees it */
		hostd_buf_printf(out, "ERR guest %s is busy: the request did not finish within %u ms (a device's open or close waits); it goes on on the guest's thread, and the log says how it ends\n",
				 g->name, CTL_GUEST_MS);
		return;
	}
	if (r->body.oom)
		hostd_buf_printf(out, "ERR out of memory\n");
	else if (ret < 0)
		hostd_buf_printf(out, "ERR %s\n", r->err[0] ? r->err : strerror(-ret));
	else
		hostd_buf_printf(out, "OK\n%s", r->body.len ? r->body.s : "");
	ctl_req_free(r);
}

/* ---- the socket ------------------------------------------------------------ */

int daemon_ctl_listen(const char *path, char *err, size_t errlen)
{
	mode_t old;
	int fd;

	/*
	 * It adds and drops devices: our user only, from the moment the
	 * name exists (a chmod after bind() leaves a window in which anyone
	 * can connect). umask is the process's: this runs before any of the
	 * guests' threads is started.
	 */
	old = umask(0177);
	fd = hostd_sock_listen(path, err, errlen);
	umask(old);
	return fd;
}

/* The ctl client's whole request, and the whole reply, each within this. */
#define CTL_DEADLINE_MS 2000

/* ms left until @deadline (hostd_now_ns), 0 when it has passed */
static int ms_left(__u64 deadline)
{
	__u64 now = hostd_now_ns();

	return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

/*
 * Wait for @events on @fd until @deadline: true when they came; false at
 * the deadline or once @stop_fd (the signalfd, or -1) is readable.
 */
static bool wait_for(int fd, short events, int stop_fd, __u64 deadline)
{
	struct pollfd p[2] = {
		{ .fd = fd, .events = events },
		{ .fd = stop_fd, .events = POLLIN },
	};
	int ms;

	while ((ms = ms_left(deadline)) > 0) {
		int r = poll(p, stop_fd >= 0 ? 2 : 1, ms);

		if (r > 0)
			return !p[1].revents && p[0].revents;
		if (r < 0 && errno != EINTR)
			return false;
	}
	return false;
}

static int write_all(int fd, const char *p, size_t len, int stop_fd,
		     __u64 deadline)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN &&
			    wait_for(fd, POLLOUT, stop_fd, deadline))
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * One line (up to the first newline); its length, 0 for nothing. The
 * deadline is for the whole line: a client that sends a byte at a time
 * cannot hold the thread that serves ctl and signals for longer.
 */
static size_t read_line(int fd, char *line, size_t max, int stop_fd,
			__u64 deadline)
{
	size_t len = 0;

	while (len < max - 1) {
		ssize_t r = recv(fd, line + len, max - 1 - len, MSG_DONTWAIT);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN &&
		    wait_for(fd, POLLIN, stop_fd, deadline))
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (memchr(line + len - (size_t)r, '\n', (size_t)r))
			break;
	}
	line[len] = 0;
	return len;
}

/*
 * Only root and the daemon's own user may drive it: the socket's mode
 * says so too, but a descriptor can be passed on, and a directory's
 * permissions can be loose.
 */
static bool peer_allowed(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return false;
	if (cr.uid == 0 || cr.uid == geteuid())
		return true;
	hostd_log("control socket: refused a client of uid %u (pid %d): only root and uid %u",
		  (unsigned int)cr.uid, (int)cr.pid, (unsigned int)geteuid());
	return false;
}

/* A signal waits on @stop_fd: the daemon is going down. */
static bool stopping(int stop_fd)
{
	struct pollfd p = { .fd = stop_fd, .events = POLLIN };

	return stop_fd >= 0 && poll(&p, 1, 0) > 0;
}

void daemon_ctl_serve(int fd, int stop_fd, struct hostd_guest **guests,
		      unsigned int n)
{
	__u64 deadline = hostd_now_ns() + CTL_DEADLINE_MS * 1000000ull;
	struct hostd_buf out = { 0 };
	char line[CTL_LINE_MAX];
	size_t len;

	/* the request is read either way: the client writes before it reads */
	len = read_line(fd, line, sizeof(line), stop_fd, deadline);
	if (stopping(stop_fd))
		hostd_log("control socket: a request left unanswered: shutting down");
	else if (!peer_allowed(fd))
		hostd_buf_printf(&out, "ERR permission denied\n");
	else if (len == sizeof(line) - 1 && !memchr(line, '\n', len))
		hostd_buf_printf(&out, "ERR request too long\n");
	else if (len)
		daemon_ctl_exec(line, guests, n, &out);
	deadline = hostd_now_ns() + CTL_DEADLINE_MS * 1000000ull;
	if (out.oom)
		write_all(fd, "ERR out of memory\n", 18, stop_fd, deadline);
	else if (out.len)
		write_all(fd, out.s, out.len, stop_fd, deadline);
	hostd_buf_free(&out);
	close(fd);
}

/* ---- the client ------------------------------------------------------------- */

static int client_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "vbus-hostd ctl: %s: path too long\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "vbus-hostd ctl: cannot connect to %s: %s\n", path,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The whole reply, until the server closes. */
static void client_read(int fd, struct hostd_buf *in)
{
	char buf[4096];

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		buf[n] = 0;
		hostd_buf_printf(in, "%s", buf);
	}
}

int daemon_ctl_client(const char *path, const char *line, FILE *out)
{
	struct hostd_buf in = { 0 };
	__u64 deadline;
	char *nl;
	int fd, ret = 1;

	fd = client_connect(path);
	if (fd < 0)
		return 1;
	deadline = hostd_now_ns() + CTL_DEADLINE_MS * 1000000ull;
	if (write_all(fd, line, strlen(line), -1, deadline) < 0 ||
	    write_all(fd, "\n", 1, -1, deadline) < 0) {
		fprintf(stderr, "vbus-hostd ctl: send: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	shutdown(fd, SHUT_WR);
	client_read(fd, &in);
	close(fd);
	if (!in.len || in.oom) {
		fprintf(stderr, "vbus-hostd ctl: no reply from %s\n", path);
	} else {
		nl = strchr(in.s, '\n');
		if (nl)
			*nl = 0;
		if (!strcmp(in.s, "OK")) {
			fputs(nl ? nl + 1 : "", out);
			ret = 0;
		} else {
			fprintf(stderr, "vbus-hostd ctl: %s\n",
				!strncmp(in.s, "ERR ", 4) ? in.s + 4 : in.s);
		}
	}
	hostd_buf_free(&in);
	return ret;
}

int daemon_ctl_fault_spec(const char *spec, struct hostd_guest **guests,
			  unsigned int n, char *err, size_t errlen)
{
	struct hostd_buf out = { 0 };
	char line[CTL_LINE_MAX];
	int ret = 0;

	snprintf(line, sizeof(line), "fault %s", spec);
	daemon_ctl_exec(line, guests, n, &out);
	if (!out.s || strncmp(out.s, "OK", 2)) {
		snprintf(err, errlen, "--test-fault '%s': %s", spec,
			 out.s && !strncmp(out.s, "ERR ", 4) ? out.s + 4 :
			 "no answer");
		err[strcspn(err, "\n")] = 0;
		ret = -1;
	}
	hostd_buf_free(&out);
	return ret;
}
