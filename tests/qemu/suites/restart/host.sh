#!/usr/bin/env bash
# vbus-hostd restarts under a running guest (docs/operations.md,
# "Restarts"; docs/transport.md, "Host restarts"). In a network namespace
# with a persistent tap (vr0) runs vbus-hostd under vbus-fdkeeper with a
# venet device and a vbus-test device, busybox httpd on the tap's address
# (a slow /cgi-bin/slow stream of --data-mb MiB with a known md5,
# /cgi-bin/md5 for uploads), then boots the guest (guest.sh). For each of
# "term" (graceful: SIGTERM) and "kill" (crash: SIGKILL) the guest starts
# a download and an upload and asks (vt_host restart KIND) for the daemon
# to be signalled in the middle of them; the keeper starts the daemon
# again, which takes over the QEMU connection; both transfers complete
# with the right md5 at both ends, venet keeps its name and address, the
# carrier comes back, vbus-test's ring carries verified traffic. With two
# vbus-blk devices too (id 3, serial vr-blk: fio with verify=crc32c, its
# two queues served by two host queue threads, threads=2; id 4, serial
# vr-fs: a mounted ext4 with fsynced writes, on the guest's thread;
# --no-blk leaves them out) the same restarts hit both disks, the guest first asking for the
# daemon to be frozen (freeze: SIGSTOP) so that the crash always leaves
# requests on the ring to take back. Then a hostile host (flap:
# lib/bar2-flap.py flips host_epoch and fires every vector for 3 s) and,
# with the disks, the ext4 disk's file shrunk under a SIGTERM restart
# (resize) and last the keeper stopped for good (stop): a read fails once
# the host has been away io_timeout x 5. Needs root.
#
#   tests/qemu/run.sh restart[:REGEX] [--kinds "term kill"] [--data-mb N]
#                                     [--blk-mb N] [--no-blk] [--queues N]
#
#   --kinds K     restarts to do, in order (default "term kill")
#   --data-mb N   size of each transfer in MiB (default 8)
#   --blk-mb N    MiB each verified fio pass covers on the disk (1..32,
#                 default 16; the stamp is at 32..36 MiB)
#   --no-blk      no vbus-blk devices (venet and vbus-test only)
#   --queues N    venet's queues=N (default 2: venet.ko runs 2 queue
#                 pairs on the 2 vCPUs and each restart must bring both
#                 back); N > 1 makes vr0 a multi-queue tap, which every
#                 restarted daemon opens again with all N queues (a guest
#                 driver without queue pairs runs one of them)
# Check groups (REGEX): term kill flap resize stop.
# shellcheck disable=SC2317 # the req_ functions: lab_serve calls them
set -euo pipefail
# shellcheck source=tests/qemu/lib/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/lab.sh"

kinds="term kill" data_mb=8 blk_mb=16 blk=1 mem=512M queues=2
lab_begin restart kinds:S data-mb:N blk-mb:N no-blk:blk=0 queues:N -- "$@"
((data_mb > 0 && blk_mb > 0 && blk_mb <= 32)) ||
	{ vbus_err "--data-mb must be > 0, --blk-mb 1..32 (the stamp is at 32 MiB)"; exit 2; }
((queues >= 1 && queues <= 16)) || { vbus_err "--queues takes 1..16"; exit 2; }
for v in $kinds; do
	[[ "$v" == term || "$v" == kill ]] || { vbus_err "--kinds takes term/kill, not $v"; exit 2; }
done
guest_ip=10.78.0.2 guest_mac=52:54:00:7e:01:02
rm -f "$out/flap.log"

