/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * One end of ipc-peer's message link: a vbus-ipc channel (peer_ipc.c, or
 * through libioq's vchan-style calls: peer_vchan.c) or
 * a TCP connection carrying the same messages (peer_tcp.c), so that the
 * bench measures both with the same code (bench/ipc-vs-tcp.sh).
 *
 * The calls mirror ioq_ipc_*: send (with PEER_MORE: the peer is told
 * later, at flush), recv (-EAGAIN when nothing is there, -EPIPE once the
 * peer is gone), wait (> 0 ready, 0 timeout, < 0 error).
 */
#ifndef VBUS_TESTS_PEER_LINK_H
#define VBUS_TESTS_PEER_LINK_H

#include <stddef.h>

#define PEER_MORE 1

enum peer_wait { PEER_WAIT_RX, PEER_WAIT_TX };

/* kicks/wakeups: doorbells rung/handled (vbus-ipc only; 0 over TCP) */
struct peer_stats {
	unsigned long sent, received, kicks, wakeups, sleeps, faults;
};

struct peer_link {
	const struct peer_link_ops *ops;
	const char *name;	/* "ipc" or "tcp": the prefix of the figures */
};

struct peer_link_ops {
	long (*send)(struct peer_link *l, const void *buf, size_t len,
		     int flags);
	long (*flush)(struct peer_link *l);
	long (*recv)(struct peer_link *l, void *buf, size_t max);
	long (*wait)(struct peer_link *l, enum peer_wait what, int timeout_ms);
	size_t (*max_msg)(struct peer_link *l);
	void (*stats)(struct peer_link *l, struct peer_stats *st);
	void (*close)(struct peer_link *l);
};

/* vbus-ipc: "guest" DEV or "host" SOCK (with "-poll": its own poll loop); 0 or -errno */
int peer_ipc_attach(struct peer_link **l, const char *side, const char *where,
		    int timeout_ms);
/* the channel under an ipc link (the garbage action), NULL over TCP */
struct ioq_ipc *peer_ipc_channel(struct peer_link *l);

/* vchan-style API: "vchan-client"/"vchan-server" NAME; 0 or -errno */
int peer_vchan_attach(struct peer_link **l, const char *side,
		      const char *name, int timeout_ms);

/*
 * TCP: "tcp-listen" ADDR:PORT (accepts one connection) or "tcp-connect"
 * ADDR:PORT (retries until the listener is there); messages up to
 * @max_msg bytes, each framed by its 32-bit length. 0 or -errno.
 */
int peer_tcp_attach(struct peer_link **l, const char *side, const char *where,
		    size_t max_msg, int timeout_ms);

#endif /* VBUS_TESTS_PEER_LINK_H */
