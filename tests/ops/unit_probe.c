// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-unit-probe CHECK [ARG]: tries one thing the vbus-hostd unit must
 * not allow, run as the unit's ExecStart= (ctest ops_systemd_sandbox,
 * tests/ops/systemd-sandbox.sh). Prints one line and exits
 *   0  "denied: CHECK: why"    the sandbox stopped it
 *   1  "allowed: CHECK: what"  it worked: the sandbox has a hole
 *   2  "error: ..."            the probe could not try (bad use)
 * The same probe with the denying setting removed must print "allowed":
 * that is what shows each check can fail.
 *
 *   shadow              open /etc/shadow for reading
 *   systemd_private     connect to /run/systemd/private (systemd's own bus)
 *   dbus_system         connect to /run/dbus/system_bus_socket
 *   disk PATH           open a block device read-only
 *   af_inet             socket(AF_INET, SOCK_STREAM)
 *   af_inet_uring       an AF_INET socket through io_uring (IORING_OP_SOCKET)
 *   shadow_uring        open /etc/shadow through io_uring (IORING_OP_OPENAT)
 *   write DIR           create a file in DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int denied(const char *check, const char *fmt, int e)
{
	printf("denied: %s: ", check);
	printf(fmt, strerror(e));
	printf("\n");
	return 0;
}

static int allowed(const char *check, const char *what)
{
	printf("allowed: %s: %s\n", check, what);
	return 1;
}

static int probe_open(const char *check, const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return denied(check, "open: %s", errno);
	close(fd);
	return allowed(check, path);
}

static int probe_connect(const char *check, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int ret;

	if (fd < 0) {
		printf("error: %s: socket(AF_UNIX): %s\n", check, strerror(errno));
		return 2;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (ret < 0)
		ret = denied(check, "connect: %s", errno);
	else
		ret = allowed(check, path);
	close(fd);
	return ret;
}

static int probe_inet(const char *check)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return denied(check, "socket: %s", errno);
	close(fd);
	return allowed(check, "socket(AF_INET) made");
}

/* IORING_OP_SOCKET (5.19) runs in the kernel: no seccomp filter sees it */
static int probe_inet_uring(const char *check)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int ret = io_uring_queue_init(4, &ring, 0);

	if (ret < 0)
		return denied(check, "io_uring_setup: %s", -ret);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_socket(sqe, AF_INET, SOCK_STREAM, 0, 0);
	ret = io_uring_submit_and_wait(&ring, 1);
	if (ret < 0) {
		io_uring_queue_exit(&ring);
		return denied(check, "io_uring_enter: %s", -ret);
	}
	if (io_uring_peek_cqe(&ring, &cqe) < 0) {
		io_uring_queue_exit(&ring);
		printf("error: %s: no completion\n", check);
		return 2;
	}
	ret = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	if (ret < 0)
		return denied(check, "IORING_OP_SOCKET: %s", -ret);
	close(ret);
	return allowed(check, "IORING_OP_SOCKET made an AF_INET socket");
}

/* IORING_OP_OPENAT: the open runs in the kernel, but as the ring's user */
static int probe_shadow_uring(const char *check)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int ret = io_uring_queue_init(4, &ring, 0);

	if (ret < 0)
		return denied(check, "io_uring_setup: %s", -ret);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_openat(sqe, AT_FDCWD, "/etc/shadow", O_RDONLY | O_CLOEXEC, 0);
	ret = io_uring_submit_and_wait(&ring, 1);
	if (ret < 0 || io_uring_peek_cqe(&ring, &cqe) < 0) {
		io_uring_queue_exit(&ring);
		printf("error: %s: no completion\n", check);
		return 2;
	}
	ret = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	if (ret < 0)
		return denied(check, "IORING_OP_OPENAT: %s", -ret);
	close(ret);
	return allowed(check, "IORING_OP_OPENAT opened /etc/shadow");
}

static int probe_write(const char *check, const char *dir)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/vbus-unit-probe.%d", dir, (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return denied(check, "create: %s", errno);
	close(fd);
	unlink(path);
	return allowed(check, path);
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	const char *arg = argc > 2 ? argv[2] : NULL;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(c, "shadow") && argc == 2)
		return probe_open(c, "/etc/shadow", O_RDONLY);
	if (!strcmp(c, "systemd_private") && argc == 2)
		return probe_connect(c, "/run/systemd/private");
	if (!strcmp(c, "dbus_system") && argc == 2)
		return probe_connect(c, "/run/dbus/system_bus_socket");
	if (!strcmp(c, "disk") && arg)
		return probe_open(c, arg, O_RDONLY | O_NONBLOCK);
	if (!strcmp(c, "af_inet") && argc == 2)
		return probe_inet(c);
	if (!strcmp(c, "af_inet_uring") && argc == 2)
		return probe_inet_uring(c);
	if (!strcmp(c, "shadow_uring") && argc == 2)
		return probe_shadow_uring(c);
	if (!strcmp(c, "write") && arg)
		return probe_write(c, arg);
	printf("error: usage: vbus-unit-probe shadow|systemd_private|dbus_system|af_inet|af_inet_uring|shadow_uring|disk PATH|write DIR\n");
	return 2;
}