lab_build --modules "$LAB_BUS_SUBDIRS kernel/venet kernel/vbus_blk" --cmake "vbus-hostd vbus-fdkeeper"
blk_ko=()
((blk)) && blk_ko=(kernel/vbus_blk/vbus_blk.ko)
lab_kos --bus kernel/vbus_test/vbus_test.ko kernel/venet/venet.ko "${blk_ko[@]}"
keeper="$(dirname "$hostd")/vbus-fdkeeper"
[[ -x "$keeper" ]] || { h_fail build "no vbus-fdkeeper next to $hostd"; finish; }
lab_tools pgrep
stage_extra=()
if ((blk)); then
	lab_tools fio mkfs.ext4 fsck.ext4
	# shellcheck disable=SC2154 # lab_tools
	stage_extra=(crc32c_generic ext4 --bin "$tool_fio" --bin "$tool_mkfs_ext4" --bin "$tool_fsck_ext4")
fi

# a persistent tap: it outlives the daemon, and so do its address and routes
mq=()
((queues > 1)) && mq=(--mq)
lab_netns "${mq[@]}" 10.78.0.1 vr0
www="$run/www"
mkdir -p "$www/cgi-bin"
head -c "$((data_mb * 1024 * 1024))" /dev/urandom >"$www/data"
data_md5=$(md5sum "$www/data" | cut -d' ' -f1)
lab_httpd "$www"
lab_cgi_md5 "$www"
# 256 KiB every 50 ms at most: the transfer is still running when the
# daemon goes, whatever the guest's speed
cat >"$www/cgi-bin/slow" <<EOF
#!$busybox sh
printf 'Content-Type: application/octet-stream\r\n\r\n'
i=0
while [ \$i -lt $((data_mb * 4)) ]; do
	$busybox dd if=$www/data bs=262144 skip=\$i count=1 2>/dev/null
	$busybox usleep 50000
	i=\$((i + 1))
done
EOF
chmod 0755 "$www/cgi-bin/slow"

lab_stage guest "$(dirname "$0")/guest.sh" "${kos[@]}" "${stage_extra[@]}" <<CONFIG
VT_HOST_IP=$host_ip
VT_GUEST_IP=$guest_ip
VT_PREFIX=24
VT_HTTP_PORT=$port
VT_DATA_MD5=$data_md5
VT_DATA_MB=$data_mb
VT_KINDS="$kinds"
VT_BLK_SERIAL=$( ((blk)) && echo vr-blk)
VT_BLK_MB=$blk_mb
VT_FIO=${tool_fio:-}
VT_FS_SERIAL=$( ((blk)) && echo vr-fs)
VT_STOP=$blk
VT_QUEUE_PAIRS=$((queues < 2 ? queues : 2))
CONFIG

blk_dev=()
if ((blk)); then
	truncate -s 64M "$run/blk.img" "$run/fs.img"
	blk_dev=(--device "g1:type=vbus-blk,id=3,file=$run/blk.img,serial=vr-blk,strict=1,queues=2,threads=2"
		--device "g1:type=vbus-blk,id=4,file=$run/fs.img,serial=vr-fs,strict=1")
fi
# hostd_pid is the keeper's; it stops its daemon on SIGTERM and exits
LAB_HOSTD_WRAP=("$keeper" --restart-delay 100 --)
# per-queue vectors: the first daemon serves them, and so does a restarted
# one (the store keeps every vector's eventfd): after the restarts the
# disk's completions still arrive on a queue vector
lab_hostd --ns -- --guest "$(lab_guest g1),vectors=4" \
	--device "g1:type=venet,id=1,tap=$tap,mac=$guest_mac,strict=1,queues=$queues" \
	--device "g1:type=vbus-test,id=2" "${blk_dev[@]}"

