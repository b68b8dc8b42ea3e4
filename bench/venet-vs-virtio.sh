#!/usr/bin/env bash
# venet vs virtio-net, in one guest, with the same tools, in the same run.
#
# Boots ONE guest (TCG unless hardware KVM; 2 vCPUs) with two NICs:
#   venet   venet.ko over the ivshmem transport, served by vbus-hostd
#           (--device g1:type=venet,id=2,tap=vbvenet0)
#   virtio  virtio-net-pci, QEMU's userspace tap backend (vhost=off)
# Each NIC's tap lives in a network namespace this script creates
# (vbus-bench-PID), on its own subnet (venet 10.81.1.0/24, virtio
# 10.81.2.0/24; host .1, guest .2); QEMU and vbus-hostd run in it. Every
# measurement is driven from the namespace, for each NIC in turn:
#   - ICMP round trip (ping -c N -i 0.01 host->guest, per-packet times)
#   - TCP request/response round trip (bench/tcprr.c: 1-byte ping-pong on
#     one TCP_NODELAY connection, server in the guest), once as the guest
#     comes (its reads sleep until the NIC's interrupt) and once with the
#     guest's server socket busy polling (SO_BUSY_POLL, --rr-busy-poll:
#     the same setting for both NICs)
#   - TCP throughput host->guest and guest->host (iperf3 -P STREAMS -t SEC,
#     server in the guest; guest->host is iperf3 -R)
#   - with --queues N: the 64-byte frame rate each way (iperf3 -u -l 18
#     -b 0 -P STREAMS: 18 bytes of UDP payload make a 64-byte frame with
#     its FCS; frames the receiver got per second)
#   - with --compare-queues: the TCP throughput and 64-byte runs once more
#     with 1 queue pair active, in the same round of the same boot
#   - host CPU time of QEMU and of vbus-hostd per GB moved (utime+stime
#     from /proc/PID/stat around each iperf3 run / bytes received), and how
#     busy the host's CPUs were during the run (/proc/stat): near 100% the
#     throughput is bound by the host's CPUs, not by the NIC's path
# and prints a table venet | virtio | venet/virtio, writes
# $OUT/results.json and $OUT/results.png (gnuplot; skipped if absent) and
# keeps the raw data in $OUT/raw/. It never asserts a speed.
#
# venet is measured when its pieces are there and work (modules and
# vbus-hostd build, the daemon starts with a venet device, the
# guest gets a netdev with carrier, ping goes through); otherwise the run
# says "venet: unavailable (<reason>)" and measures virtio-net alone.
#
#   bench/venet-vs-virtio.sh [--time SEC] [--streams N] [--rounds N]
#       [--ping-n N] [--rr-n N] [--rr-busy-poll USEC] [--nics "virtio venet"] [--mem SIZE]
#       [--timeout SEC] [--out DIR] [--no-build] [--require-venet] [--wakeups]
#       [--queues N [--compare-queues]] [--procs P]
#
#   --time SEC       seconds per iperf3 run (default 5)
#   --streams N      parallel iperf3 streams (default 4)
#   --rounds N       measurement rounds; NIC order alternates per round and
#                    the figures are the median over rounds (default 1)
#   --ping-n N       ICMP echo requests per round (default 200)
#   --rr-n N         TCP round trips per round (default 2000)
#   --rr-busy-poll USEC  the second TCP RR run's SO_BUSY_POLL on the guest's
#                    socket (default 400; 0 skips that run)
#   --nics LIST      NICs to measure (default "virtio venet")
#   --mem SIZE       guest RAM (default 1G)
#   --timeout SEC    kill the guest after SEC seconds (default 600)
#   --out DIR        results directory (default $VBUS_BUILD/bench)
#   --no-build       use the modules and vbus-hostd already built
#                    ($VBUS_HOSTD overrides where vbus-hostd is found)
#   --require-venet  exit non-zero when venet could not be measured or the
#                    guest's kernel log shows a problem
#   --queues N       N queue pairs on both NICs (1..16; default: the
#                    single-queue setup of before, no 64-byte run): venet
#                    with queues=N on the device and in venet.ko, virtio-net
#                    with QEMU's mq=on and tap queues=N (N > 1); both with
#                    2N+2 MSI-X vectors (venet: per-queue vectors on the
#                    vbus bridge, docs/transport.md). Adds the 64-byte frame
#                    rate, interrupts per CPU and how the frames spread over
#                    the queues (ethtool -S rx_queue_I/tx_queue_I_packets,
#                    the same names in both drivers) to the table, and
#                    makes --procs default to N
#   --compare-queues with --queues N (N >= 2): 1 against N active queue
#                    pairs in the same run and guest boot. Both NICs boot
#                    with N pairs (as --queues N); each round sets 1 and N
#                    active on BOTH NICs in the guest (ethtool -L IF
#                    combined K, read back with ethtool -l; venet: until
#                    vbus-hostd's ctl stats show K pairs and K tap queues
#                    active) and runs the TCP throughput and 64-byte runs
#                    at each count, the order of the counts alternating per
#                    round (round 1: 1 then N). The venet | virtio table is
#                    the N-pair one, as with --queues N; a second table
#                    gives per NIC each figure at 1 and N pairs and the
#                    ratio N/1 (per round, then median and min..max), at
#                    the same --procs for both counts
#   --procs P        every iperf3 run is P iperf3 processes at once (ports
#                    5201.., STREAMS/P streams each, at least 1; the guest
#                    runs P servers; default 1, or N with --queues N):
#                    iperf3 3.12 is one thread, and one sending thread puts
#                    every flow on the queue of the CPU it runs on (XPS),
#                    so one process cannot show what N queues carry.
#                    Compare queue counts at the same --procs
#   --wakeups        count the host's thread wakeups per TCP round trip
#                    (perf record -e sched:sched_wakeup -a around the first
#                    RR run; needs perf, Debian's linux-perf), by thread:
#                    QEMU's main loop, QEMU's other threads (the vCPUs),
#                    vbus-hostd. Each wakeup is a hop a round trip may wait
#                    for: under TCG the ivshmem interrupt is relayed by
#                    QEMU's main loop (under KVM, an irqfd)
# Exit status: 0 when every requested NIC that must work was measured
# (virtio always; venet with --require-venet), 1 otherwise, 2 on usage.
# Needs root (netns, taps). Accelerator: VBUS_QEMU_ACCEL (see tests/qemu).
# Notifications: around each iperf3 run the guest's counters (ethtool -S,
# /proc/interrupts, the vbus bridge's doorbells; guest/counters.sh, read
# with tcprr -g) and, for venet, `ctl stats --json` are kept
# ($OUT/raw/NIC/rN/{guest,stats}-{h2g,g2h}-{0,1}.*; --compare-queues: the
# 1-pair runs under $OUT/raw/NIC/rN/q1/, the guest's ethtool -l read-back
# in $OUT/raw/active-rN-qK.txt); the report prints
# guest->host doorbells and host->guest interrupts per GB for both NICs.
# The host load is sampled before the guest starts (loadavg, busy%).
# VBUS_BENCH_VENET_PARAMS="k=v,..." adds keys to the venet device (e.g.
# tx_poll_us=0 to compare the host's tx polling off and on);
# VBUS_BENCH_VENET_MODPARAMS="k=v ..." to venet.ko in the guest (e.g.
# tx_complete_irq=1).
# Profiling hooks (CPU figures are then inflated by the profiler):
#   VBUS_HOSTD_WRAP="perf record -g -o FILE --"  run vbus-hostd under it
#   VBUS_BENCH_PERF=DIR  system-wide `perf record -a -g -e cpu-clock` per
#                        iperf3 run: DIR/NIC-rN-{h2g,g2h}.data
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# the kernel a user runs: no SLUB debugging (VBUS_BOOT_DEBUG=1 puts it back)
: "${VBUS_BOOT_DEBUG:=0}"
export VBUS_BOOT_DEBUG
# shellcheck source=tests/qemu/lib/lab.sh
source "$here/../tests/qemu/lib/lab.sh"

