// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-blk's file backend (file=PATH): the backing file and the io_uring
 * (see vbus_blk_dev.h). The fast path: a request is one SQE, its CQE
 * answers it (vbus_blk_completions reaps them); a DISCARD with a range
 * list is one SQE a range, answered with the last of their CQEs.
 *
 * The file is opened with O_DIRECT when the file system takes it (data
 * then moves between the disk and guest RAM with no page cache in
 * between); a file system that refuses O_DIRECT (open or the first
 * aligned read fails with EINVAL) gets buffered I/O, and `ctl stats`
 * says direct=0. direct=1 makes the refusal an error, direct=0 never
 * tries. With O_DIRECT a second, buffered descriptor of the same file
 * serves requests whose guest buffers are not aligned to the logical
 * block size (Linux keeps the two coherent: direct I/O writes back and
 * invalidates the page cache over its range).
 *
 * The io_uring is the device's, shared by its queues; its completions
 * raise an eventfd the guest's loop watches (vbus_blk_completions).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include "vbus_blk_dev.h"

#define WHAT "backing file"

static bool pow2(__u64 v)
{
	return v && !(v & (v - 1));
}

/* Size and block sizes of the file or block device behind @fd. */
static int probe_size(struct vbus_blk *b, int fd, const struct stat *st,
		      __u64 *size)
{
	int lbs = 512, pbs = 512;

	if (!b->blkdev) {
		*size = (__u64)st->st_size;
		b->lbs = 512;
		b->pbs = pow2((__u64)st->st_blksize) && st->st_blksize >= 512 &&
			 st->st_blksize <= 65536 ? (__u32)st->st_blksize : 512;
		return 0;
	}
	if (ioctl(fd, BLKGETSIZE64, size) < 0)
		return -errno;
	if (ioctl(fd, BLKSSZGET, &lbs) < 0 || lbs < 512 || !pow2((__u64)lbs))
		lbs = 512;
	if (ioctl(fd, BLKPBSZGET, &pbs) < 0 || pbs < lbs || !pow2((__u64)pbs))
		pbs = lbs;
	b->lbs = (__u32)lbs;
	b->pbs = (__u32)pbs;
	return 0;
}

/*
 * The smallest block O_DIRECT takes on @fd, tried with one read at offset
 * 0 (a file system may open with O_DIRECT and refuse the I/O). 0 when
 * none up to 4096 works.
 */
