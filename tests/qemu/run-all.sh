#!/usr/bin/env bash
# Every QEMU test, one after the other (each guest wants both cores under
# TCG): the harness's own fail-path checks, the kernel selftests, the bus
# (bridge + vbus-hostd), venet and vbus-blk end to end, two venet guests
# on a Linux bridge and on Open vSwitch (venet_pair), vbus-hostd
# restarted under a running guest (graceful and crash), the guest's
# shutdown with I/O in flight (the host is let go of), a hostile host
# (vbus-hostd --test-faults lying to the guest; a warm reboot under
# traffic), vbus-ipc (guest process <-> host process, and between two
# guests: ipc_link), the modules as DKMS builds them, a guest
# on vbus started by libvirt, and the data checks of venet and vbus-blk
# again with the guest booted with swiotlb=force (venet-swiotlb,
# blk-swiotlb: every frame and segment vbus-hostd saw was a bounce
# buffer). Prints each suite's summary and, last, the
# totals as "N passed, N failed"; exits non-zero on any failure. Extra
# arguments are not passed on; set VBUS_QEMU_SUITES to run a subset, e.g.
# VBUS_QEMU_SUITES="kernel bus". Each suite is tests/qemu/run.sh SUITE
# (blk and ipc are the vbus_blk and vbus_ipc suites; run.sh SUITE:REGEX
# runs some of its checks). Not in the default list, the soaks (scripts/test.sh stages
# soak-bus, soak-venet, soak-ipc): bus-soak (VBUS_SOAK_CYCLES load/unload
# cycles with devices present, default 100), venet-soak (VBUS_SOAK_MB MiB
# each way, default 2048) and ipc-soak (VBUS_SOAK_IPC_MSGS messages with
# sequence numbers and checksums, checked at both ends, default 10^7).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
suites=${VBUS_QEMU_SUITES:-harness kernel bus venet venet_pair blk restart shutdown hostile ipc ipc_link dkms libvirt venet-swiotlb blk-swiotlb}
passed=0
failed=0
lines=()

run_suite() {
	local name=$1 t0 log summary p f
	shift
	log=$(mktemp)
	t0=$(date +%s)
	echo "=== qemu/$name: $*"
	"$@" 2>&1 | tee "$log"
	local rc=${PIPESTATUS[0]}
	summary=$(grep -aE '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
	rm -f "$log"
	if [[ -z "$summary" ]]; then
		# no summary at all: the suite itself broke; count it once
		summary="0 passed, 1 failed"
	fi
	p=${summary%% passed*}
	f=${summary#*passed, }
	f=${f%% failed*}
	if [[ $rc -ne 0 && $f -eq 0 ]]; then
		f=1	# a non-zero exit is a failure even if no test said so
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	lines+=("$(printf '%-8s %s passed, %s failed (%d s)' "$name" "$p" "$f" \
		$(($(date +%s) - t0)))")
}

for s in $suites; do
	case $s in
	kernel) run_suite kernel "$here/run.sh" kernel --msgs 300000 ;;
	harness | bus | venet | venet_pair | blk | restart | shutdown | hostile | ipc | ipc_link | dkms | libvirt) run_suite "$s" "$here/run.sh" "$s" ;;
	venet-swiotlb) run_suite "$s" "$here/run.sh" venet --swiotlb ;;
	blk-swiotlb) run_suite "$s" "$here/run.sh" blk --swiotlb --disk-mb 80 ;;
	bus-soak)
		run_suite bus-soak "$here/run.sh" bus \
			--cycles "${VBUS_SOAK_CYCLES:-100}" --timeout 3600 ;;
	venet-soak)
		run_suite venet-soak "$here/run.sh" venet --sg 1 \
			--soak-mb "${VBUS_SOAK_MB:-2048}" --timeout 3600 ;;
	ipc-soak)
		run_suite ipc-soak "$here/run.sh" ipc \
			--soak "${VBUS_SOAK_IPC_MSGS:-10000000}" --timeout "${VBUS_SOAK_IPC_TIMEOUT:-21600}" ;;
	*) echo "run-all: unknown suite '$s'" >&2; failed=$((failed + 1)) ;;
	esac
done

echo "=== qemu summary"
printf '%s\n' "${lines[@]}"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
