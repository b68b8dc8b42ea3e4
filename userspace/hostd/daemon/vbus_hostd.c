// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* vbus-hostd: the host (south) side of the vbus bus over QEMU ivshmem. */
#include "daemon.h"

int main(int argc, char **argv)
{
	return daemon_main(argc, argv);
}
