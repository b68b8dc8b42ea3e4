/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-hostd: readiness and status for the service manager (sd_notify.c).
 */
#ifndef VBUS_HOSTD_SD_NOTIFY_H
#define VBUS_HOSTD_SD_NOTIFY_H

/*
 * Send one datagram of newline-separated VAR=value lines ("READY=1",
 * "STOPPING=1", "STATUS=...") to $NOTIFY_SOCKET, with @nfds descriptors
 * attached (FDSTORE=1; at most MAX_FDS). 1 sent, 0 when $NOTIFY_SOCKET is
 * unset or empty (nothing to do), -errno when it could not be sent
 * (logged: the daemon goes on, the manager will time out).
 */
#define HOSTD_SD_NOTIFY_MAX_FDS	8
int daemon_sd_notify_fds(const char *state, const int *fds, int nfds);
/* The same without descriptors, the lines printf-formatted. */
int daemon_sd_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* VBUS_HOSTD_SD_NOTIFY_H */
