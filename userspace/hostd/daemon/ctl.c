// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the control socket.
 *
 * One request per connection: a line "list", "add NAME SPEC", "drop NAME
 * ID" or "stats NAME [ID]", optionally with "--json". The reply's first
 * line is "OK" or "ERR <message>", the body follows; then the server
 * closes. Guest state is only touched on the guest's own thread
 * (hostd_guest_call), so the control path needs no locks of its own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "hostd.h"

#define CTL_LINE_MAX 4096
#define CTL_MAX_TOKENS 8

static const char *guest_state(struct hostd_guest *g)
{
	if (g->faulted)
		return "faulted";
	if (g->busreg)
		return "registered";
	if (g->conn_fd >= 0)
		return "connected";
	return "waiting";
}

struct ctl_req {
	struct hostd_buf *out;
	bool json;
	bool first;
	bool have_id;
	__u32 id;
	struct hostd_dev_cfg *dc;
	char err[256];
};

static int do_list(struct hostd_guest *g, void *arg)
{
	struct ctl_req *r = arg;
	struct hostd_list *pos, *tmp;
	bool first = true;

	if (r->json) {
		hostd_buf_printf(r->out, "%s{\"name\": ", r->first ? "" : ", ");
		hostd_buf_json_str(r->out, g->name);
		hostd_buf_printf(r->out, ", \"state\": \"%s\", \"sock\": ",
				 guest_state(g));
		hostd_buf_json_str(r->out, g->cfg.sock);
		hostd_buf_printf(r->out, ", \"devices\": [");
	} else {
		hostd_buf_printf(r->out, "%-16s %-11s ", g->name, guest_state(g));
	}
	hostd_list_for_each_safe(pos, tmp, &g->devs) {
		struct hostd_dev *d = hostd_container_of(pos, struct hostd_dev, node);
		const char *st = d->faulted ? "faulted" : d->open ? "open" : "closed";

		if (r->json) {
			hostd_buf_printf(r->out, "%s{\"id\": %u, \"type\": ",
					 first ? "" : ", ", d->id);
			hostd_buf_json_str(r->out, d->type->name);
			hostd_buf_printf(r->out, ", \"state\": \"%s\"}", st);
		} else {
			hostd_buf_printf(r->out, "%s%u:%s(%s)", first ? "" : " ",
					 d->id, d->type->name, st);
		}
		first = false;
	}
	if (r->json)
		hostd_buf_printf(r->out, "]}");
	else
		hostd_buf_printf(r->out, "%s\n", first ? "-" : "");
	r->first = false;
	return 0;
}

static int do_stats(struct hostd_guest *g, void *arg)
{
	struct ctl_req *r = arg;
	struct hostd_stats_out so = { .b = r->out, .json = r->json };
	struct hostd_list *pos, *tmp;
	bool first = true;

	if (r->have_id && !hostd_dev_find(g, r->id)) {
		snprintf(r->err, sizeof(r->err), "guest %s has no device %u",
			 g->name, r->id);
		return -ENOENT;
	}
	if (r->json) {
		hostd_buf_printf(r->out, "{\"guest\": ");
		hostd_buf_json_str(r->out, g->name);
		hostd_buf_printf(r->out,
				 ", \"state\": \"%s\", \"connections\": %llu, "
				 "\"hypercalls\": %llu, \"hc_errors\": %llu, "
				 "\"doorbells\": %llu, \"unknown_signals\": %llu, "
				 "\"events_posted\": %llu, \"events_backlog\": %u, "
				 "\"events_dropped\": %llu, \"bus_faults\": %llu, "
				 "\"devices\": [",
				 guest_state(g),
				 (unsigned long long)g->connections,
				 (unsigned long long)g->hypercalls,
				 (unsigned long long)g->hc_errors,
				 (unsigned long long)g->doorbells,
				 (unsigned long long)g->sig_unknown,
				 (unsigned long long)g->evq.posted, g->evq.bl_len,
				 (unsigned long long)g->evq.dropped,
				 (unsigned long long)g->bus_faults);
	} else {
		hostd_buf_printf(r->out,
				 "guest %s: state=%s connections=%llu hypercalls=%llu "
				 "hc_errors=%llu doorbells=%llu unknown_signals=%llu "
				 "events_posted=%llu events_backlog=%u "
				 "events_dropped=%llu bus_faults=%llu\n",
				 g->name, guest_state(g),
				 (unsigned long long)g->connections,
				 (unsigned long long)g->hypercalls,
				 (unsigned long long)g->hc_errors,
				 (unsigned long long)g->doorbells,
				 (unsigned long long)g->sig_unknown,
				 (unsigned long long)g->evq.posted, g->evq.bl_len,
				 (unsigned long long)g->evq.dropped,
				 (unsigned long long)g->bus_faults);
		hostd_buf_printf(r->out, "%-10s %-18s %-8s %10s %10s %14s %10s %10s %6s  %s\n",
				 "ID", "TYPE", "STATE", "CALLS", "DESCS", "BYTES",
				 "NOTIFY_IN", "NOTIFY_OUT", "FAULTS", "DEVICE");
	}
	hostd_list_for_each_safe(pos, tmp, &g->devs) {
		struct hostd_dev *d = hostd_container_of(pos, struct hostd_dev, node);

		if (r->have_id && d->id != r->id)
			continue;
		if (r->json && !first)
			hostd_buf_printf(r->out, ", ");
		hostd_dev_stats(d, &so);
		first = false;
	}
	if (r->json)
		hostd_buf_printf(r->out, "]}\n");
	return 0;
}