static __u32 probe_direct(int fd, __u32 from)
{
	__u32 bs;

	for (bs = from; bs <= 4096; bs <<= 1) {
		void *buf;
		ssize_t r;

		if (posix_memalign(&buf, 4096, bs))
			return 0;
		r = pread(fd, buf, bs, 0);
		free(buf);
		if (r >= 0)
			return bs;
		if (errno != EINVAL)
			return 0;
	}
	return 0;
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return !fstat(a, &sa) && !fstat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* O_DIRECT if wanted and possible; b->fd_buffered is open already. */
static int open_direct(struct vbus_blk *b, int flags)
{
	__u32 bs;
	int fd;

	b->fd = b->fd_buffered;
	b->direct = false;
	if (!b->direct_want)
		return 0;
	fd = open(b->path, flags | O_DIRECT | O_NOFOLLOW | O_NONBLOCK);
	if (fd >= 0 && !same_file(fd, b->fd_buffered)) {
		close(fd);
		return hostd_dev_fail(b->dev, -EBUSY,
				      WHAT " %s was replaced while it was being opened",
				      b->path);
	}
	if (fd >= 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		close(fd);
		fd = -1;
	}
	bs = fd >= 0 ? probe_direct(fd, b->lbs) : 0;
	if (!bs) {
		int err = fd >= 0 ? EINVAL : errno;

		if (fd >= 0)
			close(fd);
		if (b->direct_want > 0)
			return hostd_dev_fail(b->dev, -err,
					      WHAT " %s: O_DIRECT refused: %s",
					      b->path, strerror(err));
		return 0;	/* auto: buffered */
	}
	b->fd = fd;
	b->direct = true;
	b->lbs = bs;
	if (b->pbs < bs)
		b->pbs = bs;
	return 0;
}

/*
 * The ring is created disabled and enabled only once it can do nothing
 * but vbus-blk's own work: io_uring reaches the kernel past the seccomp
 * filter, so a daemon that a guest took over must not be able to open
 * files or sockets through it. Its io-wq threads are capped too: one
 * guest's I/O cannot fan out into hundreds of host threads. Registration
 * calls come first; the restrictions leave none allowed afterwards.
 */
static int ring_confine(struct vbus_blk *b)
{
	static const __u8 ops[] = {
		IORING_OP_READV, IORING_OP_WRITEV, IORING_OP_FSYNC,
		IORING_OP_FALLOCATE, IORING_OP_ASYNC_CANCEL,
	};
	struct io_uring_restriction r[sizeof(ops)];
	unsigned int workers[2] = { b->iowq_workers, b->iowq_workers };
	unsigned int i;
	int ret;

	ret = io_uring_register_iowq_max_workers(&b->ring, workers);
	if (ret < 0)
		return hostd_dev_fail(b->dev, ret,
				      "io_uring: cannot cap its workers: %s",
				      strerror(-ret));
	memset(r, 0, sizeof(r));
	for (i = 0; i < sizeof(ops); i++) {
		r[i].opcode = IORING_RESTRICTION_SQE_OP;
		r[i].sqe_op = ops[i];
	}
	/*
	 * io_uring_register() itself: Debian 12's liburing.so.2 (2.3) does
	 * not export io_uring_register_restrictions/_enable_rings.
	 */
	ret = io_uring_register(b->ring.ring_fd, IORING_REGISTER_RESTRICTIONS,
				r, sizeof(ops));
	if (!ret)
		ret = io_uring_register(b->ring.ring_fd,
					IORING_REGISTER_ENABLE_RINGS, NULL, 0);
	if (ret < 0)
		return hostd_dev_fail(b->dev, ret,
				      "io_uring: cannot restrict the ring to vbus-blk's operations: %s",
				      strerror(-ret));
	return 0;
}

static int ring_up(struct vbus_blk *b)
{
	struct io_uring_params p;
	int ret;

	/*
	 * Room in the CQ for every request the guest can have in flight:
	 * the kernel keeps overflowing CQEs (IORING_FEAT_NODROP) but that is
	 * its slow path.
	 */
	memset(&p, 0, sizeof(p));
	/*
	 * Polling (poll_us): COOP_TASKRUN, a finished request's completion
	 * work waits for our next system call instead of an IPI that
	 * interrupts the spinning thread, and TASKRUN_FLAG says when such
	 * work waits (IORING_SQ_TASKRUN: the poll enters the kernel then,
	 * vbus_blk_queue.c). A device that does not poll keeps the default:
	 * its loop sleeps in epoll, and the wakeup that runs the completion
	 * work is then also the one that returns to the loop (with the flags
	 * it is an -EINTR round first). Kernels before 5.19 refuse both.
	 */
	p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_R_DISABLED;
	if (b->poll_us)
		p.flags |= IORING_SETUP_COOP_TASKRUN |
			   IORING_SETUP_TASKRUN_FLAG;
	p.cq_entries = b->max_queues * b->max_depth;
	if (p.cq_entries < 2 * VBLK_URING_ENTRIES)
		p.cq_entries = 2 * VBLK_URING_ENTRIES;
	ret = io_uring_queue_init_params(VBLK_URING_ENTRIES, &b->ring, &p);
	if (ret == -EINVAL) {
		p.flags &= ~(IORING_SETUP_COOP_TASKRUN |
			     IORING_SETUP_TASKRUN_FLAG);
		ret = io_uring_queue_init_params(VBLK_URING_ENTRIES, &b->ring,
						 &p);
	}
	if (ret < 0)
		return hostd_dev_fail(b->dev, ret,
				      "io_uring unavailable (io_uring_setup: %s): "
				      "vbus-blk needs it (kernel.io_uring_disabled? "
				      "a seccomp filter?)", strerror(-ret));
	b->ring_up = true;
	b->efd = hostd_eventfd_new();
	if (b->efd < 0)
		return b->efd;
	ret = io_uring_register_eventfd(&b->ring, b->efd);
	if (ret < 0)
		return hostd_dev_fail(b->dev, ret,
				      "io_uring_register_eventfd: %s",
				      strerror(-ret));
	return ring_confine(b);
}

/*
 * Open @b->path and check what was opened, never the name before it: the
 * name can be swapped between a stat() and an open() (a FIFO would block
 * the open, and with ro=1 the guest's loop with it). O_NOFOLLOW: the
 * caller canonicalized the path, so a symbolic link now was put there
 * since. O_NONBLOCK only for the open itself.
 */
static int open_checked(struct vbus_blk *b, int flags, struct stat *st)
{
	int fd = open(b->path, flags | O_NOFOLLOW | O_NONBLOCK);

	if (fd < 0 && errno == EISDIR)	/* O_RDWR; O_RDONLY gets to fstat */
		return hostd_dev_fail(b->dev, -EINVAL,
				      WHAT " %s is not a regular file or a block device",
				      b->path);
	if (fd < 0)
		return hostd_dev_fail(b->dev, -errno, WHAT " %s: %s", b->path,
				      errno == ELOOP ?
				      "is a symbolic link (swapped in after the path was resolved)" :
				      strerror(errno));
	b->fd_buffered = fd;	/* closed by file_close() */
	if (fstat(fd, st) < 0)
		return hostd_dev_fail(b->dev, -errno, WHAT " %s: %s", b->path,
				      strerror(errno));
	if (!S_ISREG(st->st_mode) && !S_ISBLK(st->st_mode))
		return hostd_dev_fail(b->dev, -EINVAL,
				      WHAT " %s is not a regular file or a block device",
				      b->path);
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		return hostd_dev_fail(b->dev, -errno, WHAT " %s: %s", b->path,
				      strerror(errno));
	return 0;
}

int vbus_blk_file_ring_up(struct vbus_blk *b)
{
	return ring_up(b);
}

/* a shard's: its ring and eventfd (the file's fds are the device's) */
void vbus_blk_file_ring_down(struct vbus_blk *b)
{
	if (b->ring_up)
		io_uring_queue_exit(&b->ring);
	b->ring_up = false;
	if (b->efd >= 0)
		close(b->efd);
	b->efd = -1;
}

/*
 * Open @b->path (as given: the caller canonicalized it), check it, claim
 * it, probe it, set up the ring. Every refusal says why.
 */
static int file_open(struct vbus_blk *b)
{
	int flags = (b->ro ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	struct stat st;
	__u64 size = 0;
	int ret;

	ret = open_checked(b, flags, &st);
	if (ret < 0)
		return ret;
	b->blkdev = S_ISBLK(st.st_mode);
	/*
	 * One disk, one device: two would corrupt each other's file system.
	 * The inode (a hard link is the same disk) and a lock, which also
	 * refuses a guest's RAM file and a disk of another daemon.
	 */
	ret = hostd_dev_claim_file(b->dev, WHAT, b->path, b->fd_buffered,
				   !b->ro);
	if (ret < 0)
		return ret;
	ret = probe_size(b, b->fd_buffered, &st, &size);
	if (ret < 0)
		return hostd_dev_fail(b->dev, ret, WHAT " %s: size: %s",
				      b->path, strerror(-ret));
	ret = open_direct(b, flags);
	if (ret < 0)
		return ret;
	if (size < b->lbs)
		return hostd_dev_fail(b->dev, -EINVAL,
				      WHAT " %s is smaller than one logical block "
				      "(%llu < %u bytes)", b->path,
				      (unsigned long long)size, b->lbs);
	b->capacity = size / b->lbs * (b->lbs / 512);
	vbus_blk_file_topology(b, b->fd_buffered, &st);
	b->zero_range_ok = true;
	b->be_features = VBUS_BLK_F_FLUSH | VBUS_BLK_F_FUA |
			 VBUS_BLK_F_DISCARD | VBUS_BLK_F_WRITE_ZEROES;
	return ring_up(b);
}

static void file_close(struct vbus_blk *b)
{
	if (b->ring_up)
		io_uring_queue_exit(&b->ring);
	b->ring_up = false;
	if (b->efd >= 0)
		close(b->efd);
	if (b->fd >= 0 && b->fd != b->fd_buffered)
		close(b->fd);
	if (b->fd_buffered >= 0)
		close(b->fd_buffered);
	b->efd = b->fd = b->fd_buffered = -1;
}

/* ---- io_uring ------------------------------------------------------------ */

/* true when @tag is of the current session; the queue and slot of it */
bool vbus_blk_untag(const struct vbus_blk *b, __u64 tag, unsigned int *qi,
		unsigned int *slot)
{
	*qi = (unsigned int)(tag >> 16 & 0xffff);
	*slot = (unsigned int)(tag & 0xffff);
	return tag >> 32 == (b->session & 0xffffffffull);
}

static struct io_uring_sqe *get_sqe(struct vbus_blk *b)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);

	if (!sqe) {
		/* SQ full: hand what we have to the kernel, take a fresh one */
		io_uring_submit(&b->ring);
		sqe = io_uring_get_sqe(&b->ring);
	}
	return sqe;
}

