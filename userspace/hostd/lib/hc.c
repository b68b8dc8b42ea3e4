// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-hostd: the hypercall mailbox (see hc.h).
 *
 * The mailbox is the guest's: we read hc_seq once, copy hc, check the
 * vector and the exact length of its struct, translate datap, copy the
 * struct in, act on the copy (bus.c), copy only the output fields back,
 * then answer in line 2 (hc_result, then hc_done).
 */
#include <errno.h>
#include <string.h>
#include "hc.h"
#include "log.h"

static const __u32 hc_len[VBUS_PCI_HC_MAX] = {
	[VBUS_PCI_HC_NEGOTIATE] = sizeof(struct vbus_pci_negotiate),
	[VBUS_PCI_HC_BUSREG] = sizeof(struct vbus_pci_busreg),
	[VBUS_PCI_HC_DEVOPEN] = sizeof(struct vbus_pci_deviceopen),
	[VBUS_PCI_HC_DEVCLOSE] = sizeof(__u64),
	[VBUS_PCI_HC_DEVCALL] = sizeof(struct vbus_pci_devicecall),
	[VBUS_PCI_HC_DEVSHM] = sizeof(struct vbus_pci_deviceshm),
};

union hc_args {
	struct vbus_pci_negotiate neg;
	struct vbus_pci_busreg busreg;
	struct vbus_pci_deviceopen open;
	__u64 handle;
	struct vbus_pci_devicecall call;
	struct vbus_pci_deviceshm shm;
};

static void hc_answer(struct hostd_hc *hc, __u32 seq, int ret);

void hostd_hc_init(struct hostd_hc *hc, struct hostd_bus *bus,
		   struct hostd_ivshmem *iv, struct hostd_mem *mem)
{
	memset(hc, 0, sizeof(*hc));
	hc->bus = bus;
	hc->iv = iv;
	hc->mem = mem;
}

/*
 * A new QEMU's BAR2 reads hc_done 0; one handed over by an earlier daemon
 * (docs/transport.md, "Host restarts") carries its last answer, and a
 * request that daemon never answered is answered here, -ENOTCONN: we do
 * not know what it was for, and the guest's wait ends at once.
 */
void hostd_hc_connect(struct hostd_hc *hc)
{
	struct vbus_pci_shm *shm = hc->iv->shm;
	__u32 seq;

	hc->last_seq = shm ? VBUS_READ(shm->hc_done) : 0;
	if (!shm)
		return;
	seq = VBUS_READ(shm->hc_seq);
	if (seq != hc->last_seq)
		hc_answer(hc, seq, -ENOTCONN);
}

/* Copy one output field back into the guest's struct at @gp. */
#define hc_out(gp, type, field, val)					\
	memcpy((char *)(gp) + offsetof(type, field), (val),		\
	       sizeof(((type *)0)->field))

static int hc_negotiate(struct hostd_hc *hc, union hc_args *a, void *gp)
{
	__u64 caps;
	int ret = hostd_bus_negotiate(hc->bus, &a->neg, &caps);

	if (!ret)
		hc_out(gp, struct vbus_pci_negotiate, capabilities, &caps);
	return ret;
}

static int hc_devopen(struct hostd_hc *hc, union hc_args *a, void *gp)
{
	__u64 h;
	int ret = hostd_bus_open(hc->bus, &a->open, &h);

	if (!ret)
		hc_out(gp, struct vbus_pci_deviceopen, handle, &h);
	return ret;
}

/* The verbs that need a negotiated, registered, unfaulted bus. */
static int hc_device(struct hostd_hc *hc, __u32 vector, union hc_args *a,
		     void *gp)
{
	switch (vector) {
	case VBUS_PCI_HC_DEVOPEN:
		return hc_devopen(hc, a, gp);
	case VBUS_PCI_HC_DEVCLOSE:
		return hostd_bus_close(hc->bus, a->handle);
	case VBUS_PCI_HC_DEVCALL:
		return hostd_bus_call(hc->bus, &a->call);
	case VBUS_PCI_HC_DEVSHM:
		return hostd_bus_shm(hc->bus, &a->shm);
	default:
		return -EINVAL;
	}
}

