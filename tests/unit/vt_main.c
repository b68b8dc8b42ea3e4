// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Entry point for one shared case file under cmocka. The build names the
 * suite (VT_SUITE_FN); argv[1], if given, runs just that case, which is how
 * ctest gets one test per case.
 */
#include <stdio.h>

#ifndef VT_SUITE_FN
#error "build with -DVT_SUITE_FN=vt_suite_<name>"
#endif

int VT_SUITE_FN(const char *filter);

int main(int argc, char **argv)
{
	int failed;

	if (argc > 2) {
		fprintf(stderr, "usage: %s [case]\n", argv[0]);
		return 2;
	}
	failed = VT_SUITE_FN(argc == 2 ? argv[1] : NULL);
	return failed == 0 ? 0 : 1;
}