/* WRITE_ZEROES: ZERO_RANGE keeps the blocks, a punch frees them */
static int zeroes_mode(const struct vbus_blk *b, const struct vbus_blk_slot *s)
{
	if (s->zmode)
		return s->zmode;	/* a retry: the other mode */
	if ((s->io.flags & VBUS_BLK_REQ_UNMAP) || !b->zero_range_ok)
		return FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
	return FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;
}

/*
 * A DISCARD's range list: one punch a range, all with the request's tag;
 * the slot counts them (parts) and is answered with the last CQE. An SQ
 * that stays full halfway fails the request once the queued ones are
 * answered (none may be left behind in io_uring under a reused slot).
 */
static int queue_spans(struct vbus_blk *b, __u64 tag, struct vbus_blk_slot *s)
{
	unsigned int i;

	for (i = 0; i < s->io.nspans; i++) {
		struct io_uring_sqe *sqe = get_sqe(b);

		if (!sqe) {
			if (!i)
				return -EBUSY;
			s->part_err = -EBUSY;
			break;
		}
		io_uring_prep_fallocate(sqe, b->fd, FALLOC_FL_PUNCH_HOLE |
					FALLOC_FL_KEEP_SIZE, s->spans[i].offset,
					s->spans[i].len);
		io_uring_sqe_set_data64(sqe, tag);
		s->parts = i + 1;
		b->submit_pending = true;
	}
	return 0;
}