static int do_add(struct hostd_guest *g, void *arg)
{
	struct ctl_req *r = arg;

	return hostd_dev_add(g, r->dc, r->err, sizeof(r->err));
}

static int do_drop(struct hostd_guest *g, void *arg)
{
	struct ctl_req *r = arg;
	int ret = hostd_dev_drop(g, r->id);

	if (ret < 0)
		snprintf(r->err, sizeof(r->err), "guest %s has no device %u",
			 g->name, r->id);
	return ret;
}

static struct hostd_guest *find_guest(struct hostd_guest **guests,
				      unsigned int n, const char *name)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (!strcmp(guests[i]->name, name))
			return guests[i];
	return NULL;
}

static int parse_id(const char *s, __u32 *id)
{
	char *end;
	unsigned long long v;

	if (!*s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > 0xffffffffull)
		return -1;
	*id = (__u32)v;
	return 0;
}

void hostd_ctl_exec(const char *line, struct hostd_guest **guests,
		    unsigned int n, struct hostd_buf *out)
{
	char buf[CTL_LINE_MAX], *tok[CTL_MAX_TOKENS], *save = NULL, *t;
	struct hostd_buf body = { 0 };
	struct ctl_req r = { .out = &body, .first = true };
	struct hostd_guest *g = NULL;
	unsigned int nt = 0, i;
	int ret = 0;

	if (strlen(line) >= sizeof(buf)) {
		hostd_buf_printf(out, "ERR request too long\n");
		return;
	}
	strcpy(buf, line);
	for (t = strtok_r(buf, " \t\r\n", &save); t;
	     t = strtok_r(NULL, " \t\r\n", &save)) {
		if (!strcmp(t, "--json")) {
			r.json = true;
			continue;
		}
		if (nt == CTL_MAX_TOKENS) {
			hostd_buf_printf(out, "ERR too many arguments\n");
			return;
		}
		tok[nt++] = t;
	}
	if (!nt) {
		hostd_buf_printf(out, "ERR empty request (list, add, drop, stats)\n");
		return;
	}
	if (nt >= 2) {
		g = find_guest(guests, n, tok[1]);
		if (!g && strcmp(tok[0], "list")) {
			hostd_buf_printf(out, "ERR no guest '%s'\n", tok[1]);
			return;
		}
	}

	if (!strcmp(tok[0], "list") && nt == 1) {
		if (r.json)
			hostd_buf_printf(&body, "{\"guests\": [");
		else
			hostd_buf_printf(&body, "%-16s %-11s %s\n", "GUEST", "STATE",
					 "DEVICES");
		for (i = 0; i < n; i++)
			hostd_guest_call(guests[i], do_list, &r);
		if (r.json)
			hostd_buf_printf(&body, "]}\n");
	} else if (!strcmp(tok[0], "add") && nt == 3) {
		struct hostd_dev_cfg dc;

		if (hostd_parse_dev_spec(tok[2], false, &dc, r.err, sizeof(r.err))) {
			ret = -EINVAL;
		} else {
			r.dc = &dc;
			ret = hostd_guest_call(g, do_add, &r);
			hostd_dev_cfg_free(&dc);	/* no-op if taken over */
			if (!ret)
				hostd_buf_printf(&body, "added %s device %u to %s\n",
						 dc.type, dc.id, g->name);
		}
	} else if (!strcmp(tok[0], "drop") && nt == 3) {
		if (parse_id(tok[2], &r.id)) {
			snprintf(r.err, sizeof(r.err), "bad device id '%s'", tok[2]);
			ret = -EINVAL;
		} else {
			ret = hostd_guest_call(g, do_drop, &r);
			if (!ret)
				hostd_buf_printf(&body, "dropped device %u from %s\n",
						 r.id, g->name);
		}
	} else if (!strcmp(tok[0], "stats") && (nt == 2 || nt == 3)) {
		if (nt == 3 && parse_id(tok[2], &r.id)) {
			snprintf(r.err, sizeof(r.err), "bad device id '%s'", tok[2]);
			ret = -EINVAL;
		} else {
			r.have_id = nt == 3;
			ret = hostd_guest_call(g, do_stats, &r);
		}
	} else {
		snprintf(r.err, sizeof(r.err),
			 "usage: list | add NAME SPEC | drop NAME ID | stats NAME [ID] [--json]");
		ret = -EINVAL;
	}

	if (body.oom) {
		hostd_buf_printf(out, "ERR out of memory\n");
	} else if (ret < 0) {
		hostd_buf_printf(out, "ERR %s\n", r.err[0] ? r.err : strerror(-ret));
	} else {
		hostd_buf_printf(out, "OK\n");
		if (body.len)
			hostd_buf_printf(out, "%s", body.s);
	}
	hostd_buf_free(&body);
}

