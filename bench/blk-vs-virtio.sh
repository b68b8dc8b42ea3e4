#!/usr/bin/env bash
# vbus-blk vs virtio-blk, in one guest, with the same fio jobs, in the same run.
#
# Boots ONE guest (TCG unless hardware KVM; 2 vCPUs) with two disks on
# identical backing files (--disk-mb MiB of the same random data):
#   vbus    vbus_blk.ko over the ivshmem transport, served by vbus-hostd
#           (--device g1:type=vbus-blk,id=1,file=...: io_uring)
#   virtio  virtio-blk-pci, QEMU's block layer with aio=io_uring,cache=none
# With --format qcow2 the guest has two more disks, the same data in a
# qcow2 image each (qemu-img convert: every cluster allocated):
#   vbusq   vbus-blk image=vbusq.qcow2: vbus-hostd's qemu-storage-daemon,
#           reached over NBD on a unix socket (vbus_blk_nbd*.c)
#   virtioq virtio-blk-pci on QEMU's own qcow2 driver, aio=io_uring,cache=none
# and every job runs on all four in turn; the report adds a vbusq |
# virtioq table and the NBD hop's cost per request, vbusq against the
# raw-file fast path vbus (host CPU per I/O, latency p50/p99).
# The guest runs, per round, each fio job on each disk (order
# alternating per round): 4 KiB randread/randwrite at QD1 and QD32, 128
# KiB sequential read/write at QD8 (libaio, direct=1, time based).
# A job named ...-poll (e.g. randread-4k-qd1-poll) is polled I/O instead:
# io_uring with --hipri (IORING_SETUP_IOPOLL), no completion interrupts;
# with one in the list both drivers get one poll queue besides two
# interrupt-driven ones (vbus_blk poll_queues=1 and vbus-hostd queues=3;
# virtio_blk poll_queues=1 and virtio-blk-pci num-queues=3), for every
# job of the run.
# Around each fio run the guest tells the host (second serial port), which
# reads the CPU time of QEMU and of vbus-hostd (utime+stime from
# /proc/PID/stat) and, for vbus, `ctl stats` (notify_in/notify_out); the
# guest sends its own notification counts with each mark, the same way for
# both disks (doorbells: kprobe hits on vp_notify / vbus_pci_doorbell;
# interrupts: the disk's MSI-X lines in /proc/interrupts). Prints a
# table vbus | virtio | vbus/virtio (IOPS, MB/s, p50/p99 completion
# latency, host CPU per I/O split QEMU/vbus-hostd, notif/IO: doorbells +
# interrupts, vbus-hostd's counts as a cross-check), medians over the
# rounds with min..max, then the vbus/virtio ratios per job (notif/IO,
# its goal <= 0.5; p50; IOPS); writes $OUT/blk-results.json,
# $OUT/blk-results.png (gnuplot) and keeps the raw data in $OUT/raw-blk/
# (vbus-hostd's counters for the disk over the whole run: hostd-stats.txt).
# Guests run under TCG here: times and CPU are TCG's, but each counted
# notification is a VM exit or an injected interrupt on hardware KVM too.
# It never asserts a speed.
#
#   bench/blk-vs-virtio.sh [--time SEC] [--rounds N] [--disk-mb N]
#       [--jobs "LIST"] [--mem SIZE] [--timeout SEC] [--out DIR] [--no-build]
#       [--vbus-params K=V,...] [--virtio-iothread] [--demo] [--format raw|qcow2]
#
#   --time SEC     seconds per fio run (default 5)
#   --rounds N     rounds (default 3); figures are medians over rounds
#   --disk-mb N    size of each backing file (default 256)
#   --jobs LIST    fio jobs, RW-BS-qdN[-poll] (default: the six above)
#   --mem SIZE     guest RAM (default 1G)
#   --timeout SEC  kill the guest after SEC seconds (default 1800)
#   --out DIR      results directory (default $VBUS_BUILD/bench)
#   --no-build     use the modules and vbus-hostd already built
#                  ($VBUS_HOSTD overrides where vbus-hostd is found)
#   --vbus-params P  more vbus-blk device params, e.g. doorbell_mask_us=0
#                  (vbus-hostd(8)); recorded in the results' meta
#   --virtio-iothread  virtio-blk in an IOThread of its own (QEMU's
#                  production setup; it polls up to its poll-max-ns, 32 us
#                  by default, the counterpart of vbus's poll_us=)
#   --format F     raw (default): the two disks above; qcow2: also the
#                  two qcow2 disks (vbusq, virtioq)
#   --demo         afterwards, ext4 on the vbus disk (with --format qcow2
#                  also on vbusq): mkfs, mount, files, ls, remount,
#                  checksums (printed; scripts/main.sh)
# Exit status: 0 when both disks were measured and the guest's log is
# clean (with --demo: the demo passed), 1 otherwise, 2 on usage.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# the kernel a user runs: no SLUB debugging (VBUS_BOOT_DEBUG=1 puts it back)
: "${VBUS_BOOT_DEBUG:=0}"
export VBUS_BOOT_DEBUG
# shellcheck source=tests/qemu/lib/lab.sh
source "$here/../tests/qemu/lib/lab.sh"

