#!/usr/bin/env bash
# vbus-ipc vs TCP over venet and over virtio-net: one guest, one program,
# the same messages, in the same run.
#
# Boots ONE guest (TCG unless hardware KVM; 2 vCPUs) with
#   ipc     the vbus-ipc channel (vbus_ipc.ko, /dev/vbus-ipc0; vbus-hostd
#           --device type=vbus-ipc, count=64, bufsize=65536)
#   venet   venet.ko on the vbus bridge, vbus-hostd serving it on a tap
#   virtio  virtio-net-pci, QEMU's userspace tap backend (vhost=off)
# The taps live in a network namespace this script creates (vbus-ipcb-PID;
# venet 10.82.1.0/24, virtio 10.82.2.0/24, host .1, guest .2), where
# vbus-hostd and QEMU run. Every session is ipc-peer (tests/ipc) at both
# ends: in the guest it echoes (over /dev/vbus-ipc0, or as the TCP client
# of the host's listener on the NIC's subnet); on the host it measures,
# on the host's clock, one of
#   rr N 1, rr N 4096          round trips (after 100 unmeasured): p50, p99
#   stream M 4096 1, stream M 4096 32, stream B 65536 32
#                              M (B) messages against the echo, BATCH
#                              sent per doorbell / per send(), BATCH in
#                              flight: messages/s and MB/s one way
# Transports alternate (rotate) per round; figures are the median over
# rounds with min..max. Notifications per message: vbus-ipc's own
# counters (doorbells rung + handled, at the host's end); for the NICs the
# guest's counters around the session (bench/guest/counters.sh: doorbells
# = virtio-net's queue kicks / the vbus bridge's doorbells, interrupts =
# the NIC's MSI-X lines) over the session's messages, warm-up included.
# Prints a table with the ratios to TCP over venet and the issue's goals
# (reported, never asserted), writes $OUT/ipc.json and $OUT/ipc.png
# (gnuplot, via bench/report.py) and keeps the raw data in $OUT/raw-ipc/.
#
#   bench/ipc-vs-tcp.sh [--rounds N] [--rr-n N] [--stream-n N] [--big-n N]
#       [--transports "ipc venet virtio"] [--mem SIZE] [--timeout SEC]
#       [--out DIR] [--no-build]
#
#   --rounds N       rounds (default 3)
#   --rr-n N         round trips per rr run (default 2000)
#   --stream-n N     4 KiB messages per stream run (default 20000)
#   --big-n N        64 KiB messages per stream run (default 2000)
#   --transports L   what to measure (default "ipc venet virtio"; the
#                    ratios need venet)
#   --mem SIZE       guest RAM (default 1G)
#   --timeout SEC    kill the guest after SEC seconds (default 1800)
#   --out DIR        results directory (default $VBUS_BUILD/bench)
#   --no-build       use the modules, vbus-hostd and ipc-peer already built
# Exit status: 0 when every requested transport was measured and every
# session ended cleanly, 1 otherwise, 2 on usage. Needs root (netns, taps).
# Accelerator: VBUS_QEMU_ACCEL (see tests/qemu).
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

rounds=3 rr_n=2000 stream_n=20000 big_n=2000 transports="ipc venet virtio"
mem=1G timeout=1800 out="" build=1
while (($#)); do
	case "$1" in
	--rounds) rounds=$2; shift 2 ;;
	--rr-n) rr_n=$2; shift 2 ;;
	--stream-n) stream_n=$2; shift 2 ;;
	--big-n) big_n=$2; shift 2 ;;
	--transports) transports=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	-h | --help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) vbus_err "unknown argument $1 (see --help)"; exit 2 ;;
	esac
done
for v in "$rounds" "$rr_n" "$stream_n" "$big_n" "$timeout"; do
	[[ "$v" =~ ^[1-9][0-9]*$ ]] || { vbus_err "not a positive number: $v"; exit 2; }
done
[[ -n "${transports// /}" ]] || { vbus_err "--transports: empty"; exit 2; }
for t in $transports; do
	[[ "$t" == ipc || "$t" == venet || "$t" == virtio ]] ||
		{ vbus_err "--transports: unknown transport $t"; exit 2; }
done
want() { [[ " $transports " == *" $1 "* ]]; }
((EUID == 0)) || { vbus_err "needs root (network namespace, taps)"; exit 1; }
for t in ip qemu-system-x86_64 python3 cmake; do
	command -v "$t" >/dev/null || { vbus_err "$t not found (scripts/deps.sh installs it)"; exit 1; }
