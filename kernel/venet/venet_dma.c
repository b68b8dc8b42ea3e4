// SPDX-License-Identifier: GPL-2.0
/*
 * venet: the per-slot venet_sg arrays the host reads (tx) and writes (rx).
 *
 * One dma_alloc_coherent() area per ring on the bridge's PCI device
 * (vdev->dma_dev): whole pages that hold nothing but venet_sgs, reached by
 * the host at their DMA address and never bounced, so the host's rx
 * metadata is read in place after the pop. The frames themselves are
 * streaming mappings (venet_tx.c, venet_rx.c).
 */
#include <linux/dma-mapping.h>

#include "venet_drv.h"

int venet_vsgs_alloc(struct venet_priv *priv, struct venet_vsgs *a,
		     u32 count, size_t size)
{
	/* each venet_sg 8-byte aligned: the host stores its u64 fields */
	a->stride = ALIGN(size, 8);
	a->len = a->stride * count;
	a->va = dma_alloc_coherent(venet_dma_dev(priv), a->len, &a->dma,
				   GFP_KERNEL);
	return a->va ? 0 : -ENOMEM;
}

/* Only when the host no longer uses them (DEVCLOSE answered). */
void venet_vsgs_free(struct venet_priv *priv, struct venet_vsgs *a)
{
	if (a->va)
		dma_free_coherent(venet_dma_dev(priv), a->len, a->va, a->dma);
	a->va = NULL;
}
