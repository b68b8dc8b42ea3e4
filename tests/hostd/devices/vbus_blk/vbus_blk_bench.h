/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* hostd_vbus_blk_bench's parts (vbus_blk_bench.c is main). */
#ifndef VBUS_TESTS_VBUS_BLK_BENCH_H
#define VBUS_TESTS_VBUS_BLK_BENCH_H

#define BENCH_FILE_SIZE	(64u << 20)
#define BENCH_FILES	4	/* the queue-threads table's disks */

/*
 * The queue-threads table (vbus_blk_bench_threads.c) over BENCH_FILES
 * files of BENCH_FILE_SIZE; starts the host's loop thread and stops it.
 */
void bench_threads(const char *const paths[BENCH_FILES], int direct,
		   int runs);

#endif /* VBUS_TESTS_VBUS_BLK_BENCH_H */
