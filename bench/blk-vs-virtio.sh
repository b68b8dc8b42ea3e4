#!/usr/bin/env bash
# vbus-blk vs virtio-blk, in one guest, with the same fio jobs, in the same run.
#
# Boots ONE guest (TCG unless hardware KVM; 2 vCPUs) with two disks on
# identical backing files (--disk-mb MiB of the same random data):
#   vbus    vbus_blk.ko over the ivshmem transport, served by vbus-hostd
#           (--device g1:type=vbus-blk,id=1,file=...: io_uring)
#   virtio  virtio-blk-pci, QEMU's block layer with aio=io_uring,cache=none
# and runs in the guest, per round, each fio job on each disk (order
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
#       [--vbus-params K=V,...] [--virtio-iothread] [--demo]
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
#   --demo         afterwards, ext4 on the vbus disk: mkfs, mount, files,
#                  ls, remount, checksums (printed; scripts/main.sh)
# Exit status: 0 when both disks were measured and the guest's log is
# clean (with --demo: the demo passed), 1 otherwise, 2 on usage.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
qlib="$top/tests/qemu/lib"
# shellcheck source=tests/qemu/lib/kernel.sh
source "$qlib/kernel.sh"
# shellcheck source=tests/qemu/lib/initramfs.sh
source "$qlib/initramfs.sh"
# the kernel a user runs: no SLUB debugging (VBUS_BOOT_DEBUG=1 puts it back)
: "${VBUS_BOOT_DEBUG:=0}"
export VBUS_BOOT_DEBUG
# shellcheck source=tests/qemu/lib/boot.sh
source "$qlib/boot.sh"
# shellcheck source=tests/qemu/lib/results.sh
source "$qlib/results.sh"
# shellcheck source=tests/qemu/lib/hostd.sh
source "$qlib/hostd.sh"

secs=5 rounds=3 disk_mb=256 mem=1G timeout=1800 out="" build=1 demo=0 vparams="" iothread=0
jobs="randread-4k-qd1 randread-4k-qd32 randwrite-4k-qd1 randwrite-4k-qd32 read-128k-qd8 write-128k-qd8"
while (($#)); do
	case "$1" in
	--time) secs=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--disk-mb) disk_mb=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	--vbus-params) vparams=$2; shift 2 ;;
	--demo) demo=1; shift ;;
	--virtio-iothread) iothread=1; shift ;;
	-h | --help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) vbus_err "unknown argument $1 (see --help)"; exit 2 ;;
	esac
done
for v in "$secs" "$rounds" "$disk_mb" "$timeout"; do
	[[ "$v" =~ ^[1-9][0-9]*$ ]] || { vbus_err "not a positive number: $v"; exit 2; }
done
[[ -z "$vparams" || "$vparams" =~ ^[a-z_]+=[A-Za-z0-9_]+(,[a-z_]+=[A-Za-z0-9_]+)*$ ]] ||
	{ vbus_err "--vbus-params: '$vparams' is not K=V[,K=V...]"; exit 2; }
for j in $jobs; do
	[[ "$j" =~ ^(randread|randwrite|read|write)-[0-9]+[kKmM]?-qd[0-9]+(-poll)?$ ]] ||
		{ vbus_err "--jobs: '$j' is not RW-BS-qdN[-poll] (e.g. randread-4k-qd32)"; exit 2; }
done
# polled jobs: a poll queue on each disk, next to two interrupt-driven ones
poll_queues=0
[[ " $jobs" == *-poll* ]] && poll_queues=1
if ((poll_queues)) && [[ ",$vparams" != *,queues=* ]]; then
	vparams="queues=3${vparams:+,$vparams}"
fi
for t in fio qemu-system-x86_64 python3; do
	command -v "$t" >/dev/null || { vbus_err "$t not found (scripts/deps.sh installs it)"; exit 1; }
done

bench_log() { printf 'bench: %s\n' "$*"; }

t_start=$(vbus_now)
vbus_fetch_kernel
: "${out:=$VBUS_BUILD/bench}"
raw="$out/raw-blk"
rm -rf "$raw"
mkdir -p "$raw"
cbuild="$VBUS_BUILD/cmake"

if ((build)); then
	if ! step=$(vbus_build_stack "kernel/bus kernel/pci_bridge kernel/vbus_test kernel/vbus_ipc kernel/vbus_blk" "$raw" "$cbuild"); then
		vbus_err "$step failed (log $raw/$step.log)"
		exit 1
	fi
fi
kos=("$top/vbus_core.ko" "$top/kernel/bus/vbus_proxy.ko"
	"$top/kernel/pci_bridge/vbus_pcibridge.ko" "$top/kernel/vbus_blk/vbus_blk.ko")