time=5 streams=4 rounds=1 ping_n=200 rr_n=2000 rr_busy_poll=400 nics="virtio venet"
out=$VBUS_BUILD/bench require_venet=0 wakeups=0 queues=0 procs=0 compare_queues=0
lab_parse venet-bench time:N streams:N rounds:N ping-n:N rr-n:N rr-busy-poll:N nics:S out:S \
	require-venet:require_venet=1 wakeups:wakeups=1 queues:N procs:N \
	compare-queues:compare_queues=1 -- "$@"
secs=$time rr_busy=$rr_busy_poll
for v in "$secs" "$streams" "$rounds" "$ping_n" "$rr_n"; do
	((v > 0)) || { vbus_err "not a positive number: $v"; exit 2; }
done
((queues <= 16)) || { vbus_err "--queues: 1..16 queue pairs, not $queues"; exit 2; }
if ((compare_queues && queues < 2)); then
	vbus_err "--compare-queues: needs --queues N with N >= 2 (it compares 1 with N active pairs); got $( ((queues)) && echo "--queues $queues" || echo "no --queues")"
	exit 2
fi
# iperf3 processes per run: --procs, else one per queue pair
((procs)) || procs=$((queues ? queues : 1))
((procs <= 16)) || { vbus_err "--procs: 1..16 iperf3 processes, not $procs"; exit 2; }
# --queues N: both NICs' MSI-X vectors (2 per pair, config/eventq and one more)
vectors=2 netns_mq=()
if ((queues)); then
	vectors=$((2 * queues + 2))
	((queues == 1)) || netns_mq=(--mq)
