#!/usr/bin/env bash
# vbus-ipc between two guests (a link, docs/devices/vbus_ipc.md "Links"):
# vbus-hostd links g1's ipc device (north, the client) with g2 (south, the
# server); both guests run the unchanged ipc-peer on /dev/vbus-ipc0. The
# north guest (guest.sh, LINK_ROLE=north) drives the checks and asks this
# script for what only the host can do; the south guest serves one
# ipc-peer session per north check, in order:
#   exchange     echo-check: --msgs checked messages each way (each is
#                checked by the south on the way and by the north back)
#   vchan        the same exchange through libioq's vchan-style calls
#                (ipc-peer vchan-client chat / vchan-server chat: each
#                guest finds its device by service name and side)
#   third_guest  a third QEMU on either of the link's sockets is refused
#                (req_third): it gets neither the region nor an eventfd;
#                echo-check: the named guests' channel goes on
#   peer_killed  echo: the south guest's QEMU is killed mid-stream
#                (req_kill_peer): the north gets -EPIPE within a bound;
#                then a new south guest boots (req_boot_peer) and the
#                north's next open is served: the channel reconnects
#   garbage      the south posts a descriptor outside the area: the
#                north faults (-EIO); vbus-hostd is unharmed
#   after_garbage echo-check: a fresh session works
#   cycles       echo per open/close cycle: no slab growth in either guest
#   reboot       echo: the south guest reboots inside its running QEMU
#                mid-stream (req_reboot_peer / req_reboot_wait): the north
#                gets -EPIPE within a bound; the rebooted south's driver
#                comes back (req_south_boot tells it which boot it is) and
#                the north's next open is served
#
#   tests/qemu/run.sh ipc_link[:REGEX] [--msgs N] [--cycles N] [--demo]
#
#   --demo    only the exchange (scripts/main.sh shows it)
set -euo pipefail
# shellcheck source=tests/qemu/lib/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/lab.sh"

msgs=100000 cycles=10 mem=384M demo=0
lab_begin ipc_link msgs:N cycles:N demo:demo=1 -- "$@"
((demo == 0)) || only='^exchange$'

lab_build --modules "$LAB_BUS_SUBDIRS" --cmake "vbus-hostd ipc-peer"
lab_kos kernel/vbus_ipc/vbus_ipc.ko
peer=$(find "$cbuild" -type f -name ipc-peer -perm -u+x | head -n 1)
[[ -n "$peer" ]] || { h_fail build "no ipc-peer under $cbuild"; finish; }

