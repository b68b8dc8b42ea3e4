#!/usr/bin/env bash
# Self-test of the QEMU lab: builds a throw-away module, boots guests that
# must pass (50 insmod/rmmod cycles: refcount, slab stability, leak detector)
# and guests that must be reported as failures (FAIL line + WARN splat, an
# oops/panic, a hang killed by the timeout), and checks the log parser on
# synthetic logs. Prints PASS/FAIL lines, boot times and "N passed, N failed".
#
#   tests/qemu/run.sh harness
set -euo pipefail
# shellcheck source=tests/qemu/lib/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/lab.sh"

lab_begin harness -- "$@"
timings=()
st_pass() { h_pass "harness-selftest/$1"; }
st_fail() { h_fail "harness-selftest/$1" "${@:2}"; }
indent() { sed 's/^/    /'; }
st_pass kernel-fetch
work=$run
logs=$out

# --- a throw-away module -----------------------------------------------------
mkdir -p "$work/mod"
cat >"$work/mod/vt_hello.c" <<'C'
// SPDX-License-Identifier: GPL-2.0
/* Harness self-test module: one kmalloc object, freed on unload. leak=N
 * leaks N kmalloc(1024) objects per load, warn=1 WARNs, oops=1 dereferences
 * NULL: all to prove the harness notices. (No kmem_cache: under slub_debug=U
 * the 6.1 kernel keeps one dentry+inode per created and destroyed cache, which
 * would show as slab growth across load/unload cycles.) */
#include <linux/module.h>
#include <linux/slab.h>

static int leak;
module_param(leak, int, 0444);
static int warn;
module_param(warn, int, 0444);
static int oops;
module_param(oops, int, 0444);

static void *vt_obj;
void *vt_hello_sink;
EXPORT_SYMBOL_GPL(vt_hello_sink);

static int __init vt_hello_init(void)
{
	int i;

	vt_obj = kmalloc(256, GFP_KERNEL);
	if (!vt_obj)
		return -ENOMEM;
	for (i = 0; i < leak; i++)
		WRITE_ONCE(vt_hello_sink, kmalloc(1024, GFP_KERNEL));
	WARN(warn, "vt_hello: deliberate warning\n");
	if (oops)
		*(volatile int *)READ_ONCE(vt_hello_sink) = 1;
	return 0;
}

static void __exit vt_hello_exit(void)
{
	kfree(vt_obj);
}

