#!/usr/bin/env bash
# Bus tests over the real transport: builds vbus_core/vbus_proxy/
# vbus_pcibridge/vbus_test (make modules VBUS_SUBDIRS="kernel/bus kernel/pci_bridge ...") and
# vbus-hostd (CMake, into $VBUS_BUILD/cmake), starts vbus-hostd with two
# guests (buses):
#   g1: vbus-test id=1, id=2      (the main test guest)
#   g2: vbus-test id=7            (another bus: g1 must never see it)
# and boots, under QEMU with the ivshmem transport:
#   1. g2 "victim" and g1 "main" at the same time; the victim checks its
#      bus, runs a little traffic and is then killed (SIGKILL to QEMU)
#      while g1 runs on;
#   2. g1 main (guest/bus-tests.sh): devices, types, open/close/call/shm,
#      100000 verified descriptors, hypercall and event latency, hot add /
#      drop through `vbus-hostd ctl` (the guest asks with VBUS-HOSTREQ lines
#      on its console; this script acts on them), DEVDROP under traffic,
#      rmmod/insmod cycles without slab growth;
#   3. g2 again ("rejoin"): the daemon serves a guest whose QEMU was killed.
# Everything is torn down in a trap. Prints PASS/FAIL lines, the latency
# figures and "N passed, N failed"; exits non-zero on failure.
#
#   tests/qemu/run-bus-tests.sh [--msgs N] [--cycles N] [--lat-n N]
#                               [--mem SIZE] [--timeout SEC] [--no-build]
#
#   --msgs N      descriptors of the big verified ring run (default 100000)
#   --cycles N    rmmod/insmod cycles of all modules (default 10)
#   --lat-n N     samples per latency figure (default 1000)
#   --mem SIZE    guest RAM, QEMU syntax (default 1G)
#   --timeout SEC per guest (default 900)
#   --no-build    use the .ko files and vbus-hostd already built
# Accelerator: TCG unless hardware KVM is available (VBUS_QEMU_ACCEL=...).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=tests/qemu/lib/suite.sh
source "$here/lib/suite.sh"

msgs=100000 cycles=10 lat_n=1000 mem=1G timeout=900 build=1
while (($#)); do
	case "$1" in
	--msgs) msgs=$2; shift 2 ;;
	--cycles) cycles=$2; shift 2 ;;
	--lat-n) lat_n=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	-h | --help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) vbus_err "unknown argument $1 (see --help)"; exit 2 ;;
	esac
done
for v in "$msgs" "$cycles" "$lat_n" "$timeout"; do
	[[ "$v" =~ ^[0-9]+$ ]] || { vbus_err "not a number: $v"; exit 2; }
done

passed=0 failed=0
h_pass() { passed=$((passed + 1)); printf 'PASS %s\n' "$1"; }
h_fail() { failed=$((failed + 1)); printf 'FAIL %s %s\n' "$1" "${*:2}"; }
finish() {
	printf '%d passed, %d failed\n' "$passed" "$failed"
	((failed == 0))
	exit $?
}

t_start=$(vbus_now)
vbus_fetch_kernel

out="$VBUS_BUILD/qemu/bus-tests"
cbuild="$VBUS_BUILD/cmake"
mkdir -p "$out"

# ---- build ---------------------------------------------------------------
if ((build)); then
	if ! step=$(vbus_build_stack "kernel/bus kernel/pci_bridge kernel/vbus_test kernel/vbus_ipc" "$out" "$cbuild"); then
		h_fail "$step" "build failed (log $out/$step.log)"
		finish
	fi
fi
kos=("$top/vbus_core.ko" "$top/kernel/bus/vbus_proxy.ko"
	"$top/kernel/pci_bridge/vbus_pcibridge.ko" "$top/kernel/vbus_test/vbus_test.ko")
for ko in "${kos[@]}"; do
	[[ -f "$ko" ]] || { h_fail build "$ko not built"; finish; }
done
hostd=$(vbus_find_hostd "$cbuild") || { h_fail build "no vbus-hostd binary under $cbuild"; finish; }