static int file_queue(struct vbus_blk *b, unsigned int qi, unsigned int slot,
		      struct vbus_blk_slot *s)
{
	struct io_uring_sqe *sqe;
	int fd = b->fd;

	if (s->io.nspans)
		return queue_spans(b, vbus_blk_tag(b, qi, slot), s);
	sqe = get_sqe(b);
	if (!sqe)
		return -EBUSY;
	if (b->direct && !s->io.aligned) {
		fd = b->fd_buffered;
		b->st.buffered_ios++;
	}
	switch (s->io.op) {
	case VBUS_BLK_OP_READ:
		io_uring_prep_readv(sqe, fd, s->iov, s->io.niov, s->io.offset);
		break;
	case VBUS_BLK_OP_WRITE:
		io_uring_prep_writev(sqe, fd, s->iov, s->io.niov, s->io.offset);
		if (s->io.flags & VBUS_BLK_REQ_FUA) {
			/* durable when the CQE comes: data and what finds it */
			sqe->rw_flags = RWF_DSYNC;
			b->st.fua_writes++;
		}
		break;
	case VBUS_BLK_OP_FLUSH:
		io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
		break;
	case VBUS_BLK_OP_DISCARD:
		io_uring_prep_fallocate(sqe, fd, FALLOC_FL_PUNCH_HOLE |
					FALLOC_FL_KEEP_SIZE, s->io.offset,
					s->io.len);
		break;
	case VBUS_BLK_OP_WRITE_ZEROES:
		s->zmode = zeroes_mode(b, s);
		io_uring_prep_fallocate(sqe, fd, s->zmode, s->io.offset,
					s->io.len);
		break;
	default:
		return -EINVAL;
	}
	io_uring_sqe_set_data64(sqe, vbus_blk_tag(b, qi, slot));
	b->submit_pending = true;
	return 0;
}

static void file_submit(struct vbus_blk *b)
{
	int ret;

	if (!b->submit_pending)
		return;
	ret = io_uring_submit(&b->ring);
	if (ret == -EAGAIN || ret == -EBUSY || ret == -EINTR) {
		/*
		 * The kernel is short of memory or its CQ overflowed: the
		 * SQEs stay queued; try again after the loop's other fds
		 * (completions among them), not in a loop here.
		 */
		b->st.submit_retries++;
		hostd_kick(&b->kick);
		return;
	}
	b->submit_pending = false;
	if (ret < 0)
		hostd_dev_log(b->dev, "vbus-blk: io_uring_submit: %s",
			      strerror(-ret));
}

/* Ask the kernel to cancel everything of ours it has not finished. */
void vbus_blk_backend_cancel_all(struct vbus_blk *b)
{
	struct io_uring_sqe *sqe = get_sqe(b);

	if (!sqe)
		return;
	io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
	io_uring_sqe_set_data64(sqe, VBLK_TAG_CANCEL);
	b->submit_pending = true;
	file_submit(b);
}

/*
 * ctl resize: a regular file grows sparse (ftruncate: no data written,
 * as qemu-img resize without preallocation); a block device's size is
 * its own (lvextend, ...).
 */
static int file_resize(struct vbus_blk *b, __u64 bytes)
{
	if (b->blkdev)
		return hostd_dev_fail(b->dev, -EOPNOTSUPP,
				      "resize: " WHAT " %s is a block device: grow it with its own tools",
				      b->path);
	if (ftruncate(b->fd_buffered, (off_t)bytes) < 0)
		return hostd_dev_fail(b->dev, -errno, "resize: " WHAT " %s: %s",
				      b->path, strerror(errno));
	return 0;
}

static void file_stats(struct vbus_blk *b, struct hostd_stats_out *out)
{
	hostd_stat_str(out, "file", b->path);
	hostd_stat_u64(out, "direct", b->direct);
}

const struct vbus_blk_backend_ops vbus_blk_file_ops = {
	.name = "file",
	.open = file_open,
	.close = file_close,
	.queue = file_queue,
	.submit = file_submit,
	.stats = file_stats,
	.resize = file_resize,
};
