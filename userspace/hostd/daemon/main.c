// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: command line, start-up and the main thread.
 *
 *   vbus-hostd --ctl CTL.sock --guest NAME:sock=G.sock,mem=F,size=1G[,machine=q35|pc]
 *              [--device NAME:type=vbus-test,id=1[,k=v...]] [--config FILE]
 *              [--foreground] [-v]
 *              [--test-faults [--test-fault "NAME VERB ARGS"]...]
 *   vbus-hostd ctl --ctl CTL.sock list | add NAME SPEC | drop NAME ID |
 *              stats NAME [ID] [--json] | resize NAME ID SIZE
 *
 * Start-up order (scripts and QEMU depend on it): every guest's RAM file is
 * created and sized, its BAR2 filled, its socket listening and its devices
 * created; then the control socket; then "ready" is printed (and READY=1
 * goes to $NOTIFY_SOCKET, see sd_notify.c; STOPPING=1 on a signal). Without
 * --foreground the daemon forks first and the parent exits 0 only after
 * the child said it is ready (else it prints the child's error, exits 1).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "daemon.h"
#include "fdstore.h"
#include "sd_notify.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: vbus-hostd --ctl CTL.sock --guest NAME:sock=G.sock,mem=FILE,size=SIZE[,machine=q35|pc]\n"
"                  [--device NAME:type=TYPE,id=N[,key=value...]] [--config FILE]\n"
"                  [--foreground] [-v]\n"
"                  [--test-faults [--test-fault 'NAME VERB ARGS']...]   (tests only)\n"
"       vbus-hostd ctl --ctl CTL.sock list | add NAME type=TYPE,id=N[,...] |\n"
"                  drop NAME ID | stats NAME [ID] [--json] |\n"
"                  resize NAME ID SIZE\n"
"config file: one '--guest SPEC' or '--device SPEC' per line, '#' comments\n"
"a vbus-ipc channel between two guests (a link): --device G1:type=vbus-ipc,id=N,\n"
"                  service=S,qsock=G1Q.sock,peer=G2,peer_qsock=G2Q.sock\n"
"see vbus-hostd(8)\n");
}

static int die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "vbus-hostd: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(see vbus-hostd --help)\n");
	return 2;
}

/* ---- ctl client ---------------------------------------------------------- */

static int ctl_main(int argc, char **argv)
{
	char line[4096] = "";
	const char *path = NULL;
	size_t len = 0;
	int i, words = 0;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--ctl")) {
			if (++i == argc)
				return die_usage("%s needs a socket path", a);
			path = argv[i];
			continue;
		}
		if (!strncmp(a, "--ctl=", 6)) {
			path = a + 6;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (a[0] == '-' && strcmp(a, "--json"))
			return die_usage("ctl: unknown option '%s'", a);
		if (len + strlen(a) + 2 > sizeof(line))
			return die_usage("ctl: %s", "request too long");
		len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s",
					len ? " " : "", a);
		if (strcmp(a, "--json"))
			words++;
	}
	if (!path)
		return die_usage("ctl: %s is required", "--ctl CTL.sock");
	if (!words)
		return die_usage("ctl: %s", "no command (list, add, drop, stats)");
	return daemon_ctl_client(path, line, stdout);
}

/* ---- the command line --------------------------------------------------------- */

enum { OPT_CTL = 256, OPT_GUEST, OPT_DEVICE, OPT_CONFIG, OPT_FOREGROUND,
       OPT_TEST_FAULTS, OPT_TEST_FAULT };

static const struct option opts[] = {
	{ "ctl", required_argument, NULL, OPT_CTL },
	{ "guest", required_argument, NULL, OPT_GUEST },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "foreground", no_argument, NULL, OPT_FOREGROUND },
	{ "test-faults", no_argument, NULL, OPT_TEST_FAULTS },
	{ "test-fault", required_argument, NULL, OPT_TEST_FAULT },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* One option: 0, or an exit code (message printed), -1 for --help. */
