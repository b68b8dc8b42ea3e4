/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * vbus-blk's NBD backend (nbd=URI), shared by its two files:
 *
 *   vbus_blk_nbd.c       the requests: a bounce buffer each, issued
 *                        through libnbd's async API, parked while the
 *                        connection is down and resent, answered
 *   vbus_blk_nbd_conn.c  the connection: connect (libnbd's
 *                        aio_connect_uri, driven by the guest's loop),
 *                        the server's limits, loss, reconnect with
 *                        backoff, the tick that bounds every request
 *
 * One connection per device, or, when the server advertises multi-conn
 * (nbd_can_multi_conn: a FLUSH on any connection covers the writes
 * answered on all of them), one per queue (nbd_conns=N: at most N; the
 * guest's queue qi uses connection qi % N). Each is driven by the
 * guest's loop through nbd_aio_get_fd / nbd_aio_get_direction /
 * nbd_aio_notify_{read,write}: nothing here waits for the server. The
 * first connect of a device added to a running guest (`ctl add`) is made
 * on the loop too: the device is pending (HOSTD_DEV_PENDING), the guest
 * sees it once the handshake gave its size and limits; at the daemon's
 * start it is waited for in create, bounded by nbd_timeout, like opening
 * a file. The others connect on the loop, their queues' requests parked
 * until they are up.
 */
#ifndef VBUS_HOSTD_VBUS_BLK_NBD_H
#define VBUS_HOSTD_VBUS_BLK_NBD_H

#include <libnbd.h>
#include "vbus_blk_dev.h"

#define NBD_TICK_MS		100	/* deadlines and reconnects */
#define NBD_BACKOFF_MIN_MS	100	/* first reconnect after a loss */
#define NBD_BACKOFF_MAX_MS	2000
#define NBD_READS_PER_WAKE	256	/* notify_reads per socket wakeup */

enum nbd_conn_state {
	NBD_DOWN,		/* no connection: a reconnect is due at retry_ns */
	NBD_CONNECTING,		/* handshake under way */
	NBD_UP,			/* commands go to the server */
};

enum nbd_cmd_where {
	NBD_CMD_SENT,		/* libnbd has it */
	NBD_CMD_PARKED,		/* waits for a connection */
	NBD_CMD_DONE,		/* answered, waits for nbd_settle() */
};

/* One request of the guest while the backend has it. */
struct nbd_cmd {
	struct nbd_cmd *prev, *next;	/* in the list of its `where` */
	struct vbus_blk_nbd *n;
	struct nbd_conn *k;		/* the connection of its queue */
	enum nbd_cmd_where where;
	__u64 tag;			/* vbus_blk_tag() */
	__u8 op;			/* VBUS_BLK_OP_* */
	__u16 flags;			/* VBUS_BLK_REQ_* */
	__u64 offset, len;
	const struct iovec *iov;	/* READ: the guest's buffers (the slot's) */
	unsigned int niov;
	void *buf;			/* READ / WRITE: ours, never guest RAM */
	__u64 deadline_ns;		/* answered by then, or S_IOERR */
	int err;			/* errno of the answer, 0: done */
	bool final;			/* err stands: not parked again */
	bool orphan;			/* its session closed: only freed */
};

struct nbd_cmd_list {
	struct nbd_cmd head;		/* sentinel: head.next is the oldest */
	unsigned int n;
};

/* One connection to the server and the commands it has or waits for. */
struct nbd_conn {
	struct vbus_blk_nbd *n;
	unsigned int idx;		/* in n->conn[] */
	struct nbd_handle *h;		/* NULL when DOWN */
	enum nbd_conn_state state;
	int fd;				/* h's socket, watched; -1 */
	__u32 fd_events;
	__u64 retry_ns;			/* DOWN: next connect attempt */
	__u32 backoff_ms;
	__u64 connect_deadline_ns;	/* CONNECTING: give up then */
	bool ever_up;			/* a later connect is a reconnect */
	struct nbd_cmd_list sent, parked;
};

struct vbus_blk_nbd_stats {
	__u64 connects;		/* connections made (the first included) */
	__u64 reconnects;	/* made after a loss */
	__u64 losses;		/* connections lost (died, stalled, refused) */
	__u64 connect_failures;	/* reconnects that failed */
	__u64 server_errors;	/* requests the server answered with an error */
	__u64 timeouts;		/* requests failed at their deadline */
	__u64 stalls;		/* connections dropped: a request overdue */
	__u64 parked;		/* requests parked by a loss */
	__u64 resent;		/* parked requests sent again */
	__u64 past_end;		/* requests past a shrunken export's end */
};

struct vbus_blk_nbd {
	struct vbus_blk *b;
	struct nbd_conn conn[VBUS_BLK_MAX_QUEUES];
	unsigned int nconns;		/* in use: conn[0..nconns) */
	int tfd;			/* the tick: timerfd, -1 */
	bool tfd_watched, ticking;
	__u64 size;			/* the export's bytes, last connect */
	bool settling;			/* in nbd_settle: none nests */
	bool pending;			/* first connect on the loop, not up yet */
	bool gave_up;			/* it failed: the device goes */
	__u64 start_deadline_ns;	/* pending on image='s start: until */
	unsigned int orphans;		/* sent, of a closed session */
	char why[256];			/* the last loss or refusal */
	struct nbd_cmd_list done;
	struct vbus_blk_nbd_stats st;
};

/* vbus_blk_nbd.c: the command lists */
void nbd_list_init(struct nbd_cmd_list *l);
void nbd_list_move(struct nbd_cmd *c, struct nbd_cmd_list *to,
		   enum nbd_cmd_where where);
void nbd_cmd_free(struct nbd_cmd *c);
/* send @c on its connection (UP), or park it; false: the connection broke */
bool nbd_cmd_issue(struct nbd_cmd *c);
/* answer what is DONE (and park what a loss failed); safe to nest */
void nbd_settle(struct vbus_blk_nbd *n);
/* fail @c with @err at once (its deadline passed, its range is gone) */
void nbd_cmd_fail(struct vbus_blk_nbd *n, struct nbd_cmd *c, int err);

/* vbus_blk_nbd_conn.c */
/* the first connection, at create: started; on a running guest left to
 * the loop (HOSTD_DEV_PENDING), else waited for, bounded by nbd_timeout;
 * once up the limits are set and the others (multi-conn) started */
int nbd_conn_first(struct vbus_blk_nbd *n);
/* after issuing or notifying: a dead connection is a loss; the watch
 * follows libnbd's direction */
void nbd_conn_check(struct vbus_blk_nbd *n);
/* drop the connection (stall, death): its commands park */
void nbd_conn_lost(struct nbd_conn *k, const char *why);
/* the tick runs while anything waits (in flight, parked, or DOWN) */
void nbd_tick_update(struct vbus_blk_nbd *n);
int nbd_tick_init(struct vbus_blk_nbd *n);
void nbd_conn_fini(struct vbus_blk_nbd *n);
/* the worst state of the connections in use ("up": all are) */
const char *nbd_conn_state_name(const struct vbus_blk_nbd *n);
unsigned int nbd_conns_up(const struct vbus_blk_nbd *n);

#endif /* VBUS_HOSTD_VBUS_BLK_NBD_H */
