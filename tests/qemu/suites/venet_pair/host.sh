#!/usr/bin/env bash
# Two venet guests on one switch: vbus-hostd (strict=1) serves guests g1
# and g2, each with a venet NIC on a tap (vp1, vp2) in a network
# namespace; the taps are ports of a switch that also holds the host
# endpoint 10.78.0.1 (busybox httpd: /data). Once per switch:
#   bridge  a Linux bridge (ip link add type bridge)
#   ovs     Open vSwitch, its userspace datapath (datapath_type=netdev:
#           no kernel module), the taps as its ports; ovsdb-server and
#           ovs-vswitchd run from this run's directory and are stopped
#           after (a system OVS, if any, is never touched); userspace
#           TSO on (see ovs_tso)
# the guests a (g1, 10.78.0.2) and b (g2, 10.78.0.3) boot together and
# check (guest.sh): pair: ping, TCP both ways with md5; jumbo: the same at
# MTU 9000 (every port 9000); reboot: b reboots while a's md5-checked
# downloads from the host endpoint go on without a failure, then a and b
# talk again. Needs root (netns, taps) and, for ovs, openvswitch-switch
# (scripts/deps.sh).
#
#   tests/qemu/run.sh venet_pair[:REGEX] [--switches "bridge ovs"] [--data-mb N]
#
#   --switches LIST  the switches, in order (default "bridge ovs")
#   --data-mb N      size of /data, each TCP transfer, in MiB (default 4)
# Check groups (REGEX): pair jumbo reboot.
# shellcheck disable=SC2317 # the req_ functions: lab_serve calls them
set -euo pipefail
# shellcheck source=tests/qemu/lib/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/lab.sh"

switches="bridge ovs" data_mb=4 timeout=600 mem=512M
lab_begin venet_pair switches:S data-mb:N -- "$@"
for s in $switches; do
	[[ "$s" == bridge || "$s" == ovs ]] || { vbus_err "--switches takes bridge and ovs, not $s"; exit 2; }
done
here=$(dirname "$0")

lab_build --modules "$LAB_BUS_SUBDIRS kernel/venet" --cmake vbus-hostd
lab_kos --bus kernel/venet/venet.ko
[[ " $switches " != *" ovs "* ]] || lab_tools ovsdb-tool ovsdb-server ovs-vswitchd ovs-vsctl
# the taps carry no address: the switch's own port (br0) is the host's
lab_netns - vp1 - vp2
host_ip=10.78.0.1
nsx ip link set dev vp1 mtu 9000
nsx ip link set dev vp2 mtu 9000

www="$run/www"
mkdir -p "$www"
head -c "$((data_mb * 1024 * 1024))" /dev/urandom >"$www/data"
data_md5=$(md5sum "$www/data" | cut -d' ' -f1)
# on every address: br0 comes and goes with the switch
host_ip=0.0.0.0 lab_httpd "$www"

# one vbus-hostd for both guests, as on a real host: the reboot is a
# guest leaving and coming back to a daemon that serves the other on
lab_hostd --ns -- --guest "$(lab_guest g1)" --guest "$(lab_guest g2)" \
	--device "g1:type=venet,id=1,tap=vp1,mac=52:54:00:7e:01:02,strict=1" \
	--device "g2:type=venet,id=1,tap=vp2,mac=52:54:00:7e:01:03,strict=1"

# ---- the switches: SW_up joins vp1, vp2 and br0 (host_ip), SW_down undoes it
bridge_up() {
	lab_bridge br0 vp1 vp2 &&
		nsx ip link set dev br0 mtu 9000 &&
		nsx ip addr add "$host_ip/24" dev br0
}
bridge_down() { nsx ip link del br0; }

