// SPDX-License-Identifier: GPL-2.0
/*
 * Hypercalls through the BAR2 mailbox (docs/transport.md, "Hypercalls").
 *
 * The request struct and the call's data buffer are copied into one
 * bounce buffer from dma_alloc_coherent() on the bridge's PCI device
 * (whole pages, so nothing private shares them), which the host reaches at
 * its DMA address: callers may pass stack memory (VMAP_STACK), and a
 * buffer whose call timed out returns to the allocator
 * only once the host answered a later call (it may still write it until
 * then); a host that answers nothing can make us keep at most
 * VBUS_PCI_HC_LEAK_MAX bytes so. One call at a time
 * (hc_lock); the wait is bounded (hc_timeout_ms), never an unbounded spin.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/io.h>
#include <linux/dma-mapping.h>
#include "pci_bridge.h"

static unsigned int vbus_pci_hc_timeout_ms = 5000;
module_param_named(hc_timeout_ms, vbus_pci_hc_timeout_ms, uint, 0644);
MODULE_PARM_DESC(hc_timeout_ms, "hypercall timeout in ms (default 5000)");

/*
 * What a host that stops answering can make us leak: past this, hypercalls
 * fail at once (-EIO) until it has answered the last one we made (late: a
 * stopped host that runs again does). The buffers are small (a request
 * struct, a device call's few bytes), so an honest host that restarts
 * mid-call many times stays far below it: each answer reclaims.
 */
#define VBUS_PCI_HC_LEAK_MAX	(1024 * 1024)

/* A buffer the host may still write (its call was never answered). */
struct vbus_pci_hc_leak {
	struct list_head node;	/* bridge->hc_leaks, under hc_lock */
	void *buf;		/* never read or written by us again */
	dma_addr_t dma;
	size_t len;
};

/* A coherent bounce buffer of @len bytes; its DMA address in *@dma. */
static void *hc_buf_alloc(struct vbus_pci_bridge *b, size_t len,
			  dma_addr_t *dma)
{
	return dma_alloc_coherent(&b->pdev->dev, len, dma, GFP_KERNEL);
}

static void hc_buf_free(struct vbus_pci_bridge *b, void *buf, size_t len,
			dma_addr_t dma)
{
	dma_free_coherent(&b->pdev->dev, len, buf, dma);
}

/*
 * Under hc_lock: the call of @buf was not answered; keep it away from the
 * allocator until the host answers a later one. Without memory for the
 * record, it stays leaked for good (still counted).
 */
static void hc_leak(struct vbus_pci_bridge *b, void *buf, size_t len,
		    dma_addr_t dma)
{
	struct vbus_pci_hc_leak *l = kmalloc(sizeof(*l), GFP_KERNEL);

	vbus_pci_stat_inc(b, hc_leaked);
	WRITE_ONCE(b->hc_leaked_bytes, b->hc_leaked_bytes + len);
	if (!l)
		return;
	l->buf = buf;
	l->dma = dma;
	l->len = len;
	list_add_tail(&l->node, &b->hc_leaks);
}

/*
 * Under hc_lock, once hc_done says the host answered the newest seq we
 * issued (after the virt_rmb that pairs with the host's wmb before its
 * hc_done store, so its writes into the buffers came before). There is
 * one mailbox and the host serves it in order: it reads hc_seq, then the
 * mailbox, answers, and only then looks at hc_seq again. So once it
 * answered the newest call it is done with every earlier buffer (a late
 * answer to an earlier one came before), and a new host (host_epoch)
 * never knew them: they may go back to the allocator.
 */
static void hc_reclaim(struct vbus_pci_bridge *b)
{
	struct vbus_pci_hc_leak *l, *tmp;

	list_for_each_entry_safe(l, tmp, &b->hc_leaks, node) {
		list_del(&l->node);
		WRITE_ONCE(b->hc_leaked_bytes, b->hc_leaked_bytes - l->len);
		hc_buf_free(b, l->buf, l->len, l->dma);
		kfree(l);
	}
}

/*
 * Bridge teardown: the records go; what is still leaked stays so (the
 * host answered nothing since, so it may still write it).
 */
void vbus_pci_hc_forget_leaks(struct vbus_pci_bridge *b)
{
	struct vbus_pci_hc_leak *l, *tmp;

	list_for_each_entry_safe(l, tmp, &b->hc_leaks, node) {
		list_del(&l->node);
		kfree(l);
	}
}

/* MSI-X vector HC (its handler is in pci_bridge_epoch.c). */
void vbus_pci_hc_wake(struct vbus_pci_bridge *b)
{
	/* The waiter re-checks hc_done; a spurious interrupt is harmless. */
	wake_up(&b->hc_wq);
}

static bool hc_done(struct vbus_pci_bridge *b, u32 seq)
{
	return READ_ONCE(b->shm->hc_done) == seq;
}

/* Answered, or no host to answer (docs/transport.md, "Host restarts"). */
static bool hc_over(struct vbus_pci_bridge *b, u32 seq)
{
	return hc_done(b, seq) || READ_ONCE(b->host_down);
}

/*
 * Under hc_lock. The first unanswered hypercall says in plain words what
 * happened and what usually causes it; the ones after it only count
 * (hc_timeouts), until the host answers again. A daemon restarted without
 * systemd or vbus-fdkeeper lost the connection this guest's QEMU still
 * holds: nothing answers until QEMU restarts (docs/operations.md).
 */