# ---- run directory, cleanup ------------------------------------------------
# Sockets live in a short /tmp path (sun_path is 108 bytes); RAM files are
# per run so that concurrent runs never share one.
run=$(mktemp -d /tmp/vbus-bt.XXXXXX)
tag="vbus-bt-$$"
hostd_pid=
bg_pids=()
cleanup() {
	local f p
	for f in "$run"/*.pid; do
		[[ -f "$f" ]] || continue
		p=$(cat "$f" 2>/dev/null) || continue
		if [[ -n "$p" ]]; then kill -9 "$p" 2>/dev/null || true; fi
	done
	if [[ -n "$hostd_pid" ]]; then kill -CONT "$hostd_pid" 2>/dev/null || true; fi
	for p in "${bg_pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	vbus_stop_pid "$hostd_pid"
	rm -rf "$run"
	rm -f "/dev/shm/$tag-g1" "/dev/shm/$tag-g2"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- initramfs per role ------------------------------------------------------
# make_initrd ROLE DEVS FOREIGN
make_initrd() {
	local role=$1 s="$run/stage-$1"
	mkdir -p "$s/test"
	cp "$here/guest/lib.sh" "$s/test/lib.sh"
	cp "$here/guest/bus-tests.sh" "$s/test/run.sh"
	cat >"$s/test/config.sh" <<EOF
VBT_ROLE=$role
VBT_DEVS="$2"
VBT_FOREIGN="$3"
VBT_MSGS=$msgs
VBT_CYCLES=$cycles
VBT_LAT_N=$lat_n
EOF
	vbus_initramfs_add_kmods "$s" "${kos[@]}" || return 1
	vbus_make_initramfs "$run/$role.cpio.gz" "$s" >/dev/null
}
make_initrd main "1 2" "7" || { h_fail initramfs "main"; finish; }
make_initrd victim "7" "1 2" || { h_fail initramfs "victim"; finish; }
make_initrd rejoin "7" "1 2" || { h_fail initramfs "rejoin"; finish; }

# ---- vbus-hostd ----------------------------------------------------------------
ctl() { "$hostd" ctl --ctl "$run/ctl.sock" "$@"; }

"$hostd" --foreground --ctl "$run/ctl.sock" \
	--guest "g1:sock=$run/g1.sock,mem=/dev/shm/$tag-g1,size=$mem" \
	--guest "g2:sock=$run/g2.sock,mem=/dev/shm/$tag-g2,size=$mem" \
	--device g1:type=vbus-test,id=1 \
	--device g1:type=vbus-test,id=2 \
	--device g2:type=vbus-test,id=7 \
	>"$out/hostd.log" 2>&1 &
hostd_pid=$!
for _ in $(seq 100); do
	[[ -S "$run/ctl.sock" && -S "$run/g1.sock" && -S "$run/g2.sock" ]] && break
	kill -0 "$hostd_pid" 2>/dev/null || break
	sleep 0.1
done
if [[ -S "$run/ctl.sock" && -S "$run/g1.sock" && -S "$run/g2.sock" ]]; then
	h_pass hostd-started
else
	sed 's/^/    hostd: /' "$out/hostd.log" | tail -n 20
	h_fail hostd-started "vbus-hostd did not come up (log $out/hostd.log)"
	finish
fi

# QEMU arguments of the transport for guest NAME (after vbus_boot_guest --)
qemu_vbus_args() {
	vbus_transport_args "/dev/shm/$tag-$1" "$mem" "$run/$1.sock"
	printf '%s\n' -pidfile "$run/$1.pid"
}

# boot_bg NAME ROLE: boot in the background; the pid goes to boot_pid.
boot_bg() {
	local name=$1 role=$2 args
	mapfile -t args < <(qemu_vbus_args "$name")
	# a log of an earlier run must not be read as this guest's requests
	rm -f "$run/$name.pid" "$out/$role.log"
	vbus_boot_guest --initrd "$run/$role.cpio.gz" --log "$out/$role.log" \
		--mem "$mem" --timeout "$timeout" -- "${args[@]}" \
		>"$out/$role.boot.out" 2>&1 &
	boot_pid=$!
	bg_pids+=("$boot_pid")
}

# Act on the guests' VBUS-HOSTREQ lines until every pid given has exited.
#   watch GUEST:ROLE:PID ...
declare -A done_req
hold_pid=
watch() {
	local spec g role pid alive line seq cmd id key
	while :; do
		alive=0
		for spec in "$@"; do
			IFS=: read -r g role pid <<<"$spec"
			kill -0 "$pid" 2>/dev/null && alive=1
			[[ -f "$out/$role.log" ]] || continue
			while read -r line; do
				read -r _ seq cmd id <<<"$line"
				key="$role:$seq"
				[[ -n "${done_req[$key]:-}" ]] && continue
				# the main guest's first hot add waits for the victim's
				# death, so that its figures are measured alone
				if [[ "$cmd" == add && -n "$hold_pid" ]] &&
					kill -0 "$hold_pid" 2>/dev/null; then
					continue
				fi
				done_req[$key]=1
				case "$cmd" in
				add)
					vbus_log "$g: hot add vbus-test id=$id"
					ctl add "$g" "type=vbus-test,id=$id" >>"$out/ctl.log" 2>&1 ||
						h_fail "ctl-add-$g-$id" "see $out/ctl.log"
					;;
				drop)
					vbus_log "$g: drop id=$id"
					ctl drop "$g" "$id" >>"$out/ctl.log" 2>&1 ||
						h_fail "ctl-drop-$g-$id" "see $out/ctl.log"
					;;
				stop | cont)
					# a host that stops answering hypercalls
					vbus_log "SIG${cmd^^} vbus-hostd (asked by $g)"
					kill "-${cmd^^}" "$hostd_pid" || h_fail "hostd-$cmd" "kill failed"
					;;
				kill)
					vbus_log "$g: killing its QEMU (SIGKILL)"
					if [[ -f "$run/$g.pid" ]] && kill -9 "$(cat "$run/$g.pid")"; then
						h_pass "$role-qemu-killed"
					else
						h_fail "$role-qemu-killed" "no QEMU pid"
					fi
					;;
				esac
			done < <(tr -d '\r' <"$out/$role.log" |
				grep -aoE 'VBUS-HOSTREQ [0-9]+ (add|drop|kill|stop|cont) [0-9]+' || true)
		done
		((alive)) || break
		sleep 0.2
	done
}

# guest_results ROLE: vbus_check_results into the totals.
guest_results() { vbus_add_results "$out/$1.log" "$1"; }

hostd_alive() {
	kill -0 "$hostd_pid" 2>/dev/null && ctl list >"$out/ctl-list.txt" 2>&1
}

# ---- 1 + 2: victim (killed) and main at the same time ---------------------------------
t0=$(vbus_now)
boot_bg g2 victim
victim_pid=$boot_pid
hold_pid=$victim_pid
boot_bg g1 main
main_pid=$boot_pid
watch "g2:victim:$victim_pid" "g1:main:$main_pid"
main_secs=$(vbus_elapsed "$t0")
hold_pid=
wait "$victim_pid" 2>/dev/null || true
wait "$main_pid" 2>/dev/null || true

victim_clean=$(tr -d '\r' <"$out/victim.log")
for t in only-configured-devices foreign-devices-absent dev7-type-id-bound ring-1000-dev7; do
	if grep -aq "VBUS-TEST PASS $t\$" <<<"$victim_clean"; then
		h_pass "victim/$t"
	else
		h_fail "victim/$t" "(log $out/victim.log)"
	fi
done
[[ -n "${done_req[victim:1]:-}" ]] || h_fail victim-qemu-killed "the victim never asked to be killed (log $out/victim.log)"
if hostd_alive; then
	h_pass hostd-alive-after-kill
else
	h_fail hostd-alive-after-kill "vbus-hostd died or ctl list failed (log $out/hostd.log)"
fi
guest_results main || true

# ---- 3: the killed guest comes back -------------------------------------------------
boot_bg g2 rejoin
rejoin_pid=$boot_pid
watch "g2:rejoin:$rejoin_pid"
wait "$rejoin_pid" 2>/dev/null || true
guest_results rejoin || true
if hostd_alive; then
	h_pass hostd-alive-at-end
else
	h_fail hostd-alive-at-end "(log $out/hostd.log)"
fi
sed 's/^/    ctl list: /' "$out/ctl-list.txt"

# ---- figures ------------------------------------------------------------------------------
accel=$(vbus_qemu_accel)
printf '\nfigures (accel=%s, 2 vCPUs, guest RAM %s, kernel %s, %s boot):\n' \
	"$accel" "$mem" "$VBUS_KVER" "$VBUS_KBOOT"
tr -d '\r' <"$out/main.log" | grep -aoE 'vbus-bus-tests: (RING|HC-LATENCY|EVENT-LATENCY|CYCLES) .*' |
	sed 's/^/    /' || printf '    (no figures)\n'
printf 'qemu transport args (g1): %s\n' "$(qemu_vbus_args g1 | tr '\n' ' ')"
printf 'main guest: %s s; total %s s; logs in %s\n' "$main_secs" "$(vbus_elapsed "$t_start")" "$out"
finish
