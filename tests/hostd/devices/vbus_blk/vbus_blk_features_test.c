// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * vbus-blk's later features against the device in libvbus-hostd, driven
 * by fakeguest (blk_fx.h): F_TOPOLOGY (GETTOPOLOGY), F_RESIZE (the events
 * ring and `ctl resize`), and compat=v1, under which the device answers
 * as the first host did (an old host for a new guest).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include <vbus/vbus_blk.h>
#include "blk_fx.h"

#define DISK_SIZE	(4u << 20)
#define LATER		(VBUS_BLK_F_TOPOLOGY | VBUS_BLK_F_RESIZE)

static int setup(void **state)
{
	return blk_fx_setup_file(state, "feat", DISK_SIZE, 0x22);
}

static int teardown(void **state)
{
	return blk_fx_teardown_file(state);
}

/* @msg is "guest fgd: device N (vbus-blk): " and @why (N: the test's) */
static void assert_why(const char *msg, const char *why)
{
	const char *p = strstr(msg, " (vbus-blk): ");

	if (strncmp(msg, "guest fgd: device ", 18) || !p ||
	    strcmp(p + 13, why))
		fail_msg("'%s' is not 'guest fgd: device N (vbus-blk): %s'",
			 msg, why);
}

static bool pow2(__u32 v)
{
	return v && !(v & (v - 1));
}

/* GETTOPOLOGY: the file's layout as hints the guest's checks accept */
static void topology(void **state)
{
	struct fx *f = *state;
	struct vbus_blk_topology t;

	blk_create(f, NULL);
	assert_int_equal(f->cfg.features & LATER, LATER);
	memset(&t, 0xff, sizeof(t));
	assert_int_equal(fgd_call(f->dev, VBUS_BLK_FUNC_GETTOPOLOGY, &t,
				  sizeof(t)), 0);
	assert_true(pow2(t.io_min));
	assert_true(t.io_min >= f->cfg.logical_block_size);
	assert_int_equal(t.io_min % f->cfg.logical_block_size, 0);
	assert_int_equal(t.io_opt % f->cfg.logical_block_size, 0);
	assert_true(t.alignment_offset < f->cfg.physical_block_size);
	assert_int_equal(t.flags & ~VBUS_BLK_TOPO_NONROT, 0);
	assert_memory_equal(t.reserved, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
			    sizeof(t.reserved));
	assert_int_equal(fgd_stat(f->dev, "io_min"), t.io_min);
	/* another length is refused, as for every call */
	assert_int_equal(fgd_call(f->dev, VBUS_BLK_FUNC_GETTOPOLOGY, &t, 16),
			 -EINVAL);
}

/* compat=v1: neither later feature offered, GETTOPOLOGY unknown */
static void compat_v1(void **state)
{
	struct fx *f = *state;
	struct vbus_blk_topology t;
	struct fg_ring ev = { 0 };

	blk_create(f, "compat=v1");
	assert_int_equal(f->cfg.features & LATER, 0);
	assert_true(f->cfg.features & VBUS_BLK_F_FLUSH);
	assert_int_equal(fgd_call(f->dev, VBUS_BLK_FUNC_GETTOPOLOGY, &t,
				  sizeof(t)), -EINVAL);
	/* a guest that asks anyway is granted only what was offered */
	blk_negotiate(f, f->cfg.features | LATER, 1, 16);
	assert_int_equal(f->neg.features & LATER, 0);
	assert_true(fgd_ring_attach(f->dev, VBUS_BLK_SHM_EVENTS,
				    VBUS_BLK_EVENTS_COUNT, &ev) < 0);
	assert_false(fgd_dev_faulted(f->dev));
}

static void compat_bad(void **state)
{
	struct fx *f = *state;
	char params[600];
	int err;

	snprintf(params, sizeof(params), "file=%s,compat=v2", f->path);
	assert_null(fgd_dev_create("vbus-blk", params, &err));
	assert_why(fgd_last_error(),
		   "compat=v2: want v1 (offer only the first vbus-blk host's features)");
}