static void hc_timed_out(struct vbus_pci_bridge *b, u32 vector, u32 seq,
			 size_t len)
{
	if (b->hc_unanswered) {
		dev_dbg(&b->pdev->dev,
			"hypercall %u (seq %u) timed out; leaking its %zu-byte buffer\n",
			vector, seq, len);
		return;
	}
	b->hc_unanswered = true;
	dev_err(&b->pdev->dev,
		"the host side (vbus-hostd) stopped answering: hypercall %u timed out after %u ms (its %zu-byte buffer is leaked). Usually vbus-hostd was stopped, or restarted without systemd or vbus-fdkeeper to keep this guest's connection; then only restarting QEMU reconnects the guest (docs/operations.md, \"Restarts\"). Further timeouts are counted in debugfs, not logged.\n",
		vector, vbus_pci_hc_timeout_ms, len);
}

/* Under hc_lock: an answer after hc_timed_out() said the host was gone. */
static void hc_answered(struct vbus_pci_bridge *b)
{
	if (!b->hc_unanswered)
		return;
	b->hc_unanswered = false;
	dev_info(&b->pdev->dev, "the host side answers hypercalls again\n");
}

/*
 * Issue hypercall @vector with @req (@reqlen bytes). With @data, @datalen
 * bytes of it travel in the bounce buffer too and the u64 at @datap_off in
 * the request is pointed at them; @data is copied back on success.
 * Returns the host's result (>= 0 or -errno), -ETIMEDOUT, or -ENOMEM.
 */
int vbus_pci_hypercall(struct vbus_pci_bridge *b, u32 vector,
		       void *req, u32 reqlen, size_t datap_off,
		       void *data, u32 datalen)
{
	struct vbus_pci_shm *shm = b->shm;
	size_t off = ALIGN(reqlen, 8);
	u64 orig_datap = 0;
	dma_addr_t dma;
	long left;
	void *buf;
	u32 seq;
	int ret;

	if (datap_off != VBUS_PCI_HC_NO_DATAP &&
	    datap_off + sizeof(u64) > reqlen)
		return -EINVAL;
	if (!data)
		datalen = 0;

	buf = hc_buf_alloc(b, off + datalen, &dma);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, req, reqlen);
	if (datap_off != VBUS_PCI_HC_NO_DATAP) {
		memcpy(&orig_datap, req + datap_off, sizeof(u64));
		*(u64 *)(buf + datap_off) = datalen ? (u64)(dma + off) : 0;
	}
	if (datalen)
		memcpy(buf + off, data, datalen);

	mutex_lock(&b->hc_lock);
	if (READ_ONCE(b->host_down)) {
		/* the host went away on purpose: nobody would answer */
		mutex_unlock(&b->hc_lock);
		hc_buf_free(b, buf, off + datalen, dma);
		return -ENOTCONN;
	}
	if (!list_empty(&b->hc_leaks) && hc_done(b, b->hc_seq)) {
		/* a late answer to our last call: see hc_reclaim() */
		virt_rmb();
		hc_reclaim(b);
	}
	if (b->hc_leaked_bytes > VBUS_PCI_HC_LEAK_MAX) {
		mutex_unlock(&b->hc_lock);
		hc_buf_free(b, buf, off + datalen, dma);
		dev_err_ratelimited(&b->pdev->dev,
				    "hypercall %u refused: %zu bytes of unanswered hypercalls are leaked already\n",
				    vector, READ_ONCE(b->hc_leaked_bytes));
		return -EIO;
	}
	vbus_pci_stat_inc(b, hypercalls);

	/* seq 0 is what hc_done reads before the first answer: skip it */
	seq = ++b->hc_seq;
	if (!seq)
		seq = ++b->hc_seq;

	WRITE_ONCE(shm->hc.vector, vector);
	WRITE_ONCE(shm->hc.len, reqlen);
	WRITE_ONCE(shm->hc.datap, (u64)dma);
	/*
	 * The mailbox and the bounce buffer before the new hc_seq: the host
	 * reads hc_seq first and then the rest (its rmb pairs with this).
	 */
	virt_wmb();
	WRITE_ONCE(shm->hc_seq, seq);
	/* iowrite32 (in the doorbell) is ordered after the stores above */
	vbus_pci_doorbell(b, VBUS_PCI_DB_HC);

	left = wait_event_timeout(b->hc_wq, hc_over(b, seq),
				  msecs_to_jiffies(vbus_pci_hc_timeout_ms));
	if (!hc_done(b, seq) && READ_ONCE(b->host_down)) {
		/* as a timeout, without the wait: buf may still be written */
		hc_leak(b, buf, off + datalen, dma);
		mutex_unlock(&b->hc_lock);
		return -ENOTCONN;
	}
	if (!left && !hc_done(b, seq)) {
		vbus_pci_stat_inc(b, hc_timeouts);
		hc_timed_out(b, vector, seq, off + datalen);
		/* buf is deliberately not freed: the host may still write it */
		hc_leak(b, buf, off + datalen, dma);
		mutex_unlock(&b->hc_lock);
		return -ETIMEDOUT;
	}
	hc_answered(b);
	/*
	 * hc_done before hc_result and the buffer: pairs with the host's wmb
	 * between writing them and hc_done.
	 */
	virt_rmb();
	hc_reclaim(b);
	ret = READ_ONCE(shm->hc_result);
	mutex_unlock(&b->hc_lock);

	if (ret >= 0) {
		/* results the host wrote into the struct (e.g. a handle) */
		memcpy(req, buf, reqlen);
		if (datap_off != VBUS_PCI_HC_NO_DATAP)
			memcpy(req + datap_off, &orig_datap, sizeof(u64));
		if (datalen)
			memcpy(data, buf + off, datalen);
	}
	hc_buf_free(b, buf, off + datalen, dma);
	return ret;
}
