#!/usr/bin/env bash
# Two guests talking: a VM<->VM vbus-ipc channel (a link) against TCP
# between two venet guests and TCP between two virtio-net guests, all on
# one Linux bridge, in the same run.
#
# Boots TWO guests (TCG unless hardware KVM; 2 vCPUs each), a (g1) and b
# (g2), each with
#   ipc     vbus_ipc.ko: g1's vbus-ipc device linked to g2's (vbus-hostd
#           --device g1:type=vbus-ipc,...,peer=g2,peer_qsock=...; count=64,
#           bufsize=65536), /dev/vbus-ipc0 in both (a north, b south)
#   venet   venet.ko on the vbus bridge, vbus-hostd serving it on a tap
#   virtio  virtio-net-pci, QEMU's userspace tap backend (vhost=off)
# The four taps are ports of one Linux bridge in a network namespace this
# script creates (vbus-vm-bench-PID), where vbus-hostd and both QEMUs
# run; venet is 10.83.1.0/24, virtio 10.83.2.0/24 (a .2, b .3). Every
# session is ipc-peer (tests/ipc) in both guests (bench/guest/
# vm-bench-guest.sh): b echoes; a measures, on its own clock, one of
#   rr N 1, rr N 4096          round trips (after 100 unmeasured): p50, p99
#   stream M 4096 1, stream M 4096 32, stream B 65536 32
#                              messages/s and MB/s one way against the echo
# Transports rotate per round (bench_sessions, as bench/ipc-vs-tcp.sh);
# figures are the median over rounds with min..max, ten rounds by default
# so the spread between sessions shows. Notifications per message:
# vbus-ipc's doorbells rung + handled at a's end (ioq_ipc_stats: each one
# rung is an interrupt in b, each one handled an interrupt in a); for the
# NICs a's counters around the session (bench/guest/counters.sh: queue
# kicks / the vbus bridge's doorbells, and the NIC's MSI-X interrupts).
# Prints the table with the ratios to TCP over venet and the issue's goals
# (reported, never asserted), writes $OUT/vm.json and $OUT/vm.png
# (bench/ipc_report.py --kind vm) and keeps the raw data in $OUT/raw-vm/.
#
#   bench/vm-to-vm.sh [--rounds N] [--rr-n N] [--stream-n N] [--big-n N]
#       [--transports "ipc venet virtio"] [--mem SIZE] [--timeout SEC]
#       [--out DIR] [--no-build]
#
#   --rounds N       rounds (default 10)
#   --rr-n N         round trips per rr run (default 1000)
#   --stream-n N     4 KiB messages per stream run (default 2000: TCP
#                    between two TCG guests runs ~300 of them a second
#                    at batch 1)
#   --big-n N        64 KiB messages per stream run (default 500)
#   --transports L   what to measure (default "ipc venet virtio"; the
#                    ratios need venet)
#   --mem SIZE       RAM of each guest (default 512M)
#   --timeout SEC    kill the guests after SEC seconds (default 3600)
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

rounds=10 rr_n=1000 stream_n=2000 big_n=500 transports="ipc venet virtio"
timeout=3600 mem=512M out=$VBUS_BUILD/bench
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
lab_begin vm-bench rounds:N rr-n:N stream-n:N big-n:N transports:S out:S -- "$@"
for v in "$rounds" "$rr_n" "$stream_n" "$big_n"; do
	((v > 0)) || { vbus_err "not a positive number: $v"; exit 2; }
done
[[ -n "${transports// /}" ]] || { vbus_err "--transports: empty"; exit 2; }
for t in $transports; do
	[[ "$t" == ipc || "$t" == venet || "$t" == virtio ]] ||
		{ vbus_err "--transports: unknown transport $t"; exit 2; }
done
((EUID == 0)) || { vbus_err "needs root (network namespace, taps)"; exit 1; }
lab_need ip qemu-system-x86_64 python3 cmake
lab_raw "$out/raw-vm"
lab_build --modules "$LAB_BUS_SUBDIRS kernel/venet" --cmake "vbus-hostd ipc-peer"
lab_kos --bus kernel/vbus_ipc/vbus_ipc.ko kernel/venet/venet.ko
peer=$(find "$cbuild" -type f -name ipc-peer -perm -u+x | head -n 1)
[[ -n "$peer" ]] || { vbus_err "no ipc-peer under $cbuild"; exit 1; }

# ---- the sessions ------------------------------------------------------------------------------
runs=("rr $rr_n 1" "rr $rr_n 4096" "stream $stream_n 4096 1" "stream $stream_n 4096 32"
	"stream $big_n 65536 32")
guest_sessions=""
# shellcheck disable=SC2086 # the list of transports
while read -r r t m; do
	guest_sessions+="$r:$t:${runs[$m]// /:} "
done < <(bench_sessions "$rounds" "${#runs[@]}" $transports)

# ---- the namespace: four taps on one bridge; vbus-hostd with both guests --------------------
declare -A ip=([a.venet]=10.83.1.2 [b.venet]=10.83.1.3 [a.virtio]=10.83.2.2 [b.virtio]=10.83.2.3)
lab_netns - vma - vmb - vqa - vqb
if ! lab_bridge br0 vma vmb vqa vqb >"$lab_logs/bridge.log" 2>&1; then
	sed 's/^/    /' "$lab_logs/bridge.log"
	vbus_err "cannot make the bridge (log $lab_logs/bridge.log)"
	exit 1
fi
lab_hostd --ns -- --guest "$(lab_guest g1)" --guest "$(lab_guest g2)" \
	--device "g1:type=venet,id=2,tap=vma,mac=52:54:00:b5:00:02" \
	--device "g2:type=venet,id=2,tap=vmb,mac=52:54:00:b5:00:03" \
	--device "g1:type=vbus-ipc,id=5,service=vmb,qsock=$run/a-ipc.sock,peer=g2,peer_qsock=$run/b-ipc.sock,count=64,bufsize=65536"

