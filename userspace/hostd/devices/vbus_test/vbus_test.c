// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the "vbus-test" device, for the guest-side bus tests and for
 * measuring the transport (ABI <vbus/vbus_test.h>, protocol in
 * docs/devices/vbus_test.md).
 *
 *   DEVOPEN version 1
 *   CALL 0  echo: the buffer comes back with every byte XOR 0x5a
 *   CALL 1  inject the ring's signal (a SHMSIGNAL event when the guest's
 *           side is enabled and not already pending): event round trip
 *   SHM 0   an IOQ ring with its embedded signal: every descriptor the
 *           guest posts is consumed, its payload XORed with 0x5a in place,
 *           popped back, and the ring signalled.
 *
 * It is also the worked example of docs/adding-a-device.md: every guest
 * value is read once and translated per use; bad descriptors fault the
 * device.
 */
#include <errno.h>
#include <stdlib.h>
#include <vbus/vbus_test.h>
#include "devq.h"

struct vtest {
	struct hostd_dev *dev;
	struct hostd_devq ring;	/* SHM 0 */
	struct hostd_kick kick;	/* "come back, there is more" */
	__u64 rounds;		/* consume passes */
	__u64 requeues;		/* passes that hit the budget */
};

/* One pass's state: the bytes it moved, the descriptor that ended it */
struct pass {
	struct vtest *t;
	__u64 bytes;
	bool bad;
	__u64 ptr, len;
};

/*
 * One descriptor: XOR its buffer. A bad one stops the batch (the pass
 * remembers how); the good ones before it go back, then the device faults.
 */
static enum hostd_devq_verdict consume_one(struct hostd_devq *q,
					   struct ioq_ring_desc *desc,
					   void *arg)
{
	struct pass *ps = arg;
	unsigned char *p = NULL;
	__u64 i;

	(void)q;
	/* ptr and len once each: the guest may rewrite them meanwhile */
	ps->ptr = VBUS_READ(desc->ptr);
	ps->len = VBUS_READ(desc->len);
	if (ps->len && ps->len <= VBUS_TEST_MAX_BUF)
		p = hostd_dev_gpa(ps->t->dev, ps->ptr, ps->len);
	if (!p) {
		ps->bad = true;
		return HOSTD_DEVQ_STOP;
	}
	for (i = 0; i < ps->len; i++)
		p[i] ^= VBUS_TEST_XOR;
	ps->bytes += ps->len;
	return HOSTD_DEVQ_CONSUMED;
}

/* The same messages as hostd_desc_buf()'s and the length check's */
static void fault_bad(struct vtest *t, const struct pass *bad)
{
	if (!bad->len || bad->len > VBUS_TEST_MAX_BUF)
		hostd_dev_fault(t->dev, "ring: descriptor len %llu not in 1..%u",
				(unsigned long long)bad->len,
				VBUS_TEST_MAX_BUF);
	else
		hostd_dev_fault(t->dev,
				"descriptor 0x%llx+%llu outside guest RAM",
				(unsigned long long)bad->ptr,
				(unsigned long long)bad->len);
}

/*
 * One pass: claim what the guest posted (at most one ring's worth: a
 * guest that re-posts as fast as we consume must not keep this loop, and
 * its guest's other work, forever; the rest is picked up through the
 * kick), XOR each buffer, then hand the batch back with one publication
 * of valid's head and one signal (hostd_devq_drain). A bad descriptor
 * ends the batch: the good ones before it go back, then the device
 * faults.
 */