time=5 rounds=3 disk_mb=256 timeout=1800 out=$VBUS_BUILD/bench demo=0 vbus_params="" iothread=0 format=raw
jobs="randread-4k-qd1 randread-4k-qd32 randwrite-4k-qd1 randwrite-4k-qd32 read-128k-qd8 write-128k-qd8"
lab_begin blk-bench time:N rounds:N disk-mb:N jobs:S out:S vbus-params:S demo:demo=1 \
	virtio-iothread:iothread=1 format:S -- "$@"
secs=$time vparams=$vbus_params
for v in "$secs" "$rounds" "$disk_mb"; do
	((v > 0)) || { vbus_err "not a positive number: $v"; exit 2; }
done
[[ -z "$vparams" || "$vparams" =~ ^[a-z_]+=[A-Za-z0-9_]+(,[a-z_]+=[A-Za-z0-9_]+)*$ ]] ||
	{ vbus_err "--vbus-params: '$vparams' is not K=V[,K=V...]"; exit 2; }
for j in $jobs; do
	[[ "$j" =~ ^(randread|randwrite|read|write)-[0-9]+[kKmM]?-qd[0-9]+(-poll)?$ ]] ||
		{ vbus_err "--jobs: '$j' is not RW-BS-qdN[-poll] (e.g. randread-4k-qd32)"; exit 2; }
done
[[ "$format" == raw || "$format" == qcow2 ]] ||
	{ vbus_err "--format: '$format' is not raw or qcow2"; exit 2; }
disks="vbus virtio"
[[ "$format" == qcow2 ]] && disks="vbus virtio vbusq virtioq"
# polled jobs: a poll queue on each disk, next to two interrupt-driven ones
poll_queues=0
[[ " $jobs" == *-poll* ]] && poll_queues=1
if ((poll_queues)) && [[ ",$vparams" != *,queues=* ]]; then
	vparams="queues=3${vparams:+,$vparams}"
fi
lab_need fio qemu-system-x86_64 python3
lab_raw "$out/raw-blk"
lab_build --modules "$LAB_BUS_SUBDIRS kernel/vbus_blk" --cmake vbus-hostd
lab_kos --bus kernel/vbus_blk/vbus_blk.ko

# identical data on both: reads of holes would flatter whichever has more
head -c "$((disk_mb * 1024 * 1024))" /dev/urandom >"$run/vbus.img"
cp "$run/vbus.img" "$run/virtio.img"
qdev=()
if [[ "$format" == qcow2 ]]; then
	lab_need qemu-img qemu-storage-daemon
	qemu-img convert -f raw -O qcow2 "$run/vbus.img" "$run/vbusq.qcow2"
	cp "$run/vbusq.qcow2" "$run/virtioq.qcow2"
	# the storage daemon's private directory in the run directory
	export RUNTIME_DIRECTORY=$run
	qdev=(--device "g1:type=vbus-blk,id=2,image=$run/vbusq.qcow2,serial=bench-vbusq${vparams:+,$vparams}")
fi
sync
lab_hostd -- --guest "$(lab_guest g1)" \
	--device "g1:type=vbus-blk,id=1,file=$run/vbus.img,serial=bench-vbus${vparams:+,$vparams}" "${qdev[@]}"

demo_stage=()
if ((demo)); then
	lab_tools mkfs.ext4
	# shellcheck disable=SC2154 # lab_tools
	demo_stage=(crc32c_generic ext4 --bin "$tool_mkfs_ext4")
fi
lab_stage guest "$here/guest/blk-bench-guest.sh" virtio_pci virtio_blk "${kos[@]}" \
	--bin "$(command -v fio)" "${demo_stage[@]}" <<CONFIG
VB_DISKS="$disks"
VB_JOBS="$jobs"
VB_ROUNDS=$rounds
VB_SECS=$secs
VB_SIZE_MB=$disk_mb
VB_DEMO=$demo
VB_POLL_QUEUES=$poll_queues
CONFIG

