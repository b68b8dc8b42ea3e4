#!/usr/bin/env bash
# venet tests over the real transport: builds vbus_core/vbus_proxy/
# vbus_pcibridge/venet (make modules VBUS_SUBDIRS="kernel/bus kernel/pci_bridge ...
# kernel/venet") and vbus-hostd (CMake, into $VBUS_BUILD/cmake), creates a
# network namespace with a tap (vt0, $host_ip/24) and runs in it:
#   - vbus-hostd with one guest and a venet device on vt0
#     (strict=1: a bad descriptor from our driver faults the device);
#   - busybox httpd on $host_ip:8080 serving the guest's test endpoints
#     (a data file with a known md5, /cgi-bin/md5 for uploads,
#     /cgi-bin/ping: the host pings the guest, /cgi-bin/mtu?N: tap MTU);
# then boots the guest (guest/venet-tests.sh): ping both ways, TCP both
# ways with checksums, MTU 1500/9000, link down/up, sg_enabled=1 (SG, TSO
# and RXSG: GSO frames host->guest) and 0 (plain rx), TSO/rx GSO counters, unload under traffic, load/unload cycles without slab
# growth; with --soak-mb, long transfers each way (the soak). Everything
# is torn down in a trap. Prints PASS/FAIL lines and
# "N passed, N failed"; exits non-zero on failure. Needs root (netns, tap).
#
#   tests/qemu/run-venet-tests.sh [--sg "1 0"] [--cycles N] [--data-mb N]
#                                 [--mem SIZE] [--timeout SEC] [--no-build]
#
#   --sg MODES    sg_enabled values to test, in order (default "1 0")
#   --cycles N    load/unload cycles of venet for the slab check (20)
#   --data-mb N   size of each TCP transfer in MiB (default 8)
#   --soak-mb N   the soak, in the first --sg mode: N MiB host->guest in
#                 one download and N MiB guest->host in 64 MiB uploads, each
#                 md5-checked at both ends (default 0: none; the opt-in
#                 stage soak-venet of scripts/test.sh uses 2048)
#   --mem SIZE    guest RAM, QEMU syntax (default 1G)
#   --timeout SEC kill the guest after SEC seconds (default 900)
#   --no-build    use the .ko files and vbus-hostd already built
# Accelerator: TCG unless hardware KVM is available (VBUS_QEMU_ACCEL=...).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=tests/qemu/lib/suite.sh
source "$here/lib/suite.sh"

sg_modes="1 0" cycles=20 data_mb=8 soak_mb=0 mem=1G timeout=900 build=1
while (($#)); do
	case "$1" in
	--sg) sg_modes=$2; shift 2 ;;
	--cycles) cycles=$2; shift 2 ;;
	--data-mb) data_mb=$2; shift 2 ;;
	--soak-mb) soak_mb=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--no-build) build=0; shift ;;
	-h | --help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) vbus_err "unknown argument $1 (see --help)"; exit 2 ;;
	esac
done
for v in "$cycles" "$data_mb" "$soak_mb" "$timeout"; do
	[[ "$v" =~ ^[0-9]+$ ]] || { vbus_err "not a number: $v"; exit 2; }
done
for v in $sg_modes; do
	[[ "$v" =~ ^[01]$ ]] || { vbus_err "--sg takes 0/1 values, not $v"; exit 2; }
done

passed=0 failed=0
h_pass() { passed=$((passed + 1)); printf 'PASS %s\n' "$1"; }
h_fail() { failed=$((failed + 1)); printf 'FAIL %s %s\n' "$1" "${*:2}"; }
finish() {
	printf '%d passed, %d failed\n' "$passed" "$failed"
	((failed == 0))
	exit $?
}

host_ip=10.77.0.1 guest_ip=10.77.0.2 port=8080 tap=vt0
guest_mac=52:54:00:7e:00:02

t_start=$(vbus_now)
vbus_fetch_kernel

