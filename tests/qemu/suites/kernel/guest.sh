# shellcheck shell=dash
# Guest side of the kernel suite (host.sh next to it); runs as /test/run.sh
# under busybox sh. Loads vbus_core.ko and vbus_selftest.ko, turns the selftest's
# dmesg lines into VBUS-TEST lines, runs the selftest's vbus_proxy cases with
# vbus_proxy.ko loaded, then load/unload cycles that must leave no module
# reference, kthread or slab object behind.
#
# Knobs come from /test/config.sh (written by the host script):
#   VST_STRESS_MSGS   messages of the full stress run (module default if empty)
#   VST_CYCLES        load/unload cycles per loop (>= 50)
#   VST_CYCLE_MSGS    stress messages per cycle (small: the point is teardown)

# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck disable=SC1091
[ -f /test/config.sh ] && . /test/config.sh
: "${VST_STRESS_MSGS:=}"
: "${VST_CYCLES:=50}"
: "${VST_CYCLE_MSGS:=2000}"

P=/sys/module/vbus_selftest/parameters

# vst_collect PREFIX: the selftest's lines since its last START, as VBUS-TEST
# lines named PREFIX/<case>. Fails the run if DONE is missing (a case hung or
# the module died half-way).
vst_collect() {
	_pfx=$1
	dmesg | awk '/vbus_selftest: START/ { n = 0 }
		/vbus_selftest: / { sub(/.*vbus_selftest: /, ""); l[n++] = $0 }
		END { for (i = 0; i < n; i++) print l[i] }' >/tmp/vst.out
	_done=0
	while read -r _verdict _name _rest; do
		case "$_verdict" in
		PASS) vt_pass "$_pfx/$_name" ;;
		FAIL) vt_fail "$_pfx/$_name" "${_rest:-failed}" ;;
		STRESS) echo "vbus-kernel-tests: $_pfx STRESS $_name $_rest" ;;
		DONE) _done=1 ;;
		esac
	done </tmp/vst.out
	if [ "$_done" = 1 ]; then
		vt_pass "$_pfx/done"
	else
		vt_fail "$_pfx/done" "no DONE line from vbus_selftest"
	fi
}

# vst_kthreads: how many selftest kthreads exist (must be 0 between runs).
vst_kthreads() {
	cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^vst_' || true
}

# --- 1. the full run: shared cases + the cross-CPU stress ------------------
check_selftest() {
	vt_check load-vbus_core vt_kmod_load vbus_core
	vt_check core-refcnt-0 test "$(vt_modref vbus_core)" = 0
	if vt_check load-vbus_selftest vt_kmod_load vbus_selftest \
		${VST_STRESS_MSGS:+stress_msgs=$VST_STRESS_MSGS}; then
		vst_collect kernel
		vt_check selftest-failed-param-0 test "$(cat $P/failed)" = 0
		vt_check core-refcnt-1-while-used test "$(vt_modref vbus_core)" = 1
		vt_check selftest-refcnt-0 test "$(vt_modref vbus_selftest)" = 0

		# The sysfs trigger reruns everything in the loaded module.
		echo "$VST_CYCLE_MSGS" >$P/stress_msgs
		echo 1 >$P/run
		vst_collect rerun
		vt_check rerun-failed-param-0 test "$(cat $P/failed)" = 0

		vt_check unload-vbus_selftest rmmod vbus_selftest
		vt_check no-kthreads-left test "$(vst_kthreads)" = 0
	fi
	vt_check core-refcnt-0-after-unload test "$(vt_modref vbus_core)" = 0
	vt_check unload-vbus_core rmmod vbus_core

}

# --- 2. the drivers' ring helper against a hostile host ----------------------
# vbus_driver_ioq_alloc() with a fake bridge whose host rewrites the ring's
# version after DEVSHM (issue 20.4; kernel/selftest/selftest_proxy.c).
check_proxy() {
	vt_check proxy/load-vbus_core vt_kmod_load vbus_core || return
	vt_check proxy/load-vbus_proxy vt_kmod_load vbus_proxy
	if vt_check proxy/load-vbus_selftest vt_kmod_load vbus_selftest \
		run_cases=0 stress_msgs=0 proxy_cases=1; then
		vst_collect proxy
		vt_check proxy/failed-param-0 test "$(cat $P/failed)" = 0
		vt_check proxy/unload-vbus_selftest rmmod vbus_selftest
	fi
	vt_check proxy/unload-vbus_proxy rmmod vbus_proxy
	vt_check proxy/unload-vbus_core rmmod vbus_core
}

