#!/usr/bin/env bash
# The bus over the real transport: vbus-hostd with two guests (buses),
#   g1: vbus-test id=1, id=2      (the main test guest)
#   g2: vbus-test id=7            (another bus: g1 must never see it)
# and, under QEMU with the ivshmem transport:
#   1. g2 "victim" and g1 "main" at the same time; the victim checks its
#      bus, runs a little traffic and asks to be killed (SIGKILL to its
#      QEMU) while g1 runs on;
#   2. g1 main (guest.sh; QEMU's ivshmem-doorbell has vectors=4 but
#      vbus-hostd wires the default 2: a host without per-queue vectors,
#      so every signal goes through the eventq): devices, types,
#      open/close/call/shm, verified
#      descriptors, hypercall and event latency, hot add / drop through
#      `vbus-hostd ctl` (the guest's requests), DEVDROP under traffic,
#      injected garbage, a DEVADD flood past the bridge's device cap, a
#      stopped vbus-hostd, rmmod/insmod cycles without slab growth;
#   3. g2 again ("rejoin"): the daemon serves a guest whose QEMU was killed.
#
#   tests/qemu/run.sh bus[:REGEX] [--msgs N] [--cycles N] [--lat-n N]
#
#   --msgs N      descriptors of the big verified ring run (default 100000)
#   --cycles N    rmmod/insmod cycles of all modules (default 10)
#   --lat-n N     samples per latency figure (default 1000)
#   --timeout SEC per guest (default 900)
# Check groups (REGEX): victim rejoin, and main's hotplug ring latency
# reopen devdrop garbage flood hc_timeout rebind cycles.
# shellcheck disable=SC2317 # the req_ functions: lab_serve calls them
set -euo pipefail
# shellcheck source=tests/qemu/lib/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/lab.sh"

msgs=100000 cycles=10 lat_n=1000 timeout=900
lab_begin bus msgs:N cycles:N lat-n:N -- "$@"
lab_build --modules "$LAB_BUS_SUBDIRS" --cmake vbus-hostd
lab_kos --bus kernel/vbus_test/vbus_test.ko

# stage ROLE DEVS FOREIGN
stage() {
	lab_stage "$1" "$(dirname "$0")/guest.sh" "${kos[@]}" <<-CONFIG
		VBT_ROLE=$1
		VBT_DEVS="$2"
		VBT_FOREIGN="$3"
		VBT_MSGS=$msgs
		VBT_CYCLES=$cycles
		VBT_LAT_N=$lat_n
	CONFIG
}
stage main "1 2" "7"
stage victim "7" "1 2"
stage rejoin "7" "1 2"

lab_hostd -- --guest "$(lab_guest g1)" --guest "$(lab_guest g2)" \
	--device g1:type=vbus-test,id=1 --device g1:type=vbus-test,id=2 \
	--device g2:type=vbus-test,id=7

# the guests' requests
req_add() {
	# the main guest's first hot add waits for the victim's death, so
	# that its figures are measured alone
	[[ -n "${lab_pid[victim]:-}" && "$lab_role" == main ]] && return 2
	vbus_log "$lab_guest: hot add vbus-test id=$1"
	ctl add "$lab_guest" "type=vbus-test,id=$1" >>"$out/ctl.log" 2>&1 || lab_reply="see $out/ctl.log"
}
req_drop() {
	vbus_log "$lab_guest: drop id=$1"
	ctl drop "$lab_guest" "$1" >>"$out/ctl.log" 2>&1 || lab_reply="see $out/ctl.log"
}
# a host that stops answering hypercalls
req_stop() { vbus_log "SIGSTOP vbus-hostd"; kill -STOP "$hostd_pid"; }
req_cont() { vbus_log "SIGCONT vbus-hostd"; kill -CONT "$hostd_pid"; }
lab_defer "kill -CONT $hostd_pid 2>/dev/null"
victim_killed=0
req_kill() {
	vbus_log "$lab_role: killing its QEMU (SIGKILL)"
	if [[ -f "$run/$lab_role.pid" ]] && kill -9 "$(cat "$run/$lab_role.pid")"; then
		h_pass "$lab_role-qemu-killed"
		victim_killed=1
	else
		h_fail "$lab_role-qemu-killed" "no QEMU pid"
	fi
}
hostd_alive() { kill -0 "$hostd_pid" 2>/dev/null && ctl list >"$out/ctl-list.txt" 2>&1; }

# ---- 1 + 2: victim (killed) and main at the same time ----
if lab_want victim; then
	lab_boot victim --guest g2
fi
lab_boot main --guest g1 --vectors 4
lab_serve
if lab_want victim; then
	for t in only-configured-devices foreign-devices-absent dev7-type-id-bound ring-1000-dev7; do
		if tr -d '\r' <"$out/victim.log" | grep -aq "VBUS-TEST PASS $t\$"; then
			h_pass "victim/$t"
		else
			h_fail "victim/$t" "(log $out/victim.log)"
		fi
	done
	((victim_killed)) || h_fail victim-qemu-killed "the victim never asked to be killed (log $out/victim.log)"
	h_check hostd-alive-after-kill hostd_alive
fi
lab_results main main

# ---- 3: the killed guest comes back ----
if lab_want rejoin; then
	lab_boot rejoin --guest g2
	lab_serve rejoin
	lab_results rejoin rejoin
fi
h_check hostd-alive-at-end hostd_alive
sed 's/^/    ctl list: /' "$out/ctl-list.txt"

printf '\nfigures:\n'
lab_figures main 'vbus-bus-tests: (RING|RING-CMP|HC-LATENCY|EVENT-LATENCY|CYCLES) .*'
lab_summary main
