// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The "vbus-blk" device type (alias "virtual-block"): a disk backed by a
 * regular file or a block device, I/O through io_uring (vbus_blk_file.c),
 * or by an NBD server's export (vbus_blk_nbd.c). Protocol: the
 * docs/devices/vbus_blk.md; ABI: <vbus/vbus_blk.h>.
 *
 * Params: file=PATH, nbd=URI or image=PATH (one of them; a file is
 * claimed: no other device of the daemon may use it; an image is served
 * by a qemu-storage-daemon of the device's, see vbus_blk_image.c, in
 * image_format=FMT or the one qemu-img finds), nbd_timeout=SECONDS (nbd: how long a
 * request may wait for the server, 1..3600, default 30), nbd_conns=N
 * (nbd: connections when the server advertises multi-conn, one per
 * queue up to N, 0..16, default 0: as many as queues), ro=0|1, serial=STR (<= 20 bytes; default "vbus-" and a hash of
 * the canonical path), queues=N (max queues offered, 1..16, default
 * min(4, CPUs)), depth=N (max descriptors per queue ring, a power of two
 * up to 1024, default 128), segs=N (max segments per request, 1..256,
 * default 128), max_sectors=N (per request, default 2048), discard=0|1
 * (offer DISCARD and WRITE_ZEROES, default 1 unless ro), direct=auto|0|1
 * (O_DIRECT, see vbus_blk_file.c), strict=0|1 (1: a malformed request
 * faults the device instead of being answered S_BADREQ),
 * doorbell_mask_us=N (0..1000000, default 1000; 0: never mask the guest's
 * doorbells while I/O is in flight, see vbus_blk_mask.c), compat=v1
 * (offer only the first host's features: an old host, for tests).
 * threads=N (the library's, device.h: file= only) serves queue q from
 * queue thread q mod N (vbus_blk_thread.c).
 *
 * The ops run on the guest's loop thread (device.h); without threads= so
 * does everything else: no locks.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include "vbus_blk_dev.h"
#include "vbus_blk_image.h"

/*
 * The offered feature set (config.features). compat=v1 offers what the
 * first vbus-blk host did (no TOPOLOGY, no RESIZE), as an old host would.
 */
static __u32 vbus_blk_features_offered(const struct vbus_blk *b)
{
	__u32 f = VBUS_BLK_F_FLUSH | VBUS_BLK_F_FUA;
	__u32 later = b->compat_v1 ? 0 :
		      VBUS_BLK_F_TOPOLOGY | VBUS_BLK_F_RESIZE;

	if (b->ro)
		return (f & b->be_features) | VBUS_BLK_F_RO | later;
	if (b->discard)
		f |= VBUS_BLK_F_DISCARD | VBUS_BLK_F_WRITE_ZEROES;
	/* what the backend can do (an NBD server's flags) */
	f &= b->be_features;
	/* a range list: each backend serves one as its ranges, one by one */
	if ((f & VBUS_BLK_F_DISCARD) && !b->compat_v1)
		f |= VBUS_BLK_F_DISCARD_RANGES;
	return f | later;
}

/* ---- params ---------------------------------------------------------------- */

static int param_bool(struct vbus_blk *b, const struct hostd_params *p,
		      const char *key, bool def, bool *out)
{
	const char *s = hostd_param_get(p, key);

	if (!s) {
		*out = def;
		return 0;
	}
	if (strcmp(s, "0") && strcmp(s, "1"))
		return hostd_dev_fail(b->dev, -EINVAL, "%s=%s: want 0 or 1",
				      key, s);
	*out = s[0] == '1';
	return 0;
}

static int param_u32(struct vbus_blk *b, const struct hostd_params *p,
		     const char *key, __u32 def, __u32 min, __u32 max,
		     bool power_of_two, __u32 *out)
{
	const char *s = hostd_param_get(p, key);
	unsigned long v;
	char *end;

	*out = def;
	if (!s)
		return 0;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max ||
	    (power_of_two && (v & (v - 1))))
		return hostd_dev_fail(b->dev, -EINVAL,
				      "%s=%s: want %s in %u..%u", key, s,
				      power_of_two ? "a power of two" : "a number",
				      min, max);
	*out = (__u32)v;
	return 0;
}

/* "vbus-" and 15 hex digits of a hash of the path: stable, <= 20 bytes */
static void default_serial(struct vbus_blk *b)
{
	__u64 h = 0xcbf29ce484222325ull;
	const char *c;
	char s[32];

	for (c = b->path; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
	snprintf(s, sizeof(s), "vbus-%015llx",
		 (unsigned long long)(h >> 4));
	memcpy(b->serial, s, VBUS_BLK_SERIAL_LEN);
}

/* the io_uring file backend's own params: refused with nbd= */
static int params_nbd_only(struct vbus_blk *b, const struct hostd_params *p)
{
	static const char *const file_only[] = {
		"direct", "poll_us", "iowq_workers", NULL
	};
	unsigned int i;

	for (i = 0; file_only[i]; i++)
		if (hostd_param_get(p, file_only[i]))
			return hostd_dev_fail(b->dev, -EINVAL,
					      "%s= applies to file= only, not to nbd=",
					      file_only[i]);
	return 0;
}

/* one backing store: file=, nbd= or image= */
static int params_one(struct vbus_blk *b, const struct hostd_params *p)
{
	static const char *const keys[] = { "file", "nbd", "image", NULL };
	unsigned int i, n = 0;

	for (i = 0; keys[i]; i++)
		n += hostd_param_get(p, keys[i]) != NULL;
	if (n > 1)
		return hostd_dev_fail(b->dev, -EINVAL,
				      "vbus-blk takes one of file=PATH, nbd=URI "
				      "and image=PATH");
	if (!hostd_param_get(p, "image") && hostd_param_get(p, "image_format"))
		return hostd_dev_fail(b->dev, -EINVAL,
				      "image_format= applies to image= only");
	return 0;
}

/* nbd=URI: the NBD backend (vbus_blk_nbd.c checks the URI itself) */
static int params_nbd(struct vbus_blk *b, const struct hostd_params *p,
		      const char *uri)
{
	int ret;

	if (!*uri)
		return hostd_dev_fail(b->dev, -EINVAL,
				      "nbd=: want a URI (nbd://HOST[:PORT]/EXPORT "
				      "or nbd+unix:///EXPORT?socket=PATH)");
	if (strlen(uri) >= sizeof(b->path))
		return hostd_dev_fail(b->dev, -ENAMETOOLONG,
				      "nbd=%s: URI too long", uri);
	snprintf(b->path, sizeof(b->path), "%s", uri);
	b->be = &vbus_blk_nbd_ops;
	ret = params_nbd_only(b, p);
	if (!ret)
		ret = param_u32(b, p, "nbd_timeout", VBLK_DEF_NBD_TIMEOUT_S, 1,
				VBLK_MAX_NBD_TIMEOUT_S, false,
				&b->nbd_timeout_s);
	if (!ret)
		ret = param_u32(b, p, "nbd_conns", 0, 0, VBUS_BLK_MAX_QUEUES,
				false, &b->nbd_conns);
	return ret;
}

static int params_file(struct vbus_blk *b, const struct hostd_params *p)
{
	const char *s = hostd_param_get(p, "file");
	const char *uri = hostd_param_get(p, "nbd");
	char real[PATH_MAX];
	int ret = params_one(b, p);

	if (ret < 0)
		return ret;
	if (hostd_param_get(p, "image"))
		return params_nbd(b, p, "image");	/* the URI comes later */
	if (uri)
		return params_nbd(b, p, uri);
	b->be = &vbus_blk_file_ops;
	if (hostd_param_get(p, "nbd_timeout"))
		return hostd_dev_fail(b->dev, -EINVAL,
				      "nbd_timeout= applies to nbd= and image= only");
	if (hostd_param_get(p, "nbd_conns"))
		return hostd_dev_fail(b->dev, -EINVAL,
				      "nbd_conns= applies to nbd= and image= only");
	if (!s || !*s)
		return hostd_dev_fail(b->dev, -EINVAL,
				      "vbus-blk needs file=PATH (a regular file "
				      "or a block device) or nbd=URI (an NBD export)");
	/* one name per file, for the claim: the canonical one when it exists */
	if (!realpath(s, real))
		snprintf(real, sizeof(real), "%s", s);
	if (strlen(real) >= sizeof(b->path))
		return hostd_dev_fail(b->dev, -ENAMETOOLONG,
				      "file=%s: path too long", s);
	snprintf(b->path, sizeof(b->path), "%s", real);
	return 0;
}

static int params_misc(struct vbus_blk *b, const struct hostd_params *p)
{
	const char *s;
	bool flag = true;
	int ret;

	s = hostd_param_get(p, "serial");
	if (s && strlen(s) > VBUS_BLK_SERIAL_LEN)
		return hostd_dev_fail(b->dev, -EINVAL,
				      "serial=%s: at most %d bytes", s,
				      VBUS_BLK_SERIAL_LEN);
	if (s)
		strncpy(b->serial, s, VBUS_BLK_SERIAL_LEN);
	else
		default_serial(b);
	s = hostd_param_get(p, "direct");
	if (!s || !strcmp(s, "auto"))
		b->direct_want = -1;
	else if (!strcmp(s, "0") || !strcmp(s, "1"))
		b->direct_want = s[0] - '0';
	else
		return hostd_dev_fail(b->dev, -EINVAL,
				      "direct=%s: want auto, 0 or 1", s);
	ret = param_bool(b, p, "strict", false, &b->strict);
	if (!ret)
		ret = param_bool(b, p, "discard", true, &flag);
	b->discard = flag;
	s = hostd_param_get(p, "compat");
	if (!ret && s && strcmp(s, "v1"))
		return hostd_dev_fail(b->dev, -EINVAL,
				      "compat=%s: want v1 (offer only the first "
				      "vbus-blk host's features)", s);
	b->compat_v1 = s != NULL;
	return ret;
}

static int vbus_blk_params(struct vbus_blk *b, const struct hostd_params *p)
{
	static const char *const known[] = {
		"file", "ro", "serial", "queues", "depth", "segs",
		"max_sectors", "discard", "direct", "strict",
		"doorbell_mask_us", "poll_us", "iowq_workers", "nbd",
		"nbd_timeout", "nbd_conns", "image", "image_format", "compat",
		NULL
	};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	__u32 defq = ncpu > 0 && ncpu < 4 ? (__u32)ncpu : 4;
	int ret;

	ret = hostd_params_check(b->dev, p, known);
	if (!ret)
		ret = params_file(b, p);
	if (!ret)
		ret = vbus_blk_threads_check(b, p);
	if (!ret)
		ret = param_bool(b, p, "ro", false, &b->ro);
	if (!ret)
		ret = param_u32(b, p, "queues", defq, 1, VBUS_BLK_MAX_QUEUES,
				false, &b->max_queues);
	if (!ret)
		ret = param_u32(b, p, "depth", VBLK_DEF_DEPTH, 1,
				VBUS_BLK_MAX_DEPTH, true, &b->max_depth);
	if (!ret)
		ret = param_u32(b, p, "segs", VBLK_DEF_SEGS, 1,
				VBUS_BLK_MAX_SEGS, false, &b->max_segs);
	if (!ret)
		ret = param_u32(b, p, "max_sectors", VBLK_DEF_MAX_SECTORS, 8,
				1u << 16, false, &b->max_sectors);
	if (!ret)
		ret = param_u32(b, p, "doorbell_mask_us", VBLK_DEF_MASK_US, 0,
				VBLK_MAX_MASK_US, false, &b->mask_us);
	if (!ret)
		ret = param_u32(b, p, "poll_us", 0, 0, VBLK_MAX_POLL_US, false,
				&b->poll_us);
	if (!ret)
		ret = param_u32(b, p, "iowq_workers", VBLK_DEF_IOWQ, 1,
				VBLK_MAX_IOWQ, false, &b->iowq_workers);
	if (!ret)
		ret = params_misc(b, p);
	return ret;
}

/* ---- ops ----------------------------------------------------------------- */

static void on_kick(struct hostd_dev *dev, void *arg)
{
	(void)dev;
	vbus_blk_backend_submit(arg);
}

static void vbus_blk_free(struct vbus_blk *b)
{
	vbus_blk_threads_destroy(b);	/* before the file they read */
	if (b->efd_watched)
		hostd_fd_del(b->dev, b->efd);
	if (b->kick.dev)
		hostd_kick_fini(&b->kick);
	vbus_blk_mask_fini(b);
	if (b->be)
		b->be->close(b);
	vbus_blk_image_close(b);	/* after the connection to it */
	free(b);
}

static int vbus_blk_create(struct hostd_dev *dev, const struct hostd_params *p)
{
	struct vbus_blk *b = calloc(1, sizeof(*b));
	bool pending;
	int ret;

	if (!b)
		return -ENOMEM;
	b->dev = dev;
	b->fd = b->fd_buffered = b->efd = b->mask_tfd = -1;
	ret = vbus_blk_params(b, p);
	if (!ret && hostd_param_get(p, "image"))
		ret = vbus_blk_image_open(b, hostd_param_get(p, "image"),
					  hostd_param_get(p, "image_format"));
	if (!ret)
		ret = b->be->open(b);
	/* nbd on a running guest: ready once connected (vbus_blk_nbd_conn.c) */
	pending = ret == HOSTD_DEV_PENDING;
	if (pending)
		ret = 0;
	/* a backend that knows nothing better: the physical block */
	if (!ret && !b->topo.io_min)
		b->topo.io_min = b->pbs;
	if (!ret)
		ret = hostd_kick_init(dev, &b->kick, on_kick, b);
	/* the file backend's completions; nbd watches its own socket */
	if (!ret && b->efd >= 0)
		ret = hostd_fd_add(dev, b->efd, EPOLLIN, vbus_blk_completions, b);
	if (!ret && b->efd >= 0)
		b->efd_watched = true;
	if (!ret)
		ret = vbus_blk_mask_init(b);
	if (!ret)
		ret = vbus_blk_threads_create(b);
	if (ret < 0) {
		vbus_blk_free(b);
		return ret;
	}
	hostd_dev_set_priv(dev, b);
	return pending ? HOSTD_DEV_PENDING : 0;
}

static void vbus_blk_destroy(struct hostd_dev *dev)
{
	vbus_blk_free(hostd_dev_priv(dev));
	hostd_dev_set_priv(dev, NULL);
}

static int vbus_blk_open(struct hostd_dev *dev, __u32 version)
{
	struct vbus_blk *b = hostd_dev_priv(dev);

	if (version != VBUS_BLK_VERSION)
		return -EPROTO;
	b->open = true;
	b->negotiated = false;
	b->features = 0;
	b->nr_queues = b->depth = 0;
	/* completions of an earlier session are recognized as stale */
	b->session++;
	vbus_blk_threads_sync(b);
	return 0;
}

static void vbus_blk_close(struct hostd_dev *dev)
{
	struct vbus_blk *b = hostd_dev_priv(dev);
	unsigned int i;

	/*
	 * Nothing of io_uring may write guest memory after we let go of it:
	 * cancel, wait (bounded), then drop the rings. No guest memory is
	 * touched here (no status, no pop). A backend without io_uring lets
	 * go of its requests itself (nbd: its own buffers, never the guest's).
	 */
	if (b->be->session_end)
		b->be->session_end(b);
	/* the queue threads' queues first: nothing runs on them after it */
	vbus_blk_threads_close(b);
	vbus_blk_queues_drain(b);
	hostd_kick_cancel(&b->kick);
	vbus_blk_mask_reset(b);
	for (i = 0; i < VBUS_BLK_MAX_QUEUES; i++)
		vbus_blk_queue_detach(&b->q[i]);
	vbus_blk_events_detach(b);
	b->open = false;
	b->negotiated = false;
	b->nr_queues = b->depth = 0;
}

static int call_getconfig(struct vbus_blk *b, void *buf)
{
	struct vbus_blk_config c;
	__u32 f = vbus_blk_features_offered(b);

	memset(&c, 0, sizeof(c));
	c.capacity = b->capacity;
	c.logical_block_size = b->lbs;
	c.physical_block_size = b->pbs;
	c.max_segments = b->max_segs;
	c.max_segment_size = VBLK_MAX_SEG_SIZE;
	c.max_sectors = b->max_sectors;
	c.max_queues = b->max_queues;
	c.max_queue_depth = b->max_depth;
	c.features = f;
	c.max_discard_sectors = f & VBUS_BLK_F_DISCARD ? VBLK_MAX_DISCARD : 0;
	c.max_write_zeroes_sectors =
		f & VBUS_BLK_F_WRITE_ZEROES ? VBLK_MAX_DISCARD : 0;
	c.discard_granularity = b->pbs;
	c.max_discard_ranges =
		f & VBUS_BLK_F_DISCARD_RANGES ? VBLK_MAX_DISCARD_RANGES : 0;
	memcpy(c.serial, b->serial, sizeof(c.serial));
	memcpy(buf, &c, sizeof(c));
	return 0;
}

/* only while offered: an old host answers -EINVAL to a func it lacks */
static int call_gettopology(struct vbus_blk *b, void *buf)
{
	if (!(vbus_blk_features_offered(b) & VBUS_BLK_F_TOPOLOGY))
		return -EINVAL;
	memcpy(buf, &b->topo, sizeof(b->topo));
	return 0;
}

static int call_negotiate(struct vbus_blk *b, void *buf)
{
	struct vbus_blk_negotiate n;

	memcpy(&n, buf, sizeof(n));
	/* the queues' ring size and formats follow: once per open */
	if (b->negotiated)
		return -EBUSY;
	if (n.reserved || !n.nr_queues || !n.queue_depth ||
	    n.queue_depth > b->max_depth ||
	    (n.queue_depth & (n.queue_depth - 1)))
		return -EINVAL;
	n.features &= vbus_blk_features_offered(b);
	if (n.nr_queues > b->max_queues)
		n.nr_queues = b->max_queues;
	b->features = n.features;
	b->nr_queues = n.nr_queues;
	b->depth = n.queue_depth;
	b->negotiated = true;
	memcpy(buf, &n, sizeof(n));
	return 0;
}

static int vbus_blk_call(struct hostd_dev *dev, __u32 func, void *buf, __u32 len)
{
	struct vbus_blk *b = hostd_dev_priv(dev);

	switch (func) {
	case VBUS_BLK_FUNC_GETCONFIG:
		if (len != sizeof(struct vbus_blk_config))
			return -EINVAL;
		return call_getconfig(b, buf);
	case VBUS_BLK_FUNC_NEGOTIATE:
		if (len != sizeof(struct vbus_blk_negotiate))
			return -EINVAL;
		return call_negotiate(b, buf);
	case VBUS_BLK_FUNC_GETTOPOLOGY:
		if (len != sizeof(struct vbus_blk_topology))
			return -EINVAL;
		return call_gettopology(b, buf);
	default:
		return -EINVAL;
	}
}

static int vbus_blk_shm(struct hostd_dev *dev, struct hostd_shm *shm)
{
	if (shm->id == VBUS_BLK_SHM_EVENTS)
		return vbus_blk_events_attach(hostd_dev_priv(dev), shm);
	if (((struct vbus_blk *)hostd_dev_priv(dev))->nshards)
		return vbus_blk_threads_attach(hostd_dev_priv(dev), shm);
	return vbus_blk_queue_attach(hostd_dev_priv(dev), shm);
}

static void stats_latency(const struct vbus_blk_stats *st,
			  struct hostd_stats_out *out)
{
	char key[32];
	unsigned int i;

	/* bucket i: latency < 2^i us (the last: everything slower) */
	for (i = 0; i < VBLK_LAT_BUCKETS; i++) {
		if (i == VBLK_LAT_BUCKETS - 1)
			snprintf(key, sizeof(key), "lat_ge_%lluus",
				 1ull << (i - 1));
		else
			snprintf(key, sizeof(key), "lat_lt_%lluus", 1ull << i);
		hostd_stat_u64(out, key, st->lat[i]);
	}
}

static void vbus_blk_stats(struct hostd_dev *dev, struct hostd_stats_out *out)
{
	struct vbus_blk *b = hostd_dev_priv(dev);
	struct vbus_blk_stats sum = b->st;
	const struct vbus_blk_stats *s = &sum;
	unsigned int inflight = b->inflight;
	char serial[VBUS_BLK_SERIAL_LEN + 1];

	hostd_stat_str(out, "backend", b->be->name);
	/* threads=N: each shard's, copied on its thread */
	vbus_blk_threads_stats(b, &sum, &inflight, out);
	b->be->stats(b, out);
	vbus_blk_image_stats(b, out);
	memcpy(serial, b->serial, VBUS_BLK_SERIAL_LEN);
	serial[VBUS_BLK_SERIAL_LEN] = '\0';
	hostd_stat_str(out, "serial", serial);
	hostd_stat_u64(out, "ro", b->ro);
	hostd_stat_u64(out, "capacity", b->capacity);
	hostd_stat_u64(out, "logical_block_size", b->lbs);
	hostd_stat_u64(out, "physical_block_size", b->pbs);
	hostd_stat_u64(out, "io_min", b->topo.io_min);
	hostd_stat_u64(out, "io_opt", b->topo.io_opt);
	hostd_stat_u64(out, "alignment_offset", b->topo.alignment_offset);
	hostd_stat_u64(out, "nonrot", !!(b->topo.flags & VBUS_BLK_TOPO_NONROT));
	hostd_stat_u64(out, "offered", vbus_blk_features_offered(b));
	hostd_stat_u64(out, "features", b->features);
	hostd_stat_u64(out, "queues", b->nr_queues);
	hostd_stat_u64(out, "queue_depth", b->depth);
	hostd_stat_u64(out, "inflight", inflight);
#define S(name) hostd_stat_u64(out, #name, s->name)
	S(reads); S(writes); S(flushes); S(discards); S(write_zeroes);
	S(discard_ranges); S(multi_range_discards);
	S(get_ids); S(bytes_read); S(bytes_written); S(fua_writes);
	S(buffered_ios); S(io_errors); S(bad_requests); S(unsupported);
	S(batches); S(zero_fallbacks); S(submit_retries); S(drain_timeouts);
	S(masks); S(mask_polls); S(mask_timeouts);
	S(polls); S(poll_hits); S(poll_ns); S(resizes); S(resize_events);
#undef S
	stats_latency(s, out);
}

static const struct hostd_dev_type vbus_blk_type = {
	.name = VBUS_BLK_TYPE,
	.alias = VBUS_BLK_TYPE_ALIAS,
	.create = vbus_blk_create,
	.destroy = vbus_blk_destroy,
	.open = vbus_blk_open,
	.close = vbus_blk_close,
	.call = vbus_blk_call,
	.shm = vbus_blk_shm,
	.stats = vbus_blk_stats,
	.ctl = vbus_blk_ctl,
	.threads = true,
};

HOSTD_DEV_TYPE(vbus_blk_type);
