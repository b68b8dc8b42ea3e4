#!/usr/bin/env bash
# vbus-ipc over the real transport: vbus-hostd with one guest and an ipc
# device (service "echo"); the guest boots with its vbus ivshmem-doorbell
# plus the ipc channel's own. On the host, one ipc-peer host process per
# session, in the order the guest (guest.sh) expects them, per check group:
#   exchange       echo: --msgs messages both ways
#   host_killed    die-after 2000: killed mid-stream, the guest gets -EPIPE
#   reopen         echo: reopen works
#   garbage        a descriptor outside the area: the guest faults it
#   guest_killed   echo: the guest process is SIGKILLed: this one must end
#                  with -EPIPE (exit 0); rmmod refused meanwhile
#   own_loop       echo-check: both processes sleep in a poll loop of their
#                  own (ipc-peer host-poll / guest-poll); the guest's
#                  closing must end it
#   cycles         echo x (cycles+1): open/close cycles, slab compared
#
#   tests/qemu/run.sh vbus_ipc[:REGEX] [--msgs N] [--cycles N] [--demo]
#                                      [--soak N] [--bench]
#
#   --demo    only the exchange (scripts/main.sh shows it)
#   --soak N  only the exchange, of N messages, and the host process
#             checks each one too (ipc-peer echo-check: sequence number,
#             length, checksum), so both directions are verified; the
#             soak-ipc stage of scripts/test.sh (VBUS_SOAK_IPC_MSGS, 10^7)
#   --bench   figures instead of tests: the guest process echoes, the host
#             process measures (host clock): round trips of 1 B and 4 KiB
#             (min/p50/p99), streams of 4 KiB at batch 1 and 32 and of
#             64 KiB at batch 32 (messages/s, MB/s one way), doorbells per
#             message; table on stdout, $VBUS_BUILD/bench/ipc-alone.json
#             (bench/ipc-vs-tcp.sh compares with TCP over venet/virtio-net)
set -euo pipefail
# shellcheck source=tests/qemu/lib/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/lab.sh"

msgs=100000 cycles=20 mem=512M demo=0 bench=0 soak=0
lab_begin vbus_ipc msgs:N cycles:N demo:demo=1 bench:bench=1 soak:N -- "$@"
((soak == 0)) || demo=1 msgs=$soak

lab_build --modules "$LAB_BUS_SUBDIRS" --cmake "vbus-hostd ipc-peer"
lab_kos --bus kernel/vbus_ipc/vbus_ipc.ko
peer=$(find "$cbuild" -type f -name ipc-peer -perm -u+x | head -n 1)
[[ -n "$peer" ]] || { h_fail build "no ipc-peer under $cbuild"; finish; }

# the host processes, one per session: "poll:" = ipc-peer host-poll (a
# poll loop of its own, as the guest's); expected exit status; name
modes=() expect=() names=()
session() { modes+=("$1") expect+=("$2") names+=("${3:-}"); }
if ((bench)); then
	for m in "rr 2000 1" "rr 2000 4096" "stream 20000 4096 1" "stream 20000 4096 32" \
		"stream 5000 65536 32"; do
		session "$m" 0 "${m// /-}"
	done
elif ((soak)); then
	session echo-check 0 exchange-checked
elif ((demo)); then
	session echo 0 exchange
else
	! lab_want exchange || session echo 0 exchange
	! lab_want host_killed || session "die-after 2000" 137 host-killed
	! lab_want reopen || session echo 0 reopen
	! lab_want garbage || session garbage 0 garbage
	! lab_want guest_killed || session echo 0 guest-killed
	! lab_want own_loop || session poll:echo-check 0 own-loop
	if lab_want cycles; then
		for ((i = 0; i <= cycles; i++)); do session echo 0; done
	fi
fi

