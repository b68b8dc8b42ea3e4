/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* vbus-hostd: unix stream sockets we listen on. */
#ifndef VBUS_HOSTD_SOCK_H
#define VBUS_HOSTD_SOCK_H

#include <stddef.h>

/*
 * Bind and listen on @path: a stale socket (its daemon died) is replaced,
 * a live one (something accepts on it) or a non-socket is refused. The fd,
 * or -errno with the reason in @err.
 */
int hostd_sock_listen(const char *path, char *err, size_t errlen);

#endif /* VBUS_HOSTD_SOCK_H */