# --- 3. load/unload cycles ---------------------------------------------------
check_cycles() {
	local i bad r f p k
	# One warm-up round first: the first load allocates one-time objects (sysfs
	# nodes, kthread stacks) that would look like growth.
	vt_kmod_load vbus_core && vt_kmod_load vbus_selftest stress_msgs="$VST_CYCLE_MSGS" &&
		rmmod vbus_selftest && rmmod vbus_core
	vt_slab_snapshot /tmp/slab0

	# 2a. vbus_core alone
	i=0
	bad=
	while [ $i -lt "$VST_CYCLES" ]; do
		insmod "$VT_KMOD_DIR"/vbus_core.ko || { bad="insmod failed at cycle $i"; break; }
		r=$(vt_modref vbus_core)
		[ "$r" = 0 ] || { bad="refcnt $r at cycle $i"; break; }
		rmmod vbus_core || { bad="rmmod failed at cycle $i"; break; }
		[ ! -d /sys/module/vbus_core ] || { bad="still loaded after cycle $i"; break; }
		i=$((i + 1))
	done
	if [ -z "$bad" ]; then
		vt_pass "cycles/vbus_core-x$VST_CYCLES"
	else
		vt_fail "cycles/vbus_core-x$VST_CYCLES" "$bad"
	fi

	# 2b. vbus_core + vbus_selftest (all cases, a small stress): the selftest
	# pins vbus_core while loaded, and its kthreads, irq_works and tasklets are
	# gone after each unload.
	i=0
	bad=
	while [ $i -lt "$VST_CYCLES" ]; do
		insmod "$VT_KMOD_DIR"/vbus_core.ko || { bad="insmod vbus_core failed at cycle $i"; break; }
		insmod "$VT_KMOD_DIR"/vbus_selftest.ko stress_msgs="$VST_CYCLE_MSGS" ||
			{ bad="insmod vbus_selftest failed at cycle $i"; break; }
		f=$(cat $P/failed) p=$(cat $P/passed)
		if [ "$f" != 0 ] || [ "$p" -eq 0 ]; then
			bad="selftest passed=$p failed=$f at cycle $i"
			break
		fi
		r=$(vt_modref vbus_core)
		[ "$r" = 1 ] || { bad="vbus_core refcnt $r with the selftest loaded, cycle $i"; break; }
		r=$(vt_modref vbus_selftest)
		[ "$r" = 0 ] || { bad="vbus_selftest refcnt $r at cycle $i"; break; }
		rmmod vbus_selftest || { bad="rmmod vbus_selftest failed at cycle $i"; break; }
		r=$(vt_modref vbus_core)
		[ "$r" = 0 ] || { bad="vbus_core refcnt $r after the selftest left, cycle $i"; break; }
		rmmod vbus_core || { bad="rmmod vbus_core failed at cycle $i"; break; }
		k=$(vst_kthreads)
		[ "$k" = 0 ] || { bad="$k selftest kthreads left after cycle $i"; break; }
		i=$((i + 1))
	done
	if [ -z "$bad" ]; then
		vt_pass "cycles/core+selftest-x$VST_CYCLES"
	else
		vt_fail "cycles/core+selftest-x$VST_CYCLES" "$bad"
		dmesg | grep 'vbus_selftest: FAIL' | tail -n 5
	fi

	vt_slab_snapshot /tmp/slab1
	vt_slab_check cycles/slab-stable /tmp/slab0 /tmp/slab1 16
	vt_check cycles/modules-gone sh -c '! grep -q "^vbus_" /proc/modules'

}

echo "vbus-kernel-tests: $(grep -c ^processor /proc/cpuinfo) CPUs, kernel $(uname -r)"
vt_run_checks selftest proxy cycles
vt_done
