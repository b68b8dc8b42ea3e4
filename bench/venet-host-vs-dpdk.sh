#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# venet's host path against DPDK's shared-memory backends, host only (no
# QEMU, no TCG), in one run on the same two CPUs.
#
#   bench/venet-host-vs-dpdk.sh [--rounds N] [--secs S] [--sizes "64 1500"]
#                               [--cpus G,H] [--quick] [--bench PATH]
#
# Per round and frame size, alternating the order every round:
#   vbus-poll   venet-host-bench --mode poll: the tests' fake guest
#               (venet.ko's role calls) transmits through libvbus-hostd's
#               loop thread and the venet device into its null backend
#               (one copy of each frame out of guest memory), both sides
#               polling (guest spins, host tx_poll_us=10000)
#   vbus-sleep  the same, both sides sleeping (host in epoll, guest on its
#               interrupt when the ring is full)
#   memif       dpdk-testpmd --forward-mode=txonly on a net_memif server
#               -> dpdk-testpmd --forward-mode=rxonly on its client
#               (non-zero-copy memif: the tx copies into the shared
#               buffers, the rx copies out into mbufs), both polling
#   vhost       dpdk-testpmd txonly on net_virtio_user -> rxonly on
#               net_vhost (vhost-user over a unix socket), both polling
# The sending side runs on CPU G, the receiving side on H (DPDK's main
# lcores, which only print stats, on the other CPU). All DPDK runs use
# --no-huge (no hugepages here) and a private --file-prefix.
# venet-host-bench is built RelWithDebInfo in $VBUS_BUILD/cmake (the QEMU
# lab's tree) unless --bench PATH names one; the first line says which
# build type ran, and a note says when it is not an optimised one.
# Prints Mpps and ns per frame (median [min..max] over the rounds) and
# each figure's ratio to memif's of the same round; never judges them.
# --quick (the ctest smoke) runs 1 short round at 64 bytes and checks only
# that every row has a number or says why it has none, and that no sleep
# of the vbus guest ended by its 1 s timeout instead of an interrupt.
set -u
ROUNDS=5
SECS=2
SIZES="64 1500"
CPUS=0,1
QUICK=0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=

while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=$2; shift ;;
	--secs) SECS=$2; shift ;;
	--sizes) SIZES=$2; shift ;;
	--cpus) CPUS=$2; shift ;;
	--quick) QUICK=1; ROUNDS=1; SECS=1; SIZES=64 ;;
	--bench) BENCH=$2; shift ;;
	-h|--help) sed -n '3,33p' "$0"; exit 0 ;;
	*) echo "unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
