// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Fuzz target "blkpoll": vbus-blk (id 3) with polling and doorbell
 * masking on (poll_us=, doorbell_mask_us=; vbus_blk_poll.c,
 * vbus_blk_mask.c): the guest's rings are masked and unmasked while the
 * fuzzer posts, corrupts and closes. Opcodes 6 and 11 are both the
 * vbus-blk driver (fuzz_blk.c); device 1 is a vbus-test for the rest of
 * the bus.
 */
#include "fuzz_blk.h"

static const char *devices[3] = { "type=vbus-test,id=1", NULL, NULL };

static void setup(void)
{
	/* short windows: the fuzzer wants iterations, the code paths the
	 * same (the window only says how long nothing must happen) */
	devices[1] = fuzz_blk_disk(",poll_us=5,doorbell_mask_us=5");
}

static const struct fuzz_target target = {
	.devices = devices,
	.setup = setup,
	.op_a = fuzz_blk_op,
	.op_b = fuzz_blk_op,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_guest_run(&target, data, size);
	return 0;
}
