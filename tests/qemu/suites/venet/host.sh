#!/usr/bin/env bash
# venet over the real transport: vbus-hostd (strict=1: a bad descriptor
# from our driver faults the device) with one venet device on a tap
# (vt0, 10.77.0.1/24) in a network namespace, busybox httpd there serving
# the guest's traffic (/data: --data-mb MiB with a known md5;
# /cgi-bin/md5: the md5 of an upload; /soak), and the guest's requests
# (ping: the host pings the guest; mtu N: the tap's MTU). The guest
# (guest.sh): ping both ways, TCP both ways with checksums, MTU
# 1500/9000, link down/up, sg_enabled=1 (SG, TSO and RXSG: GSO frames
# host->guest) and 0 (plain rx), TSO/rx GSO counters, unload under
# traffic, small rings, load/unload cycles without slab growth; with
# --soak-mb, long transfers each way. With --swiotlb (the guest bounces
# every DMA mapping) only the swiotlb group runs: the device added back
# with dma_window= the guest's swiotlb range, TCP both ways in each --sg
# mode, and vbus-hostd saw every frame in it. Needs root (netns, tap).
#
#   tests/qemu/run.sh venet[:REGEX] [--sg "1 0"] [--cycles N] [--data-mb N]
#                                   [--soak-mb N] [--swiotlb]
#
#   --sg MODES    sg_enabled values to test, in order (default "1 0")
#   --cycles N    load/unload cycles of venet for the slab check (20)
#   --data-mb N   size of each TCP transfer in MiB (default 8)
#   --soak-mb N   the soak, in the first --sg mode: N MiB host->guest in
#                 one download and N MiB guest->host in 64 MiB uploads, each
#                 md5-checked at both ends (default 0: none; the opt-in
#                 stage soak-venet of scripts/test.sh uses 2048)
# Check groups (REGEX): sg1 sg0 mq mq_old_host small_rings hotdrop alias
# cycles; with --swiotlb: swiotlb. The guest has per-queue MSI-X vectors
# (vbus-hostd vectors=4, QEMU's vectors=4): the rings' signals never use
# the eventq. The device has queues=2 and the guest 2 vCPUs: venet runs
# 2 queue pairs in every group (mq_old_host: 1, from a queues=1 device).
# shellcheck disable=SC2317 # the req_ functions: lab_serve calls them
set -euo pipefail
# shellcheck source=tests/qemu/lib/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/lab.sh"

sg="1 0" cycles=20 data_mb=8 soak_mb=0 timeout=900
lab_begin venet sg:S cycles:N data-mb:N soak-mb:N -- "$@"
for v in $sg; do
	[[ "$v" =~ ^[01]$ ]] || { vbus_err "--sg takes 0/1 values, not $v"; exit 2; }
done
guest_ip=10.77.0.2 guest_mac=52:54:00:7e:00:02

lab_build --modules "$LAB_BUS_SUBDIRS kernel/venet" --cmake vbus-hostd
lab_kos --bus kernel/venet/venet.ko
# multi-queue: the device has queues=2 (a tap queue per pair)
lab_netns --mq 10.77.0.1 vt0

www="$run/www"
mkdir -p "$www"
head -c "$((data_mb * 1024 * 1024))" /dev/urandom >"$www/data"
data_md5=$(md5sum "$www/data" | cut -d' ' -f1)
soak_md5=
if ((soak_mb)); then
	head -c "$((soak_mb * 1024 * 1024))" /dev/urandom >"$www/soak"
	soak_md5=$(md5sum "$www/soak" | cut -d' ' -f1)
fi
lab_httpd "$www"
lab_cgi_md5 "$www"

bins=()
if command -v ethtool >/dev/null; then
	bins=(--bin "$(command -v ethtool)")
else
	vbus_warn "no ethtool on the host: the guest skips the ethtool checks (apt-get install ethtool)"
fi
lab_stage guest "$(dirname "$0")/guest.sh" --file "$(dirname "$0")/net.sh" "${kos[@]}" "${bins[@]}" <<CONFIG
VT_HOST_IP=$host_ip
VT_GUEST_IP=$guest_ip
VT_PREFIX=24
VT_HTTP_PORT=$port
VT_DATA_MD5=$data_md5
VT_DATA_BYTES=$((data_mb * 1024 * 1024))
VT_SG_MODES="$sg"
VT_CYCLES=$cycles
VT_UP_MB=$data_mb
VT_SOAK_MB=$soak_mb
VT_SOAK_MD5=$soak_md5
VT_SWIOTLB=$swiotlb
CONFIG

# in the namespace: it opens the tap there
lab_hostd --ns -- --guest "$(lab_guest g1),vectors=4" \
	--device "g1:type=venet,id=1,tap=$tap,mac=$guest_mac,strict=1,queues=2"

# the guest's requests: the host pings it; the tap's MTU
req_ping() { nsx ping -c 3 -i 0.2 -W 3 "$guest_ip" >/dev/null 2>&1; }
req_mtu() { [[ "$1" =~ ^[0-9]+$ ]] && nsx ip link set dev "$tap" mtu "$1"; }
# hot drop and re-add of the device; the guest's hypercall errors so far
# (add N: with queues=N, default 2)
venet_spec="type=venet,id=1,tap=$tap,mac=$guest_mac,strict=1"
req_drop() { ctl drop g1 1 >>"$out/ctl.log" 2>&1 || { lab_reply="ctl drop (see $out/ctl.log)"; return 1; }; }
req_add() {
	[[ "${1:-2}" =~ ^[0-9]+$ ]] || { lab_reply="add: queues not a number"; return 1; }
	ctl add g1 "$venet_spec,queues=${1:-2}" >>"$out/ctl.log" 2>&1 || { lab_reply="ctl add (see $out/ctl.log)"; return 1; }
}
# --swiotlb: the device back with the guest's swiotlb range as dma_window
req_window() { lab_dma_add "$venet_spec,queues=2" "$@"; }
req_dmacheck() { lab_dma_check 1; }
req_hc_errors() {
	lab_reply=$(ctl stats g1 2>>"$out/ctl.log" | sed -n 's/^guest=g1 .* hc_errors=\([0-9]*\).*/\1/p')
	[[ -n "$lab_reply" ]]
}

lab_run guest --guest g1 --vectors 4

if kill -0 "$hostd_pid" 2>/dev/null && ctl stats g1 1 >"$out/hostd-stats.txt" 2>&1; then
	h_pass hostd-alive-at-end
	sed 's/^/    hostd stats: /' "$out/hostd-stats.txt"
else
	h_fail hostd-alive-at-end "(log $out/hostd.log)"
fi
# RXSG (sg_enabled=1): the host handed GSO frames to the guest, and
# refused none the tap gave it
hstat() { tr ' ' '\n' <"$out/hostd-stats.txt" | sed -n "s/^$1=//p" | head -n 1; }
if [[ -s "$out/hostd-stats.txt" ]]; then
	if [[ " $sg " == *" 1 "* ]] && lab_want sg1; then
		v=$(hstat rx_gso)
		if [[ "${v:-0}" -gt 0 ]]; then h_pass "hostd-rx-gso ($v)"; else h_fail hostd-rx-gso "rx_gso=${v:-?}"; fi
	fi
	v=$(hstat rx_offload_dropped)
	if [[ "${v:-1}" -eq 0 ]]; then h_pass hostd-rx-offload-none-dropped; else h_fail hostd-rx-offload-none-dropped "rx_offload_dropped=${v:-?}"; fi
fi
lab_no_fault "the venet device"
((soak_mb == 0)) || lab_figures guest 'venet-tests: SOAK .*'
lab_summary guest