fi
((rr_busy <= 9999999)) ||
	{ vbus_err "--rr-busy-poll: not a number of microseconds (0..9999999): $rr_busy"; exit 2; }
for n in $nics; do
	[[ "$n" == virtio || "$n" == venet ]] || { vbus_err "--nics: unknown NIC $n"; exit 2; }
done
[[ -n "$nics" ]] || { vbus_err "--nics: empty"; exit 2; }
want() { [[ " $nics " == *" $1 "* ]]; }
((EUID == 0)) || { vbus_err "needs root (network namespace, taps)"; exit 1; }
lab_need iperf3 ip qemu-system-x86_64 gcc python3
((!wakeups)) || command -v perf >/dev/null ||
	{ vbus_err "--wakeups needs perf (apt-get install linux-perf)"; exit 1; }
((!compare_queues)) || command -v ethtool >/dev/null ||
	{ vbus_err "--compare-queues needs ethtool in the guest (apt-get install ethtool)"; exit 1; }

# busy% of the host's CPUs over 1 s, from /proc/stat (all CPUs)
host_busy() {
	local a b
	a=$(head -n 1 /proc/stat)
	sleep 1
	b=$(head -n 1 /proc/stat)
	awk -v a="$a" -v b="$b" 'BEGIN {
		n = split(a, x); split(b, y); t = 0
		for (i = 2; i <= n; i++) t += y[i] - x[i]
		idle = (y[5] - x[5]) + (y[6] - x[6])
		printf "%.0f", (t > 0 ? 100 * (t - idle) / t : 0) }'
}
# "busy total" jiffies of all the host's CPUs so far (for a run's busy%)
host_jiffies() {
	awk 'NR == 1 { t = 0; for (i = 2; i <= NF; i++) t += $i
		print t - $5 - $6, t; exit }' /proc/stat
}
# the load others put on the host, before this script adds its own
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
busy_before=$(host_busy)
bench_log "host load before the run: loadavg $load_before, CPUs ${busy_before}% busy"

lab_setup
lab_raw "$out/raw"

# ---- venet: which pieces are there --------------------------------------------
venet_reason=""
venet_unavailable() {
	[[ -n "$venet_reason" ]] || venet_reason="$*"
	want venet && bench_log "venet: unavailable ($venet_reason)"
	return 0
}
kos=("$top/vbus_core.ko" "$top/kernel/bus/vbus_proxy.ko"
	"$top/kernel/pci_bridge/vbus_pcibridge.ko" "$top/kernel/venet/venet.ko")
hostd=""
if ! want venet; then
	venet_reason="not requested (--nics \"$nics\")"
elif [[ ! -f "$top/kernel/venet/Kbuild" ]]; then
	venet_unavailable "no guest driver in the tree (kernel/venet/Kbuild)"
elif [[ ! -f "$top/userspace/hostd/devices/venet/venet_dev.c" ]]; then
	venet_unavailable "no venet backend in the tree (userspace/hostd/devices/venet/)"
