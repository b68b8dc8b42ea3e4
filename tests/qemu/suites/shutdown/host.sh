#!/usr/bin/env bash
# Guest shutdown with I/O in flight (issue 20.7): the host must stop
# writing guest memory the guest gave it once the guest has shut down, and
# it does only if the guest's vbus_pcibridge closes its devices (DEVCLOSE)
# and detaches the eventq (BUSREG count 0) in its .shutdown: the memory
# belongs to the firmware or to the next kernel (reboot, kexec) from then
# on. vbus-hostd serves a vbus-blk disk (id 1, serial sd-blk), a
# vbus-test device (id 2) and a vbus-ipc channel (id 3, service echo, an
# ipc-peer host process echoing); the guest (guest.sh) loads their
# drivers, leaves reads, writes, the vbus-test ring and an ipc-peer sender
# running and ends, so /init's poweroff -f shuts down under that traffic.
# QEMU runs with -no-shutdown: the guest is down but its connections to
# vbus-hostd stay, and then:
#   down/bus-detached      ctl list: the guest is no longer "registered"
#   down/devices-closed    ctl list: devices 1 and 2 are "closed"
#   down/ipc-session-ended the host process ends (exit 0: the guest left)
# (ctl stats of the guest and the devices go to $out/stats.txt.) The
# first two fail without vbus_pcibridge's .shutdown: the bus stays
# "registered" and the devices "open", their rings and the eventq still
# the host's to write; the third without vbus_ipc's: the host process
# waits for a guest that is gone. A check that the counters stop moving
# would not tell them apart: with the VM stopped, nothing asks the host
# for more.
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

lab_build --modules "$LAB_BUS_SUBDIRS kernel/vbus_blk" --cmake "vbus-hostd ipc-peer"
lab_kos --bus kernel/vbus_blk/vbus_blk.ko kernel/vbus_test/vbus_test.ko \
	kernel/vbus_ipc/vbus_ipc.ko
peer=$(find "$cbuild" -type f -name ipc-peer -perm -u+x | head -n 1)
[[ -n "$peer" ]] || { h_fail build "no ipc-peer under $cbuild"; finish; }

img="$run/disk.img"
truncate -s "${disk_mb}M" "$img"
lab_stage guest "$(dirname "$0")/guest.sh" "${kos[@]}" --file "$peer" <<CONFIG
VT_SERIAL=sd-blk
VT_TEST_ID=2
CONFIG
lab_hostd -- --guest "$(lab_guest g1)" \
	--device "g1:type=vbus-blk,id=1,file=$img,serial=sd-blk,strict=1" \
	--device "g1:type=vbus-test,id=2" \
	--device "g1:type=vbus-ipc,id=3,service=echo,sock=$run/echo.sock,qsock=$run/ipc-q.sock,count=64,bufsize=4096"
# the host process of the one session: it echoes until the guest leaves
"$peer" host "$run/echo.sock" echo --timeout 600000 >"$out/host-peer.log" 2>&1 &
peer_pid=$!
lab_defer "kill -9 $peer_pid 2>/dev/null"
# peer_ended: the host process exited 0 within 20 s
# shellcheck disable=SC2317 # h_check calls it
peer_ended() {
	local rc=0
	for _ in $(seq 200); do
		kill -0 "$peer_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$peer_pid" 2>/dev/null && { echo "still running"; return 1; }
	wait "$peer_pid" || rc=$?
	((rc == 0)) || { echo "exit $rc (log $out/host-peer.log)"; return 1; }
}

# -no-shutdown: at the guest's poweroff QEMU stops the VM and stays, so
# vbus-hostd still holds the guest and shows what it was left with.
lab_boot guest --guest g1 -- -no-shutdown \
	-chardev "socket,id=ipc0,path=$run/ipc-q.sock" -device "ivshmem-doorbell,chardev=ipc0,vectors=2"
# the kernel's last word before the ACPI poweroff, after device_shutdown()
if lab_wait_ready guest 'reboot: Power down'; then
	if lab_want traffic; then
		ctl list >"$out/ctl-list.txt" 2>&1 || true
		sed 's/^/    ctl list: /' "$out/ctl-list.txt"
		h_check down/bus-detached bash -c "! grep -q 'guest=g1 state=registered' '$out/ctl-list.txt'"
		h_check down/devices-closed bash -c "[[ \$(grep -cE '^id=(1|2) .*state=closed' '$out/ctl-list.txt') == 2 ]]"
		h_check down/ipc-session-ended peer_ended
		{ ctl stats g1 1; ctl stats g1 2; ctl stats g1 3; } >"$out/stats.txt" 2>&1 || true
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
