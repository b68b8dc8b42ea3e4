#!/usr/bin/env bash
# Guest shutdown with I/O in flight (issue 20.7): the host must stop
# writing guest memory the guest gave it once the guest has shut down, and
# it does only if the guest's vbus_pcibridge closes its devices (DEVCLOSE)
# and detaches the eventq (BUSREG count 0) in its .shutdown: the memory
# belongs to the firmware or to the next kernel (reboot, kexec) from then
# on. vbus-hostd serves a vbus-blk disk (id 1, serial sd-blk) and a
# vbus-test device (id 2); the guest (guest.sh) loads their drivers, leaves
# reads, writes and the vbus-test ring running and ends, so /init's
# poweroff -f shuts down under that traffic. QEMU runs with -no-shutdown:
# the guest is down but its connection to vbus-hostd stays, and then:
#   down/bus-detached      ctl list: the guest is no longer "registered"
#   down/devices-closed    ctl list: both devices are "closed"
# (ctl stats of the guest and both devices go to $out/stats.txt.) Both
# checks fail without vbus_pcibridge's .shutdown: the bus stays
# "registered" and the devices "open", their rings and the eventq still
# the host's to write. A check that the counters stop moving would not
# tell the two apart: with the VM stopped, nothing asks the host for more.
#
#   tests/qemu/run.sh shutdown [--disk-mb N]
#
#   --disk-mb N   size of the disk in MiB (default 64)
# Check groups (REGEX): traffic.
set -euo pipefail
# shellcheck source=tests/qemu/lib/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/lab.sh"

disk_mb=64 timeout=300
lab_begin shutdown disk-mb:N -- "$@"

lab_build --modules "$LAB_BUS_SUBDIRS kernel/vbus_blk" --cmake vbus-hostd
lab_kos --bus kernel/vbus_blk/vbus_blk.ko kernel/vbus_test/vbus_test.ko

img="$run/disk.img"
truncate -s "${disk_mb}M" "$img"
lab_stage guest "$(dirname "$0")/guest.sh" "${kos[@]}" <<CONFIG
VT_SERIAL=sd-blk
VT_TEST_ID=2
CONFIG
lab_hostd -- --guest "$(lab_guest g1)" \
	--device "g1:type=vbus-blk,id=1,file=$img,serial=sd-blk,strict=1" \
	--device "g1:type=vbus-test,id=2"

# -no-shutdown: at the guest's poweroff QEMU stops the VM and stays, so
# vbus-hostd still holds the guest and shows what it was left with.
lab_boot guest --guest g1 -- -no-shutdown
# the kernel's last word before the ACPI poweroff, after device_shutdown()
if lab_wait_ready guest 'reboot: Power down'; then
	if lab_want traffic; then
		ctl list >"$out/ctl-list.txt" 2>&1 || true
		sed 's/^/    ctl list: /' "$out/ctl-list.txt"
		h_check down/bus-detached bash -c "! grep -q 'guest=g1 state=registered' '$out/ctl-list.txt'"
		h_check down/devices-closed bash -c "[[ \$(grep -cE '^id=(1|2) .*state=closed' '$out/ctl-list.txt') == 2 ]]"
		{ ctl stats g1 1; ctl stats g1 2; } >"$out/stats.txt" 2>&1 || true
	fi
else
	h_fail down/powered-off "the guest did not reach the poweroff"
fi
# the VM is stopped, not gone: end it, then collect the guest's verdicts
vbus_stop_pid "$(cat "$run/guest.pid" 2>/dev/null || true)" || true
lab_serve guest
lab_results guest
h_check hostd-alive-at-end kill -0 "$hostd_pid"
lab_no_fault "a device"
lab_summary guest
