// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Fuzz target "hostd": hypercall dispatch, ring consumption (vbus-test
 * rings and the eventq), sigpending processing, and the vbus-blk device
 * (id 3): its calls and its request parsing. Devices 1 and 2 are
 * vbus-test; opcode 6 adds or drops vbus-test devices 1..5 as `ctl add`
 * and `ctl drop` do, opcode 11 is the vbus-blk driver (fuzz_blk.c).
 */
#include "fuzz_blk.h"

static const char *devices[4] = {
	"type=vbus-test,id=1", "type=vbus-test,id=2", NULL, NULL
};

static void setup(void)
{
	devices[2] = fuzz_blk_disk("");
}

static void op_ctl(struct fuzz_in *in)
{
	uint8_t b = fuzz_u8(in);
	char spec[64];

	if (b & 1) {
		snprintf(spec, sizeof(spec), "type=vbus-test,id=%u", 1 + b % 5);
		fuzz_add_dev(spec);
	} else {
		char err[256];

		hostd_bus_drop(&fuzz_guest.bus, 1 + (uint32_t)(b >> 1) % 5,
			       err, sizeof(err));
	}
	fuzz_pump();
}

static const struct fuzz_target target = {
	.devices = devices,
	.setup = setup,
	.op_a = op_ctl,
	.op_b = fuzz_blk_op,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_guest_run(&target, data, size);
	return 0;
}