done

bench_log() { printf 'bench: %s\n' "$*"; }

t_start=$(vbus_now)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
vbus_fetch_kernel
: "${out:=$VBUS_BUILD/bench}"
raw="$out/raw-ipc"
rm -rf "$raw"
mkdir -p "$raw"
cbuild="$VBUS_BUILD/cmake"

# ---- build -------------------------------------------------------------------------------
if ((build)); then
	if ! step=$(vbus_build_stack "kernel/bus kernel/pci_bridge kernel/vbus_test kernel/vbus_ipc kernel/venet" "$raw" "$cbuild"); then
		vbus_err "$step failed (log $raw/$step.log)"
		exit 1
	fi
	if ! cmake --build "$cbuild" --target ipc-peer -j2 >"$raw/build-peer.log" 2>&1; then
		tail -n 20 "$raw/build-peer.log" >&2
		vbus_err "ipc-peer build failed (log $raw/build-peer.log)"
		exit 1
	fi
fi
kos=("$top/vbus_core.ko" "$top/kernel/bus/vbus_proxy.ko" "$top/kernel/pci_bridge/vbus_pcibridge.ko"
	"$top/kernel/vbus_ipc/vbus_ipc.ko" "$top/kernel/venet/venet.ko")
for ko in "${kos[@]}"; do
	[[ -f "$ko" ]] || { vbus_err "${ko#"$top"/} not built"; exit 1; }
done
hostd=$(vbus_find_hostd "$cbuild") || { vbus_err "no vbus-hostd under $cbuild"; exit 1; }
peer=$(find "$cbuild" -type f -name ipc-peer -perm -u+x | head -n 1)
[[ -n "$peer" ]] || { vbus_err "no ipc-peer under $cbuild"; exit 1; }

# ---- the sessions: per round, the transports rotated, each with every run -------------------
runs=("rr $rr_n 1" "rr $rr_n 4096" "stream $stream_n 4096 1" "stream $stream_n 4096 32"
	"stream $big_n 65536 32")