else
	if ((build)); then
		t0=$(vbus_now)
		if ! make -C "$top" modules KVER="$VBUS_KVER" VBUS_SUBDIRS="kernel/bus kernel/pci_bridge kernel/vbus_test kernel/vbus_ipc kernel/venet" \
			>"$raw/build-modules.log" 2>&1; then
			venet_unavailable "make modules failed: $(grep -m1 -E 'error|Error' "$raw/build-modules.log" || tail -n 1 "$raw/build-modules.log")"
		else
			bench_log "make modules: $(vbus_elapsed "$t0") s"
		fi
		t0=$(vbus_now)
		if [[ -z "$venet_reason" ]] && ! vbus_build_hostd "$cbuild" "$raw/build-hostd.log" >/dev/null; then
			venet_unavailable "vbus-hostd build failed: $(grep -m1 -E 'error' "$raw/build-hostd.log" || tail -n 1 "$raw/build-hostd.log")"
		elif [[ -z "$venet_reason" ]]; then
			bench_log "cmake vbus-hostd: $(vbus_elapsed "$t0") s"
		fi
	fi
	if [[ -z "$venet_reason" ]]; then
		for ko in "${kos[@]}"; do
			[[ -f "$ko" ]] || { venet_unavailable "${ko#"$top"/} not built"; break; }
		done
	fi
	if [[ -z "$venet_reason" ]]; then
		hostd=${VBUS_HOSTD:-}
		# the newest binary: a build tree keeps the one from before the sources moved
		[[ -n "$hostd" ]] || hostd=$(vbus_find_hostd "$cbuild" || true)
		[[ -x "$hostd" ]] || venet_unavailable "no vbus-hostd binary under $cbuild (or \$VBUS_HOSTD)"
	fi
fi

# ---- the guest-side probe ----------------------------------------------------------------
tcprr="$out/tcprr"
if ! gcc -O2 -Wall -static -o "$tcprr" "$here/tcprr.c" >"$raw/build-tcprr.log" 2>&1; then
	cat "$raw/build-tcprr.log" >&2
	vbus_err "cannot build bench/tcprr.c statically (libc6-dev)"
	exit 1
fi

# ---- namespace, cleanup -------------------------------------------------------------------
hostd_pid="" wrap_pid="" perf_pid=""
# shellcheck disable=SC2317 # at exit
bench_cleanup() {
	[[ -z "$perf_pid" ]] || kill -INT "$perf_pid" 2>/dev/null
	vbus_stop_pid "$hostd_pid"
	if [[ -n "${wrap_pid:-}" ]]; then
		# the wrapper (perf) writes its data once the daemon is gone
		for _ in $(seq 100); do
			kill -0 "$wrap_pid" 2>/dev/null || break
			sleep 0.1
		done
		vbus_stop_pid "$wrap_pid"
	fi
}

declare -A tap=([venet]=vbvenet0 [virtio]=vbvirtio0)
declare -A hip=([venet]=10.81.1.1 [virtio]=10.81.2.1)
declare -A gip=([venet]=10.81.1.2 [virtio]=10.81.2.2)
declare -A mac=([venet]=52:54:00:b1:00:02 [virtio]=52:54:00:b2:00:02)
venet_id=2 rr_port=7777
lab_netns "${netns_mq[@]}" "${hip[venet]}" "${tap[venet]}" "${hip[virtio]}" "${tap[virtio]}"
lab_defer bench_cleanup

# ---- vbus-hostd (in the namespace: it opens the tap there) -------------------------------
if [[ -z "$venet_reason" ]]; then
	# not through nsx(): $! must be the daemon itself (ip netns exec execs
	# it), whose /proc/PID/stat the CPU figures read
	# VBUS_HOSTD_WRAP="perf record -g -o FILE --" (profiling): the daemon
	# runs under that command; hostd_pid is then looked up below
	# shellcheck disable=SC2086 # the wrapper is a word list
	ip netns exec "$ns" ${VBUS_HOSTD_WRAP:-} "$hostd" --foreground --ctl "$run/ctl.sock" \
		--guest "$(lab_guest g1)$( ((queues)) && echo ",vectors=$vectors")" \
		--device "g1:type=venet,id=$venet_id,tap=${tap[venet]},mac=${mac[venet]}$( ((queues)) && echo ",queues=$queues")${VBUS_BENCH_VENET_PARAMS:+,$VBUS_BENCH_VENET_PARAMS}" \
		>"$raw/hostd.log" 2>&1 &
	hostd_pid=$!
	wrap_pid=""
	if [[ -n "${VBUS_HOSTD_WRAP:-}" ]]; then
		wrap_pid=$hostd_pid hostd_pid=""
		for _ in $(seq 100); do
			hostd_pid=$(pgrep -P "$wrap_pid" -x vbus-hostd | head -n 1) && break
			sleep 0.1
		done
		[[ -n "$hostd_pid" ]] || hostd_pid=$wrap_pid
	fi
	if ! lab_wait_sockets "$hostd_pid" "$run/ctl.sock" "$run/g1.sock"; then
		venet_unavailable "vbus-hostd did not start with a venet device: $(tail -n 1 "$raw/hostd.log")"
		kill "$hostd_pid" 2>/dev/null || true
		hostd_pid=""
	elif [[ "$(cat "/proc/$hostd_pid/comm" 2>/dev/null)" != vbus-hostd ]]; then
		bench_log "WARNING: pid $hostd_pid is not vbus-hostd; its CPU figures are wrong"
	fi