/* the events ring: only with F_RESIZE granted, once, of one descriptor */
static void events_ring_rules(void **state)
{
	struct fx *f = *state;
	struct fg_ring ev = { 0 };

	blk_create(f, NULL);
	/* before NEGOTIATE */
	assert_true(fgd_ring_attach(f->dev, VBUS_BLK_SHM_EVENTS,
				    VBUS_BLK_EVENTS_COUNT, &ev) < 0);
	blk_negotiate(f, f->cfg.features & ~VBUS_BLK_F_RESIZE, 1, 16);
	/* not granted */
	assert_true(fgd_ring_attach(f->dev, VBUS_BLK_SHM_EVENTS,
				    VBUS_BLK_EVENTS_COUNT, &ev) < 0);
	fgd_dev_close(f->dev);
	assert_int_equal(fgd_dev_open(f->dev, VBUS_BLK_VERSION), 0);
	blk_negotiate(f, f->cfg.features, 1, 16);
	assert_true(fgd_ring_attach(f->dev, VBUS_BLK_SHM_EVENTS, 2, &ev) < 0);
	/* an attached ring outlives this function: the fixture's spare */
	assert_int_equal(fgd_ring_attach(f->dev, VBUS_BLK_SHM_EVENTS,
					 VBUS_BLK_EVENTS_COUNT, &f->r[1]), 0);
	{
		struct fg_ring ev2 = { 0 };

		assert_int_equal(fgd_ring_attach(f->dev, VBUS_BLK_SHM_EVENTS,
						 VBUS_BLK_EVENTS_COUNT, &ev2),
				 -EBUSY);
	}
	assert_false(fgd_dev_faulted(f->dev));
}

/* ctl resize: the file grows, GETCONFIG says so, the guest is signalled,
 * and a write past the old end is in range now */
static void resize_signals(void **state)
{
	struct fx *f = *state;
	struct vbus_blk_config c;
	struct fg_ring *ev = &f->r[1];	/* one queue: r[0] */
	char msg[512];
	struct stat st;
	__u64 buf = buf_new(4096, 0x5a);
	__u32 len = 4096;

	blk_create(f, NULL);
	blk_negotiate(f, f->cfg.features, 1, 16);
	assert_int_equal(fgd_ring_attach(f->dev, VBUS_BLK_SHM_EVENTS,
					 VBUS_BLK_EVENTS_COUNT, ev), 0);
	fgd_irqs(ev);
	/* past the end: refused before */
	assert_int_equal(rw(f, VBUS_BLK_OP_WRITE, 0, DISK_SIZE / SEC, 1, &buf,
			    &len), VBUS_BLK_S_BADREQ);
	assert_int_equal(fgd_dev_ctl(f->dev, "resize", "8M", msg, sizeof(msg)),
			 0);
	assert_non_null(strstr(msg, "8388608 bytes; the guest was told"));
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, 8u << 20);
	fgd_run_for(10);
	assert_true(fgd_irqs(ev) >= 1);
	assert_int_equal(fgd_call(f->dev, VBUS_BLK_FUNC_GETCONFIG, &c,
				  sizeof(c)), 0);
	assert_int_equal(c.capacity, (8u << 20) / SEC);
	assert_int_equal(rw(f, VBUS_BLK_OP_WRITE, 0, DISK_SIZE / SEC, 1, &buf,
			    &len), VBUS_BLK_S_OK);
	assert_int_equal(fgd_stat(f->dev, "resize_events"), 1);
	/* the same size again: nothing to tell */
	assert_int_equal(fgd_dev_ctl(f->dev, "resize", "8M", msg, sizeof(msg)),
			 0);
	assert_non_null(strstr(msg, "bytes already"));
	fgd_run_for(10);
	assert_int_equal(fgd_irqs(ev), 0);
	assert_int_equal(fgd_stat(f->dev, "resizes"), 1);
}

/* a guest without the events ring: the size moves, nobody is signalled */
static void resize_without_events(void **state)
{
	struct fx *f = *state;
	char msg[512];

	blk_up(f, NULL);
	assert_int_equal(fgd_dev_ctl(f->dev, "resize", "5M", msg, sizeof(msg)),
			 0);
	assert_non_null(strstr(msg, "the guest sees it when it opens the device again"));
	assert_int_equal(fgd_stat(f->dev, "capacity"), (5u << 20) / SEC);
	assert_int_equal(fgd_stat(f->dev, "resize_events"), 0);
}

/* refusals change nothing: ro=1, a shrink, another verb */
static void resize_refused(void **state)
{
	struct fx *f = *state;
	char msg[512];
	struct stat st;

	blk_create(f, "ro=1");
	assert_int_equal(fgd_dev_ctl(f->dev, "resize", "8M", msg, sizeof(msg)),
			 -EROFS);
	assert_why(msg, "resize: the disk is read-only (ro=1)");
	assert_int_equal(fgd_dev_ctl(f->dev, "grow", "8M", msg, sizeof(msg)),
			 -EOPNOTSUPP);
	assert_why(msg, "no verb 'grow'");
	fgd_dev_destroy(f->dev);
	f->dev = NULL;
	blk_create(f, NULL);
	assert_int_equal(fgd_dev_ctl(f->dev, "resize", "1M", msg, sizeof(msg)),
			 -EINVAL);
	assert_non_null(strstr(msg, "is smaller than the disk (4194304 bytes)"));
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, DISK_SIZE);
	assert_int_equal(fgd_stat(f->dev, "capacity"), DISK_SIZE / SEC);
}