# ---- the guest's begin/end marks --------------------------------------------------
clk_tck=$(getconf CLK_TCK)
# notifications so far, guest->host and host->guest (vbus-hostd's
# counters of device ID: 1 vbus, 2 vbusq)
notifies() {
	ctl stats g1 "$1" 2>/dev/null | tr ' ' '\n' |
		awk -F= '$1 == "notify_in" { i = $2 } $1 == "notify_out" { o = $2 } END { print i + 0, o + 0 }'
}
# qsd_ticks DISK: the CPU time of vbusq's qemu-storage-daemon (image_pid
# in ctl stats), - for the other disks: its work is part of the cost of
# vbusq's requests, as QEMU's qcow2 driver's is of virtioq's
qsd_ticks() {
	local pid
	[[ "$1" == vbusq ]] || { echo -; return; }
	pid=$(ctl stats g1 2 2>/dev/null | tr ' ' '\n' | sed -n 's/^image_pid=//p')
	lab_ticks "$pid"
}
# req_begin|req_end DISK JOB ROUND [KICKS IRQS]: the CPU times of QEMU and
# vbus-hostd, the device's counters, the guest's own counts (kprobe
# hits, /proc/interrupts; - when it has none) and the storage daemon's
# CPU time (vbusq) at this edge of a fio run
mark() {
	local what=$1 disk=$2 job=$3 r=$4 gkicks=${5:-} girqs=${6:-}
	[[ "$gkicks" =~ ^[0-9]+$ ]] || gkicks=-
	[[ "$girqs" =~ ^[0-9]+$ ]] || girqs=-
	[[ "$disk" =~ ^(vbus|virtio)q?$ && "$job" =~ ^[a-z0-9-]+$ && "$r" =~ ^[0-9]+$ ]] ||
		{ lab_reply="bad mark"; return 1; }
	mkdir -p "$raw/$disk/r$r"
	printf '%s %s %s %s %s %s %s %s\n' "$(lab_ticks "$(cat "$run/guest.pid" 2>/dev/null)")" \
		"$(lab_ticks "$hostd_pid")" "$(notifies "$([[ "$disk" == vbusq ]] && echo 2 || echo 1)")" \
		"$(vbus_now)" "$clk_tck" "$gkicks" "$girqs" "$(qsd_ticks "$disk")" \
		>"$raw/$disk/r$r/$job.$what"
}
req_begin() { mark begin "$@"; }
req_end() { mark end "$@"; }

# ---- boot ---------------------------------------------------------------------------
accel=$(vbus_qemu_accel)
log="$raw/guest.log"
qargs=()
vdev="virtio-blk-pci,drive=vd0,serial=bench-virtio"
if ((poll_queues)); then vdev+=",num-queues=3"; fi
if ((iothread)); then
	vdev+=",iothread=vio0"
	qargs+=(-object "iothread,id=vio0")
fi
qargs+=(-drive "file=$run/virtio.img,if=none,id=vd0,format=raw,aio=io_uring,cache=none"
	-device "$vdev")
if [[ "$format" == qcow2 ]]; then
	qargs+=(-drive "file=$run/virtioq.qcow2,if=none,id=vd1,format=qcow2,aio=io_uring,cache=none"
		-device "${vdev/drive=vd0,serial=bench-virtio/drive=vd1,serial=bench-virtioq}")
fi
bench_log "accelerator: $accel (2 vCPUs, RAM $mem, kernel $VBUS_KVER); disks: $disks; jobs: $jobs; $rounds round(s) of ${secs} s"
lab_boot guest --guest g1 --smp 2 -- "${qargs[@]}"
lab_serve guest
# the device's own counters over the whole run (masks, mask_polls, ...)
ctl stats g1 1 >"$raw/hostd-stats.txt" 2>&1 || true
if [[ "$format" == qcow2 ]]; then
	ctl stats g1 2 >"$raw/hostd-stats-vbusq.txt" 2>&1 || true
	bench_log "vbusq: $(tr ' ' '\n' <"$raw/hostd-stats-vbusq.txt" |
		grep -E '^(image|image_format|image_state|image_restarts|nbd_state|nbd_reconnects)=' | tr '\n' ' ')"
fi
guest_ok=1
vbus_check_results "$log" >"$raw/guest-check.txt" 2>&1 || guest_ok=0
((guest_ok)) || { bench_log "the guest's log shows problems:"; sed 's/^/    /' "$raw/guest-check.txt"; }

# the fio JSON of each run, out of the serial log
tr -d '\r' <"$log" | awk -v raw="$raw" '
	/^VBUS-BENCH-JSON-BEGIN / { f = raw "/" $2 "/r" $4 "/" $3 ".json"; getline; print > f; close(f) }'
tr -d '\r' <"$log" | grep -aE '^VBUS-BENCH (vbusq?|virtioq?|notif) ' >"$raw/status.txt" || true

lab_meta time_s="$secs" rounds disk_mb jobs vbus_params="$vparams" poll_queues \
	virtio_iothread="$iothread" format disks guest_log_ok="$guest_ok" >"$raw/meta.env"
python3 "$here/blk_report.py" "$raw" "$out" || { vbus_err "blk_report.py failed"; exit 1; }
python3 "$here/blk_plot.py" "$out" || bench_log "no plot (blk_plot.py failed)"
grep -a 'notif check' "$raw/status.txt" | sed 's/^VBUS-BENCH /    /' || true
if ((demo)); then
	printf '\nvbus disk demo (guest):\n'
	tr -d '\r' <"$log" | grep -aoE '(demo: .*|VBUS-TEST (PASS|FAIL) demo-ext4.*)' | sed 's/^/    /'
fi
bench_log "total $(vbus_elapsed "$t_start") s; serial log $log"
for d in $disks; do
	grep -q "^VBUS-BENCH $d up" "$raw/status.txt" || guest_ok=0
done
((guest_ok))