out="$VBUS_BUILD/qemu/venet-tests"
cbuild="$VBUS_BUILD/cmake"
mkdir -p "$out"

# ---- build ---------------------------------------------------------------
if ((build)); then
	if ! step=$(vbus_build_stack "kernel/bus kernel/pci_bridge kernel/vbus_test kernel/vbus_ipc kernel/venet" "$out" "$cbuild"); then
		h_fail "$step" "build failed (log $out/$step.log)"
		finish
	fi
fi
kos=("$top/vbus_core.ko" "$top/kernel/bus/vbus_proxy.ko"
	"$top/kernel/pci_bridge/vbus_pcibridge.ko" "$top/kernel/venet/venet.ko")
for ko in "${kos[@]}"; do
	[[ -f "$ko" ]] || { h_fail build "$ko not built"; finish; }
done
hostd=$(vbus_find_hostd "$cbuild") || { h_fail build "no vbus-hostd binary under $cbuild"; finish; }
busybox=$(command -v busybox) || { h_fail setup "no busybox on the host"; finish; }

# ---- run directory, namespace, cleanup ----------------------------------
run=$(mktemp -d /tmp/vbus-vt.XXXXXX)
tag="vbus-vt-$$"
ns="$tag"
hostd_pid='' httpd_pid='' boot_pid=''
cleanup() {
	local p
	[[ -f "$run/g1.pid" ]] && kill -9 "$(cat "$run/g1.pid")" 2>/dev/null || true
	for p in "$boot_pid" "$httpd_pid"; do
		[[ -n "$p" ]] && kill "$p" 2>/dev/null || true
	done
	vbus_stop_pid "$hostd_pid"
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$run"
	rm -f "/dev/shm/$tag-g1"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

nsx() { ip netns exec "$ns" "$@"; }

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

# ---- the host's test endpoints (busybox httpd in the namespace) ---------
www="$run/www"
mkdir -p "$www/cgi-bin"
head -c "$((data_mb * 1024 * 1024))" /dev/urandom >"$www/data"
data_md5=$(md5sum "$www/data" | cut -d' ' -f1)
cat >"$www/cgi-bin/md5" <<EOF
#!$busybox sh
printf 'Content-Type: text/plain\r\n\r\n'
$busybox head -c "\${CONTENT_LENGTH:-0}" | $busybox md5sum | $busybox cut -d' ' -f1
EOF
cat >"$www/cgi-bin/ping" <<EOF
#!$busybox sh
printf 'Content-Type: text/plain\r\n\r\n'
if $busybox ping -c 3 -W 3 "\$REMOTE_ADDR" >/dev/null 2>&1; then echo ok; else echo fail; fi
EOF
cat >"$www/cgi-bin/mtu" <<EOF
#!$busybox sh
printf 'Content-Type: text/plain\r\n\r\n'
case "\$QUERY_STRING" in
''|*[!0-9]*) echo bad ;;
*) if $(command -v ip) link set dev $tap mtu "\$QUERY_STRING"; then echo ok; else echo fail; fi ;;
esac
EOF
chmod 0755 "$www/cgi-bin/"*
# The soak's host -> guest data (guest -> host goes to /cgi-bin/md5)
soak_md5=
if ((soak_mb)); then
	head -c "$((soak_mb * 1024 * 1024))" /dev/urandom >"$www/soak"
	soak_md5=$(md5sum "$www/soak" | cut -d' ' -f1)
fi
# Not through nsx: `ip netns exec` execs in place, so $! is the daemon
# itself (a backgrounded shell function would give us a subshell's pid).
ip netns exec "$ns" "$busybox" httpd -f -p "$host_ip:$port" -h "$www" \
	>"$out/httpd.log" 2>&1 &
httpd_pid=$!