static void consume(struct vtest *t)
{
	struct pass ps = { .t = t };
	int n;

	if (!t->ring.attached || hostd_dev_faulted(t->dev))
		return;
	t->rounds++;
	n = hostd_devq_drain(&t->ring, t->ring.size, consume_one, &ps,
			     HOSTD_DEVQ_SIGNAL);
	if (n < 0) {
		/* a bad tail faulted the channel, or our hand-back failed */
		if (!hostd_dev_faulted(t->dev))
			hostd_dev_fault(t->dev, "ring: consume failed");
		return;
	}
	if (n)
		hostd_dev_account(t->dev, (__u64)n, ps.bytes);
	if (ps.bad) {
		fault_bad(t, &ps);
	} else if ((unsigned int)n == t->ring.size) {
		t->requeues++;
		hostd_kick(&t->kick);
	}
}

static void on_signal(struct hostd_devq *q)
{
	consume(q->owner);
}

static void on_kick(struct hostd_dev *dev, void *arg)
{
	(void)dev;
	consume(arg);
}

static int vtest_create(struct hostd_dev *dev, const struct hostd_params *p)
{
	static const char *const known[] = { NULL };
	struct vtest *t;
	int ret;

	ret = hostd_params_check(dev, p, known);
	if (ret < 0)
		return ret;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->dev = dev;
	ret = hostd_kick_init(dev, &t->kick, on_kick, t);
	if (ret < 0) {
		free(t);
		return ret;
	}
	hostd_dev_set_priv(dev, t);
	return 0;
}

static void vtest_destroy(struct hostd_dev *dev)
{
	struct vtest *t = hostd_dev_priv(dev);

	hostd_kick_fini(&t->kick);
	free(t);
}

static int vtest_open(struct hostd_dev *dev, __u32 version)
{
	(void)dev;
	return version == VBUS_TEST_VERSION ? 0 : -EPROTO;
}

static void vtest_close(struct hostd_dev *dev)
{
	struct vtest *t = hostd_dev_priv(dev);

	/* never touch guest memory here: the guest may have freed it */
	hostd_kick_cancel(&t->kick);
	hostd_devq_detach(&t->ring);
}

static int vtest_call(struct hostd_dev *dev, __u32 func, void *buf, __u32 len)
{
	struct vtest *t = hostd_dev_priv(dev);
	unsigned char *p = buf;
	__u32 i;

	switch (func) {
	case VBUS_TEST_FUNC_ECHO:
		for (i = 0; i < len; i++)
			p[i] ^= VBUS_TEST_XOR;
		hostd_dev_account(dev, 0, len);
		return 0;
	case VBUS_TEST_FUNC_SIGNAL:
		if (!t->ring.attached)
			return -ENOENT;
		return hostd_devq_signal(&t->ring);
	default:
		return -EINVAL;
	}
}

static int vtest_shm(struct hostd_dev *dev, struct hostd_shm *shm)
{
	struct vtest *t = hostd_dev_priv(dev);
	int ret;

	if (shm->id != VBUS_TEST_SHM_RING)
		return -EINVAL;
	t->ring.owner = t;
	ret = hostd_devq_attach(&t->ring, shm, 0, on_signal);
	if (ret < 0)
		return ret;
	if (t->ring.size > VBUS_TEST_MAX_RING) {
		hostd_devq_detach(&t->ring);
		return -EINVAL;
	}
	/* listen; anything posted before the registration is consumed now */
	hostd_devq_unmask(&t->ring, 0);
	consume(t);
	return 0;
}

static void vtest_stats(struct hostd_dev *dev, struct hostd_stats_out *out)
{
	struct vtest *t = hostd_dev_priv(dev);

	hostd_stat_u64(out, "ring", t->ring.attached ? (__u64)t->ring.size : 0);
	hostd_stat_u64(out, "rounds", t->rounds);
	hostd_stat_u64(out, "requeues", t->requeues);
}

static const struct hostd_dev_type vbus_test_type = {
	.name = VBUS_TEST_TYPE,
	.create = vtest_create,
	.destroy = vtest_destroy,
	.open = vtest_open,
	.close = vtest_close,
	.call = vtest_call,
	.shm = vtest_shm,
	.stats = vtest_stats,
};

HOSTD_DEV_TYPE(vbus_test_type);
