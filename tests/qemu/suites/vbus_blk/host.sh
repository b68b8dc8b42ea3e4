#!/usr/bin/env bash
# vbus-blk tests over the real transport: builds vbus_core/vbus_proxy/
# vbus_pcibridge/vbus_blk (make modules VBUS_SUBDIRS="kernel/bus kernel/pci_bridge ...
# kernel/vbus_blk") and vbus-hostd (CMake, into $VBUS_BUILD/cmake), creates
# two backing files in a temp dir (rw.img: sparse, --disk-mb MiB; ro.img:
# 16 MiB of random data) and runs vbus-hostd with one guest and two
# vbus-blk devices on them (id 1 serial vbt-rw; id 2 serial vbt-ro, ro=1;
# both strict=1: a malformed request from our driver faults the device).
# Then boots the guest (guest/blk-tests.sh): sysfs, data both ways checked
# against the backing files, fio verify=crc32c (seq 128k QD1/QD32, rand 4k
# QD32, rand 4k-64k QD1: 1.4 GiB moved with the default sizes), discard
# (the file gets sparse), write-zeroes, ext4 (mkfs, tree, fsck -n,
# remount, checksums, fstrim), read-only, hot drop + re-add under fio,
# unbind + bind under fio, load/unload cycles without slab growth, polled
# I/O (poll_queues=1, io_uring IOPOLL, verified, almost no interrupts), the
# flush check (the host SIGKILLs vbus-hostd as soon as the guest says its
# fsync returned, then checks the data is in the file) and last, with
# vbus-hostd dead, the timeout handler (a request times out, the device
# faults, the next request fails at once).
#
# The guest asks the host for things (checksums of file ranges, allocated
# size, ctl drop/add, the kill) over a second serial port: a FIFO pair
# ($run/gctl.in/.out) that a responder loop here serves, one request line,
# one reply line.
#
# Prints PASS/FAIL lines and "N passed, N failed"; exits non-zero on
# failure.
#
#   tests/qemu/run-blk-tests.sh [--cycles N] [--disk-mb N] [--mem SIZE]
#                               [--timeout SEC] [--no-build]
#
#   --cycles N    load/unload cycles of vbus_blk for the slab check (20)
#   --disk-mb N   size of the rw disk in MiB; each of the 4 fio jobs writes
#                 and verifies all of it, sequential QD32 3 times
#                 (default 128: 1.4 GiB of I/O)
#   --mem SIZE    guest RAM, QEMU syntax (default 1G)
#   --timeout SEC kill the guest after SEC seconds (default 1200)
#   --no-build    use the .ko files and vbus-hostd already built
# Accelerator: TCG unless hardware KVM is available (VBUS_QEMU_ACCEL=...).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=tests/qemu/lib/suite.sh
source "$here/lib/suite.sh"

cycles=20 disk_mb=128 mem=1G timeout=1200 build=1
while (($#)); do
	case "$1" in
	--cycles) cycles=$2; shift 2 ;;
	--disk-mb) disk_mb=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	-h | --help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) vbus_err "unknown argument $1 (see --help)"; exit 2 ;;
	esac
done
for v in "$cycles" "$disk_mb" "$timeout"; do
	[[ "$v" =~ ^[0-9]+$ ]] || { vbus_err "not a number: $v"; exit 2; }
done
((disk_mb >= 80)) || { vbus_err "--disk-mb must be at least 80 (the tests write at 64 MiB + 4 MiB)"; exit 2; }

passed=0 failed=0
h_pass() { passed=$((passed + 1)); printf 'PASS %s\n' "$1"; }
h_fail() { failed=$((failed + 1)); printf 'FAIL %s %s\n' "$1" "${*:2}"; }
finish() {
	printf '%d passed, %d failed\n' "$passed" "$failed"
	((failed == 0))
	exit $?
}

rw_serial=vbt-rw ro_serial=vbt-ro ro_mb=16

t_start=$(vbus_now)
vbus_fetch_kernel

out="$VBUS_BUILD/qemu/blk-tests"
cbuild="$VBUS_BUILD/cmake"
mkdir -p "$out"

# ---- build ---------------------------------------------------------------
if ((build)); then
	if ! step=$(vbus_build_stack "kernel/bus kernel/pci_bridge kernel/vbus_test kernel/vbus_ipc kernel/vbus_blk" "$out" "$cbuild"); then
		h_fail "$step" "build failed (log $out/$step.log)"
		finish
	fi
