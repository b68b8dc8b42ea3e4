#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The Debian 12 tree that ops_systemd_sandbox boots with systemd-nspawn:
# built once with debootstrap (1 to 2 min and ~300 MB, from the apt mirror
# of the machine) into BUILD_DIR/ops/debian-12/tree, then only read. A lock
# makes a second caller wait for the first: scripts/test.sh starts this in
# the background at its beginning, so the download overlaps the builds,
# and the test waits for it if it is not done yet.
#
#   tests/ops/debian-tree.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: debian-tree.sh BUILD_DIR}" && pwd)

fail() { echo "FAIL: $*"; exit 1; }
command -v debootstrap >/dev/null || fail "debootstrap not installed (scripts/deps.sh)"

# What the container needs besides systemd: dbus (a system bus socket to
# be kept from), liburing2 and libnbd0 (the daemon's libraries; liburing2
# the probe's too), python3 (the test), iproute2 (taps.conf's vbus-taps).
pkgs=systemd,systemd-sysv,dbus,liburing2,libnbd0,python3,iproute2
suite=bookworm
# the machine's own Debian mirror (deb822 or one-line sources), else Debian's
mirror=${VBUS_DEBIAN_MIRROR:-$(cat /etc/apt/sources.list.d/*.sources \
	/etc/apt/sources.list 2>/dev/null |
	sed -n -e 's/^URIs: *\([^ ]*\/debian\/*\)$/\1/p' \
		-e 's/^deb  *\(\[[^]]*\]  *\)\{0,1\}\([^ ]*\/debian\/*\)  *bookworm .*/\2/p' |
	head -n 1 || true)}
mirror=${mirror:-http://deb.debian.org/debian}
cache=$build/ops/debian-12
tree=$cache/tree
stamp="$suite $pkgs"
mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9
if [ ! -d "$tree" ] || [ "$(cat "$cache/stamp" 2>/dev/null)" != "$stamp" ]; then
	echo "building the Debian tree in $tree (debootstrap $suite, cached)"
	rm -rf "$tree" "$tree.new"
	t0=$SECONDS
	if ! debootstrap --variant=minbase --include="$pkgs" "$suite" \
		"$tree.new" "$mirror" >"$cache/debootstrap.log" 2>&1; then
		tail -n 20 "$cache/debootstrap.log"
		fail "debootstrap failed (log: $cache/debootstrap.log)"
	fi
	mv "$tree.new" "$tree"
	echo "$stamp" >"$cache/stamp"
	echo "tree built in $((SECONDS - t0)) s"
fi
