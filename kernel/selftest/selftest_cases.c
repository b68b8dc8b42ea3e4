// SPDX-License-Identifier: GPL-2.0
/*
 * Runs the shared suites of tests/common (vt_cases_*.c) and reports each
 * case as "<suite>/<case>".
 */
#define pr_fmt(fmt) "vbus_selftest: " fmt

#include <linux/kernel.h>
#include "../../tests/common/vt_kernel.h"
#include "selftest.h"

int vt_suite_shm_signal(const char *filter);
int vt_suite_ioq(const char *filter);
int vt_suite_ioq_v6(const char *filter);

/* Cases reported by the suite that is running, and how many failed. */
static unsigned int vst_reported, vst_reported_failed;

void vt_kernel_report(const char *suite, const char *name, const char *why)
{
	char full[96];

	vst_reported++;
	vst_reported_failed += !!why;

	snprintf(full, sizeof(full), "%s/%s", suite, name);
	if (why)
		vst_fail(full, "%s", why);
	else
		vst_pass(full);
}

static void vst_suite(const char *suite, int (*run)(const char *filter))
{
	int ret;

	vst_reported = 0;
	vst_reported_failed = 0;
	ret = run(NULL);
	/*
	 * The suite's own count must match what reached us: a case that
	 * failed without a FAIL line would otherwise pass the guest run.
	 */
	if (ret < 0 || !vst_reported)
		vst_fail(suite, "suite ran no case (returned %d)", ret);
	else if (ret != vst_reported_failed)
		vst_fail(suite, "suite counted %d failures, %u were reported",
			 ret, vst_reported_failed);
}

void vst_run_cases(void)
{
	vst_suite("shm_signal", vt_suite_shm_signal);
	vst_suite("ioq", vt_suite_ioq);
	vst_suite("ioq_v6", vt_suite_ioq_v6);
}