fi
guest_nics=""
want virtio && guest_nics="virtio"
[[ -z "$venet_reason" ]] && guest_nics+=" venet"

# ---- initramfs ----------------------------------------------------------------------------
stage=(--bin "$(command -v iperf3)" --file "$tcprr" --file "$here/guest/counters.sh"
	--file "$here/guest/nic.sh" --file "$here/guest/channels.sh")
command -v ethtool >/dev/null && stage+=(--bin "$(command -v ethtool)")
want virtio && stage+=(virtio_pci virtio_net)
[[ -z "$venet_reason" ]] && stage+=("${kos[@]}")
lab_stage guest "$here/guest/bench-guest.sh" "${stage[@]}" <<CONFIG
VB_NICS="$guest_nics"
VB_VIRTIO_IP=${gip[virtio]}
VB_VENET_IP=${gip[venet]}
VB_PREFIX=24
VB_RR_PORT=$rr_port
VB_IPERF_SERVERS=$procs
VB_VENET_PARAMS="$( ((queues)) && echo "queues=$queues ")${VBUS_BENCH_VENET_MODPARAMS:-}"
CONFIG

# ---- boot (QEMU in the namespace: the virtio tap is looked up by name) --------------------
mkdir -p "$run/bin"
printf '#!/bin/sh\nexec ip netns exec %q %q "$@"\n' "$ns" "$(command -v qemu-system-x86_64)" \
	>"$run/bin/qemu-system-x86_64"
chmod +x "$run/bin/qemu-system-x86_64"
qargs=() vbus=()
if want virtio; then
	vmq="" tmq=""
	((queues > 1)) && vmq=",mq=on,vectors=$vectors" tmq=",queues=$queues"
	qargs+=(-netdev "tap,id=vq0,ifname=${tap[virtio]},script=no,downscript=no,vhost=off$tmq"
		-device "virtio-net-pci,netdev=vq0,mac=${mac[virtio]},romfile=$vmq")
fi
[[ -z "$venet_reason" ]] && vbus=(--guest g1)
accel=$(vbus_qemu_accel)
log="$raw/guest.log"
bench_log "accelerator: $accel (cpu $(vbus_qemu_cpu "$accel"), 2 vCPUs, RAM $mem, kernel $VBUS_KVER, $VBUS_KBOOT boot)"
PATH="$run/bin:$PATH" lab_boot guest "${vbus[@]}" --vectors "$vectors" --smp 2 -- "${qargs[@]}"
t0=$(vbus_now)
lab_wait_ready guest '^VBUS-BENCH READY' || exit 1
glines=$(tr -d '\r' <"$log" 2>/dev/null | grep -aoE '^VBUS-BENCH .*' || true)
qemu_pid=$(cat "$run/guest.pid" 2>/dev/null || true)
bench_log "guest ready after $(vbus_elapsed "$t0") s (qemu pid $qemu_pid${hostd_pid:+, vbus-hostd pid $hostd_pid})"

