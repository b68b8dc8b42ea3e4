#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# vbus-blk nbd=: `ctl add` on a running daemon waits for no NBD server.
# Against a server that takes the connection and never answers, the add
# is answered at once ("pending"), the guest's other requests (ctl
# stats) keep being answered, and at nbd_timeout the device gives up:
# gone, the reason in the log and in the guest's add_error, word for
# word what the command line says for the same device.
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
NBD="type=vbus-blk,id=3,nbd=nbd+unix:///?socket=$T/stall.sock,nbd_timeout=1"
GUEST=(--guest "g1:sock=$T/g1.sock,mem=$T/g1.ram,size=8M")

start_daemon "${C[@]}" "${GUEST[@]}" || finish
expect_ok "ctl add answers at once" \
	"^adding vbus-blk device 3 to g1: pending until its backend is ready" \
	add g1 "$NBD"
expect_ok "the device is pending" "id=3 type=vbus-blk state=pending" \
	stats g1 3
# given up at nbd_timeout (1 s): bounded wait for the guest's add_error
for _ in $(seq 200); do
	"$HOSTD" ctl "${C[@]}" stats g1 >"$T/stats" 2>&1
	grep -q "add_error=" "$T/stats" && break
	sleep 0.05
done
expect_ok "the guest's add_error says why" \
	"add_error=\"guest g1: device 3 \(vbus-blk\): nbd=.*: no answer from the server within nbd_timeout=1 s\"" \
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
