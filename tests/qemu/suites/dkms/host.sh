#!/usr/bin/env bash
# The guest modules as a DKMS package, end to end: stages the tree
# (scripts/dkms-source.sh), then `dkms add` and `dkms build -k $VBUS_KVER`
# (the kernel that matches the installed headers) in a private DKMS tree
# (--dkmstree/--sourcetree in a temporary directory, signing key there too:
# nothing is written to /var/lib/dkms or /usr/src, and nothing is ever
# installed or loaded on this machine), checks that DKMS built and kept
# exactly dkms.conf's modules with the headers' vermagic, and boots the
# guest with the modules DKMS built (guest/dkms-tests.sh): each has the
# guest kernel's vermagic and loads, the selftest passes, a vbus-test, a
# venet and a vbus-blk device served by vbus-hostd are bound (ring traffic,
# a ping over a tap in a private network namespace, the disk reads the
# data the host put in its backing file), everything unloads without a
# WARN.
# Ends with `dkms remove --all`. Prints PASS/FAIL lines and "N passed, N
# failed"; exits non-zero on failure. Needs root (namespace, tap).
#
#   tests/qemu/run-dkms-tests.sh [--timeout SEC]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=tests/qemu/lib/suite.sh
source "$here/lib/suite.sh"

timeout=300
while (($#)); do
	case "$1" in
	--timeout) timeout=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) vbus_err "unknown argument $1 (see --help)"; exit 2 ;;
	esac
done
[[ "$timeout" =~ ^[0-9]+$ ]] || { vbus_err "not a number: $timeout"; exit 2; }

passed=0 failed=0
h_pass() { passed=$((passed + 1)); printf 'PASS %s\n' "$1"; }
h_fail() { failed=$((failed + 1)); printf 'FAIL %s %s\n' "$1" "${*:2}"; }
finish() {
	printf '%d passed, %d failed\n' "$passed" "$failed"
	((failed == 0))
	exit $?
}

host_ip=10.78.0.1 guest_ip=10.78.0.2 tap=vdk0
t_start=$(vbus_now)
vbus_fetch_kernel
out="$VBUS_BUILD/qemu/dkms-tests"
cbuild="$VBUS_BUILD/cmake"
mkdir -p "$out"
command -v dkms >/dev/null || { h_fail dkms "dkms not installed (scripts/deps.sh)"; finish; }

name=$(sed -n 's/^PACKAGE_NAME=//p' "$top/dkms.conf")
version=$(sed -n 's/^PACKAGE_VERSION=//p' "$top/dkms.conf")
run=$(mktemp -d /tmp/vbus-dkms.XXXXXX)
tree=$run/dkms-tree
hostd_pid='' added=0
dk() {
	# the signing key dkms generates goes here, not to /var/lib/dkms
	mok_signing_key=$run/mok.key mok_certificate=$run/mok.pub \
		dkms --dkmstree "$tree" --sourcetree "$run/src" "$@"
}
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	if [[ -f "$run/qemu.pid" ]]; then kill -9 "$(cat "$run/qemu.pid")" 2>/dev/null || true; fi
	vbus_stop_pid "$hostd_pid"
	if ((added)); then dk remove "$name/$version" --all >>"$out/dkms.log" 2>&1 || true; fi
	rm -rf "$run"
	rm -f "/dev/shm/vbus-dkms-$$"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- dkms add, build -----------------------------------------------------
t0=$(vbus_now)
mkdir -p "$tree" "$run/src"
: >"$out/dkms.log"
if "$top/scripts/dkms-source.sh" "$run/stage" >>"$out/dkms.log" 2>&1 &&
	dk add "$run/stage" >>"$out/dkms.log" 2>&1; then
	added=1
	h_pass dkms-add
else
	tail -n 20 "$out/dkms.log" | sed 's/^/    /'
	h_fail dkms-add "(log $out/dkms.log)"
	finish
fi
if dk build "$name/$version" -k "$VBUS_KVER" >>"$out/dkms.log" 2>&1; then
	h_pass "dkms-build-$VBUS_KVER"
else
	tail -n 40 "$out/dkms.log" | sed 's/^/    /'
	find "$tree" -name make.log -exec tail -n 40 {} \; | sed 's/^/    make: /'
	h_fail "dkms-build-$VBUS_KVER" "(log $out/dkms.log)"
	finish
fi
build_secs=$(vbus_elapsed "$t0")
kdir=$tree/$name/$version/$VBUS_KVER/$(uname -m)
dk status >>"$out/dkms.log" 2>&1
if grep -q "^$name/$version, $VBUS_KVER, $(uname -m): built" "$out/dkms.log"; then
	h_pass dkms-status-built
else
	h_fail dkms-status-built "(log $out/dkms.log)"
fi

# what make built (DKMS's make.log) and what DKMS kept must both be
# exactly dkms.conf's list
cp "$kdir/log/make.log" "$out/make.log"
grep -aoE 'LD \[M\] +[^ ]+\.ko$' "$out/make.log" | awk '{ print $NF }' >"$run/built.txt"
if "$top/tests/ops/dkms-modules.sh" "$top" "$tree/$name/$version/build" "$run/built.txt" \
	>"$run/check.txt" 2>&1; then
	h_pass dkms-built-the-listed-modules
else
	h_fail dkms-built-the-listed-modules "$(tr '\n' ' ' <"$run/check.txt")"
