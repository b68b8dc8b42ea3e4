// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-fdkeeper: keeps a daemon's stored descriptors and restarts it, for
 * hosts without systemd and for the tests (docs/operations.md,
 * "Restarts"). It speaks the part of systemd's protocol vbus-hostd uses:
 *
 *   - the daemon gets NOTIFY_SOCKET, a datagram socket in a directory of
 *     the keeper's own (mode 0700, under $RUNTIME_DIRECTORY,
 *     $XDG_RUNTIME_DIR or /run: nobody else can bind its name, not even
 *     after the keeper is gone); only datagrams from the current daemon's
 *     pid count (SO_PASSCRED);
 *   - "FDSTORE=1" + "FDNAME=N" keeps the attached descriptors under N (a
 *     second FDSTORE of N replaces the first), "FDSTOREREMOVE=1" +
 *     "FDNAME=N" closes them; "READY=1" is logged;
 *   - each start passes what is stored as fds 3.., with LISTEN_FDS,
 *     LISTEN_FDNAMES and LISTEN_PID.
 *
 *   vbus-fdkeeper [--restart-delay MS] -- COMMAND [ARGS...]
 *
 * The daemon is started again when it dies by a signal (a crash) or exits
 * 0 without the keeper having asked (a graceful restart: SIGTERM to the
 * daemon). Any other exit code ends the keeper with that code (2: the
 * configuration is wrong, restarting will not help); so does a tenth
 * restart within ten seconds (exit 1). SIGTERM, SIGINT or SIGHUP to the
 * keeper: SIGTERM to the daemon, wait, exit 0; the store goes with it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_STORED	512
#define MAX_MSG_FDS	16
#define NAME_MAX_LEN	64
#define RESTART_BURST	10
#define BURST_SECONDS	10

struct stored {
	int fd;
	char name[NAME_MAX_LEN];
};

struct keeper {
	char **argv;
	unsigned int delay_ms;
	char dir[128];			/* ours, 0700: holds the socket */
	char sockname[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int sock, sig;
	pid_t child;
	bool stopping;
	struct stored st[MAX_STORED];
	unsigned int n;
	time_t starts[RESTART_BURST];
	unsigned int nstarts;
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "vbus-fdkeeper: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- the store ------------------------------------------------------------ */

static void store_remove(struct keeper *k, const char *name)
{
	unsigned int i = 0;

	while (i < k->n) {
		if (strcmp(k->st[i].name, name)) {
			i++;
			continue;
		}
		close(k->st[i].fd);
		k->st[i] = k->st[--k->n];
	}
}

static void store_add(struct keeper *k, const char *name, const int *fds,
		      int nfds)
{
	int i;

	store_remove(k, name);
	for (i = 0; i < nfds; i++) {
		if (k->n == MAX_STORED) {
			say("store full (%d): '%s' not kept", MAX_STORED, name);
			close(fds[i]);
			continue;
		}
		k->st[k->n].fd = fds[i];
		snprintf(k->st[k->n].name, NAME_MAX_LEN, "%s", name);
		k->n++;
	}
}

/* ---- notify messages ---------------------------------------------------------- */

/* The value of "KEY=" on a line of @msg, copied into @out; false if absent. */
static bool field(const char *msg, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key);
	const char *p = msg;

	while (p && *p) {
		if (!strncmp(p, key, kl)) {
			const char *e = strchr(p, '\n');
			size_t vl = e ? (size_t)(e - p - kl) : strlen(p + kl);

			if (vl >= len)
				vl = len - 1;
			memcpy(out, p + kl, vl);
			out[vl] = 0;
			return true;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

static void handle_msg(struct keeper *k, const char *msg, int *fds, int nfds)
{
	char name[NAME_MAX_LEN] = "", v[8];
	bool named = field(msg, "FDNAME=", name, sizeof(name));
	int i;

	if (field(msg, "FDSTORE=", v, sizeof(v)) && !strcmp(v, "1")) {
		if (named && name[0] && !strchr(name, ':')) {
			store_add(k, name, fds, nfds);
			return;
		}
		say("FDSTORE without a valid FDNAME: descriptors dropped");
	} else if (field(msg, "FDSTOREREMOVE=", v, sizeof(v)) &&
		   !strcmp(v, "1") && named) {
		store_remove(k, name);
	}
	if (field(msg, "READY=", v, sizeof(v)) && !strcmp(v, "1"))
		say("daemon pid %d ready (%u stored descriptors)",
		    (int)k->child, k->n);
	for (i = 0; i < nfds; i++)
		close(fds[i]);
}

/* One datagram; false when none is queued. */
static bool recv_one(struct keeper *k)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred)) +
			 CMSG_SPACE(sizeof(int) * MAX_MSG_FDS)];
		struct cmsghdr align;
	} u;
	char msg[4096];
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) - 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct ucred cred = { .pid = 0 };
	int fds[MAX_MSG_FDS], nfds = 0, i;
	struct cmsghdr *c;
	ssize_t n;

	n = recvmsg(k->sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EINTR;
	msg[n] = 0;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_CREDENTIALS)
			memcpy(&cred, CMSG_DATA(c), sizeof(cred));
		if (c->cmsg_type == SCM_RIGHTS) {
			int m = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));

			for (i = 0; i < m && nfds < MAX_MSG_FDS; i++)
				memcpy(&fds[nfds++],
				       CMSG_DATA(c) + sizeof(int) * (size_t)i,
				       sizeof(int));
		}
	}
	if (mh.msg_flags & MSG_CTRUNC)
		say("notify message with too many descriptors: truncated");
	if (cred.pid != k->child || !k->child) {
		/* NotifyAccess=main: nobody else stores into our daemon */
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		return true;
	}
	handle_msg(k, msg, fds, nfds);
	return true;
}

