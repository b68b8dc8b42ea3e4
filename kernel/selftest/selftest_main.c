// SPDX-License-Identifier: GPL-2.0
/*
 * vbus_selftest.ko: runs the shared core/ test cases (tests/common) and a
 * cross-CPU IOQ stress at module load, and again on every write to
 * /sys/module/vbus_selftest/parameters/run. Only ever loaded inside the
 * QEMU test guest (tests/qemu/run.sh kernel).
 *
 * The verdict is in dmesg (see selftest.h for the line format) and in the
 * read-only parameters "passed" and "failed" of the last run.
 */
#define pr_fmt(fmt) "vbus_selftest: " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/printk.h>
#include "selftest.h"

static bool run_cases = true;
module_param(run_cases, bool, 0644);
MODULE_PARM_DESC(run_cases, "Run the shared tests/common cases (default Y)");

static bool proxy_cases;
module_param(proxy_cases, bool, 0644);
MODULE_PARM_DESC(proxy_cases, "Run the vbus_proxy ring-helper cases (needs vbus_proxy loaded; default N)");

static unsigned long stress_msgs = 1000000;
module_param(stress_msgs, ulong, 0644);
MODULE_PARM_DESC(stress_msgs, "Messages for the cross-CPU stress; 0 skips it");

static unsigned int stress_ring = 256;
module_param(stress_ring, uint, 0644);
MODULE_PARM_DESC(stress_ring, "Stress ring size (power of two)");

static unsigned int stress_timeout = 300;
module_param(stress_timeout, uint, 0644);
MODULE_PARM_DESC(stress_timeout, "Seconds before the stress fails as hung");

static int producer_cpu = -1;
module_param(producer_cpu, int, 0644);
MODULE_PARM_DESC(producer_cpu, "CPU of the north (producer) kthread; -1: first online");

static int consumer_cpu = -1;
module_param(consumer_cpu, int, 0644);
MODULE_PARM_DESC(consumer_cpu, "CPU of the south (consumer) kthread; -1: next online");

/* Results of the last run, for scripts. */
static unsigned int passed;
module_param(passed, uint, 0444);
MODULE_PARM_DESC(passed, "Tests passed in the last run");

static unsigned int failed;
module_param(failed, uint, 0444);
MODULE_PARM_DESC(failed, "Tests failed in the last run");

/* One run at a time; module exit waits for a run started through "run". */
static DEFINE_MUTEX(vst_lock);
static bool vst_live;

void vst_pass(const char *name)
{
	passed++;
	pr_info("PASS %s\n", name);
}

void vst_fail(const char *name, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	failed++;
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_err("FAIL %s %pV\n", name, &vaf);
	va_end(args);
}

static void vst_run_all(void)
{
	/* a private copy: a parameter write during the run changes nothing */
	struct vst_stress_cfg cfg = {
		.msgs = READ_ONCE(stress_msgs),
		.ring = READ_ONCE(stress_ring),
		.timeout_s = READ_ONCE(stress_timeout),
		.producer_cpu = READ_ONCE(producer_cpu),
		.consumer_cpu = READ_ONCE(consumer_cpu),
	};

	passed = 0;
	failed = 0;
	pr_info("START cases=%d stress_msgs=%lu stress_ring=%u\n",
		READ_ONCE(run_cases), cfg.msgs, cfg.ring);
	if (READ_ONCE(run_cases))
		vst_run_cases();
	if (READ_ONCE(proxy_cases))
		vst_run_proxy_cases();
	if (cfg.msgs)
		vst_run_stress(&cfg);
	pr_info("DONE passed=%u failed=%u\n", passed, failed);
}

/* Any write to "run" starts a new run once the module is up. */
static int vst_run_set(const char *val, const struct kernel_param *kp)
{
	mutex_lock(&vst_lock);
	/* at insmod time parameters are set before init: init runs anyway */
	if (vst_live)
		vst_run_all();
	mutex_unlock(&vst_lock);
	return 0;
}

static const struct kernel_param_ops vst_run_ops = {
	.set = vst_run_set,
};
module_param_cb(run, &vst_run_ops, NULL, 0200);
MODULE_PARM_DESC(run, "Write anything to run all tests again");

static int __init vst_init(void)
{
	mutex_lock(&vst_lock);
	vst_run_all();
	vst_live = true;
	mutex_unlock(&vst_lock);
	/* failures are reported, not returned: the module stays to be rerun */
	return 0;
}

static void __exit vst_exit(void)
{
	mutex_lock(&vst_lock);
	vst_live = false;
	mutex_unlock(&vst_lock);
}

module_init(vst_init);
module_exit(vst_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vbus in-kernel self-tests of shm-signal and IOQ");
MODULE_AUTHOR("vbus developers");
