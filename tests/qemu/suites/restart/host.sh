#!/usr/bin/env bash
# vbus-hostd restarts under a running guest (docs/operations.md,
# "Restarts"; docs/transport.md, "Host restarts"). Builds the bus stack,
# venet and vbus-test, vbus-hostd and vbus-fdkeeper; in a network
# namespace with a persistent tap (vr0) runs vbus-hostd under
# vbus-fdkeeper with a venet device and a vbus-test device, busybox httpd
# on the tap's address (a slow /cgi-bin/slow stream of $data_mb MiB with
# a known md5, /cgi-bin/md5 for uploads), then boots the guest
# (guest/restart-tests.sh). For each of "term" (graceful: SIGTERM) and
# "kill" (crash: SIGKILL) the guest starts a download and an upload,
# asks (VBUS-HOSTREQ on its console) for the daemon to be signalled in
# the middle of them; the keeper starts the daemon again, which takes over
# the QEMU connection; the guest checks that both transfers complete with
# the right md5 at both ends, the venet netdev kept its name and address,
# the carrier came back, vbus-test's ring carries verified traffic, and
# prints the measured link-down time, the longest rx stall and the TCP
# retransmissions. With a vbus-blk device too (id 3, serial vr-blk, on a
# sparse 64 MiB file; --no-blk leaves it out) the same restarts hit a
# disk under fio with verify=crc32c: no I/O error, every block checked,
# a stamp written before the restart reads back the same, the disk keeps
# its vbdN, and the restart took requests in flight back and sent them
# again ("BLK kind parked=.. resent=.." figures): the guest first asks
# for the daemon to be frozen (SIGSTOP) and waits until the disk has
# requests that no longer complete, so the crash (SIGKILL of the stopped
# daemon) always leaves requests on the ring to take back. A second vbus-blk disk
# (id 4, serial vr-fs, 64 MiB) holds a mounted ext4 with a loop of fsynced
# 256 KiB file writes through every restart: every file reads back with
# its md5, fsck finds it clean at the end and a remount reads it all back
# ("EXT4 kind files_written=.."). Then a hostile host (lib/bar2-flap.py: the daemon
# stopped, its BAR2 and eventfds taken) flips host_epoch and fires every
# vector every 2 ms for 3 s under traffic, then dies: the guest re-attaches
# at most about once a second meanwhile and is in service once the keeper's
# next daemon is up. With the disks, the ext4 disk's file is then shrunk
# to 32 MiB before a SIGTERM restart: the guest refuses the other disk
# (logged), the bus removes it and probes it anew at the new size, the
# fio disk is reconnected. Last (with the disks) the keeper is stopped, so the
# daemon goes for good: a read on the disk fails once the host has been
# away io_timeout (1 s) x 5, the device faulted ("host away too long"),
# the next at once. No kernel warning may appear. Prints PASS/FAIL lines
# and "N passed, N failed"; exits non-zero on failure. Needs root.
#
#   tests/qemu/run-restart-tests.sh [--kinds "term kill"] [--data-mb N]
#                                   [--blk-mb N] [--no-blk]
#                                   [--mem SIZE] [--timeout SEC] [--no-build]
#
#   --kinds K     restarts to do, in order (default "term kill")
#   --data-mb N   size of each transfer in MiB (default 8)
#   --blk-mb N    MiB each verified fio pass covers on the disk (1..32,
#                 default 16; the stamp is at 32..36 MiB)
#   --no-blk      no vbus-blk devices (venet and vbus-test only)
#   --mem SIZE    guest RAM, QEMU syntax (default 512M)
#   --timeout SEC kill the guest after SEC seconds (default 600)
#   --no-build    use the .ko files and binaries already built
# Accelerator: TCG unless hardware KVM is available (VBUS_QEMU_ACCEL=...).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=tests/qemu/lib/suite.sh
source "$here/lib/suite.sh"

kinds="term kill" data_mb=8 blk_mb=16 blk=1 mem=512M timeout=600 build=1
while (($#)); do
	case "$1" in
	--kinds) kinds=$2; shift 2 ;;
	--data-mb) data_mb=$2; shift 2 ;;
	--blk-mb) blk_mb=$2; shift 2 ;;
	--no-blk) blk=0; shift ;;
	--mem) mem=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	-h | --help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) vbus_err "unknown argument $1 (see --help)"; exit 2 ;;
	esac
done
for v in "$data_mb" "$blk_mb" "$timeout"; do
	[[ "$v" =~ ^[0-9]+$ && "$v" -gt 0 ]] || { vbus_err "not a positive number: $v"; exit 2; }
