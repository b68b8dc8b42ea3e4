// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Emits the offset and size of every field of every wire structure. Compiled
 * -m32 and -m64 (tests/abi/abi-check.sh) and the dumps must be identical:
 * both sides of a vbus may be different ABIs (an i386 guest on an x86-64
 * host), and the 2009 layouts were not (__u64 aligns to 4 on i386). The
 * headers' static asserts pin the x86-64 numbers; this pins "the same
 * everywhere". Alignment is not printed: it legitimately differs, and the
 * explicit padding is what makes the layout independent of it.
 */
#include <stddef.h>
#include <vbus/shm_signal.h>
#include <vbus/ioq.h>
#include <vbus/vbus_pci.h>
#include <vbus/venet.h>
#include <vbus/vbus_blk.h>
#include <vbus/vbus_ipc.h>

/*
 * Nothing here runs: the values are emitted into the assembly as comment
 * lines "# @@ ..." (the kernel's asm-offsets trick) and abi-check.sh reads
 * them from `cc -S`, so the -m32 layout is checked on hosts that cannot
 * execute i386 binaries. An immediate prints as "$N", signed on i386:
 * the script strips the "$" and reads a negative N modulo 2^32.
 */
#define V(v) "i" ((unsigned long)(v))
#define DUMP(text, ...) asm volatile("\n# @@ " text : : __VA_ARGS__)
#define S(type) DUMP(#type " size %0", V(sizeof(type)))
#define F(type, field) \
	DUMP("  " #field " off %0 size %1", V(offsetof(type, field)), \
	     V(sizeof(((type *)0)->field)))
/* flexible array member: no size */
#define FA(type, field) \
	DUMP("  " #field " off %0 elem %1", V(offsetof(type, field)), \
	     V(sizeof(((type *)0)->field[0])))

