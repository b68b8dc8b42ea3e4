// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Fuzz target "ipc": the vbus-ipc device (id 1) and its two sockets:
 * QEMU on qsock= (its handshake checked as QEMU checks it, fuzz_sock.c),
 * host processes on sock= (the attach message checked), and the channel's
 * region, which the guest writes all of (its header with service,
 * layout, guest_open/guest_close; the rings; the buffers), with CTRL
 * doorbells when the fuzzer says. After each input every ctl reply must
 * be bounded (the region's service string is the guest's: finding 4 of
 * issue 21). Device 2 is a vbus-test for the rest of the bus.
 *
 * Opcode 6 is a peer's action, opcode 11 a guest write into the region.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vbus/vbus_ipc.h>
#include "fuzz_guest.h"
#include "fuzz_sock.h"

static const char *devices[3] = { NULL, "type=vbus-test,id=2", NULL };
static char spec[512], sock[192], qsock[192];
static struct fuzz_qemu qemu;
static uint8_t *region;		/* QEMU's mapping, the guest's view */
static size_t region_len;
static int host = -1;		/* the host process */

static void setup(void)
{
	const char *d = fuzz_sock_dir();

	snprintf(sock, sizeof(sock), "%s/ipc.sock", d);
	snprintf(qsock, sizeof(qsock), "%s/ipc.qsock", d);
	snprintf(spec, sizeof(spec),
		 "type=vbus-ipc,id=1,service=fuzz.svc,sock=%s,qsock=%s,count=4,bufsize=64",
		 sock, qsock);
	devices[0] = spec;
	fuzz_qemu_init(&qemu);
}

static void unmap(void)
{
	if (region)
		munmap(region, region_len);
	region = NULL;
}

static void qemu_read(void)
{
	struct stat st;

	fuzz_qemu_read(&qemu, 0, VBUS_IPC_NR_VECTORS);
	if (!region && qemu.bar2 >= 0 && fstat(qemu.bar2, &st) == 0) {
		region = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
			      MAP_SHARED, qemu.bar2, 0);
		if (region == MAP_FAILED)
			abort();
		region_len = (size_t)st.st_size;
	}
}

/* The attach message: magic, version, session and three descriptors. */
static void host_read(void)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(8 * sizeof(int))];
	} c;
	struct vbus_ipc_attach m;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = &c, .msg_controllen = sizeof(c) };
	struct cmsghdr *h;
	int fds[8], n = 0, i;
	ssize_t r = recvmsg(host, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (r <= 0)
		return;
	for (h = CMSG_FIRSTHDR(&mh); h; h = CMSG_NXTHDR(&mh, h)) {
		n = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(h), (size_t)n * sizeof(int));
	}
	if (r != sizeof(m) || m.magic != VBUS_IPC_ATTACH_MAGIC ||
	    n != VBUS_IPC_ATTACH_NFDS || (mh.msg_flags & MSG_CTRUNC)) {
		fprintf(stderr, "ipc: an attach message of %zd bytes, %d fds\n",
			r, n);
		abort();
	}
	for (i = 0; i < n; i++)
		close(fds[i]);
}

static void host_close(void)
{
	if (host >= 0)
		close(host);
	host = -1;
}

static void qemu_close(void)
{
	unmap();
	fuzz_qemu_close(&qemu);
}

/* The guest driver's open or release of /dev/vbus-ipcN, and its CTRL. */
static void guest_ctrl(uint8_t sub)
{
	struct vbus_ipc_shm *shm = (struct vbus_ipc_shm *)region;

	if (!region)
		return;
	if (sub & 8)
		shm->guest_open++;
	else
		shm->guest_close = shm->guest_open;
	if (qemu.db[VBUS_IPC_VEC_CTRL] >= 0)
		eventfd_write(qemu.db[VBUS_IPC_VEC_CTRL], 1);
}

static void op_peer(struct fuzz_in *in)
{
	uint8_t sub = fuzz_u8(in);

	switch (sub & 7) {
	case 0:
		qemu_close();
		qemu.fd = fuzz_sock_connect(qsock);
		break;
	case 1:
		host_close();
		host = fuzz_sock_connect(sock);
		break;
	case 2:
		fuzz_pump();
		qemu_read();
		if (host >= 0)
			host_read();
		break;
	case 3:
		if (host >= 0)	/* a host process writes what it must not */
			send(host, &sub, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		else if (qemu.fd >= 0)
			send(qemu.fd, &sub, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		break;
	case 4:
		(sub & 8) ? qemu_close() : host_close();
		break;
	default:
		guest_ctrl(sub);
		break;
	}
	fuzz_pump();
}

/* The guest writes its region: the header, the rings, anything. */
static void op_region(struct fuzz_in *in)
{
	uint8_t sub = fuzz_u8(in);
	uint8_t len = fuzz_u8(in), i;
	size_t at;

	if (!region)
		return;
	at = (sub & 1) ? offsetof(struct vbus_ipc_shm, service) :
	     (sub & 2) ? fuzz_u8(in) % sizeof(struct vbus_ipc_shm) :
	     fuzz_u32(in) % region_len;
	if (sub & 4) {	/* the service filled: no NUL anywhere near it */
		memset(region + offsetof(struct vbus_ipc_shm, service), 'S',
		       region_len - offsetof(struct vbus_ipc_shm, service) <
		       4096 ? 64 : 4096);
	}
	for (i = 0; i < len; i++) {
		uint8_t b = fuzz_u8(in);

		if (at + i < region_len)
			region[at + i] = b;
	}
	if (sub & 8)
		guest_ctrl(sub & 16 ? 8 : 0);
	fuzz_pump();
}

static void done(void)
{
	fuzz_ctl_check();
	host_close();
	qemu_close();
	fuzz_pump();
}

static const struct fuzz_target target = {
	.devices = devices,
	.setup = setup,
	.op_a = op_peer,
	.op_b = op_region,
	.done = done,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_guest_run(&target, data, size);
	return 0;
}
