/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: the descriptor store that carries QEMU connections across a
 * restart (fdstore.c; docs/operations.md, "Restarts").
 */
#ifndef VBUS_HOSTD_FDSTORE_H
#define VBUS_HOSTD_FDSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include "hostd.h"

#define HOSTD_FDSTORE_MAX	512	/* FileDescriptorStoreMax= of the units */
#define HOSTD_FDNAME_MAX	64

struct daemon_fdstore {
	unsigned int n;
	int fd[HOSTD_FDSTORE_MAX];
	char name[HOSTD_FDSTORE_MAX][HOSTD_FDNAME_MAX];
	bool taken[HOSTD_FDSTORE_MAX];
};

/*
 * What the service manager passed: LISTEN_FDS descriptors from fd 3,
 * named by LISTEN_FDNAMES (then both, and LISTEN_PID, are unset). Nothing
 * when LISTEN_PID names another process or LISTEN_FDS is unset. 0, or -1
 * with the reason in @err.
 */
int daemon_fdstore_load(struct daemon_fdstore *s, char *err, size_t errlen);
/*
 * The stored connection of guest @guest: 1 (@fds filled, now the
 * caller's, with the queue vectors stored from msix2 on without a gap;
 * one after a gap is logged, closed and removed), 0 none stored or an
 * incomplete or ambiguous set (logged, closed and removed from the
 * store: the leftovers of a store or removal cut short, a name passed
 * twice), -1 one of the wrong kind (@err).
 */
int daemon_fdstore_take(struct daemon_fdstore *s, const char *guest,
		       struct hostd_ivshmem_fds *fds, char *err, size_t errlen);
/* Close what no guest took and remove it from the store (logged). */
void daemon_fdstore_drop_rest(struct daemon_fdstore *s);
/*
 * Store guest @guest's connection, every vector's eventfd too
 * ("GUEST/conn", the marker, last): 0, or -1 when a send failed (logged;
 * what was stored is removed again). Unpublish removes a set of
 * @nr_msix vectors (QEMU gone for good), the marker first.
 */
int daemon_fdstore_publish(const char *guest,
			  const struct hostd_ivshmem_fds *fds);
void daemon_fdstore_unpublish(const char *guest, unsigned int nr_msix);

#endif /* VBUS_HOSTD_FDSTORE_H */