fi
mapfile -t kos < <(find "$kdir/module" -name '*.ko*' | sort)
want=$(sed 's|.*/||; s|\.ko$||' "$run/built.txt" | sort | tr '\n' ' ')
have=$(printf '%s\n' "${kos[@]}" | sed 's|.*/||; s|\.ko.*||' | sort | tr '\n' ' ')
if [[ -n "$have" && "$have" == "$want" ]]; then
	h_pass "dkms-kept-${#kos[@]}-modules"
else
	h_fail dkms-kept-modules "kept '$have', built '$want'"
fi
bad=
for ko in "${kos[@]}"; do
	v=$(modinfo -F vermagic "$ko")
	[[ "$v" == "$VBUS_KVER "* ]] || bad+=" $(basename "$ko"):'$v'"
done
if [[ -z "$bad" ]]; then h_pass host-vermagic-matches-headers; else h_fail host-vermagic "$bad"; fi

# ---- vbus-hostd: a vbus-test device, a venet device on a tap, a disk ------------
head -c 1048576 /dev/urandom >"$run/disk.img"
disk_sha=$(sha256sum "$run/disk.img" | cut -d' ' -f1)
if ! hostd=$(vbus_build_hostd "$cbuild" "$out/build-userspace.log"); then
	tail -n 20 "$out/build-userspace.log" | sed 's/^/    /'
	h_fail build-userspace "(log $out/build-userspace.log)"
	finish
fi
# unshare execs: $! is the daemon, in a network namespace of its own
unshare --net -- sh -c "ip link set lo up && ip tuntap add dev $tap mode tap vnet_hdr &&
	ip addr add $host_ip/24 dev $tap && ip link set $tap up && exec \"\$@\"" dkms \
	"$hostd" --foreground --ctl "$run/ctl.sock" \
	--guest "g1:sock=$run/g1.sock,mem=/dev/shm/vbus-dkms-$$,size=512M" \
	--device g1:type=vbus-test,id=1 \
	--device "g1:type=venet,id=2,tap=$tap" \
	--device "g1:type=vbus-blk,id=3,file=$run/disk.img" \
	>"$out/hostd.log" 2>&1 &
hostd_pid=$!
for _ in $(seq 100); do
	[[ -S "$run/ctl.sock" ]] && break
	kill -0 "$hostd_pid" 2>/dev/null || break
	sleep 0.1
done
if [[ -S "$run/ctl.sock" ]]; then
	h_pass hostd-started
else
	sed 's/^/    hostd: /' "$out/hostd.log" | tail -n 20
	h_fail hostd-started "(log $out/hostd.log)"
	finish
fi

# ---- the guest, with the modules DKMS built ----------------------------------
s="$run/stage-guest"
mkdir -p "$s/test"
cp "$here/guest/lib.sh" "$s/test/lib.sh"
cp "$here/guest/dkms-tests.sh" "$s/test/run.sh"
cat >"$s/test/config.sh" <<EOF
VDK_NDEVS=3
VDK_DISK_SHA=$disk_sha
VDK_HOST_IP=$host_ip
VDK_GUEST_IP=$guest_ip
VDK_PREFIX=24
VDK_PARAMS_vbus_selftest="stress_msgs=20000"
EOF
# dependencies first (modinfo depends=): the staging resolves a module's
# dependencies among those already staged
left=("${kos[@]}")
while ((${#left[@]})); do
	next=()
	for ko in "${left[@]}"; do
		ready=1
		for d in $(modinfo -F depends "$ko" | tr ',' ' '); do
			printf '%s\n' "${left[@]}" | grep -q "/$d\.ko" && ready=0
		done
		if ((ready)); then
			vbus_initramfs_add_kmods "$s" "$ko" || { h_fail initramfs "$ko"; finish; }
		else
			next+=("$ko")
		fi
	done
	((${#next[@]} < ${#left[@]})) || { h_fail initramfs "dependency loop: ${next[*]}"; finish; }
	left=("${next[@]}")
done
vbus_make_initramfs "$run/dkms.cpio.gz" "$s" >/dev/null

log="$out/serial.log"
mapfile -t qargs < <(vbus_transport_args "/dev/shm/vbus-dkms-$$" 512M "$run/g1.sock")
t0=$(vbus_now)
boot_rc=0
vbus_boot_guest --initrd "$run/dkms.cpio.gz" --log "$log" --mem 512M --timeout "$timeout" -- \
	"${qargs[@]}" -pidfile "$run/qemu.pid" >"$out/boot.out" 2>&1 || boot_rc=$?
boot_secs=$(vbus_elapsed "$t0")
((boot_rc == 0)) || vbus_warn "vbus_boot_guest returned $boot_rc (see $out/boot.out)"
vbus_add_results "$log" || true
if kill -0 "$hostd_pid" 2>/dev/null; then h_pass hostd-alive-at-end; else h_fail hostd-alive-at-end "(log $out/hostd.log)"; fi

# ---- dkms remove: the private tree is empty again ------------------------------
if dk remove "$name/$version" --all >>"$out/dkms.log" 2>&1 &&
	[[ -z "$(find "$tree" -mindepth 1 -maxdepth 1)" ]]; then
	added=0
	h_pass dkms-remove-all
else
	h_fail dkms-remove-all "tree not empty: $(find "$tree" -mindepth 1 -maxdepth 2 | tr '\n' ' ')"
fi

printf 'dkms add+build: %s s; guest: %s s (accel=%s, %s boot, kernel %s); total %s s; logs in %s\n' \
	"$build_secs" "$boot_secs" "$(vbus_qemu_accel)" "$VBUS_KBOOT" "$VBUS_KVER" \
	"$(vbus_elapsed "$t_start")" "$out"
finish
