#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vbus-blk image=: the qemu-storage-daemon a vbus-hostd starts for an
# image locks it (a second vbus-hostd on the same image is refused with
# the storage daemon's reason) and dies with its vbus-hostd, a SIGKILL
# included, so a restarted vbus-hostd gets the image again.
# shellcheck source=tests/hostd/cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"

# the storage daemons' private directories: in $T, removed with it
export RUNTIME_DIRECTORY=$T
qemu-img create -q -f qcow2 "$T/disk.qcow2" 8M || { fail "qemu-img create"; finish; }
# daemon N: a guest of its own, the image
daemon_args() {
	args=("${C[@]}" --guest "g1:sock=$T/g$1.sock,mem=$T/g$1.ram,size=8M"
	      --device "g1:type=vbus-blk,id=2,image=$T/disk.qcow2")
}

daemon_args 1
start_daemon "${args[@]}" || finish
qsd=$("$HOSTD" ctl "${C[@]}" stats g1 2 | tr ' ' '\n' | sed -n 's/^image_pid=//p')
if [ -z "$qsd" ] || [ "$qsd" -le 0 ]; then
	fail "no image_pid in ctl stats"
	finish
fi
echo "ok: qemu-storage-daemon $qsd serves the image"

C=(--ctl "$T/ctl2.sock")
daemon_args 2
expect_fail "a second vbus-hostd on the image" \
	'image=.*disk.qcow2: qemu-storage-daemon: .*Failed to get "write" lock' "${args[@]}"
C=(--ctl "$T/ctl.sock")

kill -9 "$pid"
# the storage daemon's exit, waited for (bounded)
if timeout 10 tail --pid="$qsd" -f /dev/null; then
	echo "ok: qemu-storage-daemon exited with its vbus-hostd (SIGKILL)"
else
	fail "qemu-storage-daemon $qsd outlived its vbus-hostd"
	kill "$qsd" 2>/dev/null
fi

C=(--ctl "$T/ctl3.sock")
daemon_args 3
start_daemon "${args[@]}" && echo "ok: a restarted vbus-hostd gets the image"
stop_daemon
finish
