#!/usr/bin/env bash
# The main job: on a fresh Debian 12 machine, as root, from nothing to
# real traffic through vbus:
#   1. deps      scripts/deps.sh (when present)
#   2. userspace cmake into build/cmake (libioq, tools, vbus-hostd, tests)
#   2b. refusals what vbus-hostd refuses, in its own words: a RAM file
#                another user could reach, a disk on a live guest's RAM
#                file or twice through a hard link, /dev/zero as config, a
#                supervised daemon that forks, a ctl client of another uid
#                (scripts/hostd-refusals.sh)
#   3. modules   the guest kernel that matches the installed headers
#                (tests/qemu, cached in build/qemu) and `make modules`
#   4. venet     boots one guest (TCG unless hardware KVM) with the vbus
#                bridge on ivshmem and a venet NIC with 2 queue pairs
#                (one per vCPU, each on its own MSI-X vector) that
#                vbus-hostd serves on a multi-queue tap inside a private
#                network namespace; moves traffic through vbus-hostd: ping,
#                TCP request/response, iperf3 both ways (two processes) and
#                64-byte frames for a few seconds; prints throughput,
#                latency, QEMU/vbus-hostd CPU per GB, how the frames spread
#                over the pairs, the interrupts per vCPU and vbus-hostd's
#                device counters (`vbus-hostd ctl ... stats`)
#   4b. ipc      the same kind of guest with a vbus-ipc channel: a guest
#                process and a host process exchange 20000 checked messages
#                (tests/qemu/run.sh vbus_ipc --demo)
#   4c. ipc-link two such guests with a vbus-ipc link between them: a
#                process in each exchange 20000 checked messages, the data
#                path never through vbus-hostd (tests/qemu/run.sh ipc_link
#                --demo)
#   5. vbus-blk  boots one guest with a vbus-blk disk (vbus-hostd, io_uring
#                on a backing file) next to a virtio-blk disk, and a qcow2
#                disk on each (vbus-blk image=: vbus-hostd starts a
#                qemu-storage-daemon for it; virtio-blk: QEMU's qcow2
#                driver): short fio runs on all four (IOPS, MB/s, latency,
#                host CPU per I/O; one of them polled: io_uring --hipri on
#                a poll queue), then ext4 on both vbus disks: mkfs, mount,
#                files, remount, checksums (bench/blk-vs-virtio.sh --demo
#                --format qcow2)
#   6. --bench   bench/venet-vs-virtio.sh: venet against virtio-net in the
#                same guest, table + build/bench/results.{json,png}; then
#                bench/blk-vs-virtio.sh: build/bench/blk-results.{json,png}
# Without --bench it takes about 4-7 minutes once the packages are there.
#
#   scripts/main.sh [--bench] [--no-deps] [-- BENCH-ARGS...]
#
#   --bench      also run the full benchmarks (BENCH-ARGS go to the venet
#                one; default --rounds 3)
#   --no-deps    do not run scripts/deps.sh
# Exit status: non-zero when a step failed (venet that does not carry
# traffic, or a kernel problem in the guest's log, is a failure).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench=0 deps=1 bench_args=()
while (($#)); do
	case "$1" in
	--bench) bench=1; shift ;;
	--no-deps) deps=0; shift ;;
	--) shift; bench_args=("$@"); break ;;
	-h | --help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) echo "main: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
