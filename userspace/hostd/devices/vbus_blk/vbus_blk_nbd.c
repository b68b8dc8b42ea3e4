// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-blk's NBD backend, the requests (see vbus_blk_nbd.h).
 *
 * Each request gets a command of ours and, for READ / WRITE, a bounce
 * buffer: libnbd takes one buffer, not an iovec, and a buffer of ours
 * means nothing of libnbd ever points into guest RAM. A close then lets
 * go of everything at once (session_end: the in-flight commands become
 * orphans, freed when answered or when the connection goes) instead of
 * waiting for the server. A READ's data is copied to the guest's
 * buffers when its answer is taken, on the loop, before the status.
 *
 * libnbd calls our completion callback from inside its own calls (a
 * notify, an issue): the callback only moves the command to the DONE
 * list; nbd_settle() answers the guest afterwards, outside libnbd.
 *
 * A command goes on the connection of its queue (qi % nconns). The
 * connection can go at any time (vbus_blk_nbd_conn.c): a command it
 * failed (or that had not been sent) is parked on it and sent again
 * once it is up again, in the order it came; every command keeps the
 * deadline of its first submission (nbd_timeout), so a request is
 * answered within that bound whatever the server does. Resending is
 * safe: every NBD command is idempotent, and a FLUSH is only answered
 * OK by a connection that executed it after the writes it covers were
 * answered.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "vbus_blk_nbd.h"

static struct vbus_blk_nbd *nbd_of(const struct vbus_blk *b)
{
	return b->be_priv;
}

/* ---- the lists ------------------------------------------------------------ */

void nbd_list_init(struct nbd_cmd_list *l)
{
	l->head.next = l->head.prev = &l->head;
	l->n = 0;
}

static struct nbd_cmd_list *list_of(struct nbd_cmd *c)
{
	if (c->where == NBD_CMD_SENT)
		return &c->k->sent;
	return c->where == NBD_CMD_PARKED ? &c->k->parked : &c->n->done;
}

static void list_del(struct nbd_cmd *c)
{
	if (!c->next)
		return;
	list_of(c)->n--;
	c->prev->next = c->next;
	c->next->prev = c->prev;
	c->next = c->prev = NULL;
}

/* to the tail of @to: the lists keep the order requests came in */
void nbd_list_move(struct nbd_cmd *c, struct nbd_cmd_list *to,
		   enum nbd_cmd_where where)
{
	list_del(c);
	c->where = where;
	c->prev = to->head.prev;
	c->next = &to->head;
	to->head.prev->next = c;
	to->head.prev = c;
	to->n++;
}

void nbd_cmd_free(struct nbd_cmd *c)
{
	if (c->orphan)
		c->n->orphans--;
	list_del(c);
	free(c->buf);
	free(c);
}

/* ---- issue ---------------------------------------------------------------- */

/* libnbd's completion: record, and leave the answer to nbd_settle() */
static int on_answer(void *opaque, int *error)
{
	struct nbd_cmd *c = opaque;

	c->err = *error;
	nbd_list_move(c, &c->n->done, NBD_CMD_DONE);
	return 1;	/* retire the command */
}

static int64_t issue(struct nbd_handle *h, struct nbd_cmd *c)
{
	nbd_completion_callback cb = { .callback = on_answer, .user_data = c };
	uint32_t fl = 0;

	switch (c->op) {
	case VBUS_BLK_OP_READ:
		return nbd_aio_pread(h, c->buf, c->len, c->offset, cb, 0);
	case VBUS_BLK_OP_WRITE:
		if (c->flags & VBUS_BLK_REQ_FUA)
			fl = LIBNBD_CMD_FLAG_FUA;
		return nbd_aio_pwrite(h, c->buf, c->len, c->offset, cb, fl);
	case VBUS_BLK_OP_FLUSH:
		return nbd_aio_flush(h, cb, 0);
	case VBUS_BLK_OP_DISCARD:
		return nbd_aio_trim(h, c->len, c->offset, cb, 0);
	case VBUS_BLK_OP_WRITE_ZEROES:
		/* without UNMAP the blocks stay allocated */
		if (!(c->flags & VBUS_BLK_REQ_UNMAP))
			fl = LIBNBD_CMD_FLAG_NO_HOLE;
		return nbd_aio_zero(h, c->len, c->offset, cb, fl);
	default:
		errno = EINVAL;
		return -1;
	}
}