done
((blk_mb <= 32)) || { vbus_err "--blk-mb takes 1..32 (the stamp is at 32 MiB), not $blk_mb"; exit 2; }
for v in $kinds; do
	[[ "$v" == term || "$v" == kill ]] || { vbus_err "--kinds takes term/kill, not $v"; exit 2; }
done

passed=0 failed=0
h_pass() { passed=$((passed + 1)); printf 'PASS %s\n' "$1"; }
h_fail() { failed=$((failed + 1)); printf 'FAIL %s %s\n' "$1" "${*:2}"; }
finish() {
	printf '%d passed, %d failed\n' "$passed" "$failed"
	((failed == 0))
	exit $?
}

host_ip=10.78.0.1 guest_ip=10.78.0.2 port=8080 tap=vr0
guest_mac=52:54:00:7e:01:02

t_start=$(vbus_now)
vbus_fetch_kernel

out="$VBUS_BUILD/qemu/restart-tests"
cbuild="$VBUS_BUILD/cmake"
mkdir -p "$out"
rm -f "$out/flap.log"

# ---- build ---------------------------------------------------------------
if ((build)); then
	if ! step=$(vbus_build_stack "kernel/bus kernel/pci_bridge kernel/vbus_test kernel/vbus_ipc kernel/venet kernel/vbus_blk" "$out" "$cbuild"); then
		h_fail "$step" "build failed (log $out/$step.log)"
		finish
	fi
	if ! cmake --build "$cbuild" --target vbus-fdkeeper -j2 >"$out/build-keeper.log" 2>&1; then
		tail -n 20 "$out/build-keeper.log" | sed 's/^/    /'
		h_fail build-keeper "see $out/build-keeper.log"
		finish
	fi
fi
kos=("$top/vbus_core.ko" "$top/kernel/bus/vbus_proxy.ko"
	"$top/kernel/pci_bridge/vbus_pcibridge.ko" "$top/kernel/vbus_test/vbus_test.ko"
	"$top/kernel/venet/venet.ko")
((blk)) && kos+=("$top/kernel/vbus_blk/vbus_blk.ko")
for ko in "${kos[@]}"; do
	[[ -f "$ko" ]] || { h_fail build "$ko not built"; finish; }
done
hostd=$(vbus_find_hostd "$cbuild") || { h_fail build "no vbus-hostd binary under $cbuild"; finish; }
keeper="$(dirname "$hostd")/vbus-fdkeeper"
[[ -x "$keeper" ]] || { h_fail build "no vbus-fdkeeper next to $hostd"; finish; }
busybox=$(command -v busybox) || { h_fail setup "no busybox on the host"; finish; }
pgrep=$(command -v pgrep) || { h_fail setup "no pgrep on the host"; finish; }
bins=()
if ((blk)); then
	for b in fio mkfs.ext4 fsck.ext4; do
		p=$(PATH=$PATH:/usr/sbin:/sbin command -v "$b") ||
			{ h_fail setup "no $b on the host (scripts/deps.sh installs fio, e2fsprogs)"; finish; }
		bins+=("$p")
	done
fi