static int parse_opt(int o, char **argv, struct daemon_config *c)
{
	char err[1024];

	switch (o) {
	case OPT_CTL:
		if (strlen(optarg) >= sizeof(c->ctl))
			return die_usage("--ctl %s: path too long", optarg);
		strcpy(c->ctl, optarg);
		return 0;
	case OPT_GUEST:
		return daemon_config_add_guest(c, optarg, err, sizeof(err)) ?
		       die_usage("%s", err) : 0;
	case OPT_DEVICE:
		return daemon_config_add_dev(c, optarg, err, sizeof(err)) ?
		       die_usage("%s", err) : 0;
	case OPT_CONFIG:
		return daemon_config_file(c, optarg, err, sizeof(err)) ?
		       die_usage("%s", err) : 0;
	case OPT_FOREGROUND:
		c->foreground = true;
		return 0;
	case OPT_TEST_FAULTS:
		c->test_faults = true;
		return 0;
	case OPT_TEST_FAULT:
		if (c->nfaults == HOSTD_MAX_FAULTS)
			return die_usage("--test-fault: more than %s",
					 "16 of them");
		c->faults[c->nfaults++] = optarg;
		return 0;
	case 'v':
		c->verbose++;
		return 0;
	case 'h':
		usage(stdout);
		return -1;
	case ':':
		return die_usage("option '%s' needs an argument",
				 argv[optind - 1]);
	default:
		return die_usage("unknown option '%s'", argv[optind - 1]);
	}
}

/*
 * A supervisor (systemd's Type=notify, vbus-fdkeeper) watches the process
 * it started and hands it NOTIFY_SOCKET. A daemon that forks leaves that
 * process exiting 0 at once: the keeper takes it for a graceful restart
 * and starts a second daemon, which finds the sockets in use, while the
 * forked one runs on unsupervised with no descriptor store. Refuse it
 * before anything is created, with exit 2 (the keeper's "configuration is
 * wrong, do not restart").
 */
static int check_supervised(const struct daemon_config *c)
{
	if (c->foreground || !getenv("NOTIFY_SOCKET"))
		return 0;
	return die_usage("%s", "NOTIFY_SOCKET is set (under systemd or vbus-fdkeeper) but --foreground is not: a supervised daemon must not fork; add --foreground (vbus-fdkeeper -- vbus-hostd --foreground ...)");
}

