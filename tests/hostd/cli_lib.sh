# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Shared by the vbus-hostd command-line tests (test_cli.sh, test_ownership.sh,
# test_ctl_errors.sh): source it with the vbus-hostd binary as $1.
#   expect_fail WHAT REGEX ARGS...   vbus-hostd ARGS fails, stderr matches
#   expect_ok WHAT REGEX CTLARGS...  vbus-hostd ctl "${C[@]}" CTLARGS succeeds,
#                                    stdout matches
#   start_daemon ARGS...             a daemon (forking mode); sets $pid
#   stop_daemon                      SIGTERM it and wait
#   finish                           the summary line and exit status
set -u
HOSTD=${1:?usage: $0 path/to/vbus-hostd}
T=$(mktemp -d /tmp/vbus-hostd-cli.XXXXXX)
C=(--ctl "$T/ctl.sock")
fails=0
pid=
pids=()

cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# no sanitizer report in FILE
clean_log() {
	if grep -q "Sanitizer" "$2"; then
		fail "$1: sanitizer report:"; sed 's/^/    /' "$2"
		return 1
	fi
	return 0
}

expect_fail() {
	local what=$1 re=$2 rc
	shift 2
	# bounded: an input that hangs the daemon (a FIFO) is a failure too
	timeout 30 "$HOSTD" "$@" >"$T/out" 2>"$T/err" </dev/null
	rc=$?
	[ $rc -eq 124 ] && echo "(timed out after 30 s)" >>"$T/err"
	if [ $rc -eq 0 ]; then
		fail "$what: exit 0"; return
	fi
	if ! grep -Eq -- "$re" "$T/err"; then
		fail "$what: stderr does not match /$re/:"; sed 's/^/    /' "$T/err"
		return
	fi
	clean_log "$what" "$T/err" || return
	echo "ok: $what (exit $rc): $(head -1 "$T/err")"
}

expect_ok() {
	local what=$1 re=$2
	shift 2
	if ! "$HOSTD" ctl "${C[@]}" "$@" >"$T/out" 2>"$T/err"; then
		fail "$what: exit non-zero: $(cat "$T/err")"; return
	fi
	if ! grep -Eq -- "$re" "$T/out"; then
		fail "$what: output does not match /$re/:"; sed 's/^/    /' "$T/out"
		return
	fi
	echo "ok: $what"
}

# wait_file FILE: up to 20 s (a busy CI vCPU) for FILE to exist
wait_file() {
	for _ in $(seq 400); do
		[ -e "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

# drip_client SOCK BYTE: in the background ($drip), a ctl client that sends
# "l", then BYTE every 0.25 s for 30 s, never a whole request; 0 once it
# is connected, 1 if it never was
drip_client() {
	rm -f "$T/dripping"
	python3 - "$1" "$T/dripping" "$2" <<'EOF' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.send(b"l")
open(sys.argv[2], "w").close()
try:
    for _ in range(120):
        time.sleep(0.25)
        s.send(sys.argv[3].encode())
except OSError:
    pass
EOF
	# shellcheck disable=SC2034 # the caller waits for or kills it
	drip=$!
	wait_file "$T/dripping"
}

# start_daemon ARGS...: 0 and $pid set, or 1 with the reason printed
start_daemon() {
	local ready rc
	ready=$("$HOSTD" "$@" 2>>"$T/daemon.err")
	rc=$?
	if [ $rc -ne 0 ] || ! echo "$ready" | grep -q "ready pid"; then
		fail "daemon start (rc $rc): $ready"; cat "$T/daemon.err"
		return 1
	fi
	pid=$(echo "$ready" | sed -n 's/.*ready pid \([0-9]*\).*/\1/p')
	pids+=("$pid")
	echo "ok: daemon started: $ready"
}

stop_daemon() {
	kill "$pid" 2>/dev/null
	# 10 s: a loaded CI machine stalls the daemon for seconds
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		fail "daemon $pid did not exit on SIGTERM"
		return 1
	fi
	return 0
}

finish() {
	[ -f "$T/daemon.err" ] && clean_log "daemon" "$T/daemon.err"
	echo "$fails failure(s)"
	[ $fails -eq 0 ]
	exit
}