ovsd="$run/ovs"
# shellcheck disable=SC2154 # the tool_ paths: lab_tools
vsctl() { "$tool_ovs_vsctl" --db="unix:$ovsd/db.sock" --timeout=30 "$@"; }
# ovs_env CMD...: CMD with OVS's run/log/db directories in this run
ovs_env() { env OVS_RUNDIR="$ovsd" OVS_LOGDIR="$ovsd" OVS_DBDIR="$ovsd" "$@"; }
# Userspace TSO: without it the userspace datapath reads a system port
# (a tap here) through a packet socket into buffers of the port's MTU,
# and the 64 KiB TSO frames of a venet guest (sg_enabled=1, the default)
# never make it through (ping works, a download gets nothing). With it
# they do (OVS takes the frames with their offload metadata). Set before
# ovs-vswitchd starts: it reads the option once.
ovs_tso() { vsctl --no-wait set Open_vSwitch . other_config:userspace-tso-enable=true; }
# shellcheck disable=SC2154 # the tool_ paths: lab_tools
ovs_up() {
	mkdir -p "$ovsd"
	"$tool_ovsdb_tool" create "$ovsd/conf.db" /usr/share/openvswitch/vswitch.ovsschema &&
		ovs_env "$tool_ovsdb_server" "$ovsd/conf.db" --remote="punix:$ovsd/db.sock" \
			--pidfile="$run/ovsdb-server.pid" --unixctl="$ovsd/ovsdb-server.ctl" \
			--log-file="$lab_logs/ovsdb-server.log" --detach --no-chdir &&
		vsctl --no-wait init &&
		ovs_tso &&
		ovs_env ip netns exec "$ns" "$tool_ovs_vswitchd" "unix:$ovsd/db.sock" \
			--pidfile="$run/ovs-vswitchd.pid" --unixctl="$ovsd/ovs-vswitchd.ctl" \
			--log-file="$lab_logs/ovs-vswitchd.log" --detach --no-chdir &&
		vsctl add-br br0 -- set bridge br0 datapath_type=netdev &&
		vsctl add-port br0 vp1 -- set interface vp1 mtu_request=9000 &&
		vsctl add-port br0 vp2 -- set interface vp2 mtu_request=9000 &&
		vsctl set interface br0 mtu_request=9000 &&
		nsx ip addr add "$host_ip/24" dev br0 &&
		nsx ip link set dev br0 up
}
ovs_down() {
	local d
	for d in ovs-vswitchd ovsdb-server; do
		[[ -f "$run/$d.pid" ]] || continue
		vbus_stop_pid "$(cat "$run/$d.pid")"
		rm -f "$run/$d.pid"
	done
	rm -rf "$ovsd"
}
lab_defer ovs_down

# ---- the guests' requests
declare -A sync_seen
# guest_alive G: a QEMU of guest G runs
guest_alive() {
	local r
	for r in "${!lab_pid[@]}"; do
		[[ "${lab_guest_of[$r]}" == "$1" ]] && kill -0 "${lab_pid[$r]}" 2>/dev/null && return 0
	done
	return 1
}
# sync NAME: a barrier: ok once both guests have asked
req_sync() {
	local peer=g1
	[[ "$lab_guest" == g1 ]] && peer=g2
	sync_seen["$1/$lab_guest"]=1
	[[ -n "${sync_seen[$1/$peer]:-}" ]] && return 0
	guest_alive "$peer" || { lab_reply="the peer ($peer) is not running"; return 1; }
	return 2
}
# peer_gone (from a): ok once b's QEMU has ended; b boots again as b2
req_peer_gone() {
	local b="$sw-b"
	[[ -n "${lab_pid[$b]:-}" ]] && kill -0 "${lab_pid[$b]}" 2>/dev/null && return 2
	vbus_log "$b has rebooted: booting $sw-b2 (guest g2)"
	lab_boot "$sw-b2" --guest g2
}

# stage ROLE SELF PEER: the initramfs of guest ROLE on switch $sw
stage() {
	local sg=1
	lab_stage "$sw-$1" "$here/guest.sh" --file "$here/../venet/net.sh" --file "$www/data" \
		"${kos[@]}" <<-CONFIG
			VP_ROLE=$1
			VP_SWITCH=$sw
			VP_SELF_IP=$2
			VP_PEER_IP=$3
			VP_HOST_IP=$host_ip
			VP_HTTP_PORT=$port
			VP_DATA_MD5=$data_md5
			VP_SG=$sg
		CONFIG
}

# phase: both guests on switch $sw; b2 when b reboots
phase() {
	if "${sw}_up" >"$lab_logs/$sw-up.log" 2>&1; then
		h_pass "$sw/switch-up"
	else
		sed 's/^/    /' "$lab_logs/$sw-up.log"
		h_fail "$sw/switch-up" "(log $lab_logs/$sw-up.log)"
		"${sw}_down" >/dev/null 2>&1 || true
		return
	fi
	stage a 10.78.0.2 10.78.0.3
	stage b 10.78.0.3 10.78.0.2
	stage b2 10.78.0.3 10.78.0.2
	sync_seen=()
	lab_boot "$sw-a" --guest g1
	lab_boot "$sw-b" --guest g2
	lab_serve
	lab_results "$sw-a" "$sw/a"
	lab_results "$sw-b" "$sw/b"
	if [[ -n "${lab_secs[$sw-b2]:-}" ]]; then
		lab_results "$sw-b2" "$sw/b2"
	elif lab_want reboot; then
		h_fail "$sw/b2-booted" "b never came back (log $lab_logs/requests.log)"
	fi
	if "${sw}_down" >>"$lab_logs/$sw-up.log" 2>&1; then h_pass "$sw/switch-down"; else h_fail "$sw/switch-down"; fi
}

for sw in $switches; do
	phase
done

h_check hostd-alive-at-end kill -0 "$hostd_pid"
lab_no_fault "a venet device"
for r in "${!lab_secs[@]}"; do printf '%s %s s\n' "$r" "${lab_secs[$r]}"; done |
	sort | sed 's/^/    guest /'
lab_summary "${sw}-a"
