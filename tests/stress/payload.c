// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Payloads and checksums. The payload of message @seq is a pure function of
 * @seq, so neither side needs to remember what was sent, and a buffer that
 * holds another message's bytes (lost, duplicated, reused too early) fails
 * the check.
 */
#include <stdarg.h>
#include <stdio.h>

#include "stress.h"

/* xorshift64*: cheap, and every seq gets a distinct stream */
static __u64 next(__u64 *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545f4914f6cdd1dULL;
}

/* FNV-1a over the sequence number, the length and the bytes */
__u32 stress_csum(__u64 seq, const unsigned char *data, __u32 len)
{
	__u32 h = 2166136261u;
	unsigned int i;

	for (i = 0; i < 8; i++)
		h = (h ^ (unsigned char)(seq >> (8 * i))) * 16777619u;
	for (i = 0; i < 4; i++)
		h = (h ^ (unsigned char)(len >> (8 * i))) * 16777619u;
	for (i = 0; i < len; i++)
		h = (h ^ data[i]) * 16777619u;
	return h;
}

void stress_payload_fill(struct stress_slot *slot, __u64 seq, __u32 *len,
			 __u32 *csum)
{
	__u64 x = (seq + 1) * 0x9e3779b97f4a7c15ULL;
	__u32 i, n;

	n = 1 + (__u32)(next(&x) % STRESS_SLOT_DATA);
	for (i = 0; i < n; i++)
		slot->data[i] = (unsigned char)next(&x);
	slot->seq = seq;
	*len = n;
	*csum = stress_csum(seq, slot->data, n);
}

void stress_fail(struct stress_result *res, const char *fmt, ...)
{
	va_list ap;

	if (!res->errors++) {
		va_start(ap, fmt);
		vsnprintf(res->first_error, sizeof(res->first_error), fmt, ap);
		va_end(ap);
	}
}
