#!/usr/bin/env bash
# vbus-blk over the real transport: two backing files in the run dir
# (rw.img: sparse, --disk-mb MiB; ro.img: 16 MiB of random data) served by
# vbus-hostd as two vbus-blk devices (id 1 serial vbt-rw; id 2 serial
# vbt-ro, ro=1; both strict=1: a malformed request from our driver faults
# the device). The guest (guest.sh): sysfs, data both ways checked against
# the backing files, fio verify=crc32c, discard (the file gets sparse),
# write-zeroes, ext4, read-only, the udev rule (dist/udev: by-id, by-uuid,
# by-label links), hot drop + re-add and unbind + bind under
# fio, load/unload cycles without slab growth, polled I/O, the flush check
# (the host SIGKILLs vbus-hostd as soon as the guest says its fsync
# returned, then checks the data is in the file) and last, with vbus-hostd
# dead, the timeout handler. The guest has per-queue MSI-X vectors
# (vbus-hostd vectors=4, QEMU's ivshmem-doorbell vectors=4: two queue
# vectors on the 2 vCPUs; the qvec group checks the disks' completions
# interrupt them, on both CPUs, and that a bridge loaded as an older
# guest, queue_vectors=0, still moves data through the eventq). The
# guest asks (vt_host) for checksums of
# file ranges, allocated sizes, ctl drop/add and the kill. With --swiotlb
# (the guest bounces every DMA mapping) only the data checks run, data fio
# ext4, on the rw disk added back with dma_window= the guest's swiotlb
# range; vbus-hostd then saw every segment in it (swiotlb_verdict).
#
#   tests/qemu/run.sh vbus_blk[:REGEX] [--cycles N] [--disk-mb N] [--swiotlb]
#
#   --cycles N    load/unload cycles of vbus_blk for the slab check (20)
#   --disk-mb N   size of the rw disk in MiB; each of the 4 fio jobs writes
#                 and verifies all of it, sequential QD32 3 times
#                 (default 80: 0.9 GiB of I/O)
#   --timeout SEC kill the guest after SEC seconds (default 1200)
# Check groups (REGEX): sysfs data fio discard ext4 ro udev hotdrop cycles
# poll qvec flush; with --swiotlb: swiotlb_window data fio ext4 swiotlb_verdict.
# shellcheck disable=SC2317 # the req_ functions: lab_serve calls them
set -euo pipefail
# shellcheck source=tests/qemu/lib/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/lab.sh"

cycles=20 disk_mb=80 timeout=1200
lab_begin vbus_blk cycles:N disk-mb:N -- "$@"
((disk_mb >= 80)) || { vbus_err "--disk-mb must be at least 80 (the tests write at 64 MiB + 4 MiB)"; exit 2; }
ro_mb=16

lab_build --modules "$LAB_BUS_SUBDIRS kernel/vbus_blk" --cmake vbus-hostd
lab_kos --bus kernel/vbus_blk/vbus_blk.ko
lab_tools fio mkfs.ext4 fsck.ext4 blkdiscard fstrim udevadm

rw_img="$run/rw.img" ro_img="$run/ro.img"
truncate -s "${disk_mb}M" "$rw_img"
head -c "$((ro_mb * 1024 * 1024))" /dev/urandom >"$ro_img"
# queues=4: room for the guest's poll queue next to one per vCPU (polled_io)
rw_spec="type=vbus-blk,id=1,file=$rw_img,serial=vbt-rw,strict=1,queues=4"
ro_spec="type=vbus-blk,id=2,file=$ro_img,serial=vbt-ro,ro=1,strict=1"

# shellcheck disable=SC2154 # lab_tools
lab_stage guest "$(dirname "$0")/guest.sh" "${kos[@]}" crc32c_generic ext4 \
	--bin "$tool_fio" --bin "$tool_mkfs_ext4" --bin "$tool_fsck_ext4" \
	--bin "$tool_blkdiscard" --bin "$tool_fstrim" --bin "$tool_udevadm" \
	--file "$top/dist/udev/60-vbus-blk.rules" <<CONFIG
VT_RW_SERIAL=vbt-rw
VT_RO_SERIAL=vbt-ro
VT_RW_BYTES=$((disk_mb * 1024 * 1024))
VT_RO_BYTES=$((ro_mb * 1024 * 1024))
VT_FIO_MB=$disk_mb
VT_CYCLES=$cycles
VT_SWIOTLB=$swiotlb
CONFIG
# per-queue vectors: QEMU's vectors= (lab_run --vectors) says the same
lab_hostd -- --guest "$(lab_guest g1),vectors=4" --device "g1:$rw_spec" --device "g1:$ro_spec"

# ---- the guest's requests ----
img() {
	case "$1" in
	rw) echo "$rw_img" ;;
	ro) echo "$ro_img" ;;
	*) return 1 ;;
	esac
}
# args DISK [NUMBER...]: the disk's file into $file; the rest are numbers
args() {
	file=$(img "$1") || { lab_reply="unknown disk '$1'"; return 1; }
	shift
	local n
	for n in "$@"; do
		[[ "$n" =~ ^[0-9]+$ ]] || { lab_reply="not a number: '$n'"; return 1; }
	done
}
range_sha() {
	dd if="$1" iflag=skip_bytes,count_bytes skip="$2" count="$3" bs=1M 2>/dev/null |
		sha256sum | cut -d' ' -f1
}
req_hello() { :; }
req_sha() { args "$@" && lab_reply=$(range_sha "$file" "$2" "$3"); }
req_blocks() { args "$1" && lab_reply=$(($(stat -c %b "$file") * $(stat -c %B "$file"))); }
req_drop() {
	[[ "$1" == rw ]] || { lab_reply="only rw can be dropped"; return 1; }
	ctl drop g1 1 >>"$out/ctl.log" 2>&1 || { lab_reply="ctl drop (see $out/ctl.log)"; return 1; }
}
req_add() {
	[[ "$1" == rw ]] || { lab_reply="only rw can be added"; return 1; }
	ctl add g1 "$rw_spec" >>"$out/ctl.log" 2>&1 || { lab_reply="ctl add (see $out/ctl.log)"; return 1; }
}
# --swiotlb: the rw disk back with the guest's swiotlb range as dma_window
req_window() { lab_dma_add "$rw_spec" "$@"; }
req_dmacheck() { lab_dma_check 1; }
killed=0
req_killcheck() {
	local sum
	args "$1" "$2" "$3" || return 1
	# first the kill: nothing the daemon still holds may count
	kill -9 "$hostd_pid" 2>/dev/null || { lab_reply="vbus-hostd was not running"; return 1; }
	killed=1
	sum=$(range_sha "$file" "$2" "$3")
	[[ "$sum" == "$4" ]] || { lab_reply="file has $sum, guest fsynced $4"; return 1; }
}

lab_run guest --guest g1 --vectors 4

sed 's/^/    request: /' "$out/requests.log"
if ((killed)); then
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
lab_no_fault "a vbus-blk device"
lab_figures guest 'blk-tests: (FIO|DISCARD|CYCLES|POLL|QVEC|TIMEOUT) .*'
lab_summary guest
