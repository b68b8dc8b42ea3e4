// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* vbus-hostd: listening unix sockets (see sock.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "sock.h"

/* Does a process accept on @sa? */
static bool sock_live(const struct sockaddr_un *sa)
{
	int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (probe < 0)
		return false;
	live = connect(probe, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	close(probe);
	return live;
}

/* bind() said EADDRINUSE: replace a stale socket, refuse anything else. */
static int sock_rebind(int fd, const struct sockaddr_un *sa, char *err,
		       size_t errlen)
{
	const char *path = sa->sun_path;
	struct stat st;

	if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket", path);
		return -EEXIST;
	}
	if (sock_live(sa)) {
		snprintf(err, errlen, "%s is in use by another process", path);
		return -EADDRINUSE;
	}
	unlink(path);
	if (bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	return 0;
}

int hostd_sock_listen(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, ret = 0;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "%s: socket path too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "socket: %s", strerror(-ret));
		return ret;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EADDRINUSE) {
			ret = sock_rebind(fd, &sa, err, errlen);
		} else {
			ret = -errno;
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		}
	}
	if (!ret && listen(fd, 8) < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	}
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}