((${#bench_args[@]})) || bench_args=(--rounds 3)

t_all=$(date +%s.%N)
summary=()
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
step() { printf '\n== %s\n' "$*"; }
done_step() { summary+=("$(printf '%-10s %-4s %6s s  %s' "$1" "$2" "$3" "${4:-}")"); }
fail() {
	done_step "$1" FAIL "$2" "${3:-}"
	printf '\n== summary\n'
	printf '  %s\n' "${summary[@]}"
	echo "main: FAILED at $1${3:+: $3}" >&2
	exit 1
}

if ((EUID != 0)); then
	echo "main: run as root (apt-get, network namespace, taps)" >&2
	exit 1
fi

# ---- 1. deps -----------------------------------------------------------------------------
step "1. dependencies"
t0=$(date +%s.%N)
if ((deps)) && [[ -x "$top/scripts/deps.sh" || -f "$top/scripts/deps.sh" ]]; then
	bash "$top/scripts/deps.sh" || fail deps "$(elapsed "$t0")" "scripts/deps.sh failed"
	done_step deps ok "$(elapsed "$t0")" "scripts/deps.sh"
else
	((deps)) && echo "main: no scripts/deps.sh; checking the tools only"
	done_step deps skip "$(elapsed "$t0")"
fi
missing=()
for t in cmake make gcc qemu-system-x86_64 busybox cpio ip iperf3 python3 fio; do
	command -v "$t" >/dev/null || missing+=("$t")
done
((${#missing[@]} == 0)) || fail deps "$(elapsed "$t0")" "missing tools: ${missing[*]}"

# shellcheck source=tests/qemu/lib/kernel.sh
source "$top/tests/qemu/lib/kernel.sh"
cbuild="$VBUS_BUILD/cmake"
logs="$VBUS_BUILD/main"
mkdir -p "$logs"

# ---- 2. userspace -------------------------------------------------------------------------
step "2. userspace: cmake into $cbuild"
t0=$(date +%s.%N)
if ! { cmake -S "$top" -B "$cbuild" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
	cmake --build "$cbuild" -j"$(nproc)"; } >"$logs/build-userspace.log" 2>&1; then
	tail -n 30 "$logs/build-userspace.log" | sed 's/^/    /'
	fail userspace "$(elapsed "$t0")" "see $logs/build-userspace.log"
fi
hostd="$cbuild/userspace/hostd/daemon/vbus-hostd"
[[ -x "$hostd" ]] || fail userspace "$(elapsed "$t0")" "no $hostd after the build"
echo "built: $(find "$cbuild" -maxdepth 4 -type f -perm -u+x \( -name 'vbus-*' -o -name 'ioq-*' \) -printf '%f ' | sort)"
done_step userspace ok "$(elapsed "$t0")" "$hostd"

# ---- 2b. what vbus-hostd refuses ---------------------------------------------------------------
step "2b. vbus-hostd refuses what another user or guest could reach"
t0=$(date +%s.%N)
if ! "$top/scripts/hostd-refusals.sh" "$hostd"; then
	fail refusals "$(elapsed "$t0")" "vbus-hostd accepted one of them"
fi
done_step refusals ok "$(elapsed "$t0")" "scripts/hostd-refusals.sh"

# ---- 3. guest kernel + modules ------------------------------------------------------------------
step "3. guest kernel and modules"
t0=$(date +%s.%N)
vbus_fetch_kernel || fail modules "$(elapsed "$t0")" "cannot fetch the guest kernel"
if ! make -C "$top" modules KVER="$VBUS_KVER" >"$logs/build-modules.log" 2>&1; then
	grep -E 'error|warning' "$logs/build-modules.log" | head -n 20 | sed 's/^/    /'
	fail modules "$(elapsed "$t0")" "make modules failed, see $logs/build-modules.log"
fi
echo "built: $(cd "$top" && find . -name '*.ko' -not -path './build/*' -printf '%f ' | sort)"
done_step modules ok "$(elapsed "$t0")" "kernel $VBUS_KVER"

# ---- 4. venet: real traffic through vbus-hostd ------------------------------------------------
step "4. venet: one guest on vbus, 2 queue pairs, traffic to the host through vbus-hostd"
t0=$(date +%s.%N)
rc=0
VBUS_HOSTD="$hostd" bash "$top/bench/venet-vs-virtio.sh" --no-build --nics venet --require-venet \
	--queues 2 --time 4 --streams 2 --ping-n 100 --rr-n 1000 --timeout 300 \
	--out "$VBUS_BUILD/main/venet" || rc=$?
((rc == 0)) || fail venet "$(elapsed "$t0")" "venet did not carry the traffic (exit $rc; logs in $VBUS_BUILD/main/venet)"
done_step venet ok "$(elapsed "$t0")" "$VBUS_BUILD/main/venet/results.json"

# ---- 4b. vbus-ipc: a guest process and a host process -------------------------------------------
step "4b. vbus-ipc: a guest process <-> a host process over their own channel"
t0=$(date +%s.%N)
rc=0
VBUS_BUILD="$VBUS_BUILD" bash "$top/tests/qemu/run.sh" vbus_ipc --no-build --demo --msgs 20000 \
	--timeout 300 | grep -E '^(FAIL|    |guest:|[0-9]+ passed)' || rc=$?
((rc == 0)) || fail ipc "$(elapsed "$t0")" "the exchange failed (logs in $VBUS_BUILD/qemu/vbus_ipc)"
done_step ipc ok "$(elapsed "$t0")" "20000 messages each way, checked"

# ---- 4c. vbus-ipc between two guests -------------------------------------------------------------
step "4c. vbus-ipc link: a process in one guest <-> a process in another"
t0=$(date +%s.%N)
rc=0
VBUS_BUILD="$VBUS_BUILD" bash "$top/tests/qemu/run.sh" ipc_link --no-build --demo --msgs 20000 \
	--timeout 300 | grep -E '^(FAIL|    |guest:|[0-9]+ passed)' || rc=$?
((rc == 0)) || fail ipc-link "$(elapsed "$t0")" "the exchange failed (logs in $VBUS_BUILD/qemu/ipc_link)"
done_step ipc-link ok "$(elapsed "$t0")" "20000 messages each way between two guests, checked"

# ---- 5. vbus-blk: a disk through vbus-hostd --------------------------------------------------
step "5. vbus-blk: a raw and a qcow2 disk on vbus next to virtio-blk's (short fio), ext4 on them"
t0=$(date +%s.%N)
rc=0
VBUS_HOSTD="$hostd" bash "$top/bench/blk-vs-virtio.sh" --no-build --rounds 1 --time 2 --disk-mb 128 \
	--jobs "randread-4k-qd32 randwrite-4k-qd32 read-128k-qd8 write-128k-qd8 randread-4k-qd1-poll" --demo --format qcow2 \
	--timeout 600 --out "$VBUS_BUILD/main/blk" || rc=$?
((rc == 0)) || fail vbus-blk "$(elapsed "$t0")" "the vbus-blk disk did not work (exit $rc; logs in $VBUS_BUILD/main/blk)"
done_step vbus-blk ok "$(elapsed "$t0")" "$VBUS_BUILD/main/blk/blk-results.json"

# ---- 6. benchmark ---------------------------------------------------------------------------------
if ((bench)); then
	step "6. benchmark: venet vs virtio-net (${bench_args[*]})"
	t0=$(date +%s.%N)
	rc=0
	VBUS_HOSTD="$hostd" bash "$top/bench/venet-vs-virtio.sh" --no-build "${bench_args[@]}" || rc=$?
	((rc == 0)) || fail bench "$(elapsed "$t0")" "exit $rc"
	done_step bench ok "$(elapsed "$t0")" "$VBUS_BUILD/bench/results.{json,png}"
	step "6. benchmark: vbus-blk vs virtio-blk"
	t0=$(date +%s.%N)
	rc=0
	VBUS_HOSTD="$hostd" bash "$top/bench/blk-vs-virtio.sh" --no-build || rc=$?
	((rc == 0)) || fail bench-blk "$(elapsed "$t0")" "exit $rc"
	done_step bench-blk ok "$(elapsed "$t0")" "$VBUS_BUILD/bench/blk-results.{json,png}"
fi

printf '\n== summary\n'
printf '  %s\n' "${summary[@]}"
echo "main: done in $(elapsed "$t_all") s"
