#!/usr/bin/env bash
# vbus-ipc over the real transport: builds vbus_core/vbus_proxy/
# vbus_pcibridge/vbus_ipc (make modules VBUS_SUBDIRS="kernel/bus kernel/pci_bridge ..."),
# vbus-hostd and ipc-peer (static, CMake into $VBUS_BUILD/cmake), starts
# vbus-hostd with one guest and an ipc device (service "echo"), and boots
# the guest with its vbus ivshmem-doorbell plus the ipc channel's own.
# On the host, one ipc-peer host process per session, in the order the
# guest script (guest/ipc-tests.sh) expects them:
#   echo             the exchange (--msgs messages both ways)
#   die-after 2000   killed mid-stream: the guest must get -EPIPE
#   echo             reopen works
#   garbage          a descriptor outside the area: the guest faults it
#   echo             the guest process is SIGKILLed: this one must end
#                    with -EPIPE (exit 0); rmmod refused meanwhile
#   echo-check       both processes sleep in a poll loop of their own
#                    (ipc-peer host-poll / guest-poll: ioq_ipc_arm +
#                    ioq_ipc_pollfd); the guest's closing must end it
#   echo x (cycles+1) open/close cycles, slab compared
# Prints PASS/FAIL lines and "N passed, N failed"; exits non-zero on failure.
#
#   tests/qemu/run-ipc-tests.sh [--msgs N] [--cycles N] [--mem SIZE]
#                               [--timeout SEC] [--no-build] [--demo]
#                               [--soak N] [--bench]
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

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=tests/qemu/lib/suite.sh
source "$here/lib/suite.sh"

msgs=100000 cycles=20 mem=512M timeout=600 build=1 demo=0 bench=0 soak=0
while (($#)); do
	case "$1" in
	--msgs) msgs=$2; shift 2 ;;
	--cycles) cycles=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	--demo) demo=1; shift ;;
	--bench) bench=1; shift ;;
	--soak) soak=1 demo=1 msgs=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) vbus_err "unknown argument $1 (see --help)"; exit 2 ;;
	esac
done
for v in "$msgs" "$cycles" "$timeout"; do
	[[ "$v" =~ ^[0-9]+$ ]] || { vbus_err "not a number: $v"; exit 2; }
done

passed=0 failed=0
h_pass() { passed=$((passed + 1)); printf 'PASS %s\n' "$1"; }
h_fail() { failed=$((failed + 1)); printf 'FAIL %s %s\n' "$1" "${*:2}"; }
finish() {
	printf '%d passed, %d failed\n' "$passed" "$failed"
	((failed == 0))
	exit $?
}

t_start=$(vbus_now)
vbus_fetch_kernel
out="$VBUS_BUILD/qemu/ipc-tests"
cbuild="$VBUS_BUILD/cmake"
mkdir -p "$out"

# ---- build ---------------------------------------------------------------
if ((build)); then
	if ! step=$(vbus_build_stack "kernel/bus kernel/pci_bridge kernel/vbus_test kernel/vbus_ipc" "$out" "$cbuild"); then
		h_fail "$step" "build failed (log $out/$step.log)"
		finish
	fi
	if ! cmake --build "$cbuild" --target ipc-peer -j2 >"$out/build-peer.log" 2>&1; then
		h_fail build-ipc-peer "(log $out/build-peer.log)"
		finish
	fi
fi
kos=("$top/vbus_core.ko" "$top/kernel/bus/vbus_proxy.ko"
	"$top/kernel/pci_bridge/vbus_pcibridge.ko" "$top/kernel/vbus_ipc/vbus_ipc.ko")
for ko in "${kos[@]}"; do
	[[ -f "$ko" ]] || { h_fail build "$ko not built"; finish; }
done
hostd=$(vbus_find_hostd "$cbuild") || { h_fail build "no vbus-hostd binary under $cbuild"; finish; }
peer=$(find "$cbuild" -type f -name ipc-peer -perm -u+x | head -n 1)
[[ -n "$peer" ]] || { h_fail build "no ipc-peer under $cbuild"; finish; }