module_init(vt_hello_init);
module_exit(vt_hello_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vbus QEMU harness self-test module");
C
printf 'obj-m := vt_hello.o\n' >"$work/mod/Kbuild"
t0=$(vbus_now)
if make -s -C "$VBUS_KBUILD" M="$work/mod" modules >"$work/mod/build.log" 2>&1; then
	st_pass "module-build ($(vbus_elapsed "$t0") s)"
else
	indent <"$work/mod/build.log"
	st_fail module-build "make -C $VBUS_KBUILD failed"
	finish
fi

# --- helpers -----------------------------------------------------------------
# new_guest NAME: a staging tree with the module and guest lib; run.sh on stdin.
new_guest() {
	local s="$work/$1"
	mkdir -p "$s/test"
	cp "$work/mod/vt_hello.ko" "$s/test/"
	cp "$_lab_lib/guest.sh" "$s/test/lib.sh"
	cat >"$s/test/run.sh"
	vbus_make_initramfs "$work/$1.cpio.gz" "$s" >/dev/null
}

# boot NAME TIMEOUT: boot a guest; sets boot_rc, results_rc, results.
boot() {
	local name=$1 t0 secs
	t0=$(vbus_now)
	boot_rc=0
	vbus_boot_guest --initrd "$work/$name.cpio.gz" --log "$logs/$name.log" \
		--timeout "$2" >/dev/null || boot_rc=$?
	secs=$(vbus_elapsed "$t0")
	timings+=("$name: ${secs} s (boot rc $boot_rc)")
	results_rc=0
	results=$(vbus_check_results "$logs/$name.log") || results_rc=$?
}

# --- 1. must pass: 50 load/unload cycles -------------------------------------
new_guest cycles <<'G'
. /test/lib.sh
M=/test/vt_hello.ko
vt_check warmup-load insmod $M
vt_check warmup-refcnt-0 test "$(vt_modref vt_hello)" = 0
vt_check warmup-unload rmmod vt_hello
vt_slab_snapshot /tmp/slab0
i=0
bad=
while [ $i -lt 50 ]; do
	insmod $M || { bad="insmod failed at cycle $i"; break; }
	r=$(vt_modref vt_hello)
	[ "$r" = 0 ] || { bad="refcnt $r at cycle $i"; break; }
	rmmod vt_hello || { bad="rmmod failed at cycle $i"; break; }
	[ ! -d /sys/module/vt_hello ] || { bad="still loaded after cycle $i"; break; }
	i=$((i + 1))
done
if [ -z "$bad" ]; then vt_pass load-unload-x50-refcnt; else vt_fail load-unload-x50-refcnt "$bad"; fi
vt_slab_snapshot /tmp/slab1
vt_check slab-stable-after-50-cycles vt_slab_compare /tmp/slab0 /tmp/slab1 16
# The leak detector must see 10 loads x 4 leaked kmalloc-1k objects.
i=0
while [ $i -lt 10 ]; do insmod $M leak=4 && rmmod vt_hello; i=$((i + 1)); done
vt_slab_snapshot /tmp/slab2
vt_slab_compare /tmp/slab1 /tmp/slab2 16 >/tmp/leak.out
cat /tmp/leak.out
vt_check slab-leak-detected grep -q 'slab kmalloc-1k grew' /tmp/leak.out
# Helpers: in-tree modules with their dependencies, a host binary with its libs.
vt_check kmod-with-deps vt_kmod_load virtio_net
vt_check kmod-deps-refcnt test "$(vt_modref net_failover)" = 1
vt_check host-binary iperf3 --version
vt_done
G
vbus_initramfs_add_kmods "$work/cycles" virtio_net
vbus_initramfs_add_binary "$work/cycles" /usr/bin/iperf3
vbus_make_initramfs "$work/cycles.cpio.gz" "$work/cycles" >/dev/null
boot cycles 300
indent <<<"$results"
if ((boot_rc == 0 && results_rc == 0)); then
	st_pass guest-cycles
else
	st_fail guest-cycles "boot rc $boot_rc, results rc $results_rc (log $logs/cycles.log)"
fi

# --- 2. must fail: a FAIL line and a WARN splat ---------------------------------
new_guest failpath <<'G'
. /test/lib.sh
vt_pass before-the-failure
vt_fail deliberate-failure harness selftest expects this
insmod /test/vt_hello.ko warn=1
vt_done
G
boot failpath 300
indent <<<"$results"
if ((boot_rc == 0 && results_rc != 0)) &&
	grep -q '^FAIL deliberate-failure harness selftest expects this$' <<<"$results" &&
	grep -q '^FAIL kernel-log: .*WARNING:.*vt_hello' <<<"$results" &&
	grep -Eq '^1 passed, ([2-9]|[1-9][0-9]+) failed$' <<<"$results"; then
	st_pass fail-path-detected
else
	st_fail fail-path-detected "FAIL/WARN not reported as expected (results rc $results_rc)"
fi

# --- 3. must fail: an oops (oops=panic, panic=-1: QEMU exits at once) ----------
new_guest oops <<'G'
. /test/lib.sh
vt_pass before-the-oops
insmod /test/vt_hello.ko oops=1
vt_pass after-the-oops
vt_done
G
boot oops 300
indent <<<"$results"
if ((boot_rc == 0 && results_rc != 0)) &&
	grep -q '^FAIL kernel-log: .*Oops' <<<"$results" &&
	grep -q '^FAIL guest-done:' <<<"$results" &&
	! grep -q 'after-the-oops' <<<"$results"; then
	st_pass oops-detected
else
	st_fail oops-detected "oops not reported as expected (boot rc $boot_rc, results rc $results_rc)"
fi

# --- 4. must fail: a hung guest is killed by the timeout -------------------------
new_guest hang <<'G'
. /test/lib.sh
vt_pass before-the-hang
sleep 3600
vt_done
G
boot hang 12
indent <<<"$results"
if ((boot_rc != 0 && results_rc != 0)) &&
	grep -q '^FAIL guest-done: no VBUS-TEST DONE (timed out)' <<<"$results"; then
	st_pass timeout-detected
else
	st_fail timeout-detected "hang not reported as a timeout (boot rc $boot_rc, results rc $results_rc)"
fi

# --- 5. the parser on synthetic logs ----------------------------------------------
parse() { printf '%b' "$1" >"$work/synthetic.log"; vbus_check_results "$work/synthetic.log" >/dev/null; }
ok=1
parse '\033c\033[2JSeaBIOS\r\nVBUS-TEST PASS a\r\nVBUS-TEST DONE\r\n' || ok=0
parse 'VBUS-TEST PASS a\n' && ok=0                                   # no DONE
parse 'VBUS-TEST DONE\n' && ok=0                                     # no results
parse 'VBUS-TEST PASS a\n[ 1.0] BUG kmalloc-64 (Tainted: G O): Redzone overwritten\nVBUS-TEST DONE\n' && ok=0
parse 'VBUS-TEST PASS a\n[ 1.0] BUG: sleeping function called from invalid context\nVBUS-TEST DONE\n' && ok=0
VBUS_KERNEL_IGNORE='known-benign' parse 'VBUS-TEST PASS a\nWARNING: known-benign\nVBUS-TEST DONE\n' || ok=0
if ((ok)); then st_pass parser-synthetic-logs; else st_fail parser-synthetic-logs "a synthetic log got the wrong verdict"; fi

# --- summary ---------------------------------------------------------------------------
printf 'boot-to-result times (accel=%s, kernel %s, %s boot):\n' "$(vbus_qemu_accel)" "$VBUS_KVER" "$VBUS_KBOOT"
printf '    %s\n' "${timings[@]}"
printf 'harness self-test took %s s; logs in %s\n' "$(vbus_elapsed "$t_start")" "$logs"
finish