void nbd_cmd_fail(struct vbus_blk_nbd *n, struct nbd_cmd *c, int err)
{
	c->err = err;
	c->final = true;
	nbd_list_move(c, &n->done, NBD_CMD_DONE);
}

/* the range is inside the export as the last connection saw it */
static bool in_export(const struct vbus_blk_nbd *n, const struct nbd_cmd *c)
{
	if (c->op == VBUS_BLK_OP_FLUSH)
		return true;
	return c->offset <= n->size && c->len <= n->size - c->offset;
}

bool nbd_cmd_issue(struct nbd_cmd *c)
{
	struct nbd_conn *k = c->k;
	struct vbus_blk_nbd *n = c->n;
	int err;

	if (k->state != NBD_UP) {
		nbd_list_move(c, &k->parked, NBD_CMD_PARKED);
		return true;
	}
	if (!in_export(n, c)) {
		/* the export shrank under the guest: that range is gone */
		n->st.past_end++;
		nbd_cmd_fail(n, c, ENOSPC);
		return true;
	}
	/* listed first: libnbd may answer it before issue() returns */
	nbd_list_move(c, &k->sent, NBD_CMD_SENT);
	if (issue(k->h, c) != -1)
		return true;
	err = nbd_get_errno();
	if (nbd_aio_is_dead(k->h) || nbd_aio_is_closed(k->h)) {
		nbd_list_move(c, &k->parked, NBD_CMD_PARKED);
		return false;
	}
	/* refused by libnbd's own checks: a request the server must not see */
	hostd_dev_log(n->b->dev, "vbus-blk: nbd: op %u at %llu refused: %s",
		      c->op, (unsigned long long)c->offset, nbd_get_error());
	nbd_cmd_fail(n, c, err ? err : EIO);
	return true;
}

/* ---- answers -------------------------------------------------------------- */

/* errors of the connection, not of the request: send it again */
static bool retryable(const struct nbd_cmd *c)
{
	if (!c->err || c->final)
		return false;
	if (c->k->state != NBD_UP)
		return true;	/* answered by a dying connection */
	switch (c->err) {
	case ENOTCONN: case ESHUTDOWN: case ECONNRESET: case EPIPE:
	case ECONNABORTED:
		return true;
	default:
		return false;
	}
}

static void scatter(const struct nbd_cmd *c)
{
	const char *p = c->buf;
	unsigned int i;

	for (i = 0; i < c->niov; i++) {
		memcpy(c->iov[i].iov_base, p, c->iov[i].iov_len);
		p += c->iov[i].iov_len;
	}
}

/* the result vbus_blk_complete() wants: bytes moved, 0, or -errno */
static int answer(struct vbus_blk_nbd *n, struct nbd_cmd *c)
{
	if (c->err) {
		if (!c->final)
			n->st.server_errors++;
		/* S_IOERR; an errno the file path retries with is not one */
		return -EIO;
	}
	if (c->op == VBUS_BLK_OP_READ)
		scatter(c);
	if (c->op == VBUS_BLK_OP_READ || c->op == VBUS_BLK_OP_WRITE)
		return (int)c->len;
	return 0;
}

/* one pass over DONE; true if it answered anything */
static bool settle_once(struct vbus_blk_nbd *n, bool *touched)
{
	bool any = false;

	while (n->done.n) {
		struct nbd_cmd *c = n->done.head.next;
		__u64 tag = c->tag;
		int res;

		if (c->orphan) {
			nbd_cmd_free(c);
			continue;
		}
		if (retryable(c)) {
			c->err = 0;
			n->st.parked++;
			nbd_list_move(c, &c->k->parked, NBD_CMD_PARKED);
			continue;
		}
		if (c->err == ETIMEDOUT)
			n->st.timeouts++;
		res = answer(n, c);
		nbd_cmd_free(c);
		vbus_blk_complete(n->b, tag, res, touched);
		any = true;
	}
	return any;
}

