#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vbus-blk nbd= and image=: `ctl add` on a running daemon waits for no
# NBD server and no storage daemon. Against a server that takes the
# connection and never answers, the add is answered at once ("pending"),
# the guest's other requests (ctl stats) keep being answered, and at
# nbd_timeout the device gives up: gone, the reason in the log and in
# the guest's add_error, word for word what the command line says for
# the same device. image= is pending while its qemu-storage-daemon
# starts, ready once it serves; a second one on the image gives up with
# the storage daemon's lock error.
# shellcheck source=tests/hostd/cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"

# the stalled server: listens, never accepts (the kernel's backlog
# completes the connect), until this script ends
python3 - "$T/stall.sock" "$T/stall.up" <<'EOF' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(4)
open(sys.argv[2], "w").close()
time.sleep(600)
EOF
pids+=($!)
wait_file "$T/stall.up" || { fail "the stalled server did not start"; finish; }
# image='s storage daemons keep their private directories in $T
export RUNTIME_DIRECTORY=$T
NBD="type=vbus-blk,id=3,nbd=nbd+unix:///?socket=$T/stall.sock,nbd_timeout=2"
GUEST=(--guest "g1:sock=$T/g1.sock,mem=$T/g1.ram,size=8M")

start_daemon "${C[@]}" "${GUEST[@]}" || finish
expect_ok "ctl add answers at once" \
	"^adding vbus-blk device 3 to g1: pending until its backend is ready" \
	add g1 "$NBD"
expect_ok "the device is pending" "id=3 type=vbus-blk state=pending" \
	stats g1 3
# wait_stats REGEX CTLARGS...: `ctl stats CTLARGS` matches REGEX (in
# $T/stats), 20 s at most
wait_stats() {
	local re=$1 _
	shift
	for _ in $(seq 400); do
		"$HOSTD" ctl "${C[@]}" stats "$@" >"$T/stats" 2>&1
		grep -Eq -- "$re" "$T/stats" && return 0
		sleep 0.05
	done
	return 1
}
# given up at nbd_timeout (2 s: the checks above have 2 s on a loaded host)
wait_stats "add_error=" g1
expect_ok "the guest's add_error says why" \
	"add_error=\"guest g1: device 3 \(vbus-blk\): nbd=.*: no answer from the server within nbd_timeout=2 s\"" \
	stats g1
if "$HOSTD" ctl "${C[@]}" stats g1 3 >"$T/out" 2>&1; then
	fail "device 3 is still there after it gave up: $(cat "$T/out")"
else
	echo "ok: device 3 is gone"
fi
why=$(sed -n 's/.*add_error="\([^"]*\)".*/\1/p' "$T/stats")
if [ -n "$why" ] && grep -qF "$why" "$T/daemon.err"; then
	echo "ok: logged: $why"
else
	fail "not in the daemon's log: '$why'"
fi

# image=: the storage daemon's start is not waited for either; a second
# device on the same image gives up with the storage daemon's words
qemu-img create -q -f qcow2 "$T/disk.qcow2" 8M || fail "qemu-img create"
expect_ok "ctl add image= answers at once" \
	"^adding vbus-blk device 4 to g1: pending" \
	add g1 "type=vbus-blk,id=4,image=$T/disk.qcow2"
if wait_stats "id=4 type=vbus-blk state=closed" g1 4; then
	echo "ok: device 4 is ready once its storage daemon serves"
else
	fail "device 4 never got ready: $(cat "$T/stats")"
fi
expect_ok "a second device on the image: pending" \
	"^adding vbus-blk device 5 to g1: pending" \
	add g1 "type=vbus-blk,id=5,image=$T/disk.qcow2"
# (ctl escapes the quotes around write)
if wait_stats 'add_error="guest g1: device 5 \(vbus-blk\): image=.*disk.qcow2: qemu-storage-daemon: .*Failed to get .*write.* lock' g1; then
	echo "ok: device 5 gave up with the storage daemon's words"
else
	fail "device 5: $(cat "$T/stats")"
fi
stop_daemon

# the same device on the command line: waited for, the same words
timeout 30 "$HOSTD" --ctl "$T/ctl2.sock" "${GUEST[@]}" --device "g1:$NBD" \
	>"$T/out" 2>"$T/err" </dev/null
if [ -n "$why" ] && [ "$(head -1 "$T/err")" = "vbus-hostd: $why" ]; then
	echo "ok: the command line says the same"
else
	fail "the command line says otherwise: $(head -1 "$T/err")"
fi
finish