# The south guest's sessions, "ACTION:NAME", before and after its reboot
# (peer_killed); the north runs its checks in the same order.
s1=() s2=()
south() { if ((${#s2[@]})) || [[ "$1" == boot ]]; then s2+=("$2"); else s1+=("$2"); fi; }
! lab_want exchange || south - echo-check:exchange
! lab_want vchan || south - vchan:vchan
! lab_want third_guest || south - echo-check:third-guest
if lab_want peer_killed; then
	s1+=(echo:peer-killed)
	south boot echo:reconnect
fi
! lab_want garbage || south - garbage:garbage
! lab_want after_garbage || south - echo-check:after-garbage
if lab_want cycles; then
	for ((i = 0; i <= cycles; i++)); do south - echo:cycle; done
fi
s_reboot=()
if lab_want reboot; then
	south - reboot:reboot
	s_reboot=(echo:after-reboot)
fi

stage() {
	lab_stage "$1" "$(dirname "$0")/guest.sh" "${kos[@]}" --file "$peer" <<CONFIG
LINK_ROLE=$2
LINK_MSGS=$msgs
LINK_CYCLES=$cycles
LINK_SESSIONS='$3'
LINK_AFTER_REBOOT='${s_reboot[*]}'
CONFIG
}
stage north north ""
stage south south "${s1[*]}"
stage south2 south "${s2[*]}"

lab_hostd -- --guest "$(lab_guest g1)" --guest "$(lab_guest g2)" \
	--device "g1:type=vbus-ipc,id=5,service=chat,qsock=$run/north.sock,peer=g2,peer_qsock=$run/south.sock"

mapfile -t q_north < <(lab_ivshmem north)
mapfile -t q_south < <(lab_ivshmem south)

# shellcheck disable=SC2317 # the req_ functions: lab_serve calls them
req_kill_peer() {
	local pid
	pid=$(cat "$run/south.pid" 2>/dev/null) || { lab_reply="no south QEMU"; return 1; }
	kill -9 "$pid" && vbus_log "killed the south guest's QEMU (pid $pid)"
}
# shellcheck disable=SC2317
req_boot_peer() { lab_boot south2 --guest g2 --smp 1 --reboot -- "${q_south[@]}"; }
# the reboot group: the north asks for it, the south (echoing) waits for it
reboot_asked=0
declare -A south_boots
# shellcheck disable=SC2317
req_reboot_peer() { reboot_asked=1; }
# shellcheck disable=SC2317
req_reboot_wait() {
	((reboot_asked)) || return 2
	reboot_asked=0
	vbus_log "$lab_role reboots inside its QEMU (pid $(cat "$run/$lab_role.pid" 2>/dev/null))"
}
# shellcheck disable=SC2317
req_south_boot() {
	south_boots[$lab_role]=$((${south_boots[$lab_role]:-0} + 1))
	lab_reply=${south_boots[$lab_role]}
}
# A third guest's QEMU on each of the link's sockets while the named
# guests hold them: vbus-hostd refuses it (logged) and it never gets the
# region (no /memfd:vbus-ipc among its fds; QEMU 7.2 stays in ivshmem's
# setup, -S so it runs nothing either way).
# shellcheck disable=SC2317
refusals() { grep -ac "second QEMU on $run/$1.sock" "$lab_logs/hostd.log" || true; }
# shellcheck disable=SC2317
holds_region() {
	local f
	for f in "/proc/$1/fd/"*; do
		[[ "$(readlink "$f" 2>/dev/null)" == *memfd:vbus-ipc* ]] && return 0
	done
	return 1
}
# shellcheck disable=SC2317
req_third() {
	local s n qpid ok
	for s in north south; do
		n=$(refusals "$s") ok=0
		qemu-system-x86_64 -accel tcg -machine q35 -nodefaults -display none -S \
			-monitor none -chardev "socket,id=x,path=$run/$s.sock" \
			-device ivshmem-doorbell,chardev=x,vectors=2 >"$out/third-$s.out" 2>&1 &
		qpid=$!
		for _ in $(seq 300); do
			(($(refusals "$s") > n)) && { ok=1; break; }
			sleep 0.1
		done
		if holds_region "$qpid"; then
			ok=0 lab_reply="a third QEMU on $s.sock holds the region"
		elif ((!ok)); then
			lab_reply="vbus-hostd did not refuse a third QEMU on $s.sock"
		fi
		kill -9 "$qpid" 2>/dev/null
		wait "$qpid" 2>/dev/null
		((ok)) || return 1
		vbus_log "third QEMU on $s.sock refused; it has no region"
	done
}

lab_boot south --guest g2 --smp 1 --reboot -- "${q_south[@]}"
lab_boot north --guest g1 --smp 1 -- "${q_north[@]}"
# every guest's requests (the south asks too: which boot it is, when to
# reboot), the peer booted by req_boot_peer included, until all have ended
lab_serve
lab_results north north
if lab_want peer_killed; then
	# the first south guest was killed: its verdict is its exchange's line
	if [[ " ${s1[*]} " == *" echo-check:exchange "* ]]; then
		if tr -d '\r' <"$lab_logs/south.log" | grep -aq '^VBUS-TEST PASS south-exchange$'; then
			h_pass south/exchange
		else
			h_fail south/exchange "(log $lab_logs/south.log)"
		fi
	fi
	last_south=south2
else
	last_south=south
fi
lab_results "$last_south" south
if kill -0 "$hostd_pid" 2>/dev/null && ctl stats g1 5 >"$out/stats.txt" 2>&1; then
	h_pass hostd-alive-at-end
	sed 's/^/    ctl stats: /' "$out/stats.txt"
else
	h_fail hostd-alive-at-end "(log $out/hostd.log)"
fi
grep -a "ipc: link" "$lab_logs/hostd.log" | sed 's/^/    hostd: /' | head -n 20
printf '\nfigures:\n'
lab_figures north 'ipc-link-tests: .*'
lab_figures "$last_south" 'ipc-link-tests: .*'
lab_summary north
