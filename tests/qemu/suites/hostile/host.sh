#!/usr/bin/env bash
# A hostile host (issue 20): vbus-hostd with its test-only fault injection
# (--test-faults, `ctl fault`, docs/fault-injection.md) lies to the guest
# on purpose, and the guest must neither crash, hang, corrupt nor WARN
# (it boots with panic_on_warn=1, as every suite, and page_poison=1 so
# that a write into a freed page shows). vbus-hostd runs under vbus-fdkeeper
# (restarts keep the QEMU connection) in a namespace with a tap, serving
#   1  vbus-test   the victim of the faults
#   2  vbus-test   a bystander: its ring must keep working
#   3  venet       on tap hr0 (10.79.0.1 here, 10.79.0.2 in the guest)
#   4  vbus-blk    a 64 MiB disk, serial hb-blk
# and, from --test-fault "g1 phantoms 70", 70 phantom devices announced
# at every BUSREG ahead of the real ones; a re-attach's BUSREG posts them
# without an interrupt (busreg-quiet: the guest must drain what BUSREG's
# answer promised, not one 64-event pass). One check group per defect of
# issue 20 that a host can provoke (guest.sh says which), each ending with
# the console scanned for kernel problems since its start and the
# bystander's ring, and last a warm reboot under traffic (reboot: QEMU
# resets, the same kernel boots again): between the old kernel's shutdown
# and the new one's bridge, vbus-hostd writes nothing into guest memory
# (its counters stand still while the host pings the guest), and the new
# boot brings vbus up again. Needs root (namespace, tap).
#
#   tests/qemu/run.sh hostile[:REGEX] [--phantoms N] [--rx-flood N]
#
#   --phantoms N  phantom devices (default 70: more than one 64-event pass)
#   --rx-flood N  pings flooded at the guest in rx_race (default 6000)
#   --sleep-disk  the sleep group also cycles hibernation's freeze/thaw
#                 (pm_test=devices; the same callbacks as s2idle's; 11 s)
# Check groups (REGEX), in this order: rx_race storm_close reattach
# devadd_flood reboot sleep devshm_version own_fields disconnect_timeout
# (the last four after the reboot, in the second boot).
# shellcheck disable=SC2317 # the req_ functions: lab_serve calls them
set -euo pipefail
# shellcheck source=tests/qemu/lib/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/lab.sh"

phantoms=70 rx_flood=6000 sleep_disk=0 mem=512M timeout=600
lab_begin hostile phantoms:N rx-flood:N sleep-disk:sleep_disk=1 -- "$@"
guest_ip=10.79.0.2 guest_mac=52:54:00:7e:02:02

lab_build --modules "$LAB_BUS_SUBDIRS kernel/venet kernel/vbus_blk" --cmake "vbus-hostd vbus-fdkeeper"
lab_kos --bus kernel/vbus_test/vbus_test.ko kernel/venet/venet.ko kernel/vbus_blk/vbus_blk.ko
keeper="$(dirname "$hostd")/vbus-fdkeeper"
[[ -x "$keeper" ]] || { h_fail build "no vbus-fdkeeper next to $hostd"; finish; }
lab_tools pgrep ping
lab_netns 10.79.0.1 hr0

lab_stage guest "$(dirname "$0")/guest.sh" --file "$(dirname "$0")/../venet/net.sh" "${kos[@]}" <<CONFIG
VT_HOST_IP=$host_ip
VT_GUEST_IP=$guest_ip
VT_PREFIX=24
VT_PHANTOMS=$phantoms
VT_RX_FLOOD=$rx_flood
VT_SLEEP_DISK=$sleep_disk
VT_KERNEL_PROBLEMS='$VBUS_KERNEL_PROBLEMS'
CONFIG

truncate -s 64M "$run/blk.img"
# hostd_pid is the keeper's; it restarts its daemon with the same options
LAB_HOSTD_WRAP=("$keeper" --restart-delay 100 --)
lab_hostd --ns -- --test-faults --test-fault "g1 phantoms $phantoms" \
	--test-fault "g1 busreg-quiet on" \
	--guest "$(lab_guest g1)" \
	--device g1:type=vbus-test,id=1 --device g1:type=vbus-test,id=2 \
	--device "g1:type=venet,id=3,tap=$tap,mac=$guest_mac" \
	--device "g1:type=vbus-blk,id=4,file=$run/blk.img,serial=hb-blk"