fi
kos=("$top/vbus_core.ko" "$top/kernel/bus/vbus_proxy.ko"
	"$top/kernel/pci_bridge/vbus_pcibridge.ko" "$top/kernel/vbus_blk/vbus_blk.ko")
for ko in "${kos[@]}"; do
	[[ -f "$ko" ]] || { h_fail build "$ko not built"; finish; }
done
hostd=$(vbus_find_hostd "$cbuild") || { h_fail build "no vbus-hostd binary under $cbuild"; finish; }
bins=()
for b in fio mkfs.ext4 fsck.ext4 blkdiscard fstrim; do
	p=$(PATH=$PATH:/usr/sbin:/sbin command -v "$b") ||
		{ h_fail setup "no $b on the host (scripts/deps.sh installs fio, e2fsprogs, util-linux)"; finish; }
	bins+=("$p")
done

# ---- run directory, backing files, cleanup --------------------------------
run=$(mktemp -d /tmp/vbus-blk.XXXXXX)
tag="vbus-blk-$$"
hostd_pid='' responder_pid=''
cleanup() {
	[[ -f "$run/g1.pid" ]] && kill -9 "$(cat "$run/g1.pid")" 2>/dev/null || true
	[[ -n "$responder_pid" ]] && kill "$responder_pid" 2>/dev/null || true
	vbus_stop_pid "$hostd_pid"
	rm -rf "$run"
	rm -f "/dev/shm/$tag-g1"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rw_img="$run/rw.img" ro_img="$run/ro.img"
truncate -s "${disk_mb}M" "$rw_img"
head -c "$((ro_mb * 1024 * 1024))" /dev/urandom >"$ro_img"
# queues=4: room for the guest's poll queue next to one per vCPU (polled_io)
rw_spec="type=vbus-blk,id=1,file=$rw_img,serial=$rw_serial,strict=1,queues=4"
ro_spec="type=vbus-blk,id=2,file=$ro_img,serial=$ro_serial,ro=1,strict=1"

# ---- initramfs -----------------------------------------------------------
s="$run/stage"
mkdir -p "$s/test"
cp "$here/guest/lib.sh" "$s/test/lib.sh"
cp "$here/guest/blk-tests.sh" "$s/test/run.sh"
cat >"$s/test/config.sh" <<EOF
VT_RW_SERIAL=$rw_serial
VT_RO_SERIAL=$ro_serial
VT_RW_BYTES=$((disk_mb * 1024 * 1024))
VT_RO_BYTES=$((ro_mb * 1024 * 1024))
VT_FIO_MB=$disk_mb
VT_CYCLES=$cycles
EOF
vbus_initramfs_add_kmods "$s" "${kos[@]}" crc32c_generic ext4 || { h_fail initramfs kmods; finish; }
vbus_initramfs_add_binary "$s" "${bins[@]}" || { h_fail initramfs "${bins[*]}"; finish; }
vbus_make_initramfs "$run/blk.cpio.gz" "$s" >/dev/null

# ---- vbus-hostd ------------------------------------------------------------
"$hostd" --foreground --ctl "$run/ctl.sock" \
	--guest "g1:sock=$run/g1.sock,mem=/dev/shm/$tag-g1,size=$mem" \
	--device "g1:$rw_spec" --device "g1:$ro_spec" \
	>"$out/hostd.log" 2>&1 &
hostd_pid=$!
for _ in $(seq 100); do
	[[ -S "$run/ctl.sock" && -S "$run/g1.sock" ]] && break
	kill -0 "$hostd_pid" 2>/dev/null || break
	sleep 0.1
done
if [[ -S "$run/ctl.sock" && -S "$run/g1.sock" ]]; then
	h_pass hostd-started
else
	sed 's/^/    hostd: /' "$out/hostd.log" | tail -n 20
	h_fail hostd-started "vbus-hostd did not come up (log $out/hostd.log)"
	finish
fi
ctl() { "$hostd" ctl --ctl "$run/ctl.sock" "$@"; }

# ---- the guest's requests (second serial port) ------------------------------
img() {
	case "$1" in
	rw) echo "$rw_img" ;;
	ro) echo "$ro_img" ;;
	*) echo "fail unknown disk '$1'"; return 1 ;;
	esac
}

num() { [[ "$1" =~ ^[0-9]+$ ]] || { echo "fail not a number: '$1'"; return 1; }; }

range_sha() {
	dd if="$1" iflag=skip_bytes,count_bytes skip="$2" count="$3" bs=1M 2>/dev/null |
		sha256sum | cut -d' ' -f1
}