# ---- the guest's requests: the daemon the keeper runs ----
# shellcheck disable=SC2154 # lab_tools
daemon_pid() { "$tool_pgrep" -P "$hostd_pid" | head -n 1; }
restarts=0 stopped=0 stats_rc=0
# daemon: its pid into $pid; a request with none is a FAIL of the host's
daemon() {
	pid=$(daemon_pid) || pid=
	[[ -n "$pid" ]] && return 0
	h_fail "hostreq-$lab_role" "no vbus-hostd under the keeper"
	lab_reply="no daemon"
	return 1
}
req_restart() {
	local sig=TERM
	daemon || return 1
	[[ "$1" == kill ]] && sig=KILL
	vbus_log "restart $1: SIG$sig to vbus-hostd pid $pid"
	kill -"$sig" "$pid"
	kill -CONT "$pid" 2>/dev/null || true
	restarts=$((restarts + 1))
}
# the disk's requests pile up on the ring; the restart that follows must
# take them back (SIGKILL ends a stopped process, SIGTERM waits for SIGCONT)
req_freeze() { daemon && vbus_log "freeze: SIGSTOP to vbus-hostd pid $pid" && kill -STOP "$pid"; }
# a hostile host for 3 s, then it dies (the keeper restarts it)
req_flap() {
	daemon || return 1
	vbus_log "flap: host_epoch and interrupts of vbus-hostd pid $pid for 3 s"
	python3 "$(dirname "$0")/../../lib/bar2-flap.py" "$pid" 3 >>"$out/flap.log" 2>&1 ||
		h_fail flap "see $out/flap.log"
	restarts=$((restarts + 1))
}
# the next daemon serves another disk under id 4
req_resize() {
	daemon || return 1
	vbus_log "resize: fs.img to 32 MiB, SIGTERM to vbus-hostd pid $pid"
	truncate -s 32M "$run/fs.img"
	kill -TERM "$pid"
	restarts=$((restarts + 1))
}
# the daemon goes for good; its stats first
req_stop() {
	vbus_log "stop: SIGTERM to vbus-fdkeeper pid $hostd_pid"
	ctl stats g1 >"$out/hostd-stats.txt" 2>&1 || stats_rc=$?
	ctl stats g1 1 >"$out/venet-stats.txt" 2>&1 || true
	vbus_stop_pid "$hostd_pid"
	stopped=1
}

lab_run guest --guest g1 --vectors 4

# ---- the host's side of it ----
nkinds=0
for k in $kinds; do ! lab_want "$k" || nkinds=$((nkinds + 1)); done
! lab_want flap || nkinds=$((nkinds + 1))
((blk == 0)) || ! lab_want resize || nkinds=$((nkinds + 1))
if ((restarts == nkinds)); then
	h_pass "host-restarted-$restarts"
else
	h_fail host-restarts "$restarts restarts done, $nkinds wanted"
fi
started=$(grep -c "started pid" "$out/hostd.log" || true)
took=$(grep -c "QEMU connection taken over" "$out/hostd.log" || true)
if ((started == nkinds + 1 && took == nkinds)); then
	h_pass "keeper-restarts-take-over ($took)"
else
	h_fail keeper-restarts-take-over "started $started, taken over $took (log $out/hostd.log)"
fi
if ((stopped)); then
	if ((stats_rc == 0)); then h_pass hostd-alive-until-stop; else h_fail hostd-alive-until-stop "(log $out/hostd.log)"; fi
elif ctl stats g1 >"$out/hostd-stats.txt" 2>&1; then
	h_pass hostd-alive-at-end
	ctl stats g1 1 >"$out/venet-stats.txt" 2>&1 || true
else
	h_fail hostd-alive-at-end "(log $out/hostd.log)"
fi
# the last daemon opened the tap again, with every queue of queues=
if grep -Eq "(^| )backend=$tap( |\$)" "$out/venet-stats.txt" 2>/dev/null &&
	grep -Eq "(^| )queues=$queues( |\$)" "$out/venet-stats.txt"; then
	h_pass "venet-tap-reopened-queues-$queues"
else
	h_fail venet-tap-reopened "no backend=$tap queues=$queues in $out/venet-stats.txt"
fi
lab_no_fault "a device"
[[ -f "$out/flap.log" ]] && sed 's/^/    flap: /' "$out/flap.log"
lab_figures guest 'restart-tests: (RESTART|BLK|EXT4|FLAP|STOP) .*'
lab_summary guest