# ---- run directory, namespace, cleanup ----------------------------------
run=$(mktemp -d /tmp/vbus-vr.XXXXXX)
tag="vbus-vr-$$"
ns="$tag"
keeper_pid='' httpd_pid='' boot_pid=''
cleanup() {
	local p
	[[ -f "$run/g1.pid" ]] && kill -9 "$(cat "$run/g1.pid")" 2>/dev/null || true
	for p in "$boot_pid" "$httpd_pid"; do
		[[ -n "$p" ]] && kill "$p" 2>/dev/null || true
	done
	# the keeper stops its daemon on SIGTERM and exits
	vbus_stop_pid "$keeper_pid"
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$run"
	rm -f "/dev/shm/$tag-g1"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

nsx() { ip netns exec "$ns" "$@"; }

# a persistent tap: it outlives the daemon, and so do its address and routes
if ! { ip netns add "$ns" &&
	nsx ip link set lo up &&
	nsx ip tuntap add dev "$tap" mode tap vnet_hdr &&
	nsx ip addr add "$host_ip/24" dev "$tap" &&
	nsx ip link set "$tap" up; } >"$out/netns.log" 2>&1; then
	sed 's/^/    /' "$out/netns.log"
	h_fail netns "cannot create the namespace/tap (root needed; log $out/netns.log)"
	finish
fi
h_pass netns-tap

# ---- the host's endpoints ----------------------------------------------------
www="$run/www"
mkdir -p "$www/cgi-bin"
head -c "$((data_mb * 1024 * 1024))" /dev/urandom >"$www/data"
data_md5=$(md5sum "$www/data" | cut -d' ' -f1)
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
cat >"$www/cgi-bin/md5" <<EOF
#!$busybox sh
printf 'Content-Type: text/plain\r\n\r\n'
$busybox head -c "\${CONTENT_LENGTH:-0}" | $busybox md5sum | $busybox cut -d' ' -f1
EOF
chmod 0755 "$www/cgi-bin/"*
ip netns exec "$ns" "$busybox" httpd -f -p "$host_ip:$port" -h "$www" \
	>"$out/httpd.log" 2>&1 &
httpd_pid=$!

# ---- initramfs -----------------------------------------------------------
s="$run/stage"
mkdir -p "$s/test"
cp "$here/guest/lib.sh" "$s/test/lib.sh"
cp "$here/guest/restart-tests.sh" "$s/test/run.sh"
cat >"$s/test/config.sh" <<EOF
VT_HOST_IP=$host_ip
VT_GUEST_IP=$guest_ip
VT_PREFIX=24
VT_HTTP_PORT=$port
VT_DATA_MD5=$data_md5
VT_DATA_MB=$data_mb
VT_KINDS="$kinds"
VT_BLK_SERIAL=$( ((blk)) && echo vr-blk)
VT_BLK_MB=$blk_mb
VT_FIO=${bins[0]:-}
VT_FS_SERIAL=$( ((blk)) && echo vr-fs)
VT_STOP=$blk
EOF
extra_kmods=()
((blk)) && extra_kmods=(crc32c_generic ext4)
vbus_initramfs_add_kmods "$s" "${kos[@]}" "${extra_kmods[@]}" || { h_fail initramfs kmods; finish; }
if ((blk)); then
	# at the host's paths, with their libraries
	vbus_initramfs_add_binary "$s" "${bins[@]}" || { h_fail initramfs "${bins[*]}"; finish; }
fi
vbus_make_initramfs "$run/restart.cpio.gz" "$s" >/dev/null

# ---- vbus-hostd under vbus-fdkeeper (in the namespace: the tap is there) -----
blk_dev=()
if ((blk)); then
	truncate -s 64M "$run/blk.img" "$run/fs.img"
	blk_dev=(--device "g1:type=vbus-blk,id=3,file=$run/blk.img,serial=vr-blk,strict=1"
		--device "g1:type=vbus-blk,id=4,file=$run/fs.img,serial=vr-fs,strict=1")
fi
# `ip netns exec` execs in place: $! is the keeper
ip netns exec "$ns" "$keeper" --restart-delay 100 -- "$hostd" --foreground \
	--ctl "$run/ctl.sock" \
	--guest "g1:sock=$run/g1.sock,mem=/dev/shm/$tag-g1,size=$mem" \
	--device "g1:type=venet,id=1,tap=$tap,mac=$guest_mac,strict=1" \
	--device "g1:type=vbus-test,id=2" "${blk_dev[@]}" \
	>"$out/hostd.log" 2>&1 &
keeper_pid=$!
for _ in $(seq 100); do
	[[ -S "$run/ctl.sock" && -S "$run/g1.sock" ]] && break
	kill -0 "$keeper_pid" 2>/dev/null || break
	sleep 0.1
done
if [[ -S "$run/ctl.sock" && -S "$run/g1.sock" ]]; then
	h_pass hostd-started
else
	sed 's/^/    hostd: /' "$out/hostd.log" | tail -n 20
	h_fail hostd-started "vbus-hostd did not come up (log $out/hostd.log)"
	finish
fi
ctl() { "$hostd" ctl --ctl "$run/ctl.sock" "$@"; }
daemon_pid() { "$pgrep" -P "$keeper_pid" | head -n 1; }

# ---- boot, and act on the guest's requests --------------------------------------
log="$out/serial.log"
rm -f "$log"
mapfile -t qargs < <(vbus_transport_args "/dev/shm/$tag-g1" "$mem" "$run/g1.sock")
t0=$(vbus_now)
vbus_boot_guest --initrd "$run/restart.cpio.gz" --log "$log" --mem "$mem" \
	--timeout "$timeout" -- "${qargs[@]}" \
	-pidfile "$run/g1.pid" >"$out/boot.out" 2>&1 &
boot_pid=$!

# VBUS-HOSTREQ SEQ restart term|kill: signal the daemon the keeper runs
declare -A done_req
restarts=0 stopped=0 stats_rc=0
while kill -0 "$boot_pid" 2>/dev/null; do
	while read -r _ seq cmd kind; do
		[[ -n "${done_req[$seq]:-}" ]] && continue
		done_req[$seq]=1
		pid=$(daemon_pid)
		if [[ "$cmd" == stop ]]; then
			# the daemon goes for good; its stats first
			vbus_log "stop: SIGTERM to vbus-fdkeeper pid $keeper_pid"
			stats_rc=0
			ctl stats g1 >"$out/hostd-stats.txt" 2>&1 || stats_rc=$?
			vbus_stop_pid "$keeper_pid"
			keeper_pid=''
			stopped=1
			continue
		fi
		if [[ "$cmd" == resize && -n "$pid" ]]; then
			# the next daemon serves another disk under id 4
			vbus_log "resize: fs.img to 32 MiB, SIGTERM to vbus-hostd pid $pid"
			truncate -s 32M "$run/fs.img"
			kill -TERM "$pid"
			restarts=$((restarts + 1))
			continue
		fi
		if [[ "$cmd" == flap && -n "$pid" ]]; then
			# a hostile host for 3 s, then it dies (the keeper restarts)
			vbus_log "flap: host_epoch and interrupts of vbus-hostd pid $pid for 3 s"
			python3 "$here/lib/bar2-flap.py" "$pid" 3 >>"$out/flap.log" 2>&1 ||
				h_fail flap "see $out/flap.log"
			restarts=$((restarts + 1))
			continue
		fi
		if [[ "$cmd" == freeze && -n "$pid" ]]; then
			# the disk's requests pile up on the ring; the restart
			# that follows must take them back (SIGKILL ends a
			# stopped process, SIGTERM waits for the SIGCONT)
			vbus_log "freeze: SIGSTOP to vbus-hostd pid $pid"
			kill -STOP "$pid"
			continue
		fi
		if [[ "$cmd" != restart || -z "$pid" ]]; then
			h_fail "hostreq-$seq" "cannot '$cmd $kind' (daemon pid '${pid:-none}')"
			continue
		fi
		sig=TERM
		[[ "$kind" == kill ]] && sig=KILL
		vbus_log "restart $kind: SIG$sig to vbus-hostd pid $pid"
		kill -"$sig" "$pid"
		kill -CONT "$pid" 2>/dev/null || true
		restarts=$((restarts + 1))
	done < <([[ -f "$log" ]] && tr -d '\r' <"$log" |
		grep -aoE 'VBUS-HOSTREQ [0-9]+ (restart (term|kill)|freeze 0|flap 0|resize 0|stop 0)' || true)
	sleep 0.1
done
boot_rc=0
wait "$boot_pid" || boot_rc=$?
boot_pid=''
boot_secs=$(vbus_elapsed "$t0")
((boot_rc == 0)) || vbus_warn "vbus_boot_guest returned $boot_rc (see $out/boot.out)"
vbus_add_results "$log" || true

# ---- the host's side of it -------------------------------------------------------
nkinds=$(($(wc -w <<<"$kinds") + 1 + blk))	# + the flap's, the resize's
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
	if ((stats_rc == 0)); then
		h_pass hostd-alive-until-stop
	else
		h_fail hostd-alive-until-stop "(log $out/hostd.log)"
	fi
elif ctl stats g1 >"$out/hostd-stats.txt" 2>&1; then
	h_pass hostd-alive-at-end
else
	h_fail hostd-alive-at-end "(log $out/hostd.log)"
fi
if grep -aq " faulted: " "$out/hostd.log"; then
	grep -a " faulted: " "$out/hostd.log" | head -n 5 | sed 's/^/    hostd: /'
	h_fail hostd-no-device-fault "the host faulted a device (strict=1)"
else
	h_pass hostd-no-device-fault
fi
[[ -f "$out/flap.log" ]] && sed 's/^/    flap: /' "$out/flap.log"
tr -d '\r' <"$log" | grep -aoE 'restart-tests: (RESTART|BLK|EXT4|FLAP|STOP) .*' | sed 's/^restart-tests: /    /' ||
	printf '    (no RESTART figures)\n'
printf 'guest: %s s (accel=%s, RAM %s, kernel %s); total %s s; logs %s\n' \
	"$boot_secs" "$(vbus_qemu_accel)" "$mem" "$VBUS_KVER" \
	"$(vbus_elapsed "$t_start")" "$out"
finish