/* Parse argv into @c; 0, or an exit code (message printed), -1 for --help. */
static int parse_args(int argc, char **argv, struct daemon_config *c)
{
	char err[1024];
	int o, ret;

	opterr = 0;
	optind = 1;
	while ((o = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
		ret = parse_opt(o, argv, c);
		if (ret)
			return ret;
	}
	if (optind < argc)
		return die_usage("unexpected argument '%s'", argv[optind]);
	if (daemon_config_check(c, err, sizeof(err)))
		return die_usage("%s", err);
	/* fault injection is for tests, and only when asked for in so many words */
	if (c->nfaults && !c->test_faults)
		return die_usage("%s", "--test-fault needs --test-faults (fault injection, for tests only)");
	return check_supervised(c);
}

/* ---- the daemon ------------------------------------------------------------------ */

struct daemon {
	struct daemon_config *cfg;
	struct hostd_guest **guests;
	unsigned int nguests;
	int ctl_fd;
	int sig_fd;
	int stop_efd;			/* written when the stop begins */
	int report_fd;			/* pipe to the waiting parent, or -1 */
	struct daemon_fdstore store;	/* what an earlier daemon left us */
	unsigned int adopted;		/* guests whose QEMU we took over */
};

static void daemon_cleanup(struct daemon *d)
{
	unsigned int i;

	for (i = 0; i < d->nguests; i++)
		hostd_guest_stop(d->guests[i]);
	/* nothing reads a ring any more: the guests may know (transport.md) */
	for (i = 0; i < d->nguests; i++)
		hostd_guest_going_down(d->guests[i]);
	for (i = 0; i < d->nguests; i++) {
		hostd_guest_fini(d->guests[i]);
		hostd_fault_disable(d->guests[i]);
		free(d->guests[i]);
	}
	free(d->guests);
	d->guests = NULL;
	d->nguests = 0;
	if (d->ctl_fd >= 0) {
		close(d->ctl_fd);
		unlink(d->cfg->ctl);
		d->ctl_fd = -1;
	}
	if (d->sig_fd >= 0)
		close(d->sig_fd);
	d->sig_fd = -1;
}

/* SIGINT/TERM/HUP arrive on sig_fd; before any thread, so all inherit it. */
static int setup_signals(struct daemon *d, char *err, size_t errlen)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	d->sig_fd = signalfd(-1, &set, SFD_CLOEXEC);
	if (d->sig_fd < 0) {
		snprintf(err, errlen, "signalfd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Its devices, in the order given: the same hostd_bus_add() as ctl add. */
static int setup_devices(struct daemon *d, struct hostd_guest *g, char *err,
			 size_t errlen)
{
	unsigned int j;

	for (j = 0; j < d->cfg->ndevs; j++) {
		struct daemon_dev_cfg *dc = &d->cfg->devs[j];

		if (strcmp(dc->guest, g->name))
			continue;
		if (hostd_bus_add(&g->bus, dc->type, dc->id, &dc->params, err,
				  errlen) < 0)
			return -1;
	}
	return 0;
}

/* On the guest's thread: keep its QEMU connection in the store. */
static void conn_hook(void *arg, bool up)
{
	struct hostd_guest *g = arg;
	struct hostd_ivshmem_fds fds;

	/* called before the vectors close: @fds says how many were stored */
	if (!hostd_ivshmem_fds(&g->iv, &fds))
		return;
	if (!up)
		daemon_fdstore_unpublish(g->name, fds.nr_msix);
	else
		daemon_fdstore_publish(g->name, &fds);
}

/* A QEMU connection an earlier daemon stored for @g: take it over. */
static int adopt_guest(struct daemon *d, struct hostd_guest *g, char *err,
		       size_t errlen)
{
	struct hostd_ivshmem_fds fds;
	char why[512];
	int ret;

	hostd_guest_set_conn_hook(g, conn_hook, g);
	ret = daemon_fdstore_take(&d->store, g->name, &fds, why, sizeof(why));
	if (ret <= 0) {
		if (ret < 0)
			snprintf(err, errlen, "%s", why);
		return ret;
	}
	if (hostd_guest_adopt(g, &fds, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "guest %s: %s", g->name, why);
		return -1;
	}
	d->adopted++;
	return 0;
}

/* RAM, BAR2, socket and devices of guest @i. */
static int setup_guest(struct daemon *d, unsigned int i, char *err,
		       size_t errlen)
{
	const struct hostd_guest_cfg *gc = &d->cfg->guests[i];
	struct hostd_guest *g = calloc(1, sizeof(*g));
	char why[768];

	if (!g) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (hostd_guest_init(g, gc, -1, why, sizeof(why)) < 0) {
		free(g);
		snprintf(err, errlen, "guest %s: %s", gc->name, why);
		return -1;
	}
	d->guests[d->nguests++] = g;
	if (hostd_guest_listen(g, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "guest %s: cannot listen: %s", g->name, why);
		return -1;
	}
	if (setup_devices(d, g, err, errlen) < 0)
		return -1;
	return adopt_guest(d, g, err, errlen);
}

/*
 * The unit's TimeoutStopSec= is 10 s; a stop gets half of it, counted
 * from the signal. Past that, something is stuck (a guest's thread in a
 * file system that does not answer, and the main thread waiting for it
 * to take or finish a ctl request, or to stop): the kernel closes what
 * is left, and the admin sees exit 1 and a line saying so instead of a
 * SIGKILL after TimeoutStopSec. The watchdog is a thread of its own, so
 * a main thread stuck anywhere cannot hold it up.
 */
#define STOP_MS 5000

static int stop_done;		/* __atomic: the cleanup finished */

static void *stop_watchdog(void *arg)
{
	const struct daemon *d = arg;
	struct timespec ts = { .tv_sec = STOP_MS / 1000,
			       .tv_nsec = (STOP_MS % 1000) * 1000000L };
	/* the signal itself (not read here: daemon_loop reads it), or the
	 * main thread saying it stops (it may have read the signal first) */
	struct pollfd p[2] = {
		{ .fd = d->sig_fd, .events = POLLIN },
		{ .fd = d->stop_efd, .events = POLLIN },
	};

	while (poll(p, 2, -1) < 0 && errno == EINTR)
		;
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
	if (__atomic_load_n(&stop_done, __ATOMIC_ACQUIRE))
		return NULL;
	hostd_log("shutdown still not done %d ms after the signal (a guest's thread is stuck): exiting without it",
		  STOP_MS);
	_exit(1);
}

static int start_watchdog(struct daemon *d, char *err, size_t errlen)
{
	pthread_t t;
	int ret;

	d->stop_efd = hostd_eventfd_new();
	if (d->stop_efd < 0) {
		snprintf(err, errlen, "eventfd: %s", strerror(-d->stop_efd));
		return -1;
	}
	ret = pthread_create(&t, NULL, stop_watchdog, d);
	if (ret) {
		snprintf(err, errlen, "thread: %s", strerror(ret));
		return -1;
	}
	pthread_detach(t);
	return 0;
}

/* The cleanup, bounded by the watchdog (which the process's exit ends). */
static void daemon_stop(struct daemon *d)
{
	hostd_eventfd_write(d->stop_efd);
	daemon_cleanup(d);
	__atomic_store_n(&stop_done, 1, __ATOMIC_RELEASE);
}

/*
 * --test-faults: every guest gets the library's fault injection (tests
 * only; without the flag the hooks stay NULL and `ctl fault` is refused),
 * then each --test-fault runs as `ctl fault` would, before the threads.
 */
static int setup_faults(struct daemon *d, char *err, size_t errlen)
{
	unsigned int i;

	if (!d->cfg->test_faults)
		return 0;
	hostd_log("--test-faults: fault injection is on (a misbehaving host, for tests only)");
	for (i = 0; i < d->nguests; i++)
		if (hostd_fault_enable(d->guests[i]) < 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	for (i = 0; i < d->cfg->nfaults; i++)
		if (daemon_ctl_fault_spec(d->cfg->faults[i], d->guests,
					  d->nguests, err, errlen) < 0)
			return -1;
	return 0;
}

/* Everything up to "ready". 0, or -1 with the reason in @err. */
static int daemon_setup(struct daemon *d, char *err, size_t errlen)
{
	struct daemon_config *c = d->cfg;
	char why[512];
	unsigned int i;
	int ret;

	if (setup_signals(d, err, errlen) < 0 ||
	    start_watchdog(d, err, errlen) < 0)
		return -1;
	d->guests = calloc(c->nguests, sizeof(*d->guests));
	if (!d->guests) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < c->nguests; i++)
		if (setup_guest(d, i, err, errlen) < 0)
			return -1;
	if (setup_faults(d, err, errlen) < 0)
		return -1;
	daemon_fdstore_drop_rest(&d->store);
	d->ctl_fd = daemon_ctl_listen(c->ctl, why, sizeof(why));
	if (d->ctl_fd < 0) {
		snprintf(err, errlen, "control socket: %s", why);
		return -1;
	}
	for (i = 0; i < d->nguests; i++) {
		ret = hostd_guest_start(d->guests[i]);
		if (ret < 0) {
			snprintf(err, errlen, "thread: %s", strerror(-ret));
			return -1;
		}
	}
	return 0;
}

static void ready_line(struct daemon *d, char *buf, size_t len)
{
	size_t n;
	unsigned int i;

	n = (size_t)snprintf(buf, len, "vbus-hostd: ready pid %d ctl %s", (int)getpid(),
			     d->cfg->ctl);
	for (i = 0; i < d->nguests && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "; guest %s sock %s mem %s",
				      d->guests[i]->name, d->guests[i]->cfg.sock,
				      d->guests[i]->cfg.mem);
}

static void daemon_loop(struct daemon *d)
{
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = d->ctl_fd, .events = POLLIN },
			{ .fd = d->sig_fd, .events = POLLIN },
		};

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			hostd_log("poll: %s", strerror(errno));
			return;
		}
		if (p[1].revents) {
			struct signalfd_siginfo si = { .ssi_signo = 0 };

			if (read(d->sig_fd, &si, sizeof(si)) == sizeof(si))
				hostd_log("signal %u: shutting down", si.ssi_signo);
			daemon_sd_notifyf("STOPPING=1\nSTATUS=shutting down (signal %u)",
					 si.ssi_signo);
			return;
		}
		if (p[0].revents & POLLIN) {
			int fd = accept4(d->ctl_fd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0)
				daemon_ctl_serve(fd, d->sig_fd, d->guests,
						 d->nguests);
		}
	}
}

