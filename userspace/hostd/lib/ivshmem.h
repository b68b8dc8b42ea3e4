/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: the server side of QEMU's ivshmem-doorbell protocol for one
 * guest: the listening socket, the handshake, BAR2 (the memfd QEMU maps)
 * and the eventfds: two host doorbells the guest rings (DB_HC,
 * DB_SIGNAL; QEMU turns them into ioeventfds) and the guest MSI-X vectors
 * we write: HC, EVENTQ and, with vectors= above 2, one per queue vector
 * (docs/transport.md, "Per-queue vectors"). docs/transport.md has the
 * wire contract.
 *
 * One QEMU at a time. Each connection gets fresh eventfds and, once the
 * previous one is gone, a fresh BAR2: a QEMU still exiting keeps its
 * mapping of the old one and cannot scribble on the new guest's mailbox.
 * The owner hears about it through hostd_ivshmem_ops; the tests' in-memory
 * transport is hostd_ivshmem_open() without a socket: they ring the
 * doorbell eventfds and read the vectors themselves.
 */
#ifndef VBUS_HOSTD_IVSHMEM_H
#define VBUS_HOSTD_IVSHMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <vbus/vbus_pci.h>
#include "device.h"
#include "log.h"
#include "loop.h"

struct hostd_ivshmem_ops {
	/* vectors and BAR2 are up: a guest (re)starts from scratch */
	void (*connect)(void *arg);
	/* the connection goes: called before the vectors close */
	void (*disconnect)(void *arg);
	/* host doorbell @vector (VBUS_PCI_DB_*) rang; its eventfd drained */
	void (*doorbell)(void *arg, unsigned int vector);
};

struct hostd_ivshmem {
	struct hostd_loop *loop;
	struct hostd_log_limit *log;
	const struct hostd_ivshmem_ops *ops;
	void *arg;
	char name[64];			/* of the BAR2 memfd */

	char sock[108];			/* sun_path; "" when not listening */
	struct hostd_peer_rule peer;	/* who may connect as QEMU */
	__u64 refused;			/* connections turned away */
	int listen_fd;
	int conn_fd;			/* -1 while no QEMU */
	__u64 connections;

	int bar2_fd;
	struct vbus_pci_shm *shm;	/* our mapping of BAR2 */
	__u32 host_peer, guest_peer;
	int db_fd[VBUS_PCI_NR_VECTORS];	  /* host peer: the guest rings these */
	int msix_fd[VBUS_PCI_MAX_VECTORS]; /* guest vectors: we write these */
	/*
	 * Guest vectors: @vectors is the configuration (vectors=, the
	 * next connection's count, in BAR2 msix_vectors); @nr_msix how
	 * many this connection has (an adopted one: those stored).
	 */
	unsigned int vectors;
	unsigned int nr_msix;

	/* the daemon's: QEMU connected (@up) or disconnected for good */
	void (*conn_hook)(void *arg, bool up);
	void *conn_hook_arg;
};

/*
 * The descriptors of one QEMU connection, as a descriptor store keeps
 * them across a restart (docs/operations.md, "Restarts"): every guest
 * vector's eventfd, HC and EVENTQ and the queue vectors (@nr_msix of
 * them, VBUS_PCI_NR_VECTORS .. VBUS_PCI_MAX_VECTORS).
 */
struct hostd_ivshmem_fds {
	int conn;
	int bar2;
	int db[VBUS_PCI_NR_VECTORS];
	int msix[VBUS_PCI_MAX_VECTORS];
	unsigned int nr_msix;
};

/* Creates BAR2; nothing listens yet. 0 or -errno. */
int hostd_ivshmem_init(struct hostd_ivshmem *iv, struct hostd_loop *loop,
		       struct hostd_log_limit *log, const char *name,
		       const struct hostd_ivshmem_ops *ops, void *arg);
void hostd_ivshmem_fini(struct hostd_ivshmem *iv);
/*
 * Listen on @path for QEMU (hostd_sock_listen's rules). Only a process
 * @peer lets in is served; another is logged, counted and closed without
 * taking the guest's one connection.
 */
int hostd_ivshmem_listen(struct hostd_ivshmem *iv, const char *path,
			 const struct hostd_peer_rule *peer, char *err,
			 size_t errlen);
/* Vectors and doorbell watches for a new peer; ops->connect. */
int hostd_ivshmem_open(struct hostd_ivshmem *iv);
/* ops->disconnect; vectors and connection closed; a fresh BAR2. */
void hostd_ivshmem_close(struct hostd_ivshmem *iv);
bool hostd_ivshmem_connected(const struct hostd_ivshmem *iv);

/*
 * Take over a connection an earlier daemon handed over (@fds become
 * ours, also on failure). No handshake: QEMU already has it. The guest
 * is told to re-attach (docs/transport.md, "Host restarts"): a pending
 * hypercall is answered -ENOTCONN, host_epoch goes to the next even
 * value, HC and EVENTQ fire. The connection has the queue vectors @fds
 * carries; fewer than vectors= wires (a store of an older daemon kept
 * HC and EVENTQ only) is logged, and without any the re-attached guest
 * is declined VBUS_PCI_CAP_QVEC. 0, or -errno with the reason in @err.
 */
int hostd_ivshmem_adopt(struct hostd_ivshmem *iv,
			const struct hostd_ivshmem_fds *fds,
			char *err, size_t errlen);
/* The current connection's descriptors; false when not connected. */
bool hostd_ivshmem_fds(const struct hostd_ivshmem *iv,
		       struct hostd_ivshmem_fds *fds);
/*
 * The host goes away on purpose: host_epoch odd, both vectors fire. Only
 * once nothing on this side touches guest memory any more (loop stopped).
 */
void hostd_ivshmem_going_down(struct hostd_ivshmem *iv);

/*
 * How many guest MSI-X vectors the next connection wires (QEMU's
 * ivshmem-doorbell vectors= must be the same): VBUS_PCI_NR_VECTORS ..
 * VBUS_PCI_MAX_VECTORS; written to BAR2 msix_vectors. Only while no QEMU
 * is connected. 0 or -EINVAL / -EBUSY.
 */
int hostd_ivshmem_set_vectors(struct hostd_ivshmem *iv, unsigned int n);
/* Per-queue vectors this connection has: nr_msix - VBUS_PCI_NR_VECTORS. */
unsigned int hostd_ivshmem_qvecs(const struct hostd_ivshmem *iv);
/*
 * Interrupt the guest on MSI-X vector @vector (VBUS_PCI_MSIX_* or a queue
 * vector below nr_msix; others are ignored).
 */
void hostd_ivshmem_irq(struct hostd_ivshmem *iv, unsigned int vector);

/* hostd_ivshmem_send() (one protocol message) is in device.h */

#endif /* VBUS_HOSTD_IVSHMEM_H */
