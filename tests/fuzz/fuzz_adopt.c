// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Fuzz target "adopt": a restarted daemon taking over a QEMU connection
 * (docs/operations.md, "Restarts"): LISTEN_FDS/LISTEN_FDNAMES as the
 * service manager passes them (names missing, twice, of other guests,
 * garbage; queue vectors msix2 and msix3 too, with or without a gap),
 * descriptors of the right kind or not, and a stored BAR2 the
 * guest could write all along: any line 0, host epoch, mailbox, size or
 * seals. The store (daemon/fdstore.c) picks the guest's set, the guest
 * adopts it (lib/ivshmem.c), and the fake guest then re-attaches over
 * whatever BAR2 it now has (vbus-test devices 1 and 2).
 *
 * Opcode 6 is one restart (a stored set, then the take-over), opcode 11
 * QEMU exiting or the daemon going down. The descriptors are the
 * fuzzer's; what the daemon does not take it must close (checked: none
 * is left open at the end of an input).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include "fdstore.h"
#include "fuzz_guest.h"

#define NSTORED 8

static const char *const devices[] = {
	"type=vbus-test,id=1", "type=vbus-test,id=2", NULL
};
/* the six of every set, then two queue vectors (vectors=4) */
static const char *const kinds[] = {
	"conn", "bar2", "db0", "db1", "msix0", "msix1", "msix2", "msix3"
};
static struct daemon_fdstore store;
static int qemu_end = -1;	/* QEMU's end of the adopted connection */

/* A BAR2 as the earlier daemon left it, and as the guest changed it. */
static int bar2_make(struct fuzz_in *in)
{
	uint8_t how = fuzz_u8(in);
	uint64_t size = (how & 1) ? fuzz_u16(in) : VBUS_PCI_SHM_SIZE;
	int fd = memfd_create("fuzz-bar2", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct vbus_pci_shm line0 = {
		.magic = VBUS_PCI_ABI_MAGIC, .version = VBUS_PCI_ABI_VERSION,
		.size = VBUS_PCI_SHM_SIZE,
	};
	unsigned int i, seals = F_SEAL_SHRINK | F_SEAL_GROW;

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		abort();
	if (how & 2)		/* the guest's epoch, whatever it is */
		line0.host_epoch = fuzz_u32(in);
	if (how & 4)		/* line 0 is not ours */
		((uint32_t *)&line0)[fuzz_u8(in) % 4] = fuzz_u32(in);
	if (pwrite(fd, &line0, sizeof(line0), 0) < 0)
		abort();
	for (i = 0; i < (how >> 5); i++) {	/* mailbox, sigpending, ... */
		uint64_t v = fuzz_u64(in);

		if (pwrite(fd, &v, sizeof(v), 64 + fuzz_u16(in) %
			   (VBUS_PCI_SHM_SIZE - 64 - 8)) < 0)
			abort();
	}
	if (how & 8)
		seals &= ~(fuzz_u8(in) & 1 ? F_SEAL_SHRINK : F_SEAL_GROW);
	if (how & 16)
		seals |= F_SEAL_WRITE;
	if (fcntl(fd, F_ADD_SEALS, seals) < 0)
		abort();
	return fd;
}

/* The descriptor stored as @kind, or one of another kind. */
static int stored_fd(struct fuzz_in *in, int kind, bool wrong)
{
	int sv[2];

	if (wrong)
		kind = fuzz_u8(in) % 7;
	switch (kind) {
	case 0:
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			abort();
		if (qemu_end >= 0)
			close(qemu_end);
		qemu_end = sv[1];
		return sv[0];
	case 1:
		return bar2_make(in);
	case 6:
		if (pipe2(sv, O_CLOEXEC) < 0)
			abort();
		close(sv[1]);
		return sv[0];
	default:
		return eventfd(0, EFD_CLOEXEC);
	}
}

static void op_restart(struct fuzz_in *in)
{
	uint8_t sub = fuzz_u8(in);
	unsigned int n = 1 + fuzz_u8(in) % NSTORED, i;
	char names[NSTORED * 24] = "", count[16];
	int fds[NSTORED], ret;
	struct hostd_ivshmem_fds got;
	char err[512];

	if (hostd_ivshmem_connected(&fuzz_guest.iv))
		return;		/* one connection: a restart starts without */
	for (i = 0; i < n; i++) {
		uint8_t sel = fuzz_u8(in);
		size_t len = strlen(names);
		char name[24];

		if (sel & 0x80) {	/* any name at all */
			uint8_t l = fuzz_u8(in) % 20, j;

			for (j = 0; j < l; j++)
				name[j] = (char)(fuzz_u8(in) | 1);
			name[l] = 0;
		} else {
			snprintf(name, sizeof(name), "%s/%s",
				 sel & 0x40 ? "other" : "fuzz", kinds[sel % 8]);
		}
		snprintf(names + len, sizeof(names) - len, "%s%s",
			 i ? ":" : "", name);
		/* a queue vector is an eventfd, as db0 */
		fds[i] = stored_fd(in, sel % 8 < 6 ? sel % 8 : 2, sel & 0x20);
	}
	snprintf(count, sizeof(count), "%u", (sub & 1) ? fuzz_u8(in) % 16 : n);
	setenv("LISTEN_FDS", count, 1);
	setenv("LISTEN_FDNAMES", names, 1);
	snprintf(count, sizeof(count), "%d", (sub & 2) ? 1 : (int)getpid());
	setenv("LISTEN_PID", count, 1);
	/* fds 3.. are checked to be open: ours stand in for them after */
	ret = daemon_fdstore_load(&store, err, sizeof(err));
	if (ret < 0 || store.n != n) {
		for (i = 0; i < n; i++)
			close(fds[i]);
		return;
	}
	for (i = 0; i < n; i++)
		store.fd[i] = fds[i];
	if (daemon_fdstore_take(&store, "fuzz", &got, err, sizeof(err)) == 1)
		hostd_guest_adopt(&fuzz_guest, &got, err, sizeof(err));
	daemon_fdstore_drop_rest(&store);
	fuzz_pump();
}

static void op_exit(struct fuzz_in *in)
{
	if (fuzz_u8(in) & 1) {
		if (qemu_end >= 0)
			close(qemu_end);
		qemu_end = -1;
	} else {
		hostd_guest_going_down(&fuzz_guest);
	}
	fuzz_pump();
}

static unsigned int nfds_before;

static unsigned int nfds(void)
{
	struct dirent *e;
	unsigned int n = 0;
	DIR *d = opendir("/proc/self/fd");

	if (!d)
		abort();
	while ((e = readdir(d)))
		n++;
	closedir(d);
	return n;
}

static void reset(void)
{
	nfds_before = nfds();
}

/* QEMU and the connection go: every descriptor of the input is closed. */
static void done(void)
{
	unsigned int n;

	hostd_ivshmem_close(&fuzz_guest.iv);
	if (qemu_end >= 0)
		close(qemu_end);
	qemu_end = -1;
	n = nfds();
	if (n != nfds_before) {
		fprintf(stderr, "%u descriptors open after the input, %u before\n",
			n, nfds_before);
		abort();
	}
}

static const struct fuzz_target target = {
	.devices = devices,
	.reset = reset,
	.op_a = op_restart,
	.op_b = op_exit,
	.done = done,
	.socket_transport = true,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_guest_run(&target, data, size);
	return 0;
}