# ---- initramfs -----------------------------------------------------------
s="$run/stage"
mkdir -p "$s/test"
cp "$here/guest/lib.sh" "$s/test/lib.sh"
cp "$here/guest/venet-tests.sh" "$s/test/run.sh"
cat >"$s/test/config.sh" <<EOF
VT_HOST_IP=$host_ip
VT_GUEST_IP=$guest_ip
VT_PREFIX=24
VT_HTTP_PORT=$port
VT_DATA_MD5=$data_md5
VT_DATA_BYTES=$((data_mb * 1024 * 1024))
VT_SG_MODES="$sg_modes"
VT_CYCLES=$cycles
VT_UP_MB=$data_mb
VT_SOAK_MB=$soak_mb
VT_SOAK_MD5=$soak_md5
EOF
vbus_initramfs_add_kmods "$s" "${kos[@]}" || { h_fail initramfs kmods; finish; }
if command -v ethtool >/dev/null; then
	vbus_initramfs_add_binary "$s" "$(command -v ethtool)" ||
		{ h_fail initramfs ethtool; finish; }
else
	vbus_warn "no ethtool on the host: the guest skips the ethtool checks (apt-get install ethtool)"
fi
vbus_make_initramfs "$run/venet.cpio.gz" "$s" >/dev/null

# ---- vbus-hostd (in the namespace: it opens the tap there) --------------
ip netns exec "$ns" "$hostd" --foreground --ctl "$run/ctl.sock" \
	--guest "g1:sock=$run/g1.sock,mem=/dev/shm/$tag-g1,size=$mem" \
	--device "g1:type=venet,id=1,tap=$tap,mac=$guest_mac,strict=1" \
	>"$out/hostd.log" 2>&1 &
hostd_pid=$!
for _ in $(seq 100); do
	[[ -S "$run/ctl.sock" && -S "$run/g1.sock" ]] && break
	kill -0 "$hostd_pid" 2>/dev/null || break
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

# ---- boot ----------------------------------------------------------------
log="$out/serial.log"
t0=$(vbus_now)
boot_rc=0
mapfile -t qargs < <(vbus_transport_args "/dev/shm/$tag-g1" "$mem" "$run/g1.sock")
vbus_boot_guest --initrd "$run/venet.cpio.gz" --log "$log" --mem "$mem" \
	--timeout "$timeout" -- "${qargs[@]}" \
	-pidfile "$run/g1.pid" >"$out/boot.out" 2>&1 || boot_rc=$?
boot_secs=$(vbus_elapsed "$t0")
((boot_rc == 0)) || vbus_warn "vbus_boot_guest returned $boot_rc (see $out/boot.out)"
vbus_add_results "$log" || true

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
	if [[ " $sg_modes " == *" 1 "* ]]; then
		v=$(hstat rx_gso)
		if [[ "${v:-0}" -gt 0 ]]; then h_pass "hostd-rx-gso ($v)"; else h_fail hostd-rx-gso "rx_gso=${v:-?}"; fi
	fi
	v=$(hstat rx_offload_dropped)
	if [[ "${v:-1}" -eq 0 ]]; then h_pass hostd-rx-offload-none-dropped; else h_fail hostd-rx-offload-none-dropped "rx_offload_dropped=${v:-?}"; fi
fi
if grep -aq " faulted: " "$out/hostd.log"; then
	grep -a " faulted: " "$out/hostd.log" | head -n 5 | sed 's/^/    hostd: /'
	h_fail hostd-no-device-fault "the host faulted the venet device (strict=1)"
else
	h_pass hostd-no-device-fault
fi

if ((soak_mb)); then
	tr -d '\r' <"$log" | grep -aoE 'venet-tests: SOAK .*' | sed 's/^venet-tests: /    /' ||
		printf '    (no SOAK figures)\n'
fi
printf 'guest: %s s (accel=%s, %s boot, RAM %s, kernel %s); total %s s; log %s\n' \
	"$boot_secs" "$(vbus_qemu_accel)" "$VBUS_KBOOT" "$mem" "$VBUS_KVER" \
	"$(vbus_elapsed "$t_start")" "$log"
finish