for ko in "${kos[@]}"; do
	[[ -f "$ko" ]] || { vbus_err "${ko#"$top"/} not built"; exit 1; }
done
hostd=${VBUS_HOSTD:-$(vbus_find_hostd "$cbuild")} ||
	{ vbus_err "no vbus-hostd binary under $cbuild (or \$VBUS_HOSTD)"; exit 1; }

# ---- run directory, backing files, cleanup ----------------------------------
run=$(mktemp -d /tmp/vbus-blkbench.XXXXXX)
tag="vbus-blkbench-$$"
hostd_pid="" boot_pid="" responder_pid=""
cleanup() {
	[[ -f "$run/qemu.pid" ]] && kill -9 "$(cat "$run/qemu.pid")" 2>/dev/null || true
	[[ -n "$boot_pid" ]] && kill "$boot_pid" 2>/dev/null || true
	[[ -n "$responder_pid" ]] && kill "$responder_pid" 2>/dev/null || true
	vbus_stop_pid "$hostd_pid"
	rm -rf "$run"
	rm -f "/dev/shm/$tag-g1"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# identical data on both: reads of holes would flatter whichever has more
head -c "$((disk_mb * 1024 * 1024))" /dev/urandom >"$run/vbus.img"
cp "$run/vbus.img" "$run/virtio.img"
sync

"$hostd" --foreground --ctl "$run/ctl.sock" \
	--guest "g1:sock=$run/g1.sock,mem=/dev/shm/$tag-g1,size=$mem" \
	--device "g1:type=vbus-blk,id=1,file=$run/vbus.img,serial=bench-vbus${vparams:+,$vparams}" \
	>"$raw/hostd.log" 2>&1 &
hostd_pid=$!
for _ in $(seq 100); do
	[[ -S "$run/ctl.sock" && -S "$run/g1.sock" ]] && break
	kill -0 "$hostd_pid" 2>/dev/null || break
	sleep 0.1
done
[[ -S "$run/g1.sock" ]] || { tail -n 5 "$raw/hostd.log"; vbus_err "vbus-hostd did not start"; exit 1; }
ctl() { "$hostd" ctl --ctl "$run/ctl.sock" "$@"; }

# ---- initramfs -------------------------------------------------------------------
s="$run/stage"
mkdir -p "$s/test"
cp "$top/tests/qemu/guest/lib.sh" "$s/test/lib.sh"
cp "$here/guest/blk-bench-guest.sh" "$s/test/run.sh"
cat >"$s/test/config.sh" <<EOF
VB_DISKS="vbus virtio"
VB_JOBS="$jobs"
VB_ROUNDS=$rounds
VB_SECS=$secs
VB_SIZE_MB=$disk_mb
VB_DEMO=$demo
VB_POLL_QUEUES=$poll_queues
EOF
vbus_initramfs_add_kmods "$s" virtio_pci virtio_blk "${kos[@]}" || { vbus_err "staging modules failed"; exit 1; }
vbus_initramfs_add_binary "$s" "$(command -v fio)" || { vbus_err "staging fio failed"; exit 1; }
if ((demo)); then
	vbus_initramfs_add_kmods "$s" crc32c_generic ext4 &&
		vbus_initramfs_add_binary "$s" "$(PATH=$PATH:/usr/sbin:/sbin command -v mkfs.ext4)" ||
		{ vbus_err "staging ext4/mkfs.ext4 for --demo failed (e2fsprogs)"; exit 1; }
fi
vbus_make_initramfs "$run/bench.cpio.gz" "$s" >/dev/null

# ---- the guest's begin/end marks --------------------------------------------------
clk_tck=$(getconf CLK_TCK)
ticks() {
	local st
	[[ -n "$1" ]] && st=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
	st=${st##*) }
	awk '{ print $12 + $13 }' <<<"$st"
}
# notifications so far, guest->host and host->guest (vbus-hostd's
# counters of device 1)
notifies() {
	ctl stats g1 1 2>/dev/null | tr ' ' '\n' |
		awk -F= '$1 == "notify_in" { i = $2 } $1 == "notify_out" { o = $2 } END { print i + 0, o + 0 }'
}
responder() {
	local line what disk job r gkicks girqs qemu_pid
	exec 3<"$run/gctl.out" 4>"$run/gctl.in"
	while IFS= read -r line <&3; do
		line=$(tr -cd '[:print:]' <<<"$line")
		read -r what disk job r gkicks girqs <<<"$line"
		qemu_pid=$(cat "$run/qemu.pid" 2>/dev/null || true)
		# the guest's own counts (kprobe hits, /proc/interrupts), or -
		[[ "$gkicks" =~ ^[0-9]+$ ]] || gkicks=-
		[[ "$girqs" =~ ^[0-9]+$ ]] || girqs=-
		case "$what" in
		begin | end)
			if [[ "$disk" =~ ^(vbus|virtio)$ && "$job" =~ ^[a-z0-9-]+$ && "$r" =~ ^[0-9]+$ ]]; then
				mkdir -p "$raw/$disk/r$r"
				printf '%s %s %s %s %s %s %s\n' "$(ticks "$qemu_pid")" "$(ticks "$hostd_pid")" \
					"$(notifies)" "$(vbus_now)" "$clk_tck" "$gkicks" "$girqs" \
					>"$raw/$disk/r$r/$job.$what"
				printf 'ok\n' >&4
			else
				printf 'fail bad mark\n' >&4
			fi
			;;
		*) printf 'fail unknown request\n' >&4 ;;
		esac
	done
}
mkfifo "$run/gctl.in" "$run/gctl.out"
responder >"$raw/responder.log" 2>&1 &
responder_pid=$!