# respond CMD ARGS...: one reply line, "ok [value]" or "fail reason".
respond() {
	local f sum
	case "$1" in
	hello) echo ok ;;
	sha)
		f=$(img "$2") && num "$3" && num "$4" || return 0
		echo "ok $(range_sha "$f" "$3" "$4")"
		;;
	blocks)
		f=$(img "$2") || return 0
		echo "ok $(($(stat -c %b "$f") * $(stat -c %B "$f")))"
		;;
	drop)
		[[ "$2" == rw ]] || { echo "fail only rw can be dropped"; return 0; }
		if ctl drop g1 1 >>"$out/ctl.log" 2>&1; then echo ok; else echo "fail ctl drop (see $out/ctl.log)"; fi
		;;
	add)
		[[ "$2" == rw ]] || { echo "fail only rw can be added"; return 0; }
		if ctl add g1 "$rw_spec" >>"$out/ctl.log" 2>&1; then echo ok; else echo "fail ctl add (see $out/ctl.log)"; fi
		;;
	killcheck)
		f=$(img "$2") && num "$3" && num "$4" || return 0
		# first the kill: nothing the daemon still holds may count
		kill -9 "$hostd_pid" 2>/dev/null || { echo "fail vbus-hostd was not running"; return 0; }
		echo "vbus-hostd SIGKILLed" >>"$out/ctl.log"
		sum=$(range_sha "$f" "$3" "$4")
		if [[ "$sum" == "$5" ]]; then echo ok; else echo "fail file has $sum, guest fsynced $5"; fi
		;;
	*) echo "fail unknown request '$1'" ;;
	esac
}

responder() {
	local line reply
	exec 3<"$run/gctl.out" 4>"$run/gctl.in"
	while IFS= read -r line <&3; do
		line=$(tr -cd '[:print:]' <<<"$line")
		[[ -n "$line" ]] || continue
		# shellcheck disable=SC2086 # the request's words are the arguments
		reply=$(respond $line 2>&1 | tail -n 1)
		printf '%s\n' "$reply" >&4
		printf '%s -> %s\n' "$line" "$reply"
	done
}

mkfifo "$run/gctl.in" "$run/gctl.out"
responder >"$out/requests.log" 2>&1 &
responder_pid=$!

# ---- boot ----------------------------------------------------------------
log="$out/serial.log"
t0=$(vbus_now)
boot_rc=0
mapfile -t qargs < <(vbus_transport_args "/dev/shm/$tag-g1" "$mem" "$run/g1.sock")
vbus_boot_guest --initrd "$run/blk.cpio.gz" --log "$log" --mem "$mem" \
	--timeout "$timeout" -- "${qargs[@]}" -serial "pipe:$run/gctl" \
	-pidfile "$run/g1.pid" >"$out/boot.out" 2>&1 || boot_rc=$?
boot_secs=$(vbus_elapsed "$t0")
((boot_rc == 0)) || vbus_warn "vbus_boot_guest returned $boot_rc (see $out/boot.out)"
vbus_add_results "$log" || true

sed 's/^/    request: /' "$out/requests.log"
if grep -q '^killcheck .* -> ok$' "$out/requests.log"; then
	# the guest's last request killed it on purpose
	if kill -0 "$hostd_pid" 2>/dev/null; then
		h_fail hostd-killed "vbus-hostd survived SIGKILL"
	else
		h_pass hostd-killed-by-the-flush-check
	fi
elif kill -0 "$hostd_pid" 2>/dev/null && ctl stats g1 1 >"$out/hostd-stats.txt" 2>&1; then
	h_pass hostd-alive-at-end
else
	h_fail hostd-alive-at-end "(log $out/hostd.log)"
fi
if grep -aq " faulted: " "$out/hostd.log"; then
	grep -a " faulted: " "$out/hostd.log" | head -n 5 | sed 's/^/    hostd: /'
	h_fail hostd-no-device-fault "the host faulted a vbus-blk device (strict=1)"
else
	h_pass hostd-no-device-fault
fi

tr -d '\r' <"$log" | grep -aoE 'blk-tests: (FIO|DISCARD|CYCLES|POLL|TIMEOUT) .*' |
	sed 's/^/    /' || printf '    (no figures)\n'
printf 'guest: %s s (accel=%s, %s boot, RAM %s, kernel %s); total %s s; log %s\n' \
	"$boot_secs" "$(vbus_qemu_accel)" "$VBUS_KBOOT" "$mem" "$VBUS_KVER" \
	"$(vbus_elapsed "$t_start")" "$log"
finish