# ---- run directory, cleanup ------------------------------------------------
run=$(mktemp -d /tmp/vbus-ipc.XXXXXX)
tag="vbus-ipc-$$"
hostd_pid= sup_pid=
cleanup() {
	rm -f "$run/supervise"
	if [[ -n "$sup_pid" ]]; then kill "$sup_pid" 2>/dev/null || true; fi
	if [[ -f "$run/peer.pid" ]]; then kill -9 "$(cat "$run/peer.pid")" 2>/dev/null || true; fi
	if [[ -f "$run/qemu.pid" ]]; then kill -9 "$(cat "$run/qemu.pid")" 2>/dev/null || true; fi
	vbus_stop_pid "$hostd_pid"
	rm -rf "$run"
	rm -f "/dev/shm/$tag-g1"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- initramfs ------------------------------------------------------------------
s="$run/stage"
mkdir -p "$s/test"
cp "$here/guest/lib.sh" "$s/test/lib.sh"
cp "$here/guest/ipc-tests.sh" "$s/test/run.sh"
cp "$peer" "$s/test/ipc-peer"
# bench: one guest echo session per measurement
bench_runs=("rr 2000 1" "rr 2000 4096" "stream 20000 4096 1" "stream 20000 4096 32"
	"stream 5000 65536 32")
printf 'VIPC_MSGS=%s\nVIPC_CYCLES=%s\nVIPC_DEMO=%s\nVIPC_BENCH=%s\n' "$msgs" "$cycles" "$demo" \
	"$((bench ? ${#bench_runs[@]} : 0))" >"$s/test/config.sh"
vbus_initramfs_add_kmods "$s" "${kos[@]}" || { h_fail initramfs "modules"; finish; }
vbus_make_initramfs "$run/ipc.cpio.gz" "$s" >/dev/null

ipc_geom="count=256,bufsize=4096"
((bench)) && ipc_geom="count=64,bufsize=65536"
# ---- vbus-hostd -----------------------------------------------------------------------
"$hostd" --foreground --ctl "$run/ctl.sock" \
	--guest "g1:sock=$run/g1.sock,mem=/dev/shm/$tag-g1,size=$mem" \
	--device "g1:type=vbus-ipc,id=5,service=echo,sock=$run/echo.sock,qsock=$run/ipc-q.sock,$ipc_geom" \
	>"$out/hostd.log" 2>&1 &
hostd_pid=$!
for _ in $(seq 100); do
	[[ -S "$run/g1.sock" && -S "$run/echo.sock" && -S "$run/ipc-q.sock" ]] && break
	kill -0 "$hostd_pid" 2>/dev/null || break
	sleep 0.1
done
if [[ -S "$run/g1.sock" && -S "$run/echo.sock" && -S "$run/ipc-q.sock" ]]; then
	h_pass hostd-started
else
	sed 's/^/    hostd: /' "$out/hostd.log" | tail -n 20
	h_fail hostd-started "vbus-hostd did not come up (log $out/hostd.log)"
	finish
fi

# ---- the host processes, one per session -------------------------------------------
# "poll:" = ipc-peer host-poll: the host process sleeps in a poll loop of
# its own (ioq_ipc_arm + ioq_ipc_pollfd), as the guest's does then
modes=("echo" "die-after 2000" "echo" "garbage" "echo" "poll:echo-check")
for ((i = 0; i <= cycles; i++)); do modes+=("echo"); done
expect=(0 137 0 0 0 0)
for ((i = 0; i <= cycles; i++)); do expect+=(0); done
names=(exchange host-killed reopen garbage guest-killed own-loop)
if ((soak)); then
	modes=("echo-check") expect=(0) names=(exchange-checked)
elif ((demo)); then
	modes=("echo") expect=(0) names=(exchange)
elif ((bench)); then
	modes=("${bench_runs[@]}") expect=() names=()
	for m in "${modes[@]}"; do expect+=(0); names+=("${m// /-}"); done
fi
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

# ---- the guest --------------------------------------------------------------------------
mapfile -t args < <(vbus_transport_args "/dev/shm/$tag-g1" "$mem" "$run/g1.sock")
args+=(-chardev "socket,id=ipc0,path=$run/ipc-q.sock"
	-device "ivshmem-doorbell,chardev=ipc0,vectors=2"
	-pidfile "$run/qemu.pid")
t0=$(vbus_now)
rc=0
vbus_boot_guest --initrd "$run/ipc.cpio.gz" --log "$out/guest.log" --mem "$mem" \
	--timeout "$timeout" -- "${args[@]}" >"$out/boot.out" 2>&1 || rc=$?
guest_secs=$(vbus_elapsed "$t0")
((rc == 0)) || h_fail guest-boot "QEMU failed or timed out (log $out/guest.log, $out/boot.out)"
vbus_add_results "$out/guest.log" guest || true

# ---- the host processes' side -------------------------------------------------------------
rm -f "$run/supervise"
# the last host process exits once the guest closed; a busy host may take a while
for _ in $(seq 300); do
	(($(wc -l <"$run/host-exits" 2>/dev/null || echo 0) >= ${#modes[@]})) && break
	sleep 0.1
done
kill "$sup_pid" 2>/dev/null || true
[[ -f "$run/peer.pid" ]] && kill -9 "$(cat "$run/peer.pid")" 2>/dev/null || true
mapfile -t exits <"$run/host-exits" 2>/dev/null || exits=()
for ((i = 0; i < ${#names[@]}; i++)); do
	if [[ "${exits[$i]:-none}" == "${expect[$i]}" ]]; then
		h_pass "host/${names[$i]}-exit-${expect[$i]}"
	else
		h_fail "host/${names[$i]}-exit-${expect[$i]}" "got ${exits[$i]:-none} (log $out/host-peers.log)"
	fi
done
bad=0
for ((i = ${#names[@]}; i < ${#modes[@]}; i++)); do
	[[ "${exits[$i]:-none}" == 0 ]] || bad=$((bad + 1))
done
if ((!demo && !bench)); then
	if ((bad == 0)); then h_pass "host/cycles-all-ended-cleanly"; else h_fail "host/cycles-all-ended-cleanly" "$bad not 0"; fi
fi
if kill -0 "$hostd_pid" 2>/dev/null && "$hostd" ctl --ctl "$run/ctl.sock" stats g1 5 >"$out/stats.txt" 2>&1; then
	h_pass hostd-alive-at-end
	sed 's/^/    ctl stats: /' "$out/stats.txt"
else
	h_fail hostd-alive-at-end "(log $out/hostd.log)"
fi

printf '\nfigures (accel=%s, 2 vCPUs, kernel %s):\n' "$(vbus_qemu_accel)" "$VBUS_KVER"
tr -d '\r' <"$out/guest.log" | grep -aoE 'vbus-ipc-tests: .*' | sed 's/^/    /' || true
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
printf 'guest: %s s; total %s s; logs in %s\n' "$guest_secs" "$(vbus_elapsed "$t_start")" "$out"
finish
