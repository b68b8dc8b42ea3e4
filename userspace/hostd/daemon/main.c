// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: command line, start-up and the main thread.
 *
 *   vbus-hostd --ctl CTL.sock --guest NAME:sock=G.sock,mem=F,size=1G[,machine=q35|pc]
 *              [--device NAME:type=vbus-test,id=1[,k=v...]] [--config FILE]
 *              [--foreground] [-v]
 *   vbus-hostd ctl --ctl CTL.sock list | add NAME SPEC | drop NAME ID |
 *              stats NAME [ID] [--json]
 *
 * Start-up order (scripts and QEMU depend on it): every guest's RAM file is
 * created and sized, its BAR2 filled, its socket listening and its devices
 * created; then the control socket; then "ready" is printed. Without
 * --foreground the daemon forks first and the parent exits 0 only after
 * the child said it is ready (else it prints the child's error, exits 1).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include "hostd.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: vbus-hostd --ctl CTL.sock --guest NAME:sock=G.sock,mem=FILE,size=SIZE[,machine=q35|pc]\n"
"                  [--device NAME:type=TYPE,id=N[,key=value...]] [--config FILE]\n"
"                  [--foreground] [-v]\n"
"       vbus-hostd ctl --ctl CTL.sock list | add NAME type=TYPE,id=N[,...] |\n"
"                  drop NAME ID | stats NAME [ID]   [--json]\n"
"config file: one '--guest SPEC' or '--device SPEC' per line, '#' comments\n");
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
	return hostd_ctl_client(path, line, stdout);
}

/* ---- the daemon ------------------------------------------------------------ */

enum { OPT_CTL = 256, OPT_GUEST, OPT_DEVICE, OPT_CONFIG, OPT_FOREGROUND };

static const struct option opts[] = {
	{ "ctl", required_argument, NULL, OPT_CTL },
	{ "guest", required_argument, NULL, OPT_GUEST },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "foreground", no_argument, NULL, OPT_FOREGROUND },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Parse argv into @c; 0, or an exit code (message printed). */