lab_stage guest "$(dirname "$0")/guest.sh" "${kos[@]}" --file "$peer" <<CONFIG
VIPC_MSGS=$msgs
VIPC_CYCLES=$cycles
VIPC_DEMO=$demo
VIPC_BENCH=$((bench ? ${#modes[@]} : 0))
CONFIG

ipc_geom="count=256,bufsize=4096"
((bench)) && ipc_geom="count=64,bufsize=65536"
lab_hostd -- --guest "$(lab_guest g1)" \
	--device "g1:type=vbus-ipc,id=5,service=echo,sock=$run/echo.sock,qsock=$run/ipc-q.sock,$ipc_geom"

: >"$out/host-peers.log"
touch "$run/supervise"
(
	for m in "${modes[@]}"; do
		[[ -f "$run/supervise" ]] || break
		side=host
		[[ "$m" == poll:* ]] && side=host-poll m=${m#poll:}
		# shellcheck disable=SC2086 # the mode is "action [arg]"
		"$peer" "$side" "$run/echo.sock" $m --timeout 600000 >>"$out/host-peers.log" 2>&1 &
		echo $! >"$run/peer.pid"
		rc=0
		wait $! || rc=$?
		echo "$rc" >>"$run/host-exits"
	done
) &
sup_pid=$!
lab_defer "rm -f $run/supervise; kill $sup_pid 2>/dev/null"

lab_run guest --guest g1 -- -chardev "socket,id=ipc0,path=$run/ipc-q.sock" \
	-device "ivshmem-doorbell,chardev=ipc0,vectors=2"

# ---- the host processes' side ----
rm -f "$run/supervise"
# the last host process exits once the guest closed; a busy host may take a while
for _ in $(seq 300); do
	(($(wc -l <"$run/host-exits" 2>/dev/null || echo 0) >= ${#modes[@]})) && break
	sleep 0.1
done
kill "$sup_pid" 2>/dev/null || true
if [[ -f "$run/peer.pid" ]]; then kill -9 "$(cat "$run/peer.pid")" 2>/dev/null || true; fi
mapfile -t exits <"$run/host-exits" 2>/dev/null || exits=()
bad=0 ncycles=0
for ((i = 0; i < ${#modes[@]}; i++)); do
	if [[ -z "${names[$i]}" ]]; then
		ncycles=$((ncycles + 1))
		[[ "${exits[$i]:-none}" == 0 ]] || bad=$((bad + 1))
	elif [[ "${exits[$i]:-none}" == "${expect[$i]}" ]]; then
		h_pass "host/${names[$i]}-exit-${expect[$i]}"
	else
		h_fail "host/${names[$i]}-exit-${expect[$i]}" "got ${exits[$i]:-none} (log $out/host-peers.log)"
	fi
done
if ((ncycles)); then
	if ((bad == 0)); then h_pass "host/cycles-all-ended-cleanly"; else h_fail "host/cycles-all-ended-cleanly" "$bad not 0"; fi
fi
if kill -0 "$hostd_pid" 2>/dev/null && ctl stats g1 5 >"$out/stats.txt" 2>&1; then
	h_pass hostd-alive-at-end
	sed 's/^/    ctl stats: /' "$out/stats.txt"
else
	h_fail hostd-alive-at-end "(log $out/hostd.log)"
fi

printf '\nfigures:\n'
lab_figures guest 'vbus-ipc-tests: .*'
grep -aE '^ipc-peer: (echo|echo-check|die-after):' "$out/host-peers.log" | head -n 1 | sed 's/^/    host: /' || true
if ((bench)); then
	mkdir -p "$VBUS_BUILD/bench"
	printf '\nvbus-ipc, guest process <-> host process (host clock; accel=%s):\n' "$(vbus_qemu_accel)"
	grep -aE '^ipc-(rr|stream) ' "$out/host-peers.log" | sed 's/^/    /' || true
	grep -aE '^ipc-(rr|stream) ' "$out/host-peers.log" | python3 -c '
import json, sys
rows = []
for line in sys.stdin:
    kind, *kv = line.split()
    row = {"kind": kind}
    for f in kv:
        k, v = f.split("=")
        row[k] = float(v)
    rows.append(row)
json.dump({"transport": "vbus-ipc", "runs": rows}, sys.stdout, indent=1)
' >"$VBUS_BUILD/bench/ipc-alone.json" && printf '    json: %s\n' "$VBUS_BUILD/bench/ipc-alone.json"
fi
lab_summary guest
