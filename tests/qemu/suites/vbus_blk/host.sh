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
# The qcow2 group (ctl add of two more disks, dropped at its end): id 3
# image=ov.qcow2 (a qcow2 overlay on base.qcow2; vbus-hostd starts its
# qemu-storage-daemon) and id 4 nbd= a qemu-storage-daemon of ours
# serving ov2.qcow2 (an overlay on the same base): the backing chain's
# data, fio verify, ext4, the image's storage daemon SIGKILLed after a
# guest fsync returned (the data is in the image, I/O resumes), our NBD
# server gone until the device's reconnects failed 3 times, then back
# (the parked requests complete, nothing lost), a second vbus-hostd and a
# QEMU on the image refused with the lock error; after the drop `qemu-img
# check` of both overlays is clean and the base is unchanged.
#
#   tests/qemu/run.sh vbus_blk[:REGEX] [--cycles N] [--disk-mb N] [--swiotlb]
#
#   --cycles N    load/unload cycles of vbus_blk for the slab check (20)
#   --disk-mb N   size of the rw disk in MiB; each of the 4 fio jobs writes
#                 and verifies all of it, sequential QD32 3 times
#                 (default 80: 0.9 GiB of I/O)
#   --timeout SEC kill the guest after SEC seconds (default 1200)
# Check groups (REGEX): sysfs topology cache data fio discard discard_multi
# ext4 resize compat threads ro udev hotdrop cycles poll qvec qcow2 flush; with --swiotlb:
# swiotlb_window data fio ext4 swiotlb_verdict. resize grows rw.img by 32
# MiB (ctl resize) under a mounted ext4; compat adds and drops a third disk
# (old.img, compat=v1: the features of the first vbus-blk host); threads
# adds and drops a fourth (thr.img, id 5, queues=2 threads=2: its queues
# served by two host threads of vbus-hostd's, named d5.t0:g1, d5.t1:g1).
# shellcheck disable=SC2317 # the req_ functions: lab_serve calls them
set -euo pipefail
# shellcheck source=tests/qemu/lib/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/lab.sh"

cycles=20 disk_mb=80 timeout=1200
lab_begin vbus_blk cycles:N disk-mb:N -- "$@"
((disk_mb >= 80)) || { vbus_err "--disk-mb must be at least 80 (the tests write at 64 MiB + 4 MiB)"; exit 2; }
ro_mb=16 q_mb=64

lab_build --modules "$LAB_BUS_SUBDIRS kernel/vbus_blk" --cmake vbus-hostd
lab_kos --bus kernel/vbus_blk/vbus_blk.ko
lab_tools fio mkfs.ext4 fsck.ext4 resize2fs blkdiscard fstrim udevadm qemu-img qemu-io \
	qemu-storage-daemon qemu-system-x86_64

rw_img="$run/rw.img" ro_img="$run/ro.img" old_img="$run/old.img"
truncate -s "${disk_mb}M" "$rw_img"
truncate -s 16M "$old_img"
head -c "$((ro_mb * 1024 * 1024))" /dev/urandom >"$ro_img"
# queues=4: room for the guest's poll queue next to one per vCPU (polled_io)
rw_spec="type=vbus-blk,id=1,file=$rw_img,serial=vbt-rw,strict=1,queues=4"
ro_spec="type=vbus-blk,id=2,file=$ro_img,serial=vbt-ro,ro=1,strict=1"
old_spec="type=vbus-blk,id=3,file=$old_img,serial=vbt-old,strict=1,compat=v1"
thr_img="$run/thr.img"
truncate -s 32M "$thr_img"
thr_spec="type=vbus-blk,id=5,file=$thr_img,serial=vbt-thr,strict=1,queues=2,threads=2"

# shellcheck disable=SC2154 # lab_tools
lab_stage guest "$(dirname "$0")/guest.sh" "${kos[@]}" crc32c_generic ext4 \
	--bin "$tool_fio" --bin "$tool_mkfs_ext4" --bin "$tool_fsck_ext4" \
	--bin "$tool_resize2fs" \
	--bin "$tool_blkdiscard" --bin "$tool_fstrim" --bin "$tool_udevadm" \
	--file "$top/dist/udev/60-vbus-blk.rules" \
	--file "$(dirname "$0")/features.sh" <<CONFIG
VT_RW_SERIAL=vbt-rw
VT_RO_SERIAL=vbt-ro
VT_RW_BYTES=$((disk_mb * 1024 * 1024))
VT_RO_BYTES=$((ro_mb * 1024 * 1024))
VT_FIO_MB=$disk_mb
VT_CYCLES=$cycles
VT_SWIOTLB=$swiotlb
VT_Q_BYTES=$((q_mb * 1024 * 1024))
CONFIG
# the qcow2 group's images: a base with data at 56 MiB, two overlays on it
base="$run/base.qcow2" ov="$run/ov.qcow2" ov2="$run/ov2.qcow2"
# shellcheck disable=SC2154 # lab_tools
if lab_want qcow2; then
	"$tool_qemu_img" create -q -f qcow2 "$base" "${q_mb}M"
	"$tool_qemu_io" -f qcow2 -c "write -P 0x5a 56M 1M" "$base" >/dev/null
	"$tool_qemu_img" create -q -f qcow2 -b "$base" -F qcow2 "$ov"
	"$tool_qemu_img" create -q -f qcow2 -b "$base" -F qcow2 "$ov2"
	base_sha=$(sha256sum <"$base")