# ---- which NICs are up -----------------------------------------------------------------------
declare -A status
for n in virtio venet; do
	if ! want "$n"; then
		status[$n]="unavailable not requested"
	elif [[ "$n" == venet && -n "$venet_reason" ]]; then
		status[$n]="unavailable $venet_reason"
	elif l=$(grep -m1 "^VBUS-BENCH $n " <<<"$glines"); then
		status[$n]=${l#"VBUS-BENCH $n "}
	else
		status[$n]="unavailable the guest said nothing about it"
	fi
	if [[ "${status[$n]}" == up* ]] &&
		! nsx ping -c 3 -i 0.2 -W 2 "${gip[$n]}" >"$raw/$n-ping-check.txt" 2>&1; then
		status[$n]="unavailable no traffic: ping ${gip[$n]} from the host failed"
	fi
	[[ "$n" == venet && "${status[$n]}" == unavailable* && -z "$venet_reason" ]] &&
		venet_reason=${status[$n]#unavailable }
	mkdir -p "$raw/$n"
	printf '%s\n' "${status[$n]}" >"$raw/$n/status"
	want "$n" && bench_log "$n: ${status[$n]}"
done

# ---- measurements ----------------------------------------------------------------------------
clk_tck=$(getconf CLK_TCK)
if [[ -f "$(command -v ping)" ]] && ping -V 2>&1 | grep -q iputils; then
	ping_tool=iputils
else
	ping_tool=busybox
fi

# guest_ask FILE NIC [-A K]: the guest's tcprr -s answer into FILE (its
# counters, guest/counters.sh; with -A K: guest/channels.sh K), asked over
# the other NIC when it is up so the question does not count on NIC
guest_ask() {
	local f=$1 n=$2 via=$2 o
	shift 2
	for o in virtio venet; do
		[[ "$o" != "$n" && "${status[$o]}" == up* ]] && via=$o
	done
	timeout 30 ip netns exec "$ns" "$tcprr" -g "${gip[$via]}" -p "$rr_port" -t 10 "$@" \
		>"$f" 2>"$f.err" || { bench_log "$n: asking the guest via $via failed ($f.err)"; return 1; }
}

# counters FILE NIC: the guest's counters (guest/counters.sh)
counters() { guest_ask "$1" "$2" || true; }

# venet_active K: until vbus-hostd's venet device has K pairs and K tap
# queues active (the tap follows SETACTIVE within 50 ms, docs/devices/venet.md)
venet_active() {
	local k=$1 s
	for _ in $(seq 200); do
		s=$(ctl stats g1 "$venet_id" --json 2>/dev/null) || return 1
		[[ "$s" == *"\"queues_active\": $k,"* && "$s" == *"\"tap_queues_attached\": $k,"* ]] &&
			return 0
		sleep 0.05
	done
	return 1
}

# set_active R K: K active queue pairs on every NIC that is up (ethtool -L
# in the guest, guest/channels.sh), waited for; raw/active-rR-qK.txt keeps
# the guest's read-back. Fails when a NIC did not take it.
set_active() {
	local r=$1 k=$2 f="$raw/active-r$1-q$2.txt" n any="" rc=0
	for n in virtio venet; do [[ "${status[$n]}" == up* ]] && any=$n; done
	[[ -n "$any" ]] || return 1
	guest_ask "$f" "$any" -A "$k" || return 1
	for n in virtio venet; do
		[[ "${status[$n]}" == up* ]] || continue
		if ! grep -q "^ACTIVE $n .* $k\$" "$f"; then
			bench_log "$n: $k active queue pair(s) not set: $(grep "^FAILED $n " "$f" || echo "no answer ($f)")"
			rc=1
		elif [[ "$n" == venet ]] && ! venet_active "$k"; then
			bench_log "venet: vbus-hostd did not show $k active pair(s) and tap queue(s) within 10 s"
			rc=1
		fi
	done
	return "$rc"
}

# iperf_procs DIR NIC NAME [ARGS]: the iperf3 clients of one run, one per
# guest server (VB_IPERF_SERVERS), at once; the first writes
# iperf-NAME.json, the others iperf-NAME.K.json (report.py sums them)
iperf_procs() {
	local d=$1 n=$2 name=$3 k per out pids=() rc=0 p
	shift 3
	per=$((streams / procs))
	((per >= 1)) || per=1
	for ((k = 0; k < procs; k++)); do
		out=$d/iperf-$name.json
		((k)) && out=$d/iperf-$name.$k.json
		timeout $((secs + 60)) ip netns exec "$ns" iperf3 -c "${gip[$n]}" -p $((5201 + k)) \
			-t "$secs" -P "$per" --connect-timeout 10000 -J "$@" >"$out" 2>"${out%.json}.err" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=$?; done
	return "$rc"
}

# iperf DIR NIC NAME [-R]
iperf() {
	local d=$1 n=$2 name=$3 q0 h0 q1 h1 t0 j0 j1 rc=0
	shift 3
	# VBUS_BENCH_PERF=DIR (profiling): a system-wide cpu-clock profile of
	# each iperf3 run, DIR/NIC-rR-NAME.data (filter with --pid)
	if [[ -n "${VBUS_BENCH_PERF:-}" ]]; then
		mkdir -p "$VBUS_BENCH_PERF"
		local tag=${d#"$raw/$n/"}
		perf record -a -g -e cpu-clock -F 499 -o "$VBUS_BENCH_PERF/$n-${tag//\//-}-$name.data" \
			>"$d/perf-$name.log" 2>&1 &
		perf_pid=$!
		sleep 0.5
	fi
	# per-run device counters (notifications per packet and direction)
	[[ "$n" == venet ]] && { ctl stats g1 "$venet_id" --json >"$d/stats-$name-0.json" 2>&1 || true; }
	counters "$d/guest-$name-0.txt" "$n"
	q0=$(lab_ticks "$qemu_pid") h0=$(lab_ticks "$hostd_pid") t0=$(vbus_now) j0=$(host_jiffies)
	iperf_procs "$d" "$n" "$name" "$@" || rc=$?
	q1=$(lab_ticks "$qemu_pid") h1=$(lab_ticks "$hostd_pid") j1=$(host_jiffies)
	counters "$d/guest-$name-1.txt" "$n"
	[[ "$n" == venet ]] && { ctl stats g1 "$venet_id" --json >"$d/stats-$name-1.json" 2>&1 || true; }
	if [[ -n "$perf_pid" ]]; then
		kill -INT "$perf_pid" 2>/dev/null || true
		wait "$perf_pid" 2>/dev/null || true
		perf_pid=""
	fi
	# QEMU ticks, vbus-hostd ticks, seconds, ticks/s, then the whole
	# host's busy and total jiffies (is the run bound by the host's CPUs?)
	printf '%s %s %s %s %s %s\n' $((q1 - q0)) $((h1 - h0)) "$(vbus_elapsed "$t0")" "$clk_tck" \
		$((${j1% *} - ${j0% *})) $((${j1#* } - ${j0#* })) >"$d/cpu-$name.txt"
	((rc == 0)) || bench_log "$n: iperf3 $name failed (exit $rc, $d/iperf-$name.err)"
}

measure() {
	local n=$1 r=$2 d="$raw/$1/r$2" rc=0
	mkdir -p "$d"
	bench_log "round $r: $n (${gip[$n]})"
	if [[ "$ping_tool" == iputils ]]; then
		nsx ping -n -c "$ping_n" -i 0.01 -W 2 "${gip[$n]}" >"$d/ping.txt" 2>&1 || rc=$?
	else
		nsx busybox ping -A -c "$ping_n" -W 2 "${gip[$n]}" >"$d/ping.txt" 2>&1 || rc=$?
	fi
	((rc == 0)) || bench_log "$n: ping exit $rc"
	rc=0
	local wrap=()
	((wakeups)) && wrap=(perf record -q -e sched:sched_wakeup -a -o "$d/wake.data" --)
	"${wrap[@]}" timeout 300 ip netns exec "$ns" "$tcprr" -c "${gip[$n]}" -p "$rr_port" -n "$rr_n" -t 10 \
		-o "$d/rr.txt" >"$d/rr.out" 2>&1 || rc=$?
	# QEMU's pid (its main loop's tid), then "N comm=NAME pid=TID" per
	# woken thread; the raw trace goes
	if ((wakeups)) && [[ -f "$d/wake.data" ]]; then
		{
			echo "qemu_pid $qemu_pid"
			perf script -i "$d/wake.data" -F trace 2>/dev/null | grep -o 'comm=[^ ]* pid=[0-9]*' |
				sort | uniq -c
		} >"$d/wake.txt" || true
		rm -f "$d/wake.data"
	fi
	((rc == 0)) || bench_log "$n: tcprr exit $rc: $(tail -n 1 "$d/rr.out")"
	if ((rr_busy)); then
		rc=0
		timeout 300 ip netns exec "$ns" "$tcprr" -c "${gip[$n]}" -p "$rr_port" -n "$rr_n" -t 10 \
			-B "$rr_busy" -o "$d/rr-busy.txt" >"$d/rr-busy.out" 2>&1 || rc=$?
		((rc == 0)) || bench_log "$n: tcprr -B $rr_busy exit $rc: $(tail -n 1 "$d/rr-busy.out")"
	fi
	throughput "$d" "$n"
}

# throughput DIR NIC: the TCP throughput runs (and with --queues the
# 64-byte ones) into DIR
throughput() {
	local d=$1 n=$2
	mkdir -p "$d"
	iperf "$d" "$n" h2g
	iperf "$d" "$n" g2h -R
	if ((queues)); then
		# 64-byte frames: 18 bytes of UDP payload + 8 + 20 + 14 + FCS
		iperf "$d" "$n" p64h2g -u -l 18 -b 0
		iperf "$d" "$n" p64g2h -u -l 18 -b 0 -R
	fi
}

for ((r = 1; r <= rounds; r++)); do
	order="virtio venet"
	((r % 2 == 0)) && order="venet virtio"
	if ((!compare_queues)); then
		for n in $order; do
			[[ "${status[$n]}" == up* ]] && measure "$n" "$r"
		done
		continue
	fi
	# --compare-queues: N active pairs is the round of --queues N; 1 pair
	# adds the throughput runs under rR/q1; the count order alternates
	counts="1 $queues"
	((r % 2 == 0)) && counts="$queues 1"
	for k in $counts; do
		bench_log "round $r: $k active queue pair(s) on both NICs"
		if ! set_active "$r" "$k"; then
			bench_log "round $r: skipping the runs at $k pair(s)"
			continue
		fi
		for n in $order; do
			[[ "${status[$n]}" == up* ]] || continue
			if ((k == queues)); then
				measure "$n" "$r"
			else
				bench_log "round $r: $n at $k pair(s)"
				throughput "$raw/$n/r$r/q$k" "$n"
			fi
		done
	done
done

if [[ "${status[venet]}" == up* ]]; then
	ctl stats g1 "$venet_id" >"$raw/hostd-stats.txt" 2>&1 || true
	ctl stats g1 "$venet_id" --json >"$raw/hostd-stats.json" 2>/dev/null || rm -f "$raw/hostd-stats.json"
fi

# ---- end the guest ---------------------------------------------------------------------------
quit_sent=0
for n in virtio venet; do
	if [[ "${status[$n]}" == up* ]] && nsx "$tcprr" -q "${gip[$n]}" -p "$rr_port" -t 5 >/dev/null 2>&1; then
		quit_sent=1
		break
	fi
done
if ((quit_sent)); then
	lab_end guest 30
else
	bench_log "could not tell the guest to stop: killing QEMU"
	lab_end guest 0
fi
guest_ok=1
vbus_check_results "$log" >"$raw/guest-check.txt" 2>&1 || guest_ok=0
if ((!guest_ok)); then
	bench_log "the guest's log shows problems ($log):"
	sed 's/^/    /' "$raw/guest-check.txt"
fi

# ---- report --------------------------------------------------------------------------------------
lab_meta venet_params="${VBUS_BENCH_VENET_PARAMS:-}" kboot="$VBUS_KBOOT" \
	cmdline="$VBUS_BASE_CMDLINE" time_s="$secs" streams rounds ping_n ping_tool rr_n \
	rr_busy_poll_us="$rr_busy" wakeups queues procs vectors compare_queues \
	host_loadavg_before="$load_before" \
	host_busy_before_pct="$busy_before" guest_log_ok="$guest_ok" >"$raw/meta.env"
python3 "$here/report.py" "$raw" "$out" || { vbus_err "report.py failed"; exit 1; }
if [[ -f "$raw/hostd-stats.txt" ]]; then
	printf 'vbus-hostd ctl stats g1 %s:\n' "$venet_id"
	sed 's/^/    /' "$raw/hostd-stats.txt"
fi
bench_log "total $(vbus_elapsed "$t_start") s; serial log $log"

rc=0
if want virtio && [[ "${status[virtio]}" != up* ]]; then
	vbus_err "the virtio-net baseline could not be measured: ${status[virtio]}"
	rc=1
fi
if ((require_venet)); then
	[[ "${status[venet]}" == up* ]] || { vbus_err "--require-venet: venet ${status[venet]}"; rc=1; }
	((guest_ok)) || { vbus_err "--require-venet: the guest's kernel log shows problems"; rc=1; }
fi
exit "$rc"
