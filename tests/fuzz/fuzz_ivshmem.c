// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Fuzz target "ivshmem": the guest's ivshmem-doorbell server
 * (userspace/hostd/lib/ivshmem.c) as QEMU speaks to it, over its real
 * listening socket: up to three clients connect, read the handshake
 * (checked message by message as QEMU checks it: fuzz_sock.c), read only
 * part of it or nothing, write what QEMU never writes (bytes, descriptors),
 * half-close, close and reconnect, ring the doorbells they were given,
 * while the fake guest drives the bus over the BAR2 of the moment
 * (vbus-test devices 1 and 2).
 *
 * Opcode 6 is a client's action, opcode 11 a client ringing a doorbell.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include "fuzz_guest.h"
#include "fuzz_sock.h"

#define NCLIENTS 3

static const char *const devices[] = {
	"type=vbus-test,id=1", "type=vbus-test,id=2", NULL
};
static char path[192];
static struct fuzz_qemu qemu[NCLIENTS];

static void reset(void)
{
	char err[256];
	int i;

	if (!path[0]) {
		snprintf(path, sizeof(path), "%s/ivshmem.sock", fuzz_sock_dir());
		if (hostd_ivshmem_listen(&fuzz_guest.iv, path, &fuzz_guest.cfg.qemu, err,
					 sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			abort();
		}
		for (i = 0; i < NCLIENTS; i++)
			fuzz_qemu_init(&qemu[i]);
	}
}

/* Something QEMU never sends: bytes, maybe a descriptor with them. */
static void client_write(struct fuzz_qemu *q, struct fuzz_in *in, uint8_t sub)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} c;
	uint8_t buf[64];
	size_t n = fuzz_u8(in) % sizeof(buf) + 1, i;
	struct iovec iov = { buf, n };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	int efd = -1;

	for (i = 0; i < n; i++)
		buf[i] = fuzz_u8(in);
	if (sub & 32) {
		efd = eventfd(0, EFD_CLOEXEC);
		m.msg_control = &c;
		m.msg_controllen = sizeof(c);
		c.h.cmsg_level = SOL_SOCKET;
		c.h.cmsg_type = SCM_RIGHTS;
		c.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&c.h), &efd, sizeof(int));
	}
	sendmsg(q->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (efd >= 0)
		close(efd);
}

static void op_client(struct fuzz_in *in)
{
	uint8_t sub = fuzz_u8(in);
	struct fuzz_qemu *q = &qemu[(sub >> 3) % NCLIENTS];

	switch (sub & 7) {
	case 0:		/* connect (again) */
		fuzz_qemu_close(q);
		q->fd = fuzz_sock_connect(path);
		break;
	case 1:
	case 2:		/* read what is there: the loop accepts first */
		fuzz_pump();
		if (q->fd >= 0)
			fuzz_qemu_read(q, VBUS_PCI_SHM_SIZE, VBUS_PCI_NR_VECTORS);
		break;
	case 3:
		if (q->fd >= 0)
			client_write(q, in, sub);
		break;
	case 4:
		if (q->fd >= 0)
			shutdown(q->fd, (sub & 8) ? SHUT_WR : SHUT_RDWR);
		break;
	case 5:		/* QEMU exits */
		fuzz_qemu_close(q);
		break;
	default:
		break;
	}
	fuzz_pump();
}

/* The guest rings a host doorbell: QEMU writes the eventfd it was given. */
static void op_doorbell(struct fuzz_in *in)
{
	uint8_t sub = fuzz_u8(in);
	struct fuzz_qemu *q = &qemu[sub % NCLIENTS];
	int fd = q->db[(sub >> 2) & 1];

	if (fd >= 0)
		eventfd_write(fd, 1);
	fuzz_pump();
}

/* Every client goes: the server is back to waiting for the next input. */
static void done(void)
{
	int i;

	for (i = 0; i < NCLIENTS; i++)
		fuzz_qemu_close(&qemu[i]);
	fuzz_pump();
	hostd_loop_poll(&fuzz_guest.loop, 0);
	fuzz_pump();
}

static const struct fuzz_target target = {
	.devices = devices,
	.reset = reset,
	.op_a = op_client,
	.op_b = op_doorbell,
	.done = done,
	.socket_transport = true,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_guest_run(&target, data, size);
	return 0;
}