/*
 * NEGOTIATE is the bridge's first call and its buffer is kmalloc'ed guest
 * RAM: outside our table it means the guest's RAM is not laid out as
 * size= says (QEMU's -m differs, so the split below/above 4 GiB does).
 * The guest only sees -EFAULT: say here what is wrong, rate-limited.
 */
static void hc_ram_mismatch(struct hostd_hc *hc, __u64 gpa)
{
	const struct hostd_mem *m = hc->mem;
	__u64 low = m->nblocks ? m->blk[0].size : 0;

	hostd_log_limited(hc->bus->env.log,
			  "NEGOTIATE's buffer at guest-physical 0x%llx is outside guest RAM as size=%llu lays it out (%llu bytes below 4 GiB, %llu above): QEMU's -m and its memory-backend size must equal size=",
			  (unsigned long long)gpa, (unsigned long long)m->size,
			  (unsigned long long)low,
			  (unsigned long long)(m->size - low));
}

/* One request, already copied out of the mailbox: the result. */
static int hostd_hc_dispatch(struct hostd_hc *hc,
			     const struct vbus_pci_hypercall *r)
{
	union hc_args a;
	void *gp;

	if (r->vector >= VBUS_PCI_HC_MAX || r->len != hc_len[r->vector])
		return -EINVAL;
	gp = hostd_mem_gpa(hc->mem, r->datap, r->len);
	if (!gp) {
		if (r->vector == VBUS_PCI_HC_NEGOTIATE)
			hc_ram_mismatch(hc, r->datap);
		return -EFAULT;
	}
	/* one copy: the guest may change its buffer while we work */
	memset(&a, 0, sizeof(a));
	memcpy(&a, gp, r->len);

	if (r->vector == VBUS_PCI_HC_NEGOTIATE)
		return hc_negotiate(hc, &a, gp);
	if (r->vector == VBUS_PCI_HC_BUSREG && a.busreg.count == 0) {
		/*
		 * Detach: the bridge is going away and frees the eventq once
		 * we answer. Allowed in any state (nothing to drop is fine).
		 */
		hostd_bus_reset(hc->bus);
		return 0;
	}
	if (!hostd_bus_negotiated(hc->bus))
		return -EPROTO;
	if (r->vector == VBUS_PCI_HC_BUSREG)
		return hostd_bus_register(hc->bus, &a.busreg);
	if (hostd_bus_faulted(hc->bus))
		return -EIO;
	return hc_device(hc, r->vector, &a, gp);
}

/* The request of @seq, read once from the mailbox. */
static void hc_read(struct vbus_pci_shm *shm, struct vbus_pci_hypercall *r)
{
	r->vector = VBUS_READ(shm->hc.vector);
	r->len = VBUS_READ(shm->hc.len);
	r->datap = VBUS_READ(shm->hc.datap);
}

static void hc_answer(struct hostd_hc *hc, __u32 seq, int ret)
{
	struct vbus_pci_shm *shm = hc->iv->shm;

	VBUS_WRITE(shm->hc_result, ret);
	/*
	 * The result (and the output fields copied into the guest's buffer)
	 * before hc_done. Pairs with the guest's rmb after it sees
	 * hc_done == seq and before it reads hc_result and its buffer.
	 */
	vbus_wmb();
	VBUS_WRITE(shm->hc_done, seq);
	hc->last_seq = seq;
	hostd_ivshmem_irq(hc->iv, VBUS_PCI_MSIX_HC);
}

void hostd_hc_doorbell(struct hostd_hc *hc)
{
	struct vbus_pci_shm *shm = hc->iv->shm;
	struct vbus_pci_hypercall r;
	__u32 seq;
	int ret;

	if (!shm)
		return;
	seq = VBUS_READ(shm->hc_seq);
	if (seq == hc->last_seq)
		return;		/* spurious, or already answered */
	/*
	 * hc_seq before the request it announces. Pairs with the guest's
	 * wmb between writing hc and bumping hc_seq.
	 */
	vbus_rmb();
	hc_read(shm, &r);
	hc->calls++;
	if (hc->bus->faults && hc->bus->faults->hc)
		hc->bus->faults->hc(hc->bus, r.vector);
	ret = hostd_hc_dispatch(hc, &r);
	if (ret < 0) {
		hc->errors++;
		hostd_log_debug("%shypercall %u len %u: %d",
				hc->bus->env.log->prefix, r.vector, r.len, ret);
	}
	hc_answer(hc, seq, ret);
}