static struct hostd_dev *cap_dev;
static __u64 cap_want;

static bool capacity_is(void *arg)
{
	(void)arg;
	return fgd_stat(cap_dev, "capacity") == cap_want;
}

/* every connection of the device is up again (multi-conn: another may
 * have seen the larger export first, before the lost one came back) */
static bool conns_up(void *arg)
{
	(void)arg;
	return fgd_stat(cap_dev, "nbd_conns_up") == fgd_stat(cap_dev, "nbd_conns");
}

/*
 * image=: ctl resize goes through the storage daemon (QMP: the export
 * off, block_resize, the export back); the NBD connection comes back
 * with the bigger export, which is the resize the guest is told of; the
 * qcow2 image has the new virtual size
 */
static void resize_image(void **state)
{
	struct fx *f = *state;
	char dir[] = "/tmp/vbus-feat-XXXXXX", img[64], params[128], msg[512];
	char out[4096] = "";
	__u64 buf = buf_new(4096, 0x6b), back = buf_new(4096, 0);
	__u32 len = 4096;
	struct fg_ring *ev = &f->r[1];	/* one queue: r[0] */
	FILE *p;
	size_t n;

	assert_non_null(mkdtemp(dir));
	snprintf(img, sizeof(img), "%s/img.qcow2", dir);
	{
		const char *create[] = { "qemu-img", "create", "-q", "-f",
					 "qcow2", img, "8M", NULL };

		assert_int_equal(blk_run(create), 0);
	}
	setenv("RUNTIME_DIRECTORY", dir, 1);
	snprintf(params, sizeof(params), "image=%s,image_format=qcow2", img);
	blk_create_params(f, params);
	blk_negotiate(f, f->cfg.features, 1, 16);
	assert_int_equal(fgd_ring_attach(f->dev, VBUS_BLK_SHM_EVENTS,
					 VBUS_BLK_EVENTS_COUNT, ev), 0);
	fgd_irqs(ev);
	assert_int_equal(rw(f, VBUS_BLK_OP_WRITE, 0, (8u << 20) / SEC, 1, &buf,
			    &len), VBUS_BLK_S_BADREQ);
	assert_int_equal(fgd_dev_ctl(f->dev, "resize", "16M", msg,
				     sizeof(msg)), 0);
	assert_non_null(strstr(msg, "16777216 bytes; the disk grows when vbus-hostd reconnects"));
	cap_dev = f->dev;
	cap_want = (16u << 20) / SEC;
	assert_true(fgd_run_until(capacity_is, NULL, TIMEOUT_MS));
	assert_true(fgd_irqs(ev) >= 1);
	assert_true(fgd_run_until(conns_up, NULL, TIMEOUT_MS));
	/* each connection that was up when the export went came back (one
	 * or, with multi-conn, more: how many were up yet is timing) */
	assert_true(fgd_stat(f->dev, "nbd_reconnects") >= 1);
	assert_int_equal(fgd_stat(f->dev, "nbd_reconnects"),
			 fgd_stat(f->dev, "nbd_losses"));
	assert_int_equal(rw(f, VBUS_BLK_OP_WRITE, 0, (8u << 20) / SEC, 1, &buf,
			    &len), VBUS_BLK_S_OK);
	assert_int_equal(rw(f, VBUS_BLK_OP_READ, 0, (8u << 20) / SEC, 1, &back,
			    &len), VBUS_BLK_S_OK);
	assert_memory_equal(fgd_ram(back), fgd_ram(buf), len);
	snprintf(params, sizeof(params),
		 "qemu-img info -U --output=json %s", img);
	p = popen(params, "r");
	assert_non_null(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	pclose(p);
	assert_non_null(strstr(out, "\"virtual-size\": 16777216"));
	fgd_dev_destroy(f->dev);
	f->dev = NULL;
	unlink(img);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(topology, setup, teardown),
		cmocka_unit_test_setup_teardown(compat_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(compat_bad, setup, teardown),
		cmocka_unit_test_setup_teardown(events_ring_rules, setup,
						teardown),
		cmocka_unit_test_setup_teardown(resize_signals, setup,
						teardown),
		cmocka_unit_test_setup_teardown(resize_without_events, setup,
						teardown),
		cmocka_unit_test_setup_teardown(resize_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(resize_image, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