case $ROUNDS$SECS in *[!0-9]*) echo "--rounds/--secs: whole numbers" >&2; exit 2 ;; esac
G=${CPUS%,*}
H=${CPUS#*,}
# Without --bench, an optimised build of its own (RelWithDebInfo, as the
# QEMU lab builds vbus-hostd): DPDK's PMDs are compiled with -O3, and a
# Debug (-O0) venet-host-bench measured 2.8x the host ns per frame.
if [ -z "$BENCH" ]; then
	CBUILD=${VBUS_BUILD:-$ROOT/build}/cmake
	if ! { cmake -S "$ROOT" -B "$CBUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
		cmake --build "$CBUILD" -j"$(nproc)" --target venet-host-bench; } \
		>"${TMPDIR:-/tmp}/venet-host-bench-build.log" 2>&1; then
		tail -n 20 "${TMPDIR:-/tmp}/venet-host-bench-build.log" >&2
		echo "venet-host-bench did not build" >&2
		exit 1
	fi
	BENCH=$CBUILD/bench/venet-host-bench
fi
[ -x "$BENCH" ] || { echo "not built: $BENCH" >&2; exit 1; }
# the build type the binary came from, for the report's first line
BUILD_TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' \
	"$(dirname "$(dirname "$BENCH")")/CMakeCache.txt" 2>/dev/null)

T=$(mktemp -d /tmp/vbus-hostdpdk.XXXXXX)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${VBUS_BENCH_KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
RAW=$T/raw.txt
: >"$RAW"

# one line per measurement: KIND SIZE ROUND MPPS | KIND SIZE ROUND - WHY
record() { echo "$*" >>"$RAW"; }

run_vbus() {	# mode size round
	local out
	if out=$("$BENCH" --mode "$1" --size "$2" --ms $((SECS * 1000)) \
		--cpus "$G,$H" 2>&1); then
		record "vbus-$1 $2 $3 $(sed -n 's/.* mpps=\([0-9.]*\).*/\1/p' <<<"$out")"
		echo "$out" >>"$T/vbus.log"
	else
		record "vbus-$1 $2 $3 - $(tail -1 <<<"$out")"
	fi
}

TESTPMD=$(command -v dpdk-testpmd || true)
DPDK_WHY=
if [ -z "$TESTPMD" ]; then
	DPDK_WHY="dpdk-testpmd not installed (Debian's dpdk-dev; scripts/deps.sh)"
fi

# testpmd on lcores G and H: forwarding on $1's CPU, main lcore on the other
testpmd() {	# fwdcpu prefix log vdev mode size
	local main=$G
	[ "$1" = "$G" ] && main=$H
	"$TESTPMD" -l "$G,$H" --main-lcore "$main" --no-huge -m 256 --no-pci \
		--file-prefix "$2" --log-level=lib.eal:error --vdev="$4" -- \
		--forward-mode="$5" --txpkts="$6" --nb-cores=1 \
		--total-num-mbufs=16384 --stats-period 1 >"$3" 2>&1 &
	PIDS+=($!)
}

# Wait (up to 30 s) until file $1 has a line with $2: a listening server
# (its socket file exists before it listens), the first statistics.
await() {
	local _
	for _ in $(seq 300); do
		grep -aq "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# Mean Rx-pps of the receiver's samples after the first (start-up).
rx_mpps() {
	tr -d '\033' <"$1" | sed -n 's/.*Rx-pps: *\([0-9]*\).*/\1/p' |
		awk 'NR > 1 && $1 > 0 { s += $1; n++ }
		     END { if (n) printf "%.3f\n", s / n / 1e6 }'
}

run_dpdk() {	# kind size round
	local kind=$1 size=$2 round=$3 sock=$T/$1.sock tx rx mpps
	rm -f "$sock"
	if [ -n "$DPDK_WHY" ]; then
		record "$kind $size $round - $DPDK_WHY"
		return
	fi
	PIDS=()
	# the socket's server first (memif: the sender; vhost: the receiver)
	if [ "$kind" = memif ]; then
		tx=net_memif0,role=server,socket=$sock,socket-abstract=no
		rx=net_memif0,role=client,socket=$sock,socket-abstract=no
		testpmd "$G" "vb-tx$$" "$T/$kind-tx.log" "$tx" txonly "$size"
		await "$T/$kind-tx.log" "start packet forwarding"
		testpmd "$H" "vb-rx$$" "$T/$kind-rx.log" "$rx" rxonly "$size"
	else
		tx=net_virtio_user0,path=$sock,queues=1
		rx=net_vhost0,iface=$sock,queues=1
		testpmd "$H" "vb-rx$$" "$T/$kind-rx.log" "$rx" rxonly "$size"
		await "$T/$kind-rx.log" "start packet forwarding"
		testpmd "$G" "vb-tx$$" "$T/$kind-tx.log" "$tx" txonly "$size"
	fi
	# from the receiver's first statistics on: that sample is skipped
	await "$T/$kind-rx.log" "Rx-pps" && await "$T/$kind-tx.log" "Tx-pps"
	sleep $((SECS + 1)).5
	kill -INT "${PIDS[@]}" 2>/dev/null
	wait "${PIDS[@]}" 2>/dev/null
	PIDS=()
	mpps=$(rx_mpps "$T/$kind-rx.log")
	if [ -n "$mpps" ]; then
		record "$kind $size $round $mpps"
	else
		record "$kind $size $round - testpmd: $(cat "$T/$kind-rx.log" \
			"$T/$kind-tx.log" | grep -a -m1 -iE 'cause|error -|fail|connect' |
			tr -s ' ')"
	fi
}

KINDS="vbus-poll memif vbus-sleep vhost"
echo "venet host path vs DPDK: $ROUNDS round(s) x ${SECS}s, sizes $SIZES, CPUs $G (sender) and $H (receiver); $(nproc) CPUs online, load $(cut -d' ' -f1-3 /proc/loadavg); venet-host-bench build: ${BUILD_TYPE:-unknown}"
case $BUILD_TYPE in
Release|RelWithDebInfo) ;;
*) echo "note: venet-host-bench is not an optimised build (${BUILD_TYPE:-unknown}): its figures are not comparable with DPDK's -O3" ;;
esac
for r in $(seq 1 "$ROUNDS"); do
	order=$KINDS
	[ $((r % 2)) = 0 ] && order=$(echo "$KINDS" | tr ' ' '\n' | tac | tr '\n' ' ')
	for s in $SIZES; do
		for k in $order; do
			case $k in
			vbus-*) run_vbus "${k#vbus-}" "$s" "$r" ;;
			*) run_dpdk "$k" "$s" "$r" ;;
			esac
		done
	done
	echo "round $r done" >&2
done
python3 "$ROOT/bench/venet_host_report.py" "$RAW" || exit 1
if [ -s "$T/vbus.log" ]; then
	echo
	echo "venet-host-bench's own lines (notifications per 1000 frames, CPU share of each thread):"
	cat "$T/vbus.log"
fi
if [ "$QUICK" = 1 ]; then
	# the smoke: every row has a figure or a reason, vbus's have figures
	# and no sleep of the guest ended by its timeout (a lost interrupt)
	if ! grep -q '^vbus-poll 64 1 [0-9]' "$RAW" ||
		! grep -q '^vbus-sleep 64 1 [0-9]' "$RAW" ||
		[ "$(wc -l <"$RAW")" -ne 4 ] ||
		grep -q 'lost_wakeups=[1-9]' "$T/vbus.log"; then
		cat "$RAW" "$T/vbus.log" >&2
		exit 1
	fi
fi