/* ---- start-up: the parent waits for the child's verdict --------------------------- */

/* The parent's side: 0 once the child said "OK ...", else 1. */
static int wait_for_child(int fd)
{
	char msg[4096];
	ssize_t n, got = 0;

	while ((n = read(fd, msg + got, sizeof(msg) - 1 - (size_t)got)) > 0 ||
	       (n < 0 && errno == EINTR))
		if (n > 0)
			got += n;
	msg[got] = 0;
	if (!strncmp(msg, "OK ", 3)) {
		printf("%s\n", msg + 3);
		return 0;
	}
	fprintf(stderr, "vbus-hostd: %s\n", got ? msg : "daemon exited during start-up");
	return 1;
}

/*
 * Fork: the child returns 0 (and keeps the pipe's write end in
 * d->report_fd), the parent returns its exit code (> 0) or -1.
 */
static int daemonize(struct daemon *d)
{
	int pfd[2], ret;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		fprintf(stderr, "vbus-hostd: pipe: %s\n", strerror(errno));
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "vbus-hostd: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid > 0) {
		close(pfd[1]);
		ret = wait_for_child(pfd[0]);
		close(pfd[0]);
		return ret ? ret : -1;
	}
	close(pfd[0]);
	setsid();
	d->report_fd = pfd[1];
	return 0;
}