void nbd_settle(struct vbus_blk_nbd *n)
{
	if (n->settling)
		return;		/* the outer pass sees what we would */
	n->settling = true;
	for (;;) {
		bool touched[VBUS_BLK_MAX_QUEUES] = { false };

		if (!settle_once(n, touched))
			break;
		/* hands back, and runs the masked queues: may issue more */
		vbus_blk_complete_end(n->b, touched);
	}
	n->settling = false;
	nbd_tick_update(n);
}

/* ---- the backend ops ------------------------------------------------------ */

static int nbd_open(struct vbus_blk *b)
{
	struct vbus_blk_nbd *n = calloc(1, sizeof(*n));
	unsigned int i;

	if (!n)
		return -ENOMEM;
	n->b = b;
	n->tfd = -1;
	n->nconns = 1;
	for (i = 0; i < VBUS_BLK_MAX_QUEUES; i++) {
		struct nbd_conn *k = &n->conn[i];

		k->n = n;
		k->idx = i;
		k->fd = -1;
		nbd_list_init(&k->sent);
		nbd_list_init(&k->parked);
	}
	nbd_list_init(&n->done);
	b->be_priv = n;
	return nbd_conn_first(n);
}

static void free_list(struct nbd_cmd_list *l)
{
	while (l->n)
		nbd_cmd_free(l->head.next);
}

static void nbd_close_backend(struct vbus_blk *b)
{
	struct vbus_blk_nbd *n = nbd_of(b);
	unsigned int i;

	if (!n)
		return;
	/* the handles first: after nbd_close libnbd touches no buffer of ours */
	nbd_conn_fini(n);
	for (i = 0; i < VBUS_BLK_MAX_QUEUES; i++) {
		free_list(&n->conn[i].sent);
		free_list(&n->conn[i].parked);
	}
	free_list(&n->done);
	free(n);
	b->be_priv = NULL;
}

static void gather(struct nbd_cmd *c, const struct vbus_blk_slot *s)
{
	char *p = c->buf;
	unsigned int i;

	for (i = 0; i < s->io.niov; i++) {
		memcpy(p, s->iov[i].iov_base, s->iov[i].iov_len);
		p += s->iov[i].iov_len;
	}
}

static int nbd_queue_one(struct vbus_blk *b, unsigned int qi,
			 unsigned int slot, struct vbus_blk_slot *s,
			 const struct vbus_blk_span *span);

/*
 * A DISCARD's range list: one NBD_CMD_TRIM a range, each a command of
 * its own (parked, resent, timed out alone) with the request's tag; the
 * slot counts them (parts) and is answered once all are, with the first
 * error. Out of memory halfway: the ones issued are waited for, then the
 * request fails.
 */
static int nbd_queue_spans(struct vbus_blk *b, unsigned int qi,
			   unsigned int slot, struct vbus_blk_slot *s)
{
	unsigned int i;

	for (i = 0; i < s->io.nspans; i++) {
		/* answers are taken in nbd_settle(), never during this */
		s->parts = i + 1;
		if (nbd_queue_one(b, qi, slot, s, &s->spans[i]) < 0) {
			s->parts = i;
			if (!i)
				return -ENOMEM;
			s->part_err = -ENOMEM;
			break;
		}
	}
	return 0;
}

static int nbd_queue(struct vbus_blk *b, unsigned int qi, unsigned int slot,
		     struct vbus_blk_slot *s)
{
	if (s->io.nspans)
		return nbd_queue_spans(b, qi, slot, s);
	return nbd_queue_one(b, qi, slot, s, NULL);
}