fi
q_spec="type=vbus-blk,id=3,image=$ov,serial=vbt-qcow2,strict=1"
n_sock="$run/nbd2.sock"
n_spec="type=vbus-blk,id=4,nbd=nbd+unix:///disk?socket=$n_sock,serial=vbt-nbd,strict=1"
# image='s storage daemon keeps its private directory here, not in /tmp
export RUNTIME_DIRECTORY=$run
# per-queue vectors: QEMU's vectors= (lab_run --vectors) says the same
lab_hostd -- --guest "$(lab_guest g1),vectors=4" --device "g1:$rw_spec" --device "g1:$ro_spec"

# ---- the guest's requests ----
img() {
	case "$1" in
	rw) echo "$rw_img" ;;
	ro) echo "$ro_img" ;;
	old) echo "$old_img" ;;
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
# stat KEY: the rw disk's `ctl stats` value of KEY
stat_rw() { ctl stats g1 1 | tr ' ' '\n' | sed -n "s/^$1=//p"; }
req_topo() {
	[[ "$1" == rw ]] || { lab_reply="only rw"; return 1; }
	lab_reply="$(stat_rw physical_block_size) $(stat_rw io_min) $(stat_rw io_opt) $(stat_rw nonrot)"
}
req_resize() {
	[[ "$1" == rw ]] || { lab_reply="only rw can be resized"; return 1; }
	args "$@" || return 1
	ctl resize g1 1 "$2" >>"$out/ctl.log" 2>&1 || { lab_reply="ctl resize (see $out/ctl.log)"; return 1; }
}
req_addold() { ctl add g1 "$old_spec" >>"$out/ctl.log" 2>&1 || { lab_reply="ctl add (see $out/ctl.log)"; return 1; }; }
req_dropold() { ctl drop g1 3 >>"$out/ctl.log" 2>&1 || { lab_reply="ctl drop (see $out/ctl.log)"; return 1; }; }
req_addthr() { ctl add g1 "$thr_spec" >>"$out/ctl.log" 2>&1 || { lab_reply="ctl add (see $out/ctl.log)"; return 1; }; }
req_dropthr() { ctl drop g1 5 >>"$out/ctl.log" 2>&1 || { lab_reply="ctl drop (see $out/ctl.log)"; return 1; }; }
# thrcheck: both queue threads of id 5 handed requests back (ctl stats),
# and vbus-hostd has both threads (/proc/PID/task/*/comm)
req_thrcheck() {
	local t0 t1 named
	t0=$(dev_stat 5 thread0_batches)
	t1=$(dev_stat 5 thread1_batches)
	named=$(cat "/proc/$hostd_pid/task/"*/comm 2>/dev/null | grep -c '^d5\.t[01]:g1$' || true)
	lab_reply="thread0_batches=${t0:-none} thread1_batches=${t1:-none} threads named d5.t0:g1/d5.t1:g1: $named"
	[[ "$t0" =~ ^[1-9][0-9]*$ && "$t1" =~ ^[1-9][0-9]*$ && "$named" == 2 ]]
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

# ---- the qcow2 group's requests ----
# our NBD server for id 4 ($run/nbdsrv.pid: the lab kills it at exit)
nbd_start() {
	# shellcheck disable=SC2154 # lab_tools
	"$tool_qemu_storage_daemon" --daemonize --pidfile "$run/nbdsrv.pid" \
		--blockdev "driver=file,node-name=file,filename=$ov2,locking=on" \
		--blockdev driver=qcow2,node-name=disk,file=file \
		--nbd-server "addr.type=unix,addr.path=$n_sock" \
		--export type=nbd,id=disk,node-name=disk,name=disk,writable=on \
		>>"$out/nbdsrv.log" 2>&1
}
# dev_stat ID KEY: the value of KEY in `ctl stats g1 ID`
dev_stat() { ctl stats g1 "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# add_dev ID SPEC: ctl add SPEC (image=, nbd=: answered at once, the device pending
# until its server answers; the guest waits for the disk); should it answer "busy"
# (the guest's thread taken): then its stats, 30 s
add_dev() {
	ctl add g1 "$2" >>"$out/ctl.log" 2>&1 && return 0
	local i
	for i in $(seq 150); do
		[[ -n "$(dev_stat "$1" id)" ]] && return 0
		sleep 0.2
	done
	lab_reply="ctl add of device $1 (see $out/ctl.log, $lab_logs/hostd.log)"
	return 1
}
req_qadd() {
	nbd_start || { lab_reply="our NBD server did not start ($out/nbdsrv.log)"; return 1; }
	add_dev 3 "$q_spec" && add_dev 4 "$n_spec"
}
# qdrop: both disks dropped, our NBD server stopped (the images unlocked)
req_qdrop() {
	if ! ctl drop g1 3 >>"$out/ctl.log" 2>&1 || ! ctl drop g1 4 >>"$out/ctl.log" 2>&1; then
		lab_reply="ctl drop (see $out/ctl.log)"
		return 1
	fi
	nbd_stop TERM
}
# image_sha q|n|base OFF LEN: sha256 of the range as the image shows it
# (the backing chain resolved; -U: the storage daemon holds the lock).
# The whole image to raw, then the range: qemu-img dd's skip= differs
# between QEMU versions.
image_sha() {
	local f
	case "$1" in q) f=$ov ;; n) f=$ov2 ;; base) f=$base ;; *) return 1 ;; esac
	rm -f "$run/image.raw"
	"$tool_qemu_img" convert -U -f qcow2 -O raw "$f" "$run/image.raw" >/dev/null 2>&1 || return 1
	range_sha "$run/image.raw" "$2" "$3"
}
req_qsha() {
	[[ "$2" =~ ^[0-9]+$ && "$3" =~ ^[0-9]+$ ]] || { lab_reply="not a number"; return 1; }
	lab_reply=$(image_sha "$@") || { lab_reply="cannot read image $1"; return 1; }
}
# qstat ID KEY MIN: the counter KEY of device ID is at least MIN (the
# guest asks again while it is not)
req_qstat() {
	local v
	v=$(dev_stat "$1" "$2")
	lab_reply="$2=${v:-none}"
	[[ "$v" =~ ^[0-9]+$ && "$3" =~ ^[0-9]+$ ]] && ((v >= $3))
}
# qkill OFF LEN SHA: SIGKILL the image's storage daemon, then the range
# in the image file must be what the guest fsynced
req_qkill() {
	local pid sum
	pid=$(dev_stat 3 image_pid)
	[[ "$pid" =~ ^[1-9][0-9]*$ ]] || { lab_reply="no image_pid"; return 1; }
	kill -9 "$pid" || { lab_reply="kill $pid failed"; return 1; }
	sum=$(image_sha q "$1" "$2") || { lab_reply="cannot read the image"; return 1; }
	[[ "$sum" == "$3" ]] || { lab_reply="image has $sum, guest fsynced $3"; return 1; }
}
# nbd_stop SIG: our NBD server gets SIG and is gone (10 s)
nbd_stop() {
	local pid i
	pid=$(cat "$run/nbdsrv.pid" 2>/dev/null) || { lab_reply="no NBD server"; return 1; }
	kill -"$1" "$pid" || { lab_reply="kill -$1 $pid failed"; return 1; }
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || { rm -f "$run/nbdsrv.pid"; return 0; }
		sleep 0.1
	done
	lab_reply="NBD server $pid survived SIG$1"
	return 1
}
req_nstop() { nbd_stop KILL; }
req_nstart() { nbd_start || { lab_reply="our NBD server did not start ($out/nbdsrv.log)"; return 1; }; }
# qlock hostd|qemu: a second user of the image is refused with the lock error
req_qlock() {
	local rc=0 cmd
	case "$1" in
	hostd) cmd=("$hostd" --foreground --ctl "$run/ctl2.sock" --guest "g9:sock=$run/g9.sock,mem=/dev/shm/$tag-g9,size=8M"
		--device "g9:type=vbus-blk,id=2,image=$ov") ;;
	qemu) cmd=("$tool_qemu_system_x86_64" -machine none -nodefaults -display none
		-drive "file=$ov,format=qcow2,if=none,id=d0") ;;
	*) lab_reply="hostd or qemu"; return 1 ;;
	esac
	timeout 60 "${cmd[@]}" >"$out/second-$1.log" 2>&1 || rc=$?
	rm -f "/dev/shm/$tag-g9"
	((rc != 0 && rc != 124)) || { lab_reply="$1 on the image: exit $rc, not refused"; return 1; }
	grep -q 'Failed to get "write" lock' "$out/second-$1.log" ||
		{ lab_reply="$1 refused without the lock error: $(tail -n 1 "$out/second-$1.log")"; return 1; }
	lab_reply=$(grep -m 1 -o 'Failed to get "write" lock' "$out/second-$1.log")
}
# qcheck: after the drop, both overlays check clean, the base is unchanged
req_qcheck() {
	local f
	for f in "$ov" "$ov2"; do
		"$tool_qemu_img" check -f qcow2 "$f" >"$out/qemu-img-check.log" 2>&1 ||
			{ lab_reply="qemu-img check $f: $(tail -n 1 "$out/qemu-img-check.log")"; return 1; }
	done
	[[ "$(sha256sum <"$base")" == "$base_sha" ]] || { lab_reply="the base image changed"; return 1; }
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
lab_figures guest 'blk-tests: (FIO|DISCARD|CYCLES|POLL|QVEC|TIMEOUT|RESIZE) .*'
lab_summary guest
