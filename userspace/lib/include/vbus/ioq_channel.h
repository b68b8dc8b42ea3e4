/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * libioq channels: one IOQ ring in shared memory between two processes (or
 * threads), with a shm-signal in each direction carried by eventfds.
 *
 * A channel is a region (memfd, or a file an unrelated process can map)
 * holding a struct ioq_ring_head and its descriptors, plus two eventfds,
 * the doorbells: "kick_south" (written by north to notify south) and
 * "kick_north" (the field names are older than the rule that "kick" is a
 * self-wakeup, docs/ring.md; they become doorbell_* at libioq.so.2).
 * Each side owns one struct ioq_channel: its struct ioq (locale north or
 * south), its struct shm_signal whose inject op writes the peer's eventfd,
 * and a wait function that sleeps on its own eventfd and runs the wakeup.
 *
 * A dozen lines for a consumer:
 *
 *	struct ioq_channel *ch;
 *	ioq_channel_create(&ch, 256, NULL);              // north, memfd
 *	... fork(), or send ioq_channel_fds() over a unix socket ...
 *	ioq_channel_attach(&peer, ioq_locality_south, &fds);   // in the peer
 *	ioq_channel_set_notifier(peer, on_signal, arg);
 *	ioq_notify_enable(ioq_channel_ioq(peer), 0);
 *	for (;;) ioq_channel_wait(peer, -1);             // runs on_signal
 *
 * Every call returns 0 or -errno; nothing here aborts the process.
 */
#ifndef VBUS_IOQ_CHANNEL_H
#define VBUS_IOQ_CHANNEL_H

#include <vbus/ioq.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ioq_channel;

/* The file descriptors that make up a channel, for passing to the peer. */
struct ioq_channel_fds {
	int shm_fd;		/* the region: ring head + descriptors */
	int kick_south_fd;	/* eventfd: north -> south notifications */
	int kick_north_fd;	/* eventfd: south -> north notifications */
	__u32 count;		/* ring size both sides agree on */
};

/*
 * Create a channel (north side): a region sized for @count descriptors
 * (power of two), formatted, and two eventfds. @path NULL makes a memfd;
 * otherwise the file at @path is created (O_EXCL) and sized, so another
 * process (or ioq-dump) can map it by name.
 */
int ioq_channel_create(struct ioq_channel **ch, __u32 count,
		       const char *path);
/* The same with ring version @ver (5 or 6; ioq_channel_create() lays out 6). */
int ioq_channel_create_ver(struct ioq_channel **ch, __u32 count,
			   const char *path, __u32 ver);

/*
 * Attach to an existing channel as @locale, from fds (dup'ed: the caller
 * keeps its own). The south side validates the ring header (magic,
 * version, count, size of the region) before it uses it.
 */
int ioq_channel_attach(struct ioq_channel **ch, enum ioq_locality locale,
		       const struct ioq_channel_fds *fds);

/* The fds of @ch (still owned by @ch). */
void ioq_channel_fds(const struct ioq_channel *ch,
		     struct ioq_channel_fds *fds);

struct ioq *ioq_channel_ioq(struct ioq_channel *ch);

/* Called (from ioq_channel_wait) whenever the peer signalled us. */
int ioq_channel_set_notifier(struct ioq_channel *ch,
			     void (*fn)(struct ioq_channel *ch, void *arg),
			     void *arg);

/*
 * Sleep until the peer signals (or @timeout_ms passes; -1 forever), then
 * run the wakeup (the notifier runs inside) and any deferred notify.
 * Returns 1 if the notifier ran, 0 on timeout, -errno on error.
 */
int ioq_channel_wait(struct ioq_channel *ch, int timeout_ms);

/* The eventfd this side sleeps on, for callers with their own poll loop;
 * when it is readable call ioq_channel_wait(ch, 0). */
int ioq_channel_pollfd(const struct ioq_channel *ch);

/* Counters of this side. */
struct ioq_channel_stats {
	unsigned long injects;	/* notifications sent to the peer */
	unsigned long wakeups;	/* notifier runs */
	unsigned long sleeps;	/* times wait actually blocked */
};
void ioq_channel_stats(const struct ioq_channel *ch,
		       struct ioq_channel_stats *st);