/* @s's request, or (@span) one range of its DISCARD */
static int nbd_queue_one(struct vbus_blk *b, unsigned int qi,
			 unsigned int slot, struct vbus_blk_slot *s,
			 const struct vbus_blk_span *span)
{
	struct vbus_blk_nbd *n = nbd_of(b);
	struct nbd_cmd *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->n = n;
	c->k = &n->conn[qi % n->nconns];
	c->tag = vbus_blk_tag(b, qi, slot);
	c->op = s->io.op;
	c->flags = s->io.flags;
	c->offset = s->io.offset;
	c->len = s->io.op == VBUS_BLK_OP_FLUSH ? 0 : s->io.len;
	c->iov = s->iov;
	c->niov = s->io.niov;
	if (span) {
		c->offset = span->offset;
		c->len = span->len;
	}
	c->deadline_ns = hostd_now_ns() + b->nbd_timeout_s * 1000000000ull;
	if (c->op == VBUS_BLK_OP_READ || c->op == VBUS_BLK_OP_WRITE) {
		/* the guest's data is copied once, now: it may change later */
		c->buf = malloc(c->len);
		if (!c->buf) {
			free(c);
			return -ENOMEM;
		}
		if (c->op == VBUS_BLK_OP_WRITE)
			gather(c, s);
	}
	if (c->flags & VBUS_BLK_REQ_FUA)
		b->st.fua_writes++;
	if (!nbd_cmd_issue(c))
		nbd_conn_lost(c->k, "the connection broke while sending");
	return 0;
}

static void nbd_submit(struct vbus_blk *b)
{
	struct vbus_blk_nbd *n = nbd_of(b);

	/* libnbd sent what it could when issuing; the rest on EPOLLOUT */
	nbd_conn_check(n);
	nbd_settle(n);
}

/*
 * Close: nothing may be answered to a guest that let go of its rings.
 * Parked and done commands go now; the ones the server has become
 * orphans, freed when answered or dropped with the connection. Their
 * buffers are ours, so the server may still write them meanwhile.
 */
static void nbd_session_end(struct vbus_blk *b)
{
	struct vbus_blk_nbd *n = nbd_of(b);
	struct nbd_cmd *c;
	unsigned int i;

	free_list(&n->done);
	for (i = 0; i < n->nconns; i++) {
		struct nbd_conn *k = &n->conn[i];

		free_list(&k->parked);
		for (c = k->sent.head.next; c != &k->sent.head; c = c->next) {
			c->orphan = true;
			n->orphans++;
		}
	}
	for (i = 0; i < VBUS_BLK_MAX_QUEUES; i++)
		b->q[i].inflight = 0;
	b->inflight = 0;
	nbd_tick_update(n);
}

static void nbd_stats(struct vbus_blk *b, struct hostd_stats_out *out)
{
	struct vbus_blk_nbd *n = nbd_of(b);
	unsigned int i, parked = 0;

	for (i = 0; i < n->nconns; i++)
		parked += n->conn[i].parked.n;
	hostd_stat_str(out, "nbd", b->path);
	hostd_stat_str(out, "nbd_state", nbd_conn_state_name(n));
	hostd_stat_u64(out, "nbd_conns", n->nconns);
	hostd_stat_u64(out, "nbd_conns_up", nbd_conns_up(n));
	hostd_stat_str(out, "nbd_last_error", n->why);
	hostd_stat_u64(out, "nbd_size", n->size);
	hostd_stat_u64(out, "nbd_parked_now", parked);
	hostd_stat_u64(out, "nbd_orphans", n->orphans);
#define S(name) hostd_stat_u64(out, "nbd_" #name, n->st.name)
	S(connects); S(reconnects); S(losses); S(connect_failures);
	S(server_errors); S(timeouts); S(stalls); S(parked); S(resent);
	S(past_end);
#undef S
}

const struct vbus_blk_backend_ops vbus_blk_nbd_ops = {
	.name = "nbd",
	.open = nbd_open,
	.close = nbd_close_backend,
	.queue = nbd_queue,
	.submit = nbd_submit,
	.session_end = nbd_session_end,
	.stats = nbd_stats,
};
