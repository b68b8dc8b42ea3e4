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
# the kernel a user runs: no SLUB debugging (VBUS_BOOT_DEBUG=1 puts it back)
: "${VBUS_BOOT_DEBUG:=0}"
export VBUS_BOOT_DEBUG
# shellcheck source=tests/qemu/lib/lab.sh
source "$here/../tests/qemu/lib/lab.sh"

rounds=3 rr_n=2000 stream_n=20000 big_n=2000 transports="ipc venet virtio"
timeout=1800 out=$VBUS_BUILD/bench
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
lab_begin ipc-bench rounds:N rr-n:N stream-n:N big-n:N transports:S out:S -- "$@"
for v in "$rounds" "$rr_n" "$stream_n" "$big_n"; do
	((v > 0)) || { vbus_err "not a positive number: $v"; exit 2; }
done
[[ -n "${transports// /}" ]] || { vbus_err "--transports: empty"; exit 2; }
for t in $transports; do
	[[ "$t" == ipc || "$t" == venet || "$t" == virtio ]] ||
		{ vbus_err "--transports: unknown transport $t"; exit 2; }
done
want() { [[ " $transports " == *" $1 "* ]]; }
((EUID == 0)) || { vbus_err "needs root (network namespace, taps)"; exit 1; }
lab_need ip qemu-system-x86_64 python3 cmake
lab_raw "$out/raw-ipc"
lab_build --modules "$LAB_BUS_SUBDIRS kernel/venet" --cmake "vbus-hostd ipc-peer"
lab_kos --bus kernel/vbus_ipc/vbus_ipc.ko kernel/venet/venet.ko
peer=$(find "$cbuild" -type f -name ipc-peer -perm -u+x | head -n 1)
[[ -n "$peer" ]] || { vbus_err "no ipc-peer under $cbuild"; exit 1; }

# ---- the sessions: per round, the transports rotated, each with every run -------------------
runs=("rr $rr_n 1" "rr $rr_n 4096" "stream $stream_n 4096 1" "stream $stream_n 4096 32"
	"stream $big_n 65536 32")
# shellcheck disable=SC2086 # the list of transports
mapfile -t sessions < <(bench_sessions "$rounds" "${#runs[@]}" $transports) # "round transport run-index"

declare -A tap=([venet]=vbipcv0 [virtio]=vbipcq0)
declare -A hip=([venet]=10.82.1.1 [virtio]=10.82.2.1)
declare -A gip=([venet]=10.82.1.2 [virtio]=10.82.2.2)
declare -A mac=([venet]=52:54:00:b3:00:02 [virtio]=52:54:00:b4:00:02)
port=7801 venet_id=2 ipc_id=5
lab_netns "${hip[venet]}" "${tap[venet]}" "${hip[virtio]}" "${tap[virtio]}"

# ---- vbus-hostd: venet on its tap and the ipc device ---------------------------------------
lab_hostd --ns -- --guest "$(lab_guest g1)" \
	--device "g1:type=venet,id=$venet_id,tap=${tap[venet]},mac=${mac[venet]}" \
	--device "g1:type=vbus-ipc,id=$ipc_id,service=echo,sock=$run/echo.sock,qsock=$run/ipc-q.sock,count=64,bufsize=65536"

# ---- initramfs -------------------------------------------------------------------------------
guest_sessions=""
for x in "${sessions[@]}"; do guest_sessions+="$(cut -d' ' -f2 <<<"$x") "; done
ethtool=()
command -v ethtool >/dev/null && ethtool=(--bin "$(command -v ethtool)")
lab_stage guest "$here/guest/ipc-bench-guest.sh" virtio_pci virtio_net "${kos[@]}" "${ethtool[@]}" \
	--file "$here/guest/nic.sh" --file "$here/guest/transports.sh" --file "$here/guest/counters.sh" --file "$peer" <<CONFIG
VIPCB_SESSIONS="$guest_sessions"
VB_VIRTIO_IP=${gip[virtio]}
VB_VENET_IP=${gip[venet]}
VB_PREFIX=24
VIPCB_VIRTIO_HOST=${hip[virtio]}
VIPCB_VENET_HOST=${hip[venet]}
VIPCB_PORT=$port
CONFIG

# ---- boot (QEMU in the namespace: the virtio tap is looked up by name) -----------------------
lab_qemu_in_ns
mapfile -t q_ipc < <(lab_ivshmem ipc-q)
accel=$(vbus_qemu_accel)
log="$raw/guest.log"
bench_log "accelerator: $accel (cpu $(vbus_qemu_cpu "$accel"), 2 vCPUs, RAM $mem, kernel $VBUS_KVER)"
[[ "$accel" == tcg* ]] &&
	bench_log "the guest runs under TCG (emulated CPU): absolute figures are TCG's; the ratios are what compare"
PATH="$lab_ns_bin:$PATH" lab_boot guest --guest g1 --smp 2 --append "$LAB_BENCH_APPEND" -- \
	-netdev "tap,id=vq0,ifname=${tap[virtio]},script=no,downscript=no,vhost=off" \
	-device "virtio-net-pci,netdev=vq0,mac=${mac[virtio]},romfile=" \
	"${q_ipc[@]}"
glines() { tr -d '\r' <"$log" 2>/dev/null | grep -aoE '^VBUS-IPCB .*' || true; }
t0=$(vbus_now)
lab_wait_ready guest '^VBUS-IPCB READY' || exit 1
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
lab_end guest 60
guest_ok=1
vbus_check_results "$log" >"$raw/guest-check.txt" 2>&1 || guest_ok=0
((guest_ok)) || { bench_log "the guest's log shows problems ($log):"; sed 's/^/    /' "$raw/guest-check.txt"; }
glines >"$raw/guest-lines.txt"
ctl stats g1 "$ipc_id" >"$raw/ipc-stats.txt" 2>&1 || true

lab_meta rounds rr_n stream_n big_n host_loadavg_before="$load_before" \
	guest_log_ok="$guest_ok" >"$raw/meta.env"
python3 "$here/ipc_report.py" "$raw" "$out" || { vbus_err "ipc_report.py failed"; exit 1; }
bench_log "total $(vbus_elapsed "$t_start") s; serial log $log"

rc=0
for t in $transports; do
	[[ "${status[$t]}" == up* ]] || { vbus_err "$t could not be measured: ${status[$t]}"; rc=1; }
done
((bad == 0)) || { vbus_err "$bad session(s) failed (raw data $raw)"; rc=1; }
((guest_ok)) || rc=1
exit "$rc"