/* Unmap and close; drops this side's references. */
void ioq_channel_destroy(struct ioq_channel *ch);

/*
 * Unix-socket helpers, to hand a channel to an unrelated process:
 * send the fds with SCM_RIGHTS over a connected socket / receive them.
 */
int ioq_channel_send_fds(int sock, const struct ioq_channel_fds *fds);
int ioq_channel_recv_fds(int sock, struct ioq_channel_fds *fds);

/*
 * vbus-ipc endpoints: a message channel between a guest process and a
 * host process (core/include/vbus/vbus_ipc.h, docs/devices/vbus_ipc.md).
 * The same calls on both ends:
 *
 *	struct ioq_ipc *ipc;
 *	ioq_ipc_attach_host(&ipc, "/run/vbus/ipc-echo.sock", -1);  // host
 *	ioq_ipc_attach_dev(&ipc, "/dev/vbus-ipc0", -1);            // guest
 *	for (;;) {
 *		long n = ioq_ipc_recv(ipc, buf, sizeof(buf));
 *		if (n == -EAGAIN) { ioq_ipc_wait(ipc, IOQ_IPC_WAIT_RX, -1); continue; }
 *		if (n < 0) break;             // -EPIPE: the peer left; -EIO: faulted
 *		ioq_ipc_send(ipc, buf, n, 0);
 *	}
 *	ioq_ipc_close(ipc);
 *
 * A busy channel makes no system call: notifications stay masked except
 * while ioq_ipc_wait() sleeps (or, in a loop of the caller's own, from
 * ioq_ipc_arm() to the ioq_ipc_wait() after the poll). Every received descriptor is checked
 * against the endpoint's own copy of the layout; a bad one faults the
 * endpoint (-EIO). When the session ends (the peer closed or died) every
 * call returns -EPIPE: close and attach again.
 */
struct ioq_ipc;

enum ioq_ipc_role {
	IOQ_IPC_GUEST,		/* sends on the G2H ring */
	IOQ_IPC_HOST,		/* sends on the H2G ring */
};

/* An endpoint from fds (dup'ed): the region, the doorbell this end sleeps
 * on, the one that wakes the peer, and optionally a socket whose EOF ends
 * the session (-1: none). For tests and custom transports. */
struct ioq_ipc_fds {
	int shm_fd;
	int wait_fd;
	int kick_fd;		/* the doorbell: doorbell_fd at libioq.so.2 */
	int ctl_fd;
	__u32 session;		/* the session the region must be in */
};
int ioq_ipc_attach_fds(struct ioq_ipc **ipc, enum ioq_ipc_role role,
		       const struct ioq_ipc_fds *fds);
/* Guest: open /dev/vbus-ipcN and wait up to @timeout_ms (-1: forever)
 * for the host process (-ETIMEDOUT). */
int ioq_ipc_attach_dev(struct ioq_ipc **ipc, const char *path,
		       int timeout_ms);
/* Host: connect to vbus-hostd's service socket and wait up to
 * @timeout_ms for a guest process (-ETIMEDOUT). */
int ioq_ipc_attach_host(struct ioq_ipc **ipc, const char *sock_path,
			int timeout_ms);

#define IOQ_IPC_MORE	1	/* send: more follow, signal at the last */
/* Copy @len bytes (<= ioq_ipc_max_msg) into a tx buffer and post it:
 * 0, -EAGAIN (all buffers in flight), -EMSGSIZE, -EPIPE, -EIO. */
int ioq_ipc_send(struct ioq_ipc *ipc, const void *buf, size_t len,
		 int flags);
int ioq_ipc_flush(struct ioq_ipc *ipc);	/* signal what MORE held back */
/* The next message into @buf: its length, -EAGAIN (none), -EMSGSIZE
 * (@cap too small; it stays queued), -EPIPE, -EIO. */
long ioq_ipc_recv(struct ioq_ipc *ipc, void *buf, size_t cap);