# ---- boot ---------------------------------------------------------------------------
accel=$(vbus_qemu_accel)
log="$raw/serial.log"
mapfile -t qargs < <(vbus_transport_args "/dev/shm/$tag-g1" "$mem" "$run/g1.sock")
vdev="virtio-blk-pci,drive=vd0,serial=bench-virtio"
if ((poll_queues)); then vdev+=",num-queues=3"; fi
if ((iothread)); then
	vdev+=",iothread=vio0"
	qargs+=(-object iothread,id=vio0)
fi
qargs+=(-drive "file=$run/virtio.img,if=none,id=vd0,format=raw,aio=io_uring,cache=none"
	-device "$vdev"
	-serial "pipe:$run/gctl" -pidfile "$run/qemu.pid")
bench_log "accelerator: $accel (2 vCPUs, RAM $mem, kernel $VBUS_KVER); jobs: $jobs; $rounds round(s) of ${secs} s"
boot_rc=0
vbus_boot_guest --initrd "$run/bench.cpio.gz" --log "$log" --mem "$mem" --smp 2 \
	--timeout "$timeout" -- "${qargs[@]}" >"$raw/boot.out" 2>&1 || boot_rc=$?
((boot_rc == 0)) || bench_log "vbus_boot_guest returned $boot_rc (see $raw/boot.out)"
# the device's own counters over the whole run (masks, mask_polls, ...)
ctl stats g1 1 >"$raw/hostd-stats.txt" 2>&1 || true
guest_ok=1
vbus_check_results "$log" >"$raw/guest-check.txt" 2>&1 || guest_ok=0
((guest_ok)) || { bench_log "the guest's log shows problems:"; sed 's/^/    /' "$raw/guest-check.txt"; }

# the fio JSON of each run, out of the serial log
tr -d '\r' <"$log" | awk -v raw="$raw" '
	/^VBUS-BENCH-JSON-BEGIN / { f = raw "/" $2 "/r" $4 "/" $3 ".json"; getline; print > f; close(f) }'
tr -d '\r' <"$log" | grep -aE '^VBUS-BENCH (vbus|virtio|notif) ' >"$raw/status.txt" || true

cat >"$raw/meta.env" <<EOF
accel=$accel
smp=2
mem=$mem
kernel=$VBUS_KVER
time_s=$secs
rounds=$rounds
disk_mb=$disk_mb
jobs=$jobs
vbus_params=$vparams
poll_queues=$poll_queues
virtio_iothread=$iothread
host_cpus=$(nproc)
host_loadavg=$(cut -d' ' -f1-3 /proc/loadavg)
qemu=$(qemu-system-x86_64 --version | head -n 1)
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
guest_log_ok=$guest_ok
EOF
python3 "$here/blk_report.py" "$raw" "$out" || { vbus_err "blk_report.py failed"; exit 1; }
python3 "$here/blk_plot.py" "$out" || bench_log "no plot (blk_plot.py failed)"
grep -a 'notif check' "$raw/status.txt" | sed 's/^VBUS-BENCH /    /' || true
if ((demo)); then
	printf '\nvbus disk demo (guest):\n'
	tr -d '\r' <"$log" | grep -aoE '(demo: .*|VBUS-TEST (PASS|FAIL) demo-ext4.*)' | sed 's/^/    /'
fi
bench_log "total $(vbus_elapsed "$t_start") s; serial log $log"
grep -q '^VBUS-BENCH vbus up' "$raw/status.txt" && grep -q '^VBUS-BENCH virtio up' "$raw/status.txt" &&
	((guest_ok))
