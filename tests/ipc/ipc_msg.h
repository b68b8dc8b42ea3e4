/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The test message of the vbus-ipc tests: a sequence number, the length
 * and a checksum over a payload derived from the sequence number, so a
 * receiver can check order, length and every byte. Used by ipc-peer (both
 * ends in the QEMU suite) and the host-side ctest.
 */
#ifndef VBUS_TESTS_IPC_MSG_H
#define VBUS_TESTS_IPC_MSG_H

#include <stdint.h>
#include <string.h>

struct ipc_msg_hdr {
	uint64_t seq;
	uint32_t len;		/* whole message, header included */
	uint32_t csum;		/* of the payload after the header */
};

static inline uint32_t ipc_msg_csum(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;	/* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/* A message length for @seq in 16 .. @max, covering both ends. */
static inline uint32_t ipc_msg_len(uint64_t seq, uint32_t max)
{
	uint32_t span = max - (uint32_t)sizeof(struct ipc_msg_hdr) + 1;

	if (seq % 7 == 0)
		return max;
	return (uint32_t)sizeof(struct ipc_msg_hdr) +
	       (uint32_t)((seq * 2654435761u) % span);
}

static inline void ipc_msg_fill(unsigned char *buf, uint64_t seq,
				uint32_t len)
{
	struct ipc_msg_hdr h = { .seq = seq, .len = len };
	size_t i, n = len - sizeof(h);

	for (i = 0; i < n; i++)
		buf[sizeof(h) + i] = (unsigned char)(seq * 31 + i * 7);
	h.csum = ipc_msg_csum(buf + sizeof(h), n);
	memcpy(buf, &h, sizeof(h));
}

/* 0 when @buf is message @seq of @len bytes, intact; else -1. */
static inline int ipc_msg_check(const unsigned char *buf, long len,
				uint64_t seq)
{
	struct ipc_msg_hdr h;

	if (len < (long)sizeof(h))
		return -1;
	memcpy(&h, buf, sizeof(h));
	if (h.seq != seq || h.len != (uint32_t)len)
		return -1;
	return ipc_msg_csum(buf + sizeof(h), (size_t)len - sizeof(h)) ==
	       h.csum ? 0 : -1;
}

#endif /* VBUS_TESTS_IPC_MSG_H */