order=(ipc venet virtio)
sessions=() # "round transport run-index"
for ((r = 1; r <= rounds; r++)); do
	for ((k = 0; k < 3; k++)); do
		t=${order[$(((k + r - 1) % 3))]}
		want "$t" || continue
		for ((m = 0; m < ${#runs[@]}; m++)); do sessions+=("$r $t $m"); done
	done
done

# ---- run directory, namespace, cleanup ------------------------------------------------------
run=$(mktemp -d /tmp/vbus-ipcb.XXXXXX)
tag="vbus-ipcb-$$"
ns=$tag
hostd_pid="" boot_pid=""
cleanup() {
	local p
	if [[ -f "$run/qemu.pid" ]]; then
		p=$(cat "$run/qemu.pid" 2>/dev/null || true)
		[[ -n "$p" ]] && kill -9 "$p" 2>/dev/null || true
	fi
	[[ -n "$boot_pid" ]] && kill "$boot_pid" 2>/dev/null || true
	vbus_stop_pid "$hostd_pid"
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$run"
	rm -f "/dev/shm/$tag-g1"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
nsx() { ip netns exec "$ns" "$@"; }

declare -A tap=([venet]=vbipcv0 [virtio]=vbipcq0)
declare -A hip=([venet]=10.82.1.1 [virtio]=10.82.2.1)
declare -A gip=([venet]=10.82.1.2 [virtio]=10.82.2.2)
declare -A mac=([venet]=52:54:00:b3:00:02 [virtio]=52:54:00:b4:00:02)
port=7801 venet_id=2 ipc_id=5
make_netns() {
	local n
	ip netns add "$ns" && nsx ip link set lo up || return 1
	for n in venet virtio; do
		nsx ip tuntap add dev "${tap[$n]}" mode tap vnet_hdr &&
			nsx ip addr add "${hip[$n]}/24" dev "${tap[$n]}" &&
			nsx ip link set "${tap[$n]}" up || return 1
	done
}
if ! make_netns >"$raw/netns.log" 2>&1; then
	sed 's/^/    /' "$raw/netns.log"
	vbus_err "cannot create the namespace $ns and its taps"
	exit 1
fi

# ---- vbus-hostd: venet on its tap and the ipc device ---------------------------------------
ip netns exec "$ns" "$hostd" --foreground --ctl "$run/ctl.sock" \
	--guest "g1:sock=$run/g1.sock,mem=/dev/shm/$tag-g1,size=$mem" \
	--device "g1:type=venet,id=$venet_id,tap=${tap[venet]},mac=${mac[venet]}" \
	--device "g1:type=vbus-ipc,id=$ipc_id,service=echo,sock=$run/echo.sock,qsock=$run/ipc-q.sock,count=64,bufsize=65536" \
	>"$raw/hostd.log" 2>&1 &
hostd_pid=$!
for _ in $(seq 100); do
	[[ -S "$run/g1.sock" && -S "$run/echo.sock" && -S "$run/ipc-q.sock" ]] && break
	kill -0 "$hostd_pid" 2>/dev/null || break
	sleep 0.1
done
if [[ ! -S "$run/g1.sock" || ! -S "$run/echo.sock" || ! -S "$run/ipc-q.sock" ]]; then
	sed 's/^/    hostd: /' "$raw/hostd.log" | tail -n 20
	vbus_err "vbus-hostd did not come up (log $raw/hostd.log)"
	exit 1
fi

# ---- initramfs -------------------------------------------------------------------------------
s="$run/stage"
mkdir -p "$s/test"
cp "$top/tests/qemu/guest/lib.sh" "$s/test/lib.sh"
cp "$here/guest/ipc-bench-guest.sh" "$s/test/run.sh"
cp "$here/guest/nic.sh" "$s/test/nic.sh"
cp "$here/guest/counters.sh" "$s/test/counters.sh"
cp "$peer" "$s/test/ipc-peer"
guest_sessions=""
for x in "${sessions[@]}"; do guest_sessions+="$(cut -d' ' -f2 <<<"$x") "; done
cat >"$s/test/config.sh" <<EOF
VIPCB_SESSIONS="$guest_sessions"
VB_VIRTIO_IP=${gip[virtio]}
VB_VENET_IP=${gip[venet]}
VB_PREFIX=24
VIPCB_VIRTIO_HOST=${hip[virtio]}
VIPCB_VENET_HOST=${hip[venet]}
VIPCB_PORT=$port
EOF
vbus_initramfs_add_kmods "$s" virtio_pci virtio_net "${kos[@]}" || { vbus_err "staging the modules failed"; exit 1; }
command -v ethtool >/dev/null && { vbus_initramfs_add_binary "$s" "$(command -v ethtool)" ||
	{ vbus_err "staging ethtool failed"; exit 1; }; }
vbus_make_initramfs "$run/ipcb.cpio.gz" "$s" >/dev/null

# ---- boot (QEMU in the namespace: the virtio tap is looked up by name) -----------------------
mkdir -p "$run/bin"
printf '#!/bin/sh\nexec ip netns exec %q %q "$@"\n' "$ns" "$(command -v qemu-system-x86_64)" \
	>"$run/bin/qemu-system-x86_64"
chmod +x "$run/bin/qemu-system-x86_64"
mapfile -t qargs < <(vbus_transport_args "/dev/shm/$tag-g1" "$mem" "$run/g1.sock")
qargs+=(-netdev "tap,id=vq0,ifname=${tap[virtio]},script=no,downscript=no,vhost=off"
	-device "virtio-net-pci,netdev=vq0,mac=${mac[virtio]},romfile="
	-chardev "socket,id=ipc0,path=$run/ipc-q.sock"
	-device "ivshmem-doorbell,chardev=ipc0,vectors=2"
	-pidfile "$run/qemu.pid")
accel=$(vbus_qemu_accel)
log="$out/ipc-serial.log"
rm -f "$log"
bench_log "accelerator: $accel (cpu $(vbus_qemu_cpu "$accel"), 2 vCPUs, RAM $mem, kernel $VBUS_KVER)"
[[ "$accel" == tcg* ]] &&
	bench_log "the guest runs under TCG (emulated CPU): absolute figures are TCG's; the ratios are what compare"
PATH="$run/bin:$PATH" vbus_boot_guest --initrd "$run/ipcb.cpio.gz" --log "$log" \
	--mem "$mem" --smp 2 --timeout "$timeout" -- "${qargs[@]}" >"$raw/boot.out" 2>&1 &
boot_pid=$!

glines() { tr -d '\r' <"$log" 2>/dev/null | grep -aoE '^VBUS-IPCB .*' || true; }
ready=0
t0=$(vbus_now)
while kill -0 "$boot_pid" 2>/dev/null; do
	if [[ -f "$log" ]] && glines | grep -q '^VBUS-IPCB READY'; then
		ready=1
		break
	fi
	sleep 0.2
done
if ((!ready)); then
	wait "$boot_pid" 2>/dev/null || true
	boot_pid=""
	sed 's/^/    /' "$raw/boot.out"
	tr -d '\r' <"$log" | tail -n 30 | sed 's/^/    serial: /'
	vbus_err "the guest never became ready (log $log)"
	exit 1
fi
bench_log "guest ready after $(vbus_elapsed "$t0") s"

# ---- which transports are up (the guest skips the others' sessions too) ----------------------
declare -A status
for t in ipc venet virtio; do
	if ! want "$t"; then
		status[$t]="unavailable not requested"
	elif l=$(glines | grep -m1 "^VBUS-IPCB $t "); then
		status[$t]=${l#"VBUS-IPCB $t "}
	else
		status[$t]="unavailable the guest said nothing about it"
	fi
	printf '%s\n' "${status[$t]}" >"$raw/status-$t"
	want "$t" && bench_log "$t: ${status[$t]}"
done

# ---- the host's ends, in the guest's order ----------------------------------------------------
# measure TRANSPORT RUN OUTFILE
measure() {
	local t=$1 m=$2 f=$3
	# shellcheck disable=SC2086 # the run is "action args..."
	case "$t" in
	ipc) "$peer" host "$run/echo.sock" $m --timeout 120000 ;;
	*) nsx "$peer" tcp-listen "${hip[$t]}:$port" $m --timeout 120000 ;;
	esac >"$f" 2>&1
}
bad=0 sid=0
: >"$raw/sessions.txt"
for x in "${sessions[@]}"; do
	sid=$((sid + 1))
	read -r r t m <<<"$x"
	[[ "${status[$t]}" == up* ]] || continue
	f="$raw/s$sid.out"
	rc=0
	measure "$t" "${runs[$m]}" "$f" || rc=$?
	printf '%s %s %s %s %s\n' "$sid" "$r" "$t" "$rc" "${runs[$m]}" >>"$raw/sessions.txt"
	if ((rc)); then
		bad=$((bad + 1))
		bench_log "round $r $t ${runs[$m]}: exit $rc: $(tail -n 1 "$f")"
	else
		bench_log "round $r $t ${runs[$m]}: $(grep -aE '^(ipc|tcp)-(rr|stream) ' "$f" | head -n 1)"
	fi
done

# ---- end of the guest ------------------------------------------------------------------------
for _ in $(seq 600); do
	kill -0 "$boot_pid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$boot_pid" 2>/dev/null; then
	bench_log "the guest did not finish: killing QEMU"
	kill -9 "$(cat "$run/qemu.pid" 2>/dev/null)" 2>/dev/null || true
fi
wait "$boot_pid" 2>/dev/null || true
boot_pid=""
guest_ok=1
vbus_check_results "$log" >"$raw/guest-check.txt" 2>&1 || guest_ok=0
((guest_ok)) || { bench_log "the guest's log shows problems ($log):"; sed 's/^/    /' "$raw/guest-check.txt"; }
glines >"$raw/guest-lines.txt"
"$hostd" ctl --ctl "$run/ctl.sock" stats g1 "$ipc_id" >"$raw/ipc-stats.txt" 2>&1 || true

cat >"$raw/meta.env" <<EOF
accel=$accel
cpu=$(vbus_qemu_cpu "$accel")
smp=2
mem=$mem
kernel=$VBUS_KVER
rounds=$rounds
rr_n=$rr_n
stream_n=$stream_n
big_n=$big_n
host_cpus=$(nproc)
host_loadavg_before=$load_before
host_loadavg_after=$(cut -d' ' -f1-3 /proc/loadavg)
qemu=$(qemu-system-x86_64 --version | head -n 1)
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
guest_log_ok=$guest_ok
EOF
python3 "$here/ipc_report.py" "$raw" "$out" || { vbus_err "ipc_report.py failed"; exit 1; }
bench_log "total $(vbus_elapsed "$t_start") s; serial log $log"

rc=0
for t in $transports; do
	[[ "${status[$t]}" == up* ]] || { vbus_err "$t could not be measured: ${status[$t]}"; rc=1; }
done
((bad == 0)) || { vbus_err "$bad session(s) failed (raw data $raw)"; rc=1; }
((guest_ok)) || rc=1
exit "$rc"