int hostd_ctl_listen(const char *path)
{
	char err[256];
	int fd = hostd_unix_listen(path, err, sizeof(err));

	if (fd < 0) {
		hostd_log("control socket: %s", err);
		return fd;
	}
	/* it adds and drops devices: our user only */
	if (chmod(path, 0600) < 0)
		hostd_log("control socket: chmod %s: %s", path, strerror(errno));
	return fd;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void hostd_ctl_serve(int fd, struct hostd_guest **guests, unsigned int n)
{
	struct timeval tv = { .tv_sec = 2 };
	struct hostd_buf out = { 0 };
	char line[CTL_LINE_MAX];
	size_t len = 0;

	/* a client that never finishes its line cannot hold the daemon */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (len < sizeof(line) - 1) {
		ssize_t r = recv(fd, line + len, sizeof(line) - 1 - len, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (memchr(line + len - (size_t)r, '\n', (size_t)r))
			break;
	}
	line[len] = 0;
	if (!len) {
		close(fd);
		return;
	}
	if (len == sizeof(line) - 1 && !memchr(line, '\n', len))
		hostd_buf_printf(&out, "ERR request too long\n");
	else
		hostd_ctl_exec(line, guests, n, &out);
	if (out.oom)
		write_all(fd, "ERR out of memory\n", 18);
	else if (out.len)
		write_all(fd, out.s, out.len);
	hostd_buf_free(&out);
	close(fd);
}

int hostd_ctl_client(const char *path, const char *line, FILE *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct hostd_buf in = { 0 };
	char buf[4096], *nl;
	int fd, ret;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "vbus-hostd ctl: %s: path too long\n", path);
		return 1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "vbus-hostd ctl: cannot connect to %s: %s\n", path,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	if (write_all(fd, line, strlen(line)) < 0 || write_all(fd, "\n", 1) < 0) {
		fprintf(stderr, "vbus-hostd ctl: send: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		buf[n] = 0;
		hostd_buf_printf(&in, "%s", buf);
	}
	close(fd);
	if (!in.len || in.oom) {
		fprintf(stderr, "vbus-hostd ctl: no reply from %s\n", path);
		hostd_buf_free(&in);
		return 1;
	}
	nl = strchr(in.s, '\n');
	if (nl)
		*nl = 0;
	if (!strcmp(in.s, "OK")) {
		if (nl)
			fputs(nl + 1, out);
		ret = 0;
	} else {
		fprintf(stderr, "vbus-hostd ctl: %s\n",
			!strncmp(in.s, "ERR ", 4) ? in.s + 4 : in.s);
		ret = 1;
	}
	hostd_buf_free(&in);
	return ret;
}
