#!/usr/bin/env bash
# In-guest kernel tests of core/: builds vbus_core.ko and vbus_selftest.ko
# (make modules VBUS_SUBDIRS=kernel/selftest), boots the
# Debian kernel that matches the installed headers under QEMU with
# vbus_core.ko + vbus_selftest.ko and guest/kernel-tests.sh, and reads the
# verdict from the serial log (lib/results.sh: VBUS-TEST lines plus a scan for
# WARN/BUG/Oops/...). Prints "N passed, N failed"; exits non-zero on failure.
#
#   tests/qemu/run-kernel-tests.sh [--msgs N] [--cycles N] [--cycle-msgs N]
#                                  [--smp N] [--timeout SEC] [--no-build]
#
#   --msgs N        messages of the full cross-CPU stress (default 1000000)
#   --cycles N      load/unload cycles per loop (default 50, at least 50)
#   --cycle-msgs N  stress messages in each cycle (default 2000)
#   --smp N         guest vCPUs (default 2: the stress wants two)
#   --timeout SEC   kill the guest after SEC seconds (default 600)
#   --no-build      use the .ko files already built
# Accelerator: TCG unless hardware KVM is available (VBUS_QEMU_ACCEL=...).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=tests/qemu/lib/suite.sh
source "$here/lib/suite.sh"

msgs=1000000 cycles=50 cycle_msgs=2000 smp=2 timeout=600 build=1
while (($#)); do
	case "$1" in
	--msgs) msgs=$2; shift 2 ;;
	--cycles) cycles=$2; shift 2 ;;
	--cycle-msgs) cycle_msgs=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	-h | --help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) vbus_err "unknown argument $1 (see --help)"; exit 2 ;;
	esac
done
for v in "$msgs" "$cycles" "$cycle_msgs" "$smp" "$timeout"; do
	[[ "$v" =~ ^[0-9]+$ ]] || { vbus_err "not a number: $v"; exit 2; }
done
((cycles >= 50)) || vbus_warn "--cycles $cycles: fewer than the 50 the issue asks for"

t_start=$(vbus_now)
vbus_fetch_kernel

out="$VBUS_BUILD/qemu/kernel-tests"
mkdir -p "$out"
if ((build)); then
	t0=$(vbus_now)
	# Only what this test loads: other modules may be mid-way through work.
	if ! make -C "$top" modules KVER="$VBUS_KVER" VBUS_SUBDIRS=kernel/selftest \
		>"$out/build.log" 2>&1; then
		sed 's/^/    /' "$out/build.log" | tail -n 40
		vbus_err "make modules failed (log $out/build.log)"
		printf '0 passed, 1 failed\n'
		exit 1
	fi
	vbus_log "make modules: $(vbus_elapsed "$t0") s"
fi
kos=("$top/vbus_core.ko" "$top/kernel/selftest/vbus_selftest.ko")
for ko in "${kos[@]}"; do
	[[ -f "$ko" ]] || { vbus_err "$ko not built"; printf '0 passed, 1 failed\n'; exit 1; }
done

staging=$(mktemp -d "$out/staging.XXXXXX")
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging/test"
cp "$here/guest/lib.sh" "$staging/test/lib.sh"
cp "$here/guest/kernel-tests.sh" "$staging/test/run.sh"
cat >"$staging/test/config.sh" <<EOF
VST_STRESS_MSGS=$msgs
VST_CYCLES=$cycles
VST_CYCLE_MSGS=$cycle_msgs
EOF
# vbus_core first: the selftest's depends= names it, and it is no in-tree module
vbus_initramfs_add_kmods "$staging" "${kos[@]}"
vbus_make_initramfs "$out/initramfs.cpio.gz" "$staging"

log="$out/serial.log"
boot_rc=0
t0=$(vbus_now)
vbus_boot_guest --initrd "$out/initramfs.cpio.gz" --log "$log" --smp "$smp" \
	--timeout "$timeout" || boot_rc=$?
boot_secs=$(vbus_elapsed "$t0")

results_rc=0
vbus_check_results "$log" >"$out/results.txt" || results_rc=$?
if ((boot_rc != 0)); then
	# The timeout is already a FAIL in the results (no DONE line).
	vbus_warn "vbus_boot_guest returned $boot_rc"
fi

accel=$(vbus_qemu_accel)
printf '\n'
grep -v '^[0-9]* passed, [0-9]* failed$' "$out/results.txt" || true
printf '\nstress (accel=%s, %s vCPUs, kernel %s):\n' "$accel" "$smp" "$VBUS_KVER"
grep -ao 'vbus-kernel-tests: .*STRESS.*' "$log" | tr -d '\r' |
	sed 's/^vbus-kernel-tests: /    /' || printf '    (no STRESS line)\n'
printf 'boot-to-result: %s s (accel=%s, %s boot, smp=%s); total %s s; log %s\n' \
	"$boot_secs" "$accel" "$VBUS_KBOOT" "$smp" "$(vbus_elapsed "$t_start")" "$log"
tail -n 1 "$out/results.txt"
exit "$results_rc"
