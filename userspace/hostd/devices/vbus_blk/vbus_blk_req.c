// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-blk: one request, read once and checked (see vbus_blk_dev.h).
 *
 * The request header and its segment list are guest memory the guest can
 * rewrite while we look: both are copied to the stack first, and every
 * decision (op, flags, ranges, the iovecs) is made on the copy. A segment
 * may even point at the request itself: the data the backend moves then
 * lands on the header, and nothing of ours reads it again.
 *
 * Status rules (docs/devices/vbus_blk.md): an op or flag that
 * was not negotiated is S_UNSUPP (as is an unknown op); a WRITE on a
 * read-only device is S_IOERR (a write-protected medium); anything
 * malformed (segment count, lengths, alignment, range, untranslatable
 * memory) is S_BADREQ.
 */
#include <string.h>
#include "vbus_blk_dev.h"

#define SECTOR 512u

/* our copy: the header, then its segments (not one struct: req.seg[]
 * is a flexible array) */
struct req_copy {
	struct vbus_blk_req *h;
	struct vbus_blk_seg *seg;
};

static __u8 bad(const char **why, const char *what)
{
	*why = what;
	return VBUS_BLK_S_BADREQ;
}

static __u8 unsupp(const char **why, const char *what)
{
	*why = what;
	return VBUS_BLK_S_UNSUPP;
}

/* [offset, offset+len) inside the disk and on logical-block boundaries */
static __u8 check_range(const struct vbus_blk *b, __u64 sector, __u64 len,
			struct vbus_blk_io *io, const char **why)
{
	__u64 nsec = len / SECTOR;

	if (sector > b->capacity || nsec > b->capacity - sector)
		return bad(why, "sector range past the end of the disk");
	if ((sector * SECTOR) % b->lbs || len % b->lbs)
		return bad(why, "not aligned to the logical block size");
	io->offset = sector * SECTOR;
	io->len = len;
	return VBUS_BLK_S_OK;
}

/* READ / WRITE: the segments into iovecs over guest RAM. */
static __u8 parse_rw(struct vbus_blk *b, const struct req_copy *r,
		     struct vbus_blk_io *io, struct iovec *iov, const char **why)
{
	__u64 total = 0;
	unsigned int i;

	io->aligned = true;
	for (i = 0; i < r->h->nr_segs; i++) {
		__u64 addr = r->seg[i].addr;
		__u32 len = r->seg[i].len;
		void *p;

		if (!len || len % SECTOR)
			return bad(why, "segment length not a multiple of 512");
		if (len > VBLK_MAX_SEG_SIZE)
			return bad(why, "segment longer than max_segment_size");
		/* one RAM block per segment: the lowmem hole is an error */
		p = hostd_dev_data(b->dev, addr, len);
		if (!p)
			return bad(why, "segment outside guest RAM (or dma_window)");
		iov[i].iov_base = p;
		iov[i].iov_len = len;
		if ((addr | len) % b->lbs)
			io->aligned = false;
		total += len;
	}
	if (total > (__u64)b->max_sectors * SECTOR)
		return bad(why, "request longer than max_sectors");
	io->niov = r->h->nr_segs;
	return check_range(b, r->h->sector, total, io, why);
}

static __u8 parse_segs(struct vbus_blk *b, __u64 req_gpa, __u64 desc_len,
		       struct req_copy *r, const char **why)
{
	__u32 n = r->h->nr_segs;
	const void *p;

	if (!n || n > b->max_segs)
		return bad(why, "segment count out of range");
	if (desc_len != VBUS_BLK_REQ_SIZE(n))
		return bad(why, "descriptor length is not the request's size");
	p = hostd_dev_gpa(b->dev, req_gpa + sizeof(*r->h),
			  sizeof(r->seg[0]) * (__u64)n);
	if (!p)
		return bad(why, "segment list outside guest RAM");
	memcpy(r->seg, p, sizeof(r->seg[0]) * (size_t)n);
	return VBUS_BLK_S_OK;
}

/*
 * A DISCARD's range list (F_DISCARD_RANGES): one segment of nr_ranges
 * struct vbus_blk_range, copied once into host memory, then every range
 * checked on the copy and turned into a span of bytes. The ranges may
 * overlap (a discard twice is one); their sum is bounded like a single
 * range's.
 */
static __u8 parse_ranges(struct vbus_blk *b, const struct req_copy *r,
			 struct vbus_blk_io *io, struct vbus_blk_span *spans,
			 const char **why)
{
	struct vbus_blk_range rg[VBLK_MAX_DISCARD_RANGES];
	__u32 n = r->h->nr_ranges;
	__u64 total = 0;
	const void *p;
	unsigned int i;

	if (!n || n > VBLK_MAX_DISCARD_RANGES)
		return bad(why, "nr_ranges out of range");
	if (r->seg[0].len != sizeof(rg[0]) * (__u64)n)
		return bad(why, "range list segment is not nr_ranges * 16 bytes");
	p = hostd_dev_data(b->dev, r->seg[0].addr, r->seg[0].len);
	if (!p)
		return bad(why, "range list outside guest RAM (or dma_window)");
	/* the one read of the list: everything below uses the copy */
	memcpy(rg, p, sizeof(rg[0]) * (size_t)n);
	for (i = 0; i < n; i++) {
		__u8 st;

		if (rg[i].flags)
			return bad(why, "range flags not 0");
		if (!rg[i].nr_sectors)
			return bad(why, "range of 0 sectors");
		total += rg[i].nr_sectors;
		if (total > VBLK_MAX_DISCARD)
			return bad(why, "ranges longer than max_discard_sectors");
		st = check_range(b, rg[i].sector,
				 (__u64)rg[i].nr_sectors * SECTOR, io, why);
		if (st)
			return st;
		spans[i].offset = io->offset;
		spans[i].len = io->len;
	}
	io->offset = spans[0].offset;
	io->len = total * SECTOR;
	io->nspans = n;
	return VBUS_BLK_S_OK;
}

