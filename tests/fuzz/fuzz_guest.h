/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The fake guest every vbus-hostd fuzz target shares: one guest ("fuzz")
 * with 128 KiB of RAM (64 KiB low, 64 KiB at 4 GiB), its loop, BAR2 and
 * bus, exactly as the daemon sets them up, and a hostile guest driven by
 * the fuzz input: a program of operations, each an opcode byte and its
 * operands. Raw operations write anything anywhere in guest RAM or BAR2;
 * "helper" operations build well-formed structures (a formatted ring, a
 * NEGOTIATE, a DEVSHM naming a ring formatted earlier) so the fuzzer gets
 * deep quickly and corrupts from there. Every input starts from a fresh
 * bus with the target's devices.
 *
 * Opcodes (the byte mod 12; tests/fuzz/make_seeds.py writes them):
 *   0 write RAM       4 signal          8 QEMU restarts (BAR2 fresh)
 *   1 format a ring   5 BAR2 garbage    9, 10 a hypercall
 *   2 post on a ring  6 target op A     11 target op B
 *   3 reap a ring     7 run the loop
 * A target says what its devices are and what its two ops do.
 */
#ifndef VBUS_FUZZ_GUEST_H
#define VBUS_FUZZ_GUEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "daemon.h"

#define FUZZ_RAM_LOW	(64u << 10)
#define FUZZ_RAM_HIGH	(64u << 10)
#define FUZZ_HIGH_GPA	(4ull << 30)
#define FUZZ_SCRATCH	0x100ull	/* default hypercall argument gpa */
#define FUZZ_CALLBUF	0x4000ull	/* default DEVCALL buffer */
#define FUZZ_NRINGS	6	/* the eventq and venet's two pairs */
#define FUZZ_NHANDLES	4
#define FUZZ_MAX_OPS	256

/* The input, consumed front to back; reads past its end give zeros. */
struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

uint8_t fuzz_u8(struct fuzz_in *in);
uint16_t fuzz_u16(struct fuzz_in *in);
uint32_t fuzz_u32(struct fuzz_in *in);
uint64_t fuzz_u64(struct fuzz_in *in);
/* A guest-physical address: mostly in or near RAM, sometimes anything. */
uint64_t fuzz_gpa(struct fuzz_in *in);

struct fuzz_target {
	/* device specs added to every fresh bus ("type=..,id=N"), NULL-ended */
	const char *const *devices;
	void (*setup)(void);		/* once, before the first input */
	void (*reset)(void);		/* each input, after the devices */
	void (*op_a)(struct fuzz_in *in);	/* opcode 6 */
	void (*op_b)(struct fuzz_in *in);	/* opcode 11 */
	void (*done)(void);		/* each input, after its last op */
	/*
	 * QEMU connects through a socket (the target's peers): a fresh bus
	 * has BAR2 but no connection, and opcode 8 is the server dropping
	 * it. Else the in-memory transport the tests use, always connected.
	 */
	bool socket_transport;
};

extern struct hostd_guest fuzz_guest;
extern uint64_t fuzz_handles[FUZZ_NHANDLES];	/* from DEVOPEN */

/* Run one input against @t's devices. */
void fuzz_guest_run(const struct fuzz_target *t, const uint8_t *data,
		    size_t size);

/* Guest RAM at @gpa for @len bytes, or NULL (as the host translates). */
void *fuzz_ptr(uint64_t gpa, uint64_t len);
/* Add a device by its --device spec (errors are fine: the fuzzer's). */
void fuzz_add_dev(const char *spec);
/* Run the guest's loop until nothing is deferred; abort if it never is. */
void fuzz_pump(void);
/* A DEVCALL of @func on handle slot @slot with @len bytes of @buf at
 * FUZZ_CALLBUF; with @bad_len, the call's length is the next input byte. */
int fuzz_devcall(struct fuzz_in *in, unsigned int slot, uint32_t func,
		 const void *buf, uint32_t len, bool bad_len);
/* One descriptor on ring @k (as formatted by opcode 1), raw, as a guest
 * posts it; false when ring @k is not there. */
bool fuzz_ring_post(unsigned int k, uint64_t ptr, uint64_t len);

/*
 * `ctl stats fuzz`, `ctl stats fuzz --json` and `ctl list`: each reply
 * must be bounded whatever the guest wrote (ctl output is the host's
 * words and bounded copies of the guest's); aborts if one is not.
 */
void fuzz_ctl_check(void);
/*
 * The longest ctl reply the fuzz guest may produce, and the longest line
 * of a text reply (a guest's or a device's: ~1 KiB of counters, strings
 * of at most a path's length). A 64-byte guest string read as 16 KiB
 * (finding 4 of issue 21) breaks both.
 */
#define FUZZ_CTL_REPLY_MAX	(32u << 10)
#define FUZZ_CTL_LINE_MAX	4096u

/* For replay -v: the stats of the last input. */
void fuzz_guest_report(FILE *f);

#endif /* VBUS_FUZZ_GUEST_H */