/* Tell the waiting parent (or stderr) why start-up failed. */
static void report_failure(struct daemon *d, const char *err)
{
	if (d->report_fd < 0) {
		fprintf(stderr, "vbus-hostd: %s\n", err);
		return;
	}
	if (write(d->report_fd, err, strlen(err)) < 0) {
		/* the parent is gone: nothing to tell */
	}
	close(d->report_fd);
	d->report_fd = -1;
}

/* "ready": to the parent (letting go of the caller's stdio) or stdout. */
static void report_ready(struct daemon *d)
{
	char ready[4096];
	int null;

	ready_line(d, ready, sizeof(ready));
	if (d->report_fd < 0) {
		printf("%s\n", ready);
		fflush(stdout);
		return;
	}
	/* let go of the caller's stdin/stdout ($(...) must not hang) */
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		close(null);
	}
	if (write(d->report_fd, "OK ", 3) < 0 ||
	    write(d->report_fd, ready, strlen(ready)) < 0) {
		/* the parent is gone; run anyway */
	}
	close(d->report_fd);
	d->report_fd = -1;
}

static int run(struct daemon_config *c)
{
	struct daemon d = { .cfg = c, .ctl_fd = -1, .sig_fd = -1,
			    .stop_efd = -1, .report_fd = -1 };
	char err[2048];
	int ret;

	/* LISTEN_PID is ours before a fork, not the child's */
	if (daemon_fdstore_load(&d.store, err, sizeof(err)) < 0) {
		daemon_sd_notifyf("STATUS=start-up failed: %s", err);
		fprintf(stderr, "vbus-hostd: %s\n", err);
		return 1;
	}
	ret = c->foreground ? 0 : daemonize(&d);
	if (ret)
		return ret < 0 ? 0 : ret;	/* the parent */
	if (daemon_setup(&d, err, sizeof(err)) < 0) {
		daemon_sd_notifyf("STATUS=start-up failed: %s", err);
		report_failure(&d, err);
		daemon_cleanup(&d);
		return 1;
	}
	report_ready(&d);
	/* every socket listens and every RAM file is sized: QEMU may start */
	daemon_sd_notifyf("READY=1\nSTATUS=serving %u guest(s) (%u taken over), control socket %s",
			 d.nguests, d.adopted, c->ctl);
	daemon_loop(&d);
	daemon_stop(&d);
	return 0;
}

int daemon_main(int argc, char **argv)
{
	struct daemon_config *c;
	int ret;

	if (argc >= 2 && !strcmp(argv[1], "ctl"))
		return ctl_main(argc - 1, argv + 1);
	c = calloc(1, sizeof(*c));
	if (!c) {
		fprintf(stderr, "vbus-hostd: out of memory\n");
		return 1;
	}
	ret = parse_args(argc, argv, c);
	if (!ret) {
		hostd_log_verbose = c->verbose;
		ret = run(c);
	} else if (ret < 0) {
		ret = 0;	/* --help */
	}
	daemon_config_free(c);
	free(c);
	return ret;
}