int main(void)
{
	DUMP("magic shm_signal %0 v%1 ioq %2 v%3 vbus_pci %4 v%5",
	     V(SHM_SIGNAL_MAGIC), V(SHM_SIGNAL_VER), V(IOQ_RING_MAGIC),
	     V(IOQ_RING_VER), V(VBUS_PCI_ABI_MAGIC), V(VBUS_PCI_ABI_VERSION));

	S(struct shm_signal_irq);
	F(struct shm_signal_irq, enabled);
	F(struct shm_signal_irq, pending);
	F(struct shm_signal_irq, dirty);

	S(struct shm_signal_desc);
	F(struct shm_signal_desc, magic);
	F(struct shm_signal_desc, ver);
	F(struct shm_signal_desc, irq);
	F(struct shm_signal_desc, irq[0]);
	F(struct shm_signal_desc, irq[1]);
	F(struct shm_signal_desc, reserved);

	S(struct ioq_ring_desc);
	F(struct ioq_ring_desc, cookie);
	F(struct ioq_ring_desc, ptr);
	F(struct ioq_ring_desc, len);
	F(struct ioq_ring_desc, valid);
	F(struct ioq_ring_desc, sown);
	F(struct ioq_ring_desc, reserved);

	S(struct ioq_ring_idx);
	F(struct ioq_ring_idx, head);
	F(struct ioq_ring_idx, tail);
	F(struct ioq_ring_idx, reserved_full);
	F(struct ioq_ring_idx, reserved);

	S(struct ioq_ring_head);
	F(struct ioq_ring_head, magic);
	F(struct ioq_ring_head, ver);
	F(struct ioq_ring_head, signal);
	F(struct ioq_ring_head, idx);
	F(struct ioq_ring_head, idx[0]);
	F(struct ioq_ring_head, idx[1]);
	F(struct ioq_ring_head, count);
	F(struct ioq_ring_head, reserved);
	FA(struct ioq_ring_head, ring);
	S(struct ioq_ring_head_v6);
	F(struct ioq_ring_head_v6, magic);
	F(struct ioq_ring_head_v6, ver);
	F(struct ioq_ring_head_v6, signal);
	F(struct ioq_ring_head_v6, signal.irq[0]);
	F(struct ioq_ring_head_v6, signal.irq[1]);
	F(struct ioq_ring_head_v6, reserved_v5idx);
	F(struct ioq_ring_head_v6, count);
	F(struct ioq_ring_head_v6, tail);
	F(struct ioq_ring_head_v6, valid_head);
	F(struct ioq_ring_head_v6, inuse_head);
	FA(struct ioq_ring_head_v6, ring);
	DUMP("  IOQ_RING_SIZE(5, 256) %0",
	     V(IOQ_RING_SIZE(IOQ_RING_VER_V5, 256)));
	DUMP("  IOQ_HEAD_DESC_SIZE(256) %0", V(IOQ_HEAD_DESC_SIZE(256)));

	S(struct vbus_pci_negotiate);
	F(struct vbus_pci_negotiate, magic);
	F(struct vbus_pci_negotiate, version);
	F(struct vbus_pci_negotiate, capabilities);

	S(struct vbus_pci_deviceopen);
	F(struct vbus_pci_deviceopen, devid);
	F(struct vbus_pci_deviceopen, version);
	F(struct vbus_pci_deviceopen, handle);

	S(struct vbus_pci_devicecall);
	F(struct vbus_pci_devicecall, devh);
	F(struct vbus_pci_devicecall, func);
	F(struct vbus_pci_devicecall, len);
	F(struct vbus_pci_devicecall, flags);
	F(struct vbus_pci_devicecall, reserved);
	F(struct vbus_pci_devicecall, datap);

	S(struct vbus_pci_deviceshm);
	F(struct vbus_pci_deviceshm, devh);
	F(struct vbus_pci_deviceshm, id);
	F(struct vbus_pci_deviceshm, len);
	F(struct vbus_pci_deviceshm, flags);
	F(struct vbus_pci_deviceshm, vector);
	F(struct vbus_pci_deviceshm, signal);
	F(struct vbus_pci_deviceshm, signal.offset);
	F(struct vbus_pci_deviceshm, signal.prio);
	F(struct vbus_pci_deviceshm, signal.cookie);
	F(struct vbus_pci_deviceshm, datap);

	S(struct vbus_pci_hypercall);
	F(struct vbus_pci_hypercall, vector);
	F(struct vbus_pci_hypercall, len);
	F(struct vbus_pci_hypercall, datap);

	S(struct vbus_pci_eventqreg);
	F(struct vbus_pci_eventqreg, count);
	F(struct vbus_pci_eventqreg, reserved);
	F(struct vbus_pci_eventqreg, ring);
	F(struct vbus_pci_eventqreg, data);

	S(struct vbus_pci_busreg);
	F(struct vbus_pci_busreg, count);
	F(struct vbus_pci_busreg, reserved);
	F(struct vbus_pci_busreg, eventq);

	S(struct vbus_pci_add_event);
	F(struct vbus_pci_add_event, id);
	F(struct vbus_pci_add_event, type);

	S(struct vbus_pci_handle_event);
	F(struct vbus_pci_handle_event, handle);

	S(struct vbus_pci_event);
	F(struct vbus_pci_event, eventid);
	F(struct vbus_pci_event, reserved);
	F(struct vbus_pci_event, data);
	F(struct vbus_pci_event, data.add);
	F(struct vbus_pci_event, data.add.id);
	F(struct vbus_pci_event, data.add.type);
	F(struct vbus_pci_event, data.handle);
	F(struct vbus_pci_event, data.handle.handle);

	S(struct vbus_pci_shm);
	F(struct vbus_pci_shm, magic);
	F(struct vbus_pci_shm, version);
	F(struct vbus_pci_shm, size);
	F(struct vbus_pci_shm, host_peer);
	F(struct vbus_pci_shm, features);
	F(struct vbus_pci_shm, host_epoch);
	F(struct vbus_pci_shm, msix_vectors);
	F(struct vbus_pci_shm, pad0);
	F(struct vbus_pci_shm, hc);
	F(struct vbus_pci_shm, hc.vector);
	F(struct vbus_pci_shm, hc.datap);
	F(struct vbus_pci_shm, hc_seq);
	F(struct vbus_pci_shm, pad1);
	F(struct vbus_pci_shm, hc_done);
	F(struct vbus_pci_shm, hc_result);
	F(struct vbus_pci_shm, pad2);
	F(struct vbus_pci_shm, sigpending);

	S(struct venet_capabilities);
	F(struct venet_capabilities, gid);
	F(struct venet_capabilities, bits);

	S(struct venet_iov);
	F(struct venet_iov, len);
	F(struct venet_iov, reserved);
	F(struct venet_iov, ptr);

	S(struct venet_sg);
	F(struct venet_sg, cookie);
	F(struct venet_sg, flags);
	F(struct venet_sg, len);
	F(struct venet_sg, csum);
	F(struct venet_sg, csum.start);
	F(struct venet_sg, csum.offset);
	F(struct venet_sg, gso);
	F(struct venet_sg, gso.type);
	F(struct venet_sg, gso.reserved);
	F(struct venet_sg, gso.hdrlen);
	F(struct venet_sg, gso.size);
	F(struct venet_sg, reserved);
	F(struct venet_sg, count);
	FA(struct venet_sg, iov);

	S(struct vbus_blk_config);
	F(struct vbus_blk_config, capacity);
	F(struct vbus_blk_config, logical_block_size);
	F(struct vbus_blk_config, physical_block_size);
	F(struct vbus_blk_config, max_segments);
	F(struct vbus_blk_config, max_segment_size);
	F(struct vbus_blk_config, max_sectors);
	F(struct vbus_blk_config, max_queues);
	F(struct vbus_blk_config, max_queue_depth);
	F(struct vbus_blk_config, features);
	F(struct vbus_blk_config, max_discard_sectors);
	F(struct vbus_blk_config, max_write_zeroes_sectors);
	F(struct vbus_blk_config, discard_granularity);
	F(struct vbus_blk_config, max_discard_ranges);
	F(struct vbus_blk_config, serial);
	F(struct vbus_blk_config, reserved2);

	S(struct vbus_blk_negotiate);
	F(struct vbus_blk_negotiate, features);
	F(struct vbus_blk_negotiate, nr_queues);
	F(struct vbus_blk_negotiate, queue_depth);
	F(struct vbus_blk_negotiate, reserved);

	S(struct vbus_blk_seg);
	F(struct vbus_blk_seg, addr);
	F(struct vbus_blk_seg, len);
	F(struct vbus_blk_seg, reserved);

	S(struct vbus_blk_req);
	F(struct vbus_blk_req, sector);
	F(struct vbus_blk_req, nr_sectors);
	F(struct vbus_blk_req, op);
	F(struct vbus_blk_req, status);
	F(struct vbus_blk_req, flags);
	F(struct vbus_blk_req, nr_segs);
	F(struct vbus_blk_req, nr_ranges);
	F(struct vbus_blk_req, reserved);
	FA(struct vbus_blk_req, seg);

	S(struct vbus_blk_range);
	F(struct vbus_blk_range, sector);
	F(struct vbus_blk_range, nr_sectors);
	F(struct vbus_blk_range, flags);
	DUMP("vbus_ipc magic %0 v%1 ioc info %2 wait %3",
	     V(VBUS_IPC_MAGIC), V(VBUS_IPC_ABI_VERSION),
	     V(VBUS_IPC_IOC_INFO), V(VBUS_IPC_IOC_WAIT_SESSION));
	S(struct vbus_ipc_layout);
	F(struct vbus_ipc_layout, count);
	F(struct vbus_ipc_layout, buf_size);
	F(struct vbus_ipc_layout, ring_off);
	F(struct vbus_ipc_layout, area_off);
	F(struct vbus_ipc_layout, area_len);

	S(struct vbus_ipc_shm);
	F(struct vbus_ipc_shm, magic);
	F(struct vbus_ipc_shm, size);
	F(struct vbus_ipc_shm, region_id);
	F(struct vbus_ipc_shm, host_peer);
	F(struct vbus_ipc_shm, layout);
	F(struct vbus_ipc_shm, service);
	F(struct vbus_ipc_shm, guest_open);
	F(struct vbus_ipc_shm, guest_close);
	F(struct vbus_ipc_shm, session);
	F(struct vbus_ipc_shm, state);
	F(struct vbus_ipc_shm, session_open);
	F(struct vbus_ipc_shm, south_open);
	F(struct vbus_ipc_shm, south_close);
	F(struct vbus_ipc_shm, south_session_open);

	S(struct vbus_ipc_attach);
	F(struct vbus_ipc_attach, session);

	S(struct vbus_ipc_config);
	F(struct vbus_ipc_config, region_id);
	F(struct vbus_ipc_config, service);

	S(struct vbus_ipc_info);
	F(struct vbus_ipc_info, size);
	F(struct vbus_ipc_info, region_id);
	F(struct vbus_ipc_info, layout);
	F(struct vbus_ipc_info, session);
	F(struct vbus_ipc_info, side);
	F(struct vbus_ipc_info, service);

	return 0;
}