static void drain(struct keeper *k)
{
	while (recv_one(k))
		;
}

/* ---- the daemon ---------------------------------------------------------------- */

/* In the child: the store at fds 3.., then the environment, then exec. */
static void exec_child(struct keeper *k)
{
	char *names, num[32];
	size_t len = 1;
	int hi[MAX_STORED];
	unsigned int i;

	for (i = 0; i < k->n; i++)
		len += strlen(k->st[i].name) + 1;
	names = calloc(1, len);
	/* out of the way of 3..3+n first: a stored fd may sit there */
	for (i = 0; i < k->n; i++) {
		hi[i] = fcntl(k->st[i].fd, F_DUPFD, 3 + (int)k->n);
		if (hi[i] < 0 || !names)
			_exit(127);
	}
	for (i = 0; i < k->n; i++) {
		if (dup2(hi[i], 3 + (int)i) < 0)	/* dup2: no CLOEXEC */
			_exit(127);
		strcat(names, i ? ":" : "");
		strcat(names, k->st[i].name);
	}
	if (k->n) {
		snprintf(num, sizeof(num), "%u", k->n);
		setenv("LISTEN_FDS", num, 1);
		setenv("LISTEN_FDNAMES", names, 1);
		snprintf(num, sizeof(num), "%d", (int)getpid());
		setenv("LISTEN_PID", num, 1);
	} else {
		unsetenv("LISTEN_FDS");
		unsetenv("LISTEN_FDNAMES");
		unsetenv("LISTEN_PID");
	}
	setenv("NOTIFY_SOCKET", k->sockname, 1);
	execvp(k->argv[0], k->argv);
	fprintf(stderr, "vbus-fdkeeper: %s: %s\n", k->argv[0], strerror(errno));
	_exit(127);
}

static int start(struct keeper *k)
{
	sigset_t none;
	pid_t pid;

	pid = fork();
	if (pid < 0) {
		say("fork: %s", strerror(errno));
		return -1;
	}
	if (!pid) {
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		exec_child(k);
	}
	k->child = pid;
	say("started pid %d with %u stored descriptors", (int)pid, k->n);
	return 0;
}

/* Too many restarts too fast: the daemon cannot stay up. */
static bool burst(struct keeper *k)
{
	time_t now = time(NULL);

	if (k->nstarts == RESTART_BURST) {
		if (now - k->starts[0] < BURST_SECONDS)
			return true;
		memmove(k->starts, k->starts + 1,
			sizeof(k->starts[0]) * (RESTART_BURST - 1));
		k->nstarts--;
	}
	k->starts[k->nstarts++] = now;
	return false;
}

/*
 * The daemon exited: -1 to restart it, else the keeper's exit code.
 * Its last messages (a FDSTORE just before a crash) are taken first.
 */
static int reaped(struct keeper *k, int status)
{
	pid_t pid = k->child;

	drain(k);
	k->child = 0;
	if (k->stopping)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status)) {
		say("daemon pid %d exited %d: not restarted", (int)pid,
		    WEXITSTATUS(status));
		return WEXITSTATUS(status);
	}
	if (burst(k)) {
		say("%d restarts within %d s: giving up", RESTART_BURST,
		    BURST_SECONDS);
		return 1;
	}
	if (WIFSIGNALED(status))
		say("daemon pid %d killed by signal %d: restarting in %u ms",
		    (int)pid, WTERMSIG(status), k->delay_ms);
	else
		say("daemon pid %d exited 0: restarting in %u ms", (int)pid,
		    k->delay_ms);
	return -1;
}

