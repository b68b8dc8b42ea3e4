/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd, the daemon on top of libvbus-hostd: the command line and
 * config file (config.c), the control socket (ctl.c) and main (main.c).
 * Every mistake is found and worded once, here or in the library, so the
 * command line and `ctl add` report it with the same text.
 */
#ifndef VBUS_HOSTD_DAEMON_H
#define VBUS_HOSTD_DAEMON_H

#include <stdbool.h>
#include <stdio.h>
#include "hostd.h"

#define HOSTD_MAX_GUESTS	64
#define HOSTD_MAX_PARAMS	16	/* per device */
#define HOSTD_SPEC_MAX		1024
#define HOSTD_MAX_FAULTS	16	/* --test-fault options */

/* The one wording of "that guest does not exist" (--device and ctl). */
#define HOSTD_ERR_NO_GUEST	"no guest '%s'"

/* A parsed --device spec; owns its strings. */
struct daemon_dev_cfg {
	char guest[HOSTD_NAME_MAX + 1];
	char type[VBUS_MAX_DEVTYPE_LEN];
	__u32 id;
	struct hostd_params params;	/* without type= and id= */
	struct hostd_param pv[HOSTD_MAX_PARAMS];
	char *strbuf;			/* storage for the keys/values */
};

struct daemon_config {
	char ctl[108];
	bool foreground;
	int verbose;
	unsigned int nguests, ndevs;
	struct hostd_guest_cfg guests[HOSTD_MAX_GUESTS];
	struct daemon_dev_cfg *devs;	/* ndevs */
	/* tests only (docs/fault-injection.md): `ctl fault` and --test-fault */
	bool test_faults;
	unsigned int nfaults;
	const char *faults[HOSTD_MAX_FAULTS];	/* "NAME VERB ARGS", argv's */
};

/* ---- config.c: each returns 0, or -1 with what was wrong in @err ---- */
/* "type=...,id=N,..." of guest @guest (--device NAME:SPEC, ctl add) */
int daemon_parse_dev_spec(const char *spec, const char *guest,
			 struct daemon_dev_cfg *dc, char *err, size_t errlen);
void daemon_dev_cfg_free(struct daemon_dev_cfg *dc);
int daemon_config_add_guest(struct daemon_config *c, const char *spec,
			   char *err, size_t errlen);
int daemon_config_add_dev(struct daemon_config *c, const char *spec,
			 char *err, size_t errlen);
int daemon_config_file(struct daemon_config *c, const char *path,
		      char *err, size_t errlen);
/*
 * After everything is parsed: --ctl given, devices' guests exist, no two
 * of the sockets and RAM files are one file (compared by device and
 * inode, not by spelling).
 */
int daemon_config_check(struct daemon_config *c, char *err, size_t errlen);
void daemon_config_free(struct daemon_config *c);

/* ---- ctl.c: the control socket ---- */
int daemon_ctl_listen(const char *path, char *err, size_t errlen);
/*
 * Serve one connection on @fd against @guests. Given up (no reply) as
 * soon as @stop_fd (the signalfd) is readable: SIGTERM never waits for a
 * client.
 */
void daemon_ctl_serve(int fd, int stop_fd, struct hostd_guest **guests,
		      unsigned int n);
/* Execute one command line; the reply (first line OK/ERR) goes to @out. */
void daemon_ctl_exec(const char *line, struct hostd_guest **guests,
		    unsigned int n, struct hostd_buf *out);
int daemon_ctl_client(const char *path, const char *line, FILE *out);
/*
 * --test-fault "NAME VERB ARGS": the same as `ctl fault NAME VERB ARGS`
 * (same parser, same messages), before the guests' threads start. 0, or
 * -1 with the reason in @err.
 */
int daemon_ctl_fault_spec(const char *spec, struct hostd_guest **guests,
			  unsigned int n, char *err, size_t errlen);

/* ---- main.c ---- */
int daemon_main(int argc, char **argv);

#endif /* VBUS_HOSTD_DAEMON_H */
