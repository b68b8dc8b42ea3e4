# shellcheck shell=dash
# Guest side of the shutdown suite (host.sh next to it); runs as
# /test/run.sh under busybox sh. Loads the bus stack, vbus_blk, vbus_test
# and vbus_ipc against vbus-hostd's vbus-blk disk (serial $VT_SERIAL),
# vbus-test device (id $VT_TEST_ID) and vbus-ipc channel, then leaves
# traffic running: reads and writes on the disk (requests in flight,
# checked), the vbus-test ring (buffers posted for the host to fill), an
# ipc-peer sending on /dev/vbus-ipc0 (session up, checked). Then it ends,
# and /init's `poweroff -f` shuts the kernel down with all of it in
# flight: the bridge's .shutdown must close both devices and detach the
# eventq, vbus_ipc's must end the session (the file is never released),
# which the host checks once the guest is down (QEMU runs with
# -no-shutdown, so it stays connected).
#
# Knobs from /test/config.sh (written by the host script):
#   VT_SERIAL    the disk's serial
#   VT_TEST_ID   the vbus-test device's id

# shellcheck source=tests/qemu/lib/guest.sh
. /test/lib.sh
# shellcheck disable=SC1091
[ -f /test/config.sh ] && . /test/config.sh
: "${VT_SERIAL:=sd-blk}"
: "${VT_TEST_ID:=2}"

# disk SERIAL: the vbdN whose serial is SERIAL.
disk() {
	local d
	for d in /sys/block/vbd*; do
		[ -r "$d/serial" ] && [ "$(cat "$d/serial")" = "$1" ] &&
			echo "${d##*/}" && return 0
	done
	return 1
}
# inflight DISK: requests of DISK the host has not completed, both ways
inflight() {
	local r w
	read -r r w <"/sys/block/$1/inflight"
	echo "$((r + w))"
}
busy() { [ "$(inflight "$1")" -gt 0 ]; }

vt_check load vt_kmod_load vbus_pcibridge || { vt_done; exit 0; }
vt_check load-blk vt_kmod_load vbus_blk
vt_check load-test vt_kmod_load vbus_test
vt_check load-ipc vt_kmod_load vbus_ipc

check_traffic() {
	local D T=/sys/bus/vbus-proxy/devices/$VT_TEST_ID
	vt_check traffic/disk vt_wait 20 disk "$VT_SERIAL" || return
	D=$(disk "$VT_SERIAL")
	vt_check traffic/test-bound vt_wait 20 test -e "$T/driver" || return
	# reads and writes that never end: the kernel goes down under them
	(while :; do dd if="/dev/$D" of=/dev/null bs=64k 2>/dev/null; done) &
	(while :; do dd if=/dev/zero of="/dev/$D" bs=64k count=512 2>/dev/null; done) &
	(echo 100000000 >"$T/run_ring") 2>/dev/null &
	vt_check traffic/in-flight vt_wait 20 busy "$D"
	# the file stays open through the poweroff: only .shutdown ends it
	/test/ipc-peer guest /dev/vbus-ipc0 send 100000000 --timeout 600000 >/tmp/ipc.out 2>&1 &
	vt_check traffic/ipc-attached vt_wait 30 grep -q attached /tmp/ipc.out
	echo "shutdown: powering off with $(inflight "$D") disk request(s) in flight"
}

vt_run_checks traffic
vt_done
