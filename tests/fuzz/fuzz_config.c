// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Fuzz target "config": vbus-hostd's configuration parsers
 * (daemon/config.c), with every device type linked (venet over the fake
 * tap). The first input byte picks:
 *  - even: the rest is a --config file (any bytes: NULs, long lines, many
 *    guests and devices), then the checks after parsing (daemon_config_check);
 *  - odd: one --guest or --device SPEC, given once as a config file line
 *    and once as the command-line option: the same mistake must get the
 *    same message either way ("PATH:1: " and the option's message), and
 *    what one accepts the other must too.
 * Relative paths in specs land in a private directory (the cwd).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuzz_guest.h"
#include "fuzz_sock.h"

static char path[256];
static struct daemon_config cfg, cfg2;

static void setup_once(void)
{
	if (path[0])
		return;
	if (chdir(fuzz_sock_dir()) < 0)
		abort();
	snprintf(path, sizeof(path), "%s/fuzz.conf", fuzz_sock_dir());
}

static void file_write(const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || (n && write(fd, p, n) != (ssize_t)n))
		abort();
	close(fd);
}

static void config_reset(struct daemon_config *c)
{
	daemon_config_free(c);
	memset(c, 0, sizeof(*c));
	snprintf(c->ctl, sizeof(c->ctl), "ctl.sock");
}

static void whole_file(const uint8_t *data, size_t size)
{
	char err[4096];

	file_write(data, size);
	config_reset(&cfg);
	if (!daemon_config_file(&cfg, path, err, sizeof(err)))
		daemon_config_check(&cfg, err, sizeof(err));
	config_reset(&cfg);
}

/* One spec both ways: the file's message is the option's, after PATH:1: */
static void both_ways(const uint8_t *data, size_t size, bool dev)
{
	static char spec[HOSTD_SPEC_MAX], line[HOSTD_SPEC_MAX + 16];
	static char e1[4096], e2[4096], want[4096 + 300];
	size_t n = 0, i;
	int r1, r2;

	for (i = 0; i < size && n < sizeof(spec) - 1; i++)
		/* what a line cannot hold, or a comment, or trim() eats */
		if (data[i] && data[i] != '\n' && data[i] != '#' &&
		    data[i] != '\r' && data[i] != '\t' && data[i] != '\v' &&
		    data[i] != '\f')
			spec[n++] = (char)data[i];
	while (n && spec[n - 1] == ' ')
		n--;
	spec[n] = 0;
	for (i = 0; spec[i] == ' '; i++)
		;
	snprintf(line, sizeof(line), "--%s %s\n", dev ? "device" : "guest",
		 spec + i);
	file_write(line, strlen(line));
	config_reset(&cfg);
	config_reset(&cfg2);
	e1[0] = e2[0] = 0;
	r1 = daemon_config_file(&cfg, path, e1, sizeof(e1));
	r2 = dev ? daemon_config_add_dev(&cfg2, spec + i, e2, sizeof(e2)) :
		   daemon_config_add_guest(&cfg2, spec + i, e2, sizeof(e2));
	snprintf(want, sizeof(want), "%s:1: %s", path, e2);
	if ((r1 != 0) != (r2 != 0) || (r2 && strcmp(e1, want))) {
		fprintf(stderr, "'%s': as a config line: %d '%s'; as an option: %d '%s'\n",
			line, r1, e1, r2, e2);
		abort();
	}
	config_reset(&cfg);
	config_reset(&cfg2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setup_once();
	if (!size)
		return 0;
	if (data[0] & 1)
		both_ways(data + 1, size - 1, data[0] & 2);
	else
		whole_file(data + 1, size - 1);
	return 0;
}