#define IOQ_IPC_WAIT_RX	1	/* a message to receive */
#define IOQ_IPC_WAIT_TX	2	/* a tx buffer came back */
/* Sleep until one of @events (or @timeout_ms; -1 forever): 1, 0 on
 * timeout, -EPIPE, -EIO. */
int ioq_ipc_wait(struct ioq_ipc *ipc, int events, int timeout_ms);
/*
 * A loop of the caller's own (poll/epoll): ioq_ipc_arm() before it
 * sleeps: 1 ready now (do not sleep), 0 armed (sleep on
 * ioq_ipc_pollfd() for POLLIN), or -EPIPE/-EIO. When the descriptor is
 * readable, ioq_ipc_wait(ipc, events, 0) handles it (1, 0, or the
 * error that ended the session). The descriptor also wakes when the
 * session ends.
 */
int ioq_ipc_arm(struct ioq_ipc *ipc, int events);
int ioq_ipc_pollfd(const struct ioq_ipc *ipc);
size_t ioq_ipc_max_msg(const struct ioq_ipc *ipc);
/* The rings, for iterator and bulk users: @tx 1 = this end's tx ring
 * (north), 0 = its rx ring (south). */
struct ioq *ioq_ipc_ioq(struct ioq_ipc *ipc, int tx);

struct ioq_ipc_stats {
	unsigned long sent, received;
	unsigned long kicks;	/* doorbells rung (system calls) */
	unsigned long injects;	/* signal injects that crossed */
	unsigned long wakeups;	/* doorbells handled */
	unsigned long sleeps;	/* times wait blocked */
	unsigned long faults;
};
void ioq_ipc_stats(const struct ioq_ipc *ipc, struct ioq_ipc_stats *st);
void ioq_ipc_close(struct ioq_ipc *ipc);

/*
 * vchan-style calls over a vbus-ipc channel (guest <-> host, or a link
 * between two guests), for programs written against libxenvchan: open by
 * name, a byte stream (read/write) and packets (send/recv), the same calls
 * in a guest and on the host. Errors are -errno (-EPIPE: the peer left;
 * -EIO: the channel faulted). ioq_vchan(3).
 *
 *	struct ioq_vchan *v;
 *	ioq_vchan_client_init(&v, "chat", -1);   // guest: /dev/vbus-ipcN of
 *	ioq_vchan_write(v, "hello", 5);          // service "chat"; host:
 *	n = ioq_vchan_read(v, buf, sizeof(buf)); // /run/vbus/ipc-chat.sock
 *	ioq_vchan_close(v);
 */
struct ioq_vchan;

int ioq_vchan_server_init(struct ioq_vchan **v, const char *name,
			  int timeout_ms);
int ioq_vchan_client_init(struct ioq_vchan **v, const char *name,
			  int timeout_ms);
/* Over an endpoint attached otherwise (ioq_ipc_attach_*); takes it over. */
int ioq_vchan_attach_ipc(struct ioq_vchan **v, struct ioq_ipc *ipc);
/* Blocking (the default, 1): write/send/read/recv wait until done. */
void ioq_vchan_set_blocking(struct ioq_vchan *v, int blocking);
long ioq_vchan_write(struct ioq_vchan *v, const void *buf, size_t len);
long ioq_vchan_read(struct ioq_vchan *v, void *buf, size_t len);
long ioq_vchan_send(struct ioq_vchan *v, const void *buf, size_t len);
long ioq_vchan_recv(struct ioq_vchan *v, void *buf, size_t len);
long ioq_vchan_data_ready(struct ioq_vchan *v);
long ioq_vchan_buffer_space(struct ioq_vchan *v);
size_t ioq_vchan_max_packet(const struct ioq_vchan *v);
int ioq_vchan_wait(struct ioq_vchan *v);
int ioq_vchan_is_open(struct ioq_vchan *v);
int ioq_vchan_fd_for_select(struct ioq_vchan *v);
void ioq_vchan_close(struct ioq_vchan *v);

#ifdef __cplusplus
}
#endif

#endif /* VBUS_IOQ_CHANNEL_H */