static int parse_args(int argc, char **argv, struct hostd_config *c)
{
	char err[512];
	int o;

	opterr = 0;
	optind = 1;
	while ((o = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
		switch (o) {
		case OPT_CTL:
			if (strlen(optarg) >= sizeof(c->ctl))
				return die_usage("--ctl %s: path too long", optarg);
			strcpy(c->ctl, optarg);
			break;
		case OPT_GUEST:
			if (hostd_config_add_guest(c, optarg, err, sizeof(err)))
				return die_usage("%s", err);
			break;
		case OPT_DEVICE:
			if (hostd_config_add_dev(c, optarg, err, sizeof(err)))
				return die_usage("%s", err);
			break;
		case OPT_CONFIG:
			if (hostd_config_file(c, optarg, err, sizeof(err)))
				return die_usage("%s", err);
			break;
		case OPT_FOREGROUND:
			c->foreground = true;
			break;
		case 'v':
			c->verbose++;
			break;
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
	if (optind < argc)
		return die_usage("unexpected argument '%s'", argv[optind]);
	if (hostd_config_check(c, err, sizeof(err)))
		return die_usage("%s", err);
	return 0;
}

struct daemon {
	struct hostd_config *cfg;
	struct hostd_guest **guests;
	unsigned int nguests;
	int ctl_fd;
	int sig_fd;
};

static void daemon_cleanup(struct daemon *d)
{
	unsigned int i;

	for (i = 0; i < d->nguests; i++)
		hostd_guest_stop(d->guests[i]);
	for (i = 0; i < d->nguests; i++) {
		hostd_guest_fini(d->guests[i]);
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

/* Everything up to "ready". 0, or -1 with the reason in @err. */
static int daemon_setup(struct daemon *d, char *err, size_t errlen)
{
	struct hostd_config *c = d->cfg;
	sigset_t set;
	unsigned int i, j;
	int ret;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	/* before any thread exists, so they all inherit the mask */
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	d->sig_fd = signalfd(-1, &set, SFD_CLOEXEC);
	if (d->sig_fd < 0) {
		snprintf(err, errlen, "signalfd: %s", strerror(errno));
		return -1;
	}

	d->guests = calloc(c->nguests, sizeof(*d->guests));
	if (!d->guests) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < c->nguests; i++) {
		struct hostd_guest *g = calloc(1, sizeof(*g));

		if (!g) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		ret = hostd_guest_init(g, &c->guests[i], -1);
		if (ret < 0) {
			free(g);
			snprintf(err, errlen, "guest %s: cannot set up RAM %s / BAR2: %s",
				 c->guests[i].name, c->guests[i].mem, strerror(-ret));
			return -1;
		}
		d->guests[d->nguests++] = g;
		ret = hostd_guest_listen(g);
		if (ret < 0) {
			snprintf(err, errlen, "guest %s: cannot listen on %s: %s",
				 g->name, g->cfg.sock, strerror(-ret));
			return -1;
		}
		for (j = 0; j < c->ndevs; j++) {
			char derr[256];

			if (strcmp(c->devs[j].guest, g->name))
				continue;
			if (hostd_dev_add(g, &c->devs[j], derr, sizeof(derr)) < 0) {
				snprintf(err, errlen, "%s", derr);
				return -1;
			}
		}
	}
	d->ctl_fd = hostd_ctl_listen(c->ctl);
	if (d->ctl_fd < 0) {
		snprintf(err, errlen, "cannot listen on control socket %s", c->ctl);
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
			struct signalfd_siginfo si;

			if (read(d->sig_fd, &si, sizeof(si)) == sizeof(si))
				hostd_log("signal %u: shutting down", si.ssi_signo);
			return;
		}
		if (p[0].revents & POLLIN) {
			int fd = accept4(d->ctl_fd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0)
				hostd_ctl_serve(fd, d->guests, d->nguests);
		}
	}
}

int hostd_main(int argc, char **argv)
{
	struct hostd_config *c;
	struct daemon d = { .ctl_fd = -1, .sig_fd = -1 };
	char err[1024], ready[4096];
	int ret, pfd[2] = { -1, -1 };

	if (argc >= 2 && !strcmp(argv[1], "ctl"))
		return ctl_main(argc - 1, argv + 1);

	c = calloc(1, sizeof(*c));
	if (!c) {
		fprintf(stderr, "vbus-hostd: out of memory\n");
		return 1;
	}
	ret = parse_args(argc, argv, c);
	if (ret) {
		hostd_config_free(c);
		free(c);
		return ret < 0 ? 0 : ret;
	}
	hostd_verbose = c->verbose;
	d.cfg = c;

	if (!c->foreground) {
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
			/* the parent: wait for the child's verdict */
			char msg[4096];
			ssize_t n, got = 0;

			close(pfd[1]);
			while ((n = read(pfd[0], msg + got, sizeof(msg) - 1 - (size_t)got)) > 0 ||
			       (n < 0 && errno == EINTR))
				if (n > 0)
					got += n;
			msg[got] = 0;
			hostd_config_free(c);
			free(c);
			if (!strncmp(msg, "OK ", 3)) {
				printf("%s\n", msg + 3);
				return 0;
			}
			fprintf(stderr, "vbus-hostd: %s\n",
				got ? msg : "daemon exited during start-up");
			return 1;
		}
		close(pfd[0]);
		setsid();
	}

	if (daemon_setup(&d, err, sizeof(err)) < 0) {
		if (pfd[1] >= 0) {
			if (write(pfd[1], err, strlen(err)) < 0) {
				/* the parent is gone: nothing to tell */
			}
		} else {
			fprintf(stderr, "vbus-hostd: %s\n", err);
		}
		daemon_cleanup(&d);
		hostd_config_free(c);
		free(c);
		return 1;
	}

	ready_line(&d, ready, sizeof(ready));
	if (pfd[1] >= 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		/* let go of the caller's stdin/stdout ($(...) must not hang) */
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			close(null);
		}
		if (write(pfd[1], "OK ", 3) < 0 ||
		    write(pfd[1], ready, strlen(ready)) < 0) {
			/* the parent is gone; run anyway */
		}
		close(pfd[1]);
	} else {
		printf("%s\n", ready);
		fflush(stdout);
	}

	daemon_loop(&d);
	daemon_cleanup(&d);
	hostd_config_free(c);
	free(c);
	return 0;
}