# ---- the guest's requests ----
# shellcheck disable=SC2154 # lab_tools
daemon_pid() { "$tool_pgrep" -P "$hostd_pid" | head -n 1; }
# fault VERB ARGS...: `ctl fault g1 ...`; its answer is the reply
req_fault() {
	local o rc=0
	o=$(ctl fault g1 "$@" 2>&1) || rc=$?
	printf 'fault %s -> %s\n' "$*" "$o" >>"$out/faults.log"
	lab_reply=$(tail -n 1 <<<"$o")
	return "$rc"
}
# restart [kill]: a graceful restart (SIGTERM), or a crash (SIGKILL);
# the keeper starts the daemon again (same options)
restarts=0 kills=0
req_restart() {
	local pid sig=TERM
	pid=$(daemon_pid) || { lab_reply="no daemon under the keeper"; return 1; }
	[[ "${1:-}" == kill ]] && sig=KILL
	vbus_log "restart: SIG$sig to vbus-hostd pid $pid"
	kill -"$sig" "$pid"
	kill -CONT "$pid" 2>/dev/null || true
	if [[ "$sig" == KILL ]]; then kills=$((kills + 1)); else restarts=$((restarts + 1)); fi
}
# the daemon stops serving (SIGSTOP): the guest's requests stay on its
# rings until the restart that follows (SIGKILL ends a stopped process)
req_freeze() {
	local pid
	pid=$(daemon_pid) || { lab_reply="no daemon under the keeper"; return 1; }
	vbus_log "freeze: SIGSTOP to vbus-hostd pid $pid"
	kill -STOP "$pid"
}
# which boot of the guest asks: 1, then 2 after the reboot it announced
# (req_rebooting); any other reboot (a panic: panic=-1) is "unplanned"
boots=0 planned=0
req_boot() {
	boots=$((boots + 1))
	lab_reply=$boots
	((boots == 1 || (boots == 2 && planned))) || lab_reply="unplanned-$boots"
}
req_rebooting() { planned=1; }
# the host sends to the guest the whole time it reboots
# shellcheck disable=SC2154 # lab_tools
req_ping_flood() {
	nsx "$tool_ping" -q -i 0.05 "$guest_ip" >/dev/null 2>&1 &
	_lab_bg+=($!)
	ping_pid=$!
}
# rx_flood N: N pings flooded at the guest (an honest host under load);
# the reply says how many came back
req_rx_flood() {
	lab_reply=$(nsx "$tool_ping" -f -q -c "$1" -s 1200 -W 1 "$guest_ip" 2>&1 | grep -o '[0-9]* received') || true
}
# writes: what vbus-hostd wrote into guest memory, counted: events
# posted, and per device the descriptors, bytes and signals out
writes() { ctl stats g1 | counters; }
# quiet: the new kernel runs, vbus not loaded yet, the old one's rings
# forgotten: 40 more pings and ARPs reach the tap; vbus-hostd's writes
# into the guest must not move (they would, into the new kernel's memory,
# if the old kernel had left its rings registered)
req_quiet() {
	local a b
	a=$(writes)
	nsx "$tool_ping" -q -c 40 -i 0.05 -W 1 "$guest_ip" >/dev/null 2>&1 || true
	b=$(writes)
	printf 'before:\n%s\nafter 40 pings:\n%s\n' "$a" "$b" >"$out/quiet.txt"
	[[ -n "$a" && "$a" == "$b" ]] && return 0
	lab_reply="vbus-hostd wrote into the rebooted guest: before: $a; after: $b"
	return 1
}

# asleep_watch: in the background, until asleep_result. Each `ctl stats`
# answer gives the guest's state and vbus-hostd's write counters at once:
# from the first answer in which the guest's bridge has detached its
# eventq (going to sleep: state "connected", no longer "registered") the
# host pings the guest, and every answer while it sleeps must show the
# counters of the first; at least ASLEEP_MIN_MS of pings between the
# first and the last such answer, else the check proved nothing.
ASLEEP_MIN_MS=500
ms_now() { echo $(($(date +%s%N) / 1000000)); }
counters() { tr ' ' '\n' | grep -E '^(events_posted|id|descs|bytes|notify_out)=' | tr '\n' ' '; }
asleep_watch() {
	local o a="" b t0=0 t1=0 pinger=""
	while [[ ! -e "$out/asleep.woke" ]]; do
		o=$(ctl stats g1) || true
		if grep -q 'state=connected' <<<"$o"; then
			b=$(counters <<<"$o")
			if [[ -z "$a" ]]; then
				a=$b t0=$(ms_now)
				nsx "$tool_ping" -q -i 0.02 -W 1 "$guest_ip" >/dev/null 2>&1 &
				pinger=$!
			fi
			t1=$(ms_now)
			[[ "$a" == "$b" ]] || break
		elif [[ -n "$a" ]]; then
			break	# awake again
		fi
		sleep 0.02
	done
	[[ -z "$pinger" ]] || kill "$pinger" 2>/dev/null
	[[ -n "$a" ]] ||
		{ echo "the guest slept and woke without detaching its eventq: vbus-hostd could write into it all along"; return 1; }
	[[ "$a" == "$b" ]] ||
		{ echo "vbus-hostd wrote into the sleeping guest: first: $a; then: $b"; return 1; }
	((t1 - t0 >= ASLEEP_MIN_MS)) ||
		{ echo "asleep for $((t1 - t0)) ms of pings only (< $ASLEEP_MIN_MS): it proved nothing"; return 1; }
	echo "asleep: nothing written during $((t1 - t0)) ms of pings ($a)"
}
req_asleep_watch() {
	rm -f "$out/asleep.rc" "$out/asleep.woke"
	{ asleep_watch >"$out/asleep.txt" 2>&1; echo $? >"$out/asleep.rc"; } &
	_lab_bg+=($!)
	asleep_pid=$!
}
req_asleep_result() {
	touch "$out/asleep.woke"
	wait "${asleep_pid:-}" 2>/dev/null || true
	lab_reply=$(tail -n 1 "$out/asleep.txt" 2>/dev/null)
	[[ "$(cat "$out/asleep.rc" 2>/dev/null)" == 0 ]]
}

# without -no-reboot (--reboot): the guest's reboot resets QEMU and the
# same kernel and initramfs boot again
# page_poison: a write into a freed page (a ring is one) shows
# (panic_on_warn=1 is on every suite's command line: boot.sh)
lab_run guest --guest g1 --reboot --append "page_poison=1"
[[ -z "${ping_pid:-}" ]] || kill "$ping_pid" 2>/dev/null || true
if lab_want reattach; then
	h_check "host-restarted-$restarts" test "$restarts" = 1
fi
if lab_want disconnect_timeout; then
	h_check "host-killed-$kills" test "$kills" = 1
fi
ctl fault g1 status >"$out/fault-status.txt" 2>&1 || true
sed 's/^/    fault status: /' "$out/fault-status.txt"
h_check hostd-alive-at-end kill -0 "$hostd_pid"
lab_summary guest