static void restart_after_delay(struct keeper *k)
{
	struct timespec ts = { .tv_sec = k->delay_ms / 1000,
			       .tv_nsec = (long)(k->delay_ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* SIGCHLD or a stop request; -1 to go on, else the exit code. */
static int on_signal(struct keeper *k)
{
	struct signalfd_siginfo si;
	int status, ret;

	if (read(k->sig, &si, sizeof(si)) != sizeof(si))
		return -1;
	if (si.ssi_signo != SIGCHLD) {
		say("signal %u: stopping the daemon", si.ssi_signo);
		k->stopping = true;
		if (k->child)
			kill(k->child, SIGTERM);
		return k->child ? -1 : 0;
	}
	while (k->child && waitpid(k->child, &status, WNOHANG) == k->child) {
		ret = reaped(k, status);
		if (ret >= 0)
			return ret;
		restart_after_delay(k);
		if (k->stopping || start(k) < 0)
			return k->stopping ? 0 : 1;
	}
	return -1;
}

/* ---- set-up ---------------------------------------------------------------------- */

/*
 * The first of $RUNTIME_DIRECTORY (systemd's), $XDG_RUNTIME_DIR (the
 * user's own) and /run that we can write: places no other user can
 * create names in, so nobody can take the socket's name over once we are
 * gone (an abstract name, or one in /tmp, anyone could bind then and
 * receive the next QEMU connection's descriptors).
 */
static const char *private_base(void)
{
	const char *c[] = { getenv("RUNTIME_DIRECTORY"),
			    getenv("XDG_RUNTIME_DIR"), "/run" };
	unsigned int i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct stat st;

		if (c[i] && c[i][0] == '/' && !access(c[i], W_OK) &&
		    !stat(c[i], &st) && S_ISDIR(st.st_mode) &&
		    !(st.st_mode & S_IWOTH))
			return c[i];
	}
	return NULL;
}

static int open_socket(struct keeper *k)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *base = private_base();
	int one = 1;

	if (!base) {
		errno = EACCES;
		say("no private directory for the notify socket: none of $RUNTIME_DIRECTORY, $XDG_RUNTIME_DIR, /run is ours to write");
		return -1;
	}
	/* mkdtemp: 0700, a name nobody had */
	snprintf(k->dir, sizeof(k->dir), "%s/vbus-fdkeeper.XXXXXX", base);
	if (!mkdtemp(k->dir)) {
		k->dir[0] = 0;
		return -1;
	}
	if ((size_t)snprintf(k->sockname, sizeof(k->sockname), "%s/notify",
			     k->dir) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sa.sun_path, k->sockname);
	k->sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (k->sock < 0)
		return -1;
	if (setsockopt(k->sock, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0 ||
	    bind(k->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	return 0;
}

/* The socket and its directory go with the keeper. */
static void close_socket(struct keeper *k)
{
	if (k->sock >= 0)
		close(k->sock);
	k->sock = -1;
	if (k->sockname[0])
		unlink(k->sockname);
	if (k->dir[0])
		rmdir(k->dir);
	k->sockname[0] = k->dir[0] = 0;
}

static int open_signals(struct keeper *k)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	k->sig = signalfd(-1, &set, SFD_CLOEXEC);
	return k->sig < 0 ? -1 : 0;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: vbus-fdkeeper [--restart-delay MS] -- COMMAND [ARGS...]\n"
		"keeps COMMAND's stored descriptors (sd_notify FDSTORE=1) and restarts it\n"
		"(see docs/operations.md, \"Restarts\")\n");
	return 2;
}

static int parse_args(struct keeper *k, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (!strcmp(argv[i], "--restart-delay") && i + 1 < argc) {
			unsigned long v = strtoul(argv[++i], &end, 10);

			if (*end || end == argv[i] || v > 60000) {
				fprintf(stderr, "vbus-fdkeeper: --restart-delay %s: not 0 .. 60000 ms\n",
					argv[i]);
				return 2;
			}
			k->delay_ms = (unsigned int)v;
			continue;
		}
		fprintf(stderr, "vbus-fdkeeper: unknown argument '%s'\n", argv[i]);
		return usage();
	}
	if (i >= argc)
		return usage();
	k->argv = argv + i;
	return 0;
}

static int keep(struct keeper *k);

int main(int argc, char **argv)
{
	static struct keeper k = { .delay_ms = 100, .sock = -1, .sig = -1 };
	int ret;

	ret = parse_args(&k, argc, argv);
	if (ret)
		return ret;
	if (open_signals(&k) < 0 || open_socket(&k) < 0) {
		say("set-up: %s", strerror(errno));
		close_socket(&k);
		return 1;
	}
	ret = start(&k) < 0 ? 1 : keep(&k);
	close_socket(&k);
	return ret;
}

/* Serve the notify socket and the signals until the keeper's exit code. */
static int keep(struct keeper *k)
{
	int ret;

	for (;;) {
		struct pollfd p[2] = {
			{ .fd = k->sock, .events = POLLIN },
			{ .fd = k->sig, .events = POLLIN },
		};

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return 1;
		if (p[0].revents & POLLIN)
			recv_one(k);
		if (p[1].revents & POLLIN) {
			ret = on_signal(k);
			if (ret >= 0)
				return ret;
		}
	}
}
