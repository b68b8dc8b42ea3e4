#!/usr/bin/env bash
# Stage the guest modules as a DKMS source tree (docs/operations.md,
# "Guest modules with DKMS"): DEST gets dkms.conf, Kbuild, Makefile and
# the sources of the modules users run (core/, kernel/), without build
# products and without the test modules (Kbuild's VBUS_TEST_SUBDIRS, whose
# selftest also compiles tests/common/; dkms.conf does not build them),
# and the guest's udev rule for vbus-blk disk names (dist/udev/: DKMS does
# not install udev rules; docs/operations.md says where it goes).
#
#   scripts/dkms-source.sh [DEST]    default /usr/src/vbus-VERSION
#
# Prints DEST. Then `dkms add DEST` (or, for /usr/src/vbus-VERSION,
# `dkms add vbus/VERSION`), `dkms build|install vbus/VERSION`.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^PACKAGE_VERSION=//p' "$top/dkms.conf")
name=$(sed -n 's/^PACKAGE_NAME=//p' "$top/dkms.conf")
[[ -n "$version" && -n "$name" ]] || { echo "dkms-source: no PACKAGE_NAME/VERSION in $top/dkms.conf" >&2; exit 1; }
dest=${1:-/usr/src/$name-$version}
if [[ -e "$dest" && -n "$(ls -A "$dest")" ]]; then
	echo "dkms-source: $dest exists and is not empty" >&2
	exit 1
fi
read -ra test_subdirs <<<"$(sed -n 's/^VBUS_TEST_SUBDIRS := //p' "$top/Kbuild")"
((${#test_subdirs[@]})) || { echo "dkms-source: no VBUS_TEST_SUBDIRS in $top/Kbuild" >&2; exit 1; }
mkdir -p "$dest"
# the build products `make modules` leaves in the tree (.gitignore)
tar -C "$top" -cf - --exclude-vcs \
	--exclude='*.o' --exclude='*.ko' --exclude='*.ko.*' --exclude='*.mod' \
	--exclude='*.mod.c' --exclude='.*.cmd' --exclude='*.cmd' --exclude='*.d' \
	--exclude='modules.order' --exclude='Module.symvers' --exclude='.tmp_versions' \
	"${test_subdirs[@]/#/--exclude=}" \
	dkms.conf Kbuild Makefile core kernel dist/udev/60-vbus-blk.rules | tar -C "$dest" -xf -
echo "$dest"
