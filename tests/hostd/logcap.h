/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The host's log (stderr: hostd_log) of one stretch of a test, to check
 * its words: logcap_begin(), the calls, logcap_end() (the text, also
 * echoed to the real stderr so a failing test still shows it).
 */
#ifndef VBUS_TESTS_LOGCAP_H
#define VBUS_TESTS_LOGCAP_H

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

struct logcap {
	int fd, saved;
	char text[8192];
};

static inline void logcap_begin(struct logcap *c)
{
	fflush(stderr);
	c->fd = memfd_create("logcap", MFD_CLOEXEC);
	c->saved = dup(2);
	if (c->fd < 0 || c->saved < 0 || dup2(c->fd, 2) < 0) {
		perror("logcap");
		_exit(1);
	}
}

static inline const char *logcap_end(struct logcap *c)
{
	ssize_t n;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	n = pread(c->fd, c->text, sizeof(c->text) - 1, 0);
	close(c->fd);
	c->text[n > 0 ? n : 0] = 0;
	fputs(c->text, stderr);
	return c->text;
}

#endif /* VBUS_TESTS_LOGCAP_H */