/* ops without segments: DISCARD / WRITE_ZEROES carry nr_sectors */
static __u8 parse_noseg(struct vbus_blk *b, __u64 desc_len,
			const struct req_copy *r, struct vbus_blk_io *io,
			const char **why)
{
	if (r->h->nr_segs)
		return bad(why, "segments on an op that takes none");
	if (desc_len != VBUS_BLK_REQ_SIZE(0))
		return bad(why, "descriptor length is not the request's size");
	if (io->op == VBUS_BLK_OP_FLUSH)
		return VBUS_BLK_S_OK;
	if (!r->h->nr_sectors || r->h->nr_sectors > VBLK_MAX_DISCARD)
		return bad(why, "nr_sectors out of range");
	return check_range(b, r->h->sector, (__u64)r->h->nr_sectors * SECTOR,
			   io, why);
}

static const __u32 op_feature[] = {
	[VBUS_BLK_OP_READ] = 0,
	[VBUS_BLK_OP_WRITE] = 0,
	[VBUS_BLK_OP_FLUSH] = VBUS_BLK_F_FLUSH,
	[VBUS_BLK_OP_DISCARD] = VBUS_BLK_F_DISCARD,
	[VBUS_BLK_OP_WRITE_ZEROES] = VBUS_BLK_F_WRITE_ZEROES,
	[VBUS_BLK_OP_GET_ID] = 0,
};

/* op and flags against what was negotiated */
static __u8 check_op(const struct vbus_blk *b, const struct req_copy *r,
		     const char **why)
{
	__u8 op = r->h->op;
	__u16 allowed = 0;

	if (op >= sizeof(op_feature) / sizeof(op_feature[0]))
		return unsupp(why, "unknown op");
	if (op_feature[op] && !(b->features & op_feature[op]))
		return unsupp(why, "op not negotiated");
	if (op == VBUS_BLK_OP_WRITE)
		allowed = VBUS_BLK_REQ_FUA;
	else if (op == VBUS_BLK_OP_WRITE_ZEROES)
		allowed = VBUS_BLK_REQ_UNMAP;
	if (r->h->flags & ~allowed)
		return bad(why, "flag not valid for the op");
	if ((r->h->flags & VBUS_BLK_REQ_FUA) && !(b->features & VBUS_BLK_F_FUA))
		return unsupp(why, "FUA not negotiated");
	if (op == VBUS_BLK_OP_WRITE && b->ro) {
		*why = "write to a read-only device";
		return VBUS_BLK_S_IOERR;
	}
	return VBUS_BLK_S_OK;
}

__u8 vbus_blk_req_parse(struct vbus_blk *b, __u64 req_gpa, __u64 desc_len,
		    struct vbus_blk_io *io, struct iovec *iov,
		    struct vbus_blk_span *spans, const char **why)
{
	struct vbus_blk_seg seg[VBUS_BLK_MAX_SEGS];
	struct vbus_blk_req hdr;
	struct req_copy r = { &hdr, seg };
	const void *h;
	__u8 st;

	*why = NULL;
	memset(io, 0, sizeof(*io));
	h = hostd_dev_gpa(b->dev, req_gpa, sizeof(hdr));
	if (!h)
		return bad(why, "request header outside guest RAM");
	/* the one read of the header: everything below uses the copy */
	memcpy(&hdr, h, sizeof(hdr));
	io->op = hdr.op;
	io->flags = hdr.flags;
	st = check_op(b, &r, why);
	if (st != VBUS_BLK_S_OK)
		return st;
	switch (io->op) {
	case VBUS_BLK_OP_READ:
	case VBUS_BLK_OP_WRITE:
		st = parse_segs(b, req_gpa, desc_len, &r, why);
		return st ? st : parse_rw(b, &r, io, iov, why);
	case VBUS_BLK_OP_GET_ID:
		if (hdr.nr_segs != 1)
			return bad(why, "GET_ID takes one segment");
		st = parse_segs(b, req_gpa, desc_len, &r, why);
		if (st)
			return st;
		if (!r.seg[0].len)
			return bad(why, "GET_ID segment of length 0");
		iov[0].iov_base = hostd_dev_data(b->dev, r.seg[0].addr,
						 r.seg[0].len);
		if (!iov[0].iov_base)
			return bad(why, "segment outside guest RAM (or dma_window)");
		iov[0].iov_len = r.seg[0].len;
		io->niov = 1;
		return VBUS_BLK_S_OK;
	case VBUS_BLK_OP_DISCARD:
		/* a range list (negotiated), or the one range of the header */
		if (!hdr.nr_segs || !(b->features & VBUS_BLK_F_DISCARD_RANGES))
			return parse_noseg(b, desc_len, &r, io, why);
		if (hdr.nr_segs != 1)
			return bad(why, "a range list is one segment");
		st = parse_segs(b, req_gpa, desc_len, &r, why);
		return st ? st : parse_ranges(b, &r, io, spans, why);
	default:
		return parse_noseg(b, desc_len, &r, io, why);
	}
}

void vbus_blk_req_get_id(struct vbus_blk *b, const struct vbus_blk_io *io,
		     struct iovec *iov)
{
	size_t n = iov[0].iov_len;

	(void)io;
	if (n > sizeof(b->serial))
		n = sizeof(b->serial);
	/* NUL-padded to 20 like the config's; the rest of the buffer kept */
	memcpy(iov[0].iov_base, b->serial, n);
}
