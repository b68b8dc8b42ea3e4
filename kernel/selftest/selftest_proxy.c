// SPDX-License-Identifier: GPL-2.0
/*
 * A hostile host for vbus_driver_ioq_alloc() (kernel/bus/bus_proxy.c), the
 * ring helper every driver allocates its rings with. A fake bridge's shm
 * op registers the ring as the PCI bridge does (the signal goes into its
 * "cookie table", here one pointer holding a reference) and then does what
 * a host may do once DEVSHM is answered: it rewrites the ring's version.
 * Issue 20.4: the helper read the version back, so a rewritten one freed
 * the ring while the table still held the signal whose descriptor is in
 * it (a use-after-free on the next SHMSIGNAL), or bound the ioq to the
 * wrong layout.
 *
 * vbus_proxy is not a dependency of this module (the default run loads
 * only vbus_core): the cases reach vbus_driver_ioq_alloc() through
 * symbol_get() and run with proxy_cases=1 and vbus_proxy loaded
 * (tests/qemu/suites/kernel/guest.sh, check_proxy). Without vbus_proxy
 * they fail, never pass.
 */
#define pr_fmt(fmt) "vbus_selftest: " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/dma-mapping.h>
#include <vbus/vbus_driver.h>
#include "selftest.h"

#define VST_PROXY_COUNT 16

/* The fake bridge: one device, one registered signal, what the host writes. */
struct vst_proxy {
	struct vbus_device_proxy dev;
	struct vbus_device_proxy_ops ops;
	struct shm_signal *table;	/* the cookie table's reference */
	u32 host_ver;			/* written over head->ver after DEVSHM */
	bool v5_only;			/* refuses a v6 ring, as a v5 host */
};

static int vst_proxy_inject(struct shm_signal *s)
{
	return 0;
}

static void vst_proxy_signal_release(struct shm_signal *s)
{
	kfree(s);
}

static const struct shm_signal_ops vst_proxy_signal_ops = {
	.inject = vst_proxy_inject,
	.release = vst_proxy_signal_release,
};

/* DEVSHM: register, answer, and the host writes the ring at once. */
static int vst_proxy_shm(struct vbus_device_proxy *dev, int id, int prio,
			 void *ptr, dma_addr_t dma, size_t len,
			 struct shm_signal_desc *sigdesc,
			 struct shm_signal **signal, int flags)
{
	struct vst_proxy *p = container_of(dev, struct vst_proxy, dev);
	struct ioq_ring_head *head = ptr;
	struct shm_signal *s;

	/* a v5-only host's ring check answers -EPROTO (transport.md) */
	if (p->v5_only && READ_ONCE(head->ver) != IOQ_RING_VER_V5)
		return -EPROTO;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	shm_signal_init(s, shm_locality_north, &vst_proxy_signal_ops, sigdesc);
	p->table = shm_signal_get(s);
	*signal = s;
	WRITE_ONCE(head->ver, p->host_ver);
	return 0;
}

/* The device closes: the table lets go of the signal. */
static void vst_proxy_close(struct vst_proxy *p)
{
	if (p->table) {
		vbus_defer_cancel(&p->table->deferred_notify);
		shm_signal_put(p->table);
		p->table = NULL;
	}
}

typedef int (*vst_ioq_alloc_fn)(struct vbus_device_proxy *, int, int,
				size_t, struct ioq **);

/*
 * Allocate a ring through the fake bridge whose host writes @host_ver
 * into it; the case passes when the ring comes back bound to the version
 * the helper laid out (6, or 5 for a @v5_only host) and intact.
 */
static void vst_proxy_case(const char *name, vst_ioq_alloc_fn alloc,
			   u32 host_ver, bool v5_only)
{
	u32 want = v5_only ? IOQ_RING_VER_V5 : IOQ_RING_VER_V6;
	struct vst_proxy *p = kzalloc(sizeof(*p), GFP_KERNEL);
	struct ioq *ioq = NULL;
	int ret;

	if (!p) {
		vst_fail(name, "no memory");
		return;
	}
	p->ops.shm = vst_proxy_shm;
	p->dev.ops = &p->ops;
	/* the ring is a coherent allocation: dma-direct on a bare device */
	p->dev.dev.coherent_dma_mask = DMA_BIT_MASK(64);
	p->dev.dev.dma_mask = &p->dev.dev.coherent_dma_mask;
	p->dev.dma_dev = &p->dev.dev;
	p->host_ver = host_ver;
	p->v5_only = v5_only;

	ret = alloc(&p->dev, 0, 0, VST_PROXY_COUNT, &ioq);
	if (ret)
		vst_fail(name, "ring alloc returned %d with the signal registered",
			 ret);
	else if (ioq->ver != want)
		vst_fail(name, "ring bound as v%u, laid out as v%u", ioq->ver,
			 want);
	else if (shm_signal_faulted(ioq->signal))
		vst_fail(name, "ring faulted");
	else
		vst_pass(name);

	/* as a driver's remove: close first, then the last ioq_put() */
	vst_proxy_close(p);
	if (!ret)
		ioq_put(ioq);
	kfree(p);
}

void vst_run_proxy_cases(void)
{
	vst_ioq_alloc_fn alloc = symbol_get(vbus_driver_ioq_alloc);

	if (!alloc) {
		vst_fail("bus_proxy", "vbus_proxy is not loaded");
		return;
	}
	vst_proxy_case("bus_proxy/ioq_alloc_keeps_version_host_rewrote_to_v5",
		       alloc, IOQ_RING_VER_V5, false);
	vst_proxy_case("bus_proxy/ioq_alloc_keeps_version_host_rewrote_unknown",
		       alloc, 99, false);
	vst_proxy_case("bus_proxy/ioq_alloc_v5_fallback_keeps_v5_host_rewrote_to_v6",
		       alloc, IOQ_RING_VER_V6, true);
	symbol_put(vbus_driver_ioq_alloc);
}
