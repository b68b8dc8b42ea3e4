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
#include "device.h"

struct vtest {
	struct hostd_dev *dev;
	bool ring_open;
	struct ioq ioq;
	struct ioq_notifier notifier;
	struct hostd_kick kick;	/* "come back, there is more" */
	__u64 rounds;		/* consume passes */
	__u64 requeues;		/* passes that hit the budget */
};

/* A descriptor the guest got wrong: kept to fault with once the batch is back */
struct bad_desc {
	__u64 ptr, len;
};

/*
 * One descriptor: XOR its buffer. false: it is bad (*@bad says how); the
 * caller hands back the good ones before it and then faults the device.
 */
static bool consume_one(struct vtest *t, const struct ioq_ring_desc *desc,
			__u64 *bytes, struct bad_desc *bad)
{
	unsigned char *p = NULL;
	__u64 i;

	/* ptr and len once each: the guest may rewrite them meanwhile */
	bad->ptr = VBUS_READ(desc->ptr);
	bad->len = VBUS_READ(desc->len);
	if (bad->len && bad->len <= VBUS_TEST_MAX_BUF)
		p = hostd_dev_gpa(t->dev, bad->ptr, bad->len);
	if (!p)
		return false;
	for (i = 0; i < bad->len; i++)
		p[i] ^= VBUS_TEST_XOR;
	*bytes += bad->len;
	return true;
}

/* The same messages as hostd_desc_buf()'s and the length check's */
static void fault_bad(struct vtest *t, const struct bad_desc *bad)
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
 * of valid's head and one signal. A bad descriptor ends the batch: the
 * good ones before it go back, then the device faults.
 */
static void consume(struct vtest *t)
{
	struct hostd_dev *dev = t->dev;
	unsigned int size, done = 0;
	struct bad_desc bad;
	__u64 bytes = 0;
	__u32 pos;
	int n;

	if (!t->ring_open || hostd_dev_faulted(dev))
		return;
	t->rounds++;
	size = (unsigned int)ioq_size(&t->ioq);
	/* [A1] inside: the tail before the bodies it covers */
	n = ioq_consume_begin(&t->ioq, size, &pos);
	if (n <= 0)
		return;	/* empty, or a bad tail faulted the channel */
	while (done < (unsigned int)n &&
	       consume_one(t, ioq_desc(&t->ioq, pos + done), &bytes, &bad))
		done++;
	/* [R2] inside: our buffer writes before valid's head */
	if (done && ioq_consume_end(&t->ioq, done, 0) < 0) {
		hostd_dev_fault(dev, "ring: consume failed");
		return;
	}
	if (done) {
		hostd_dev_account(dev, done, bytes);
		ioq_signal(&t->ioq, 0);
	}
	if (done < (unsigned int)n) {
		fault_bad(t, &bad);
	} else if (done == size) {
		t->requeues++;
		hostd_kick(&t->kick);
	}
}

static void on_notify(struct ioq_notifier *n)
{
	consume(hostd_container_of(n, struct vtest, notifier));
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
	if (t->ring_open) {
		t->ring_open = false;
		ioq_put(&t->ioq);
	}
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
		if (!t->ring_open)
			return -ENOENT;
		return ioq_signal(&t->ioq, 0);
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
	if (t->ring_open)
		return -EBUSY;
	ret = hostd_shm_ioq(shm, &t->ioq, NULL, 0);
	if (ret < 0)
		return ret;
	if (ioq_size(&t->ioq) > VBUS_TEST_MAX_RING) {
		ioq_put(&t->ioq);
		return -EINVAL;
	}
	t->notifier.signal = on_notify;
	t->ioq.notifier = &t->notifier;
	t->ring_open = true;
	ioq_notify_enable(&t->ioq, 0);
	/* anything posted before the registration */
	consume(t);
	return 0;
}

static void vtest_stats(struct hostd_dev *dev, struct hostd_stats_out *out)
{
	struct vtest *t = hostd_dev_priv(dev);

	hostd_stat_u64(out, "ring", t->ring_open ? (__u64)ioq_size(&t->ioq) : 0);
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