# ---- the guests' one request: which transports are up in both -------------------------------
declare -A up_in
# shellcheck disable=SC2317 # lab_serve calls it
req_up() {
	local other=a t both=""
	[[ "$lab_role" == a ]] && other=b
	up_in[$lab_role]=" $* "
	[[ -n "${up_in[$other]:-}" ]] || return 2
	for t in ipc venet virtio; do
		[[ "${up_in[a]}" == *" $t "* && "${up_in[b]}" == *" $t "* ]] && both+="$t "
	done
	lab_reply=${both% }
}

# ---- initramfs and boot (QEMU in the namespace: the virtio taps are looked up by name) -------
ethtool=()
command -v ethtool >/dev/null && ethtool=(--bin "$(command -v ethtool)")
stage() {
	local me=$1 other=$2
	lab_stage "$me" "$here/guest/vm-bench-guest.sh" virtio_pci virtio_net "${kos[@]}" "${ethtool[@]}" \
		--file "$here/guest/nic.sh" --file "$here/guest/transports.sh" \
		--file "$here/guest/counters.sh" --file "$peer" <<CONFIG
VMB_ROLE=$me
VMB_SESSIONS="$guest_sessions"
VB_VIRTIO_IP=${ip[$me.virtio]}
VB_VENET_IP=${ip[$me.venet]}
VB_PREFIX=24
VMB_PEER_VIRTIO=${ip[$other.virtio]}
VMB_PEER_VENET=${ip[$other.venet]}
VMB_PORT=7900
CONFIG
}
stage a b
stage b a
lab_qemu_in_ns
accel=$(vbus_qemu_accel)
bench_log "accelerator: $accel (cpu $(vbus_qemu_cpu "$accel"), 2 guests of 2 vCPUs, RAM $mem each, kernel $VBUS_KVER)"
[[ "$accel" == tcg* ]] &&
	bench_log "the guests run under TCG (emulated CPU): absolute figures are TCG's; the ratios are what compare"
# boot ROLE GUEST MAC-SUFFIX
boot() {
	local q
	mapfile -t q < <(lab_ivshmem "$1-ipc")
	PATH="$lab_ns_bin:$PATH" lab_boot "$1" --guest "$2" --smp 2 --append "$LAB_BENCH_APPEND" -- \
		-netdev "tap,id=vq0,ifname=vq$1,script=no,downscript=no,vhost=off" \
		-device "virtio-net-pci,netdev=vq0,mac=52:54:00:b6:00:$3,romfile=" "${q[@]}"
}
t0=$(vbus_now)
boot b g2 03
boot a g1 02
lab_serve
bench_log "guests done after $(vbus_elapsed "$t0") s (a ${lab_secs[a]:-?} s, b ${lab_secs[b]:-?} s)"

# ---- a's console into the raw files bench/ipc_report.py reads --------------------------------
alines() { tr -d '\r' <"$lab_logs/a.log" | grep -aoE '^VBUS-VMB .*' || true; }
alines >"$raw/guest-lines.txt"
both=$(sed -n 's/^VBUS-VMB BOTH //p' "$raw/guest-lines.txt" | head -n 1)
for t in ipc venet virtio; do
	if [[ " $transports " != *" $t "* ]]; then
		s="unavailable not requested"
	elif [[ " $both " == *" $t "* ]]; then
		s="up in both guests"
	else
		s="unavailable not up in both guests (a: ${up_in[a]:-nothing}; b: ${up_in[b]:-nothing})"
	fi
	printf '%s\n' "$s" >"$raw/status-$t"
	[[ " $transports " != *" $t "* ]] || bench_log "$t: $s"
done
sed -n 's/^VBUS-VMB SESSION //p' "$raw/guest-lines.txt" >"$raw/sessions.txt"
bad=0
while read -r sid r t rc act rest; do
	sed -n "s/^VBUS-VMB OUT $sid //p" "$raw/guest-lines.txt" >"$raw/s$sid.out"
	if ((rc)); then
		bad=$((bad + 1))
		bench_log "round $r $t $act $rest: exit $rc: $(tail -n 1 "$raw/s$sid.out")"
	else
		bench_log "round $r $t $act $rest: $(grep -aE '^(ipc|tcp)-(rr|stream) ' "$raw/s$sid.out" | head -n 1)"
	fi
done <"$raw/sessions.txt"
guest_ok=1
for g in a b; do
	vbus_check_results "$lab_logs/$g.log" >"$raw/check-$g.txt" 2>&1 && continue
	guest_ok=0
	bench_log "guest $g's log shows problems ($lab_logs/$g.log):"
	sed 's/^/    /' "$raw/check-$g.txt"
done
ctl stats g1 5 >"$raw/ipc-stats.txt" 2>&1 || true

lab_meta rounds rr_n stream_n big_n host_loadavg_before="$load_before" guests=2 \
	guest_log_ok="$guest_ok" >"$raw/meta.env"
python3 "$here/ipc_report.py" --kind vm "$raw" "$out" || { vbus_err "ipc_report.py failed"; exit 1; }
bench_log "total $(vbus_elapsed "$t_start") s; serial logs $lab_logs/{a,b}.log"

rc=0
for t in $transports; do
	[[ " $both " == *" $t "* ]] || { vbus_err "$t could not be measured: $(cat "$raw/status-$t")"; rc=1; }
done
((bad == 0)) || { vbus_err "$bad session(s) failed (raw data $raw)"; rc=1; }
((guest_ok)) || rc=1
exit "$rc"
