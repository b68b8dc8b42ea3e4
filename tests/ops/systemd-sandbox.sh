#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# ctest ops_systemd_sandbox: the installed vbus-hostd unit under a real
# systemd. Boots a Debian 12 tree with `systemd-nspawn --boot` (PID 1 of
# the test machine need not be systemd), with this build installed in
# /usr/local and its sysusers.d/tmpfiles.d applied by the container's own
# boot; tests/ops/unit_sandbox_test.py then runs inside, as root: a probe
# as the unit's ExecStart= (a drop-in changes only ExecStart= and Type=)
# must be denied each thing the unit forbids, and allowed it with the
# denying setting removed; the daemon itself starts as vbus, serves a
# fake QEMU of another user (in the group vbus) and stops.
#
#   tests/ops/systemd-sandbox.sh BUILD_DIR PROBE [REGEX]
#
# REGEX picks checks by name (e.g. 'shadow|dbus'). The tree (debootstrap,
# 1 to 2 min and ~300 MB the first time, from the apt mirror of the machine)
# is cached in BUILD_DIR/ops/debian-12 and never written to: each boot
# gets a tmpfs overlay (--volatile=overlay). Needs root, debootstrap,
# systemd-container and a free loop device (scripts/deps.sh).
set -euo pipefail
build=$(cd "${1:?usage: systemd-sandbox.sh BUILD_DIR PROBE [REGEX]}" && pwd)
probe=${2:?usage: systemd-sandbox.sh BUILD_DIR PROBE [REGEX]}
regex=${3:-.}
here=$(cd "$(dirname "$0")" && pwd)

fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (systemd-nspawn, losetup)"
for t in systemd-nspawn losetup; do
	command -v "$t" >/dev/null || fail "$t not installed (scripts/deps.sh)"
done

# ---- the tree, built once (scripts/test.sh may have started it already)
"$here/debian-tree.sh" "$build" || fail "no Debian tree"
cache=$build/ops/debian-12
tree=$cache/tree

# ---- this build, installed as a package would be --------------------------
tmp=$(mktemp -d /tmp/vbus-ops-nspawn.XXXXXX)
loop=
cleanup() {
	[ -z "$loop" ] || losetup -d "$loop" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
DESTDIR=$tmp/root cmake --install "$build" --prefix /usr/local >"$tmp/install.log"
mkdir -p "$tmp/test" "$tmp/out"
cp "$probe" "$tmp/test/vbus-unit-probe"
cp "$here/unit_sandbox_test.py" "$here/service_test.py" "$tmp/test/"
# a disk for the probe to try: a loop device over a small file
truncate -s 1M "$tmp/disk.img"
loop=$(losetup -f --show "$tmp/disk.img") || fail "no free loop device"
# the test runs once the container is up, then ends the container
cat >"$tmp/test/vbus-sandbox-test.service" <<EOF
[Unit]
Description=vbus-hostd unit sandbox test
After=multi-user.target
SuccessAction=exit-force
FailureAction=exit-force
[Service]
Type=oneshot
ExecStart=/usr/bin/python3 /opt/vbus-test/unit_sandbox_test.py run $loop '$regex'
StandardOutput=file:/vbus-out/log
StandardError=inherit
EOF

# Under systemd (a CI VM) nspawn asks it for a scope with a delegated
# cgroup, whose device policy must let the container open the loop device
# (the "disk" check's allowed run); without systemd as PID 1 (a container
# itself) there is no one to ask: it stays in its own cgroup (--keep-unit).
unit_opt=(--keep-unit)
[ -d /run/systemd/system ] && unit_opt=(--property="DeviceAllow=$loop r")
t0=$SECONDS
rc=0
timeout 600 systemd-nspawn --quiet --directory="$tree" --volatile=overlay \
	--boot --register=no "${unit_opt[@]}" --private-network \
	--bind-ro="$tmp/root/usr/local:/usr/local" \
	--bind-ro="$tmp/test:/opt/vbus-test" \
	--bind-ro="$tmp/test/vbus-sandbox-test.service:/etc/systemd/system/vbus-sandbox-test.service" \
	--bind="$tmp/out:/vbus-out" --bind="$loop" \
	systemd.wants=vbus-sandbox-test.service >"$tmp/boot.log" 2>&1 || rc=$?
if [ ! -s "$tmp/out/log" ]; then
	tail -n 40 "$tmp/boot.log"
	fail "the test did not run in the container (systemd-nspawn exit $rc)"
fi
cat "$tmp/out/log"
echo "container: booted, tested and stopped in $((SECONDS - t0)) s"
[ "$(cat "$tmp/out/rc" 2>/dev/null)" = 0 ]
