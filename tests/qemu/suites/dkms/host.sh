#!/usr/bin/env bash
# The guest modules as a DKMS package, end to end: stages the tree
# (scripts/dkms-source.sh), then `dkms add` and `dkms build -k $VBUS_KVER`
# (the kernel that matches the installed headers) in a private DKMS tree
# (--dkmstree/--sourcetree in the run directory, signing key there too:
# nothing is written to /var/lib/dkms or /usr/src, and nothing is ever
# installed or loaded on this machine), checks that DKMS built and kept
# exactly dkms.conf's modules with the headers' vermagic, and boots the
# guest with the modules DKMS built (guest.sh): each has the guest
# kernel's vermagic and loads, none is a test module, a vbus-test, a venet
# and a vbus-blk device served by vbus-hostd are bound (ring traffic, a
# ping over a tap in a private network namespace, the disk reads the data
# the host put in its backing file), everything unloads without a WARN.
# Ends with `dkms remove --all`. Needs root (namespace, tap).
#
#   tests/qemu/run.sh dkms [--timeout SEC]
set -euo pipefail
# shellcheck source=tests/qemu/lib/lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/lab.sh"

timeout=300 mem=512M
lab_begin dkms -- "$@"
command -v dkms >/dev/null || { h_fail dkms "dkms not installed (scripts/deps.sh)"; finish; }

name=$(sed -n 's/^PACKAGE_NAME=//p' "$top/dkms.conf")
version=$(sed -n 's/^PACKAGE_VERSION=//p' "$top/dkms.conf")
tree=$run/dkms-tree
added=0
dk() {
	# the signing key dkms generates goes here, not to /var/lib/dkms
	mok_signing_key=$run/mok.key mok_certificate=$run/mok.pub \
		dkms --dkmstree "$tree" --sourcetree "$run/src" "$@"
}
# shellcheck disable=SC2016 # at exit
lab_defer '((added == 0)) || dk remove "$name/$version" --all >>"$out/dkms.log" 2>&1'

# ---- dkms add, build ----
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
h_check dkms-status-built grep -q "^$name/$version, $VBUS_KVER, $(uname -m): built" "$out/dkms.log"

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

# ---- the guest, with the modules DKMS built, dependencies first (the
# staging resolves a module's dependencies among those already staged) ----
ordered=() left=("${kos[@]}")
while ((${#left[@]})); do
	next=()
	for ko in "${left[@]}"; do
		ready=1
		for d in $(modinfo -F depends "$ko" | tr ',' ' '); do
			printf '%s\n' "${left[@]}" | grep -q "/$d\.ko" && ready=0
		done
		if ((ready)); then ordered+=("$ko"); else next+=("$ko"); fi
	done
	((${#next[@]} < ${#left[@]})) || { h_fail initramfs "dependency loop: ${next[*]}"; finish; }
	left=("${next[@]}")
done
head -c 1048576 /dev/urandom >"$run/disk.img"
lab_stage guest "$(dirname "$0")/guest.sh" "${ordered[@]}" <<CONFIG
VDK_NDEVS=3
VDK_DISK_SHA=$(sha256sum "$run/disk.img" | cut -d' ' -f1)
VDK_HOST_IP=10.78.0.1
VDK_GUEST_IP=10.78.0.2
VDK_PREFIX=24
CONFIG

# ---- vbus-hostd: a vbus-test device, a venet device on a tap, a disk ----
lab_build --cmake vbus-hostd
lab_netns 10.78.0.1 vdk0
lab_hostd --ns -- --guest "$(lab_guest g1)" \
	--device g1:type=vbus-test,id=1 \
	--device "g1:type=venet,id=2,tap=$tap" \
	--device "g1:type=vbus-blk,id=3,file=$run/disk.img"
lab_run guest --guest g1
h_check hostd-alive-at-end kill -0 "$hostd_pid"

# ---- dkms remove: the private tree is empty again ----
if dk remove "$name/$version" --all >>"$out/dkms.log" 2>&1 &&
	[[ -z "$(find "$tree" -mindepth 1 -maxdepth 1)" ]]; then
	# shellcheck disable=SC2034 # read by the deferred remove
	added=0
	h_pass dkms-remove-all
else
	h_fail dkms-remove-all "tree not empty: $(find "$tree" -mindepth 1 -maxdepth 2 | tr '\n' ' ')"
fi
printf 'dkms add+build: %s s\n' "$build_secs"
lab_summary guest
