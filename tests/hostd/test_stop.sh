#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# SIGTERM stops vbus-hostd within the unit's TimeoutStopSec whatever a
# control client or a guest's disk does: here both at once, a client
# sending its request a byte at a time and a guest whose thread is stuck
# in its disk's file system (FUSE, stallfs.py, stopped answering while
# `ctl add` opened a disk on it: the open waits for as long as the file
# system does not answer). ctl answers "busy" meanwhile. 5e8fef9 waited
# for that thread without limit, in ctl and at SIGTERM. Root only (FUSE).
#
#   test_stop.sh path/to/vbus-hostd
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/hostd/cli_lib.sh
. "$here/cli_lib.sh"
unit=$here/../../dist/systemd/vbus-hostd.service.in
stop_s=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)$/\1/p' "$unit")
fs=

# shellcheck disable=SC2317 # the EXIT trap runs it
stop_cleanup() {
	[ -n "$fs" ] && kill "$fs" 2>/dev/null && wait "$fs"
	umount -l "$T/mnt" 2>/dev/null
	cleanup
}
trap stop_cleanup EXIT

# gone PID: the process has exited (a zombie counts: it did exit)
gone() {
	[ ! -e "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]
}

[ -n "$stop_s" ] || { fail "no TimeoutStopSec= in $unit"; finish; }
if [ "$(id -u)" != 0 ]; then
	echo "skipped: not root (FUSE)"
	exit 77
fi
mkdir "$T/mnt"
python3 "$here/stallfs.py" "$T/mnt" "$T/fs.ready" >"$T/fs.log" 2>&1 &
fs=$!
if ! wait_file "$T/fs.ready"; then
	wait "$fs"
	rc=$?
	fs=
	if [ $rc -eq 77 ]; then
		echo "skipped: $(cat "$T/fs.log")"
		exit 77
	fi
	fail "stallfs did not start: $(cat "$T/fs.log")"
	finish
fi

start_daemon "${C[@]}" --guest "g1:sock=$T/g1.sock,mem=$T/g1.ram,size=16M" \
	--device "g1:type=vbus-blk,id=1,file=$T/mnt/disk,ro=1,direct=0" || finish

drip_client "$T/ctl.sock" i || fail "the dripping client did not connect"
# from now on the file system answers nothing: a disk added on it holds
# the guest's thread in open(2); ctl says so and goes on serving
kill -USR1 "$fs"
if timeout 60 "$HOSTD" ctl "${C[@]}" add g1 \
	"type=vbus-blk,id=2,file=$T/mnt/disk,ro=1,direct=0" >"$T/out" 2>&1; then
	fail "ctl add on the stalled file system: OK"
elif grep -q "guest g1 is busy: the request did not finish" "$T/out"; then
	echo "ok: ctl add on the stalled file system: $(cat "$T/out")"
else
	fail "ctl add on the stalled file system: $(cat "$T/out")"
fi
grep -q request_wait_answer /proc/"$pid"/task/*/wchan 2>/dev/null ||
	fail "no thread of the daemon waits for the file system"
expect_ok "list with g1 stuck" "guest=g1 state=busy" list

t0=$(date +%s%N)
kill -TERM "$pid"
for _ in $(seq $((stop_s * 20 + 200))); do
	gone "$pid" && break
	sleep 0.05
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if ! gone "$pid"; then
	fail "SIGTERM: still running after $ms ms (TimeoutStopSec=$stop_s)"
	kill -KILL "$pid" 2>/dev/null
elif [ "$ms" -ge $((stop_s * 1000)) ]; then
	fail "SIGTERM: exited after $ms ms, not within TimeoutStopSec=$stop_s"
else
	echo "ok: SIGTERM with a client dripping and a guest stuck in its disk: exited in $ms ms (TimeoutStopSec=$stop_s)"
fi
grep -e "shutdown still not done" -e "left unanswered" "$T/daemon.err" | sed 's/^/    /'
kill "$drip" 2>/dev/null
wait "$drip" 2>/dev/null
finish
